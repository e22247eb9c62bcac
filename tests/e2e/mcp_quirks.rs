//! MCP servers that misbehave, replayed by `mcp-test-server`'s switches against the real
//! daemon (issue 14, sections 3 and 4): tool names and schemas providers refuse, tools a
//! typed client rejects, too many tools or one huge schema, endless pagination,
//! `list_changed` storms, a listing never answered, a server that dies right after its
//! handshake, answers over the transport's limit, timeouts, results of unknown shapes,
//! and chatter. Intervals are configured short and counts are read after waiting for an
//! event; nothing asserts how long something took.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::Duration;

use agent_proto::client::Client;
use agent_proto::rpc::AgentRpcClient;
use agent_proto::{EventKind, LoopFinishReason, McpServerInfo, McpServerStatus, ToolCallStatus};
use agentd_testkit::daemon::{TestDaemon, openai_config_with_window};
use agentd_testkit::events::finish_reason;
use agentd_testkit::mock_model::{MockModel, Reply};
use agentd_testkit::wait::eventually;
use serde_json::json;

use crate::common::{bin, send_and_collect, tool_agent, tool_result_of};
use crate::mcp::{
    call_then_done, log_lines, server_bin, server_pids, servers, setup, stdio_server, wait_log,
    wait_status,
};

/// How long a condition of these scenarios may take to hold (a hang guard).
const WAIT: Duration = Duration::from_secs(20);

async fn info(client: &Client, name: &str) -> McpServerInfo {
    servers(client)
        .await
        .into_iter()
        .find(|s| s.spec.name == name)
        .unwrap_or_else(|| panic!("no server {name}"))
}

