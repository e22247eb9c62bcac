//! The child guard: the process every child of the daemon runs under (see the module doc
//! of `process` for why it stays and how it survives tokio's threads).
//!
//! The daemon starts `agentd __agentd-child-guard DAEMON_PID UMASK SPEC PROGRAM ARGS...`
//! in a process group of its own (the guard's). The guard
//! - makes itself the *subreaper* of everything it starts, so a descendant that leaves its
//!   process group or session (`setsid sleep 600 &`) and is orphaned comes back to the
//!   guard, not to init: every descendant stays findable through its parents;
//! - spawns the program in its own group, confined when SPEC is not `-` (through the
//!   sandbox launcher, `confine.rs`; the guard itself stays outside the sandbox, so a
//!   confined command can neither signal nor trace it, not even through the group);
//! - on SIGUSR1 ([`END_ALL`]), when the program has ended, and when the daemon is gone
//!   (parent-death signal, pid check), SIGKILLs every descendant it has, whatever its
//!   group or session, until none is left; then ends as the program ended.
//!
//! So a polite stop is SIGTERM to the group (the program gets it, the guard passes it on to
//! the descendants that left the group, and waits), and
//! "nothing of this call may live on" is [`END_ALL`] to the guard: a SIGKILL to the group
//! would end the guard before it could reach what left the group.

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};

use nix::sys::signal::{SigSet, Signal, kill};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;

use super::confine::SANDBOX_ARG;
use super::{CANNOT_RUN, GUARD_ARG, SELF_EXE};

/// The signal that makes the guard kill everything it guards at once.
pub(super) const END_ALL: Signal = Signal::SIGUSR1;

/// The signal the guard asks for when its parent dies.
const PARENT_DEATH_SIGNAL: Signal = Signal::SIGHUP;

/// Rounds of "find the descendants, kill them" before the guard gives up on stragglers
/// (a descendant forking as fast as it is killed is caught in the next round).
const MAX_KILL_ROUNDS: usize = 200;

/// The child guard's entry: when the process was started as the guard, runs it and exits;
/// otherwise returns at once. `main` calls this first, before anything else starts.
pub fn run_guard_if_asked() {
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() != Some(OsStr::new(GUARD_ARG)) {
        return;
    }
    let code = guard(args);
    std::process::exit(code);
}

/// What the daemon tells the guard on its command line.
struct GuardArgs {
    /// The daemon: the guard's parent, watched.
    parent: Pid,
    /// The user's umask for what the child creates (`None`: keep the daemon's).
    umask: Option<u32>,
    /// The confinement, passed on to the sandbox launcher as it is (`-`: none).
    spec: OsString,
    program: OsString,
    args: Vec<OsString>,
}

impl GuardArgs {
    /// `DAEMON_PID UMASK SPEC PROGRAM ARGS...`; `None` when one is missing or malformed.
    fn parse(mut args: impl Iterator<Item = OsString>) -> Option<GuardArgs> {
        let parent = args
            .next()
            .and_then(|p| p.to_str().and_then(|p| p.parse::<i32>().ok()))
            .map(Pid::from_raw)?;
        let umask = match args.next()?.to_str()? {
            "-" => None,
            m => Some(u32::from_str_radix(m, 8).ok()?),
        };
        let spec = args.next().filter(|s| !s.is_empty())?;
        let program = args.next()?;
        Some(GuardArgs {
            parent,
            umask,
            spec,
            program,
            args: args.collect(),
        })
    }

    /// Whether the daemon that started the guard is still its parent.
    fn daemon_alive(&self) -> bool {
        nix::unistd::getppid() == self.parent
    }
}

