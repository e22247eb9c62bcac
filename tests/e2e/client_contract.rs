//! What a client author tripped on (issue 15 §2): `loopFinished` names its message, retry
//! notices are told from final errors by a field, a client joining mid-run gets a
//! consistent snapshot, cursors keep their order, params are checked by name and path,
//! images come in the MCP form and web URLs are refused, and messages rebuilt from events
//! are what the daemon stores.

use agentd_testkit::send::SendByName;
use std::time::Duration;

use agent_proto::rpc::AgentRpcClient;
use agent_proto::{
    AgentMode, Block, Event, EventKind, LoopFinishReason, MessageStatus, RetryNotice, ToolCallBlock,
};
use agentd_testkit::daemon::{DaemonOptions, TEST_API_KEY, TestDaemon};
use agentd_testkit::events::{collect_run, collect_until};
use agentd_testkit::mock_model::{MockModel, Reply};
use agentd_testkit::raw::{Framing, RawConn};
use agentd_testkit::rebuild::{Rebuild, visible};
use serde_json::{Value, json};

use crate::common::{ALLOW_ALL, bin, messages, new_agent, start_with, tool_scenario};

/// A daemon whose provider `mock` retries (10 ms, then 20 ms).
async fn retrying_daemon(mock: &MockModel) -> TestDaemon {
    let config = format!(
        "[defaults]\nprovider = \"mock\"\nmodel = \"mock-model\"\n\n[[providers]]\nid = \"mock\"\nkind = \"openai\"\nbase_url = \"{}\"\napi_key_env = \"MOCK_KEY\"\nretry_base_ms = 10\nmax_retries = 2\nmodels = [{{ id = \"mock-model\" }}]\n",
        mock.url()
    );
    let options = DaemonOptions {
        config_toml: config,
        env: vec![("MOCK_KEY".into(), TEST_API_KEY.into())],
    };
    TestDaemon::start_with(bin(), options).await
}

/// The `error` events of a transcript: (retry, retryable, kind).
fn errors(events: &[Event]) -> Vec<(Option<RetryNotice>, bool, String)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Error {
                retry,
                retryable,
                kind,
                ..
            } => Some((*retry, *retryable, kind.clone())),
            _ => None,
        })
        .collect()
}