/// How many `tools/list` requests the server's log shows.
fn lists(log: &Path) -> usize {
    log_lines(log)
        .iter()
        .filter(|l| l.starts_with("list "))
        .count()
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// `(source, original name) -> exposed name` of the MCP tools enabled for the agent.
async fn exposed(client: &Client, agent_id: &str) -> HashMap<(String, String), String> {
    client
        .list_tools(Some(agent_id.into()))
        .await
        .unwrap()
        .tools
        .into_iter()
        .filter_map(|t| {
            let original = t.original_name.clone()?;
            Some(((t.source.clone(), original), t.name))
        })
        .collect()
}

#[tokio::test]
async fn tools_providers_would_refuse_are_renamed_or_skipped_and_the_rest_work() {
    let dir = tempfile::tempdir().unwrap();
    let (a_log, b_log) = (dir.path().join("a.log"), dir.path().join("b.log"));
    let config = format!(
        "{}{}",
        stdio_server(
            "a",
            &a_log,
            &["--odd-tools", "--huge-schema", "1048576"],
            "autoApprove = [\"*\"]"
        ),
        stdio_server("b", &b_log, &[], "autoApprove = [\"*\"]")
    );
    let (mock, mut daemon, client, agent, _ws) = setup(&config).await;
    let a = wait_status(&client, "a", McpServerStatus::Ready).await;
    wait_status(&client, "b", McpServerStatus::Ready).await;

    // one bad tool is skipped with its reason; the server works
    let skipped: Vec<(Option<&str>, &str)> = a
        .skipped_tools
        .iter()
        .map(|s| (s.name.as_deref(), s.reason.as_str()))
        .collect();
    for (name, reason) in [
        (None, "it has no name"),
        (Some(""), "its name is empty"),
        (Some("null_schema"), "it has no inputSchema"),
        (Some("no_schema"), "it has no inputSchema"),
        (
            Some("number_description"),
            "its description is not text: 42",
        ),
        (
            Some("schema_string"),
            "its inputSchema has type \"string\"; a tool's arguments must be an object",
        ),
        (
            Some("schema_props"),
            "its inputSchema's properties is not an object: \"oops\"",
        ),
        (
            Some("dup"),
            "the server lists another tool of this name before it",
        ),
    ] {
        assert!(
            skipped.contains(&(name, reason)),
            "{name:?}: {reason:?} not in {skipped:?}"
        );
    }
    let huge = a
        .skipped_tools
        .iter()
        .find(|s| s.name.as_deref() == Some("huge"))
        .unwrap();
    assert!(
        huge.reason
            .contains("over the limit of 65536 (mcp.max_schema_bytes)"),
        "{huge:?}"
    );
    assert_eq!(skipped.len(), 9, "{skipped:?}");

    // the names the model sees: valid, unique, and each maps back to its tool
    let names = exposed(&client, &agent.id).await;
    let of = |server: &str, tool: &str| {
        names
            .get(&(format!("mcp:{server}"), tool.to_owned()))
            .unwrap_or_else(|| panic!("no {server}/{tool} in {names:?}"))
            .clone()
    };
    assert_eq!(of("a", "get.weather"), "get_weather");
    assert_eq!(of("a", "with space"), "with_space");
    assert_eq!(of("a", "a/b"), "a_b");
    assert_eq!(of("a", "météo"), "m_t_o");
    assert_eq!(of("a", &"n".repeat(70)), "n".repeat(64));
    assert_eq!(of("a", "dup"), "dup");
    assert_eq!(of("a", "echo"), "a__echo");
    assert_eq!(of("a", "b__echo"), "b__echo", "a real name keeps its name");
    let b_echo = of("b", "echo");
    assert!(
        b_echo.starts_with("b__echo_") && b_echo.len() == "b__echo_".len() + 8,
        "{b_echo}"
    );
    let all = client
        .list_tools(Some(agent.id.clone()))
        .await
        .unwrap()
        .tools;
    let offered: Vec<&str> = all
        .iter()
        .filter(|t| t.enabled)
        .map(|t| t.name.as_str())
        .collect();
    assert!(offered.iter().all(|n| valid_name(n)), "{offered:?}");
    assert_eq!(
        offered.iter().collect::<HashSet<_>>().len(),
        offered.len(),
        "{offered:?}"
    );

    // the model gets valid names; a call goes to exactly the tool behind the name
    call_then_done(&mock, "o1", "get_weather", json!({}));
    let (_, events) = send_and_collect(&client, &agent.id, "weather").await;
    assert_eq!(tool_result_of(&events, "o1").1, "called get.weather");
    wait_log(&a_log, "call get.weather {}").await;
    let sent: Vec<String> = mock.requests()[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(sent.iter().all(|n| valid_name(n)), "{sent:?}");
    assert_eq!(sent.iter().collect::<HashSet<_>>().len(), sent.len());
    assert!(sent.contains(&b_echo) && sent.contains(&"b__echo".to_owned()));
    call_then_done(&mock, "o2", &b_echo, json!({"text": "from b"}));
    let (_, events) = send_and_collect(&client, &agent.id, "echo b").await;
    assert_eq!(tool_result_of(&events, "o2").1, "from b");
    wait_log(&b_log, r#"call echo {"text":"from b"}"#).await;
    call_then_done(&mock, "o3", "b__echo", json!({}));
    let (_, events) = send_and_collect(&client, &agent.id, "the real one").await;
    assert_eq!(tool_result_of(&events, "o3").1, "called b__echo");

    // the same names after a restart
    drop(client);
    daemon.terminate().await;
    daemon.restart().await;
    let client = daemon.client().await;
    wait_status(&client, "a", McpServerStatus::Ready).await;
    wait_status(&client, "b", McpServerStatus::Ready).await;
    assert_eq!(exposed(&client, &agent.id).await, names);
}

#[tokio::test]
async fn the_tool_cap_leaves_tools_out_with_an_error_event_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "{}[mcp]\nmax_tools_per_request = 20\n",
        stdio_server("t", &dir.path().join("t.log"), &["--many-tools", "200"], "")
    );
    let (mock, _daemon, client, agent, _ws) = setup(&config).await;
    wait_status(&client, "t", McpServerStatus::Ready).await;
    mock.push(Reply::openai_text(&["fine"]));
    let (_, events) = send_and_collect(&client, &agent.id, "hi").await;
    assert_eq!(finish_reason(&events), LoopFinishReason::Completed);
    let (message, kind, retryable) = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::Error {
                message,
                kind,
                retryable,
                ..
            } => Some((message.clone(), kind.clone(), *retryable)),
            _ => None,
        })
        .expect("an error event");
    assert_eq!((kind.as_str(), retryable), ("toolsLeftOut", false));
    assert!(
        message.starts_with(
            "this agent has 221 tools and a request carries at most 20 (mcp.max_tools_per_request); left out: t/resource, t/bulk_0001, t/bulk_0002,"
        ),
        "{message}"
    );
    assert!(message.contains("t/bulk_0049 and 151 more"), "{message}");
    let sent = mock.requests()[0].body["tools"].as_array().unwrap().len();
    assert_eq!(sent, 20);
    let listed = client
        .list_tools(Some(agent.id.clone()))
        .await
        .unwrap()
        .tools;
    assert_eq!(listed.iter().filter(|t| t.enabled).count(), 20);
}

