//! Where a path really points, which zone that is, and how to open exactly that.
//!
//! Every path a tool receives is resolved before any check: relative paths against the
//! agent's workspace, `~` against the home directory, then component by component the way
//! the kernel would, following symlinks (so `link/..` goes to the link target's parent) and
//! `..`. Parts that do not exist yet are appended as written. The tool then operates on the
//! resolved path, so what was checked is what is touched: [`open_resolved`] opens it one
//! component at a time without following any symlink, so a path swapped for a link after
//! the check fails instead of leading elsewhere.
//!
//! Zones: the workspace; the agent's own folder in the data dir (its offloads: readable);
//! other agents' folders and the rest of the data dir (database, WAL, lock, other agents'
//! workspaces: never accessible); everything else ("outside", which needs a permission).
//! Directory walks leave out what lies in the data dir ([`Sandbox::walk_skips`]).

use std::ffi::OsStr;
use std::fs::File;
use std::os::fd::OwnedFd;
use std::path::{Component, Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{AT_FDCWD, AtFlags, OFlag, openat};
use nix::sys::stat::{FileStat, Mode, SFlag, fchmod, fstat, fstatat, mkdirat};

/// Symlinks followed in one resolution before giving up (as the kernel's ELOOP).
const MAX_SYMLINKS: usize = 40;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Zone {
    Workspace,
    /// The agent's own folder in the data dir: its offloaded results, files MCP tools
    /// saved for it, images of its messages. Readable; never writable.
    OwnOffloads,
    /// Another agent's folder in the data dir: never accessible.
    ForeignOffloads,
    /// The rest of the data dir: the database and its WAL, the lock, other agents'
    /// workspaces. Never accessible.
    DataDir,
    Outside,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedPath {
    pub path: PathBuf,
    pub zone: Zone,
}

/// The path rules of one agent.
#[derive(Debug, Clone)]
pub struct Sandbox {
    workspace: PathBuf,
    data_dir: PathBuf,
    own_offloads: PathBuf,
    offload_root: PathBuf,
    /// The workspace lies in the data dir (an agent's default workspace, under
    /// `<data_dir>/workspaces/`): it stays usable.
    workspace_in_data_dir: bool,
    home: Option<PathBuf>,
}

impl Sandbox {
    /// `workspace` must exist; `data_dir` is the daemon's (offloads in its `sessions/`).
    pub fn new(workspace: &Path, data_dir: &Path, agent_id: &str) -> std::io::Result<Sandbox> {
        let workspace = std::fs::canonicalize(workspace)?;
        let base = if data_dir.is_absolute() {
            PathBuf::from("/")
        } else {
            std::env::current_dir()?
        };
        let data_dir = resolve(&base, data_dir, None)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
        let offload_root = data_dir.join("sessions");
        let workspaces = data_dir.join("workspaces");
        Ok(Sandbox {
            own_offloads: offload_root.join(agent_id),
            offload_root,
            workspace_in_data_dir: workspace.starts_with(&workspaces) && workspace != workspaces,
            data_dir,
            workspace,
            home: std::env::var_os("HOME").map(PathBuf::from),
        })
    }

    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// The daemon's data dir, resolved.
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// The agent's own offload folder.
    pub fn own_offloads(&self) -> &Path {
        &self.own_offloads
    }

    /// Resolves `raw` (as a tool received it) and classifies it.
    pub fn resolve(&self, raw: &str) -> Result<ResolvedPath, String> {
        if raw.is_empty() {
            return Err("the path is empty".into());
        }
        if raw.contains('\0') {
            return Err("the path contains a NUL byte".into());
        }
        let path = resolve(&self.workspace, Path::new(raw), self.home.as_deref())?;
        Ok(ResolvedPath {
            zone: self.zone_of(&path),
            path,
        })
    }

    /// The zone of an already resolved path.
    pub fn zone_of(&self, path: &Path) -> Zone {
        // The data dir first: it is off limits even inside a workspace (a workspace that
        // holds the data dir), except the agent's own folder and its default workspace.
        if path.starts_with(&self.own_offloads) {
            Zone::OwnOffloads
        } else if path.starts_with(&self.offload_root) {
            Zone::ForeignOffloads
        } else if path.starts_with(&self.data_dir)
            && !(self.workspace_in_data_dir && path.starts_with(&self.workspace))
        {
            Zone::DataDir
        } else if path.starts_with(&self.workspace) {
            Zone::Workspace
        } else {
            Zone::Outside
        }
    }

    /// Whether a directory walk from `base` (resolved) must leave out `entry` (a path the
    /// walk found under it, not following links): anything in the data dir of another
    /// zone than the base, so a walk over a workspace that holds the data dir never enters
    /// it, while a walk of the agent's own folder or default workspace still works.
    pub fn walk_skips(&self, base: &Path, entry: &Path) -> bool {
        entry.starts_with(&self.data_dir) && self.zone_of(entry) != self.zone_of(base)
    }
}

/// Resolves `raw` against `base` (an absolute, resolved directory), following symlinks.
pub fn resolve(base: &Path, raw: &Path, home: Option<&Path>) -> Result<PathBuf, String> {
    let raw = match (raw.strip_prefix("~"), home) {
        (Ok(rest), Some(home)) => home.join(rest),
        _ => raw.to_owned(),
    };
    let mut out = if raw.is_absolute() {
        PathBuf::from("/")
    } else {
        base.to_owned()
    };
    let mut pending: Vec<PathBuf> = raw
        .components()
        .rev()
        .map(|c| PathBuf::from(c.as_os_str()))
        .collect();
    let mut links = 0;
    while let Some(part) = pending.pop() {
        match part.components().next() {
            Some(Component::RootDir) => out = PathBuf::from("/"),
            Some(Component::CurDir) | None => {}
            Some(Component::ParentDir) => {
                out.pop();
            }
            Some(Component::Prefix(_)) => return Err("path prefixes are not supported".into()),
            Some(Component::Normal(name)) => {
                out.push(name);
                let Ok(meta) = std::fs::symlink_metadata(&out) else {
                    continue; // does not exist (yet): taken as written
                };
                if !meta.file_type().is_symlink() {
                    continue;
                }
                links += 1;
                if links > MAX_SYMLINKS {
                    return Err(format!("too many symlinks resolving {}", raw.display()));
                }
                let target = std::fs::read_link(&out)
                    .map_err(|e| format!("cannot read symlink {}: {e}", out.display()))?;
                out.pop();
                if target.is_absolute() {
                    out = PathBuf::from("/");
                }
                // Resolve the target's components next, before the rest of the path.
                for c in target.components().rev() {
                    pending.push(PathBuf::from(c.as_os_str()));
                }
            }
        }
    }
    Ok(out)
}

/// What a tool opens a resolved path for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenFor {
    /// Reading an existing regular file.
    Read,
    /// Reading and rewriting an existing regular file.
    Edit,
    /// Writing a regular file, created (with its missing parent folders) if absent.
    Write,
}

/// A file [`open_resolved`] opened.
#[derive(Debug)]
pub struct Opened {
    pub file: File,
    /// The open created it.
    pub created: bool,
}

/// Opens `path`, an absolute resolved path (as [`Sandbox::resolve`] returns it: no symlink
/// in it when it was checked), one component at a time from `/` without following any
/// symlink, so what is opened is exactly what was checked. A component that is a symlink
/// now (a file or folder swapped for a link after the check), a folder that is no folder
/// any more, or an end that is not a regular file (a folder, a FIFO, a device) is an error
/// naming it. What it creates gets the user's usual mode (see [`crate::process::child_umask`]).
pub fn open_resolved(path: &Path, how: OpenFor) -> Result<Opened, String> {
    let mut names: Vec<&OsStr> = Vec::new();
    let mut parts = path.components();
    if parts.next() != Some(Component::RootDir) {
        return Err(format!("{} is not a resolved path", path.display()));
    }
    for part in parts {
        match part {
            Component::Normal(name) => names.push(name),
            _ => return Err(format!("{} is not a resolved path", path.display())),
        }
    }
    let Some((last, parents)) = names.split_last() else {
        return Err(format!("{} names no file", path.display()));
    };
    let dir_flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let mut dir = openat(AT_FDCWD, "/", dir_flags, Mode::empty())
        .map_err(|e| format!("cannot open /: {e}"))?;
    let mut at = PathBuf::from("/");
    for name in parents {
        at.push(name);
        dir = match openat(&dir, *name, dir_flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::ENOENT) if how == OpenFor::Write => {
                let created = match mkdirat(&dir, *name, Mode::from_bits_truncate(0o777)) {
                    Ok(()) => true,
                    Err(Errno::EEXIST) => false,
                    Err(e) => return Err(format!("cannot create {}: {e}", at.display())),
                };
                let fd = openat(&dir, *name, dir_flags, Mode::empty())
                    .map_err(|e| not_as_checked(&dir, name, &at, e))?;
                if created {
                    give_user_mode(&fd, 0o777);
                }
                fd
            }
            Err(e) => return Err(not_as_checked(&dir, name, &at, e)),
        };
    }
    at.push(last);
    let flags = OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC | OFlag::O_NONBLOCK;
    let (fd, created) = match how {
        OpenFor::Read => (
            openat(&dir, *last, flags | OFlag::O_RDONLY, Mode::empty()),
            false,
        ),
        OpenFor::Edit => (
            openat(&dir, *last, flags | OFlag::O_RDWR, Mode::empty()),
            false,
        ),
        OpenFor::Write => {
            let create = flags | OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL;
            match openat(&dir, *last, create, Mode::from_bits_truncate(0o666)) {
                Ok(fd) => {
                    give_user_mode(&fd, 0o666);
                    (Ok(fd), true)
                }
                Err(Errno::EEXIST) => (
                    openat(&dir, *last, flags | OFlag::O_WRONLY, Mode::empty()),
                    false,
                ),
                Err(e) => (Err(e), false),
            }
        }
    };
    let fd = fd.map_err(|e| not_as_checked(&dir, last, &at, e))?;
    let stat = fstat(&fd).map_err(|e| format!("cannot inspect {}: {e}", at.display()))?;
    match kind_of(&stat) {
        SFlag::S_IFREG => Ok(Opened {
            file: File::from(fd),
            created,
        }),
        SFlag::S_IFDIR => Err(format!("{} is a directory", at.display())),
        _ => Err(format!(
            "{} is not a regular file (a FIFO, socket or device)",
            at.display()
        )),
    }
}

