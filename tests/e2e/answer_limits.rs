//! What a model may write into one answer is capped (`[limits]` `max_message_bytes`,
//! `max_tool_arguments_bytes`, `max_tool_calls_per_answer`): past a cap the answer is
//! stopped (the stream dropped: each scripted reply here stalls after its pieces, so only
//! the cap can end it), the run ends with an `answerTooLarge` error naming the cap, its
//! value and the key, what came before is kept up to the cap, the calls left unfinished
//! get a result saying they did not run, and the next request is a valid transcript.

use std::time::Duration;

use agent_proto::{
    Block, Event, EventKind, LoopFinishReason, MessageStatus, ToolCallBlock, ToolCallStatus,
};
use agentd_testkit::events::text_of;
use agentd_testkit::mock_model::Reply;
use agentd_testkit::transcript::{assert_calls_paired, tool_results};
use serde_json::json;

use crate::common::{
    ALLOW_ALL, messages, model_requests, new_agent, send_and_collect, start_with, tool_scenario, ws,
};

/// The run's `error` event: (message, kind, retryable).
fn run_error(events: &[Event]) -> (String, String, bool) {
    events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::Error {
                message,
                kind,
                retryable,
                retry: None,
                ..
            } => Some((message.clone(), kind.clone(), *retryable)),
            _ => None,
        })
        .unwrap_or_else(|| {
            panic!(
                "no error event in {}",
                agentd_testkit::events::summary(events)
            )
        })
}

fn finish_reason(events: &[Event]) -> LoopFinishReason {
    match &events.last().unwrap().kind {
        EventKind::LoopFinished { reason, .. } => *reason,
        other => panic!("the run ended with {other:?}"),
    }
}

/// Checks the error names the cap, its value and the key, and ended the run.
fn assert_stopped_by(events: &[Event], key: &str, value: usize) {
    let (message, kind, retryable) = run_error(events);
    assert_eq!(kind, "answerTooLarge", "{message}");
    assert!(!retryable);
    assert!(
        message.contains(&format!("[limits] {key} = {value}"))
            && message.contains(&format!("raise {key}"))
            && message.contains("what came before is kept"),
        "{message}"
    );
    assert_eq!(finish_reason(events), LoopFinishReason::Error);
}

/// A follow-up answered normally, and every request so far pairs each call with a result.
async fn next_request_is_valid(
    mock: &agentd_testkit::mock_model::MockModel,
    client: &agent_proto::client::Client,
    agent_id: &str,
) -> agentd_testkit::mock_model::RecordedRequest {
    mock.push(Reply::openai_text(&["Understood."]));
    let (_, events) = send_and_collect(client, agent_id, "Shorter, please.").await;
    assert_eq!(finish_reason(&events), LoopFinishReason::Completed);
    let requests = model_requests(mock);
    assert_calls_paired(&requests);
    requests.last().unwrap().clone()
}

#[tokio::test]
async fn text_past_the_message_cap_stops_the_answer_and_keeps_what_fits() {
    let (mock, daemon) = start_with("[limits]\nmax_message_bytes = 2048\n").await;
    let client = daemon.client().await;
    let agent = new_agent(&client, "talkative").await;
    let pieces: Vec<String> = (0..10).map(|i| i.to_string().repeat(500)).collect();
    let parts: Vec<&str> = pieces.iter().map(String::as_str).collect();
    mock.push(Reply::openai_text(&parts).stall_after(parts.len()));

    let (_, events) = send_and_collect(&client, &agent.id, "Talk.").await;
    assert_stopped_by(&events, "max_message_bytes", 2048);
    let kept = &pieces.concat()[..2048];
    assert_eq!(text_of(&events), kept);
    let stored = messages(&client, &agent.id).await;
    let answer = &stored[1];
    assert_eq!(answer.status, MessageStatus::Error);
    assert_eq!(answer.text(), kept);
    assert!(
        matches!(answer.blocks.last(), Some(Block::Error { kind, .. }) if kind == "answerTooLarge"),
        "{:?}",
        answer.blocks.last()
    );
    // The daemon hung up on the stream, which would otherwise have stalled for minutes.
    let gone = mock.wait_disconnect(Duration::from_secs(10)).await;
    assert_eq!(gone.request_index, 0);

    let next = next_request_is_valid(&mock, &client, &agent.id).await;
    assert!(next.body_text.contains("Shorter, please."));
}

