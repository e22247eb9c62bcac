//! Starting children: every `bash` tool command, every hook, every MCP stdio server and
//! every `git` the daemon runs to look at a workspace is started here, and nowhere else. A
//! child gets
//! - the environment `tools::env` allows (no provider key, no secret, no bash start-up
//!   hooks);
//! - a process group of its own, as a [`ProcessGroup`] value that kills everything the
//!   child started when dropped, and is recorded in `<data_dir>/process-groups/` while it
//!   lives;
//! - the child guard (`guard.rs`): the daemon's own binary, run with a hidden first argument
//!   ([`GUARD_ARG`]), the subreaper of everything the child starts, which makes sure none
//!   of it outlives the child's call or the daemon;
//! - for a `bash` command, the OS sandbox of its agent (`confine.rs`: the daemon's binary
//!   once more, as the sandbox launcher between the guard and bash).
//!
//! At start-up [`ProcessLauncher::kill_leftover_groups`] ends the guards a previous daemon
//! recorded that are provably its own and still run, and the launcher probes what the
//! kernel can confine ([`SandboxSupport`]). This module never decides whether something
//! may run (that is `permission.rs`) nor how it is confined (`wall.rs`); it only runs it
//! so.
//!
//! # Why a guard that stays, and how it survives tokio's threads
//!
//! The kernel's parent-death signal (`PR_SET_PDEATHSIG`) must be set in the child, which
//! without `unsafe` (a `pre_exec` hook) means after an `exec`: the guard sets it and checks
//! that its parent is still the daemon (it may have died between the fork and the prctl).
//! Two traps decide the rest:
//! - The signal kills one process, but a command's children (`sleep 30 &`) live in its
//!   group, or leave it (`setsid`). So the guard does not `exec` the program: it spawns it
//!   in its group (the group the daemon made, which the guard leads), stays as the
//!   subreaper of all it starts, and on the daemon's death kills every descendant.
//! - The "parent" of `PR_SET_PDEATHSIG` is the *thread* that forked, and tokio spawns from
//!   whichever worker runs the task; a worker (or a thread leaving `block_in_place`) may end
//!   while the daemon lives. The kernel then hands the child to another thread of the same
//!   process and sends the signal all the same (`forget_original_parent` in kernel/exit.c
//!   signals on every reparenting); only when the last thread is gone does the child go to
//!   a reaper outside the daemon. So a signal alone proves nothing: the guard reacts only
//!   when `getppid()` is no longer the daemon's pid, which happens exactly when the whole
//!   daemon is gone, whichever thread spawned it. (A dedicated spawning thread would also
//!   work, but would tie every spawn to one thread's lifetime and queue; the pid check
//!   makes the thread irrelevant.)
//!
//! The guard first blocks the signals it waits for (it takes them with `sigwait`: no
//! handler, no `unsafe`), sets the parent-death signal and checks its parent once more
//! (the daemon may have died in between), and only then spawns the program: an "end
//! everything" arriving while the program starts waits, pending, instead of ending the
//! guard by its default action and leaving the program unguarded. The program starts
//! with nothing blocked (std empties the mask in the child before the `exec`; a test
//! checks). When the program ends, the guard ends the same way (its exit code, or the same
//! signal), so callers see the program's status. SIGTERM and SIGINT sent to the group
//! reach the program; SIGKILL for a child is sent to its guard as "end everything"
//! ([`end_now`]), since a SIGKILL to the group would end the guard before it could reach
//! what left the group.

use std::collections::HashSet;
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use env::EnvPolicy;

pub mod confine;
pub mod env;
mod guard;

pub use confine::{Confinement, SandboxSupport, run_sandbox_if_asked};
pub use guard::run_guard_if_asked;

/// A lock that a panicking holder did not poison for the others.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The hidden first argument that makes `agentd` the child guard.
pub const GUARD_ARG: &str = "__agentd-child-guard";

/// The binary children run through: the daemon's own, whatever its path is now (an
/// upgrade may have replaced the file; the running image stays reachable here).
const SELF_EXE: &str = "/proc/self/exe";

