//! Hooks end to end: real commands run by the daemon around tool calls and runs, with the
//! event on stdin. A `beforeTool` hook blocks or rewrites (never loosens) a call, an
//! `afterTool` hook appends to the result, failing hooks change nothing, hooks die with a
//! cancel, and an import never brings hooks along.

use agentd_testkit::send::SendByName;
use std::time::Duration;

use agent_proto::rpc::AgentRpcClient;
use agent_proto::{
    Block, EventKind, ExportFormat, LoopFinishReason, ToolCallBlock, ToolCallStatus,
};
use agentd_testkit::events::finish_reason;
use agentd_testkit::mock_model::Reply;
use agentd_testkit::transcript::tool_result;
use agentd_testkit::wait::eventually;
use serde_json::{Value, json};

use crate::common::{
    ALLOW_ALL, error_of, messages, model_requests, send_and_collect, start_with, tool_agent,
    tool_scenario, ws,
};

fn call(id: &str, tool: &str, args: Value) -> Reply {
    Reply::openai_tool_calls(&[], &[(id, tool, &args.to_string())])
}

fn hook(event: &str, matcher: Option<&str>, command: &str) -> String {
    let matcher = matcher
        .map(|m| format!("matcher = {m:?}\n"))
        .unwrap_or_default();
    format!("[[hooks]]\nevent = {event:?}\n{matcher}command = {command:?}\ntimeout_secs = 20\n")
}

/// Waits until `path` exists and contains every needle; returns its text.
async fn file_with(path: &std::path::Path, needles: &[&str]) -> String {
    let what = format!("{} to contain {needles:?}", path.display());
    eventually(Duration::from_secs(20), &what, async || {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if needles.iter().all(|n| text.contains(n)) {
            Ok(text)
        } else {
            Err(text)
        }
    })
    .await
}

#[tokio::test]
async fn before_tool_hooks_block_rewrite_and_never_loosen() {
    let config = format!(
        "{ALLOW_ALL}\n{}{}{}",
        // Blocks any touch, with its reason on stderr.
        hook(
            "beforeTool",
            Some("bash"),
            "if grep -q '\"touch '; then echo 'touch is not allowed here' >&2; exit 2; fi"
        ),
        // Rewrites `echo original` into `echo rewritten`.
        hook(
            "beforeTool",
            Some("bash"),
            "if grep -q 'echo original'; then echo '{\"arguments\": {\"command\": \"echo rewritten\"}}'; fi"
        ),
        // Tries to point read_file outside the workspace (which would need a prompt).
        hook(
            "beforeTool",
            Some("read_*"),
            "echo '{\"arguments\": {\"path\": \"/etc/hostname\"}}'"
        ),
    );
    let (mock, _daemon, client, agent, _dir) = tool_scenario(&config).await.into_parts();
    std::fs::write(ws(&agent).join("notes.txt"), "mine").unwrap();
    mock.push(Reply::openai_tool_calls(
        &[],
        &[
            (
                "c1",
                "bash",
                &json!({"command": "touch made-by-c1"}).to_string(),
            ),
            (
                "c2",
                "bash",
                &json!({"command": "echo original"}).to_string(),
            ),
            ("c3", "read_file", &json!({"path": "notes.txt"}).to_string()),
        ],
    ));
    mock.push(Reply::openai_text(&["done"]));
    let (sent, events) = send_and_collect(&client, &agent.id, "go").await;
    assert_eq!(finish_reason(&events), LoopFinishReason::Completed);
    assert!(
        !ws(&agent).join("made-by-c1").exists(),
        "the blocked call ran"
    );
    let requests = model_requests(&mock);
    assert_eq!(
        tool_result(&requests[1], "c1"),
        "Error: blocked by a beforeTool hook: touch is not allowed here"
    );
    let rewritten = tool_result(&requests[1], "c2");
    assert!(rewritten.starts_with("rewritten\n"), "{rewritten}");
    let loosened = tool_result(&requests[1], "c3");
    assert!(
        loosened.contains("would need a permission nobody gave"),
        "{loosened}"
    );
    // The stored call shows what ran; the blocked ones are denied.
    let stored = messages(&client, &agent.id).await;
    let answer = stored
        .iter()
        .find(|m| m.id == sent.assistant_message_id)
        .unwrap();
    let calls: Vec<(String, Value, ToolCallStatus)> = answer
        .blocks
        .iter()
        .filter_map(|b| match b {
            Block::ToolCall(ToolCallBlock {
                tool_call_id,
                arguments,
                status,
                ..
            }) => Some((tool_call_id.clone(), arguments.clone(), *status)),
            _ => None,
        })
        .collect();
    assert_eq!(calls[0].2, ToolCallStatus::Denied);
    assert_eq!(calls[1].1, json!({"command": "echo rewritten"}));
    assert_eq!(calls[1].2, ToolCallStatus::Success);
    assert_eq!(calls[2].2, ToolCallStatus::Denied);
}

