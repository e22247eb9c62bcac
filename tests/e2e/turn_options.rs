//! Per-turn choices and structured output (issue 35 §5), and failed tools read as
//! failures (§7): what `sendMessage`'s `provider`, `model`, `reasoningEffort` and
//! `outputSchema` do to the requests the model receives, how a final answer is held to
//! the schema (one corrective retry, then `outputSchemaMismatch`), and that an MCP tool's
//! error reaches the model marked.

use agentd_testkit::send::{SendByName, SendOptions};
use std::time::Duration;

use agent_proto::client::Client;
use agent_proto::rpc::AgentRpcClient;
use agent_proto::{
    Event, EventKind, LoopFinishReason, MessageStatus, ReasoningEffort, Role, SendMessageResult,
    run_error,
};
use agentd_testkit::daemon::TestDaemon;
use agentd_testkit::events::{collect_run, finished};
use agentd_testkit::mock_model::{MockModel, Reply};
use serde_json::{Value, json};

use crate::common::{
    bin, database, error_of, messages, model_requests, new_agent, send_and_collect, start_with,
};

/// Besides the default OpenAI-compatible `mock`: `claude` (Anthropic) and `gem` (Gemini)
/// at the same mock, their models marked as reasoning.
fn vendors(mock: &MockModel) -> String {
    let root = mock.url().trim_end_matches("/v1").to_owned();
    format!(
        "[[providers]]\nid = \"claude\"\nkind = \"anthropic\"\nbase_url = \"{root}\"\n\
         api_key = \"k\"\nmax_retries = 0\nmodels = [{{ id = \"claude-x\", reasoning = true }}]\n\n\
         [[providers]]\nid = \"gem\"\nkind = \"gemini\"\nbase_url = \"{root}\"\napi_key = \"k\"\n\
         max_retries = 0\nmodels = [{{ id = \"gem-x\", reasoning = true }}]\n"
    )
}

fn schema() -> Value {
    json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"],
        "additionalProperties": false})
}

/// Sends `text` with the turn's choices and collects the run.
async fn send_turn(
    client: &Client,
    agent_id: &str,
    text: &str,
    turn: (
        Option<&str>,
        Option<&str>,
        Option<ReasoningEffort>,
        Option<Value>,
    ),
) -> (SendMessageResult, Vec<Event>) {
    let mut sub = client
        .subscribe_events(Some(agent_id.into()), None, None)
        .await
        .unwrap();
    let (provider, model, effort, schema) = turn;
    let sent = client
        .send_with(
            agent_id.into(),
            text.into(),
            SendOptions {
                provider: provider.map(str::to_owned),
                model: model.map(str::to_owned),
                reasoning_effort: effort,
                output_schema: schema,
                ..SendOptions::default()
            },
        )
        .await
        .unwrap();
    (sent, collect_run(&mut sub, Duration::from_secs(30)).await)
}

fn completed_output(events: &[Event]) -> Option<(MessageStatus, Option<Value>)> {
    events.iter().find_map(|e| match &e.kind {
        EventKind::MessageCompleted {
            status,
            structured_output,
            ..
        } => Some((*status, structured_output.clone())),
        _ => None,
    })
}

#[tokio::test]
async fn a_first_invalid_answer_is_corrected_once_and_the_valid_one_is_given_parsed() {
    let (mock, daemon) = start_with("").await;
    let client = daemon.client().await;
    let agent = new_agent(&client, "schema").await;
    mock.push(Reply::openai_text(&["{\"n\": \"three\"}"]));
    mock.push(Reply::openai_text(&["{\"n\": 3}"]));
    let turn = (None, None, None, Some(schema()));
    let (sent, events) = send_turn(&client, &agent.id, "count", turn).await;
    assert_eq!(finished(&events).0, LoopFinishReason::Completed);
    assert_eq!(
        completed_output(&events),
        Some((MessageStatus::Done, Some(json!({"n": 3}))))
    );
    // The retry is announced as a new step of the same message.
    let started = events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::MessageStarted { .. }))
        .count();
    assert_eq!(started, 2, "{events:?}");
    let requests = model_requests(&mock);
    assert_eq!(requests.len(), 2);
    for r in &requests {
        assert_eq!(
            r.body["response_format"],
            json!({"type": "json_schema", "json_schema": {"name": "output", "schema": schema(), "strict": true}})
        );
    }
    // The retry carries the answer, then the correction naming what was wrong.
    let retry = requests[1].body["messages"].as_array().unwrap();
    let n = retry.len();
    assert_eq!(retry[n - 2]["role"], "assistant");
    assert_eq!(retry[n - 2]["content"], "{\"n\": \"three\"}");
    assert_eq!(retry[n - 1]["role"], "user");
    let correction = retry[n - 1]["content"].as_str().unwrap();
    assert!(
        correction.contains("at /n") && correction.contains("integer"),
        "{correction}"
    );
    // Stored with the answer: the parsed value and the turn's schema.
    let answer = messages(&client, &agent.id)
        .await
        .into_iter()
        .find(|m| m.id == sent.assistant_message_id)
        .unwrap();
    assert_eq!(answer.structured_output, Some(json!({"n": 3})));
    assert_eq!(answer.turn.unwrap().output_schema, Some(schema()));
    let db = database(&daemon).await;
    let (stored,): (String,) =
        sqlx::query_as("SELECT structured_output FROM messages WHERE id = $1")
            .bind(&sent.assistant_message_id)
            .fetch_one(&db)
            .await
            .unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&stored).unwrap(),
        json!({"n": 3})
    );
}

