//! Starting children: every `bash` tool command, every MCP stdio server and every `git` the
//! daemon runs to look at a workspace is started here, and nowhere else. A child gets
//! - the environment `tools::env` allows (no provider key, no secret, no bash start-up
//!   hooks);
//! - a process group of its own, as a [`ProcessGroup`] value that kills the whole group
//!   when dropped, and is recorded in `<data_dir>/process-groups/` while it lives;
//! - the child guard: the daemon's own binary, run with a hidden first argument
//!   ([`GUARD_ARG`]), which makes sure the child dies with the daemon (see
//!   [`run_guard_if_asked`]).
//!
//! At start-up [`ProcessLauncher::kill_leftover_groups`] kills the groups a previous daemon
//! recorded that are provably its own and still run. This module never decides whether
//! something may run (that is `permission.rs`); it only runs it safely.
//!
//! # Why a guard that stays, and how it survives tokio's threads
//!
//! The kernel's parent-death signal (`PR_SET_PDEATHSIG`) must be set in the child, which
//! without `unsafe` (a `pre_exec` hook) means after an `exec`: the guard sets it and checks
//! that its parent is still the daemon (it may have died between the fork and the prctl).
//! Two traps decide the rest:
//! - The signal kills one process, but a command's children (`sleep 30 &`) live in its
//!   group. So the guard does not `exec` the program: it spawns it in its own group (the
//!   group the daemon made, which the guard leads) and stays, and on the daemon's death
//!   kills the whole group with SIGKILL.
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
//! The guard spawns the program first (a child inherits the signal mask, and the program
//! must start with nothing blocked), then blocks the signals it waits for and takes them
//! with `sigwait` (no handler, no `unsafe`), then sets the parent-death signal and checks
//! its parent once more (the daemon may have died in between). When the program ends, the guard
//! ends the same way (its exit code, or the same signal), so callers see the program's
//! status. SIGTERM and SIGINT sent to the group reach the program; the guard itself waits
//! for the program to end.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use nix::sys::signal::{SigSet, Signal, killpg};
use nix::unistd::Pid;

use super::env::EnvPolicy;

/// The hidden first argument that makes `agentd` the child guard.
pub const GUARD_ARG: &str = "__agentd-child-guard";

/// The binary children run through: the daemon's own, whatever its path is now (an
/// upgrade may have replaced the file; the running image stays reachable here).
const SELF_EXE: &str = "/proc/self/exe";

/// Where bash may be, in order.
const BASH_PATHS: &[&str] = &["/usr/bin/bash", "/bin/bash"];

/// The folder of group records, under the data dir.
const RECORDS_DIR: &str = "process-groups";

/// The signal the guard asks for when its parent dies.
const PARENT_DEATH_SIGNAL: Signal = Signal::SIGHUP;

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
}

