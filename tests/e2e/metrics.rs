//! `GET /metrics` on the web listener: what the daemon counted, as Prometheus scrapes it
//! (the series are docs/metrics.md's; their counting is unit-tested in `agentd::metrics`).

use std::time::Duration;

use agent_proto::rpc::AgentRpcClient;
use agentd::metrics::value_of;
use agentd_testkit::daemon::{DaemonOptions, TestDaemon, openai_config};
use agentd_testkit::events::collect_run;
use agentd_testkit::mock_model::{MockModel, Reply};
use agentd_testkit::send::SendByName;
use serde_json::json;

use crate::common::{bin, new_agent};

/// The metrics text, scraped with the listener's token.
async fn scrape(daemon: &TestDaemon) -> String {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let response = reqwest::Client::new()
        .get(format!("{}/metrics", daemon.web_origin()))
        .bearer_auth(daemon.listen_token())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let kind = response.headers()["content-type"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(kind.starts_with("application/openmetrics-text"), "{kind}");
    response.text().await.unwrap()
}

#[tokio::test]
async fn a_run_its_tools_tokens_model_calls_and_errors_are_counted() {
    let mock = MockModel::start().await;
    let options = DaemonOptions {
        config_toml: openai_config(&mock.url()),
        env: vec![("AGENTD_LISTEN".into(), "127.0.0.1:0".into())],
    };
    let daemon = TestDaemon::start_with(bin(), options).await;
    let client = daemon.client().await;
    let agent = new_agent(&client, "counted").await;
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    mock.push(Reply::openai_tool_call("c1", "no_such_tool", json!({})));
    mock.push(Reply::openai_text(&["done"]));
    client
        .send_plain(agent.id.clone(), "go".into())
        .await
        .unwrap();
    collect_run(&mut sub, Duration::from_secs(10)).await;
    assert!(client.get_agent("no-such-agent".into()).await.is_err());

    let text = scrape(&daemon).await;
    let value =
        |series: &str| value_of(&text, series).unwrap_or_else(|| panic!("no {series} in:\n{text}"));
    assert_eq!(value("agentd_runs_started_total"), 1.0, "{text}");
    assert_eq!(
        value(r#"agentd_runs_ended_total{outcome="completed"}"#),
        1.0
    );
    assert_eq!(
        value(r#"agentd_tool_calls_total{tool="unknown",result="error"}"#),
        1.0
    );
    // Two answers of the mock: 11 prompt tokens each, one completion token per call or
    // text part.
    assert_eq!(value(r#"agentd_tokens_total{direction="input"}"#), 22.0);
    assert_eq!(value(r#"agentd_tokens_total{direction="output"}"#), 2.0);
    assert_eq!(
        value(r#"agentd_model_request_seconds_count{provider="mock",outcome="ok"}"#),
        2.0
    );
    assert_eq!(
        value(r#"agentd_model_first_token_seconds_count{provider="mock"}"#),
        2.0
    );
    assert_eq!(
        value(r#"agentd_rpc_errors_total{kind="agentNotFound"}"#),
        1.0
    );
    assert_eq!(value(r#"agentd_agents{status="idle"}"#), 1.0);
    assert!(value(r#"agentd_connections_open{transport="unix"}"#) >= 1.0);
    assert!(value(r#"agentd_connections_accepted_total{transport="unix"}"#) >= 1.0);
    assert!(text.ends_with("# EOF\n"));

    // A WebSocket connection is counted open while it is, by its transport.
    let ws = daemon.ws_client().await;
    ws.get_agent(agent.id.clone()).await.unwrap();
    let text = scrape(&daemon).await;
    assert_eq!(
        value_of(&text, r#"agentd_connections_open{transport="websocket"}"#),
        Some(1.0),
        "{text}"
    );
}
