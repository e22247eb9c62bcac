//! Hooks: a team's own commands run at points of a run (`[[hooks]]` in the config, then
//! the agent's `settings.hooks`), each with the event as JSON on stdin, in the agent's
//! workspace, with the environment `bash` commands get, in its own process group, killed on
//! timeout and on cancel.
//!
//! What a hook may do is decided by the loop (`agent_loop/calls.rs`): a `beforeTool` hook
//! runs after the permission check and can only make a call stricter (block it, or rewrite
//! its arguments into a call the policy allows without asking); an `afterTool` hook can
//! append to a result. A hook that fails (cannot start, times out, exits with another
//! code) is logged and changes nothing: the run never depends on it.

use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use agent_proto::{Agent, HookEvent, HookSpec};
use nix::sys::signal::Signal;
use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio_util::sync::CancellationToken;

use crate::process::env::wildcard;
use crate::process::{PIPES_AFTER_KILL, ProcessLauncher, read_after_kill, read_capped};

const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
const MAX_TIMEOUT_SECS: u64 = 600;
/// Output of a hook kept (each stream).
const OUTPUT_CAP: usize = 64 * 1024;

/// Checks a hook (from the config or a client); `Err` names what is wrong.
pub fn validate(spec: &HookSpec) -> Result<(), String> {
    if spec.command.trim().is_empty() {
        return Err("a hook's command is empty".into());
    }
    if spec.timeout_secs == Some(0) || spec.timeout_secs.is_some_and(|t| t > MAX_TIMEOUT_SECS) {
        return Err(format!(
            "a hook's timeout must be between 1 and {MAX_TIMEOUT_SECS} seconds"
        ));
    }
    if spec.matcher.is_some() && !matches!(spec.event, HookEvent::BeforeTool | HookEvent::AfterTool)
    {
        return Err("only beforeTool and afterTool hooks take a matcher".into());
    }
    Ok(())
}

/// Whether `pattern` (`*` any run of characters, `|` alternatives) matches a tool name.
pub fn matches(pattern: &str, name: &str) -> bool {
    pattern
        .split('|')
        .map(str::trim)
        .any(|p| wildcard(p.as_bytes(), name.as_bytes()))
}

/// How a hook ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HookEnd {
    Exited(i32),
    /// Killed by a signal, timed out, or could not start: `Err`'s text says which.
    Failed(String),
    Cancelled,
}

/// A hook's end and what it printed.
#[derive(Debug, Clone)]
pub struct HookRun {
    pub end: HookEnd,
    pub stdout: String,
    pub stderr: String,
}

/// The hooks of the config and how to run them.
#[derive(Debug)]
pub struct Hooks {
    config: Vec<HookSpec>,
    processes: Arc<ProcessLauncher>,
}

impl Hooks {
    pub fn new(config: Vec<HookSpec>, processes: Arc<ProcessLauncher>) -> Hooks {
        Hooks { config, processes }
    }