impl ProcessLauncher {
    /// A launcher for the daemon with this data dir.
    pub fn new(data_dir: &Path, env: EnvPolicy) -> Result<ProcessLauncher, String> {
        let guard = PathBuf::from(SELF_EXE);
        std::fs::metadata(&guard).map_err(|e| {
            format!("cannot find the daemon's own binary at {SELF_EXE} ({e}); agentd needs /proc")
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
        Ok(ProcessLauncher {
            guard: Some(guard),
            daemon_pid: std::process::id(),
            records: Some(records),
            env,
            bash,
        })
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
    /// the guard, with the bash environment, in a new process group. The caller sets the
    /// working folder and stdio, spawns it and then calls [`ProcessLauncher::track`].
    pub fn bash_command(&self, command: &str) -> Result<tokio::process::Command, String> {
        let bash = self.bash()?;
        let env = self.env.bash_env(std::env::vars_os());
        let args: [&OsStr; 4] = [
            "--noprofile".as_ref(),
            "--norc".as_ref(),
            "-c".as_ref(),
            command.as_ref(),
        ];
        Ok(self.command(bash.as_os_str(), &args, env))
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
        let mut command = self.command(resolved.as_os_str(), &args, env);
        if let Some(cwd) = cwd {
            command.current_dir(cwd);
        }
        Ok(command)
    }

    /// `git` (found at start by [`super::git`]) with `args`, through the guard, in a new
    /// process group, with nothing of the daemon's environment ([`super::env::git_env`]),
    /// in `cwd`. The caller sets stdio, spawns it and then calls [`ProcessLauncher::track`].
    pub fn git_command(&self, git: &Path, args: &[&str], cwd: &Path) -> tokio::process::Command {
        let args: Vec<&OsStr> = args.iter().map(OsStr::new).collect();
        let mut command = self.command(git.as_os_str(), &args, super::env::git_env());
        command.current_dir(cwd);
        command
    }

    fn command(
        &self,
        program: &OsStr,
        args: &[&OsStr],
        env: Vec<(OsString, OsString)>,
    ) -> tokio::process::Command {
        let mut command = match &self.guard {
            Some(guard) => {
                let mut command = tokio::process::Command::new(guard);
                command
                    .arg0("agentd")
                    .arg(GUARD_ARG)
                    .arg(self.daemon_pid.to_string())
                    .arg(super::child_umask().map_or("-".to_owned(), |m| format!("{m:o}")))
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
        let group = self.track(pid);
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
    pub fn track(&self, pid: u32) -> ProcessGroup {
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
        ProcessGroup { pgid, record }
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
                match killpg(Pid::from_raw(pgid), Signal::SIGKILL) {
                    Ok(()) => {
                        killed += 1;
                        tracing::info!(pgid, "killed a process group the last run left behind");
                    }
                    Err(e) => tracing::debug!(pgid, "cannot kill a left-over group: {e}"),
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
            pgrp: fields.get(2)?.parse().ok()?,
            start_time: fields.get(19)?.parse().ok()?,
        })
    }
}

/// Reads a child's pipe to its end, keeping the first `cap` bytes; returns them and how
/// many there were in all. Read errors end the reading (what came is kept).
pub async fn read_capped(
    mut pipe: impl tokio::io::AsyncRead + Unpin,
    cap: usize,
) -> (Vec<u8>, usize) {
    use tokio::io::AsyncReadExt;
    let mut kept = Vec::new();
    let mut total = 0;
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        match pipe.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                total += n;
                let room = cap.saturating_sub(kept.len());
                kept.extend_from_slice(&chunk[..n.min(room)]);
            }
        }
    }
    (kept, total)
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

/// A process group the daemon started. Dropping it kills whatever is left of the group
/// (SIGKILL) and forgets its record.
#[derive(Debug)]
pub struct ProcessGroup {
    pgid: Pid,
    record: Option<PathBuf>,
}

impl ProcessGroup {
    pub fn id(&self) -> i32 {
        self.pgid.as_raw()
    }

    /// Sends `signal` to the whole group; false when the group is gone.
    pub fn signal(&self, signal: Signal) -> bool {
        self.pgid.as_raw() > 1 && killpg(self.pgid, signal).is_ok()
    }

    /// Whether any process of the group is left.
    pub fn alive(&self) -> bool {
        self.pgid.as_raw() > 1 && killpg(self.pgid, None).is_ok()
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.signal(Signal::SIGKILL);
        if let Some(path) = self.record.take()
            && let Err(e) = std::fs::remove_file(&path)
        {
            tracing::debug!("cannot remove {}: {e}", path.display());
        }
    }
}

/// The child guard's entry: when the process was started as the guard (`agentd
/// __agentd-child-guard DAEMON_PID PROGRAM ARGS...`), runs it and exits; otherwise returns
/// at once. `main` calls this first, before anything else starts.
pub fn run_guard_if_asked() {
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() != Some(OsStr::new(GUARD_ARG)) {
        return;
    }
    let code = guard(args);
    std::process::exit(code);
}

/// The guard (see the module doc). Returns the exit code when it does not end by a signal.
fn guard(mut args: impl Iterator<Item = OsString>) -> i32 {
    let parent = args
        .next()
        .and_then(|p| p.to_str().and_then(|p| p.parse::<i32>().ok()))
        .map(Pid::from_raw);
    // The user's umask for what the child creates ("-": keep the daemon's).
    let umask = args.next().and_then(|m| match m.to_str() {
        Some("-") => Some(None),
        Some(m) => u32::from_str_radix(m, 8).ok().map(Some),
        None => None,
    });
    let (Some(parent), Some(umask), Some(program)) = (parent, umask, args.next()) else {
        eprintln!(
            "agentd: {GUARD_ARG} is internal: agentd {GUARD_ARG} DAEMON_PID UMASK PROGRAM ARGS..."
        );
        return 2;
    };
    if let Some(umask) = umask {
        nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(umask));
    }
    if nix::unistd::getppid() != parent {
        return CANNOT_RUN; // the daemon is gone already: run nothing
    }
    // The program is spawned before the guard blocks its signals: a child inherits the
    // mask (std restores the parent's in the child), and the program must start with
    // none blocked.
    let mut child = match std::process::Command::new(&program).args(args).spawn() {
        Ok(child) => child,
        Err(e) => {
            eprintln!("agentd: cannot run {program:?}: {e}");
            return CANNOT_RUN;
        }
    };
    let mut waited = SigSet::empty();
    for signal in [
        Signal::SIGCHLD,
        PARENT_DEATH_SIGNAL,
        Signal::SIGTERM,
        Signal::SIGINT,
    ] {
        waited.add(signal);
    }
    let armed = waited
        .thread_block()
        .and_then(|()| nix::sys::prctl::set_pdeathsig(PARENT_DEATH_SIGNAL));
    if let Err(e) = armed {
        eprintln!("agentd: the child guard cannot watch the daemon: {e}");
        kill_own_group();
        return CANNOT_RUN;
    }
    // The daemon may have died before the prctl: then no signal will come.
    if nix::unistd::getppid() != parent {
        kill_own_group();
        return CANNOT_RUN;
    }
    loop {
        match child.try_wait() {
            // The program ended. What it left in the group ends with it: the daemon may be
            // dying (its end closes the program's pipes before the kernel reparents the
            // guard, so the guard cannot tell yet), and a tool's call or a server's life is
            // over either way.
            Ok(Some(status)) => {
                kill_rest_of_group();
                return end_like(status, &waited);
            }
            Ok(None) => {}
            Err(e) => {
                eprintln!("agentd: the child guard cannot wait for {program:?}: {e}");
                kill_own_group();
                return CANNOT_RUN;
            }
        }
        match waited.wait() {
            // The program may have ended: the loop looks.
            Ok(Signal::SIGCHLD) => {}
            // The daemon is gone (reparented away from it): take the group down.
            Ok(_) if nix::unistd::getppid() != parent => {
                kill_own_group();
                return CANNOT_RUN;
            }
            // A spawning thread of the daemon ended (the kernel signals that too), or the
            // daemon signalled the group: the program got the same and ends by itself.
            Ok(_) => {}
            Err(e) => {
                eprintln!("agentd: the child guard cannot wait for signals: {e}");
                kill_own_group();
                return CANNOT_RUN;
            }
        }
    }
}

/// SIGKILL to every other process of the guard's group (found through /proc).
fn kill_rest_of_group() {
    let me = nix::unistd::getpid().as_raw();
    let group = nix::unistd::getpgrp().as_raw();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return;
    };
    for pid in entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| pid != me)
    {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // After the command name (which may hold spaces): state ppid pgrp ...
        let pgrp = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(2))
            .and_then(|p| p.parse::<i32>().ok());
        if pgrp == Some(group) {
            let _ = nix::sys::signal::kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
    }
}

