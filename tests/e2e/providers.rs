//! Providers failing well (retries, hints, idle streams), images for vision models, and
//! testProvider.

use agentd_testkit::send::SendByName;
use std::time::Duration;

use agent_proto::rpc::AgentRpcClient;
use agent_proto::{ContentPart, Event, EventKind, LoopFinishReason, MessageContent, MessageStatus};
use agentd_testkit::daemon::{TEST_API_KEY, TestDaemon};
use agentd_testkit::events::{collect_run, finished, text_of, usage_of};
use agentd_testkit::mock_model::{MockModel, Reply};

use crate::common::{before_environment, bin, error_of, messages, model_requests, new_agent};

/// A config with one OpenAI-compatible provider `mock` at the mock, plus `provider_extra`
/// lines inside its table.
fn config(mock: &MockModel, provider_extra: &str) -> String {
    format!(
        r#"[defaults]
provider = "mock"
model = "mock-model"

[[providers]]
id = "mock"
kind = "openai"
base_url = "{}"
api_key_env = "MOCK_KEY"
{provider_extra}
models = [{{ id = "mock-model" }}, {{ id = "eyes", vision = true }}]
"#,
        mock.url()
    )
}

async fn daemon(mock: &MockModel, provider_extra: &str) -> TestDaemon {
    let options = agentd_testkit::daemon::DaemonOptions {
        config_toml: config(mock, provider_extra),
        env: vec![("MOCK_KEY".into(), TEST_API_KEY.into())],
    };
    TestDaemon::start_with(bin(), options).await
}

async fn run(client: &agent_proto::client::Client, agent_id: &str) -> Vec<Event> {
    let mut sub = client
        .subscribe_events(Some(agent_id.into()), None, None)
        .await
        .unwrap();
    client
        .send_plain(agent_id.into(), "hello".into())
        .await
        .unwrap();
    collect_run(&mut sub, Duration::from_secs(30)).await
}