#[tokio::test]
async fn after_tool_hooks_append_and_failing_hooks_change_nothing() {
    let config = format!(
        "{ALLOW_ALL}\n{}{}{}",
        hook("afterTool", Some("bash"), "echo \"lint: ok\""),
        hook("beforeTool", None, "exit 1"),
        "[[hooks]]\nevent = \"beforeTool\"\ncommand = \"sleep 30\"\ntimeout_secs = 1\n",
    );
    let (mock, _daemon, client, agent, _dir) = tool_scenario(&config).await.into_parts();
    mock.push(call("c1", "bash", json!({"command": "echo hi"})));
    mock.push(Reply::openai_text(&["done"]));
    let (_, events) = send_and_collect(&client, &agent.id, "go").await;
    assert_eq!(finish_reason(&events), LoopFinishReason::Completed);
    let result = tool_result(&model_requests(&mock)[1], "c1");
    assert_eq!(result, "hi\nexit code: 0\n\n[afterTool hook]\nlint: ok");
}

#[tokio::test]
async fn an_agents_own_hooks_see_its_messages_and_runs_and_an_import_drops_them() {
    let (mock, daemon) = start_with(ALLOW_ALL).await;
    let client = daemon.client().await;
    // One write per event (printf is a builtin): the two hooks may run at the same time,
    // and a `cat` then an `echo` of one could interleave with the other's.
    let log = "event=$(cat); printf '%s\\n' \"$event\" >> hooks.log";
    let settings = json!({"hooks": [
        {"event": "userMessage", "command": log},
        {"event": "runFinished", "command": log}
    ]});
    let (agent, _dir) = tool_agent(&client, Some(settings)).await;
    mock.push(Reply::openai_text(&["hello"]));
    send_and_collect(&client, &agent.id, "the first words").await;
    let text = file_with(
        &ws(&agent).join("hooks.log"),
        &["runFinished", "userMessage"],
    )
    .await;
    let events: Vec<Value> = text
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let user = events.iter().find(|e| e["event"] == "userMessage").unwrap();
    assert_eq!(user["text"], "the first words");
    assert_eq!(user["agentId"], agent.id.as_str());
    let run = events.iter().find(|e| e["event"] == "runFinished").unwrap();
    assert_eq!(run["reason"], "completed");

    // A hook a client sends is checked like the config's.
    let e = client
        .update_agent(
            agent.id.clone(),
            None,
            None,
            None,
            None,
            None,
            None,
            Some(json!({"hooks": [{"event": "runFinished", "command": " "}]})),
            None,
        )
        .await
        .unwrap_err();
    assert_eq!(error_of(&e).1, "invalidParams");

    // An export carries them (it is the user's own), an import never runs them.
    let export = client
        .export_agent(agent.id.clone(), ExportFormat::Json)
        .await
        .unwrap();
    let data: Value = serde_json::from_str(&export.content).unwrap();
    let imported = client.import_agent(data, None, None).await.unwrap();
    assert_eq!(imported.settings.hooks, None);
}

#[tokio::test]
async fn a_cancel_kills_a_running_hook() {
    // Unique to this test process: another suite running on the machine has its own.
    let marker = &format!("agentd-e2e-hook-sleep-5521{}", std::process::id());
    let config = format!(
        "{ALLOW_ALL}\n{}",
        hook("beforeTool", None, &format!("sleep 600 # {marker}"))
    );
    let (mock, _daemon, client, agent, _dir) = tool_scenario(&config).await.into_parts();
    mock.push(call("c1", "bash", json!({"command": "echo never"})));
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    client
        .send_plain(agent.id.clone(), "go".into())
        .await
        .unwrap();
    agentd_testkit::procs::wait_running(marker, 1, Duration::from_secs(20), "the hook to run")
        .await;
    client.cancel_loop(agent.id.clone()).await.unwrap();
    let events = agentd_testkit::events::collect_run(&mut sub, Duration::from_secs(30)).await;
    assert_eq!(finish_reason(&events), LoopFinishReason::Cancelled);
    agentd_testkit::procs::wait_gone(marker, Duration::from_secs(20)).await;
    assert!(
        !events.iter().any(|e| matches!(
            &e.kind,
            EventKind::ToolResult {
                status: ToolCallStatus::Success,
                ..
            }
        )),
        "the call ran after its hook was killed"
    );
}

#[tokio::test]
async fn a_bad_hook_in_the_config_stops_the_daemon_naming_it() {
    let mock = agentd_testkit::mock_model::MockModel::start().await;
    let config = agentd_testkit::daemon::openai_config_with(
        &mock.url(),
        "[[hooks]]\nevent = \"runFinished\"\nmatcher = \"bash\"\ncommand = \"true\"\n",
    );
    let failed = agentd_testkit::daemon::TestDaemon::try_start_with(
        crate::common::bin(),
        agentd_testkit::daemon::DaemonOptions {
            config_toml: config,
            env: Vec::new(),
        },
    )
    .await
    .err()
    .expect("the daemon refuses the config");
    assert!(
        failed
            .log
            .contains("hooks[0]: only beforeTool and afterTool hooks take a matcher"),
        "{}",
        failed.log
    );
}