/// The guard, by phase: read its arguments, become the subreaper, start the program
/// (confined when asked), arm the signals it waits for, then watch until the program
/// ends or the daemon goes. Returns the exit code when it does not end by a signal.
fn guard(args: impl Iterator<Item = OsString>) -> i32 {
    let Some(args) = GuardArgs::parse(args) else {
        eprintln!(
            "agentd: {GUARD_ARG} is internal: agentd {GUARD_ARG} DAEMON_PID UMASK SPEC PROGRAM \
             ARGS..."
        );
        return 2;
    };
    if let Some(umask) = args.umask {
        nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(umask));
    }
    if !args.daemon_alive() {
        return CANNOT_RUN; // the daemon is gone already: run nothing
    }
    if let Err(e) = nix::sys::prctl::set_child_subreaper(true) {
        eprintln!("agentd: the child guard cannot become a subreaper: {e}");
        return CANNOT_RUN;
    }
    // The signals are blocked before the program starts: an END_ALL arriving while the
    // guard starts it waits, pending, for the watch (unblocked, its default action would
    // end the guard and leave the program running, unguarded). The program does not
    // inherit the mask: std empties it in the child before the exec (a test checks). It
    // stays in the guard's group: a SIGKILL to the group still takes the program when
    // nothing else can.
    let waited = match arm_signals() {
        Ok(waited) => waited,
        Err(e) => {
            eprintln!("agentd: the child guard cannot watch the daemon: {e}");
            return CANNOT_RUN;
        }
    };
    // The daemon may have died before the prctl: then no signal will come.
    if !args.daemon_alive() {
        return CANNOT_RUN;
    }
    let child = match program_command(&args).spawn() {
        Ok(child) => child,
        Err(e) => {
            eprintln!("agentd: cannot run {:?}: {e}", args.program);
            return CANNOT_RUN;
        }
    };
    let Ok(program_pid) = i32::try_from(child.id()).map(Pid::from_raw) else {
        kill_descendants(&mut Reaper::default());
        return CANNOT_RUN;
    };
    let mut reaper = Reaper {
        program: Some(program_pid),
        ended: None,
    };
    // The guard reaps with waitpid, not through `child` (it reaps orphans too).
    drop(child);
    watch(&args, &mut reaper, &waited)
}

/// The program's command: itself, or the sandbox launcher running it confined (the
/// guard stays outside the sandbox).
fn program_command(args: &GuardArgs) -> std::process::Command {
    use std::os::unix::process::CommandExt;
    let mut command = if args.spec == "-" {
        std::process::Command::new(&args.program)
    } else {
        let mut launcher = std::process::Command::new(SELF_EXE);
        launcher
            .arg0("agentd")
            .arg(SANDBOX_ARG)
            .arg(&args.spec)
            .arg(&args.program);
        launcher
    };
    command.args(&args.args);
    command
}

/// Blocks the signals the guard waits for and asks for one when the daemon dies.
fn arm_signals() -> nix::Result<SigSet> {
    let mut waited = SigSet::empty();
    for signal in [
        Signal::SIGCHLD,
        PARENT_DEATH_SIGNAL,
        Signal::SIGTERM,
        Signal::SIGINT,
        END_ALL,
    ] {
        waited.add(signal);
    }
    waited.thread_block()?;
    nix::sys::prctl::set_pdeathsig(PARENT_DEATH_SIGNAL)?;
    Ok(waited)
}

/// The guard's watch: reaps, passes a polite stop on to the strays, kills everything on
/// [`END_ALL`], and ends when the program has (taking what it left behind) or the daemon
/// is gone (taking everything).
fn watch(args: &GuardArgs, reaper: &mut Reaper, waited: &SigSet) -> i32 {
    loop {
        // The program ended. What it left behind ends with it: the daemon may be dying
        // (its end closes the program's pipes before the kernel reparents the guard, so
        // the guard cannot tell yet), and a tool's call or a server's life is over either
        // way.
        reaper.reap();
        if let Some(status) = reaper.ended {
            kill_descendants(reaper);
            return end_like(status, waited);
        }
        match waited.wait() {
            // The program may have ended: the loop looks.
            Ok(Signal::SIGCHLD) => {}
            Ok(signal) if signal == END_ALL => kill_descendants(reaper),
            // A polite stop from the daemon to the group: what left the group gets it too.
            Ok(signal @ (Signal::SIGTERM | Signal::SIGINT)) if args.daemon_alive() => {
                signal_strays(signal);
            }
            // The daemon is gone (reparented away from it): take everything down.
            Ok(_) if !args.daemon_alive() => {
                kill_descendants(reaper);
                return CANNOT_RUN;
            }
            // A spawning thread of the daemon ended (the kernel signals that too), or the
            // daemon signalled the group: the program got the same and ends by itself.
            Ok(_) => {}
            Err(e) => {
                eprintln!("agentd: the child guard cannot wait for signals: {e}");
                kill_descendants(reaper);
                return CANNOT_RUN;
            }
        }
    }
}

/// Reaps the guard's children: the program and the orphans it inherits.
#[derive(Debug, Default)]
struct Reaper {
    program: Option<Pid>,
    /// How the program ended, once it has.
    ended: Option<WaitStatus>,
}

impl Reaper {
    /// Reaps every child that has ended, keeping the program's status.
    fn reap(&mut self) {
        loop {
            match waitpid(None::<Pid>, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::StillAlive) => return,
                Ok(status @ (WaitStatus::Exited(..) | WaitStatus::Signaled(..)))
                    if status.pid() == self.program =>
                {
                    self.ended = Some(status);
                }
                Ok(_) | Err(nix::errno::Errno::EINTR) => {}
                // ECHILD: no child left.
                Err(_) => return,
            }
        }
    }
}

