//! The workspace's git state for the environment section of a system prompt: whether it
//! is in a repository, the branch, and whether the work tree has changes; found without
//! running anything the user did not allow.
//!
//! `git status` runs programs a repository's configuration names (`core.fsmonitor`, the
//! clean filters of `filter.*` drivers, and whatever `include.*` pulls in), and an agent
//! with `write` permission alone can write `.git/config`: a naive probe would turn a write
//! into an execution nobody was asked about. So:
//! - no git process at all unless a `.git` is found walking up from the workspace;
//! - the branch comes from reading `HEAD` (a regular file, opened without following a
//!   link, never blocking), never from a process;
//! - git is one found at start in the system's folders ([`GIT_PATHS`]), run through
//!   `tools::process` with nothing of the daemon's environment (`tools::env::git_env`:
//!   no system or global config, no `HOME`, no `GIT_*` of the daemon's), stdin closed, a
//!   short timeout after which its process group is killed;
//! - first `git config --list --show-scope` (which reads files and runs nothing); only if
//!   every key there is in [`SAFE_KEYS`] (keys known to run nothing) does `git status` run,
//!   with `-c core.fsmonitor=false -c core.hooksPath=/dev/null --no-optional-locks
//!   --ignore-submodules=all` (a submodule's configuration is not checked, so git never
//!   enters one). Anything else, or any failure: whether there are changes is unknown.
//!
//! Known limit: the check and the status are two processes; a write to the configuration
//! landing in the milliseconds between them (another agent's tool running at that moment)
//! is not seen. Results are kept [`TTL`] per workspace.

use std::collections::HashMap;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;

use crate::process::ProcessLauncher;
use crate::profiles::{Dirty, Git, Head};

/// Where git may be, in order. Only system folders: a `git` an agent could have written
/// (in a workspace, or a folder on the user's `PATH`) is never run by the daemon itself.
pub const GIT_PATHS: &[&str] = &[
    "/usr/bin/git",
    "/usr/local/bin/git",
    "/bin/git",
    "/opt/homebrew/bin/git",
];

/// Configuration keys known to make `git status` run nothing. Keys are as `git config
/// --list` prints them (section and name lowercased); `*` stands for a subsection.
pub const SAFE_KEYS: &[&str] = &[
    "core.repositoryformatversion",
    "core.filemode",
    "core.bare",
    "core.logallrefupdates",
    "core.ignorecase",
    "core.precomposeunicode",
    "core.symlinks",
    "core.autocrlf",
    "core.eol",
    "core.safecrlf",
    "core.quotepath",
    "extensions.objectformat",
    "extensions.worktreeconfig",
    "init.defaultbranch",
    "user.name",
    "user.email",
    "remote.*.url",
    "remote.*.pushurl",
    "remote.*.fetch",
    "branch.*.remote",
    "branch.*.merge",
    "branch.*.rebase",
];

/// How long one git command may take before its process group is killed.
const TIMEOUT: Duration = Duration::from_secs(2);

/// How long a workspace's state is reused.
pub const TTL: Duration = Duration::from_secs(1);

/// Largest `git config --list` output read; a larger one counts as not understood.
const MAX_CONFIG_BYTES: usize = 64 * 1024;

/// Largest `HEAD` or `.git` file read.
const MAX_SMALL_FILE: u64 = 4096;

/// Looks at workspaces (see the module doc).
#[derive(Debug)]
pub struct GitProbe {
    /// Git, found at start; `None`: the changes are always unknown.
    git: Option<PathBuf>,
    processes: Arc<ProcessLauncher>,
    cache: Mutex<HashMap<PathBuf, (Instant, Git)>>,
}

/// Git in the system's folders, if installed.
pub fn find_git() -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    GIT_PATHS.iter().map(PathBuf::from).find(|p| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    })
}

