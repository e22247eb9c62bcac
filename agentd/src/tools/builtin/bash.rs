//! `bash`: runs a command with `bash --noprofile --norc -c` (bash found at start, never
//! `sh`) in the workspace, in the OS sandbox of the agent's mode (`tools::wall`: writes in
//! the workspace and the agent's temp folder, no network unless granted), under a guard
//! that kills everything it started on a timeout or a cancel (SIGTERM, then SIGKILL after
//! 2 s), also what left its process group. Background processes do not outlive the call
//! either, nor the daemon (`tools::process` starts the command, with the environment
//! `tools::env` allows: no provider keys, no bash start-up hooks). The model may ask for
//! the network (`network`) or to run outside the sandbox (`outsideSandbox` with a
//! `reason`); the policy decides what that asks.

use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use crate::process::{Confinement, PIPES_AFTER_KILL, read_capped_with};
use agent_proto::PermissionLevel;
use futures::future::BoxFuture;
use nix::sys::signal::Signal;
use schemars::JsonSchema;
use serde::Deserialize;

use super::args::TypedTool;
use crate::tools::sandbox::{Sandbox, Zone};
use crate::tools::wall::WallState;
use crate::tools::{Access, CommandAccess, ToolContext, ToolOutput, command};

mod live;

const DEFAULT_TIMEOUT_MS: u64 = 120_000;
const MAX_TIMEOUT_MS: u64 = 600_000;
/// Bytes kept per stream.
const STREAM_CAP: usize = 1024 * 1024;
/// How long the pipes may stay open after the shell exited (background children).
const PIPE_GRACE: Duration = Duration::from_secs(1);
/// Between SIGTERM and SIGKILL.
const KILL_GRACE: Duration = Duration::from_secs(2);

#[derive(Debug)]
pub struct Bash;

/// `bash`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct BashArgs {
    /// The command line to run.
    command: String,
    /// Milliseconds before the command is killed (default 120000).
    #[schemars(range(min = 1, max = MAX_TIMEOUT_MS))]
    timeout: Option<u64>,
    /// The command needs the network (asks the user unless allowed).
    #[serde(default)]
    network: bool,
    /// Run outside the sandbox, with the user's full rights. Always asks the user; give a
    /// `reason`.
    #[serde(default)]
    outside_sandbox: bool,
    /// Why the command must run outside the sandbox (shown to the user).
    reason: Option<String>,
}

impl TypedTool for Bash {
    type Args = BashArgs;

    fn name(&self) -> &'static str {
        "bash"
    }

    fn description(&self) -> &'static str {
        "Run a command with bash (bash -c, non-interactive) in the workspace. Returns stdout, \
         stderr and the exit code. Each stream is kept up to 1 MiB. The command is killed \
         after `timeout` ms (default 120000, at most 600000), with everything it started. \
         It runs in a sandbox: it can write only in the workspace and $TMPDIR, and has no \
         network. Set `network: true` when it needs the network (downloads, git fetch); \
         only when it truly needs to write elsewhere, set `outsideSandbox: true` with a \
         `reason` (the user is always asked)."
    }

    fn runs_commands(&self) -> bool {
        true
    }

    fn level(&self) -> PermissionLevel {
        PermissionLevel::Execute
    }

    fn default_timeout(&self) -> Duration {
        // The tool enforces the call's own timeout; this is only a backstop.
        Duration::from_millis(MAX_TIMEOUT_MS) + Duration::from_secs(10)
    }

    fn access(&self, args: &BashArgs, ctx: &ToolContext) -> Result<Access, String> {
        if args.command.trim().is_empty() {
            return Err("the command is empty".into());
        }
        let outside_sandbox = match (args.outside_sandbox, args.reason.as_deref()) {
            (false, _) => None,
            (true, Some(reason)) if !reason.trim().is_empty() => Some(reason.trim().to_owned()),
            (true, _) => {
                return Err(
                    "outsideSandbox needs a `reason` the user can judge: say why the command \
                     cannot run in the sandbox"
                        .into(),
                );
            }
        };
        Ok(Access::Command(CommandAccess {
            analysis: analyze_in(&args.command, &ctx.sandbox),
            network_requested: args.network,
            outside_sandbox,
            wall: ctx.wall.state(),
        }))
    }

    fn run<'a>(&'a self, args: BashArgs, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let timeout_ms = args
                .timeout
                .unwrap_or(DEFAULT_TIMEOUT_MS)
                .clamp(1, MAX_TIMEOUT_MS);
            run_command(&args.command, Duration::from_millis(timeout_ms), ctx).await
        })
    }
}