    /// The hooks for `event` of `agent` (and, for tool events, the tool `tool`), the
    /// config's first.
    pub fn matching<'a>(
        &'a self,
        agent: &'a Agent,
        event: HookEvent,
        tool: Option<&str>,
    ) -> Vec<&'a HookSpec> {
        self.config
            .iter()
            .chain(agent.settings.hooks.iter().flatten())
            .filter(|h| h.event == event)
            .filter(|h| match (&h.matcher, tool) {
                (Some(pattern), Some(tool)) => matches(pattern, tool),
                _ => true,
            })
            .collect()
    }

    /// Runs one hook with `payload` on stdin in `workspace`, until it exits, times out or
    /// `cancel` fires; its whole process group goes when it ends.
    pub async fn run(
        &self,
        spec: &HookSpec,
        payload: &Value,
        workspace: &Path,
        cancel: &CancellationToken,
    ) -> HookRun {
        let failed = |why: String| HookRun {
            end: HookEnd::Failed(why),
            stdout: String::new(),
            stderr: String::new(),
        };
        let mut command = match self.processes.bash_command(&spec.command, None, None) {
            Ok(c) => c,
            Err(e) => return failed(e),
        };
        let spawned = command
            .current_dir(workspace)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn();
        let mut child = match spawned {
            Ok(child) => child,
            Err(e) => return failed(format!("cannot start: {e}")),
        };
        let Some(pid) = child.id() else {
            return failed("exited before it could be watched".into());
        };
        let group = self.processes.track(pid, false);
        let (Some(mut stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return failed("cannot attach to its stdio".into());
        };
        let input = serde_json::to_vec(payload).unwrap_or_default();
        // A hook that does not read its stdin must not block on us, nor we on it.
        let writer = tokio::spawn(async move {
            let _ = stdin.write_all(&input).await;
            let _ = stdin.shutdown().await;
        });
        let out = tokio::spawn(read_capped(stdout, OUTPUT_CAP));
        let err = tokio::spawn(read_capped(stderr, OUTPUT_CAP));
        let timeout = spec
            .timeout_secs
            .map_or(DEFAULT_TIMEOUT, Duration::from_secs);
        let end = tokio::select! {
            status = child.wait() => match status {
                Ok(status) => match status.code() {
                    Some(code) => HookEnd::Exited(code),
                    None => HookEnd::Failed("killed by a signal".into()),
                },
                Err(e) => HookEnd::Failed(format!("cannot wait for it: {e}")),
            },
            _ = tokio::time::sleep(timeout) => {
                HookEnd::Failed(format!("timed out after {} s", timeout.as_secs()))
            }
            _ = cancel.cancelled() => HookEnd::Cancelled,
        };
        // Whatever it left behind goes with the group; then the pipes close.
        group.signal(Signal::SIGKILL);
        let _ = child.wait().await;
        writer.abort();
        let text = |read: (Vec<u8>, usize)| String::from_utf8_lossy(&read.0).into_owned();
        let stdout = text(read_after_kill(out, PIPES_AFTER_KILL).await);
        let stderr = text(read_after_kill(err, PIPES_AFTER_KILL).await);
        HookRun {
            end,
            stdout,
            stderr,
        }
    }

    /// Runs every hook for an informational event (`userMessage`, `runFinished`), one after
    /// the other, logging those that fail.
    pub async fn notify(
        &self,
        agent: &Agent,
        event: HookEvent,
        payload: &Value,
        workspace: &Path,
        cancel: &CancellationToken,
    ) {
        for spec in self.matching(agent, event, None) {
            let run = self.run(spec, payload, workspace, cancel).await;
            log_unless_ok(spec, &run);
        }
    }
}

