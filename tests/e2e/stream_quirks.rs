//! Streams that real servers send (issue 14 §2), each replayed byte for byte by the mock:
//! no `[DONE]` after the finish reason, parallel calls told apart only by their id, a call
//! id reused in a later step, Gemini candidates out of order, `Retry-After` as an HTTP
//! date, bare-CR line ends, and redirects to another origin (no credential leaves it);
//! and (issue 34 §2) a call id that changes after its first chunk, `delta.content` as a
//! list of parts, usage totals repeated on every chunk, and an Anthropic gateway's tool
//! input given whole at the block's start; and what thinking models need back: OpenRouter's
//! `reasoning_details`, an Anthropic turn paused with `pause_turn`, and interleaved
//! thinking sent back in its order.

use std::time::{Duration, SystemTime};

use agent_proto::rpc::AgentRpcClient;
use agent_proto::{
    Block, Event, EventKind, LoopFinishReason, MessageStatus, ToolCallBlock, ToolCallStatus,
};
use agentd_testkit::daemon::{TEST_API_KEY, TestDaemon};
use agentd_testkit::events::{finished, text_of, usage_of};
use agentd_testkit::mock_model::{CallIndexing, MockModel, Reply};
use serde_json::json;

use crate::common::{
    bin, messages, model_requests, send_and_collect, tool_agent, tool_result_of, ws,
};

/// A config whose default provider `p` of `kind` is at `root` (the mock's URL without
/// `/v1` for anthropic and gemini), with `extra` lines in the provider's table.
fn config(kind: &str, base_url: &str, extra: &str) -> String {
    let retries = if extra.contains("max_retries") {
        ""
    } else {
        "max_retries = 0"
    };
    format!(
        "[defaults]\nprovider = \"p\"\nmode = \"agent\"\n[permissions]\nread = \"allow\"\n\n\
         [[providers]]\nid = \"p\"\nkind = \"{kind}\"\nbase_url = \"{base_url}\"\n\
         api_key = \"{TEST_API_KEY}\"\n{retries}\n{extra}\n\
         models = [{{ id = \"m\" }}]\n"
    )
}

async fn daemon(kind: &str, base_url: &str, extra: &str) -> TestDaemon {
    TestDaemon::start(bin(), &config(kind, base_url, extra)).await
}

fn root(mock: &MockModel) -> String {
    mock.url().trim_end_matches("/v1").to_owned()
}