#[tokio::test]
async fn an_answer_that_never_fits_ends_the_run_with_an_error_not_completed() {
    let (mock, daemon) = start_with("").await;
    let client = daemon.client().await;
    let agent = new_agent(&client, "schema").await;
    mock.push(Reply::openai_text(&["sure, n is 3"]));
    mock.push(Reply::openai_text(&["{\"m\": 3}"]));
    let turn = (None, None, None, Some(schema()));
    let (sent, events) = send_turn(&client, &agent.id, "count", turn).await;
    let (reason, error) = finished(&events);
    assert_eq!(reason, LoopFinishReason::Error);
    assert!(
        error
            .as_deref()
            .unwrap_or_default()
            .contains("outputSchema"),
        "{error:?}"
    );
    let kinds: Vec<&str> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Error { kind, .. } => Some(kind.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(kinds, [run_error::OUTPUT_SCHEMA_MISMATCH]);
    assert_eq!(
        completed_output(&events),
        Some((MessageStatus::Error, None))
    );
    assert_eq!(model_requests(&mock).len(), 2, "one corrective retry only");
    let answer = messages(&client, &agent.id)
        .await
        .into_iter()
        .find(|m| m.id == sent.assistant_message_id)
        .unwrap();
    assert_eq!(answer.status, MessageStatus::Error);
    assert_eq!(answer.structured_output, None);
}

#[tokio::test]
async fn per_turn_provider_model_and_effort_reach_each_vendor_in_its_form_for_that_turn_only() {
    let mock = MockModel::start().await;
    let config = agentd_testkit::daemon::openai_config_with(&mock.url(), &vendors(&mock));
    let daemon = TestDaemon::start(bin(), &config).await;
    let client = daemon.client().await;
    let agent = new_agent(&client, "turns").await;
    mock.push(Reply::anthropic_text(&["{\"n\": 1}"]));
    mock.push(Reply::gemini(&["{\"n\": 2}"], &[]));
    mock.push(Reply::openai_text(&["plain"]));
    let high = Some(ReasoningEffort::High);
    let claude = (Some("claude"), None, high, Some(schema()));
    let (first, events) = send_turn(&client, &agent.id, "one", claude).await;
    assert_eq!(
        completed_output(&events),
        Some((MessageStatus::Done, Some(json!({"n": 1}))))
    );
    let gem = (
        Some("gem"),
        Some("gem-x"),
        Some(ReasoningEffort::Low),
        Some(schema()),
    );
    let (second, _) = send_turn(&client, &agent.id, "two", gem).await;
    let (third, _) = send_agent_default(&client, &agent.id).await;
    let requests = model_requests(&mock);
    assert_eq!(requests.len(), 3);
    let anthropic = &requests[0];
    assert!(
        anthropic.path.ends_with("/v1/messages"),
        "{}",
        anthropic.path
    );
    assert_eq!(anthropic.body["model"], "claude-x");
    assert_eq!(
        anthropic.body["thinking"],
        json!({"type": "enabled", "budget_tokens": 16384})
    );
    assert_eq!(
        anthropic.body["output_config"],
        json!({"format": {"type": "json_schema", "schema": schema()}})
    );
    let gemini = &requests[1];
    assert!(gemini.path.contains("gem-x"), "{}", gemini.path);
    let config = &gemini.body["generationConfig"];
    assert_eq!(config["responseMimeType"], "application/json");
    assert_eq!(config["responseJsonSchema"], schema());
    assert_eq!(config["thinkingConfig"], json!({"thinkingBudget": 1024}));
    // The next turn without choices is the agent's own again.
    let openai = &requests[2];
    assert_eq!(openai.body["model"], "mock-model");
    assert!(openai.body.get("response_format").is_none());
    assert!(openai.body.get("reasoning_effort").is_none());
    // The answers record which provider and model answered.
    let stored = messages(&client, &agent.id).await;
    let turn_of = |id: &str| {
        let m = stored.iter().find(|m| m.id == id).unwrap();
        assert_eq!(m.role, Role::Assistant);
        m.turn
            .as_ref()
            .map(|t| (t.provider.clone().unwrap(), t.model.clone().unwrap()))
    };
    assert_eq!(
        turn_of(&first.assistant_message_id),
        Some(("claude".into(), "claude-x".into()))
    );
    assert_eq!(
        turn_of(&second.assistant_message_id),
        Some(("gem".into(), "gem-x".into()))
    );
    assert_eq!(turn_of(&third.assistant_message_id), None);
    let db = database(&daemon).await;
    let rows: Vec<(String, String)> = sqlx::query_as(
        "SELECT provider, model FROM messages WHERE role = 'assistant' ORDER BY ord",
    )
    .fetch_all(&db)
    .await
    .unwrap();
    let expected = [
        ("claude", "claude-x"),
        ("gem", "gem-x"),
        ("mock", "mock-model"),
    ]
    .map(|(p, m)| (p.to_owned(), m.to_owned()));
    assert_eq!(rows, expected);
}

async fn send_agent_default(client: &Client, agent_id: &str) -> (SendMessageResult, Vec<Event>) {
    send_and_collect(client, agent_id, "three").await
}

#[tokio::test]
async fn unknown_providers_and_bad_schemas_are_refused_before_anything_is_stored() {
    let (mock, daemon) = start_with("").await;
    let client = daemon.client().await;
    let agent = new_agent(&client, "refused").await;
    let send = |provider: Option<&str>, schema: Option<Value>| {
        client.send_with(
            agent.id.clone(),
            "x".into(),
            SendOptions {
                provider: provider.map(str::to_owned),
                output_schema: schema,
                ..SendOptions::default()
            },
        )
    };
    let e = send(Some("nowhere"), None).await.unwrap_err();
    assert_eq!(error_of(&e).1, "providerNotConfigured");
    let e = send(None, Some(json!({"type": 12}))).await.unwrap_err();
    assert_eq!(error_of(&e).1, "invalidParams");
    let e = send(None, Some(json!("an object, please")))
        .await
        .unwrap_err();
    assert_eq!(error_of(&e).1, "invalidParams");
    let huge = json!({"type": "object", "description": "x".repeat(70 * 1024)});
    let e = send(None, Some(huge)).await.unwrap_err();
    assert_eq!(error_of(&e).1, "invalidParams");
    assert!(messages(&client, &agent.id).await.is_empty());
    assert!(model_requests(&mock).is_empty());
}

#[tokio::test]
async fn an_mcp_tool_error_reaches_the_model_marked_as_a_failure() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("t.log");
    let config = crate::mcp::stdio_server("t", &log, &[], "autoApprove = [\"fail\"]");
    let (mock, _daemon, client, agent, _ws) = crate::mcp::setup(&config).await;
    crate::mcp::call_then_done(&mock, "c1", "fail", json!({}));
    let (_, events) = send_and_collect(&client, &agent.id, "fail").await;
    assert_eq!(finished(&events).0, LoopFinishReason::Completed);
    let requests = model_requests(&mock);
    let result = requests.last().unwrap().body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .cloned()
        .unwrap();
    assert_eq!(result["tool_call_id"], "c1");
    let content = result["content"].as_str().unwrap();
    assert!(
        content.starts_with("Error: ") && content.contains("the tool failed on purpose"),
        "{content}"
    );
}

