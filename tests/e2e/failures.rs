//! Provider failures end the run with an error event carrying the provider's own text;
//! the daemon keeps serving.

use agentd_testkit::send::SendByName;
use std::time::Duration;

use agent_proto::client::Client;
use agent_proto::rpc::AgentRpcClient;
use agent_proto::{Block, Event, EventKind, LoopFinishReason, MessageStatus, SessionStatus};
use agentd_testkit::daemon::TestDaemon;
use agentd_testkit::events::{collect_run, text_of};
use agentd_testkit::mock_model::Reply;

use crate::common::{bin, messages, new_agent, start};

/// Sends one message and returns the run's events and the stored assistant message.
async fn run_once(client: &Client, agent_id: &str) -> (Vec<Event>, agent_proto::Message) {
    let mut sub = client
        .subscribe_events(Some(agent_id.into()), None, None)
        .await
        .unwrap();
    let sent = client
        .send_plain(agent_id.into(), "hello".into())
        .await
        .unwrap();
    let events = collect_run(&mut sub, Duration::from_secs(20)).await;
    let stored = messages(client, agent_id).await;
    let assistant = stored
        .into_iter()
        .find(|m| m.id == sent.assistant_message_id)
        .unwrap();
    (events, assistant)
}

/// The run's error event: (message, kind, retryable).
fn error_event(events: &[Event]) -> (String, String, bool) {
    events
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
        .unwrap_or_else(|| panic!("no error event in {events:?}"))
}

fn assert_failed_run(events: &[Event], assistant: &agent_proto::Message, kind: &str, needle: &str) {
    let (message, got_kind, _) = error_event(events);
    assert_eq!(got_kind, kind, "{message}");
    assert!(message.contains(needle), "{needle:?} not in {message:?}");
    match events.last().map(|e| &e.kind) {
        Some(EventKind::LoopFinished {
            reason: LoopFinishReason::Error,
            error: Some(error),
            ..
        }) => assert_eq!(error, &message),
        other => panic!("last event {other:?}"),
    }
    assert!(events.iter().any(|e| e.kind
        == EventKind::StatusChanged {
            status: SessionStatus::Error
        }));
    assert_eq!(assistant.status, MessageStatus::Error);
    assert!(assistant.blocks.iter().any(|b| matches!(b,
        Block::Error { message: m, kind: k } if m == &message && k == kind)));
}

#[tokio::test]
async fn http_errors_truncation_and_garbage_are_reported_with_raw_text() {
    let (mock, daemon) = start().await;
    let client = daemon.client().await;
    let agent = new_agent(&client, "failures").await;

    mock.push(Reply::status(
        500,
        r#"{"error":{"message":"the model is on fire"}}"#,
    ));
    let (events, assistant) = run_once(&client, &agent.id).await;
    assert_failed_run(
        &events,
        &assistant,
        "providerHttpError",
        "the model is on fire",
    );
    assert!(error_event(&events).0.contains("500"));
    assert!(error_event(&events).2, "a 500 is retryable");

    mock.push(Reply::status(
        401,
        r#"{"error":{"message":"Incorrect API key provided"}}"#,
    ));
    let (events, assistant) = run_once(&client, &agent.id).await;
    assert_failed_run(
        &events,
        &assistant,
        "providerHttpError",
        "Incorrect API key provided",
    );
    assert!(!error_event(&events).2, "a 401 is not retryable");

    // Cut after two chunks: the partial text is kept, the run is an error, not a success.
    mock.push(Reply::openai_text(&["par", "tial", " never", " seen"]).cut_after(2));
    let (events, assistant) = run_once(&client, &agent.id).await;
    assert_failed_run(&events, &assistant, "providerStreamTruncated", "");
    assert_eq!(text_of(&events), "partial");
    assert_eq!(assistant.text(), "partial");

    mock.push(Reply::raw_sse_body(
        "<html><body>502 Bad Gateway from the proxy</body></html>\n",
    ));
    let (events, assistant) = run_once(&client, &agent.id).await;
    assert_failed_run(
        &events,
        &assistant,
        "providerStreamTruncated",
        "502 Bad Gateway from the proxy",
    );

    mock.push(Reply::raw_sse_body("data: {this is not json\n\n"));
    let (events, assistant) = run_once(&client, &agent.id).await;
    assert_failed_run(
        &events,
        &assistant,
        "providerMalformedStream",
        "{this is not json",
    );

    mock.push(Reply::sse(vec![
        r#"{"choices":[{"delta":{"content":"Hi"}}]}"#.into(),
        r#"{"error":{"message":"rate limit reached mid-stream"}}"#.into(),
    ]));
    let (events, assistant) = run_once(&client, &agent.id).await;
    assert_failed_run(
        &events,
        &assistant,
        "providerStreamError",
        "rate limit reached mid-stream",
    );
    assert_eq!(assistant.text(), "Hi");

    // After all that the daemon and the agent still work.
    mock.push(Reply::openai_text(&["fine"]));
    let (events, assistant) = run_once(&client, &agent.id).await;
    assert_eq!(text_of(&events), "fine");
    assert_eq!(assistant.status, MessageStatus::Done);
    assert_eq!(
        client.get_session(agent.id.clone()).await.unwrap().status,
        SessionStatus::Idle
    );
}

#[tokio::test]
async fn an_unreachable_provider_is_reported() {
    // A port that was free a moment ago: nothing listens there.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let config = agentd_testkit::daemon::openai_config(&format!("http://127.0.0.1:{port}/v1"));
    let daemon = TestDaemon::start(bin(), &config).await;
    let client = daemon.client().await;
    let agent = new_agent(&client, "nowhere").await;
    let (events, assistant) = run_once(&client, &agent.id).await;
    assert_failed_run(
        &events,
        &assistant,
        "providerUnreachable",
        &format!("127.0.0.1:{port}"),
    );
    assert!(error_event(&events).2, "unreachable is retryable");
}
