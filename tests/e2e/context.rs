//! Context management end to end: a tiny window through many turns (shrinking, then
//! summaries), a failing summary, previews equal to what was sent, the context edge,
//! regenerate, and titles.

use agentd_testkit::send::SendByName;
use std::time::Duration;

use agent_proto::client::Client;
use agent_proto::rpc::AgentRpcClient;
use agent_proto::{Agent, Event, EventKind, LoopFinishReason, Message, MessageStatus};
use agentd::context::tokens::{MESSAGE_OVERHEAD, estimate};
use agentd_testkit::daemon::{TEST_API_KEY, TestDaemon};
use agentd_testkit::events::{collect_until, text_of};
use agentd_testkit::mock_model::{MockModel, RecordedRequest, Reply, openai_chunk};
use serde_json::{Value, json};

use crate::common::{
    ALLOW_ALL, error_of, messages, model_requests, send_and_collect, start_with, tool_scenario,
};
use agent_proto::ToolCallBlock;

/// Window 2,000, output 500: a budget of 1,500 tokens; summaries start at 1,600.
const BUDGET: u64 = 1500;
const SUMMARY_NEEDLE: &str = "Summarize the conversation above";

fn tiny_provider(mock: &MockModel) -> String {
    format!(
        r#"
[[providers]]
id = "tiny"
kind = "openai"
base_url = "{}"
api_key = "{TEST_API_KEY}"
max_retries = 0
models = [{{ id = "tiny", context_window = 2000, max_output_tokens = 500 }}]
"#,
        mock.url()
    )
}

async fn start_tiny() -> (MockModel, TestDaemon) {
    let mock = MockModel::start().await;
    let extra = tiny_provider(&mock);
    let config = agentd_testkit::daemon::openai_config_with(&mock.url(), &extra);
    let daemon = TestDaemon::start(crate::common::bin(), &config).await;
    (mock, daemon)
}

async fn tiny_agent(client: &Client, settings: Value) -> Agent {
    client
        .create_agent(
            None,
            None,
            Some("tiny".into()),
            Some("tiny".into()),
            Some("Answer briefly.".into()),
            None,
            None,
            Some(settings),
            None,
        )
        .await
        .expect("createAgent")
}

/// A streamed answer without a usage chunk (so the daemon's estimates stay uncalibrated
/// and comparable with [`estimated`]), with some reasoning first.
fn answer(text: &str) -> Reply {
    Reply::sse(vec![
        openai_chunk(json!({"reasoning_content": "private reasoning"}), None),
        openai_chunk(json!({"content": text}), None),
        openai_chunk(json!({}), Some("stop")),
        "[DONE]".into(),
    ])
}

/// The daemon's token estimate of a recorded OpenAI body (the system prompt counted as a
/// message, so a little over the daemon's own count: the check is at least as strict).
fn estimated(body: &Value) -> u64 {
    let text = |v: &Value| v.as_str().map_or(0, estimate);
    let mut total = 0;
    for m in body["messages"].as_array().into_iter().flatten() {
        total += MESSAGE_OVERHEAD + text(&m["content"]);
        for c in m["tool_calls"].as_array().into_iter().flatten() {
            total +=
                MESSAGE_OVERHEAD + text(&c["function"]["name"]) + text(&c["function"]["arguments"]);
        }
    }
    for t in body["tools"].as_array().into_iter().flatten() {
        let f = &t["function"];
        total += MESSAGE_OVERHEAD
            + text(&f["name"])
            + text(&f["description"])
            + estimate(&f["parameters"].to_string());
    }
    total
}

fn question(turn: usize) -> String {
    format!(
        "Question {turn}: tell me about topic {turn}, the history of its ideas, the people who shaped it and why it matters today"
    )
}

fn reply_text(turn: usize) -> String {
    format!(
        "Answer {turn}: topic {turn} began long ago; {} and that is the gist of topic {turn}.",
        "many thinkers added to it over the years ".repeat(4)
    )
}