/// SIGKILL to the guard's own group (the guard included).
fn kill_own_group() {
    let _ = killpg(nix::unistd::getpgrp(), Signal::SIGKILL);
}

/// Ends the guard as the program ended: its exit code, or the same signal.
fn end_like(status: std::process::ExitStatus, blocked: &SigSet) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    if let Some(code) = status.code() {
        return code;
    }
    let Some(number) = status.signal() else {
        return CANNOT_RUN;
    };
    if let Ok(signal) = Signal::try_from(number) {
        let _ = blocked.thread_unblock();
        let _ = nix::sys::signal::raise(signal);
    }
    // A signal whose default is not to end the process: say so in the usual shell way.
    128 + number
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;

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

    #[test]
    fn leftover_records_that_are_not_ours_are_forgotten_and_nothing_is_killed() {
        let dir = tempfile::tempdir().unwrap();
        let launcher = ProcessLauncher {
            records: Some(dir.path().to_owned()),
            ..ProcessLauncher::for_tests()
        };
        let mut sleeper = std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
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
        let dir = tempfile::tempdir().unwrap();
        let launcher = ProcessLauncher {
            records: Some(dir.path().to_owned()),
            ..ProcessLauncher::for_tests()
        };
        let mut sleeper = std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        let group = launcher.track(sleeper.id());
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
