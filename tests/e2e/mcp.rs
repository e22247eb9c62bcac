//! MCP servers end to end, against `mcp-test-server` (the test kit's rmcp server) over
//! stdio and streamable HTTP: listing and calling, routing and name clashes, permissions
//! from annotations, a crash mid-call and the restart, list changes, cancel during a slow
//! call, and no server process left after shutdown.

use agentd_testkit::send::SendByName;
use std::path::{Path, PathBuf};
use std::time::Duration;

use agent_proto::client::Client;
use agent_proto::rpc::AgentRpcClient;
use agent_proto::{
    Agent, EventKind, LoopFinishReason, McpServerInfo, McpServerStatus, PermissionLevel,
    ToolCallStatus,
};
use agentd_testkit::daemon::TestDaemon;
use agentd_testkit::events::{collect_run, collect_until, finish_reason, type_names};
use agentd_testkit::mock_model::{MockModel, Reply};
use agentd_testkit::wait::eventually;
use serde_json::json;

use crate::common::{error_of, send_and_collect, start_with, tool_agent, tool_result_of};

/// The test server binary (`cargo test --workspace` builds it before any test runs).
pub(crate) fn server_bin() -> PathBuf {
    let path = Path::new(env!("CARGO_BIN_EXE_agentd")).with_file_name("mcp-test-server");
    assert!(
        path.exists(),
        "{} is missing: build it with `cargo build -p agentd-testkit --bins` (or run `cargo test --workspace`)",
        path.display()
    );
    path
}

/// A `[[mcp_servers]]` entry for a stdio test server with a log file.
pub(crate) fn stdio_server(name: &str, log: &Path, extra_args: &[&str], extra: &str) -> String {
    let mut args = vec!["--name".to_owned(), name.to_owned(), "--log".to_owned()];
    args.push(log.display().to_string());
    args.extend(extra_args.iter().map(|a| (*a).to_owned()));
    format!(
        "[[mcp_servers]]\nname = \"{name}\"\ncommand = \"{}\"\nargs = {}\n{extra}\n",
        server_bin().display(),
        serde_json::to_string(&args).unwrap()
    )
}

/// Live server processes whose command line holds `marker`, without the daemon's child
/// guards that run each of them (`tools::process`).
pub(crate) fn server_pids(marker: &str) -> Vec<u32> {
    agentd_testkit::procs::with_marker(marker)
        .into_iter()
        .filter(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            !String::from_utf8_lossy(&cmdline).contains(agentd::process::GUARD_ARG)
        })
        .collect()
}

pub(crate) async fn servers(client: &Client) -> Vec<McpServerInfo> {
    client.list_mcp_servers().await.unwrap().servers
}

/// Waits until the server reports `status` (polling listMcpServers).
pub(crate) async fn wait_status(
    client: &Client,
    name: &str,
    status: McpServerStatus,
) -> McpServerInfo {
    let what = format!("server {name} to become {status:?}");
    eventually(Duration::from_secs(20), &what, async || {
        let found = servers(client)
            .await
            .into_iter()
            .find(|s| s.spec.name == name);
        match found {
            Some(info) if info.status == status => Ok(info),
            other => Err(other),
        }
    })
    .await
}