#[tokio::test]
async fn a_request_the_budget_cannot_fit_fails_instead_of_being_sent() {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockModel::start().await;
    let config = format!(
        "{}\n{}",
        openai_config_with_window(&mock.url(), 4096),
        stdio_server(
            "f",
            &dir.path().join("f.log"),
            &["--huge-schema", "40000"],
            ""
        )
    );
    let daemon = TestDaemon::start(bin(), &config).await;
    let client = daemon.client().await;
    let (agent, _ws) = tool_agent(&client, None).await;
    wait_status(&client, "f", McpServerStatus::Ready).await;
    mock.push(Reply::openai_text(&["never asked"]));
    let (_, events) = send_and_collect(&client, &agent.id, "hi").await;
    assert_eq!(finish_reason(&events), LoopFinishReason::Error);
    let (message, kind) = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::Error { message, kind, .. } => Some((message.clone(), kind.clone())),
            _ => None,
        })
        .expect("an error event");
    assert_eq!(kind, "providerBadRequest");
    assert!(
        message.contains("the request does not fit the model's context and was not sent")
            && message.contains("the tools take most of it"),
        "{message}"
    );
    assert!(mock.requests().is_empty(), "nothing went to the model");
}

#[tokio::test]
async fn pagination_that_never_ends_is_stopped_and_fails_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let log = |name: &str| dir.path().join(format!("{name}.log"));
    let mut config = String::new();
    for (name, mode) in [
        ("e", "empty-forever"),
        ("r", "repeat"),
        ("n", "endless"),
        ("p", "pages"),
    ] {
        config.push_str(&stdio_server(name, &log(name), &["--paginate", mode], ""));
    }
    // no restart while the test reads the logs
    config.push_str("[mcp]\nmax_list_pages = 10\nrestart_backoff_first_ms = 600000\n");
    let (_mock, _daemon, client, _agent, _ws) = setup(&config).await;

    // an empty cursor ends the list
    let e = wait_status(&client, "e", McpServerStatus::Ready).await;
    assert_eq!(e.tools.len(), 8);
    assert_eq!(lists(&log("e")), 1);
    // a cursor given twice stops the listing
    let r = wait_status(&client, "r", McpServerStatus::Failed).await;
    let why = r.last_error.unwrap();
    assert!(
        why.contains("tools/list page 2 gave the cursor \"again\" again"),
        "{why}"
    );
    assert_eq!(lists(&log("r")), 2);
    // new cursors forever: stopped at the page limit
    let n = wait_status(&client, "n", McpServerStatus::Failed).await;
    let why = n.last_error.unwrap();
    assert!(
        why.contains("tools/list still had more after 10 pages (mcp.max_list_pages)"),
        "{why}"
    );
    assert_eq!(lists(&log("n")), 10);
    // real pages are followed to their end
    let p = wait_status(&client, "p", McpServerStatus::Ready).await;
    assert_eq!(p.tools.len(), 8);
    assert_eq!(lists(&log("p")), 8);
}