/// Where bash may be, in order.
const BASH_PATHS: &[&str] = &["/usr/bin/bash", "/bin/bash"];

/// The folder of group records, under the data dir.
const RECORDS_DIR: &str = "process-groups";

/// Exit code of the guard when it cannot run the program (as a shell's "not found").
const CANNOT_RUN: i32 = 127;

/// Starts children (see the module doc).
#[derive(Debug)]
pub struct ProcessLauncher {
    /// The guard's binary; `None` only in unit tests, whose binary is the test harness.
    guard: Option<PathBuf>,
    daemon_pid: u32,
    /// `<data_dir>/process-groups`; `None` only in unit tests.
    records: Option<PathBuf>,
    env: EnvPolicy,
    /// Bash, resolved at start.
    bash: Option<PathBuf>,
    /// Whether commands can be confined here (probed at start-up).
    sandbox: SandboxSupport,
    /// The guards of confined commands that run now, by pid: their descendants are
    /// refused on the daemon's socket (`is_confined`).
    confined: Arc<Mutex<HashSet<u32>>>,
}

impl ProcessLauncher {
    /// A launcher for the daemon with this data dir.
    pub fn new(data_dir: &Path, env: EnvPolicy) -> Result<ProcessLauncher, String> {
        Self::with_binary(Path::new(SELF_EXE), data_dir, env)
    }