/// The `error` events announcing retries: (message, kind).
fn retries(events: &[Event]) -> Vec<(String, String)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Error {
                message,
                kind,
                retryable: true,
                ..
            } if message.starts_with("retrying") => Some((message.clone(), kind.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn rate_limits_are_retried_after_the_time_the_server_asks() {
    let mock = MockModel::start().await;
    let daemon = daemon(&mock, "").await;
    let client = daemon.client().await;
    let agent = new_agent(&client, "retry").await;
    mock.push(
        Reply::status(429, r#"{"error":{"message":"slow down"}}"#).header("Retry-After", "1"),
    );
    mock.push(Reply::openai_text(&["made it"]));
    let events = run(&client, &agent.id).await;
    assert_eq!(finished(&events).0, LoopFinishReason::Completed);
    assert_eq!(text_of(&events), "made it");
    let notes = retries(&events);
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].0.starts_with("retrying in 1.0 s (retry 1 of 4)"),
        "{}",
        notes[0].0
    );
    assert!(notes[0].0.contains("slow down"));
    assert_eq!(notes[0].1, "providerHttpError");
    let requests = model_requests(&mock);
    assert_eq!(requests.len(), 2);
    let waited = requests[1].received_at - requests[0].received_at;
    assert!(
        waited >= Duration::from_millis(950),
        "Retry-After honoured: {waited:?}"
    );
    assert_eq!(requests[0].body, requests[1].body, "the same request again");
}

#[tokio::test]
async fn retry_after_ms_is_honoured_before_retry_after() {
    // OpenAI's and Azure's 429s say the wait in milliseconds too; the rounder
    // `Retry-After: 0` beside it would retry at once.
    let mock = MockModel::start().await;
    let daemon = daemon(&mock, "").await;
    let client = daemon.client().await;
    let agent = new_agent(&client, "retry-ms").await;
    mock.push(
        Reply::status(429, r#"{"error":{"message":"slow down"}}"#)
            .header("retry-after-ms", "700")
            .header("Retry-After", "0"),
    );
    mock.push(Reply::openai_text(&["made it"]));
    let events = run(&client, &agent.id).await;
    assert_eq!(finished(&events).0, LoopFinishReason::Completed);
    let notes = retries(&events);
    assert!(
        notes[0].0.starts_with("retrying in 0.7 s (retry 1 of 4)"),
        "{}",
        notes[0].0
    );
    let requests = model_requests(&mock);
    let waited = requests[1].received_at - requests[0].received_at;
    assert!(
        waited >= Duration::from_millis(650),
        "retry-after-ms honoured: {waited:?}"
    );
}

#[tokio::test]
async fn server_errors_back_off_and_give_up_after_max_retries() {
    let mock = MockModel::start().await;
    let daemon = daemon(&mock, "retry_base_ms = 20\nmax_retries = 3").await;
    let client = daemon.client().await;
    let agent = new_agent(&client, "backoff").await;
    for _ in 0..3 {
        mock.push(Reply::status(500, "upstream broke"));
    }
    mock.push(Reply::openai_text(&["fourth time lucky"]));
    let events = run(&client, &agent.id).await;
    assert_eq!(finished(&events).0, LoopFinishReason::Completed);
    assert_eq!(retries(&events).len(), 3);
    let requests = model_requests(&mock);
    assert_eq!(requests.len(), 4);
    // Exponential: the third wait is longer than the first (20 ms, 40 ms, 80 ms ±25%).
    let first = requests[1].received_at - requests[0].received_at;
    let third = requests[3].received_at - requests[2].received_at;
    assert!(third > first, "{first:?} then {third:?}");

    for _ in 0..4 {
        mock.push(Reply::status(503, "still down"));
    }
    let events = run(&client, &agent.id).await;
    let (reason, error) = finished(&events);
    assert_eq!(reason, LoopFinishReason::Error);
    assert!(error.unwrap().contains("HTTP 503: still down"));
    assert_eq!(retries(&events).len(), 3);
    assert_eq!(model_requests(&mock).len(), 8, "1 + 3 retries");
}

#[tokio::test]
async fn auth_and_not_found_errors_are_not_retried_and_say_what_to_check() {
    let mock = MockModel::start().await;
    let daemon = daemon(&mock, "retry_base_ms = 10").await;
    let client = daemon.client().await;
    let agent = new_agent(&client, "auth").await;
    mock.push(Reply::status(
        401,
        r#"{"error":{"message":"Incorrect API key provided"}}"#,
    ));
    let events = run(&client, &agent.id).await;
    let (reason, error) = finished(&events);
    assert_eq!(reason, LoopFinishReason::Error);
    let error = error.unwrap();
    assert!(error.contains("Incorrect API key provided"), "{error}");
    assert!(error.contains("check the API key in $MOCK_KEY"), "{error}");
    assert!(retries(&events).is_empty());
    assert_eq!(model_requests(&mock).len(), 1);

    mock.push(Reply::status(
        404,
        r#"{"error":{"message":"The model does not exist"}}"#,
    ));
    let events = run(&client, &agent.id).await;
    let error = finished(&events).1.unwrap();
    assert!(
        error.contains("The model does not exist") && error.contains("\"mock-model\""),
        "{error}"
    );
    assert_eq!(model_requests(&mock).len(), 2);
}

#[tokio::test]
async fn refused_connections_are_retried_then_reported() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let config = format!(
        "[[providers]]\nid = \"gone\"\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\nretry_base_ms = 10\ndefault_model = \"m\"\n[defaults]\nprovider = \"gone\"\n"
    );
    let daemon = TestDaemon::start(bin(), &config).await;
    let client = daemon.client().await;
    let agent = new_agent(&client, "gone").await;
    let events = run(&client, &agent.id).await;
    let (reason, error) = finished(&events);
    assert_eq!(reason, LoopFinishReason::Error);
    assert!(error.unwrap().contains(&format!("127.0.0.1:{port}")));
    let notes = retries(&events);
    assert_eq!(notes.len(), 4);
    assert!(notes.iter().all(|(_, kind)| kind == "providerUnreachable"));
}

#[tokio::test]
async fn an_idle_stream_is_an_error() {
    let mock = MockModel::start().await;
    let daemon = daemon(&mock, "idle_timeout_secs = 1").await;
    let client = daemon.client().await;
    let agent = new_agent(&client, "idle").await;
    mock.push(Reply::openai_text(&["half", " never"]).stall_after(1));
    let events = run(&client, &agent.id).await;
    let (reason, error) = finished(&events);
    assert_eq!(reason, LoopFinishReason::Error);
    assert!(error.unwrap().contains("sent nothing for 1 s"));
    assert_eq!(text_of(&events), "half");
    let stored = messages(&client, &agent.id).await;
    assert_eq!(
        (stored[1].status, stored[1].text().as_str()),
        (MessageStatus::Error, "half")
    );
}

#[tokio::test]
async fn images_reach_vision_models_and_are_named_for_the_others() {
    let mock = MockModel::start().await;
    let daemon = daemon(&mock, "").await;
    let client = daemon.client().await;
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("chart.png");
    std::fs::write(&png, b"\x89PNG\r\n\x1a\nnot-really").unwrap();
    let content = MessageContent::Parts(vec![
        ContentPart::Text {
            text: "What is in this chart?".into(),
        },
        ContentPart::Image {
            data: None,
            path: Some(png.display().to_string()),
            mime_type: None,
            uri: None,
        },
    ]);
    let seeing = client
        .create_agent(
            None,
            None,
            None,
            Some("eyes".into()),
            None,
            None,
            None,
            None,
            None,
        )
        .await
        .unwrap();
    let blind = new_agent(&client, "blind").await;
    for agent in [&seeing, &blind] {
        let mut sub = client
            .subscribe_events(Some(agent.id.clone()), None, None)
            .await
            .unwrap();
        mock.push(Reply::openai_text(&["A chart."]));
        client
            .send_plain(agent.id.clone(), content.clone())
            .await
            .unwrap();
        collect_run(&mut sub, Duration::from_secs(20)).await;
    }
    let requests = model_requests(&mock);
    use base64::Engine as _;
    let encoded = base64::engine::general_purpose::STANDARD.encode(b"\x89PNG\r\n\x1a\nnot-really");
    // Each request starts with the system prompt: the environment section alone.
    for request in &requests[..2] {
        let system = request.body["messages"][0]["content"].as_str().unwrap();
        assert_eq!(before_environment(system, "none", "no", "none"), "");
    }
    let seen = &requests[0].body["messages"][1]["content"];
    assert_eq!(seen[0]["type"], "image_url");
    assert_eq!(
        seen[0]["image_url"]["url"],
        format!("data:image/png;base64,{encoded}")
    );
    assert_eq!(
        seen[1],
        serde_json::json!({"type": "text", "text": "What is in this chart?"})
    );
    let told = requests[1].body["messages"][1]["content"].as_str().unwrap();
    assert!(
        told.starts_with("What is in this chart?\n[image attached as a file: "),
        "{told}"
    );
    assert!(
        told.contains(&format!("/sessions/{}/images/", blind.id)),
        "{told}"
    );
    // The stored message keeps an image block pointing at the daemon's copy.
    let stored = messages(&client, &seeing.id).await;
    let image = stored[0].blocks.iter().find_map(|b| match b {
        agent_proto::Block::Image { mime_type, path } => Some((mime_type.clone(), path.clone())),
        _ => None,
    });
    let (mime, path) = image.expect("an image block");
    assert_eq!(mime, "image/png");
    assert_ne!(path, png.display().to_string(), "a copy, not the original");
    // Bad images are refused with the reason.
    let bad = MessageContent::Parts(vec![ContentPart::Image {
        data: Some("data:image/png;base64,%%%".into()),
        path: None,
        mime_type: None,
        uri: None,
    }]);
    let err = client.send_plain(seeing.id.clone(), bad).await.unwrap_err();
    assert_eq!(error_of(&err).1, "invalidParams");
}

#[tokio::test]
async fn test_provider_reports_latency_or_the_error() {
    let mock = MockModel::start().await;
    let daemon = daemon(&mock, "retry_base_ms = 10\nmax_retries = 0").await;
    let client = daemon.client().await;
    mock.push(Reply::openai_text(&["OK"]).first_byte_delay(Duration::from_millis(50)));
    let result = client.test_provider(None, None).await.unwrap();
    assert!(result.ok, "{result:?}");
    assert_eq!(
        (result.provider.as_str(), result.model.as_str()),
        ("mock", "mock-model")
    );
    assert_eq!(result.reply.as_deref(), Some("OK"));
    assert!(result.latency_ms.unwrap() >= 50, "{result:?}");
    let body = &model_requests(&mock)[0].body;
    assert_eq!(body["max_tokens"], 16);
    mock.push(Reply::status(401, "bad key"));
    let result = client
        .test_provider(Some("mock".into()), Some("eyes".into()))
        .await
        .unwrap();
    assert!(!result.ok);
    assert_eq!(result.model, "eyes");
    assert!(result.error.unwrap().contains("bad key"));
    assert_eq!(result.error_kind.as_deref(), Some("providerHttpError"));
    let err = client
        .test_provider(Some("nope".into()), None)
        .await
        .unwrap_err();
    assert_eq!(error_of(&err).1, "providerNotConfigured");
}

/// A config with one provider of `kind` at the mock's root, as the default.
fn kind_config(mock: &MockModel, kind: &str, model: &str) -> String {
    let root = mock.url().trim_end_matches("/v1").to_owned();
    format!(
        "[defaults]\nprovider = \"p\"\nmode = \"agent\"\n[permissions]\nread = \"allow\"\n\n[[providers]]\nid = \"p\"\nkind = \"{kind}\"\nbase_url = \"{root}\"\napi_key = \"{TEST_API_KEY}\"\nmax_retries = 0\nmodels = [{{ id = \"{model}\", vision = true }}]\n"
    )
}

#[tokio::test]
async fn anthropic_streams_text_tool_calls_and_usage() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start(bin(), &kind_config(&mock, "anthropic", "claude-mock")).await;
    let client = daemon.client().await;
    let (agent, _dir) = crate::common::tool_agent(&client, None).await;
    std::fs::write(crate::common::ws(&agent).join("a.txt"), "alpha").unwrap();
    mock.push(Reply::anthropic_tool_use(
        &["Let me ", "read it."],
        &[("toolu_1", "read_file", r#"{"path": "a.txt"}"#)],
    ));
    mock.push(Reply::anthropic_text(&["It says alpha."]));
    let (sent, events) = crate::common::send_and_collect(&client, &agent.id, "read a.txt").await;
    assert_eq!(finished(&events).0, LoopFinishReason::Completed);
    assert_eq!(text_of(&events), "Let me read it.It says alpha.");
    let (status, content, _) = crate::common::tool_result_of(&events, "toolu_1");
    assert_eq!(status, agent_proto::ToolCallStatus::Success);
    assert!(content.contains("alpha"));
    let usage = usage_of(&events);
    assert_eq!(usage, [(11, 5), (11, 5)]);
    let stored = messages(&client, &agent.id).await;
    let assistant = stored
        .iter()
        .find(|m| m.id == sent.assistant_message_id)
        .unwrap();
    assert_eq!(
        assistant.usage.map(|u| (u.input_tokens, u.output_tokens)),
        Some((22, 10))
    );

    let requests = model_requests(&mock);
    assert_eq!(requests[0].path, "/v1/messages");
    assert_eq!(requests[0].header("x-api-key"), Some(TEST_API_KEY));
    assert!(requests[0].header("anthropic-version").is_some());
    let body = &requests[1].body;
    assert_eq!(body["model"], "claude-mock");
    assert_eq!(body["stream"], true);
    assert!(body["max_tokens"].as_u64().unwrap() > 0);
    assert_eq!(body["tools"][1]["name"], "read_file");
    assert!(body["tools"][1]["input_schema"].is_object());
    let messages = body["messages"].as_array().unwrap();
    let assistant = &messages[1];
    assert_eq!(assistant["role"], "assistant");
    let tool_use = assistant["content"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["type"] == "tool_use")
        .unwrap();
    assert_eq!(tool_use["id"], "toolu_1");
    assert_eq!(tool_use["input"], serde_json::json!({"path": "a.txt"}));
    let result = &messages[2]["content"][0];
    assert_eq!(
        (messages[2]["role"].as_str(), result["type"].as_str()),
        (Some("user"), Some("tool_result"))
    );
    assert_eq!(result["tool_use_id"], "toolu_1");
}

#[tokio::test]
async fn gemini_streams_text_function_calls_and_usage() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start(bin(), &kind_config(&mock, "gemini", "gemini-mock")).await;
    let client = daemon.client().await;
    let (agent, _dir) = crate::common::tool_agent(&client, None).await;
    mock.push(Reply::gemini(
        &["Looking."],
        &[("list_directory", serde_json::json!({}))],
    ));
    mock.push(Reply::gemini(&["Empty.", " Done."], &[]));
    let (_, events) = crate::common::send_and_collect(&client, &agent.id, "what is here?").await;
    assert_eq!(finished(&events).0, LoopFinishReason::Completed);
    assert_eq!(text_of(&events), "Looking.Empty. Done.");
    let call_id = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::ToolCallReady {
                tool_call_id, name, ..
            } if name == "list_directory" => Some(tool_call_id.clone()),
            _ => None,
        })
        .expect("a list_directory call");
    assert_eq!(
        crate::common::tool_result_of(&events, &call_id).0,
        agent_proto::ToolCallStatus::Success
    );
    let usage = usage_of(&events).iter().filter(|u| **u == (11, 5)).count();
    assert_eq!(usage, 2, "usage once per call");

    let requests = model_requests(&mock);
    assert_eq!(
        requests[0].path,
        "/v1beta/models/gemini-mock:streamGenerateContent?alt=sse"
    );
    assert_eq!(requests[0].header("x-goog-api-key"), Some(TEST_API_KEY));
    assert!(
        !requests[0].path.contains(TEST_API_KEY),
        "the key is not in the URL"
    );
    let body = &requests[1].body;
    let declarations = body["tools"][0]["functionDeclarations"].as_array().unwrap();
    assert!(declarations.iter().any(|d| d["name"] == "list_directory"));
    assert!(
        !body["tools"].to_string().contains("additionalProperties"),
        "schemas are cleaned for Gemini"
    );
    let contents = body["contents"].as_array().unwrap();
    assert_eq!(contents[1]["role"], "model");
    assert_eq!(
        contents[1]["parts"][1]["functionCall"]["name"],
        "list_directory"
    );
    assert_eq!(
        contents[2]["parts"][0]["functionResponse"]["name"],
        "list_directory"
    );
}