#[tokio::test]
async fn a_run_resumed_after_a_permission_prompt_keeps_the_turns_choices() {
    let (mock, daemon) = start_with("").await;
    let client = daemon.client().await;
    let (agent, _ws) = crate::common::tool_agent(&client, None).await;
    mock.push(Reply::openai_tool_call(
        "c1",
        "bash",
        json!({"command": "echo hi"}),
    ));
    mock.push(Reply::openai_text(&["{\"n\": 5}"]));
    let turn = (None, Some("other-model"), None, Some(schema()));
    let (sent, events) = send_turn(&client, &agent.id, "run it", turn).await;
    assert_eq!(finished(&events).0, LoopFinishReason::WaitingPermission);
    let resumed = crate::common::answer_prompt(
        &client,
        &agent.id,
        &sent.assistant_message_id,
        "c1",
        true,
        agent_proto::Remember::Once,
    )
    .await;
    assert_eq!(finished(&resumed).0, LoopFinishReason::Completed);
    assert_eq!(
        completed_output(&resumed),
        Some((MessageStatus::Done, Some(json!({"n": 5}))))
    );
    let requests = model_requests(&mock);
    assert_eq!(requests.len(), 2);
    for r in &requests {
        assert_eq!(r.body["model"], "other-model");
        assert_eq!(r.body["response_format"]["json_schema"]["schema"], schema());
    }
}