    /// A launcher whose guard and sandbox launcher is `binary` (the daemon's own binary;
    /// tests outside the daemon name it). Probes the sandbox (a few milliseconds).
    pub fn with_binary(
        binary: &Path,
        data_dir: &Path,
        env: EnvPolicy,
    ) -> Result<ProcessLauncher, String> {
        let guard = binary.to_owned();
        std::fs::metadata(&guard).map_err(|e| {
            format!(
                "cannot find the daemon's own binary at {} ({e}); agentd needs /proc",
                guard.display()
            )
        })?;
        let records = data_dir.join(RECORDS_DIR);
        {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&records)
                .map_err(|e| format!("cannot create {}: {e}", records.display()))?;
        }
        let bash = find_bash();
        if bash.is_none() {
            tracing::warn!(
                "bash is not installed (looked for {}); the bash tool will fail",
                BASH_PATHS.join(" and ")
            );
        }
        let sandbox = confine::probe(&guard);
        Ok(ProcessLauncher {
            guard: Some(guard),
            daemon_pid: std::process::id(),
            records: Some(records),
            env,
            bash,
            sandbox,
            confined: Arc::default(),
        })
    }

    /// Whether commands can be confined here, as probed at start-up.
    pub fn sandbox(&self) -> &SandboxSupport {
        &self.sandbox
    }

    /// Whether `pid` is a confined command or anything it started (it descends from the
    /// guard of a confined command that runs now). A process whose parents cannot be read
    /// (it is gone) counts as confined: the answer must fail closed.
    pub fn is_confined(&self, pid: u32) -> bool {
        let guards = lock(&self.confined).clone();
        if guards.is_empty() {
            return false;
        }
        let mut pid = pid;
        // A chain of parents is short; the bound only stops a loop in a racing /proc.
        for _ in 0..4096 {
            if guards.contains(&pid) {
                return true;
            }
            if pid <= 1 {
                return false;
            }
            match ProcStat::read(pid) {
                Some(stat) => pid = stat.ppid,
                None => return true,
            }
        }
        true
    }

    /// A launcher without the guard and records, for unit tests (their binary is the test
    /// harness, which cannot be the guard).
    #[cfg(test)]
    pub fn for_tests() -> ProcessLauncher {
        ProcessLauncher {
            guard: None,
            daemon_pid: std::process::id(),
            records: None,
            env: EnvPolicy::new([], &[], &[], &[]).unwrap_or_else(|e| panic!("{e}")),
            bash: find_bash(),
            sandbox: SandboxSupport::unavailable("unit tests run without the daemon's binary"),
            confined: Arc::default(),
        }
    }

    /// The absolute path of bash.
    pub fn bash(&self) -> Result<&Path, String> {
        self.bash.as_deref().ok_or_else(|| {
            format!(
                "bash is not installed: looked for {}; the bash tool runs commands with bash only",
                BASH_PATHS.join(" and ")
            )
        })
    }

    /// `bash --noprofile --norc -c COMMAND` (non-interactive, no start-up files), through
    /// the guard, with the bash environment (and `TMPDIR` when given), in a new process
    /// group, confined when `confinement` says how. The caller sets the working folder and
    /// stdio, spawns it and then calls [`ProcessLauncher::track`] (with `confined` as
    /// given here).
    pub fn bash_command(
        &self,
        command: &str,
        tmpdir: Option<&Path>,
        confinement: Option<&Confinement>,
    ) -> Result<tokio::process::Command, String> {
        let bash = self.bash()?;
        let mut env = self.env.bash_env(std::env::vars_os());
        if let Some(tmpdir) = tmpdir {
            env.retain(|(k, _)| k != "TMPDIR");
            env.push(("TMPDIR".into(), tmpdir.as_os_str().to_owned()));
        }
        let args: [&OsStr; 4] = [
            "--noprofile".as_ref(),
            "--norc".as_ref(),
            "-c".as_ref(),
            command.as_ref(),
        ];
        let spec = match confinement {
            None => None,
            Some(_) if self.guard.is_none() || !self.sandbox.available => {
                return Err(format!(
                    "the command cannot be confined: {}",
                    self.sandbox.reason.as_deref().unwrap_or("no sandbox here")
                ));
            }
            Some(c) => Some(
                serde_json::to_string(c)
                    .map_err(|e| format!("cannot write the sandbox spec: {e}"))?,
            ),
        };
        Ok(self.command(bash.as_os_str(), &args, env, spec.as_deref()))
    }

    /// An MCP stdio server's command: `program` looked up in the environment the server
    /// gets (its `PATH`, relative to `cwd`), through the guard, in a new process group.
    pub fn mcp_command(
        &self,
        program: &str,
        args: &[String],
        own_env: &std::collections::BTreeMap<String, String>,
        cwd: Option<&Path>,
    ) -> Result<tokio::process::Command, String> {
        let env = self.env.mcp_env(std::env::vars_os(), own_env);
        let path = env
            .iter()
            .find(|(k, _)| k == OsStr::new("PATH"))
            .map(|(_, v)| v.clone())
            .unwrap_or_default();
        let resolved = resolve_program(program, &path, cwd)?;
        let args: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
        let mut command = self.command(resolved.as_os_str(), &args, env, None);
        if let Some(cwd) = cwd {
            command.current_dir(cwd);
        }
        Ok(command)
    }

    /// `git` (found at start by `tools::git`) with `args`, through the guard, in a new
    /// process group, with nothing of the daemon's environment ([`env::git_env`]),
    /// in `cwd`. The caller sets stdio, spawns it and then calls [`ProcessLauncher::track`].
    pub fn git_command(&self, git: &Path, args: &[&str], cwd: &Path) -> tokio::process::Command {
        let args: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
        let mut command = self.command(git.as_os_str(), &args, env::git_env(), None);
        command.current_dir(cwd);
        command
    }

    /// `program` through the guard (confined by `spec`, a [`Confinement`] as JSON), with
    /// exactly `env`, leading a new process group.
    fn command(
        &self,
        program: &OsStr,
        args: &[&OsStr],
        env: Vec<(OsString, OsString)>,
        spec: Option<&str>,
    ) -> tokio::process::Command {
        let mut command = match &self.guard {
            Some(guard) => {
                let mut command = tokio::process::Command::new(guard);
                command
                    .arg0("agentd")
                    .arg(GUARD_ARG)
                    .arg(self.daemon_pid.to_string())
                    .arg(child_umask().map_or("-".to_owned(), |m| format!("{m:o}")))
                    .arg(spec.unwrap_or("-"))
                    .arg(program);
                command
            }
            None => tokio::process::Command::new(program),
        };
        command.args(args).env_clear().envs(env).process_group(0);
        command
    }

    /// Spawns `command` (one of the commands above) with its three standard streams piped
    /// and takes charge of its process group. `what` names it in errors.
    pub fn spawn_piped(
        &self,
        mut command: tokio::process::Command,
        what: &str,
    ) -> Result<Piped, String> {
        command
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        let mut process = command
            .spawn()
            .map_err(|e| format!("cannot run {what}: {e}"))?;
        let pid = process
            .id()
            .ok_or_else(|| format!("{what} exited at once"))?;
        let group = self.track(pid, false);
        let (Some(stdin), Some(stdout), Some(stderr)) = (
            process.stdin.take(),
            process.stdout.take(),
            process.stderr.take(),
        ) else {
            return Err(format!("{what}: its standard streams are not pipes"));
        };
        Ok(Piped {
            process,
            group,
            stdin,
            stdout,
            stderr,
        })
    }

    /// Takes charge of the process group a spawned child leads (`pid` is the child's):
    /// records it for the next start-up and returns the value that kills it when dropped.
    /// A `confined` command's guard is remembered while it lives (see `is_confined`).
    pub fn track(&self, pid: u32, confined: bool) -> ProcessGroup {
        let pgid = i32::try_from(pid).map_or(Pid::from_raw(0), Pid::from_raw);
        let record = self.records.as_ref().and_then(|dir| {
            let path = dir.join(pid.to_string());
            let mark = process_mark(pid).ok_or_else(|| "the child is gone already".to_owned());
            match mark.and_then(|m| std::fs::write(&path, m).map_err(|e| e.to_string())) {
                Ok(()) => Some(path),
                Err(e) => {
                    tracing::debug!(pid, "cannot record the process group: {e}");
                    None
                }
            }
        });
        let confined = confined.then(|| {
            lock(&self.confined).insert(pid);
            self.confined.clone()
        });
        ProcessGroup {
            pgid,
            record,
            guarded: self.guard.is_some(),
            confined,
        }
    }

    /// Kills the process groups a previous daemon recorded and left running (after a
    /// `kill -9`, say), if they are provably its children: the group's leader is alive,
    /// still leads the group, started at the recorded time in this boot, and is the child
    /// guard. Anything else is left alone. Forgets every record. Returns how many groups
    /// were killed.
    pub fn kill_leftover_groups(&self) -> usize {
        let Some(dir) = &self.records else {
            return 0;
        };
        let Ok(entries) = std::fs::read_dir(dir) else {
            return 0;
        };
        let mut killed = 0;
        for entry in entries.flatten() {
            let path = entry.path();
            let recorded = std::fs::read_to_string(&path).unwrap_or_default();
            let pid = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
                .filter(|&p| p > 1);
            if let Some(pid) = pid
                && is_our_leftover(pid, &recorded)
                && let Ok(pgid) = i32::try_from(pid)
            {
                // The guard kills everything it guards, whatever group it is in.
                match nix::sys::signal::kill(Pid::from_raw(pgid), guard::END_ALL) {
                    Ok(()) => {
                        killed += 1;
                        tracing::info!(pgid, "ended what a guard the last run left behind ran");
                    }
                    Err(e) => tracing::debug!(pgid, "cannot end a left-over guard: {e}"),
                }
            }
            if let Err(e) = std::fs::remove_file(&path) {
                tracing::warn!("cannot remove {}: {e}", path.display());
            }
        }
        killed
    }
}