#[tokio::test]
async fn usage_is_counted_by_model_and_agent_and_priced_where_the_config_says() {
    let mock = MockModel::start().await;
    let priced = format!(
        "[[providers]]\nid = \"priced\"\nkind = \"openai\"\nbase_url = \"{}\"\napi_key = \"k\"\n\
         max_retries = 0\nmodels = [{{ id = \"pm\", input_price = 2.0, output_price = 8.0 }}]\n",
        mock.url()
    );
    let daemon = TestDaemon::start(
        bin(),
        &agentd_testkit::daemon::openai_config_with(&mock.url(), &priced),
    )
    .await;
    let client = daemon.client().await;
    let a = client
        .create_agent(
            Some("a".into()),
            None,
            Some("priced".into()),
            Some("pm".into()),
            None,
            None,
            None,
            None,
            None,
        )
        .await
        .unwrap();
    let b = new_agent(&client, "b").await;
    // Each answer reports 11 input tokens and one output token per part.
    mock.push(Reply::openai_text(&["one ", "two"]));
    crate::common::send_and_collect(&client, &a.id, "first").await;
    // A later model change leaves the earlier answer where it was made.
    client
        .update_agent(
            a.id.clone(),
            None,
            None,
            None,
            Some("mock".into()),
            Some("mock-model".into()),
            None,
            None,
            None,
        )
        .await
        .unwrap();
    mock.push(Reply::openai_text(&["three"]));
    crate::common::send_and_collect(&client, &a.id, "second").await;
    mock.push(Reply::openai_text(&["four"]));
    crate::common::send_and_collect(&client, &b.id, "third").await;

    let all = client.get_usage(None).await.unwrap();
    assert_eq!(
        (all.input_tokens, all.output_tokens, all.answers),
        (33, 4, 3)
    );
    let models: Vec<(&str, &str, u64, u64, u64)> = all
        .by_model
        .iter()
        .map(|m| {
            let (p, id) = (m.provider.as_str(), m.model.as_str());
            (p, id, m.input_tokens, m.output_tokens, m.answers)
        })
        .collect();
    assert_eq!(
        models,
        [("mock", "mock-model", 22, 2, 2), ("priced", "pm", 11, 2, 1)]
    );
    // 11 tokens at 2 USD and 2 at 8 USD per million.
    let cost = 11.0 * 2.0 / 1e6 + 2.0 * 8.0 / 1e6;
    let close = |x: Option<f64>| x.is_some_and(|x| (x - cost).abs() < 1e-12);
    assert!(close(all.by_model[1].cost_usd), "{all:?}");
    assert_eq!(all.by_model[0].cost_usd, None);
    assert!(close(all.cost_usd), "{all:?}");
    assert_eq!(all.unpriced, ["mock/mock-model"]);
    let one = client.get_usage(Some(a.id.clone())).await.unwrap();
    assert_eq!(
        (one.input_tokens, one.output_tokens, one.answers),
        (22, 3, 2)
    );
    assert_eq!(one.by_agent.len(), 1);
    assert!(close(one.by_agent[0].cost_usd));
    let listed = client
        .list_models(Some("priced".into()), None)
        .await
        .unwrap();
    assert_eq!(listed.models[0].input_price, Some(2.0));
    let e = client.get_usage(Some("nobody".into())).await.unwrap_err();
    assert_eq!(error_of(&e).1, "agentNotFound");
}