/// Logs a hook that did not exit 0 (nothing else happens to it).
pub fn log_unless_ok(spec: &HookSpec, run: &HookRun) {
    match &run.end {
        HookEnd::Exited(0) | HookEnd::Cancelled => {}
        HookEnd::Exited(code) => tracing::warn!(
            command = spec.command,
            code,
            stderr = run.stderr.trim(),
            "a hook exited with a code that means nothing here; ignored"
        ),
        HookEnd::Failed(why) => {
            tracing::warn!(command = spec.command, "a hook failed ({why}); ignored");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn matchers() {
        for (pattern, name, expected) in [
            ("bash", "bash", true),
            ("bash", "bash2", false),
            ("*_file", "write_file", true),
            ("*_file", "bash", false),
            ("write_file|edit_file", "edit_file", true),
            ("fs/*", "fs/read", true),
            ("fs/*", "web/fs/read", false),
            ("*", "anything", true),
            ("a*b*c", "aXbYc", true),
            ("a*b*c", "acb", false),
            ("ab*ba", "aba", false),
        ] {
            assert_eq!(matches(pattern, name), expected, "{pattern} {name}");
        }
    }

    #[test]
    fn specs_are_checked() {
        let spec = |event, matcher: Option<&str>, command: &str, timeout| HookSpec {
            event,
            matcher: matcher.map(str::to_owned),
            command: command.into(),
            timeout_secs: timeout,
        };
        assert!(validate(&spec(HookEvent::BeforeTool, Some("bash"), "true", None)).is_ok());
        assert!(validate(&spec(HookEvent::BeforeTool, None, " ", None)).is_err());
        assert!(validate(&spec(HookEvent::AfterTool, None, "x", Some(0))).is_err());
        assert!(validate(&spec(HookEvent::AfterTool, None, "x", Some(601))).is_err());
        assert!(validate(&spec(HookEvent::RunFinished, Some("bash"), "x", None)).is_err());
    }

    /// The `beforeTool` hook of docs/examples/config.toml, uncommented.
    fn example_hook() -> HookSpec {
        let text = include_str!("../../docs/examples/config.toml");
        let block: Vec<&str> = text
            .lines()
            .skip_while(|l| *l != "# [[hooks]]")
            .take_while(|l| l.starts_with('#'))
            .map(|l| l.strip_prefix("# ").unwrap_or(l.trim_start_matches('#')))
            .collect();
        #[derive(serde::Deserialize)]
        struct Example {
            hooks: Vec<crate::config::HookConfig>,
        }
        let example: Example = toml::from_str(&block.join("\n")).unwrap();
        let spec = example.hooks[0].spec();
        validate(&spec).unwrap();
        spec
    }

    /// The example is honest about what a text match catches: it reads the command's words
    /// (a grep of the JSON for "git push" let `git pu''sh` through), and what it still
    /// misses is what its comment says it misses.
    #[tokio::test]
    async fn the_example_hook_blocks_pushes_however_they_are_quoted() {
        let spec = example_hook();
        assert_eq!(
            (spec.event, spec.matcher.as_deref()),
            (HookEvent::BeforeTool, Some("bash"))
        );
        let dir = tempfile::tempdir().unwrap();
        let hooks = Hooks::new(Vec::new(), Arc::new(ProcessLauncher::for_tests()));
        let never = CancellationToken::new();
        // (command, exit code: 2 blocks)
        let cases = [
            ("git push", 2),
            ("git pu''sh", 2),
            ("git  push origin main", 2),
            ("g\\it push", 2),
            ("cd repo && /usr/bin/git push --force", 2),
            ("git push;ls", 2),
            ("echo 'never closed", 2),
            ("git status", 0),
            ("echo push", 0),
            // A tripwire: what only bash works out gets through, as the comment says.
            ("sh -c \"git push\"", 0),
            ("G=git; $G push", 0),
        ];
        for (command, code) in cases {
            let event =
                json!({"event": "beforeTool", "tool": "bash", "arguments": {"command": command}});
            let run = hooks.run(&spec, &event, dir.path(), &never).await;
            assert_eq!(
                run.end,
                HookEnd::Exited(code),
                "{command}: {} (the example hook needs python3)",
                run.stderr
            );
        }
    }

    #[tokio::test]
    async fn a_hook_reads_its_event_and_is_killed_on_timeout_and_cancel() {
        let dir = tempfile::tempdir().unwrap();
        let hooks = Hooks::new(Vec::new(), Arc::new(ProcessLauncher::for_tests()));
        let spec = |command: &str, timeout| HookSpec {
            event: HookEvent::BeforeTool,
            matcher: None,
            command: command.into(),
            timeout_secs: timeout,
        };
        let never = CancellationToken::new();
        let run = hooks
            .run(
                &spec("cat; echo >&2 err; pwd >&2; exit 2", None),
                &json!({"tool": "bash"}),
                dir.path(),
                &never,
            )
            .await;
        assert_eq!(run.end, HookEnd::Exited(2));
        assert_eq!(run.stdout, "{\"tool\":\"bash\"}");
        let cwd = std::fs::canonicalize(dir.path()).unwrap();
        assert_eq!(run.stderr, format!("err\n{}\n", cwd.display()));

        let run = hooks
            .run(&spec("sleep 30", Some(1)), &json!({}), dir.path(), &never)
            .await;
        assert_eq!(run.end, HookEnd::Failed("timed out after 1 s".into()));

        let cancel = CancellationToken::new();
        let stop = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            stop.cancel();
        });
        let run = hooks
            .run(&spec("sleep 30", None), &json!({}), dir.path(), &cancel)
            .await;
        assert_eq!(run.end, HookEnd::Cancelled);
    }
}