fn loop_finished(events: &[Event]) -> (String, LoopFinishReason) {
    match &events.last().unwrap().kind {
        EventKind::LoopFinished {
            message_id, reason, ..
        } => (message_id.clone(), *reason),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn loop_finished_names_its_message_and_retry_notices_carry_retry() {
    let mock = MockModel::start().await;
    let daemon = retrying_daemon(&mock).await;
    let client = daemon.client().await;
    let agent = new_agent(&client, "retries").await;
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();

    // One retry, then an answer: a notice with retry, no final error.
    mock.push(Reply::status(429, r#"{"error":{"message":"slow down"}}"#));
    mock.push(Reply::openai_text(&["made it"]));
    let sent = client
        .send_plain(agent.id.clone(), "hello".into())
        .await
        .unwrap();
    let events = collect_run(&mut sub, Duration::from_secs(20)).await;
    assert_eq!(
        loop_finished(&events),
        (
            sent.assistant_message_id.clone(),
            LoopFinishReason::Completed
        )
    );
    let notes = errors(&events);
    assert_eq!(notes.len(), 1, "{notes:?}");
    let (retry, retryable, kind) = &notes[0];
    let retry = retry.expect("a retry notice carries retry");
    assert_eq!((retry.attempt, retry.max), (1, 2));
    assert!(
        (7..=13).contains(&retry.delay_ms),
        "10 ms ±25%: {}",
        retry.delay_ms
    );
    assert!(*retryable);
    assert_eq!(kind, "providerHttpError");

    // Every attempt fails: two notices, then the final error, which has no retry.
    for _ in 0..3 {
        mock.push(Reply::status(503, "down"));
    }
    let sent = client
        .send_plain(agent.id.clone(), "again".into())
        .await
        .unwrap();
    let events = collect_run(&mut sub, Duration::from_secs(20)).await;
    assert_eq!(
        loop_finished(&events),
        (sent.assistant_message_id.clone(), LoopFinishReason::Error)
    );
    let notes = errors(&events);
    let attempts: Vec<Option<u32>> = notes.iter().map(|(r, _, _)| r.map(|r| r.attempt)).collect();
    assert_eq!(attempts, [Some(1), Some(2), None], "{notes:?}");
    assert!(
        notes[2].1,
        "the final 503 is still retryable by a later send"
    );
    // The stored message keeps the final error only.
    let stored = messages(&client, &agent.id).await;
    let errors_kept = stored[3]
        .blocks
        .iter()
        .filter(|b| matches!(b, Block::Error { .. }))
        .count();
    assert_eq!(errors_kept, 1);
}

/// Text parts of `n` words, `w0 w1 ...`, tagged so two replies differ.
fn words(tag: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{tag}{i} ")).collect()
}

fn refs(parts: &[String]) -> Vec<&str> {
    parts.iter().map(String::as_str).collect()
}

/// A client that joins at a random point: subscribes with a snapshot, rebuilds `message_id`
/// from it and the events after it until the message is done, and returns it.
async fn join(
    daemon: &TestDaemon,
    agent_id: String,
    message_id: String,
    pause: Duration,
) -> (Vec<String>, String, u64) {
    tokio::time::sleep(pause).await;
    let client = daemon.client().await;
    let mut sub = client
        .subscribe_events(Some(agent_id), None, Some(true))
        .await
        .unwrap();
    let first = collect_until(&mut sub, Duration::from_secs(5), |_| true).await;
    let snapshot = &first[0];
    assert_eq!(snapshot.kind.type_name(), "snapshot");
    let joined_at = snapshot.seq;
    let mut rebuild = Rebuild::from_snapshot(snapshot);
    let mut last = joined_at;
    let done = |r: &Rebuild| {
        r.message(&message_id)
            .is_some_and(|m| m.status == MessageStatus::Done)
    };
    while !done(&rebuild) {
        let next = collect_until(&mut sub, Duration::from_secs(20), |_| true).await;
        let event = &next[0];
        assert_eq!(event.seq, last + 1, "no gap after the snapshot");
        last = event.seq;
        rebuild.apply(event);
    }
    let message = rebuild.message(&message_id).unwrap();
    (visible(message), message.text(), joined_at)
}

#[tokio::test]
async fn a_client_joining_mid_run_rebuilds_exactly_the_stored_message() {
    let (mock, daemon, client, agent, _dir) = tool_scenario(ALLOW_ALL).await.into_parts();
    let mut rng = agentd_testkit::race::rng(15);
    let mut join_points = Vec::new();
    for trial in 0..agentd_testkit::race::trials().max(3) {
        let first = words(&format!("a{trial}-"), 60);
        let second = words(&format!("b{trial}-"), 60);
        let id = format!("j{trial}");
        mock.push(
            Reply::openai_tool_calls(&refs(&first), &[(&id, "bash", r#"{"command": "echo hi"}"#)])
                .chunk_delay(Duration::from_millis(4)),
        );
        mock.push(Reply::openai_text(&refs(&second)).chunk_delay(Duration::from_millis(4)));
        let sent = client
            .send_plain(agent.id.clone(), format!("go {trial}").into())
            .await
            .unwrap();
        // Joiners land anywhere from before the first delta to after the end.
        let joiners: Vec<_> = (0..8)
            .map(|_| {
                let pause = Duration::from_micros(rng.next_u64() % 700_000);
                join(
                    &daemon,
                    agent.id.clone(),
                    sent.assistant_message_id.clone(),
                    pause,
                )
            })
            .collect();
        let rebuilt = futures::future::join_all(joiners).await;
        let stored = messages(&client, &agent.id)
            .await
            .into_iter()
            .find(|m| m.id == sent.assistant_message_id)
            .unwrap();
        let expected_text = format!("{}{}", first.concat(), second.concat());
        assert_eq!(stored.text(), expected_text);
        for (blocks, text, joined_at) in rebuilt {
            assert_eq!(text, stored.text(), "joined at seq {joined_at}");
            assert_eq!(blocks, visible(&stored), "joined at seq {joined_at}");
            join_points.push(joined_at);
        }
    }
    join_points.sort_unstable();
    join_points.dedup();
    assert!(
        join_points.len() > 6,
        "the joiners landed at few distinct points: {join_points:?}"
    );
}

#[tokio::test]
async fn blocks_rebuilt_from_events_are_the_stored_blocks_after_cancel_continue_and_regenerate() {
    let (mock, _daemon, client, agent, _dir) = tool_scenario(ALLOW_ALL).await.into_parts();
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    let mut rebuild = Rebuild::new();

    // A slow answer, cancelled after a few words.
    let slow = words("w", 100);
    mock.push(Reply::openai_text(&refs(&slow)).chunk_delay(Duration::from_millis(30)));
    let sent = client
        .send_plain(agent.id.clone(), "go".into())
        .await
        .unwrap();
    let id = sent.assistant_message_id.clone();
    let events = collect_until(
        &mut sub,
        Duration::from_secs(10),
        |e| matches!(&e.kind, EventKind::TextDelta { delta, .. } if delta == "w2 "),
    )
    .await;
    assert!(
        client
            .cancel_loop(agent.id.clone())
            .await
            .unwrap()
            .cancelled
    );
    let rest = collect_run(&mut sub, Duration::from_secs(10)).await;
    for e in events.iter().chain(&rest) {
        rebuild.apply(e);
    }
    let cancelled = stored_message(&client, &agent.id, &id).await;
    assert_eq!(cancelled.status, MessageStatus::Cancelled);
    assert_eq!(visible(rebuild.message(&id).unwrap()), visible(&cancelled));

    // A joiner now gets the cancelled message as stored.
    let mut joiner = client
        .subscribe_events(Some(agent.id.clone()), None, Some(true))
        .await
        .unwrap();
    let snapshot = collect_until(&mut joiner, Duration::from_secs(5), |_| true).await;
    match &snapshot[0].kind {
        EventKind::Snapshot {
            message: Some(m), ..
        } => assert_eq!(visible(m), visible(&cancelled)),
        other => panic!("{other:?}"),
    }

    // Continued: the continuation is a text block of its own, in both.
    mock.push(Reply::openai_tool_calls(
        &["and the rest. "],
        &[("c1", "bash", r#"{"command": "echo one"}"#)],
    ));
    mock.push(Reply::openai_text(&["Done."]));
    client.continue_loop(agent.id.clone()).await.unwrap();
    for e in &collect_run(&mut sub, Duration::from_secs(20)).await {
        rebuild.apply(e);
    }
    let continued = stored_message(&client, &agent.id, &id).await;
    let texts: Vec<&str> = continued
        .blocks
        .iter()
        .filter_map(|b| match b {
            Block::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(texts.len(), 3, "{texts:?}");
    assert!(texts[0].starts_with("w0 w1 w2 "), "{texts:?}");
    assert_eq!(texts[1..], ["and the rest. ", "Done."]);
    assert_eq!(visible(rebuild.message(&id).unwrap()), visible(&continued));

    // Regenerated: the variant starts with the earlier steps, which messageStarted carries.
    mock.push(Reply::openai_text(&["Done ", "again."]));
    let variant = client
        .regenerate(agent.id.clone(), id.clone())
        .await
        .unwrap()
        .assistant_message_id;
    let events = collect_run(&mut sub, Duration::from_secs(20)).await;
    for e in &events {
        rebuild.apply(e);
    }
    let stored_variant = stored_message(&client, &agent.id, &variant).await;
    assert!(
        stored_variant
            .blocks
            .iter()
            .any(|b| matches!(b, Block::ToolCall(ToolCallBlock { tool_call_id, .. }) if tool_call_id == "c1")),
        "the variant keeps the earlier step"
    );
    assert_eq!(
        visible(rebuild.message(&variant).unwrap()),
        visible(&stored_variant)
    );
}

async fn stored_message(
    client: &agent_proto::client::Client,
    agent_id: &str,
    id: &str,
) -> agent_proto::Message {
    messages(client, agent_id)
        .await
        .into_iter()
        .find(|m| m.id == id)
        .unwrap_or_else(|| panic!("message {id} is not stored"))
}

/// The error of a raw call: (kind, message).
fn raw_error(response: &Value) -> (String, String) {
    let error = &response["error"];
    assert!(error.is_object(), "expected an error: {response}");
    (
        error["data"]["kind"].as_str().unwrap().to_owned(),
        error["message"].as_str().unwrap().to_owned(),
    )
}

#[tokio::test]
async fn params_are_checked_by_name_and_by_path() {
    let (_mock, daemon) = start_with("").await;
    let client = daemon.client().await;
    let agent = new_agent(&client, "params").await;
    let mut conn = RawConn::connect(daemon.socket(), Framing::Ndjson).await;

    // An unknown name is refused, naming it, and nothing changes.
    let response = conn
        .call("updateAgent", json!({"agentId": agent.id, "mode": "agent"}))
        .await;
    let (kind, message) = raw_error(&response);
    assert_eq!(kind, "invalidParams");
    assert!(
        message.contains("unknown param \"mode\" for updateAgent"),
        "{message}"
    );
    assert_eq!(
        client.get_agent(agent.id.clone()).await.unwrap().mode,
        AgentMode::Chat
    );
    // A value of the wrong type is named by its path, not by a column.
    let response = conn
        .call(
            "sendMessage",
            json!({"agentId": agent.id, "content": [{"type": "text", "text": "look"},
                {"type": "image", "data": 5}]}),
        )
        .await;
    let (kind, message) = raw_error(&response);
    assert_eq!(kind, "invalidParams");
    assert!(message.contains("content[1].data"), "{message}");
    assert!(!message.contains("column"), "{message}");
    let response = conn
        .call("createAgent", json!({"settings": {"maxSteps": "ten"}}))
        .await;
    assert!(
        raw_error(&response).1.contains("settings.maxSteps"),
        "{response}"
    );
    let response = conn.call("getSession", json!({})).await;
    assert!(
        raw_error(&response).1.contains("missing param \"agentId\""),
        "{response}"
    );
    // A snapshot needs an agent, and starts where sinceSeq would not.
    for params in [
        json!({"snapshot": true}),
        json!({"agentId": agent.id, "snapshot": true, "sinceSeq": 1}),
    ] {
        let response = conn.call("subscribe", params).await;
        assert_eq!(raw_error(&response).0, "invalidParams", "{response}");
    }
    // The daemon answers the methods the schema describes, and says it sends snapshots.
    let init = client.initialize(None, None, None).await.unwrap();
    let mut described: Vec<String> = agent_proto::schema::methods()
        .into_iter()
        .map(|m| m.name.to_owned())
        .collect();
    described.sort();
    assert_eq!(init.capabilities.methods, described);
    assert!(init.capabilities.events.iter().any(|e| e == "snapshot"));
}

#[tokio::test]
async fn a_cursor_used_with_the_other_order_is_refused() {
    let (mock, daemon) = start_with("").await;
    let client = daemon.client().await;
    let agent = new_agent(&client, "pages").await;
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    for i in 0..2 {
        mock.push(Reply::openai_text(&["ok"]));
        client
            .send_plain(agent.id.clone(), format!("m{i}").into())
            .await
            .unwrap();
        collect_run(&mut sub, Duration::from_secs(10)).await;
    }
    let page = |order: &'static str, cursor: Option<String>| {
        let client = &client;
        let agent_id = agent.id.clone();
        async move {
            client
                .list_messages(
                    agent_id,
                    cursor,
                    Some(1),
                    Some(serde_json::from_value(json!(order)).unwrap()),
                )
                .await
        }
    };
    let first = page("desc", None).await.unwrap();
    let cursor = first.next_cursor.clone().unwrap();
    let second = page("desc", Some(cursor.clone())).await.unwrap();
    assert_eq!(second.messages.len(), 1);
    assert_ne!(second.messages[0].id, first.messages[0].id);
    let err = page("asc", Some(cursor)).await.unwrap_err();
    let (_, kind) = crate::common::error_of(&err);
    assert_eq!(kind, "invalidParams");
    assert!(err.to_string().contains("is for order"), "{err}");
    // Asc pages go forward the same way.
    let asc = page("asc", None).await.unwrap();
    let next = page("asc", asc.next_cursor.clone()).await.unwrap();
    assert_eq!(next.messages.len(), 1);
    assert!(page("desc", asc.next_cursor).await.is_err());
}

#[tokio::test]
async fn images_in_the_mcp_form_are_taken_and_web_urls_are_refused_without_a_fetch() {
    use base64::Engine as _;
    let (mock, daemon) = start_with("").await;
    let client = daemon.client().await;
    let agent = new_agent(&client, "images").await;
    let png = b"\x89PNG\r\n\x1a\nfake image";
    let b64 = base64::engine::general_purpose::STANDARD.encode(png);
    let mut conn = RawConn::connect(daemon.socket(), Framing::Ndjson).await;
    mock.push(Reply::openai_text(&["seen"]));
    let response = conn
        .call(
            "sendMessage",
            json!({"agentId": agent.id, "content": [{"type": "text", "text": "look"},
                {"type": "image", "data": b64, "mimeType": "image/png"}]}),
        )
        .await;
    assert!(
        response["result"]["userMessageId"].is_string(),
        "{response}"
    );
    let user = messages(&client, &agent.id).await.remove(0);
    let Some(Block::Image { mime_type, path }) = user.blocks.get(1) else {
        panic!("{:?}", user.blocks);
    };
    assert_eq!(mime_type, "image/png");
    assert_eq!(std::fs::read(path).unwrap(), png);
    // Web URLs are fetched under the network rule: e2e::attachments.
}

#[tokio::test]
async fn after_a_restart_a_snapshot_has_the_stored_message_and_status() {
    let (mock, mut daemon, client, agent, _dir) = tool_scenario("").await.into_parts();
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    // The run ends at a permission prompt (execute asks by default).
    let args = json!({"command": "echo asked"}).to_string();
    mock.push(Reply::openai_tool_calls(
        &["Let me run it. "],
        &[("c1", "bash", &args)],
    ));
    let sent = client
        .send_plain(agent.id.clone(), "run it".into())
        .await
        .unwrap();
    let events = collect_run(&mut sub, Duration::from_secs(10)).await;
    assert_eq!(
        loop_finished(&events),
        (
            sent.assistant_message_id.clone(),
            LoopFinishReason::WaitingPermission
        )
    );
    drop(sub);
    drop(client);
    assert!(daemon.terminate().await.success());
    daemon.restart().await;

    // Nothing ran since the restart: the snapshot is read from the store, at the last seq.
    let client = daemon.client().await;
    let last_seq = client.get_session(agent.id.clone()).await.unwrap().last_seq;
    let mut joiner = client
        .subscribe_events(Some(agent.id.clone()), None, Some(true))
        .await
        .unwrap();
    let first = collect_until(&mut joiner, Duration::from_secs(5), |_| true).await;
    let EventKind::Snapshot {
        status,
        message: Some(message),
        step_start,
    } = &first[0].kind
    else {
        panic!("{:?}", first[0]);
    };
    assert_eq!(first[0].seq, last_seq);
    assert_eq!(*status, agent_proto::SessionStatus::WaitingPermission);
    let stored = stored_message(&client, &agent.id, &sent.assistant_message_id).await;
    assert_eq!(message, &stored);
    assert_eq!(message.status, MessageStatus::Waiting);
    assert_eq!(
        *step_start,
        Some(u32::try_from(stored.blocks.len()).unwrap())
    );

    // The answer resumes the run; the joiner rebuilds the rest from the snapshot.
    mock.push(Reply::openai_text(&["It printed asked."]));
    let mut rebuild = Rebuild::from_snapshot(&first[0]);
    client
        .handle_permission_response(
            sent.assistant_message_id.clone(),
            "c1".into(),
            true,
            None,
            None,
        )
        .await
        .unwrap();
    let mut next = last_seq;
    for event in collect_run(&mut joiner, Duration::from_secs(20)).await {
        assert_eq!(event.seq, next + 1, "no gap after the snapshot");
        next = event.seq;
        rebuild.apply(&event);
    }
    let stored = stored_message(&client, &agent.id, &sent.assistant_message_id).await;
    assert_eq!(
        visible(rebuild.message(&sent.assistant_message_id).unwrap()),
        visible(&stored)
    );
}