#[tokio::test]
async fn providers_are_asked_which_models_they_serve_only_when_a_client_wants_to_know() {
    let mock = MockModel::start().await;
    let other = MockModel::start().await;
    let ant = format!(
        "[[providers]]\nid = \"ant\"\nkind = \"anthropic\"\nbase_url = \"{}\"\napi_key = \"ak\"\n\
         models = [{{ id = \"claude-x\" }}]\n",
        other.url().trim_end_matches("/v1")
    );
    let daemon = TestDaemon::start(
        bin(),
        &agentd_testkit::daemon::openai_config_with(&mock.url(), &ant),
    )
    .await;
    let client = daemon.client().await;
    let plain = client.list_models(None, None).await.unwrap();
    assert!(plain.models.iter().all(|m| m.served.is_none()));
    assert!(mock.requests().is_empty() && other.requests().is_empty());

    let list = r#"{"object":"list","data":[{"id":"mock-model","object":"model"},{"id":"llama3:8b","object":"model"}]}"#;
    mock.push(Reply::bytes("application/json", list.as_bytes()));
    other.push(Reply::status(
        401,
        r#"{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#,
    ));
    let served = client.list_models(None, Some(true)).await.unwrap();
    let of = |provider: &str| -> Vec<(String, Option<bool>)> {
        served
            .models
            .iter()
            .filter(|m| m.provider == provider)
            .map(|m| (m.id.clone(), m.served))
            .collect()
    };
    assert_eq!(
        of("mock"),
        [
            ("mock-model".into(), Some(true)),
            ("llama3:8b".into(), Some(true))
        ]
    );
    assert_eq!(of("ant"), [("claude-x".into(), None)]);
    assert_eq!(of("demo"), [("echo".into(), None)]);
    assert_eq!(served.errors.len(), 1, "{:?}", served.errors);
    assert_eq!(served.errors[0].provider, "ant");
    assert!(
        served.errors[0].error.contains("401"),
        "{:?}",
        served.errors
    );
    // Each asked the way its calls authenticate.
    let asked = &mock.requests()[0];
    assert_eq!(
        (asked.method.as_str(), asked.path.as_str()),
        ("GET", "/v1/models")
    );
    assert_eq!(
        asked.header("authorization"),
        Some(format!("Bearer {TEST_API_KEY}").as_str())
    );
    let asked = &other.requests()[0];
    assert_eq!(asked.path, "/v1/models?limit=1000");
    assert_eq!(asked.header("x-api-key"), Some("ak"));
}