/// `updated_at` of a server's cached tool list in the daemon's store.
async fn cache_written_at(daemon: &TestDaemon, server: &str) -> i64 {
    let pool = crate::common::database(daemon).await;
    let at: i64 = sqlx::query_scalar("SELECT updated_at FROM mcp_tool_cache WHERE server = $1")
        .bind(server)
        .fetch_one(&pool)
        .await
        .unwrap();
    pool.close().await;
    at
}

#[tokio::test]
async fn a_list_changed_storm_is_listed_once_and_an_unchanged_list_is_not_rewritten() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("s.log");
    let config = format!(
        "{}[mcp]\nlist_changed_debounce_ms = 3000\n",
        stdio_server("s", &log, &["--storm", "200"], "autoApprove = [\"*\"]")
    );
    let (mock, daemon, client, agent, _ws) = setup(&config).await;
    wait_status(&client, "s", McpServerStatus::Ready).await;
    assert_eq!(lists(&log), 1);
    let written = cache_written_at(&daemon, "s").await;

    // 200 announcements of a list that did not change
    call_then_done(&mock, "s1", "storm", json!({"add": false}));
    let (_, events) = send_and_collect(&client, &agent.id, "storm").await;
    assert_eq!(tool_result_of(&events, "s1").1, "stormed");
    eventually(WAIT, "the listing after the storm", async || {
        daemon
            .log()
            .contains("the tool list is unchanged")
            .then_some(())
    })
    .await;
    let after_first = lists(&log);
    assert!(
        (2..=4).contains(&after_first),
        "listed {after_first} times for 200 announcements"
    );
    assert_eq!(
        cache_written_at(&daemon, "s").await,
        written,
        "an unchanged list is not written again"
    );

    // 200 more, then a real change: it shows up
    call_then_done(&mock, "s2", "storm", json!({"add": true}));
    send_and_collect(&client, &agent.id, "storm again").await;
    eventually(WAIT, "the added tool", async || {
        let tools = client.list_tools(None).await.unwrap().tools;
        tools.iter().any(|t| t.name == "added").then_some(())
    })
    .await;
    let after_second = lists(&log) - after_first;
    assert!(
        (1..=3).contains(&after_second),
        "listed {after_second} times for 201 announcements"
    );
    assert!(cache_written_at(&daemon, "s").await >= written);
}

