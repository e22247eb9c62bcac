//! cancelLoop mid-stream aborts the model's HTTP stream and keeps the partial text.

use agentd_testkit::send::SendByName;
use std::time::{Duration, Instant};

use agent_proto::rpc::AgentRpcClient;
use agent_proto::{EventKind, LoopFinishReason, MessageStatus};
use agentd_testkit::events::{collect_run, collect_until_text, text_of};
use agentd_testkit::mock_model::Reply;

use crate::common::{before_environment, messages, new_agent, start};

#[tokio::test]
async fn cancel_mid_stream_keeps_partial_text() {
    let (mock, daemon) = start().await;
    let client = daemon.client().await;
    let agent = new_agent(&client, "cancel").await;
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    let parts: Vec<String> = (0..200).map(|i| format!("w{i} ")).collect();
    let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
    mock.push(Reply::openai_text(&parts).chunk_delay(Duration::from_millis(50)));
    let sent = client
        .send_plain(agent.id.clone(), "go".into())
        .await
        .unwrap();

    let mut events = collect_until_text(&mut sub, Duration::from_secs(10), "w2 ").await;
    let asked = Instant::now();
    let cancelled = client.cancel_loop(agent.id.clone()).await.unwrap();
    assert!(cancelled.cancelled);
    events.extend(collect_run(&mut sub, Duration::from_secs(5)).await);
    let finished_after = asked.elapsed();
    let disconnect = mock.wait_disconnect(Duration::from_secs(5)).await;
    eprintln!(
        "cancel: loopFinished after {finished_after:?}, model connection closed after {:?}",
        disconnect.at.saturating_duration_since(asked)
    );

    assert_eq!(
        events.last().unwrap().kind,
        EventKind::LoopFinished {
            message_id: sent.assistant_message_id.clone(),
            reason: LoopFinishReason::Cancelled,
            error: None
        }
    );
    assert!(events.iter().any(|e| e.kind
        == EventKind::MessageCompleted {
            message_id: sent.assistant_message_id.clone(),
            status: MessageStatus::Cancelled,
            structured_output: None,
        }));
    let streamed = text_of(&events);
    assert!(streamed.starts_with("w0 w1 w2 "), "{streamed}");
    assert!(!streamed.contains("w199"), "the stream stopped early");
    let stored = messages(&client, &agent.id).await;
    assert_eq!(stored[1].status, MessageStatus::Cancelled);
    assert_eq!(
        stored[1].text(),
        streamed,
        "the partial text is kept exactly"
    );

    // Idempotent, and the agent is usable again.
    assert!(
        !client
            .cancel_loop(agent.id.clone())
            .await
            .unwrap()
            .cancelled
    );
    mock.push(Reply::openai_text(&["after"]));
    client
        .send_plain(agent.id.clone(), "again".into())
        .await
        .unwrap();
    let events = collect_run(&mut sub, Duration::from_secs(10)).await;
    assert_eq!(text_of(&events), "after");
    // The cancelled partial answer is part of the history the model sees next.
    let body = &mock.requests()[1].body;
    // After the system prompt (the environment section alone) and the first question.
    let system = body["messages"][0]["content"].as_str().unwrap();
    assert_eq!(before_environment(system, "none", "no", "none"), "");
    assert_eq!(body["messages"][2]["content"].as_str().unwrap(), streamed);
}

#[tokio::test]
async fn cancel_before_the_first_byte() {
    let (mock, daemon) = start().await;
    let client = daemon.client().await;
    let agent = new_agent(&client, "early").await;
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    mock.push(Reply::openai_text(&["never"]).first_byte_delay(Duration::from_secs(30)));
    client
        .send_plain(agent.id.clone(), "go".into())
        .await
        .unwrap();
    mock.wait_requests(1, Duration::from_secs(10)).await;
    assert!(
        client
            .cancel_loop(agent.id.clone())
            .await
            .unwrap()
            .cancelled
    );
    let events = collect_run(&mut sub, Duration::from_secs(5)).await;
    assert_eq!(text_of(&events), "");
    let stored = messages(&client, &agent.id).await;
    assert_eq!(stored[1].status, MessageStatus::Cancelled);
    assert!(stored[1].blocks.is_empty());
}