/// The first bash of [`BASH_PATHS`] that is an executable file.
fn find_bash() -> Option<PathBuf> {
    BASH_PATHS
        .iter()
        .map(PathBuf::from)
        .find(|p| is_executable(p))
}

fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Where `program` is: a name is looked up in `path` (absolute entries only, as the
/// environment policy leaves it); a path with a `/` is taken relative to `cwd`.
fn resolve_program(program: &str, path: &OsStr, cwd: Option<&Path>) -> Result<PathBuf, String> {
    if program.is_empty() {
        return Err("no program to run".into());
    }
    if program.contains('/') {
        let candidate = match cwd {
            Some(cwd) if Path::new(program).is_relative() => cwd.join(program),
            _ => PathBuf::from(program),
        };
        return if is_executable(&candidate) {
            Ok(candidate)
        } else {
            Err(format!(
                "cannot run {program:?}: {} is not an executable file",
                candidate.display()
            ))
        };
    }
    path.as_bytes()
        .split(|&b| b == b':')
        .filter(|entry| entry.first() == Some(&b'/'))
        .map(|entry| Path::new(OsStr::from_bytes(entry)).join(program))
        .find(|candidate| is_executable(candidate))
        .ok_or_else(|| {
            format!(
                "cannot run {program:?}: not found in PATH {:?}",
                path.to_string_lossy()
            )
        })
}

/// What recognises a process later: the boot it started in and its start time (clock
/// ticks since boot, field 22 of `/proc/PID/stat`).
pub fn process_mark(pid: u32) -> Option<String> {
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let stat = ProcStat::read(pid)?;
    Some(format!("{} {}\n", boot.trim(), stat.start_time))
}

/// Whether `pid` is a guard a daemon started, leading its group, as recorded.
fn is_our_leftover(pid: u32, recorded: &str) -> bool {
    let Some(now) = process_mark(pid) else {
        return false;
    };
    let Some(stat) = ProcStat::read(pid) else {
        return false;
    };
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let is_guard = cmdline
        .split(|&b| b == 0)
        .nth(1)
        .is_some_and(|arg| arg == GUARD_ARG.as_bytes());
    now.trim() == recorded.trim() && stat.pgrp == pid && is_guard
}

/// The fields of `/proc/PID/stat` used here.
struct ProcStat {
    ppid: u32,
    pgrp: u32,
    start_time: u64,
}

impl ProcStat {
    fn read(pid: u32) -> Option<ProcStat> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // "pid (comm) state ppid pgrp ...": comm may hold spaces and ')', so split after
        // the last ')'. Then field 3 (state) is index 0.
        let rest = stat.rsplit_once(')')?.1;
        let fields: Vec<&str> = rest.split_whitespace().collect();
        Some(ProcStat {
            ppid: fields.get(1)?.parse().ok()?,
            pgrp: fields.get(2)?.parse().ok()?,
            start_time: fields.get(19)?.parse().ok()?,
        })
    }
}