/// How the permission policy sees `command` run in `sandbox`'s workspace: redirections may
/// write only inside it, and read inside it or in the agent's own folder (never elsewhere
/// in the data dir).
pub fn analyze_in(command: &str, sandbox: &Sandbox) -> command::CommandAnalysis {
    let check = |target: &str, usage: command::TargetUse| {
        let (verb, reads) = match usage {
            command::TargetUse::Read => ("reads", true),
            command::TargetUse::Write => ("writes", false),
        };
        match sandbox.resolve(target) {
            Ok(resolved) if resolved.zone == Zone::Workspace => None,
            Ok(resolved) if reads && resolved.zone == Zone::OwnOffloads => None,
            Ok(resolved) => Some(format!(
                "{verb} outside the workspace ({})",
                resolved.path.display()
            )),
            Err(e) => Some(format!(
                "{verb} a path that does not resolve ({target}: {e})"
            )),
        }
    };
    command::analyze(command, &check)
}

/// How the command ended.
enum End {
    Exited(ExitStatus),
    TimedOut,
    Cancelled,
}

/// How a command of this call is confined: `Ok(None)` unconfined (mode `off`, or a
/// client approved running it outside), `Err` when it may not run at all (the sandbox is
/// missing and nobody approved running without it).
fn confinement_of(ctx: &ToolContext) -> Result<Option<Confinement>, String> {
    match ctx.wall.state() {
        WallState::Off => Ok(None),
        _ if ctx.checked.outside_sandbox => Ok(None),
        WallState::Unavailable(why) => Err(format!(
            "the OS sandbox is not available ({why}) and running this command without it was \
             not approved; nothing was run"
        )),
        WallState::Enforced(mode) => Ok(Some(ctx.wall.confinement(
            &ctx.sandbox,
            mode,
            ctx.checked.network,
        ))),
    }
}

/// Runs `command` (see [`run_watched`]), its output shown live as `toolProgress` events
/// when the call has somewhere to report progress (`live`).
async fn run_command(command: &str, timeout: Duration, ctx: &ToolContext) -> ToolOutput {
    let Some(sink) = ctx.progress.clone() else {
        return run_watched(command, timeout, ctx, None).await;
    };
    let shown = std::sync::Arc::new(live::Live::default());
    let run = async {
        let output = run_watched(command, timeout, ctx, Some(shown.clone())).await;
        shown.end();
        output
    };
    let (output, ()) = tokio::join!(run, live::pump(&shown, sink));
    output
}