impl GitProbe {
    pub fn new(git: Option<PathBuf>, processes: Arc<ProcessLauncher>) -> GitProbe {
        GitProbe {
            git,
            processes,
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// The git state of `workspace` (kept [`TTL`]).
    pub async fn probe(&self, workspace: &Path) -> Git {
        let now = Instant::now();
        {
            let cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some((at, git)) = cache.get(workspace)
                && now.duration_since(*at) < TTL
            {
                return git.clone();
            }
        }
        let git = self.look(workspace).await;
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        cache.retain(|_, (at, _)| now.duration_since(*at) < TTL);
        cache.insert(workspace.to_owned(), (now, git.clone()));
        git
    }

    async fn look(&self, workspace: &Path) -> Git {
        let start = workspace.to_owned();
        let found = tokio::task::spawn_blocking(move || find_repository(&start))
            .await
            .unwrap_or_default();
        let Some((work_tree, head)) = found else {
            return Git::NotARepository;
        };
        let dirty = match &self.git {
            Some(git) => self.changes(git, &work_tree).await,
            None => Dirty::Unknown,
        };
        Git::Repository { head, dirty }
    }

    /// Whether the work tree has changes: `git status` only when the configuration is
    /// understood (see the module doc).
    async fn changes(&self, git: &Path, work_tree: &Path) -> Dirty {
        let config = self
            .run(
                git,
                &["config", "--list", "--show-scope", "-z"],
                work_tree,
                MAX_CONFIG_BYTES,
            )
            .await;
        let Some((true, config)) = config else {
            return Dirty::Unknown;
        };
        if let Err(key) = config_is_safe(&config) {
            tracing::debug!(
                work_tree = %work_tree.display(),
                "not running git status: the repository's configuration has {key}"
            );
            return Dirty::Unknown;
        }
        let status = self
            .run(
                git,
                &[
                    "-c",
                    "core.fsmonitor=false",
                    "-c",
                    "core.hooksPath=/dev/null",
                    "--no-optional-locks",
                    "status",
                    "--porcelain=v1",
                    "-z",
                    "--ignore-submodules=all",
                    "--untracked-files=normal",
                ],
                work_tree,
                1,
            )
            .await;
        match status {
            Some((_, out)) if !out.is_empty() => Dirty::Dirty,
            Some((true, _)) => Dirty::Clean,
            _ => Dirty::Unknown,
        }
    }

    /// Runs git with `args` in `cwd`; reads at most `limit` bytes of its output (stopping
    /// it there). `Some((exited 0, output))`, or `None` when it could not run, timed out
    /// or said more than `limit` (unless `limit` bytes were all that was asked for).
    async fn run(
        &self,
        git: &Path,
        args: &[&str],
        cwd: &Path,
        limit: usize,
    ) -> Option<(bool, Vec<u8>)> {
        let mut command = self.processes.git_command(git, args, cwd);
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true);
        let mut child = command
            .spawn()
            .map_err(|e| tracing::debug!("cannot run {}: {e}", git.display()))
            .ok()?;
        // Killed with everything it started when this returns, however it returns.
        let _group = child.id().map(|pid| self.processes.track(pid, false));
        let mut stdout = child.stdout.take()?;
        let finish = async {
            let mut out = Vec::new();
            let mut buf = [0u8; 8192];
            loop {
                let n = stdout.read(&mut buf).await.ok()?;
                if n == 0 {
                    break;
                }
                out.extend_from_slice(&buf[..n]);
                if out.len() >= limit {
                    if limit == 1 {
                        return Some((false, out));
                    }
                    return None;
                }
            }
            let status = child.wait().await.ok()?;
            Some((status.success(), out))
        };
        tokio::time::timeout(TIMEOUT, finish)
            .await
            .map_err(|_| tracing::debug!("git {} timed out in {}", args.join(" "), cwd.display()))
            .ok()
            .flatten()
    }
}

/// `Ok` when every entry of `git config --list --show-scope -z` output is a key of
/// [`SAFE_KEYS`] from the repository's own files (scope `local` or `worktree`); else `Err`
/// with the first key (or what could not be read).
pub fn config_is_safe(listing: &[u8]) -> Result<(), String> {
    let mut fields = listing.split(|&b| b == 0);
    loop {
        let Some(scope) = fields.next() else {
            return Ok(());
        };
        if scope.is_empty() && fields.clone().next().is_none() {
            return Ok(()); // the terminator of the last entry
        }
        let entry = fields
            .next()
            .ok_or_else(|| "an entry without a key".to_owned())?;
        let key = entry.split(|&b| b == b'\n').next().unwrap_or_default();
        let key = String::from_utf8_lossy(key);
        if !matches!(scope, b"local" | b"worktree") {
            return Err(format!(
                "{key} from {} configuration",
                String::from_utf8_lossy(scope)
            ));
        }
        if !SAFE_KEYS.iter().any(|safe| key_matches(safe, &key)) {
            return Err(key.into_owned());
        }
    }
}

/// Whether `key` is `pattern`, where a `*` in the pattern stands for a non-empty
/// subsection (which may itself contain dots).
fn key_matches(pattern: &str, key: &str) -> bool {
    match pattern.split_once(".*.") {
        None => pattern == key,
        Some((section, name)) => key
            .strip_prefix(section)
            .and_then(|rest| rest.strip_prefix('.'))
            .and_then(|rest| rest.strip_suffix(name))
            .and_then(|rest| rest.strip_suffix('.'))
            .is_some_and(|sub| !sub.is_empty()),
    }
}

/// The repository `start` is in: walking up, the first folder with a `.git` (a folder, or
/// a file naming one with `gitdir:`), and what its `HEAD` names.
fn find_repository(start: &Path) -> Option<(PathBuf, Head)> {
    for dir in start.ancestors() {
        let dot_git = dir.join(".git");
        let Ok(meta) = std::fs::symlink_metadata(&dot_git) else {
            continue;
        };
        let git_dir = if meta.is_file() {
            read_small(&dot_git).and_then(|text| {
                let target = text.lines().next()?.strip_prefix("gitdir:")?.trim();
                (!target.is_empty()).then(|| dir.join(target))
            })
        } else {
            Some(dot_git)
        };
        let head = git_dir
            .and_then(|d| read_small(&d.join("HEAD")))
            .map_or(Head::Unknown, |text| parse_head(&text));
        return Some((dir.to_owned(), head));
    }
    None
}

/// A small regular file's text: opened without following a link and without blocking
/// (a FIFO an agent put there must not hang the daemon); `None` for anything else.
fn read_small(path: &Path) -> Option<String> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::libc::O_NOFOLLOW | nix::libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut text = String::new();
    file.take(MAX_SMALL_FILE).read_to_string(&mut text).ok()?;
    Some(text)
}

/// What a `HEAD` file names: a branch (`ref: refs/heads/NAME`), a commit (detached), or
/// something this does not show.
pub fn parse_head(text: &str) -> Head {
    let line = text.lines().next().unwrap_or_default().trim();
    if let Some(name) = line
        .strip_prefix("ref:")
        .map(str::trim)
        .and_then(|r| r.strip_prefix("refs/heads/"))
    {
        let plain = (1..=200).contains(&name.len())
            && name.chars().all(|c| !c.is_control() && !c.is_whitespace());
        return if plain {
            Head::Branch(name.to_owned())
        } else {
            Head::Unknown
        };
    }
    if matches!(line.len(), 40 | 64) && line.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Head::Detached(line[..12].to_owned());
    }
    Head::Unknown
}

#[cfg(test)]
mod tests;