#[tokio::test]
async fn a_listing_never_answered_does_not_stop_restart_or_remove() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("h.log");
    let (mock, _daemon, client, agent, _ws) = setup("[mcp]\nlist_changed_debounce_ms = 10\n").await;
    client
        .add_mcp_server(
            serde_json::from_value(json!({
                "name": "h", "command": server_bin(),
                "args": ["--log", log, "--hang-relist"], "autoApprove": ["*"]
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    wait_status(&client, "h", McpServerStatus::Ready).await;
    // the tool list changes; the server never answers the listing that follows
    call_then_done(&mock, "h1", "add_tool", json!({}));
    send_and_collect(&client, &agent.id, "add").await;
    eventually(WAIT, "the second listing", async || {
        (lists(&log) == 2).then_some(())
    })
    .await;

    // restart works meanwhile
    client.restart_mcp_server("h".into()).await.unwrap();
    eventually(WAIT, "the restarted server", async || {
        let h = info(&client, "h").await;
        (h.restarts == 1 && h.status == McpServerStatus::Ready).then_some(())
    })
    .await;
    let marker = log.display().to_string();
    assert_eq!(server_pids(&marker).len(), 1, "the old process is gone");
    call_then_done(&mock, "h2", "add_tool", json!({}));
    send_and_collect(&client, &agent.id, "add again").await;
    eventually(WAIT, "the hung listing of the new process", async || {
        (lists(&log) == 4).then_some(())
    })
    .await;

    // remove answers once the process is gone
    let removed = client.remove_mcp_server("h".into()).await.unwrap();
    assert_eq!(removed, agent_proto::RemovedResult {});
    assert!(
        server_pids(&marker).is_empty(),
        "removed, yet still running"
    );
    assert!(servers(&client).await.is_empty());
}

#[tokio::test]
async fn a_listing_not_answered_in_time_is_cancelled_and_the_tools_kept() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("k.log");
    let config = format!(
        "{}[mcp]\nlist_changed_debounce_ms = 10\n",
        stdio_server(
            "k",
            &log,
            &["--hang-relist"],
            "autoApprove = [\"*\"]\nstartupTimeoutSecs = 1"
        )
    );
    let (mock, _daemon, client, agent, _ws) = setup(&config).await;
    wait_status(&client, "k", McpServerStatus::Ready).await;
    call_then_done(&mock, "k1", "add_tool", json!({}));
    send_and_collect(&client, &agent.id, "add").await;
    wait_log(&log, "cancelled list").await;
    let k = eventually(WAIT, "the failed listing", async || {
        let k = info(&client, "k").await;
        k.last_error.is_some().then_some(k)
    })
    .await;
    assert_eq!(
        k.last_error.as_deref(),
        Some("listing the changed tools: the server did not answer tools/list within 1 s")
    );
    assert_eq!((k.status, k.tools.len()), (McpServerStatus::Ready, 8));
    call_then_done(&mock, "k2", "echo", json!({"text": "served"}));
    let (_, events) = send_and_collect(&client, &agent.id, "echo").await;
    assert_eq!(tool_result_of(&events, "k2").1, "served");
}

#[tokio::test]
async fn a_server_that_dies_after_its_handshake_waits_longer_each_time() {
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        "{}[mcp]\nrestart_backoff_first_ms = 50\nstable_after_secs = 3600\n",
        stdio_server("x", &dir.path().join("x.log"), &["--exit-after-list"], "")
    );
    let (_mock, _daemon, client, _agent, _ws) = setup(&config).await;
    // Read while it waits: restarts so far and the wait before the next start.
    let (restarts, delay) = eventually(WAIT, "four restarts", async || {
        let x = info(&client, "x").await;
        (x.status == McpServerStatus::Failed && x.restarts >= 4)
            .then_some(())
            .and(x.retry_delay_ms.map(|d| (x.restarts, d)))
    })
    .await;
    assert_eq!(
        delay,
        (50u64 << restarts).min(60_000),
        "each start that dies at once doubles the wait (restart {restarts})"
    );
    let x = info(&client, "x").await;
    assert!(
        x.last_error
            .as_deref()
            .is_some_and(|e| e.contains("the server closed the connection")),
        "{x:?}"
    );
}

#[tokio::test]
async fn an_answer_over_the_transport_limit_fails_the_call_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let config = stdio_server(
        "g",
        &dir.path().join("g.log"),
        &[],
        "autoApprove = [\"*\"]\ncallTimeoutSecs = 3600",
    );
    let (mock, _daemon, client, agent, _ws) = setup(&config).await;
    wait_status(&client, "g", McpServerStatus::Ready).await;
    // send_and_collect waits 30 s at most: far below the call timeout
    call_then_done(&mock, "l1", "large", json!({"chars": 17_000_000}));
    let (_, events) = send_and_collect(&client, &agent.id, "large").await;
    let (status, content, _) = tool_result_of(&events, "l1");
    assert_eq!(status, ToolCallStatus::Error);
    assert!(
        content.starts_with("the MCP server \"g\" could not answer: the server's answer (172")
            && content.contains("bytes) is over the 16 MiB limit of one MCP message"),
        "{content}"
    );
    // the connection goes on
    call_then_done(&mock, "l2", "echo", json!({"text": "still here"}));
    let (_, events) = send_and_collect(&client, &agent.id, "echo").await;
    assert_eq!(tool_result_of(&events, "l2").1, "still here");
}

