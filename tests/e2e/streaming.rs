//! A message streams from the model to every subscriber and into the store.

use agentd_testkit::send::{SendByName, SendOptions};
use std::time::Duration;

use agent_proto::rpc::AgentRpcClient;
use agent_proto::{Block, EventKind, LoopFinishReason, MessageStatus, Role, SessionStatus};
use agentd_testkit::events::{assert_seq_contiguous, collect_run, text_of, type_names_joined};
use agentd_testkit::mock_model::Reply;
use serde_json::json;

use crate::common::{before_environment, error_of, messages, new_agent, start};

const RUN: Duration = Duration::from_secs(20);

#[tokio::test]
async fn a_message_streams_and_is_stored_with_history() {
    let (mock, daemon) = start().await;
    let client = daemon.client().await;
    let agent = new_agent(&client, "chat").await;
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();

    mock.push(Reply::openai_text(&["Hel", "lo", " wor", "ld!"]));
    let sent = client
        .send_plain(agent.id.clone(), "hi there".into())
        .await
        .unwrap();
    let events = collect_run(&mut sub, RUN).await;
    assert_seq_contiguous(&events);
    assert_eq!(text_of(&events), "Hello world!");
    // The four pieces may arrive as fewer deltas (pieces already waiting are joined).
    assert_eq!(
        type_names_joined(&events),
        [
            "userMessage",
            "statusChanged",
            "messageStarted",
            "textDelta",
            "usage",
            "messageCompleted",
            "statusChanged",
            "loopFinished"
        ]
    );
    match &events[0].kind {
        EventKind::UserMessage { message } => {
            assert_eq!(message.id, sent.user_message_id);
            assert_eq!(message.text(), "hi there");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        events[1].kind,
        EventKind::StatusChanged {
            status: SessionStatus::Generating
        }
    );
    assert_eq!(
        events[2].kind,
        EventKind::MessageStarted {
            message_id: sent.assistant_message_id.clone(),
            message: None,
        }
    );
    let usage = events
        .iter()
        .find(|e| matches!(e.kind, EventKind::Usage { .. }))
        .unwrap();
    assert_eq!(
        usage.kind,
        EventKind::Usage {
            message_id: sent.assistant_message_id.clone(),
            input_tokens: 11,
            output_tokens: 4
        }
    );
    assert_eq!(
        events.last().unwrap().kind,
        EventKind::LoopFinished {
            message_id: sent.assistant_message_id.clone(),
            reason: LoopFinishReason::Completed,
            error: None
        }
    );

    let stored = messages(&client, &agent.id).await;
    assert_eq!(stored.len(), 2);
    assert_eq!(
        (stored[0].role, stored[0].text().as_str()),
        (Role::User, "hi there")
    );
    assert_eq!(stored[1].id, sent.assistant_message_id);
    assert_eq!(
        (stored[1].status, stored[1].text().as_str()),
        (MessageStatus::Done, "Hello world!")
    );
    assert_eq!(
        stored[1].usage.map(|u| (u.input_tokens, u.output_tokens)),
        Some((11, 4))
    );
    let session = client.get_session(agent.id.clone()).await.unwrap();
    assert_eq!(session.status, SessionStatus::Idle);
    assert_eq!(session.last_seq, events.last().unwrap().seq);

    // The second turn carries the history.
    mock.push(Reply::openai_text(&["Second."]));
    client
        .send_plain(agent.id.clone(), "again".into())
        .await
        .unwrap();
    let events = collect_run(&mut sub, RUN).await;
    assert_eq!(text_of(&events), "Second.");
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1].path, "/v1/chat/completions");
    assert_eq!(requests[1].body["model"], "mock-model");
    assert_eq!(requests[1].body["stream"], true);
    let sent = requests[1].body["messages"].as_array().unwrap();
    // No prompt of its own and no profile: the system prompt is the environment section.
    assert_eq!(sent[0]["role"], "system");
    let system = sent[0]["content"].as_str().unwrap();
    assert_eq!(before_environment(system, "none", "no", "none"), "");
    assert_eq!(
        sent[1..],
        [
            json!({"role": "user", "content": "hi there"}),
            json!({"role": "assistant", "content": "Hello world!"}),
            json!({"role": "user", "content": "again"})
        ]
    );
}

#[tokio::test]
async fn reasoning_streams_separately_and_system_prompt_is_sent() {
    let (mock, daemon) = start().await;
    let client = daemon.client().await;
    let agent = client
        .create_agent(
            None,
            None,
            None,
            None,
            Some("You are terse.".into()),
            None,
            None,
            None,
            None,
        )
        .await
        .unwrap();
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    mock.push(Reply::openai_reasoning_text(
        &["Let me ", "think."],
        &["Done."],
    ));
    let sent = client
        .send_plain(agent.id.clone(), "q".into())
        .await
        .unwrap();
    let events = collect_run(&mut sub, RUN).await;
    let reasoning: String = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ReasoningDelta { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(reasoning, "Let me think.");
    assert_eq!(text_of(&events), "Done.");
    let stored = messages(&client, &agent.id).await;
    assert_eq!(
        stored[1].blocks,
        vec![
            Block::reasoning("Let me think."),
            Block::Text {
                text: "Done.".into()
            }
        ]
    );
    assert_eq!(stored[1].id, sent.assistant_message_id);
    let body = &mock.requests()[0].body;
    assert_eq!(body["messages"][0]["role"], "system");
    let system = body["messages"][0]["content"].as_str().unwrap();
    assert_eq!(
        before_environment(system, "none", "no", "none"),
        "You are terse."
    );
}

#[tokio::test]
async fn a_second_send_during_a_run_is_agent_busy_and_retries_are_idempotent() {
    let (mock, daemon) = start().await;
    let client = daemon.client().await;
    let agent = new_agent(&client, "busy").await;
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    mock.push(Reply::openai_text(&["slow ", "answer"]).chunk_delay(Duration::from_millis(300)));
    let first = client
        .send_with(
            agent.id.clone(),
            "one".into(),
            SendOptions {
                client_request_id: Some("req-1".into()),
                ..SendOptions::default()
            },
        )
        .await
        .unwrap();
    let err = client
        .send_plain(agent.id.clone(), "two".into())
        .await
        .unwrap_err();
    assert_eq!(error_of(&err), (-32002, "agentBusy".into()));
    // The same clientRequestId returns the same ids and starts nothing new.
    let again = client
        .send_with(
            agent.id.clone(),
            "one".into(),
            SendOptions {
                client_request_id: Some("req-1".into()),
                ..SendOptions::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(again, first);
    let session = client.get_session(agent.id.clone()).await.unwrap();
    assert_eq!(session.status, SessionStatus::Generating);
    assert_eq!(
        session.run_message_id.as_deref(),
        Some(first.assistant_message_id.as_str())
    );
    let events = collect_run(&mut sub, RUN).await;
    assert_eq!(text_of(&events), "slow answer");
    assert_eq!(messages(&client, &agent.id).await.len(), 2);
    assert_eq!(mock.requests().len(), 1);
}