/// Reads a child's pipe to its end, keeping the first `cap` bytes; returns them and how
/// many there were in all. Read errors end the reading (what came is kept).
pub async fn read_capped(pipe: impl tokio::io::AsyncRead + Unpin, cap: usize) -> (Vec<u8>, usize) {
    read_capped_with(pipe, cap, |_| {}).await
}

/// [`read_capped`], each chunk also handed to `seen` as it is read (whole, past the cap
/// too): how a command's output is shown while it runs. `seen` must not wait.
pub async fn read_capped_with(
    mut pipe: impl tokio::io::AsyncRead + Unpin,
    cap: usize,
    mut seen: impl FnMut(&[u8]),
) -> (Vec<u8>, usize) {
    use tokio::io::AsyncReadExt;
    let mut kept = Vec::new();
    let mut total = 0;
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        match pipe.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                seen(&chunk[..n]);
                total += n;
                let room = cap.saturating_sub(kept.len());
                kept.extend_from_slice(&chunk[..n.min(room)]);
            }
        }
    }
    (kept, total)
}

/// How long a pipe of a child may stay open once its whole group was killed: only
/// something that escaped the group and its guard can still hold it, and a call or a hook
/// must not wait on that forever.
pub const PIPES_AFTER_KILL: std::time::Duration = std::time::Duration::from_secs(5);

/// What `reader` (a [`read_capped`] task on a pipe of a child whose group was killed) read,
/// waiting at most `bound` for the pipe to close; if it is still open then, the reading is
/// stopped and nothing is kept (logged: something outside the group holds the pipe).
pub async fn read_after_kill(
    reader: tokio::task::JoinHandle<(Vec<u8>, usize)>,
    bound: std::time::Duration,
) -> (Vec<u8>, usize) {
    let abort = reader.abort_handle();
    match tokio::time::timeout(bound, reader).await {
        Ok(read) => read.unwrap_or_default(),
        Err(_) => {
            abort.abort();
            tracing::warn!(
                "a pipe of a killed child is still open after {} s: something outside its \
                 process group holds it; its output is dropped",
                bound.as_secs()
            );
            (Vec::new(), 0)
        }
    }
}