/// The user and assistant contents of a request body, without the system prompt.
fn contents(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn is_summary_call(r: &RecordedRequest) -> bool {
    r.body_text.contains(SUMMARY_NEEDLE)
}

/// Sends `turns` questions, one answer each; returns every event.
async fn converse(
    client: &Client,
    mock: &MockModel,
    agent: &Agent,
    turns: std::ops::Range<usize>,
) -> Vec<Event> {
    let mut all = Vec::new();
    for turn in turns {
        mock.push(answer(&reply_text(turn)));
        let (_, events) = send_and_collect(client, &agent.id, &question(turn)).await;
        assert!(
            matches!(
                events.last().map(|e| &e.kind),
                Some(EventKind::LoopFinished {
                    reason: LoopFinishReason::Completed,
                    ..
                })
            ),
            "turn {turn}: {:?}",
            agentd_testkit::events::type_names(&events)
        );
        assert_eq!(text_of(&events), reply_text(turn));
        all.extend(events);
    }
    all
}

fn summarized(events: &[Event]) -> Vec<(u64, u64, u64)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Summarized {
                before_tokens,
                after_tokens,
                summarized_messages,
                ..
            } => Some((*before_tokens, *after_tokens, *summarized_messages)),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_tiny_window_never_gets_a_request_over_its_budget() {
    let (mock, daemon) = start_tiny().await;
    let client = daemon.client().await;
    let agent = tiny_agent(&client, json!({"autoSummarize": false})).await;
    let events = converse(&client, &mock, &agent, 0..30).await;
    assert!(summarized(&events).is_empty());
    let requests = model_requests(&mock);
    assert_eq!(requests.len(), 30);
    for (turn, r) in requests.iter().enumerate() {
        let size = estimated(&r.body);
        assert!(size <= BUDGET, "turn {turn}: {size} tokens");
        let contents = contents(&r.body);
        assert_eq!(
            contents.last().unwrap(),
            &question(turn),
            "the latest round stays"
        );
        assert!(
            contents[0].starts_with("Question "),
            "starts with a user turn"
        );
    }
    // the history no longer fits: the oldest rounds went first
    let last = contents(&requests[29].body);
    assert!(!last.contains(&question(0)) && last.contains(&reply_text(28)));
    // nothing is lost from the store
    assert_eq!(messages(&client, &agent.id).await.len(), 60);
    // the preview says what was done
    let preview = client
        .get_message_request_preview(agent.id.clone(), None)
        .await
        .unwrap();
    let c = &preview.context;
    assert_eq!((c.context_window, c.budget), (2000, BUDGET));
    assert!(c.dropped_rounds > 0 && !c.over_budget, "{c:?}");
    assert_eq!(
        preview.estimated_tokens,
        c.system_tokens + c.tools_tokens + c.messages_tokens
    );
    assert!(
        preview.estimated_tokens <= BUDGET && c.estimated_before > BUDGET,
        "{c:?}"
    );
}

#[tokio::test]
async fn summaries_fold_old_rounds_and_lead_the_next_requests() {
    let (mock, daemon) = start_tiny().await;
    let client = daemon.client().await;
    mock.route(
        SUMMARY_NEEDLE,
        answer("SUMMARY: the user asks about numbered topics, one per turn."),
    );
    let agent = tiny_agent(&client, json!({})).await;
    let events = converse(&client, &mock, &agent, 0..45).await;
    let made = summarized(&events);
    assert!(made.len() >= 2, "{made:?}");
    for (before, after, count) in &made {
        assert!(after < before && *count > 0, "{made:?}");
    }
    let requests = model_requests(&mock);
    let first = requests
        .iter()
        .position(is_summary_call)
        .expect("a summary call");
    // the summary call: the rounds as text, no tools, no reasoning, the instructions
    let call = &requests[first].body;
    assert!(call.get("tools").is_none());
    let text = call["messages"][1]["content"].as_str().unwrap();
    assert!(
        text.starts_with("Conversation:\n\nUser:\nQuestion 0:"),
        "{text}"
    );
    assert!(text.contains("Agent:\nAnswer ") && text.contains("open tasks"));
    assert!(!call.to_string().contains("private reasoning"));
    assert!(
        call["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("condense")
    );
    // the next request starts with the summary, then the kept rounds
    let next = contents(&requests[first + 1].body);
    assert_eq!(
        next[0],
        "[Context Summary]\nSUMMARY: the user asks about numbered topics, one per turn."
    );
    assert!(next[1].starts_with("Question "));
    // a later summary includes the one before it
    let later = requests
        .iter()
        .skip(first + 1)
        .find(|r| is_summary_call(r))
        .unwrap();
    assert!(
        later
            .body_text
            .contains("Summary of the conversation before:\\nSUMMARY: the user")
    );
    // every request of the conversation fits, and the summary leads each one after the first
    for r in requests
        .iter()
        .filter(|r| !is_summary_call(r))
        .skip(first + 1)
    {
        assert!(estimated(&r.body) <= BUDGET);
        assert!(contents(&r.body)[0].starts_with("[Context Summary]"));
    }
    // the originals stay listed
    let listed = messages(&client, &agent.id).await;
    assert_eq!(listed.len(), 90);
    assert_eq!(listed[0].text(), question(0));
    // the preview of each answer is the request that produced it
    let answers: Vec<&Message> = listed
        .iter()
        .filter(|m| m.role == agent_proto::Role::Assistant)
        .collect();
    let produced: Vec<&RecordedRequest> = requests.iter().filter(|r| !is_summary_call(r)).collect();
    for (answer, request) in answers.iter().zip(&produced) {
        let preview = client
            .get_message_request_preview(agent.id.clone(), Some(answer.id.clone()))
            .await
            .unwrap();
        assert_eq!(preview.request, request.body, "answer {:?}", answer.text());
    }
}

#[tokio::test]
async fn a_failing_summary_falls_back_to_shrinking() {
    let (mock, daemon) = start_tiny().await;
    let client = daemon.client().await;
    mock.route(SUMMARY_NEEDLE, Reply::status(500, "summary service down"));
    let agent = tiny_agent(&client, json!({})).await;
    let events = converse(&client, &mock, &agent, 0..20).await;
    assert!(summarized(&events).is_empty());
    let requests = model_requests(&mock);
    let attempts = requests.iter().filter(|r| is_summary_call(r)).count();
    assert!(attempts >= 1, "a summary was tried");
    for r in requests.iter().filter(|r| !is_summary_call(r)) {
        assert!(estimated(&r.body) <= BUDGET);
        assert!(!contents(&r.body)[0].starts_with("[Context Summary]"));
    }
    // not retried on every call: a failure skips the next check
    assert!(attempts <= 10, "{attempts} summary attempts in 20 turns");
    assert!(
        daemon
            .log()
            .contains("summarizing failed, shrinking instead")
    );
}

#[tokio::test]
async fn the_context_edge_hides_earlier_messages_until_cleared() {
    let (mock, daemon) = start_with("").await;
    let client = daemon.client().await;
    let agent = crate::common::new_agent(&client, "edge").await;
    converse(&client, &mock, &agent, 0..3).await;
    let listed = messages(&client, &agent.id).await;
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    let updated = client
        .set_context_edge(agent.id.clone(), Some(listed[3].id.clone()))
        .await
        .unwrap();
    assert_eq!(updated.context_edge.as_deref(), Some(listed[3].id.as_str()));
    let seen = collect_until(&mut sub, Duration::from_secs(10), |e| {
        matches!(e.kind, EventKind::AgentUpdated { .. })
    })
    .await;
    let EventKind::AgentUpdated { agent: seen } = &seen.last().unwrap().kind else {
        unreachable!()
    };
    assert_eq!(seen.context_edge, updated.context_edge);
    converse(&client, &mock, &agent, 3..4).await;
    let sent = contents(&model_requests(&mock)[3].body);
    assert_eq!(sent, [question(2), reply_text(2), question(3)]);
    assert_eq!(
        messages(&client, &agent.id).await.len(),
        8,
        "nothing deleted"
    );
    // cleared: everything again
    let cleared = client
        .set_context_edge(agent.id.clone(), None)
        .await
        .unwrap();
    assert_eq!(cleared.context_edge, None);
    converse(&client, &mock, &agent, 4..5).await;
    assert_eq!(contents(&model_requests(&mock)[4].body).len(), 9);
    // a message that is not the agent's
    let other = crate::common::new_agent(&client, "other").await;
    let e = client
        .set_context_edge(other.id.clone(), Some(listed[0].id.clone()))
        .await
        .unwrap_err();
    assert_eq!(error_of(&e).1, "messageNotFound");
}

#[tokio::test]
async fn regenerate_makes_a_variant_and_only_it_is_sent_on() {
    let (mock, daemon) = start_with("").await;
    let client = daemon.client().await;
    let agent = crate::common::new_agent(&client, "regen").await;
    converse(&client, &mock, &agent, 0..2).await;
    let listed = messages(&client, &agent.id).await;
    let old = listed[3].clone();
    // only the latest answer, and only answers
    let e = client
        .regenerate(agent.id.clone(), listed[1].id.clone())
        .await
        .unwrap_err();
    assert_eq!(error_of(&e).1, "invalidState");
    let e = client
        .regenerate(agent.id.clone(), listed[2].id.clone())
        .await
        .unwrap_err();
    assert_eq!(error_of(&e).1, "invalidParams");
    mock.push(answer("a better second answer"));
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    let result = client
        .regenerate(agent.id.clone(), old.id.clone())
        .await
        .unwrap();
    let events = agentd_testkit::events::collect_run(&mut sub, Duration::from_secs(30)).await;
    assert_eq!(text_of(&events), "a better second answer");
    // the regenerated call saw the same history as the first one
    let requests = model_requests(&mock);
    assert_eq!(requests[2].body["messages"], requests[1].body["messages"]);
    let listed = messages(&client, &agent.id).await;
    assert_eq!(listed.len(), 5);
    assert!(listed[3].superseded && listed[3].id == old.id);
    assert_eq!(listed[4].id, result.assistant_message_id);
    assert_eq!(listed[4].variant_of.as_deref(), Some(old.id.as_str()));
    assert_eq!(listed[4].status, MessageStatus::Done);
    // a second variant points at the first answer too
    mock.push(answer("third try"));
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    let third = client
        .regenerate(agent.id.clone(), result.assistant_message_id.clone())
        .await
        .unwrap();
    agentd_testkit::events::collect_run(&mut sub, Duration::from_secs(30)).await;
    let listed = messages(&client, &agent.id).await;
    assert_eq!(listed[5].id, third.assistant_message_id);
    assert_eq!(listed[5].variant_of.as_deref(), Some(old.id.as_str()));
    // the next request carries only the live variant
    converse(&client, &mock, &agent, 2..3).await;
    let sent = contents(&model_requests(&mock)[4].body);
    assert_eq!(
        sent,
        [
            question(0),
            reply_text(0),
            question(1),
            "third try".into(),
            question(2)
        ]
    );
}

#[tokio::test]
async fn regenerate_keeps_the_steps_before_the_last() {
    let (mock, _daemon, client, agent, _ws) = tool_scenario(ALLOW_ALL).await.into_parts();
    mock.push(Reply::openai_tool_calls(
        &["listing"],
        &[("call-1", "bash", r#"{"command":"echo hi"}"#)],
    ));
    mock.push(answer("it said hi"));
    let (_, events) = send_and_collect(&client, &agent.id, "run echo").await;
    assert!(text_of(&events).ends_with("it said hi"));
    let old = messages(&client, &agent.id).await[1].clone();
    mock.push(answer("the output was hi"));
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    let result = client
        .regenerate(agent.id.clone(), old.id.clone())
        .await
        .unwrap();
    agentd_testkit::events::collect_run(&mut sub, Duration::from_secs(30)).await;
    // one more model call, with the tool call and its result as before
    let requests = model_requests(&mock);
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[2].body["messages"], requests[1].body["messages"]);
    let variant = messages(&client, &agent.id).await[2].clone();
    assert_eq!(variant.id, result.assistant_message_id);
    assert!(matches!(
        variant.blocks[1],
        agent_proto::Block::ToolCall(ToolCallBlock { .. })
    ));
    assert!(
        variant.text().ends_with("the output was hi") && !variant.text().contains("it said hi")
    );
}

#[tokio::test]
async fn titles_come_from_the_first_message_then_from_the_model() {
    let (mock, daemon) = start_with("").await;
    let client = daemon.client().await;
    mock.route("You name conversations", answer("\"Login bug triage.\""));
    let agent = client
        .create_agent(
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            Some(json!({"autoTitle": true})),
            None,
        )
        .await
        .unwrap();
    assert_eq!(agent.title, "New agent");
    mock.push(answer("Let us look at the login code."));
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    client
        .send_plain(
            agent.id.clone(),
            "Why does login fail after the upgrade?".into(),
        )
        .await
        .unwrap();
    let titles = |events: &[Event]| -> Vec<String> {
        events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::AgentUpdated { agent } => Some(agent.title.clone()),
                _ => None,
            })
            .collect()
    };
    let events = collect_until(&mut sub, Duration::from_secs(30), |e| {
        matches!(&e.kind, EventKind::AgentUpdated { agent } if agent.title == "Login bug triage")
    })
    .await;
    assert_eq!(
        titles(&events),
        ["Why does login fail after the upgrade?", "Login bug triage"]
    );
    let types = agentd_testkit::events::type_names(&events);
    let finished = types.iter().position(|t| *t == "loopFinished").unwrap();
    assert_eq!(
        types[finished + 1],
        "agentUpdated",
        "the model's title comes after the run"
    );
    assert_eq!(
        client.get_agent(agent.id.clone()).await.unwrap().title,
        "Login bug triage"
    );
    // a second answer does not rename it; an explicit title is never replaced
    mock.push(answer("ok"));
    send_and_collect(&client, &agent.id, "thanks").await;
    let named = crate::common::new_agent(&client, "Mine").await;
    mock.push(answer("ok"));
    send_and_collect(&client, &named.id, "hello there").await;
    assert_eq!(
        client.get_agent(named.id.clone()).await.unwrap().title,
        "Mine"
    );
    let title_calls = model_requests(&mock)
        .iter()
        .filter(|r| r.body_text.contains("You name conversations"))
        .count();
    assert_eq!(title_calls, 1);
}