/// Runs `command` under bash in the workspace, confined unless the wall is off or the call
/// was let out: spawned into a tracked group, its output read while it runs (and handed
/// to `live` as it comes), ended by its timeout or a cancel (SIGTERM, then the group
/// killed), and whatever it left behind killed before the result is made.
async fn run_watched(
    command: &str,
    timeout: Duration,
    ctx: &ToolContext,
    live: Option<std::sync::Arc<live::Live>>,
) -> ToolOutput {
    let confinement = match confinement_of(ctx) {
        Ok(c) => c,
        Err(e) => return ToolOutput::error(e),
    };
    let tmpdir = match ctx.wall.make_tmpdir() {
        Ok(dir) => dir,
        Err(e) => {
            return ToolOutput::error(format!(
                "cannot make the temp folder {}: {e}",
                ctx.wall.tmpdir.display()
            ));
        }
    };
    let mut bash = match ctx
        .processes
        .bash_command(command, Some(tmpdir), confinement.as_ref())
    {
        Ok(bash) => bash,
        Err(e) => return ToolOutput::error(e),
    };
    let mut child = match bash
        .current_dir(ctx.sandbox.workspace())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
    {
        Ok(child) => child,
        Err(e) => return ToolOutput::error(format!("cannot start bash: {e}")),
    };
    let Some(pid) = child.id() else {
        return ToolOutput::error("bash exited before it could be watched");
    };
    // From here on, however this function ends (even dropped mid-await), everything the
    // command started dies.
    let group = ctx.processes.track(pid, confinement.is_some());
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return ToolOutput::error("cannot capture the command's output");
    };
    // The readers must run while we wait, or a full pipe would block the command.
    let (out_reader, err_reader) = spawn_readers(stdout, stderr, live);

    let end = tokio::select! {
        status = child.wait() => match status {
            Ok(status) => End::Exited(status),
            Err(e) => return ToolOutput::error(format!("cannot wait for the command: {e}")),
        },
        _ = tokio::time::sleep(timeout) => End::TimedOut,
        _ = ctx.cancel.cancelled() => End::Cancelled,
    };
    if !matches!(end, End::Exited(_)) {
        group.signal(Signal::SIGTERM);
        if tokio::time::timeout(KILL_GRACE, child.wait())
            .await
            .is_err()
        {
            tracing::debug!(pid, "the command ignored SIGTERM; killing its group");
        }
    }
    let grace = if matches!(end, End::Exited(_)) {
        PIPE_GRACE
    } else {
        Duration::ZERO
    };
    let (out, err) = collect_output(out_reader, err_reader, grace, &group, pid).await;
    // Whatever is left of the group does not outlive the call.
    group.signal(Signal::SIGKILL);
    let _ = child.wait().await;
    drop(group);
    let text = output_text(out, err);
    // A part of the command the sandbox stopped (the line as a whole may still succeed).
    let hint = confinement
        .as_ref()
        .and_then(|c| sandbox_hint(&text, c, ctx));
    let mut output = finish(text, end, timeout);
    if let Some(hint) = hint {
        output.content.push_str(&hint);
    }
    output
}

/// A task reading one pipe: what it kept, and how many bytes there were in all.
type Reader = tokio::task::JoinHandle<(Vec<u8>, usize)>;

/// Tasks that read the command's pipes while it runs (or a full pipe would block it),
/// each keeping up to [`STREAM_CAP`] for the result and handing every chunk to `live`.
fn spawn_readers(
    stdout: tokio::process::ChildStdout,
    stderr: tokio::process::ChildStderr,
    live: Option<std::sync::Arc<live::Live>>,
) -> (Reader, Reader) {
    let tee = |stream| {
        let live = live.clone();
        move |chunk: &[u8]| {
            if let Some(live) = &live {
                live.push(stream, chunk);
            }
        }
    };
    let out = tee(agent_proto::OutputStream::Stdout);
    let err = tee(agent_proto::OutputStream::Stderr);
    (
        tokio::spawn(read_capped_with(stdout, STREAM_CAP, out)),
        tokio::spawn(read_capped_with(stderr, STREAM_CAP, err)),
    )
}