pub(crate) fn log_lines(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

pub(crate) async fn wait_log(log: &Path, line: &str) {
    let what = format!("{line:?} in the server log");
    eventually(Duration::from_secs(10), &what, async || {
        let lines = log_lines(log);
        if lines.iter().any(|l| l.starts_with(line)) {
            Ok(())
        } else {
            Err(lines)
        }
    })
    .await;
}

/// One model turn calling `tool` with `args`, then a closing answer.
pub(crate) fn call_then_done(mock: &MockModel, id: &str, tool: &str, args: serde_json::Value) {
    mock.push(Reply::openai_tool_calls(
        &[],
        &[(id, tool, &args.to_string())],
    ));
    mock.push(Reply::openai_text(&["done"]));
}

pub(crate) async fn setup(
    extra: &str,
) -> (MockModel, TestDaemon, Client, Agent, tempfile::TempDir) {
    let (mock, daemon) = start_with(extra).await;
    let client = daemon.client().await;
    let (agent, ws) = tool_agent(&client, None).await;
    (mock, daemon, client, agent, ws)
}

#[tokio::test]
async fn stdio_tools_are_listed_called_and_levelled_by_annotations() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("t.log");
    let config = stdio_server(
        "t",
        &log,
        &[],
        "autoApprove = [\"image\", \"large\"]\nenv = { MCP_TEST_STDERR = \"hello from stderr\" }",
    );
    let (mock, daemon, client, agent, _ws) = setup(&config).await;
    let info = wait_status(&client, "t", McpServerStatus::Ready).await;
    assert_eq!(
        info.spec.env["MCP_TEST_STDERR"], "***",
        "env values are not shown"
    );
    eventually(Duration::from_secs(10), "the stderr tail", async || {
        let tail = servers(&client).await[0].stderr_tail.clone();
        if tail.iter().any(|l| l.contains("hello from stderr")) {
            Ok(())
        } else {
            Err(tail)
        }
    })
    .await;
    let names: Vec<&str> = info.tools.iter().map(|t| t.name.as_str()).collect();
    assert!(
        names.contains(&"echo") && names.contains(&"sleep"),
        "{names:?}"
    );

    let tools = client
        .list_tools(Some(agent.id.clone()))
        .await
        .unwrap()
        .tools;
    let level = |name: &str| {
        let t = tools.iter().find(|t| t.name == name).unwrap();
        assert_eq!(t.source, "mcp:t");
        assert!(t.enabled);
        t.permission_level
    };
    assert_eq!(level("echo"), PermissionLevel::Read);
    assert_eq!(level("sleep"), PermissionLevel::Execute);
    assert_eq!(level("fail"), PermissionLevel::Execute);
    assert_eq!(level("fetchish"), PermissionLevel::Network);

    // a read-level tool runs without asking; its text is the result
    call_then_done(&mock, "c1", "echo", json!({"text": "hello over stdio"}));
    let (_, events) = send_and_collect(&client, &agent.id, "echo it").await;
    assert_eq!(finish_reason(&events), LoopFinishReason::Completed);
    let (status, content, _) = tool_result_of(&events, "c1");
    assert_eq!(
        (status, content.as_str()),
        (ToolCallStatus::Success, "hello over stdio")
    );
    wait_log(&log, "call echo").await;
    // the model was offered the MCP tools with their schemas
    let request = &mock.requests()[0].body;
    let offered: Vec<&str> = request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(
        offered.contains(&"echo") && offered.contains(&"bash"),
        "{offered:?}"
    );

    // execute level asks (the default rule); denied, the model hears it
    mock.push(Reply::openai_tool_calls(&[], &[("c2", "fail", "{}")]));
    let (_, events) = send_and_collect(&client, &agent.id, "fail").await;
    assert_eq!(finish_reason(&events), LoopFinishReason::WaitingPermission);
    let prompt = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::PermissionRequested {
                message_id,
                description,
                permission_type,
                rememberable,
                ..
            } => Some((
                message_id.clone(),
                description.clone(),
                *permission_type,
                *rememberable,
            )),
            _ => None,
        })
        .unwrap();
    assert_eq!(prompt.2, PermissionLevel::Execute);
    assert!(
        prompt.1.contains("MCP server \"t\"") && prompt.3,
        "{prompt:?}"
    );
    mock.push(Reply::openai_text(&["ok"]));
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    client
        .handle_permission_response(
            prompt.0.clone(),
            "c2".into(),
            true,
            None,
            Some(agent_proto::Remember::Session),
        )
        .await
        .unwrap();
    let events = collect_run(&mut sub, Duration::from_secs(20)).await;
    let (status, content, _) = tool_result_of(&events, "c2");
    assert_eq!(status, ToolCallStatus::Error);
    assert_eq!(content, "the tool failed on purpose");
    // remembered for this server's tool: no prompt the second time
    call_then_done(&mock, "c2b", "fail", json!({}));
    let (_, events) = send_and_collect(&client, &agent.id, "fail again").await;
    assert_eq!(finish_reason(&events), LoopFinishReason::Completed);
    assert_eq!(
        tool_result_of(&events, "c2b").1,
        "the tool failed on purpose"
    );
    // arguments are checked against the tool's schema before the server sees them
    call_then_done(&mock, "c2c", "echo", json!({"words": 1}));
    let (_, events) = send_and_collect(&client, &agent.id, "bad args").await;
    let (status, content, _) = tool_result_of(&events, "c2c");
    assert_eq!(status, ToolCallStatus::Error);
    assert!(content.contains("invalid arguments for echo"), "{content}");

    // images are saved as files the model is told about; big results are offloaded
    call_then_done(&mock, "c3", "image", json!({}));
    let (_, events) = send_and_collect(&client, &agent.id, "image").await;
    let (_, content, _) = tool_result_of(&events, "c3");
    assert!(
        content.contains("image/png") && content.contains("saved to"),
        "{content}"
    );
    let saved = content
        .split("saved to ")
        .nth(1)
        .unwrap()
        .trim_end_matches(']')
        .to_owned();
    let saved = saved.split(']').next().unwrap();
    assert!(std::fs::read(saved).unwrap().starts_with(b"\x89PNG"));
    call_then_done(&mock, "c4", "large", json!({"chars": 10_000}));
    let (_, events) = send_and_collect(&client, &agent.id, "large").await;
    let (_, content, offload) = tool_result_of(&events, "c4");
    assert!(content.contains("10000 chars"), "{content}");
    assert_eq!(
        std::fs::read_to_string(offload.unwrap()).unwrap().len(),
        10_000
    );
    drop(daemon);
}

