//! SIGHUP reloads the config file: providers, permissions, profiles and MCP servers change
//! live, a run under way goes on untouched, sections read only at start are named in the
//! log, and a file that does not load changes nothing.

use agentd_testkit::send::SendByName;
use std::time::Duration;

use agent_proto::rpc::AgentRpcClient;
use agent_proto::{LoopFinishReason, McpServerStatus, ToolCallStatus};
use agentd_testkit::daemon::openai_config_with;
use agentd_testkit::events::{collect_run, finish_reason};
use agentd_testkit::mock_model::Reply;
use agentd_testkit::wait::eventually;
use nix::sys::signal::Signal;

use crate::common::{run_bash_granted, start_with, tool_agent};
use crate::mcp::{stdio_server, wait_status};

/// Sends SIGHUP and waits for the log to say the `n`-th reload was done or refused.
async fn hangup(daemon: &agentd_testkit::daemon::TestDaemon, n: usize) -> String {
    daemon.signal(Signal::SIGHUP);
    eventually(
        Duration::from_secs(20),
        "the reload to be logged",
        async || {
            let log = daemon.log();
            let seen = log.matches("SIGHUP: config reloaded").count()
                + log
                    .matches("SIGHUP: the config file was not reloaded")
                    .count();
            if seen >= n { Ok(log) } else { Err(seen) }
        },
    )
    .await
}

#[tokio::test]
async fn sighup_reloads_providers_permissions_profiles_and_mcp_servers_without_touching_runs() {
    let (mock, daemon) = start_with("").await;
    let client = daemon.client().await;
    let (agent, _dir) = tool_agent(&client, None).await;
    // A run under way through the reload: its answer streams slowly.
    mock.push(
        Reply::openai_text(&["one ", "two ", "three ", "four ", "five"])
            .chunk_delay(Duration::from_millis(100)),
    );
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    client
        .send_plain(agent.id.clone(), "slow".into())
        .await
        .unwrap();

    let dir = tempfile::tempdir().unwrap();
    let extra = format!(
        "[permissions]\nexecute = \"allow\"\n\n\
         [[providers]]\nid = \"second\"\nkind = \"openai\"\nbase_url = \"{}\"\n\
         api_key = \"k\"\nmodels = [{{ id = \"m2\" }}]\n\n\
         [[profiles]]\nname = \"reloaded\"\nextends = \"coder\"\n\n\
         [limits]\nmax_connections = 7\n\n{}",
        mock.url(),
        stdio_server("hup", &dir.path().join("hup.log"), &[], "")
    );
    std::fs::write(
        daemon.config_path(),
        openai_config_with(&mock.url(), &extra),
    )
    .unwrap();
    let log = hangup(&daemon, 1).await;

    // The run went on and finished as it would have.
    let events = collect_run(&mut sub, Duration::from_secs(30)).await;
    assert_eq!(finish_reason(&events), LoopFinishReason::Completed);
    assert!(
        log.contains("these sections changed in the config file but are read only at start")
            && log.contains("sections=\"limits\""),
        "{log}"
    );
    let providers = client.list_providers().await.unwrap().providers;
    assert!(providers.iter().any(|p| p.id == "second"), "{providers:?}");
    let profiles = client.list_profiles().await.unwrap().profiles;
    assert!(profiles.iter().any(|p| p.name == "reloaded"));
    wait_status(&client, "hup", McpServerStatus::Ready).await;
    // The new permissions: a command runs without a prompt.
    let (status, _, prompt) = run_bash_granted(
        &mock,
        &client,
        &agent.id,
        serde_json::json!({"command": "true"}),
    )
    .await;
    assert_eq!(status, ToolCallStatus::Success);
    assert!(
        prompt.is_none(),
        "asked after execute = \"allow\" was loaded"
    );

    // A file that does not load changes nothing, and the daemon serves on.
    std::fs::write(daemon.config_path(), "[[providers]\nbroken").unwrap();
    let log = hangup(&daemon, 2).await;
    assert!(log.contains("the config file was not reloaded"), "{log}");
    let providers = client.list_providers().await.unwrap().providers;
    assert!(providers.iter().any(|p| p.id == "second"));

    // Servers the file no longer names stop; the first provider set comes back.
    std::fs::write(daemon.config_path(), openai_config_with(&mock.url(), "")).unwrap();
    hangup(&daemon, 3).await;
    let servers = client.list_mcp_servers().await.unwrap().servers;
    assert!(servers.iter().all(|s| s.spec.name != "hup"), "{servers:?}");
    let providers = client.list_providers().await.unwrap().providers;
    assert!(providers.iter().all(|p| p.id != "second"));
    assert!(daemon.socket().exists());
}