/// A child spawned by [`ProcessLauncher::spawn_piped`]: the process (reaped by its
/// owner), its group (killed when dropped) and its standard streams.
pub struct Piped {
    pub process: tokio::process::Child,
    pub group: ProcessGroup,
    pub stdin: tokio::process::ChildStdin,
    pub stdout: tokio::process::ChildStdout,
    pub stderr: tokio::process::ChildStderr,
}

/// A child the daemon started, in a process group it leads: its guard, or (in unit
/// tests) the program itself. Dropping it kills everything the child started (SIGKILL) and
/// forgets its record.
#[derive(Debug)]
pub struct ProcessGroup {
    pgid: Pid,
    record: Option<PathBuf>,
    /// The group is a guard's: signals go to the guard, which passes them on.
    guarded: bool,
    /// The set of confined guards this one is in while it lives.
    confined: Option<Arc<Mutex<HashSet<u32>>>>,
}

impl ProcessGroup {
    pub fn id(&self) -> i32 {
        self.pgid.as_raw()
    }

    /// Sends `signal` to what the daemon started; false when it is gone. Through a guard:
    /// SIGTERM and SIGINT reach the program's group, SIGKILL becomes "kill every
    /// descendant" ([`guard::END_ALL`]), which also reaches what left the group.
    pub fn signal(&self, signal: Signal) -> bool {
        if self.pgid.as_raw() <= 1 {
            return false;
        }
        if self.guarded && signal == Signal::SIGKILL {
            return end_now(self.pgid.as_raw());
        }
        killpg(self.pgid, signal).is_ok()
    }

    /// Whether the child (its guard) is still there.
    pub fn alive(&self) -> bool {
        self.pgid.as_raw() > 1 && killpg(self.pgid, None).is_ok()
    }
}

/// Kills at once everything the guard leading the group `pgid` (a [`ProcessGroup::id`])
/// guards, whatever group or session it is in; without the guard, the group. Does not
/// wait. False when nothing is left to signal.
pub fn end_now(pgid: i32) -> bool {
    let pid = Pid::from_raw(pgid);
    pgid > 1
        && (nix::sys::signal::kill(pid, guard::END_ALL).is_ok()
            || killpg(pid, Signal::SIGKILL).is_ok())
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.signal(Signal::SIGKILL);
        if let Some(confined) = self.confined.take()
            && let Ok(pid) = u32::try_from(self.pgid.as_raw())
        {
            lock(&confined).remove(&pid);
        }
        if let Some(path) = self.record.take()
            && let Err(e) = std::fs::remove_file(&path)
        {
            tracing::debug!("cannot remove {}: {e}", path.display());
        }
    }
}

/// The umask the daemon started with (the user's), recorded once at start by `main`,
/// which then sets its own to 077 so everything it writes is private.
static USER_UMASK: std::sync::OnceLock<u32> = std::sync::OnceLock::new();

/// Records the user's umask (the one the daemon was started with, before it made its own
/// 077). Only the first call counts.
pub fn set_child_umask(umask: u32) {
    let _ = USER_UMASK.set(umask);
}