/// `(id, name)` of every `toolCallStarted`, in order.
fn started(events: &[Event]) -> Vec<(String, String)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolCallStarted {
                tool_call_id, name, ..
            } => Some((tool_call_id.clone(), name.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_clean_close_after_the_finish_reason_is_a_complete_answer() {
    let mock = MockModel::start().await;
    let daemon = daemon("openai", &mock.url(), "").await;
    let client = daemon.client().await;
    let (agent, _dir) = tool_agent(&client, None).await;
    std::fs::write(ws(&agent).join("a.txt"), "alpha").unwrap();
    mock.push(
        Reply::openai_tool_calls(&[], &[("c1", "read_file", r#"{"path": "a.txt"}"#)])
            .without_done(),
    );
    mock.push(Reply::openai_text(&["It says ", "alpha."]).without_done());
    let (sent, events) = send_and_collect(&client, &agent.id, "read a.txt").await;
    assert_eq!(finished(&events), (LoopFinishReason::Completed, None));
    let (status, content, _) = tool_result_of(&events, "c1");
    assert_eq!(
        status,
        ToolCallStatus::Success,
        "the finished call was kept and run"
    );
    assert!(content.contains("alpha"), "{content}");
    assert_eq!(text_of(&events), "It says alpha.");
    let stored = messages(&client, &agent.id).await;
    let answer = stored
        .iter()
        .find(|m| m.id == sent.assistant_message_id)
        .unwrap();
    assert_eq!(answer.status, MessageStatus::Done);
    assert!(
        !answer
            .blocks
            .iter()
            .any(|b| matches!(b, Block::Error { .. })),
        "{:?}",
        answer.blocks
    );

    // Without a finish reason, the same clean close is still a cut answer.
    mock.push(Reply::sse(vec![agentd_testkit::mock_model::openai_chunk(
        json!({"content": "half"}),
        None,
    )]));
    let (_, events) = send_and_collect(&client, &agent.id, "again").await;
    let (reason, error) = finished(&events);
    assert_eq!(reason, LoopFinishReason::Error);
    assert!(error.unwrap().contains("ended before it was complete"));
}

#[tokio::test]
async fn parallel_calls_without_an_index_or_all_at_index_zero_are_told_apart_by_id() {
    for indexing in [CallIndexing::AllAtZero, CallIndexing::Absent] {
        let mock = MockModel::start().await;
        let daemon = daemon("openai", &mock.url(), "").await;
        let client = daemon.client().await;
        let (agent, _dir) = tool_agent(&client, None).await;
        std::fs::write(ws(&agent).join("a.txt"), "alpha").unwrap();
        std::fs::write(ws(&agent).join("b.txt"), "beta").unwrap();
        mock.push(Reply::openai_calls(
            &[],
            &["Reading both."],
            &[
                ("ca", "read_file", r#"{"path": "a.txt"}"#),
                ("cb", "read_file", r#"{"path": "b.txt"}"#),
            ],
            indexing,
        ));
        mock.push(Reply::openai_text(&["Done."]));
        let (_, events) = send_and_collect(&client, &agent.id, "read both").await;
        assert_eq!(
            finished(&events).0,
            LoopFinishReason::Completed,
            "{indexing:?}"
        );
        assert_eq!(
            started(&events),
            [
                ("ca".to_owned(), "read_file".to_owned()),
                ("cb".to_owned(), "read_file".to_owned())
            ],
            "{indexing:?}"
        );
        for (id, expected) in [("ca", "alpha"), ("cb", "beta")] {
            let (status, content, _) = tool_result_of(&events, id);
            assert_eq!(
                status,
                ToolCallStatus::Success,
                "{indexing:?} {id}: {content}"
            );
            assert!(content.contains(expected), "{indexing:?} {id}: {content}");
        }
        let requests = model_requests(&mock);
        let assistant = requests[1].body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["role"] == "assistant")
            .unwrap()
            .clone();
        let calls = &assistant["tool_calls"];
        assert_eq!(calls[0]["id"], "ca");
        assert_eq!(calls[0]["function"]["arguments"], r#"{"path":"a.txt"}"#);
        assert_eq!(calls[1]["id"], "cb");
        assert_eq!(calls[1]["function"]["arguments"], r#"{"path":"b.txt"}"#);
    }
}

#[tokio::test]
async fn a_call_id_reused_in_a_later_step_stays_apart_and_goes_back_as_given() {
    let mock = MockModel::start().await;
    let daemon = daemon("openai", &mock.url(), "").await;
    let client = daemon.client().await;
    let (agent, _dir) = tool_agent(&client, None).await;
    std::fs::write(ws(&agent).join("a.txt"), "alpha").unwrap();
    std::fs::write(ws(&agent).join("b.txt"), "beta").unwrap();
    // A vendor that numbers calls per answer: both steps call "call_0".
    mock.push(Reply::openai_tool_calls(
        &[],
        &[("call_0", "read_file", r#"{"path": "a.txt"}"#)],
    ));
    mock.push(Reply::openai_tool_calls(
        &[],
        &[("call_0", "read_file", r#"{"path": "b.txt"}"#)],
    ));
    mock.push(Reply::openai_text(&["alpha and beta"]));
    let (sent, events) = send_and_collect(&client, &agent.id, "read a then b").await;
    assert_eq!(finished(&events).0, LoopFinishReason::Completed);
    let ids: Vec<String> = started(&events).into_iter().map(|(id, _)| id).collect();
    assert_eq!(ids, ["call_0", "call_0~2"]);
    assert!(tool_result_of(&events, "call_0").1.contains("alpha"));
    assert!(tool_result_of(&events, "call_0~2").1.contains("beta"));

    let stored = messages(&client, &agent.id).await;
    let answer = stored
        .iter()
        .find(|m| m.id == sent.assistant_message_id)
        .unwrap();
    let calls: Vec<(String, Option<String>, ToolCallStatus)> = answer
        .blocks
        .iter()
        .filter_map(|b| match b {
            Block::ToolCall(ToolCallBlock {
                tool_call_id,
                provider_call_id,
                status,
                ..
            }) => Some((tool_call_id.clone(), provider_call_id.clone(), *status)),
            _ => None,
        })
        .collect();
    assert_eq!(
        calls,
        [
            ("call_0".into(), None, ToolCallStatus::Success),
            (
                "call_0~2".into(),
                Some("call_0".into()),
                ToolCallStatus::Success
            ),
        ]
    );

    // The provider gets its own ids back, each call followed by its own result.
    let last = &model_requests(&mock)[2].body["messages"];
    let view: Vec<String> = last
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| match m["role"].as_str() {
            Some("assistant") => Some(format!(
                "call {} {}",
                m["tool_calls"][0]["id"].as_str().unwrap(),
                m["tool_calls"][0]["function"]["arguments"]
                    .as_str()
                    .unwrap()
            )),
            Some("tool") => Some(format!(
                "result {} {}",
                m["tool_call_id"].as_str().unwrap(),
                m["content"].as_str().unwrap().contains("alpha")
            )),
            _ => None,
        })
        .collect();
    assert_eq!(
        view,
        [
            r#"call call_0 {"path":"a.txt"}"#,
            "result call_0 true",
            r#"call call_0 {"path":"b.txt"}"#,
            "result call_0 false",
        ]
    );
}

#[tokio::test]
async fn gemini_candidates_are_matched_by_their_index() {
    let mock = MockModel::start().await;
    let daemon = daemon("gemini", &root(&mock), "").await;
    let client = daemon.client().await;
    let agent = crate::common::new_agent(&client, "gemini").await;
    mock.push(Reply::sse(vec![
        json!({"candidates": [
            {"index": 1, "content": {"role": "model", "parts": [{"text": "not "}]}},
            {"index": 0, "content": {"role": "model", "parts": [{"text": "Right "}]}}
        ]})
        .to_string(),
        json!({"candidates": [
            {"index": 1, "content": {"role": "model", "parts": [{"text": "this"}]}, "finishReason": "STOP"},
            {"index": 0, "content": {"role": "model", "parts": [{"text": "answer."}]}}
        ]})
        .to_string(),
        json!({"candidates": [
            {"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": "STOP"}
        ], "usageMetadata": {"promptTokenCount": 3, "candidatesTokenCount": 2}})
        .to_string(),
    ]));
    let (_, events) = send_and_collect(&client, &agent.id, "hi").await;
    assert_eq!(finished(&events), (LoopFinishReason::Completed, None));
    assert_eq!(text_of(&events), "Right answer.");
}

#[tokio::test]
async fn retry_after_as_an_http_date_is_honoured() {
    let mock = MockModel::start().await;
    // Without the date, the retry would come after about 10 ms.
    let daemon = daemon("openai", &mock.url(), "max_retries = 1\nretry_base_ms = 10").await;
    let client = daemon.client().await;
    let agent = crate::common::new_agent(&client, "retry").await;
    let at = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(2));
    mock.push(Reply::status(503, "busy").header("Retry-After", &at));
    mock.push(Reply::openai_text(&["made it"]));
    let (_, events) = send_and_collect(&client, &agent.id, "hi").await;
    assert_eq!(finished(&events).0, LoopFinishReason::Completed);
    assert_eq!(text_of(&events), "made it");
    let requests = model_requests(&mock);
    let waited = requests[1].received_at - requests[0].received_at;
    // The date has whole seconds: the wait is at least (almost) 1 s, never none.
    assert!(waited >= Duration::from_millis(900), "{waited:?}");
}

#[tokio::test]
async fn bare_cr_line_ends_are_read() {
    let mock = MockModel::start().await;
    let daemon = daemon("openai", &mock.url(), "").await;
    let client = daemon.client().await;
    let agent = crate::common::new_agent(&client, "cr").await;
    mock.push(Reply::openai_text(&["Hel", "lo ", "there."]).bare_cr());
    let (_, events) = send_and_collect(&client, &agent.id, "hi").await;
    assert_eq!(finished(&events), (LoopFinishReason::Completed, None));
    assert_eq!(text_of(&events), "Hello there.");
    let anthropic = MockModel::start().await;
    anthropic.push(Reply::anthropic_text(&["Also ", "fine."]).bare_cr());
    let daemon = daemon_of("anthropic", &anthropic).await;
    let client = daemon.client().await;
    let agent = crate::common::new_agent(&client, "cr").await;
    let (_, events) = send_and_collect(&client, &agent.id, "hi").await;
    assert_eq!(finished(&events), (LoopFinishReason::Completed, None));
    assert_eq!(text_of(&events), "Also fine.");
}

async fn daemon_of(kind: &str, mock: &MockModel) -> TestDaemon {
    let base = if kind == "openai" {
        mock.url()
    } else {
        root(mock)
    };
    daemon(
        kind,
        &base,
        "headers = { \"x-custom-auth\" = \"custom-secret\" }",
    )
    .await
}

/// The path each kind posts to for model `m`.
fn path_of(kind: &str) -> &'static str {
    match kind {
        "openai" => "/v1/chat/completions",
        "anthropic" => "/v1/messages",
        _ => "/v1beta/models/m:streamGenerateContent?alt=sse",
    }
}

#[tokio::test]
async fn a_redirect_to_another_origin_is_not_followed_so_no_credential_leaves() {
    for kind in ["openai", "anthropic", "gemini"] {
        let mock = MockModel::start().await;
        let elsewhere = MockModel::start().await;
        let daemon = daemon_of(kind, &mock).await;
        let client = daemon.client().await;
        let agent = crate::common::new_agent(&client, "redirect").await;
        let target = format!("{}{}", root(&elsewhere), path_of(kind));
        mock.push(Reply::redirect(307, &target));
        elsewhere.push(Reply::openai_text(&["stolen"]));
        let (_, events) = send_and_collect(&client, &agent.id, "hi").await;
        let (reason, error) = finished(&events);
        assert_eq!(reason, LoopFinishReason::Error, "{kind}");
        let error = error.unwrap();
        assert!(
            error.contains("HTTP 307") && error.contains(&format!("redirected to {target}")),
            "{kind}: {error}"
        );
        assert!(
            elsewhere.requests().is_empty(),
            "{kind}: the other origin was contacted: {:?}",
            elsewhere.requests()[0].headers
        );
        // The key and the custom header did reach the provider itself.
        let sent = &model_requests(&mock)[0];
        let key = match kind {
            "openai" => sent.header("authorization").map(str::to_owned),
            "anthropic" => sent.header("x-api-key").map(str::to_owned),
            _ => sent.header("x-goog-api-key").map(str::to_owned),
        };
        assert!(key.unwrap().contains(TEST_API_KEY), "{kind}");
        assert_eq!(
            sent.header("x-custom-auth"),
            Some("custom-secret"),
            "{kind}"
        );
    }
}

#[tokio::test]
async fn a_redirect_within_the_origin_is_followed_with_the_key() {
    let mock = MockModel::start().await;
    let daemon = daemon_of("anthropic", &mock).await;
    let client = daemon.client().await;
    let agent = crate::common::new_agent(&client, "moved").await;
    mock.push(Reply::redirect(
        308,
        &format!("{}/v2/messages", root(&mock)),
    ));
    mock.push(Reply::anthropic_text(&["Here."]));
    let (_, events) = send_and_collect(&client, &agent.id, "hi").await;
    assert_eq!(finished(&events), (LoopFinishReason::Completed, None));
    assert_eq!(text_of(&events), "Here.");
    let requests = model_requests(&mock);
    assert_eq!(requests[1].path, "/v2/messages");
    assert_eq!(requests[1].header("x-api-key"), Some(TEST_API_KEY));
    assert_eq!(requests[1].body, requests[0].body, "the body is sent again");
}

/// The stored usage of an answer.
async fn stored_usage(
    client: &agent_proto::client::Client,
    agent_id: &str,
    message_id: &str,
) -> Option<agent_proto::Usage> {
    messages(client, agent_id)
        .await
        .into_iter()
        .find(|m| m.id == message_id)
        .unwrap()
        .usage
}

#[tokio::test]
async fn a_call_whose_id_changes_after_its_first_chunk_runs_whole() {
    // As some OpenAI-compatible servers stream it: the id of the first chunk, then another
    // on the argument pieces.
    let mock = MockModel::start().await;
    let daemon = daemon("openai", &mock.url(), "").await;
    let client = daemon.client().await;
    let (agent, _dir) = tool_agent(&client, None).await;
    std::fs::write(ws(&agent).join("a.txt"), "alpha").unwrap();
    mock.push(Reply::raw_sse_body(concat!(
        "data: {\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"tool_calls\":[{\"index\":0,\"id\":\"call_7f3\",\"type\":\"function\",\"function\":{\"name\":\"read_file\",\"arguments\":\"\"}}]}}]}\n\n",
        "data: {\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"chatcmpl-tool-2b9\",\"function\":{\"arguments\":\"{\\\"path\\\": \"}}]}}]}\n\n",
        "data: {\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"chatcmpl-tool-2b9\",\"function\":{\"arguments\":\"\\\"a.txt\\\"}\"}}]}}]}\n\n",
        "data: {\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n",
        "data: [DONE]\n\n",
    )));
    mock.push(Reply::openai_text(&["It says alpha."]));
    let (_, events) = send_and_collect(&client, &agent.id, "read a.txt").await;
    assert_eq!(finished(&events), (LoopFinishReason::Completed, None));
    assert_eq!(started(&events), [("call_7f3".into(), "read_file".into())]);
    let (status, content, _) = tool_result_of(&events, "call_7f3");
    assert_eq!(status, ToolCallStatus::Success);
    assert!(content.contains("alpha"), "{content}");
}

#[tokio::test]
async fn content_as_a_list_of_thinking_and_text_parts_is_kept() {
    // Mistral's Magistral: `delta.content` is a list of typed parts.
    let mock = MockModel::start().await;
    let daemon = daemon("openai", &mock.url(), "").await;
    let client = daemon.client().await;
    let (agent, _dir) = tool_agent(&client, None).await;
    mock.push(Reply::raw_sse_body(concat!(
        "data: {\"id\":\"m\",\"object\":\"chat.completion.chunk\",\"model\":\"magistral-medium-2509\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\",\"thinking\":[{\"type\":\"text\",\"text\":\"Two and two \"}]}]},\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"m\",\"object\":\"chat.completion.chunk\",\"model\":\"magistral-medium-2509\",\"choices\":[{\"index\":0,\"delta\":{\"content\":[{\"type\":\"thinking\",\"thinking\":[{\"type\":\"text\",\"text\":\"make four.\"}]}]},\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"m\",\"object\":\"chat.completion.chunk\",\"model\":\"magistral-medium-2509\",\"choices\":[{\"index\":0,\"delta\":{\"content\":[{\"type\":\"text\",\"text\":\"It is \"}]},\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"m\",\"object\":\"chat.completion.chunk\",\"model\":\"magistral-medium-2509\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"4.\"},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":12,\"total_tokens\":20,\"completion_tokens\":8}}\n\n",
        "data: [DONE]\n\n",
    )));
    let (sent, events) = send_and_collect(&client, &agent.id, "2+2?").await;
    assert_eq!(finished(&events), (LoopFinishReason::Completed, None));
    assert_eq!(text_of(&events), "It is 4.");
    let stored = messages(&client, &agent.id).await;
    let answer = stored
        .iter()
        .find(|m| m.id == sent.assistant_message_id)
        .unwrap();
    let reasoning: String = answer
        .blocks
        .iter()
        .filter_map(|b| match b {
            Block::Reasoning { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(reasoning, "Two and two make four.");
}

#[tokio::test]
async fn usage_totals_repeated_on_every_chunk_are_counted_once() {
    // vLLM with `continuous_usage_stats` and Gemini's OpenAI endpoint: running totals on
    // every chunk, the last one the answer's.
    let mock = MockModel::start().await;
    let daemon = daemon("openai", &mock.url(), "").await;
    let client = daemon.client().await;
    let (agent, _dir) = tool_agent(&client, None).await;
    mock.push(Reply::raw_sse_body(concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}],\"usage\":{\"prompt_tokens\":40,\"completion_tokens\":0,\"total_tokens\":40}}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"One\"}}],\"usage\":{\"prompt_tokens\":40,\"completion_tokens\":1,\"total_tokens\":41}}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" two\"}}],\"usage\":{\"prompt_tokens\":40,\"completion_tokens\":2,\"total_tokens\":42}}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" three.\"}}],\"usage\":{\"prompt_tokens\":40,\"completion_tokens\":3,\"total_tokens\":43}}\n\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":40,\"completion_tokens\":3,\"total_tokens\":43}}\n\n",
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":40,\"completion_tokens\":3,\"total_tokens\":43}}\n\n",
        "data: [DONE]\n\n",
    )));
    let (sent, events) = send_and_collect(&client, &agent.id, "count").await;
    assert_eq!(finished(&events), (LoopFinishReason::Completed, None));
    assert_eq!(text_of(&events), "One two three.");
    let usage = stored_usage(&client, &agent.id, &sent.assistant_message_id)
        .await
        .expect("the answer's usage");
    assert_eq!((usage.input_tokens, usage.output_tokens), (40, 3));
}

#[tokio::test]
async fn an_anthropic_gateway_giving_the_tool_input_whole_at_the_start_runs_the_call_with_it() {
    let mock = MockModel::start().await;
    let daemon = daemon("anthropic", &root(&mock), "").await;
    let client = daemon.client().await;
    let (agent, _dir) = tool_agent(&client, None).await;
    std::fs::write(ws(&agent).join("a.txt"), "alpha").unwrap();
    mock.push(Reply::raw_sse_body(concat!(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"m\",\"usage\":{\"output_tokens\":0}}}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_g1\",\"name\":\"read_file\",\"input\":{\"path\":\"a.txt\"}}}\n\n",
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
        "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"input_tokens\":52,\"output_tokens\":14}}\n\n",
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
    )));
    mock.push(Reply::anthropic_text(&["It says alpha."]));
    let (sent, events) = send_and_collect(&client, &agent.id, "read a.txt").await;
    assert_eq!(finished(&events), (LoopFinishReason::Completed, None));
    let (status, content, _) = tool_result_of(&events, "toolu_g1");
    assert_eq!(status, ToolCallStatus::Success, "{content}");
    assert!(content.contains("alpha"), "{content}");
    assert_eq!(model_requests(&mock).len(), 2);
    let stored = messages(&client, &agent.id).await;
    let answer = stored
        .iter()
        .find(|m| m.id == sent.assistant_message_id)
        .unwrap();
    let call = answer
        .blocks
        .iter()
        .find_map(|b| match b {
            Block::ToolCall(ToolCallBlock { arguments, .. }) => Some(arguments.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(call, json!({"path": "a.txt"}));
    // The input counted only in `message_delta` is counted, not 0.
    let usage = answer.usage.expect("usage");
    assert!(usage.input_tokens >= 52, "{usage:?}");
}

/// One chunk of llama-cpp-python's OpenAI server streaming a tool call with
/// `chatml-function-calling`, shaped as its source writes it: the deprecated
/// `function_call` beside `tool_calls`, the id and name repeated on every piece,
/// `content: null` and `logprobs: null`.
fn llama_cpp_chunk(arguments: &str, finish: Option<&str>) -> String {
    let call = json!({"name": "read_file", "arguments": arguments});
    let delta = if finish.is_some() {
        json!({})
    } else {
        json!({"role": "assistant", "content": null, "function_call": call,
            "tool_calls": [{"index": 0, "id": "call__0_read_file_cmpl-5c1e", "type": "function",
                "function": call}]})
    };
    let chunk = json!({"id": "chatcmpl-5c1e", "object": "chat.completion.chunk",
        "created": 1764300000, "model": "qwen2.5-7b-instruct-q4_k_m.gguf",
        "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]});
    format!("data: {chunk}\r\n\r\n")
}

#[tokio::test]
async fn llama_cpp_python_gets_a_tool_turn_it_accepts_and_a_refused_request_is_not_retried() {
    let mock = MockModel::start().await;
    let daemon = daemon("openai", &mock.url(), "max_retries = 4").await;
    let client = daemon.client().await;
    let (agent, _dir) = tool_agent(&client, None).await;
    std::fs::write(ws(&agent).join("a.txt"), "alpha").unwrap();
    let stream = [
        llama_cpp_chunk("", None),
        llama_cpp_chunk("{\"path\": ", None),
        llama_cpp_chunk("\"a.txt\"}", None),
        llama_cpp_chunk("", Some("tool_calls")),
        "data: [DONE]\r\n\r\n".to_owned(),
    ]
    .concat();
    mock.push(Reply::raw_sse_body(&stream));
    mock.push(Reply::openai_text(&["It says alpha."]));
    let (_, events) = send_and_collect(&client, &agent.id, "read a.txt").await;
    assert_eq!(finished(&events), (LoopFinishReason::Completed, None));
    let (status, content, _) = tool_result_of(&events, "call__0_read_file_cmpl-5c1e");
    assert_eq!(status, ToolCallStatus::Success, "{content}");
    // The request after the call: the assistant message that only calls a tool has no
    // `content` (llama-cpp-python's schema takes a string or nothing, never null).
    let requests = model_requests(&mock);
    let history = requests[1].body["messages"].as_array().unwrap();
    let calling = history
        .iter()
        .find(|m| m["role"] == "assistant" && m.get("tool_calls").is_some())
        .expect("the assistant message with the call");
    assert!(calling.get("content").is_none(), "{calling}");

    // A 500 whose body is the schema's refusal: one request, not four retries more.
    mock.push(Reply::status(
        500,
        r#"{"error":{"message":"7 validation errors for ChatCompletionRequestAssistantMessage\ncontent\n  Input should be a valid string [type=string_type, input_value=None, input_type=NoneType]","type":"internal_server_error","param":null,"code":null}}"#,
    ));
    let before = model_requests(&mock).len();
    let (_, events) = send_and_collect(&client, &agent.id, "again").await;
    let (reason, error) = finished(&events);
    assert_eq!(reason, LoopFinishReason::Error);
    assert!(error.unwrap_or_default().contains("validation errors"));
    assert_eq!(model_requests(&mock).len(), before + 1, "not retried");
}

#[tokio::test]
async fn finish_reason_error_ends_the_run_with_an_error() {
    // vLLM and OpenRouter: an answer that failed while generating ends with
    // `finish_reason: "error"`, after whatever text came before.
    let mock = MockModel::start().await;
    let daemon = daemon("openai", &mock.url(), "").await;
    let client = daemon.client().await;
    let (agent, _dir) = tool_agent(&client, None).await;
    mock.push(Reply::raw_sse_body(concat!(
        "data: {\"id\":\"gen-1\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"The first half\"},\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"gen-1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\"},\"finish_reason\":\"error\",\"native_finish_reason\":\"error\"}]}\n\n",
        "data: [DONE]\n\n",
    )));
    let (sent, events) = send_and_collect(&client, &agent.id, "go").await;
    let (reason, error) = finished(&events);
    assert_eq!(reason, LoopFinishReason::Error);
    assert!(error.unwrap_or_default().contains("finish_reason"));
    let stored = messages(&client, &agent.id).await;
    let answer = stored
        .iter()
        .find(|m| m.id == sent.assistant_message_id)
        .unwrap();
    assert_eq!(answer.status, MessageStatus::Error);
    assert!(
        answer.text().starts_with("The first half"),
        "{:?}",
        answer.blocks
    );
}

#[tokio::test]
async fn an_overloaded_error_in_the_middle_of_an_anthropic_answer_is_retryable() {
    let mock = MockModel::start().await;
    let daemon = daemon("anthropic", &root(&mock), "").await;
    let client = daemon.client().await;
    let (agent, _dir) = tool_agent(&client, None).await;
    mock.push(Reply::raw_sse_body(concat!(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"m\",\"usage\":{\"input_tokens\":9,\"output_tokens\":1}}}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Let me\"}}\n\n",
        "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
    )));
    let (_, events) = send_and_collect(&client, &agent.id, "go").await;
    assert_eq!(finished(&events).0, LoopFinishReason::Error);
    let error = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::Error {
                kind, retryable, ..
            } => Some((kind.clone(), *retryable)),
            _ => None,
        })
        .expect("an error event");
    assert_eq!(error, ("providerStreamError".to_owned(), true));
    assert_eq!(text_of(&events), "Let me");
}

#[tokio::test]
async fn an_html_error_page_is_told_in_short() {
    // A proxy's 100 KB error page: its title and the start of its text, not the markup.
    let mock = MockModel::start().await;
    let daemon = daemon("openai", &mock.url(), "").await;
    let client = daemon.client().await;
    let (agent, _dir) = tool_agent(&client, None).await;
    let page = format!(
        "<!DOCTYPE html><html><head><title>502 Bad Gateway</title><script>{}</script></head>\
         <body><h1>502 Bad Gateway</h1><p>cloudflare</p></body></html>",
        "var x = 1;".repeat(10_000)
    );
    mock.push(Reply::status(502, &page));
    let (_, events) = send_and_collect(&client, &agent.id, "hi").await;
    assert_eq!(finished(&events).0, LoopFinishReason::Error);
    let message = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::Error { message, .. } => Some(message.clone()),
            _ => None,
        })
        .expect("an error event");
    assert!(message.contains("502 Bad Gateway"), "{message}");
    assert!(!message.contains("var x"), "{message}");
    assert!(message.len() < 2048, "{} bytes: {message}", message.len());
}

#[tokio::test]
async fn continuing_an_anthropic_answer_cut_after_whitespace_sends_no_trailing_whitespace() {
    // The Messages API refuses a final assistant message ending in whitespace (400).
    let mock = MockModel::start().await;
    let daemon = daemon("anthropic", &root(&mock), "").await;
    let client = daemon.client().await;
    let (agent, _dir) = tool_agent(&client, None).await;
    mock.push(Reply::raw_sse_body(concat!(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":9,\"output_tokens\":1}}}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"First paragraph.\\n\\n\"}}\n\n",
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
        "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"max_tokens\"},\"usage\":{\"output_tokens\":4}}\n\n",
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
    )));
    let (_, events) = send_and_collect(&client, &agent.id, "write").await;
    assert_eq!(finished(&events), (LoopFinishReason::MaxTokens, None));
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    mock.push(Reply::anthropic_text(&["Second paragraph."]));
    client.continue_loop(agent.id.clone()).await.unwrap();
    let events = agentd_testkit::events::collect_run(&mut sub, Duration::from_secs(20)).await;
    assert_eq!(finished(&events).0, LoopFinishReason::Completed);
    let last = model_requests(&mock).pop().unwrap();
    let prefill = last.body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(prefill["role"], "assistant", "{prefill}");
    assert_eq!(
        prefill["content"][0]["text"], "First paragraph.",
        "{prefill}"
    );
}

#[tokio::test]
async fn gemini_call_ids_go_back_usage_after_the_finish_counts_and_an_empty_stop_is_an_error() {
    let mock = MockModel::start().await;
    let daemon = daemon("gemini", &root(&mock), "").await;
    let client = daemon.client().await;
    let (agent, _dir) = tool_agent(&client, None).await;
    std::fs::write(ws(&agent).join("a.txt"), "alpha").unwrap();
    mock.push(Reply::raw_sse_body(concat!(
        "data: {\"candidates\": [{\"content\": {\"role\": \"model\",\"parts\": [{\"functionCall\": {\"id\": \"fc-7\",\"name\": \"read_file\",\"args\": {\"path\": \"a.txt\"}}}]},\"finishReason\": \"STOP\",\"index\": 0}],\"modelVersion\": \"gemini-3-pro\"}\r\n\r\n",
        "data: {\"usageMetadata\": {\"promptTokenCount\": 20,\"candidatesTokenCount\": 5,\"totalTokenCount\": 25},\"modelVersion\": \"gemini-3-pro\"}\r\n\r\n",
    )));
    mock.push(Reply::raw_sse_body(
        "data: {\"candidates\": [{\"content\": {\"role\": \"model\",\"parts\": [{\"text\": \"It says alpha.\"}]},\"finishReason\": \"STOP\",\"index\": 0}],\"usageMetadata\": {\"promptTokenCount\": 40,\"candidatesTokenCount\": 4}}\r\n\r\n",
    ));
    let (_, events) = send_and_collect(&client, &agent.id, "read a.txt").await;
    assert_eq!(finished(&events), (LoopFinishReason::Completed, None));
    assert_eq!(tool_result_of(&events, "fc-7").0, ToolCallStatus::Success);
    let usage = usage_of(&events);
    assert_eq!(usage, [(20, 5), (40, 4)]);
    // The call and its result went back with Gemini's id.
    let requests = model_requests(&mock);
    let contents = requests[1].body["contents"].as_array().unwrap();
    let parts: Vec<&serde_json::Value> = contents
        .iter()
        .flat_map(|c| c["parts"].as_array().unwrap())
        .collect();
    assert!(
        parts.iter().any(|p| p["functionCall"]["id"] == "fc-7"),
        "{parts:?}"
    );
    assert!(
        parts.iter().any(|p| p["functionResponse"]["id"] == "fc-7"),
        "{parts:?}"
    );

    // STOP with nothing: an error, not a silent empty answer.
    mock.push(Reply::raw_sse_body(
        "data: {\"candidates\": [{\"content\": {\"role\": \"model\",\"parts\": [{\"text\": \"\"}]},\"finishReason\": \"STOP\",\"index\": 0}]}\r\n\r\n",
    ));
    let (_, events) = send_and_collect(&client, &agent.id, "and?").await;
    let (reason, error) = finished(&events);
    assert_eq!(reason, LoopFinishReason::Error);
    assert!(error.unwrap_or_default().contains("empty answer"));
}

/// A daemon whose provider `p` of `kind` at the mock has extended thinking on for its
/// model `m` (Anthropic's `thinking_budget`).
async fn thinking_daemon(mock: &MockModel) -> TestDaemon {
    let config = config("anthropic", &root(mock), "").replace(
        "models = [{ id = \"m\" }]",
        "models = [{ id = \"m\", thinking_budget = 1024 }]",
    );
    TestDaemon::start(bin(), &config).await
}

/// The assistant message of a chat-completions request that calls tools.
fn calling_message(body: &serde_json::Value) -> serde_json::Value {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "assistant" && m.get("tool_calls").is_some())
        .unwrap_or_else(|| panic!("no assistant message with calls: {body}"))
        .clone()
}

#[tokio::test]
async fn openrouter_reasoning_details_go_back_merged_as_received() {
    // OpenRouter in front of a Claude thinking model (as recorded): the reasoning in
    // `delta.reasoning` and, beside it, `delta.reasoning_details` pieces at index 0 (the
    // text, then the signature alone), an encrypted detail at index 1, the text chunks
    // with `"reasoning_details": []`. The next step must carry the details back, or
    // OpenRouter answers 400.
    let mock = MockModel::start().await;
    let daemon = daemon("openai", &mock.url(), "").await;
    let client = daemon.client().await;
    let (agent, _dir) = tool_agent(&client, None).await;
    std::fs::write(ws(&agent).join("a.txt"), "alpha").unwrap();
    mock.push(Reply::raw_sse_body(concat!(
        "data: {\"id\":\"gen-1\",\"provider\":\"Google\",\"model\":\"anthropic/claude-sonnet-4\",\"object\":\"chat.completion.chunk\",\"created\":1758886222,\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\",\"reasoning\":null,\"reasoning_details\":[]},\"finish_reason\":null,\"native_finish_reason\":null,\"logprobs\":null}]}\n\n",
        "data: {\"id\":\"gen-1\",\"provider\":\"Google\",\"model\":\"anthropic/claude-sonnet-4\",\"object\":\"chat.completion.chunk\",\"created\":1758886222,\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\",\"reasoning\":null,\"reasoning_details\":[{\"type\":\"reasoning.text\",\"text\":\"\",\"signature\":\"\",\"format\":\"anthropic-claude-v1\",\"index\":0}]},\"finish_reason\":null,\"native_finish_reason\":null,\"logprobs\":null}]}\n\n",
        "data: {\"id\":\"gen-1\",\"provider\":\"Google\",\"model\":\"anthropic/claude-sonnet-4\",\"object\":\"chat.completion.chunk\",\"created\":1758886222,\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\",\"reasoning\":\"The user wants\",\"reasoning_details\":[{\"type\":\"reasoning.text\",\"text\":\"The user wants\",\"format\":\"anthropic-claude-v1\",\"index\":0}]},\"finish_reason\":null,\"native_finish_reason\":null,\"logprobs\":null}]}\n\n",
        "data: {\"id\":\"gen-1\",\"provider\":\"Google\",\"model\":\"anthropic/claude-sonnet-4\",\"object\":\"chat.completion.chunk\",\"created\":1758886222,\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\",\"reasoning\":\" a.txt read.\",\"reasoning_details\":[{\"type\":\"reasoning.text\",\"text\":\" a.txt read.\",\"format\":\"anthropic-claude-v1\",\"index\":0}]},\"finish_reason\":null,\"native_finish_reason\":null,\"logprobs\":null}]}\n\n",
        "data: {\"id\":\"gen-1\",\"provider\":\"Google\",\"model\":\"anthropic/claude-sonnet-4\",\"object\":\"chat.completion.chunk\",\"created\":1758886222,\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\",\"reasoning\":null,\"reasoning_details\":[{\"type\":\"reasoning.text\",\"signature\":\"EqcDCkgICBACGAIqQDV0Mem0naIq1Zn2wwggk+SBqPlbWaJWd11LLeySu8CMYgep7DpQ==\",\"format\":\"anthropic-claude-v1\",\"index\":0}]},\"finish_reason\":null,\"native_finish_reason\":null,\"logprobs\":null}]}\n\n",
        "data: {\"id\":\"gen-1\",\"provider\":\"Google\",\"model\":\"anthropic/claude-sonnet-4\",\"object\":\"chat.completion.chunk\",\"created\":1758886222,\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\",\"reasoning\":null,\"reasoning_details\":[{\"type\":\"reasoning.encrypted\",\"data\":\"EmwKAhgBEgy3va3pzix/LafPsn4a\",\"format\":\"anthropic-claude-v1\",\"index\":1}]},\"finish_reason\":null,\"native_finish_reason\":null,\"logprobs\":null}]}\n\n",
        "data: {\"id\":\"gen-1\",\"provider\":\"Google\",\"model\":\"anthropic/claude-sonnet-4\",\"object\":\"chat.completion.chunk\",\"created\":1758886222,\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"I will read it.\",\"reasoning\":null,\"reasoning_details\":[]},\"finish_reason\":null,\"native_finish_reason\":null,\"logprobs\":null}]}\n\n",
        "data: {\"id\":\"gen-1\",\"provider\":\"Google\",\"model\":\"anthropic/claude-sonnet-4\",\"object\":\"chat.completion.chunk\",\"created\":1758886222,\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"id\":\"toolu_vrtx_01UHJ\",\"index\":0,\"type\":\"function\",\"function\":{\"name\":\"read_file\",\"arguments\":\"\"}}]},\"finish_reason\":null,\"native_finish_reason\":null,\"logprobs\":null}]}\n\n",
        "data: {\"id\":\"gen-1\",\"provider\":\"Google\",\"model\":\"anthropic/claude-sonnet-4\",\"object\":\"chat.completion.chunk\",\"created\":1758886222,\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"index\":0,\"type\":\"function\",\"function\":{\"arguments\":\"{\\\"path\\\": \\\"a.txt\\\"}\"}}]},\"finish_reason\":null,\"native_finish_reason\":null,\"logprobs\":null}]}\n\n",
        "data: {\"id\":\"gen-1\",\"provider\":\"Google\",\"model\":\"anthropic/claude-sonnet-4\",\"object\":\"chat.completion.chunk\",\"created\":1758886222,\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\",\"reasoning\":null,\"reasoning_details\":[]},\"finish_reason\":\"tool_calls\",\"native_finish_reason\":\"tool_calls\",\"logprobs\":null}]}\n\n",
        "data: {\"id\":\"gen-1\",\"provider\":\"Google\",\"model\":\"anthropic/claude-sonnet-4\",\"object\":\"chat.completion.chunk\",\"created\":1758886222,\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null,\"native_finish_reason\":null,\"logprobs\":null}],\"usage\":{\"prompt_tokens\":423,\"completion_tokens\":110,\"total_tokens\":533}}\n\n",
        "data: [DONE]\n\n",
    )));
    mock.push(Reply::openai_text(&["It says alpha."]));
    let (sent, events) = send_and_collect(&client, &agent.id, "read a.txt").await;
    assert_eq!(finished(&events), (LoopFinishReason::Completed, None));
    assert_eq!(
        tool_result_of(&events, "toolu_vrtx_01UHJ").0,
        ToolCallStatus::Success
    );
    assert_eq!(text_of(&events), "I will read it.It says alpha.");
    let merged = json!([
        {"type": "reasoning.text", "text": "The user wants a.txt read.",
         "signature": "EqcDCkgICBACGAIqQDV0Mem0naIq1Zn2wwggk+SBqPlbWaJWd11LLeySu8CMYgep7DpQ==",
         "format": "anthropic-claude-v1", "index": 0},
        {"type": "reasoning.encrypted", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a",
         "format": "anthropic-claude-v1", "index": 1}
    ]);
    let requests = model_requests(&mock);
    assert_eq!(requests.len(), 2);
    let calling = calling_message(&requests[1].body);
    assert_eq!(calling["reasoning_details"], merged, "{calling}");
    assert!(calling.get("reasoning_content").is_none(), "{calling}");
    // Kept with the message (opaque, on its reasoning block), never shown as an event.
    let stored = messages(&client, &agent.id).await;
    let answer = stored
        .iter()
        .find(|m| m.id == sent.assistant_message_id)
        .unwrap();
    let kept: Vec<(String, Option<serde_json::Value>)> = answer
        .blocks
        .iter()
        .filter_map(|b| match b {
            Block::Reasoning { text, details, .. } => Some((text.clone(), details.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        kept,
        [("The user wants a.txt read.".to_owned(), Some(merged))]
    );
    assert!(!serde_json::to_string(&events).unwrap().contains("EmwKAhgB"));
}

#[tokio::test]
async fn an_anthropic_turn_paused_by_the_server_goes_on_with_its_content_sent_back() {
    // `pause_turn`: the API paused a long turn (its server tools at work) and expects the
    // assistant content back as the last message to go on. The run must not end there.
    let mock = MockModel::start().await;
    let daemon = thinking_daemon(&mock).await;
    let client = daemon.client().await;
    let (agent, _dir) = tool_agent(&client, None).await;
    mock.push(Reply::raw_sse_body(concat!(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_01P\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":410,\"output_tokens\":3}}}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"\"}}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"This needs a long search.\"}}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"EuYBCkQYAiJAcGF1c2Vk\"}}\n\n",
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"The first part. \"}}\n\n",
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
        "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"pause_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":40}}\n\n",
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
    )));
    mock.push(Reply::raw_sse_body(concat!(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_02P\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":460,\"output_tokens\":2}}}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"The second part.\"}}\n\n",
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
        "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":6}}\n\n",
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
    )));
    let (sent, events) = send_and_collect(&client, &agent.id, "research this").await;
    assert_eq!(finished(&events), (LoopFinishReason::Completed, None));
    assert_eq!(text_of(&events), "The first part. The second part.");
    let requests = model_requests(&mock);
    assert_eq!(requests.len(), 2, "the paused turn was continued once");
    let history = requests[1].body["messages"].as_array().unwrap();
    assert_eq!(
        history.last().unwrap(),
        &json!({"role": "assistant", "content": [
            {"type": "thinking", "thinking": "This needs a long search.", "signature": "EuYBCkQYAiJAcGF1c2Vk"},
            {"type": "text", "text": "The first part."}
        ]}),
        "the paused content goes back as the last message"
    );
    let stored = messages(&client, &agent.id).await;
    let answer = stored
        .iter()
        .find(|m| m.id == sent.assistant_message_id)
        .unwrap();
    assert_eq!(answer.status, MessageStatus::Done);
    assert_eq!(answer.text(), "The first part. The second part.");
}

#[tokio::test]
async fn interleaved_thinking_and_tool_use_go_back_in_the_order_they_came() {
    // Interleaved thinking: one answer is thinking, tool_use, thinking, tool_use. The
    // next request carries those blocks in that order, each thinking with its signature.
    let mock = MockModel::start().await;
    let daemon = thinking_daemon(&mock).await;
    let client = daemon.client().await;
    let (agent, _dir) = tool_agent(&client, None).await;
    std::fs::write(ws(&agent).join("a.txt"), "alpha").unwrap();
    std::fs::write(ws(&agent).join("b.txt"), "beta").unwrap();
    mock.push(Reply::raw_sse_body(concat!(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_01I\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":520,\"output_tokens\":4}}}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"\"}}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"First a.txt.\"}}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"EqoBCkgIAxABc2lnLTE=\"}}\n\n",
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_01A\",\"name\":\"read_file\",\"input\":{}}}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"path\\\": \\\"a.txt\\\"}\"}}\n\n",
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":2,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"\"}}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"Then b.txt.\"}}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"EqoBCkgIAxABc2lnLTI=\"}}\n\n",
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":2}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":3,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_01B\",\"name\":\"read_file\",\"input\":{}}}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":3,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"path\\\": \\\"b.txt\\\"}\"}}\n\n",
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":3}\n\n",
        "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":90}}\n\n",
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
    )));
    mock.push(Reply::anthropic_text(&["alpha and beta"]));
    let (_, events) = send_and_collect(&client, &agent.id, "read a then b").await;
    assert_eq!(finished(&events), (LoopFinishReason::Completed, None));
    assert_eq!(
        tool_result_of(&events, "toolu_01A").0,
        ToolCallStatus::Success
    );
    assert_eq!(
        tool_result_of(&events, "toolu_01B").0,
        ToolCallStatus::Success
    );
    let requests = model_requests(&mock);
    let history = requests[1].body["messages"].as_array().unwrap();
    assert_eq!(
        history[1],
        json!({"role": "assistant", "content": [
            {"type": "thinking", "thinking": "First a.txt.", "signature": "EqoBCkgIAxABc2lnLTE="},
            {"type": "tool_use", "id": "toolu_01A", "name": "read_file", "input": {"path": "a.txt"}},
            {"type": "thinking", "thinking": "Then b.txt.", "signature": "EqoBCkgIAxABc2lnLTI="},
            {"type": "tool_use", "id": "toolu_01B", "name": "read_file", "input": {"path": "b.txt"}}
        ]})
    );
    let results: Vec<&serde_json::Value> = history[2]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| &b["tool_use_id"])
        .collect();
    assert_eq!(results, [&json!("toolu_01A"), &json!("toolu_01B")]);
}
