//! `web_search` against local stand-ins of each backend's JSON API (a second mock server):
//! the request each backend expects, the results the model gets, failures named by the
//! backend, and a daemon without a backend that never offers the tool.

use std::time::Duration;

use agent_proto::LoopFinishReason;
use agent_proto::rpc::AgentRpcClient;
use agentd_testkit::daemon::{DaemonOptions, TestDaemon, openai_config_with};
use agentd_testkit::mock_model::{MockModel, RecordedRequest, Reply};
use agentd_testkit::transcript::tool_result;
use serde_json::json;

use crate::common::{ALLOW_ALL, bin, model_requests, send_and_collect, start, tool_agent};

/// The model, the search backend and a daemon using both (`backend` TOML lines, extra env).
async fn start_search(backend: &str, env: &[(&str, &str)]) -> (MockModel, MockModel, TestDaemon) {
    let model = MockModel::start().await;
    let search = MockModel::start().await;
    // The mock serves at /v1; the backends' paths go below its root.
    let root = search.url().trim_end_matches("/v1").to_owned();
    let config = openai_config_with(
        &model.url(),
        &format!("{ALLOW_ALL}\n[web_search]\n{backend}\nbase_url = \"{root}\"\n"),
    );
    let daemon = TestDaemon::start_with(
        bin(),
        DaemonOptions {
            config_toml: config,
            env: env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        },
    )
    .await;
    (model, search, daemon)
}

fn search_call(args: serde_json::Value) -> Reply {
    Reply::openai_tool_calls(&[], &[("s1", "web_search", &args.to_string())])
}

fn header<'a>(r: &'a RecordedRequest, name: &str) -> Option<&'a str> {
    r.headers
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

/// Runs one search call through the model; returns the tool's result text.
async fn searched(model: &MockModel, daemon: &TestDaemon, args: serde_json::Value) -> String {
    let client = daemon.client().await;
    let (agent, _dir) = tool_agent(&client, None).await;
    model.push(search_call(args));
    model.push(Reply::openai_text(&["ok"]));
    let (_, events) = send_and_collect(&client, &agent.id, "search").await;
    assert!(matches!(
        events.last().unwrap().kind,
        agent_proto::EventKind::LoopFinished {
            reason: LoopFinishReason::Completed,
            ..
        }
    ));
    tool_result(&model_requests(model)[1], "s1")
}

#[tokio::test]
async fn searxng_results_reach_the_model_up_to_the_limit() {
    let (model, search, daemon) = start_search("backend = \"searxng\"", &[]).await;
    search.push(Reply::status(
        200,
        &json!({"results": [
            {"title": "Tokio", "url": "https://tokio.rs/", "content": "An async runtime"},
            {"title": "async-std", "url": "https://async.rs/", "content": "Another one"},
            {"title": "smol", "url": "https://github.com/smol-rs/smol", "content": "Small"}
        ]})
        .to_string(),
    ));
    let result = searched(&model, &daemon, json!({"query": "rust async", "limit": 2})).await;
    assert!(
        result.starts_with("2 results for \"rust async\":"),
        "{result}"
    );
    assert!(result.contains("1. Tokio\n   https://tokio.rs/\n   An async runtime"));
    assert!(result.contains("2. async-std"));
    assert!(!result.contains("smol"));
    let request = &search.wait_requests(1, Duration::from_secs(10)).await[0];
    assert_eq!(request.method, "GET");
    assert_eq!(request.path, "/search?q=rust+async&format=json");
}