#[tokio::test]
async fn a_timeout_cancels_the_call_on_the_server_and_timeouts_in_a_row_restart_it() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("w.log");
    let config = format!(
        "{}[mcp]\ntimeouts_before_restart = 2\n",
        stdio_server("w", &log, &[], "autoApprove = [\"*\"]\ncallTimeoutSecs = 1")
    );
    let (mock, _daemon, client, agent, _ws) = setup(&config).await;
    wait_status(&client, "w", McpServerStatus::Ready).await;
    call_then_done(&mock, "t1", "sleep", json!({"ms": 60_000}));
    let (_, events) = send_and_collect(&client, &agent.id, "sleep").await;
    assert_eq!(tool_result_of(&events, "t1").1, "sleep timed out after 1 s");
    wait_log(&log, "cancelled sleep").await;
    assert_eq!(
        info(&client, "w").await.restarts,
        0,
        "one timeout is not enough"
    );
    call_then_done(&mock, "t2", "sleep", json!({"ms": 60_000}));
    send_and_collect(&client, &agent.id, "sleep again").await;
    let w = eventually(WAIT, "the restart", async || {
        let w = info(&client, "w").await;
        (w.restarts == 1 && w.status == McpServerStatus::Ready).then_some(w)
    })
    .await;
    assert_eq!(
        w.last_error.as_deref(),
        Some("restarted: 2 calls in a row timed out")
    );
    call_then_done(&mock, "t3", "echo", json!({"text": "back"}));
    let (_, events) = send_and_collect(&client, &agent.id, "echo").await;
    assert_eq!(tool_result_of(&events, "t3").1, "back");
}

#[tokio::test]
async fn results_of_unknown_shapes_keep_their_good_parts() {
    let dir = tempfile::tempdir().unwrap();
    let config = stdio_server(
        "o",
        &dir.path().join("o.log"),
        &["--odd-results"],
        "autoApprove = [\"*\"]",
    );
    let (mock, _daemon, client, agent, _ws) = setup(&config).await;
    wait_status(&client, "o", McpServerStatus::Ready).await;

    call_then_done(&mock, "u1", "unknown_content", json!({}));
    let (_, events) = send_and_collect(&client, &agent.id, "unknown").await;
    let (status, content, _) = tool_result_of(&events, "u1");
    assert_eq!(status, ToolCallStatus::Success);
    assert_eq!(
        content,
        "kept\n[a content part of type \"video\" that agentd does not read (50 bytes of JSON)]\nalso kept"
    );

    call_then_done(&mock, "u2", "image_no_mime", json!({}));
    let (_, events) = send_and_collect(&client, &agent.id, "image").await;
    let (_, content, _) = tool_result_of(&events, "u2");
    assert!(
        content.starts_with("[image/png, ")
            && content.ends_with("(no mimeType given; image/png by its bytes)\na caption"),
        "{content}"
    );
    let saved = content.split("saved to ").nth(1).unwrap();
    let saved = saved.split(']').next().unwrap();
    assert!(std::fs::read(saved).unwrap().starts_with(b"\x89PNG"));

    call_then_done(&mock, "u3", "no_content", json!({}));
    let (_, events) = send_and_collect(&client, &agent.id, "nothing").await;
    assert_eq!(
        tool_result_of(&events, "u3").1,
        "[the server's result has no content: {\"answer\":42}]"
    );
}