fn kind_of(stat: &FileStat) -> SFlag {
    SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT
}

/// Why `name` in `dir` could not be opened as checked, naming `at` (its whole path).
fn not_as_checked(dir: &OwnedFd, name: &OsStr, at: &Path, error: Errno) -> String {
    match fstatat(dir, name, AtFlags::AT_SYMLINK_NOFOLLOW) {
        Ok(stat) if kind_of(&stat) == SFlag::S_IFLNK => {
            let target = nix::fcntl::readlinkat(dir, name)
                .map(|t| format!(" (to {})", t.to_string_lossy()))
                .unwrap_or_default();
            format!(
                "{} is a symbolic link{target}: it changed after the path was checked, so it was not followed",
                at.display()
            )
        }
        Ok(stat) if kind_of(&stat) == SFlag::S_IFDIR => format!("{} is a directory", at.display()),
        Ok(stat) if kind_of(&stat) != SFlag::S_IFREG => format!(
            "{} is not a regular file (a FIFO, socket or device)",
            at.display()
        ),
        Ok(_) if error == Errno::ENOTDIR => format!(
            "{} is not a directory: it changed after the path was checked",
            at.display()
        ),
        _ => format!("{}: {error}", at.display()),
    }
}

/// Gives something the daemon just created for a tool the mode the user's umask would have
/// given it (the daemon's own umask keeps its files private).
fn give_user_mode(fd: &OwnedFd, full: u32) {
    if let Some(umask) = crate::process::child_umask()
        && let Err(e) = fchmod(fd, Mode::from_bits_truncate(full & !umask))
    {
        tracing::debug!("cannot set the mode of a created file: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    struct World {
        _dir: tempfile::TempDir,
        root: PathBuf,
        sandbox: Sandbox,
    }

    fn world() -> World {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let ws = root.join("ws");
        std::fs::create_dir_all(ws.join("src")).unwrap();
        std::fs::create_dir_all(root.join("data/sessions/me")).unwrap();
        std::fs::create_dir_all(root.join("data/sessions/other")).unwrap();
        std::fs::create_dir_all(root.join("outside/deep")).unwrap();
        symlink(root.join("outside"), ws.join("escape")).unwrap();
        symlink("src", ws.join("inner")).unwrap();
        symlink(root.join("data/sessions/other"), ws.join("peek")).unwrap();
        symlink(root.join("nowhere/new"), ws.join("dangling")).unwrap();
        let sandbox = Sandbox::new(&ws, &root.join("data"), "me").unwrap();
        World {
            _dir: dir,
            root,
            sandbox,
        }
    }

    #[test]
    fn paths_resolve_and_classify() {
        let w = world();
        let ws = w.root.join("ws");
        let cases: Vec<(String, PathBuf, Zone)> = vec![
            ("a.txt".into(), ws.join("a.txt"), Zone::Workspace),
            ("./src/../b".into(), ws.join("b"), Zone::Workspace),
            (
                "new/dir/file".into(),
                ws.join("new/dir/file"),
                Zone::Workspace,
            ),
            ("../ws/src".into(), ws.join("src"), Zone::Workspace),
            ("..".into(), w.root.clone(), Zone::Outside),
            (
                "../outside/x".into(),
                w.root.join("outside/x"),
                Zone::Outside,
            ),
            // a symlink out of the workspace is outside, and `..` after it follows the target
            (
                "escape/deep".into(),
                w.root.join("outside/deep"),
                Zone::Outside,
            ),
            ("escape/..".into(), w.root.clone(), Zone::Outside),
            ("inner/x.rs".into(), ws.join("src/x.rs"), Zone::Workspace),
            (
                "peek/tool_1.offload".into(),
                w.root.join("data/sessions/other/tool_1.offload"),
                Zone::ForeignOffloads,
            ),
            (
                w.root
                    .join("data/sessions/me/tool_2.offload")
                    .display()
                    .to_string(),
                w.root.join("data/sessions/me/tool_2.offload"),
                Zone::OwnOffloads,
            ),
            (
                "dangling/f".into(),
                w.root.join("nowhere/new/f"),
                Zone::Outside,
            ),
            (
                "/etc/../etc/passwd".into(),
                PathBuf::from("/etc/passwd"),
                Zone::Outside,
            ),
        ];
        for (raw, path, zone) in cases {
            let got = w.sandbox.resolve(&raw).unwrap();
            assert_eq!(got, ResolvedPath { path, zone }, "{raw}");
        }
    }

    #[test]
    fn bad_paths_and_loops_are_errors() {
        let w = world();
        let ws = w.root.join("ws");
        symlink(ws.join("loop_b"), ws.join("loop_a")).unwrap();
        symlink(ws.join("loop_a"), ws.join("loop_b")).unwrap();
        assert!(
            w.sandbox
                .resolve("loop_a/x")
                .unwrap_err()
                .contains("too many symlinks")
        );
        assert!(w.sandbox.resolve("").is_err());
        assert!(w.sandbox.resolve("a\0b").is_err());
    }

    #[test]
    fn the_data_dir_is_off_limits_even_inside_a_workspace() {
        let w = world();
        let root = &w.root;
        let data = root.join("data");
        std::fs::create_dir_all(data.join("workspaces/me")).unwrap();
        // (workspace, path, zone)
        let cases: Vec<(PathBuf, PathBuf, Zone)> = vec![
            // a workspace that holds the data dir
            (root.clone(), root.join("ws/a"), Zone::Workspace),
            (root.clone(), data.clone(), Zone::DataDir),
            (root.clone(), data.join("agentd.db-wal"), Zone::DataDir),
            (root.clone(), data.join("agentd.lock"), Zone::DataDir),
            (root.clone(), data.join("workspaces/it/x"), Zone::DataDir),
            (
                root.clone(),
                data.join("sessions/other/t.offload"),
                Zone::ForeignOffloads,
            ),
            (
                root.clone(),
                data.join("sessions/me/t.offload"),
                Zone::OwnOffloads,
            ),
            // the agent's default workspace lies in the data dir and stays usable
            (
                data.join("workspaces/me"),
                data.join("workspaces/me/a"),
                Zone::Workspace,
            ),
            (
                data.join("workspaces/me"),
                data.join("workspaces/it/a"),
                Zone::DataDir,
            ),
            (
                data.join("workspaces/me"),
                data.join("agentd.db"),
                Zone::DataDir,
            ),
            // a workspace that is the data dir itself gets nothing of it
            (data.clone(), data.join("agentd.db"), Zone::DataDir),
            (data.clone(), data.join("workspaces"), Zone::DataDir),
        ];
        for (workspace, path, zone) in cases {
            let sandbox = Sandbox::new(&workspace, &data, "me").unwrap();
            assert_eq!(
                sandbox.zone_of(&path),
                zone,
                "{} in {}",
                path.display(),
                workspace.display()
            );
        }
        // A relative data dir is taken from the current directory, resolved.
        let relative = Sandbox::new(root, Path::new("."), "me").unwrap();
        let cwd = std::fs::canonicalize(".").unwrap();
        assert_eq!(relative.zone_of(&cwd.join("agentd.db")), Zone::DataDir);

        // Walks from a workspace never enter the data dir; walks inside it stay in it.
        let sandbox = Sandbox::new(root, &data, "me").unwrap();
        let own = data.join("sessions/me");
        let skips = [
            (root.clone(), data.clone(), true),
            (root.clone(), data.join("sessions/other"), true),
            (root.clone(), own.clone(), true),
            (root.clone(), root.join("ws"), false),
            (own.clone(), own.join("tool_1.offload"), false),
        ];
        for (base, entry, skipped) in skips {
            assert_eq!(
                sandbox.walk_skips(&base, &entry),
                skipped,
                "{} from {}",
                entry.display(),
                base.display()
            );
        }
        let default_ws = Sandbox::new(&data.join("workspaces/me"), &data, "me").unwrap();
        let base = data.join("workspaces/me");
        assert!(!default_ws.walk_skips(&base, &base.join("src")));
    }

    #[test]
    fn open_resolved_opens_exactly_the_checked_path() {
        use std::io::{Read, Write};
        let w = world();
        let ws = w.root.join("ws");
        let outside = w.root.join("outside");
        std::fs::write(outside.join("secret"), "secret").unwrap();

        // Writing creates missing folders, then overwrites.
        let new = ws.join("new/dir/f.txt");
        let mut opened = open_resolved(&new, OpenFor::Write).unwrap();
        assert!(opened.created);
        opened.file.write_all(b"one").unwrap();
        let opened = open_resolved(&new, OpenFor::Write).unwrap();
        assert!(!opened.created);
        let mut text = String::new();
        open_resolved(&new, OpenFor::Read)
            .unwrap()
            .file
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(text, "one");

        // A file swapped for a symlink after the check is not followed, for any use.
        let swapped = ws.join("f.txt");
        symlink(outside.join("secret"), &swapped).unwrap();
        for how in [OpenFor::Read, OpenFor::Edit, OpenFor::Write] {
            let err = open_resolved(&swapped, how).unwrap_err();
            assert!(
                err.contains(&format!("{} is a symbolic link", swapped.display()))
                    && err.contains("changed after the path was checked"),
                "{how:?}: {err}"
            );
        }
        // So is a parent folder swapped for a link to another folder.
        symlink(&outside, ws.join("sub")).unwrap();
        let err = open_resolved(&ws.join("sub/g.txt"), OpenFor::Write).unwrap_err();
        assert!(
            err.contains(&format!("{} is a symbolic link", ws.join("sub").display())),
            "{err}"
        );
        assert!(!outside.join("g.txt").exists());
        assert_eq!(
            std::fs::read_to_string(outside.join("secret")).unwrap(),
            "secret"
        );

        // Only regular files are opened; only resolved absolute paths are taken.
        nix::unistd::mkfifo(&ws.join("fifo"), Mode::from_bits_truncate(0o600)).unwrap();
        let cases = [
            (ws.join("fifo"), OpenFor::Read, "is not a regular file"),
            (ws.join("fifo"), OpenFor::Write, "is not a regular file"),
            (ws.join("src"), OpenFor::Read, "is a directory"),
            (ws.join("src"), OpenFor::Write, "is a directory"),
            (ws.join("missing"), OpenFor::Read, "No such file"),
            (PathBuf::from("rel/f"), OpenFor::Read, "not a resolved path"),
            (ws.join("a/../b"), OpenFor::Write, "not a resolved path"),
        ];
        for (path, how, expected) in cases {
            let err = open_resolved(&path, how).unwrap_err();
            assert!(err.contains(expected), "{} {how:?}: {err}", path.display());
        }
    }
}
