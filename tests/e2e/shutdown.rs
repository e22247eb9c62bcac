//! Graceful shutdown: SIGTERM during a tool call stops the run at once (the tool's
//! processes go, the call is `interrupted`), removes the socket and exits 0; a second
//! signal during a slow shutdown exits at once (130) and still leaves no MCP server behind.

use agentd_testkit::send::SendByName;
use std::time::{Duration, Instant};

use agent_proto::rpc::AgentRpcClient;
use agent_proto::{EventKind, MessageStatus, ToolCallStatus};
use agentd_testkit::events::collect_until;
use agentd_testkit::mock_model::Reply;
use agentd_testkit::wait::eventually;
use nix::sys::signal::Signal;

use crate::common::{ALLOW_ALL, messages, start_with, tool_scenario};
use agent_proto::ToolCallBlock;

#[tokio::test]
async fn sigterm_mid_tool_stops_the_run_saves_it_and_exits_zero() {
    let (mock, mut daemon, client, agent, _ws) = tool_scenario(ALLOW_ALL).await.into_parts();
    let marker = format!("sleep 31.{}", std::process::id());
    mock.push(Reply::openai_tool_calls(
        &["waiting "],
        &[(
            "t1",
            "bash",
            &serde_json::json!({"command": marker}).to_string(),
        )],
    ));
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    client
        .send_plain(agent.id.clone(), "sleep".into())
        .await
        .unwrap();
    collect_until(&mut sub, Duration::from_secs(20), |e| {
        matches!(e.kind, EventKind::ToolCallReady { .. })
    })
    .await;
    agentd_testkit::procs::wait_running(&marker, 1, Duration::from_secs(10), "the tool to start")
        .await;
    drop(sub);
    drop(client);
    let asked = Instant::now();
    let status = daemon.terminate().await;
    let took = asked.elapsed();
    assert!(status.success(), "{status:?}");
    assert!(!daemon.socket().exists());
    agentd_testkit::procs::wait_gone(&marker, Duration::from_secs(5)).await;
    eprintln!("SIGTERM during a tool: exited 0 after {took:?}");

    daemon.restart().await;
    let client = daemon.client().await;
    let stored = messages(&client, &agent.id).await;
    let answer = &stored[1];
    assert_eq!(answer.status, MessageStatus::Interrupted);
    assert!(answer.text().starts_with("waiting"));
    let call = answer
        .blocks
        .iter()
        .find_map(|b| match b {
            agent_proto::Block::ToolCall(ToolCallBlock { status, result, .. }) => {
                Some((*status, result.clone()))
            }
            _ => None,
        })
        .unwrap();
    assert_eq!(call.0, ToolCallStatus::Interrupted);
    assert!(
        call.1.is_some(),
        "the call has a result for the next request"
    );
}

#[tokio::test]
async fn a_second_signal_exits_at_once_and_leaves_no_mcp_server() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("stubborn.log").display().to_string();
    let server =
        std::path::Path::new(env!("CARGO_BIN_EXE_agentd")).with_file_name("mcp-test-server");
    assert!(
        server.exists(),
        "build mcp-test-server (cargo build -p agentd-testkit --bins)"
    );
    // An MCP server whose process group ignores SIGTERM and lingers after its stdin
    // closes: stopping it takes the 2 s until SIGKILL.
    let config = format!(
        "[[mcp_servers]]\nname = \"stubborn\"\ncommand = \"sh\"\nargs = [\"-c\", \"trap '' TERM; {} --log {marker}; sleep 30\"]\n",
        server.display()
    );
    let (_mock, mut daemon) = start_with(&config).await;
    let client = daemon.client().await;
    eventually(
        Duration::from_secs(20),
        "the server to be ready",
        async || {
            let servers = client.list_mcp_servers().await.unwrap().servers;
            if servers[0].status == agent_proto::McpServerStatus::Ready {
                Ok(())
            } else {
                Err(servers)
            }
        },
    )
    .await;
    assert!(!agentd_testkit::procs::with_marker(&marker).is_empty());
    drop(client);
    daemon.signal(Signal::SIGTERM);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let asked = Instant::now();
    daemon.signal(Signal::SIGINT);
    let status = daemon.wait_exit(Duration::from_secs(5)).await;
    let took = asked.elapsed();
    // 130: the second signal's exit, not the first one's graceful 0 after SIGKILL.
    assert_eq!(status.code(), Some(130), "{status:?}");
    agentd_testkit::procs::wait_gone(&marker, Duration::from_secs(5)).await;
    eprintln!("second signal: exited 130 after {took:?}");
}

#[tokio::test]
async fn a_subscriber_gets_a_runs_last_events_before_the_daemon_closes_its_connection() {
    // Several tries: the events of the run's end and the closing of connections race.
    for _ in 0..5 {
        let (mock, mut daemon) = start_with("").await;
        let client = daemon.client().await;
        let agent = crate::common::new_agent(&client, "closing").await;
        mock.push(Reply::openai_text(&["first ", "never"]).stall_after(1));
        let mut sub = client
            .subscribe_events(Some(agent.id.clone()), None, None)
            .await
            .unwrap();
        client
            .send_plain(agent.id.clone(), "go".into())
            .await
            .unwrap();
        collect_until(&mut sub, Duration::from_secs(20), |e| {
            matches!(e.kind, EventKind::TextDelta { .. })
        })
        .await;
        daemon.signal(Signal::SIGTERM);
        // Everything up to the end of the connection: the run's end must be in it.
        let mut kinds = Vec::new();
        while let Ok(Some(Ok(event))) =
            tokio::time::timeout(Duration::from_secs(20), sub.next()).await
        {
            kinds.push(event.kind.type_name());
        }
        assert!(
            kinds.contains(&"loopFinished"),
            "the connection closed before the run's last events: {kinds:?}"
        );
        daemon.wait_exit(Duration::from_secs(10)).await;
    }
}