#[tokio::test]
async fn brave_and_tavily_get_their_keys_from_the_environment() {
    let (model, search, daemon) =
        start_search("backend = \"brave\"", &[("BRAVE_API_KEY", "brave-key-1")]).await;
    search.push(Reply::status(
        200,
        &json!({"type": "search", "web": {"results": [
            {"title": "Rust", "url": "https://www.rust-lang.org/", "description": "A <strong>fast</strong> language"}
        ]}})
        .to_string(),
    ));
    let result = searched(&model, &daemon, json!({"query": "rust"})).await;
    assert!(
        result.contains("1. Rust\n   https://www.rust-lang.org/\n   A fast language"),
        "{result}"
    );
    let request = &search.wait_requests(1, Duration::from_secs(10)).await[0];
    assert_eq!(request.path, "/res/v1/web/search?q=rust&count=8");
    assert_eq!(header(request, "x-subscription-token"), Some("brave-key-1"));

    let (model, search, daemon) =
        start_search("backend = \"tavily\"", &[("TAVILY_API_KEY", "tvly-2")]).await;
    search.push(Reply::status(
        200,
        &json!({"results": [{"title": "T", "url": "https://t.example/", "content": "c"}]})
            .to_string(),
    ));
    let result = searched(&model, &daemon, json!({"query": "rust", "limit": 3})).await;
    assert!(
        result.contains("1. T\n   https://t.example/\n   c"),
        "{result}"
    );
    let request = &search.wait_requests(1, Duration::from_secs(10)).await[0];
    assert_eq!(
        (request.method.as_str(), request.path.as_str()),
        ("POST", "/search")
    );
    assert_eq!(request.body, json!({"query": "rust", "max_results": 3}));
    assert_eq!(header(request, "authorization"), Some("Bearer tvly-2"));
}

#[tokio::test]
async fn failures_name_the_backend() {
    // No key: the call says which variable to set, and nothing is sent.
    let (model, search, daemon) = start_search("backend = \"brave\"", &[]).await;
    let result = searched(&model, &daemon, json!({"query": "x"})).await;
    assert!(
        result.contains("web search (brave) has no API key: set BRAVE_API_KEY"),
        "{result}"
    );
    assert!(search.requests().is_empty());

    // An HTTP error and an answer that is not a result list.
    let (model, search, daemon) = start_search("backend = \"searxng\"", &[]).await;
    search.push(Reply::status(503, "{\"error\": \"overloaded\"}"));
    let result = searched(&model, &daemon, json!({"query": "x"})).await;
    assert!(
        result.contains("web search (searxng) answered HTTP 503"),
        "{result}"
    );
    search.push(Reply::status(200, "{\"answers\": []}"));
    model.push(search_call(json!({"query": "y"})));
    model.push(Reply::openai_text(&["ok"]));
    let client = daemon.client().await;
    let (agent, _dir) = tool_agent(&client, None).await;
    send_and_collect(&client, &agent.id, "again").await;
    let last = model_requests(&model).pop().unwrap();
    assert!(
        tool_result(&last, "s1").contains("web search (searxng) answered JSON without results")
    );
}

#[tokio::test]
async fn without_a_backend_the_tool_is_listed_but_never_offered() {
    let (model, daemon) = start().await;
    let client = daemon.client().await;
    let listed = client.list_tools(None).await.unwrap().tools;
    let search = listed.iter().find(|t| t.name == "web_search").unwrap();
    assert!(!search.enabled);
    let (agent, _dir) = tool_agent(&client, None).await;
    model.push(search_call(json!({"query": "x"})));
    model.push(Reply::openai_text(&["ok"]));
    send_and_collect(&client, &agent.id, "search").await;
    let requests = model_requests(&model);
    let offered: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(!offered.contains(&"web_search"));
    let result = tool_result(&requests[1], "s1");
    assert!(result.contains("web search is not configured"), "{result}");
}

#[tokio::test]
async fn a_bad_web_search_section_stops_the_daemon_at_start_naming_it() {
    let model = MockModel::start().await;
    let config = openai_config_with(&model.url(), "[web_search]\nbackend = \"searxng\"\n");
    let failed = TestDaemon::try_start_with(
        bin(),
        DaemonOptions {
            config_toml: config,
            env: Vec::new(),
        },
    )
    .await
    .err()
    .expect("the daemon refuses the config");
    assert!(
        failed.log.contains("web_search.base_url is required"),
        "{}",
        failed.log
    );
}