#[tokio::test]
async fn http_servers_are_added_over_rpc_listed_and_removed() {
    let mut server = tokio::process::Command::new(server_bin())
        .args(["--http", "127.0.0.1:0", "--name", "web"])
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdout = tokio::io::BufReader::new(server.stdout.take().unwrap());
    let mut line = String::new();
    tokio::io::AsyncBufReadExt::read_line(&mut stdout, &mut line)
        .await
        .unwrap();
    let url = line.trim().strip_prefix("listening ").unwrap().to_owned();

    let (mock, _daemon, client, agent, _ws) = setup("").await;
    let mut all = client.subscribe_events(None, None, None).await.unwrap();
    let added = client
        .add_mcp_server(
            serde_json::from_value(json!({
                "name": "web", "transport": "http", "url": url,
                "headers": {"X-Token": "secret-value"}, "autoApprove": ["*"]
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(
        added.spec.headers["X-Token"], "***",
        "secrets are not shown"
    );
    let statuses = collect_until(&mut all, Duration::from_secs(20), |e| {
        matches!(
            e.kind,
            EventKind::McpServerStatus {
                status: McpServerStatus::Ready,
                ..
            }
        )
    })
    .await;
    let last = statuses.last().unwrap();
    assert_eq!((last.seq, last.agent_id.as_str()), (0, ""));
    let info = wait_status(&client, "web", McpServerStatus::Ready).await;
    assert_eq!(info.source, agent_proto::McpSource::Rpc);

    call_then_done(&mock, "h1", "echo", json!({"text": "over http"}));
    let (_, events) = send_and_collect(&client, &agent.id, "echo").await;
    let (status, content, _) = tool_result_of(&events, "h1");
    assert_eq!(
        (status, content.as_str()),
        (ToolCallStatus::Success, "over http")
    );

    // the config file's servers are read-only; unknown names are reported
    let e = client.remove_mcp_server("nope".into()).await.unwrap_err();
    assert_eq!(error_of(&e).1, "mcpServerNotFound");
    let e = client
        .add_mcp_server(
            serde_json::from_value(json!({"name": "bad name!", "command": "x"})).unwrap(),
        )
        .await
        .unwrap_err();
    assert_eq!(error_of(&e).1, "invalidParams");
    // update: disable it
    let updated = client
        .update_mcp_server("web".into(), json!({"enabled": false}))
        .await
        .unwrap();
    assert!(!updated.spec.enabled);
    wait_status(&client, "web", McpServerStatus::Stopped).await;
    let tools = client
        .list_tools(Some(agent.id.clone()))
        .await
        .unwrap()
        .tools;
    assert!(!tools.iter().any(|t| t.source == "mcp:web"));
    let removed = client.remove_mcp_server("web".into()).await.unwrap();
    assert_eq!(removed, agent_proto::RemovedResult {});
    assert!(servers(&client).await.is_empty());
    let _ = server.kill().await;
}

#[tokio::test]
async fn clashes_rename_and_mcp_wins_over_a_builtin() {
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "{}{}",
        stdio_server(
            "a",
            &dir.path().join("a.log"),
            &["--clash"],
            "autoApprove = [\"*\"]"
        ),
        stdio_server("b", &dir.path().join("b.log"), &[], "")
    );
    let (mock, _daemon, client, agent, _ws) = setup(&config).await;
    wait_status(&client, "a", McpServerStatus::Ready).await;
    wait_status(&client, "b", McpServerStatus::Ready).await;
    let tools = client
        .list_tools(Some(agent.id.clone()))
        .await
        .unwrap()
        .tools;
    let find = |name: &str, source: &str| {
        tools
            .iter()
            .find(|t| t.name == name && t.source == source)
            .unwrap_or_else(|| panic!("no {name} from {source}"))
            .enabled
    };
    assert!(find("a__echo", "mcp:a") && find("b__echo", "mcp:b"));
    assert!(find("read_file", "mcp:a"));
    assert!(
        !find("read_file", "builtin"),
        "the MCP tool replaces the builtin"
    );
    call_then_done(&mock, "r1", "read_file", json!({"path": "x.txt"}));
    let (_, events) = send_and_collect(&client, &agent.id, "read").await;
    let (_, content, _) = tool_result_of(&events, "r1");
    assert_eq!(content, "mcp read_file: x.txt");
    call_then_done(&mock, "r2", "a__echo", json!({"text": "via a"}));
    let (_, events) = send_and_collect(&client, &agent.id, "echo").await;
    assert_eq!(tool_result_of(&events, "r2").1, "via a");
    // an agent limited to server b sees neither a's tools nor a's replacement
    let only_b = client
        .update_agent(
            agent.id.clone(),
            None,
            None,
            None,
            None,
            None,
            None,
            Some(json!({"enabledMcpTools": ["b"]})),
            None,
        )
        .await
        .unwrap();
    let tools = client
        .list_tools(Some(only_b.id.clone()))
        .await
        .unwrap()
        .tools;
    let enabled: Vec<(&str, &str)> = tools
        .iter()
        .filter(|t| t.enabled)
        .map(|t| (t.name.as_str(), t.source.as_str()))
        .collect();
    assert!(enabled.contains(&("read_file", "builtin")) && enabled.contains(&("b__echo", "mcp:b")));
    assert!(!enabled.iter().any(|(_, s)| *s == "mcp:a"), "{enabled:?}");
}

#[tokio::test]
async fn a_crash_mid_call_is_a_tool_error_and_the_server_comes_back() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("c.log");
    let config = stdio_server("c", &log, &[], "autoApprove = [\"*\"]");
    let (mock, _daemon, client, agent, _ws) = setup(&config).await;
    wait_status(&client, "c", McpServerStatus::Ready).await;
    mock.push(Reply::openai_tool_calls(
        &[],
        &[("k1", "sleep", r#"{"ms": 20000}"#)],
    ));
    mock.push(Reply::openai_text(&["the server died"]));
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    client
        .send_plain(agent.id.clone(), "sleep".into())
        .await
        .unwrap();
    wait_log(&log, "call sleep").await;
    let pids = server_pids(&log.display().to_string());
    assert_eq!(pids.len(), 1, "one server process");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pids[0] as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let events = collect_run(&mut sub, Duration::from_secs(20)).await;
    let (status, content, _) = tool_result_of(&events, "k1");
    assert_eq!(status, ToolCallStatus::Error, "{content}");
    assert!(content.contains("MCP server \"c\""), "{content}");
    assert_eq!(finish_reason(&events), LoopFinishReason::Completed);
    // while it is down (or back), its tools stay listed from the cache
    let tools = client
        .list_tools(Some(agent.id.clone()))
        .await
        .unwrap()
        .tools;
    assert!(
        tools
            .iter()
            .any(|t| t.name == "sleep" && t.source == "mcp:c")
    );
    // restarted (1 s backoff), and the next call works
    let info = wait_status(&client, "c", McpServerStatus::Ready).await;
    assert!(info.restarts >= 1);
    assert!(info.last_error.is_some());
    call_then_done(&mock, "k2", "echo", json!({"text": "back"}));
    let (_, events) = send_and_collect(&client, &agent.id, "again").await;
    assert_eq!(tool_result_of(&events, "k2").1, "back");
}

#[tokio::test]
async fn list_changes_refresh_the_tools() {
    let dir = tempfile::tempdir().unwrap();
    let config = stdio_server("d", &dir.path().join("d.log"), &[], "autoApprove = [\"*\"]");
    let (mock, _daemon, client, agent, _ws) = setup(&config).await;
    wait_status(&client, "d", McpServerStatus::Ready).await;
    call_then_done(&mock, "a1", "add_tool", json!({}));
    send_and_collect(&client, &agent.id, "add").await;
    eventually(
        Duration::from_secs(10),
        "the new tool to show up",
        async || {
            let tools = client
                .list_tools(Some(agent.id.clone()))
                .await
                .unwrap()
                .tools;
            tools.iter().any(|t| t.name == "added")
        },
    )
    .await;
    call_then_done(&mock, "a2", "added", json!({}));
    let (_, events) = send_and_collect(&client, &agent.id, "use it").await;
    assert_eq!(tool_result_of(&events, "a2").1, "added works");
}

#[tokio::test]
async fn cancel_during_a_slow_call_returns_at_once_and_tells_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("s.log");
    let config = stdio_server("s", &log, &[], "autoApprove = [\"sleep\"]");
    let (mock, mut daemon, client, agent, _ws) = setup(&config).await;
    wait_status(&client, "s", McpServerStatus::Ready).await;
    mock.push(Reply::openai_tool_calls(
        &[],
        &[("z1", "sleep", r#"{"ms": 30000}"#)],
    ));
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    client
        .send_plain(agent.id.clone(), "sleep".into())
        .await
        .unwrap();
    // progress notifications arrive as events
    let seen = collect_until(&mut sub, Duration::from_secs(20), |e| {
        matches!(e.kind, EventKind::ToolProgress { .. })
    })
    .await;
    let EventKind::ToolProgress {
        tool_call_id,
        total,
        ..
    } = &seen.last().unwrap().kind
    else {
        unreachable!()
    };
    assert_eq!((tool_call_id.as_str(), *total), ("z1", Some(30000.0)));
    // The tool would run 30 s: the run ends well before, so the cancel did not wait for it.
    client.cancel_loop(agent.id.clone()).await.unwrap();
    let events = collect_run(&mut sub, Duration::from_secs(10)).await;
    assert_eq!(
        finish_reason(&events),
        LoopFinishReason::Cancelled,
        "{:?}",
        type_names(&events)
    );
    assert_eq!(tool_result_of(&events, "z1").0, ToolCallStatus::Cancelled);
    wait_log(&log, "cancelled sleep").await;

    // shutdown stops the server process
    let marker = log.display().to_string();
    assert_eq!(server_pids(&marker).len(), 1);
    daemon.terminate().await;
    let gone = agentd_testkit::procs::wait_gone(&marker, Duration::from_secs(10)).await;
    eprintln!("MCP server process gone {gone:?} after shutdown");
}

#[tokio::test]
async fn progress_sent_right_before_the_result_always_comes_before_it() {
    const CALLS: usize = 40;
    let dir = tempfile::tempdir().unwrap();
    let config = stdio_server(
        "p",
        &dir.path().join("p.log"),
        &["--progress-last"],
        "autoApprove = [\"progress_last\"]",
    );
    let (mock, _daemon, client, agent, _ws) = setup(&config).await;
    wait_status(&client, "p", McpServerStatus::Ready).await;
    // Many calls, so a progress overtaken by its result would show at least once.
    let ids: Vec<String> = (0..CALLS).map(|i| format!("p{i}")).collect();
    let calls: Vec<(&str, &str, &str)> = ids
        .iter()
        .map(|id| (id.as_str(), "progress_last", "{}"))
        .collect();
    mock.push(Reply::openai_tool_calls(&[], &calls));
    mock.push(Reply::openai_text(&["done"]));
    let (_, events) = send_and_collect(&client, &agent.id, "go").await;
    assert_eq!(finish_reason(&events), LoopFinishReason::Completed);
    for id in &ids {
        let progress = events.iter().position(|e| {
            matches!(&e.kind, EventKind::ToolProgress { tool_call_id, message, .. }
                if tool_call_id == id && message.as_deref() == Some("last"))
        });
        let result = events.iter().position(
            |e| matches!(&e.kind, EventKind::ToolResult { tool_call_id, .. } if tool_call_id == id),
        );
        assert!(
            matches!((progress, result), (Some(p), Some(r)) if p < r),
            "{id}: progress at {progress:?}, result at {result:?}"
        );
        assert_eq!(tool_result_of(&events, id).1, "progressed");
    }
}

#[tokio::test]
async fn a_down_server_keeps_its_cached_tools_and_calls_fail_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("p.log");
    let config = stdio_server("p", &log, &[], "autoApprove = [\"*\"]");
    let (mock, mut daemon, client, agent, _ws) = setup(&config).await;
    wait_status(&client, "p", McpServerStatus::Ready).await;
    drop(client);
    daemon.terminate().await;
    // the same server, now unable to start
    let text = std::fs::read_to_string(daemon.config_path()).unwrap();
    let broken = text.replace(
        &format!("command = \"{}\"", server_bin().display()),
        "command = \"/nonexistent/mcp-server\"",
    );
    assert_ne!(text, broken);
    std::fs::write(daemon.config_path(), broken).unwrap();
    daemon.restart().await;
    let client = daemon.client().await;
    let info = wait_status(&client, "p", McpServerStatus::Failed).await;
    assert!(
        info.last_error
            .as_deref()
            .unwrap()
            .contains("/nonexistent/mcp-server"),
        "{info:?}"
    );
    let tools = client
        .list_tools(Some(agent.id.clone()))
        .await
        .unwrap()
        .tools;
    assert!(
        tools
            .iter()
            .any(|t| t.name == "echo" && t.source == "mcp:p"),
        "cached"
    );
    call_then_done(&mock, "d1", "echo", json!({"text": "anyone?"}));
    let (_, events) = send_and_collect(&client, &agent.id, "echo").await;
    let (status, content, _) = tool_result_of(&events, "d1");
    assert_eq!(status, ToolCallStatus::Error);
    assert!(content.contains("MCP server \"p\" is"), "{content}");
    let e = client.restart_mcp_server("p".into()).await.unwrap();
    assert_eq!(e.spec.name, "p");
    let e = client.remove_mcp_server("p".into()).await.unwrap_err();
    assert_eq!(
        error_of(&e).1,
        "invalidState",
        "config servers are read-only"
    );
}
