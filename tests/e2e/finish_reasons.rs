//! How the model stopped reaches the client: an answer cut by the output limit ends with
//! `maxTokens` and goes on with `continueLoop`; a tool call whose arguments were cut is not
//! run; a refusal ends with `refused` and the provider's words; a stop with no answer and an
//! unknown reason is an error naming it, never a silent empty answer.

use std::time::Duration;

use agent_proto::rpc::AgentRpcClient;
use agent_proto::{Block, LoopFinishReason, MessageStatus, ToolCallStatus};
use agentd_testkit::events::{collect_run, finished};
use agentd_testkit::mock_model::{Reply, openai_chunk};
use serde_json::json;

use crate::common::{
    ALLOW_ALL, messages, model_requests, send_and_collect, start_with, tool_agent, tool_result_of,
};

fn text_of(message: &agent_proto::Message) -> String {
    message
        .blocks
        .iter()
        .filter_map(|b| match b {
            Block::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

fn stream(chunks: Vec<String>) -> Reply {
    let mut events = chunks;
    events.push("[DONE]".into());
    Reply::sse(events)
}

#[tokio::test]
async fn an_answer_cut_by_the_output_limit_ends_with_max_tokens_and_continues() {
    let (mock, daemon) = start_with("").await;
    let client = daemon.client().await;
    let agent = client
        .create_agent(None, None, None, None, None, None, None, None, None)
        .await
        .unwrap();
    mock.push(stream(vec![
        openai_chunk(json!({"content": "Once upon"}), None),
        openai_chunk(json!({}), Some("length")),
    ]));
    let (sent, events) = send_and_collect(&client, &agent.id, "tell a story").await;
    assert_eq!(finished(&events), (LoopFinishReason::MaxTokens, None));
    let stored = messages(&client, &agent.id).await;
    assert_eq!(stored[1].status, MessageStatus::Waiting);
    assert_eq!(text_of(&stored[1]), "Once upon");

    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    mock.push(Reply::openai_text(&[" a time."]));
    let continued = client.continue_loop(agent.id.clone()).await.unwrap();
    assert_eq!(continued.assistant_message_id, sent.assistant_message_id);
    let events = collect_run(&mut sub, Duration::from_secs(20)).await;
    assert_eq!(finished(&events).0, LoopFinishReason::Completed);
    let stored = messages(&client, &agent.id).await;
    assert_eq!(stored[1].status, MessageStatus::Done);
    assert_eq!(text_of(&stored[1]), "Once upon a time.");
    // The model was shown what it had written so far.
    let last = model_requests(&mock).pop().unwrap();
    assert!(last.body.to_string().contains("Once upon"), "{}", last.body);
}

#[tokio::test]
async fn a_tool_call_cut_mid_arguments_is_not_run() {
    let (mock, daemon) = start_with(ALLOW_ALL).await;
    let client = daemon.client().await;
    let (agent, dir) = tool_agent(&client, None).await;
    let open = json!({"tool_calls": [{"index": 0, "id": "cut", "type": "function",
        "function": {"name": "write_file", "arguments": ""}}]});
    let half = json!({"tool_calls": [{"index": 0,
        "function": {"arguments": "{\"path\": \"a.txt\", \"content\": \"hel"}}]});
    mock.push(stream(vec![
        openai_chunk(open, None),
        openai_chunk(half, None),
        openai_chunk(json!({}), Some("length")),
    ]));
    let (_, events) = send_and_collect(&client, &agent.id, "write a.txt").await;
    let (status, content, _) = tool_result_of(&events, "cut");
    assert_eq!(status, ToolCallStatus::Error);
    assert!(content.contains("output token limit"), "{content}");
    assert!(!dir.path().join("a.txt").exists(), "the cut call ran");
    assert_eq!(finished(&events), (LoopFinishReason::MaxTokens, None));
}

#[tokio::test]
async fn a_refusal_ends_the_run_as_refused_with_the_providers_words() {
    let (mock, daemon) = start_with("").await;
    let client = daemon.client().await;
    let agent = client
        .create_agent(None, None, None, None, None, None, None, None, None)
        .await
        .unwrap();
    mock.push(stream(vec![
        openai_chunk(json!({"refusal": "I can't help with that."}), None),
        openai_chunk(json!({}), Some("stop")),
    ]));
    let (_, events) = send_and_collect(&client, &agent.id, "something bad").await;
    assert_eq!(
        finished(&events),
        (
            LoopFinishReason::Refused,
            Some("I can't help with that.".into())
        )
    );
    mock.push(stream(vec![openai_chunk(
        json!({}),
        Some("content_filter"),
    )]));
    let (_, events) = send_and_collect(&client, &agent.id, "something worse").await;
    let (reason, words) = finished(&events);
    assert_eq!(reason, LoopFinishReason::Refused);
    assert!(words.unwrap().contains("content_filter"));
}

#[tokio::test]
async fn an_empty_answer_with_an_unknown_reason_is_an_error_naming_it() {
    let (mock, daemon) = start_with("").await;
    let client = daemon.client().await;
    let agent = client
        .create_agent(None, None, None, None, None, None, None, None, None)
        .await
        .unwrap();
    mock.push(stream(vec![openai_chunk(
        json!({}),
        Some("insufficient_system_resource"),
    )]));
    let (_, events) = send_and_collect(&client, &agent.id, "hello").await;
    let (reason, error) = finished(&events);
    assert_eq!(reason, LoopFinishReason::Error);
    assert!(
        error.unwrap().contains("insufficient_system_resource"),
        "the error names the finish reason"
    );
}