#[tokio::test]
async fn notifications_and_stderr_are_kept_short() {
    let dir = tempfile::tempdir().unwrap();
    let config = stdio_server(
        "c",
        &dir.path().join("c.log"),
        &["--chatty", "--stderr-flood", "8388608"],
        "autoApprove = [\"*\"]",
    );
    let (mock, daemon, client, agent, _ws) = setup(&config).await;
    wait_status(&client, "c", McpServerStatus::Ready).await;
    // 8 MiB without a newline: one line, cut, shown before its end ever comes
    let line = eventually(WAIT, "the cut stderr line", async || {
        info(&client, "c")
            .await
            .stderr_tail
            .into_iter()
            .find(|l| l.starts_with("xxxx"))
    })
    .await;
    assert_eq!(line, format!("{} … (cut)", "x".repeat(500)));

    call_then_done(&mock, "n1", "chatty", json!({}));
    let (_, events) = send_and_collect(&client, &agent.id, "chat").await;
    assert_eq!(tool_result_of(&events, "n1").1, "chatted");
    let log = daemon.log();
    assert!(
        log.contains("notification: notifications/x-test-chatter"),
        "the daemon notes the notification (debug)"
    );
    assert!(
        !log.contains(&"y".repeat(1000)),
        "a notification's payload is not logged whole"
    );
    assert!(!log.contains(&"x".repeat(1000)), "nor a stderr line");
}

#[tokio::test]
async fn an_http_answer_over_the_transport_limit_fails_the_call_at_once() {
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
    client
        .add_mcp_server(
            serde_json::from_value(json!({
                "name": "web", "transport": "http", "url": url,
                "autoApprove": ["*"], "callTimeoutSecs": 3600
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    wait_status(&client, "web", McpServerStatus::Ready).await;
    call_then_done(&mock, "w1", "large", json!({"chars": 17_000_000}));
    let (_, events) = send_and_collect(&client, &agent.id, "large").await;
    let (status, content, _) = tool_result_of(&events, "w1");
    assert_eq!(status, ToolCallStatus::Error);
    assert_eq!(
        content,
        "the MCP server \"web\" could not answer: the server's answer is over the 16 MiB limit \
         of one MCP message; it was dropped (ask for less, e.g. a smaller page or range)"
    );
    call_then_done(&mock, "w2", "echo", json!({"text": "still here"}));
    let (_, events) = send_and_collect(&client, &agent.id, "echo").await;
    assert_eq!(tool_result_of(&events, "w2").1, "still here");
    let _ = server.kill().await;
}

#[tokio::test]
async fn the_first_request_waits_for_servers_still_listing_and_names_those_still_missing() {
    let dir = tempfile::tempdir().unwrap();
    // `slow` lists its tools a second late: the first request waits for it. `stuck` does
    // not list them within the wait: the request goes without its tools and says so.
    let config = format!(
        "{}{}[mcp]\nwait_for_tools_ms = 6000\n",
        stdio_server(
            "slow",
            &dir.path().join("slow.log"),
            &["--slow-list", "1000"],
            ""
        ),
        stdio_server(
            "stuck",
            &dir.path().join("stuck.log"),
            &["--slow-list", "600000"],
            "startupTimeoutSecs = 300"
        ),
    );
    let (mock, _daemon, client, agent, _ws) = setup(&config).await;
    mock.push(Reply::openai_text(&["fine"]));
    let (_, events) = send_and_collect(&client, &agent.id, "hi").await;
    assert_eq!(finish_reason(&events), LoopFinishReason::Completed);
    let offered: Vec<String> = mock.requests()[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        offered.iter().any(|n| n == "echo") && offered.iter().any(|n| n == "bash"),
        "{offered:?}"
    );
    let notices: Vec<String> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Error { message, kind, .. } if kind == "toolsLeftOut" => {
                Some(message.clone())
            }
            _ => None,
        })
        .collect();
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(
        notices[0].contains("the MCP server \"stuck\" is still starting")
            && !notices[0].contains("\"slow\""),
        "{}",
        notices[0]
    );
}