/// SIGKILLs every descendant of the guard, whatever its group or session, round after
/// round until none is left alive (orphans of killed ones come back to the guard, the
/// subreaper, and are found in the next round), reaping what died.
fn kill_descendants(reaper: &mut Reaper) {
    let me = nix::unistd::getpid().as_raw();
    for _ in 0..MAX_KILL_ROUNDS {
        let alive = descendants(me, &processes());
        if alive.is_empty() {
            return;
        }
        for pid in alive {
            let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
        }
        reaper.reap();
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// Sends `signal` to the guard's descendants that left its process group (the group got
/// it already; a second one might mean "hurry" to a program).
fn signal_strays(signal: Signal) {
    let me = nix::unistd::getpid().as_raw();
    let group = nix::unistd::getpgrp().as_raw();
    let procs = processes();
    for pid in descendants(me, &procs) {
        if procs.iter().any(|p| p.pid == pid && p.pgrp != group) {
            let _ = kill(Pid::from_raw(pid), signal);
        }
    }
}

/// One process as `/proc/PID/stat` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Proc {
    pub pid: i32,
    pub ppid: i32,
    pub pgrp: i32,
    pub zombie: bool,
}

/// Every process of the system, from `/proc`.
fn processes() -> Vec<Proc> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            parse_stat(pid, &stat)
        })
        .collect()
}

/// The state and parent of a `/proc/PID/stat` line (the command name may hold spaces and
/// parentheses: the fields start after the last `)`).
pub(crate) fn parse_stat(pid: i32, stat: &str) -> Option<Proc> {
    let mut fields = stat.rsplit_once(')')?.1.split_whitespace();
    let state = fields.next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some(Proc {
        pid,
        ppid,
        pgrp,
        zombie: state == "Z" || state == "X",
    })
}

/// The live (not zombie) descendants of `root` among `procs`.
pub(crate) fn descendants(root: i32, procs: &[Proc]) -> Vec<i32> {
    let mut children: HashMap<i32, Vec<&Proc>> = HashMap::new();
    for p in procs {
        children.entry(p.ppid).or_default().push(p);
    }
    let mut found = Vec::new();
    let mut stack = vec![root];
    let mut seen = std::collections::HashSet::new();
    while let Some(pid) = stack.pop() {
        for child in children.get(&pid).into_iter().flatten() {
            if child.pid == root || !seen.insert(child.pid) {
                continue;
            }
            if !child.zombie {
                found.push(child.pid);
            }
            stack.push(child.pid);
        }
    }
    found
}

/// Ends the guard as the program ended: its exit code, or the same signal.
fn end_like(status: WaitStatus, blocked: &SigSet) -> i32 {
    match status {
        WaitStatus::Exited(_, code) => code,
        WaitStatus::Signaled(_, signal, _) => {
            let _ = blocked.thread_unblock();
            let _ = nix::sys::signal::raise(signal);
            // A signal whose default is not to end the process: say so the shell's way.
            128 + signal as i32
        }
        _ => CANNOT_RUN,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_are_read_after_the_last_parenthesis() {
        assert_eq!(
            parse_stat(7, "7 (a) b (c)) S 3 7 7 0"),
            Some(Proc {
                pid: 7,
                ppid: 3,
                pgrp: 7,
                zombie: false
            })
        );
        assert_eq!(parse_stat(8, "8 (x) Z 1 8 8").map(|p| p.zombie), Some(true));
        assert_eq!(parse_stat(9, "garbage"), None);
    }

    #[test]
    fn descendants_are_found_through_parents_and_zombies_are_left_out() {
        let p = |pid, ppid, zombie| Proc {
            pid,
            ppid,
            pgrp: 0,
            zombie,
        };
        let procs = [
            p(1, 0, false),
            p(10, 1, false), // the guard
            p(11, 10, false),
            p(12, 11, false),
            p(13, 12, true),
            p(14, 13, false), // below a zombie (not possible, but not lost either)
            p(20, 1, false),  // not ours
            p(21, 10, false), // an orphan the guard inherited
        ];
        let mut found = descendants(10, &procs);
        found.sort_unstable();
        assert_eq!(found, [11, 12, 14, 21]);
        assert!(descendants(99, &procs).is_empty());
    }

    #[test]
    fn this_process_sees_its_own_children() {
        let mut sleeper = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let me = i32::try_from(std::process::id()).unwrap();
        let child = i32::try_from(sleeper.id()).unwrap();
        assert!(descendants(me, &processes()).contains(&child));
        sleeper.kill().unwrap();
        sleeper.wait().unwrap();
    }
}
