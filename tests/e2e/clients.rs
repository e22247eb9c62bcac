//! Several clients on one agent, speaking both framings, see the same events in order.

use std::time::Duration;

use agentd_testkit::mock_model::Reply;
use agentd_testkit::raw::{Framing, RawConn};
use serde_json::{Value, json};

use crate::common::start;

/// Reads notifications until the run's loopFinished; returns (seq, type, delta) of each.
async fn read_run(conn: &mut RawConn) -> Vec<(u64, String, String)> {
    let mut out = Vec::new();
    loop {
        let note = tokio::time::timeout(Duration::from_secs(20), conn.next_notification())
            .await
            .expect("a notification within 20 s");
        assert_eq!(note["method"], "event", "{note}");
        let event = &note["params"]["result"];
        let kind = event["type"].as_str().unwrap().to_owned();
        out.push((
            event["seq"].as_u64().unwrap(),
            kind.clone(),
            event["delta"].as_str().unwrap_or_default().to_owned(),
        ));
        if kind == "loopFinished" {
            return out;
        }
    }
}

#[tokio::test]
async fn ndjson_and_content_length_clients_share_one_agent() {
    let (mock, daemon) = start().await;
    let mut lines = RawConn::connect(daemon.socket(), Framing::Ndjson).await;
    let mut editor = RawConn::connect(daemon.socket(), Framing::ContentLength).await;

    let created = editor.call("createAgent", json!({"title": "shared"})).await;
    let agent_id = created["result"]["id"].as_str().unwrap().to_owned();
    for conn in [&mut lines, &mut editor] {
        let sub = conn.call("subscribe", json!({"agentId": agent_id})).await;
        assert!(
            sub["result"].is_number() || sub["result"].is_string(),
            "{sub}"
        );
    }
    mock.push(Reply::openai_text(&["one ", "two ", "three"]).chunk_delay(Duration::from_millis(5)));
    let sent = lines
        .call(
            "sendMessage",
            json!({"agentId": agent_id, "content": "count"}),
        )
        .await;
    assert!(sent["result"]["assistantMessageId"].is_string(), "{sent}");

    let seen_by_lines = read_run(&mut lines).await;
    let seen_by_editor = read_run(&mut editor).await;
    assert_eq!(seen_by_lines, seen_by_editor);
    let text: String = seen_by_lines
        .iter()
        .filter(|(_, t, _)| t == "textDelta")
        .map(|(_, _, d)| d.as_str())
        .collect();
    assert_eq!(text, "one two three");
    let seqs: Vec<u64> = seen_by_lines.iter().map(|(s, _, _)| *s).collect();
    assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "{seqs:?}");

    // The editor's answers come back in its own framing (RawConn would fail otherwise).
    let listed = editor
        .call("listMessages", json!({"agentId": agent_id}))
        .await;
    assert_eq!(listed["result"]["messages"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn batches_and_string_ids() {
    let (_mock, daemon) = start().await;
    let mut conn = RawConn::connect(daemon.socket(), Framing::Ndjson).await;
    conn.send(&json!([
        {"jsonrpc": "2.0", "id": "a", "method": "initialize", "params": {"clientName": "t"}},
        {"jsonrpc": "2.0", "method": "initialize"},
        {"jsonrpc": "2.0", "id": 7, "method": "listProviders"}
    ]))
    .await;
    let reply = conn.recv().await;
    let items = reply.as_array().expect("a batch answer is an array");
    assert_eq!(items.len(), 2, "the notification gets no answer: {reply}");
    let by_id = |id: Value| items.iter().find(|r| r["id"] == id).unwrap().clone();
    assert_eq!(by_id(json!("a"))["result"]["protocolVersion"], 1);
    let providers = by_id(json!(7));
    assert_eq!(providers["result"]["providers"][0]["id"], "demo");
    assert_eq!(providers["result"]["providers"][1]["id"], "mock");
    assert_eq!(providers["result"]["providers"][1]["isDefault"], true);
    assert_eq!(providers["result"]["providers"][1]["hasApiKey"], true);

    let models = conn.call("listModels", json!({"provider": "mock"})).await;
    assert_eq!(models["result"]["models"][0]["id"], "mock-model");
    assert_eq!(models["result"]["models"][0]["contextWindow"], 32768);
}