/// What the command wrote, once it ended: its pipes get `grace` to close (a background
/// child may hold them), then its group is killed and they get [`PIPES_AFTER_KILL`];
/// what is still open then (only something that escaped the group) is dropped.
async fn collect_output(
    out_reader: tokio::task::JoinHandle<(Vec<u8>, usize)>,
    err_reader: tokio::task::JoinHandle<(Vec<u8>, usize)>,
    grace: Duration,
    group: &crate::process::ProcessGroup,
    pid: u32,
) -> ((Vec<u8>, usize), (Vec<u8>, usize)) {
    let (out_abort, err_abort) = (out_reader.abort_handle(), err_reader.abort_handle());
    let readers = async { (out_reader.await, err_reader.await) };
    tokio::pin!(readers);
    let (out, err) = match tokio::time::timeout(grace, &mut readers).await {
        Ok(done) => done,
        Err(_) => {
            // Something still holds the pipes: a background child. It goes with the group.
            group.signal(Signal::SIGKILL);
            match tokio::time::timeout(PIPES_AFTER_KILL, &mut readers).await {
                Ok(done) => done,
                Err(_) => {
                    tracing::warn!(
                        pid,
                        "the command's pipes are still open after its group was killed: \
                         something outside the group holds them; its output is dropped"
                    );
                    out_abort.abort();
                    err_abort.abort();
                    readers.await
                }
            }
        }
    };
    (out.unwrap_or_default(), err.unwrap_or_default())
}

/// What the model reads of a command's output: its stdout, then its stderr under a
/// `[stderr]` line, each with how much was cut (each stream is read up to a cap; the
/// second number is how many bytes it had in all), ending with a newline.
fn output_text((out, out_total): (Vec<u8>, usize), (err, err_total): (Vec<u8>, usize)) -> String {
    let mut text = String::from_utf8_lossy(&out).into_owned();
    if out_total > out.len() {
        text.push_str(&format!(
            "\n[stdout cut at 1 MiB: {out_total} bytes in all]"
        ));
    }
    if !err.is_empty() {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str("[stderr]\n");
        text.push_str(&String::from_utf8_lossy(&err));
        if err_total > err.len() {
            text.push_str(&format!(
                "\n[stderr cut at 1 MiB: {err_total} bytes in all]"
            ));
        }
    }
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text
}

/// The result of a command that ended as `end`, its output being `text`.
fn finish(mut text: String, end: End, timeout: Duration) -> ToolOutput {
    match end {
        End::Exited(status) => match (
            status.code(),
            std::os::unix::process::ExitStatusExt::signal(&status),
        ) {
            (Some(0), _) => {
                text.push_str("exit code: 0");
                ToolOutput::ok(text)
            }
            (Some(code), _) => {
                text.push_str(&format!("exit code: {code}"));
                ToolOutput::error(text)
            }
            (None, Some(signal)) => {
                text.push_str(&format!("killed by signal {signal}"));
                ToolOutput::error(text)
            }
            (None, None) => {
                text.push_str("exit status unknown");
                ToolOutput::error(text)
            }
        },
        End::TimedOut => {
            text.push_str(&format!(
                "timed out after {} ms: the command and everything it started were killed",
                timeout.as_millis()
            ));
            ToolOutput::error(text)
        }
        End::Cancelled => {
            text.push_str("cancelled: the command and everything it started were killed");
            ToolOutput::error(text)
        }
    }
}

/// What errors of a command the sandbox stopped look like.
const DENIED_MARKS: &[&str] = &[
    "Permission denied",
    "Read-only file system",
    "Operation not permitted",
];
const OFFLINE_MARKS: &[&str] = &[
    "Could not resolve",
    "Temporary failure in name resolution",
    "Name or service not known",
    "Network is unreachable",
    "No address associated",
    "Failed to connect",
    "Connection refused",
    "getaddrinfo",
];

