//! Thinking models and tool calls (issue 14 §1): what a provider needs back of the
//! model's reasoning is stored with the message (opaque, never shown as text) and sent
//! back exactly as its API wants: Gemini's `thoughtSignature` on its call, DeepSeek's
//! `reasoning_content` on tool-calling turns, Anthropic's signed and redacted thinking.

use agent_proto::{Block, Event, EventKind, LoopFinishReason, ToolCallBlock, ToolCallStatus};
use agentd_testkit::daemon::{TEST_API_KEY, TestDaemon};
use agentd_testkit::events::{finish_reason, text_of};
use agentd_testkit::mock_model::{CallIndexing, MockModel, Reply};
use serde_json::{Value, json};

use crate::common::{bin, messages, model_requests, send_and_collect, tool_agent};

/// A config whose default provider `p` is `provider` lines (kind, URL...) at the mock.
fn config(provider: &str) -> String {
    format!(
        "[defaults]\nprovider = \"p\"\nmode = \"agent\"\n[permissions]\nread = \"allow\"\n\n\
         [[providers]]\nid = \"p\"\napi_key = \"{TEST_API_KEY}\"\nmax_retries = 0\n{provider}\n"
    )
}

fn root(mock: &MockModel) -> String {
    mock.url().trim_end_matches("/v1").to_owned()
}