/// The umask things a tool creates for the user should get: children the tools start
/// (a `bash` command, an MCP stdio server) and files `write_file` creates in a workspace.
/// `None` when the daemon did not change its umask (it is then the user's already).
pub fn child_umask() -> Option<u32> {
    USER_UMASK.get().copied()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;

    #[tokio::test]
    async fn a_pipe_held_open_after_the_kill_is_given_up_on_a_closed_one_read() {
        // Held open: the writing end stays with the test, as with a process that escaped.
        let (held, _writer) = tokio::io::duplex(64);
        let reader = tokio::spawn(read_capped(held, 1024));
        let read = read_after_kill(reader, std::time::Duration::from_millis(50)).await;
        assert_eq!(read, (Vec::new(), 0));
        // Closed: what was written is kept.
        let (closed, mut writer) = tokio::io::duplex(64);
        tokio::io::AsyncWriteExt::write_all(&mut writer, b"last words")
            .await
            .unwrap();
        drop(writer);
        let reader = tokio::spawn(read_capped(closed, 1024));
        let read = read_after_kill(reader, PIPES_AFTER_KILL).await;
        assert_eq!(read, (b"last words".to_vec(), 10));
    }

    #[test]
    fn programs_resolve_by_path_or_relative_to_cwd() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let tool = bin.join("tool");
        std::fs::write(&tool, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
        let plain = bin.join("plain");
        std::fs::write(&plain, "").unwrap();
        let path = OsString::from(format!("relative:{}", bin.display()));

        assert_eq!(resolve_program("tool", &path, None), Ok(tool.clone()));
        assert_eq!(
            resolve_program("bin/tool", OsStr::new(""), Some(dir.path())),
            Ok(dir.path().join("bin/tool"))
        );
        assert_eq!(
            resolve_program(tool.to_str().unwrap(), OsStr::new(""), None),
            Ok(tool.clone())
        );
        for (program, cwd) in [
            ("plain", None),
            ("missing", None),
            ("bin/plain", Some(dir.path())),
            ("", None),
        ] {
            assert!(resolve_program(program, &path, cwd).is_err(), "{program}");
        }
        // A relative PATH entry is never searched, even when it would find the program.
        let relative = OsString::from("bin");
        let here = std::env::current_dir().unwrap();
        assert!(resolve_program("tool", &relative, Some(&here)).is_err());
    }

    #[test]
    fn a_process_is_recognised_by_its_start_time_and_group() {
        let me = std::process::id();
        let mark = process_mark(me).unwrap();
        assert_eq!(mark.split_whitespace().count(), 2, "{mark:?}");
        assert_eq!(process_mark(me), Some(mark.clone()));
        // The test harness is not a guard, whatever its record says.
        assert!(!is_our_leftover(me, &mark));
        assert!(!is_our_leftover(me, "other-boot 1"));
    }

    /// A launcher keeping its records in a new folder, and a `sleep 30` in a group of its
    /// own for it to find.
    fn launcher_with_records_and_sleeper()
    -> (tempfile::TempDir, ProcessLauncher, std::process::Child) {
        let dir = tempfile::tempdir().unwrap();
        let launcher = ProcessLauncher {
            records: Some(dir.path().to_owned()),
            ..ProcessLauncher::for_tests()
        };
        let sleeper = std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        (dir, launcher, sleeper)
    }

    #[test]
    fn leftover_records_that_are_not_ours_are_forgotten_and_nothing_is_killed() {
        let (dir, launcher, mut sleeper) = launcher_with_records_and_sleeper();
        let pid = sleeper.id();
        // A record that matches the process but not the guard, a foreign one, junk.
        std::fs::write(dir.path().join(pid.to_string()), process_mark(pid).unwrap()).unwrap();
        std::fs::write(dir.path().join("1"), "x 1").unwrap();
        std::fs::write(dir.path().join("junk"), "").unwrap();
        assert_eq!(launcher.kill_leftover_groups(), 0);
        assert_eq!(sleeper.try_wait().unwrap(), None, "the sleeper still runs");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        sleeper.kill().unwrap();
        sleeper.wait().unwrap();
    }

    #[test]
    fn a_tracked_group_is_recorded_and_killed_on_drop() {
        let (dir, launcher, mut sleeper) = launcher_with_records_and_sleeper();
        let group = launcher.track(sleeper.id(), false);
        let record = dir.path().join(sleeper.id().to_string());
        assert_eq!(
            std::fs::read_to_string(&record).unwrap(),
            process_mark(sleeper.id()).unwrap()
        );
        assert!(group.alive());
        drop(group);
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(sleeper.wait().unwrap().signal(), Some(9));
        assert!(!record.exists());
    }
}