/// When a confined command failed with what looks like the sandbox's refusal, the way out
/// for the model: ask for the network, or to run outside (the user decides).
fn sandbox_hint(output: &str, confinement: &Confinement, ctx: &ToolContext) -> Option<String> {
    let denied = DENIED_MARKS.iter().any(|m| output.contains(m));
    let offline = !confinement.network && OFFLINE_MARKS.iter().any(|m| output.contains(m));
    if !denied && !offline {
        return None;
    }
    let network = if confinement.network {
        "It has the network."
    } else {
        "It has no network: if it needs it, run it again with `network: true` (the user may \
         be asked)."
    };
    let writable: Vec<String> = confinement
        .writable
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    Some(format!(
        "\n[sandbox] The command ran in the OS sandbox (mode {}): it may write only in {} \
         and it cannot read agentd's data folder. {network} If it failed because it must \
         write or read elsewhere, run it again with `outsideSandbox: true` and a `reason`; \
         the user is asked every time.",
        ctx.wall.mode.as_str(),
        writable.join(", "),
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::BuiltinTool;
    use crate::tools::builtin::testing::world;

    async fn bash(ctx: &ToolContext, command: &str, timeout: Option<u64>) -> ToolOutput {
        let mut args = json!({"command": command});
        if let Some(t) = timeout {
            args["timeout"] = json!(t);
        }
        BuiltinTool::run(&Bash, args, ctx).await
    }

    /// Whether any live (not zombie) process is in the group, after giving a killed group
    /// a moment to die.
    fn group_alive(pgid: i32) -> bool {
        for _ in 0..100 {
            if !running_in_group(pgid) {
                return false;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        true
    }

    /// Scans /proc for a process of the group that is not a zombie.
    fn running_in_group(pgid: i32) -> bool {
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return false;
        };
        dir.flatten().any(|entry| {
            let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
                return false;
            };
            // pid (comm) state ppid pgrp ...: comm may contain spaces, so split after ')'.
            let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
                return false;
            };
            let fields: Vec<&str> = rest.split_whitespace().collect();
            fields.len() > 2 && fields[0] != "Z" && fields[2] == pgid.to_string()
        })
    }

    #[tokio::test]
    async fn output_stderr_and_exit_codes() {
        let w = world();
        let cases: &[(&str, bool, &str)] = &[
            ("echo hello", false, "hello\nexit code: 0"),
            (
                "echo out; echo err >&2; exit 3",
                true,
                "out\n[stderr]\nerr\nexit code: 3",
            ),
            ("pwd", false, &format!("{}\nexit code: 0", w.ws.display())),
            ("printf 'no newline'", false, "no newline\nexit code: 0"),
            ("kill -9 $$", true, "killed by signal 9"),
        ];
        for (command, is_error, expected) in cases {
            let out = bash(&w.ctx, command, None).await;
            assert_eq!(out.is_error, *is_error, "{command}: {}", out.content);
            assert_eq!(out.content, *expected, "{command}");
        }
    }

    #[tokio::test]
    async fn commands_run_in_non_interactive_bash_without_start_up_files() {
        let w = world();
        // `[[`, `$BASH_VERSION` and `shopt` exist in bash only; `$-` has no `i`.
        let out = bash(
            &w.ctx,
            "[[ -n $BASH_VERSION ]] && echo bash; [[ $- == *i* ]] || echo non-interactive; \
             shopt -q login_shell || echo no-login; echo \"$0\"",
            None,
        )
        .await;
        let shell = w.ctx.processes.bash().unwrap().display().to_string();
        assert_eq!(
            out.content,
            format!("bash\nnon-interactive\nno-login\n{shell}\nexit code: 0")
        );
        assert!(
            shell.starts_with('/') && shell.ends_with("/bash"),
            "{shell}"
        );
    }

    #[tokio::test]
    async fn large_output_is_cut() {
        let w = world();
        let out = bash(&w.ctx, "head -c 2000000 /dev/zero | tr '\\0' x", None).await;
        assert!(
            out.content
                .contains("[stdout cut at 1 MiB: 2000000 bytes in all]")
        );
        assert!(out.content.len() < STREAM_CAP + 200);
    }

    /// `call`'s output, failing if it takes as long as the 30 s sleeps of these tests: a
    /// call that waited for them did not end the way it should (a hang guard, not a speed
    /// check; the figures are the bench's).
    async fn within_the_sleeps<T>(call: impl std::future::Future<Output = T>) -> T {
        tokio::time::timeout(Duration::from_secs(25), call)
            .await
            .expect("the call waited for the 30 s sleeps")
    }

    #[tokio::test]
    async fn timeout_kills_the_whole_group() {
        let w = world();
        // The sleeps would take 30 s: ending before that is the timeout's doing.
        let out = within_the_sleeps(bash(
            &w.ctx,
            "echo $$ > pid; sleep 30 & sleep 30",
            Some(300),
        ))
        .await;
        assert!(out.is_error);
        assert!(
            out.content.contains("timed out after 300 ms"),
            "{}",
            out.content
        );
        let pid: i32 = std::fs::read_to_string(w.ws.join("pid"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(!group_alive(pid), "no process of the group is left");
    }

    #[tokio::test]
    async fn cancel_kills_the_whole_group() {
        let w = world();
        let cancel = w.ctx.cancel.clone();
        let ctx = w.ctx.clone();
        let run = tokio::spawn(async move { bash(&ctx, "echo $$ > pid; sleep 30", None).await });
        // Wait until the command runs, then cancel.
        while !w.ws.join("pid").exists() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        cancel.cancel();
        let out = within_the_sleeps(run).await.unwrap();
        assert!(out.content.contains("cancelled"), "{}", out.content);
        let pid: i32 = std::fs::read_to_string(w.ws.join("pid"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(!group_alive(pid));
    }

    #[tokio::test]
    async fn background_children_do_not_hold_the_call() {
        let w = world();
        let out =
            within_the_sleeps(bash(&w.ctx, "echo $$ > pid; sleep 30 & echo started", None)).await;
        assert_eq!(out.content, "started\nexit code: 0");
        let pid: i32 = std::fs::read_to_string(w.ws.join("pid"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(!group_alive(pid));
    }

    #[tokio::test]
    async fn a_missing_sandbox_runs_nothing_unless_running_without_it_was_approved() {
        let mut w = world();
        // The agent's mode wants a sandbox; this process (a unit test) cannot give one.
        w.ctx.wall = std::sync::Arc::new(crate::tools::wall::SandboxPlan::unavailable(
            agent_proto::SandboxMode::WorkspaceWrite,
        ))
        .wall(
            agent_proto::SandboxMode::WorkspaceWrite,
            w.ctx.wall.tmpdir.clone(),
        );
        let out = bash(&w.ctx, "touch ran", None).await;
        assert!(out.is_error);
        assert!(out.content.contains("not available"), "{}", out.content);
        assert!(!w.ws.join("ran").exists());
        // A client's answer to a prompt that said it would run outside: it runs.
        w.ctx.checked.outside_sandbox = true;
        let out = bash(&w.ctx, "touch ran", None).await;
        assert!(!out.is_error, "{}", out.content);
        assert!(w.ws.join("ran").exists());
    }

    #[test]
    fn access_is_the_command_checked_against_the_workspace() {
        let w = world();
        let access = |args| BuiltinTool::access(&Bash, &args, &w.ctx);
        let analysis = |command: &str| match access(json!({ "command": command })) {
            Ok(Access::Command(access)) => access.analysis,
            other => panic!("{other:?}"),
        };
        let plain = analysis("ls -la > listing.txt");
        assert_eq!(plain.command, "ls -la > listing.txt");
        assert_eq!(plain.signatures(), ["ls", ">"]);
        assert!(plain.plain(), "{:?}", plain.unclear);
        let outside = analysis("ls -la > ../listing.txt");
        assert!(
            outside
                .unclear
                .iter()
                .any(|r| r.contains("outside the workspace")),
            "{:?}",
            outside.unclear
        );
        assert!(access(json!({"command": "  "})).is_err());
    }
}