#[tokio::test]
async fn calls_past_the_per_answer_cap_stop_the_answer_and_none_of_them_runs() {
    let config = format!("{ALLOW_ALL}[limits]\nmax_tool_calls_per_answer = 3\n");
    let (mock, _daemon, client, agent, _dir) = tool_scenario(&config).await.into_parts();
    let workspace = ws(&agent);
    let ids: Vec<String> = (0..5).map(|n| format!("call_{n}")).collect();
    let args: Vec<String> = (0..5)
        .map(|n| json!({ "command": format!("touch ran-{n}") }).to_string())
        .collect();
    let calls: Vec<(&str, &str, &str)> = ids
        .iter()
        .zip(&args)
        .map(|(id, a)| (id.as_str(), "bash", a.as_str()))
        .collect();
    // Three events per call (its start, its arguments in two), then the stall.
    mock.push(Reply::openai_tool_calls(&[], &calls).stall_after(3 * calls.len()));

    let (sent, events) = send_and_collect(&client, &agent.id, "Touch five files.").await;
    assert_stopped_by(&events, "max_tool_calls_per_answer", 3);
    let started: Vec<&str> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolCallStarted { tool_call_id, .. } => Some(tool_call_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(started, ["call_0", "call_1", "call_2"]);
    let stored = messages(&client, &agent.id).await;
    let answer = stored
        .iter()
        .find(|m| m.id == sent.assistant_message_id)
        .unwrap();
    let calls: Vec<_> = answer
        .blocks
        .iter()
        .filter_map(|b| match b {
            Block::ToolCall(ToolCallBlock {
                tool_call_id,
                status,
                result,
                raw_arguments,
                ..
            }) => Some((tool_call_id, status, result, raw_arguments)),
            _ => None,
        })
        .collect();
    assert_eq!(calls.len(), 3);
    for (n, (id, status, result, raw)) in calls.iter().enumerate() {
        assert_eq!(**status, ToolCallStatus::Error, "{id}");
        let result = result.as_ref().unwrap();
        assert!(
            result.content.starts_with("not run")
                && result.content.contains("max_tool_calls_per_answer = 3"),
            "{id}: {}",
            result.content
        );
        // What arrived of each call is kept with it.
        assert_eq!(raw.as_deref(), Some(args[n].as_str()), "{id}");
    }
    for n in 0..5 {
        assert!(!workspace.join(format!("ran-{n}")).exists(), "call {n} ran");
    }
    mock.wait_disconnect(Duration::from_secs(10)).await;

    let next = next_request_is_valid(&mock, &client, &agent.id).await;
    let results = tool_results(&next);
    assert_eq!(results.len(), 3, "{results:?}");
    assert!(
        results
            .iter()
            // A failed call's result reaches the model marked (protocol 7.9).
            .all(|(_, content)| content.starts_with("Error: not run"))
    );
}

#[tokio::test]
async fn arguments_past_their_cap_stop_the_answer_and_the_call_does_not_run() {
    let config = format!("{ALLOW_ALL}[limits]\nmax_tool_arguments_bytes = 1024\n");
    let (mock, _daemon, client, agent, _dir) = tool_scenario(&config).await.into_parts();
    let args = json!({"path": "big.txt", "content": "x".repeat(3000)}).to_string();
    mock.push(
        Reply::openai_tool_calls(&["Writing it."], &[("call_big", "write_file", &args)])
            .stall_after(4),
    );

    let (sent, events) = send_and_collect(&client, &agent.id, "Write a big file.").await;
    assert_stopped_by(&events, "max_tool_arguments_bytes", 1024);
    let streamed: String = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolCallArgsDelta { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(streamed, args[..1024]);
    let stored = messages(&client, &agent.id).await;
    let answer = stored
        .iter()
        .find(|m| m.id == sent.assistant_message_id)
        .unwrap();
    assert_eq!(answer.text(), "Writing it.");
    let (status, result, raw) = answer
        .blocks
        .iter()
        .find_map(|b| match b {
            Block::ToolCall(ToolCallBlock {
                status,
                result,
                raw_arguments,
                ..
            }) => Some((*status, result.clone().unwrap(), raw_arguments.clone())),
            _ => None,
        })
        .unwrap();
    assert_eq!(status, ToolCallStatus::Error);
    assert!(
        result.content.contains("max_tool_arguments_bytes = 1024"),
        "{}",
        result.content
    );
    assert_eq!(raw.as_deref(), Some(&args[..1024]));
    assert!(!ws(&agent).join("big.txt").exists(), "the call ran");
    mock.wait_disconnect(Duration::from_secs(10)).await;

    let next = next_request_is_valid(&mock, &client, &agent.id).await;
    let results = tool_results(&next);
    assert_eq!(results.len(), 1);
    assert!(results[0].1.starts_with("Error: not run"), "{results:?}");
}