/// The id of the first `toolCallStarted` of `name`.
fn call_id(events: &[Event], name: &str) -> String {
    events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::ToolCallStarted {
                tool_call_id,
                name: n,
                ..
            } if n == name => Some(tool_call_id.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no call of {name}"))
}

/// No event carries `secret` (signatures are not for display).
fn not_in_events(events: &[Event], secret: &str) {
    let all = serde_json::to_string(events).unwrap();
    assert!(!all.contains(secret), "{secret} was shown: {all}");
}

#[tokio::test]
async fn gemini_thought_signatures_go_back_on_their_calls() {
    let mock = MockModel::start().await;
    let provider = format!(
        "kind = \"gemini\"\nbase_url = \"{}\"\nmodels = [{{ id = \"gemini-3-mock\" }}]",
        root(&mock)
    );
    let daemon = TestDaemon::start(bin(), &config(&provider)).await;
    let client = daemon.client().await;
    let (agent, _dir) = tool_agent(&client, None).await;
    // Parallel calls: Gemini signs only the first.
    mock.push(Reply::gemini_signed_calls(&[
        ("list_directory", json!({}), Some("c2lnLWxpc3Q=")),
        ("glob", json!({"pattern": "*.txt"}), None),
    ]));
    mock.push(Reply::gemini_signed_calls(&[(
        "list_directory",
        json!({"path": "."}),
        Some("c2lnLXR3bw=="),
    )]));
    mock.push(Reply::gemini(&["Nothing here."], &[]));
    let (sent, events) = send_and_collect(&client, &agent.id, "what is here?").await;
    assert_eq!(finish_reason(&events), LoopFinishReason::Completed);
    assert_eq!(text_of(&events), "Nothing here.");
    not_in_events(&events, "c2lnLWxpc3Q=");

    let requests = model_requests(&mock);
    // Step 2 gets step 1's parts back as they came; step 3 gets both steps' signatures.
    let model_turns = |i: usize| -> Vec<Value> {
        requests[i].body["contents"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["role"] == "model")
            .map(|c| c["parts"].clone())
            .collect()
    };
    let first = json!([
        {"functionCall": {"name": "list_directory", "args": {}}, "thoughtSignature": "c2lnLWxpc3Q="},
        {"functionCall": {"name": "glob", "args": {"pattern": "*.txt"}}}
    ]);
    assert_eq!(model_turns(1), std::slice::from_ref(&first));
    assert_eq!(
        model_turns(2),
        [
            first,
            json!([{"functionCall": {"name": "list_directory", "args": {"path": "."}}, "thoughtSignature": "c2lnLXR3bw=="}])
        ]
    );

    // The signature is stored with its call, for clients as an opaque field.
    let stored = messages(&client, &agent.id).await;
    let answer = stored
        .iter()
        .find(|m| m.id == sent.assistant_message_id)
        .unwrap();
    let signatures: Vec<Option<String>> = answer
        .blocks
        .iter()
        .filter_map(|b| match b {
            Block::ToolCall(ToolCallBlock { signature, .. }) => Some(signature.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        signatures,
        [
            Some("c2lnLWxpc3Q=".to_owned()),
            None,
            Some("c2lnLXR3bw==".to_owned())
        ]
    );
}

/// The `reasoning_content` of each assistant message of a request (`Null` when absent).
fn reasoning_sent(body: &Value) -> Vec<Value> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "assistant")
        .map(|m| m.get("reasoning_content").cloned().unwrap_or(Value::Null))
        .collect()
}

#[tokio::test]
async fn deepseek_gets_the_reasoning_of_tool_calling_turns_back() {
    let mock = MockModel::start().await;
    let provider = format!(
        "preset = \"deepseek\"\nbase_url = \"{}\"\ndefault_model = \"deepseek-reasoner\"",
        mock.url()
    );
    let daemon = TestDaemon::start(bin(), &config(&provider)).await;
    let client = daemon.client().await;
    let (agent, _dir) = tool_agent(&client, None).await;
    // Turn 1: think, call, think, answer.
    mock.push(Reply::openai_calls(
        &["I should ", "look."],
        &[],
        &[("call_a", "list_directory", "{}")],
        CallIndexing::Standard,
    ));
    mock.push(Reply::openai_reasoning_text(
        &["It is empty."],
        &["Nothing here."],
    ));
    let (_, events) = send_and_collect(&client, &agent.id, "what is here?").await;
    assert_eq!(finish_reason(&events), LoopFinishReason::Completed);
    // Turn 2: no tools.
    mock.push(Reply::openai_reasoning_text(
        &["Polite."],
        &["You're welcome."],
    ));
    let (_, events) = send_and_collect(&client, &agent.id, "thanks").await;
    assert_eq!(finish_reason(&events), LoopFinishReason::Completed);
    // Turn 3: the next request carries turn 1's reasoning still, not turn 2's.
    mock.push(Reply::openai_text(&["Bye."]));
    send_and_collect(&client, &agent.id, "bye").await;

    let requests = model_requests(&mock);
    assert_eq!(requests[0].path, "/v1/chat/completions");
    assert_eq!(reasoning_sent(&requests[1].body), [json!("I should look.")]);
    assert_eq!(
        reasoning_sent(&requests[2].body),
        [json!("I should look."), json!("It is empty.")]
    );
    assert_eq!(
        reasoning_sent(&requests[3].body),
        [json!("I should look."), json!("It is empty."), Value::Null]
    );
}

#[tokio::test]
async fn providers_that_do_not_ask_get_no_reasoning_back() {
    let mock = MockModel::start().await;
    let provider = format!(
        "kind = \"openai\"\nbase_url = \"{}\"\nmodels = [{{ id = \"m\" }}]",
        mock.url()
    );
    let daemon = TestDaemon::start(bin(), &config(&provider)).await;
    let client = daemon.client().await;
    let (agent, _dir) = tool_agent(&client, None).await;
    mock.push(Reply::openai_calls(
        &["thinking aloud"],
        &[],
        &[("call_a", "list_directory", "{}")],
        CallIndexing::Standard,
    ));
    mock.push(Reply::openai_text(&["Done."]));
    let (_, events) = send_and_collect(&client, &agent.id, "look").await;
    assert_eq!(finish_reason(&events), LoopFinishReason::Completed);
    let requests = model_requests(&mock);
    assert_eq!(reasoning_sent(&requests[1].body), [Value::Null]);
    assert!(!requests[1].body_text.contains("thinking aloud"));
}

#[tokio::test]
async fn anthropic_thinking_is_turned_on_and_its_blocks_go_back_as_received() {
    let mock = MockModel::start().await;
    let provider = format!(
        "kind = \"anthropic\"\nbase_url = \"{}\"\n\
         models = [{{ id = \"claude-mock\", thinking_budget = 2048 }}, {{ id = \"plain\" }}]",
        root(&mock)
    );
    let daemon = TestDaemon::start(bin(), &config(&provider)).await;
    let client = daemon.client().await;
    let (agent, _dir) = tool_agent(&client, Some(json!({"temperature": 0.3}))).await;
    mock.push(Reply::anthropic_thinking(
        Some(("I will list the folder.", "EqQBCkgIARABGAIiQL/c2ln")),
        Some("EmwKAhgBEgy3va3pzix/cmVkYWN0ZWQ="),
        &[],
        &[("toolu_1", "list_directory", "{}")],
    ));
    mock.push(Reply::anthropic_thinking(
        Some(("It is empty.", "Zm9sbG93LXVw")),
        None,
        &["Nothing here."],
        &[],
    ));
    let (sent, events) = send_and_collect(&client, &agent.id, "what is here?").await;
    assert_eq!(finish_reason(&events), LoopFinishReason::Completed);
    assert_eq!(text_of(&events), "Nothing here.");
    let id = call_id(&events, "list_directory");
    assert_eq!(
        crate::common::tool_result_of(&events, &id).0,
        ToolCallStatus::Success
    );
    let reasoning: String = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ReasoningDelta { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(reasoning, "I will list the folder.It is empty.");
    not_in_events(&events, "EqQBCkgIARABGAIiQL/c2ln");
    not_in_events(&events, "EmwKAhgBEgy3va3pzix/cmVkYWN0ZWQ=");

    let requests = model_requests(&mock);
    let first = &requests[0].body;
    assert_eq!(
        first["thinking"],
        json!({"type": "enabled", "budget_tokens": 2048})
    );
    assert_eq!(first["max_tokens"], 8192 + 2048);
    assert!(
        first.get("temperature").is_none(),
        "thinking allows no temperature: {first}"
    );
    assert_eq!(
        requests[1].body["messages"][1],
        json!({"role": "assistant", "content": [
            {"type": "thinking", "thinking": "I will list the folder.", "signature": "EqQBCkgIARABGAIiQL/c2ln"},
            {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/cmVkYWN0ZWQ="},
            {"type": "tool_use", "id": "toolu_1", "name": "list_directory", "input": {}}
        ]})
    );

    // Stored for clients as opaque fields; the redacted block has no text.
    let stored = messages(&client, &agent.id).await;
    let answer = stored
        .iter()
        .find(|m| m.id == sent.assistant_message_id)
        .unwrap();
    let kept: Vec<(String, Option<String>, Option<String>)> = answer
        .blocks
        .iter()
        .filter_map(|b| match b {
            Block::Reasoning {
                text,
                signature,
                redacted,
                ..
            } => Some((text.clone(), signature.clone(), redacted.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        kept,
        [
            (
                "I will list the folder.".into(),
                Some("EqQBCkgIARABGAIiQL/c2ln".into()),
                None
            ),
            (
                String::new(),
                None,
                Some("EmwKAhgBEgy3va3pzix/cmVkYWN0ZWQ=".into())
            ),
            ("It is empty.".into(), Some("Zm9sbG93LXVw".into()), None),
        ]
    );

    // A model without a budget: no thinking, no thinking blocks, the temperature as set.
    use agent_proto::rpc::AgentRpcClient;
    client
        .update_agent(
            agent.id.clone(),
            None,
            None,
            None,
            None,
            Some("plain".into()),
            None,
            None,
            None,
        )
        .await
        .unwrap();
    mock.push(Reply::anthropic_text(&["Still nothing."]));
    send_and_collect(&client, &agent.id, "and now?").await;
    let last = &model_requests(&mock)[2].body;
    assert!(last.get("thinking").is_none(), "{last}");
    assert_eq!(last["temperature"], 0.3);
    assert!(!last.to_string().contains("redacted_thinking"), "{last}");
}
