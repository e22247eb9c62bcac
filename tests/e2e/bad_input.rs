//! Bad input gets a clear JSON-RPC error (or drops only its own connection); the daemon
//! keeps serving everyone else.

use std::time::Duration;

use agent_proto::MAX_FRAME_BYTES;
use agent_proto::rpc::AgentRpcClient;
use agentd_testkit::events::{collect_run, text_of};
use agentd_testkit::mock_model::Reply;
use agentd_testkit::raw::{Framing, RawConn};
use serde_json::{Value, json};

use crate::common::{new_agent, start};

fn code_and_kind(reply: &Value) -> (i64, String) {
    (
        reply["error"]["code"]
            .as_i64()
            .unwrap_or_else(|| panic!("not an error: {reply}")),
        reply["error"]["data"]["kind"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    )
}

#[tokio::test]
async fn malformed_frames_get_errors_and_the_connection_stays_usable() {
    let (_mock, daemon) = start().await;
    let mut conn = RawConn::connect(daemon.socket(), Framing::Ndjson).await;

    conn.send_raw(b"{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \n")
        .await;
    let reply = conn.recv().await;
    assert_eq!(code_and_kind(&reply), (-32700, "parseError".into()));
    assert_eq!(reply["id"], Value::Null);

    let reply = conn.call("noSuchMethod", json!({})).await;
    assert_eq!(code_and_kind(&reply).0, -32601);

    let reply = conn.call("createAgent", json!({"title": 5})).await;
    assert_eq!(code_and_kind(&reply), (-32602, "invalidParams".into()));
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("title: expected string or null, got an integer"),
        "{reply}"
    );

    let reply = conn.call("getAgent", json!({})).await;
    assert_eq!(code_and_kind(&reply).0, -32602, "missing agentId: {reply}");

    let reply = conn.call("listAgents", json!({"limit": "ten"})).await;
    assert_eq!(code_and_kind(&reply).0, -32602);

    conn.send(&json!({"jsonrpc": "1.0", "id": 3, "method": "listAgents"}))
        .await;
    let reply = conn.recv().await;
    assert_eq!(
        (code_and_kind(&reply).0, reply["id"].clone()),
        (-32600, json!(3))
    );

    // A frame over 16 MiB: an error, then the next line works.
    let mut huge =
        br#"{"jsonrpc":"2.0","id":9,"method":"createAgent","params":{"title":""#.to_vec();
    huge.extend(std::iter::repeat_n(b'x', MAX_FRAME_BYTES));
    huge.extend_from_slice(b"\"}}\n");
    conn.send_raw(&huge).await;
    let reply = conn.recv().await;
    assert_eq!(code_and_kind(&reply), (-32005, "inputTooLarge".into()));
    let reply = conn.call("listAgents", json!({})).await;
    assert!(reply["result"]["agents"].is_array(), "{reply}");
}

#[tokio::test]
async fn content_length_limits_and_bad_headers() {
    let (_mock, daemon) = start().await;
    let mut conn = RawConn::connect(daemon.socket(), Framing::ContentLength).await;
    let body = vec![b' '; MAX_FRAME_BYTES + 1];
    let mut frame = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    frame.extend_from_slice(&body);
    conn.send_raw(&frame).await;
    let reply = conn.recv().await;
    assert_eq!(code_and_kind(&reply), (-32005, "inputTooLarge".into()));
    let reply = conn.call("listAgents", json!({})).await;
    assert!(
        reply["result"]["agents"].is_array(),
        "resynced after skipping: {reply}"
    );

    // A header block without Content-Length cannot be resynced: error, then closed.
    let mut bad = RawConn::connect(daemon.socket(), Framing::ContentLength).await;
    bad.send_raw(b"Content-Type: application/json\r\n\r\n{}")
        .await;
    let reply = bad.recv().await;
    assert_eq!(code_and_kind(&reply).0, -32600);
    assert!(bad.is_closed(Duration::from_secs(5)).await);
}

#[tokio::test]
async fn user_text_over_the_limit_is_rejected_and_nothing_is_stored() {
    let (_mock, daemon) = start().await;
    let client = daemon.client().await;
    let agent = new_agent(&client, "limits").await;
    let mut conn = RawConn::connect(daemon.socket(), Framing::Ndjson).await;
    let text = "é".repeat(agent_proto::MAX_USER_TEXT_CHARS + 1);
    let reply = conn
        .call("sendMessage", json!({"agentId": agent.id, "content": text}))
        .await;
    assert_eq!(code_and_kind(&reply), (-32005, "inputTooLarge".into()));
    let listed = client
        .list_messages(agent.id.clone(), None, None, None)
        .await
        .unwrap();
    assert!(listed.messages.is_empty());
    let reply = conn
        .call(
            "sendMessage",
            json!({"agentId": agent.id, "content": "   "}),
        )
        .await;
    assert_eq!(code_and_kind(&reply).1, "invalidParams");
}

#[tokio::test]
async fn a_client_vanishing_mid_stream_harms_nobody() {
    let (mock, daemon) = start().await;
    let client = daemon.client().await;
    let agent = new_agent(&client, "vanish").await;
    let mut steady = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();

    let mut leaver = RawConn::connect(daemon.socket(), Framing::Ndjson).await;
    leaver.call("subscribe", json!({"agentId": agent.id})).await;
    let parts: Vec<String> = (0..40).map(|i| format!("p{i} ")).collect();
    let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
    mock.push(Reply::openai_text(&parts).chunk_delay(Duration::from_millis(10)));
    leaver
        .call("sendMessage", json!({"agentId": agent.id, "content": "go"}))
        .await;
    leaver.next_notification().await;
    drop(leaver); // gone mid-stream, with events still coming

    let events = collect_run(&mut steady, Duration::from_secs(20)).await;
    assert_eq!(text_of(&events), parts.concat());
    let session = client.get_session(agent.id.clone()).await.unwrap();
    assert_eq!(session.status, agent_proto::SessionStatus::Idle);
}
