//! Drives the `mcp-test-server` binary through rmcp's client side, as agentd will: over a
//! child process's stdio and over streamable HTTP. These tests pin the fixture's contract
//! (tool names, schemas, annotations, contents, progress, cancellation, list changes, the
//! crash switch, the `listening` line and the misbehaviour switches), so the daemon's MCP
//! tests can rely on it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use agentd_testkit::wait::eventually;
use base64::Engine;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientRequest, JsonObject,
    ListToolsRequest, PaginatedRequestParams, ProgressNotificationParam, ResourceContents, Tool,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RunningService};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceError, ServiceExt};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;
use tokio::sync::mpsc;

/// Limit for any single wait on the server.
const WAIT: Duration = Duration::from_secs(20);

const TOOLS: [&str; 8] = [
    "echo", "sleep", "fail", "image", "large", "fetchish", "add_tool", "resource",
];

fn server_bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_mcp-test-server"))
}

async fn within<F: Future>(what: &str, future: F) -> F::Output {
    tokio::time::timeout(WAIT, future)
        .await
        .unwrap_or_else(|_| panic!("timed out after {WAIT:?} waiting for {what}"))
}

/// A client handler that records the server's notifications.
#[derive(Clone)]
struct Recorder {
    list_changed: mpsc::Sender<()>,
    progress: mpsc::Sender<ProgressNotificationParam>,
}

struct Notes {
    list_changed: mpsc::Receiver<()>,
    progress: mpsc::Receiver<ProgressNotificationParam>,
}

fn recorder() -> (Recorder, Notes) {
    let (list_tx, list_rx) = mpsc::channel(16);
    let (progress_tx, progress_rx) = mpsc::channel(256);
    (
        Recorder {
            list_changed: list_tx,
            progress: progress_tx,
        },
        Notes {
            list_changed: list_rx,
            progress: progress_rx,
        },
    )
}

impl ClientHandler for Recorder {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.progress.try_send(params);
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.list_changed.try_send(());
    }
}

type Client = RunningService<RoleClient, Recorder>;

/// Starts the server as the daemon will (rmcp's child-process transport) with `args`.
async fn stdio_client(args: &[&str]) -> (Client, Notes) {
    let mut command = Command::new(server_bin());
    command.args(args);
    let (transport, _stderr) = TokioChildProcess::builder(command)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let (handler, notes) = recorder();
    let client = within("initialize", handler.serve(transport))
        .await
        .unwrap();
    (client, notes)
}

fn args(value: Value) -> JsonObject {
    value.as_object().unwrap().clone()
}

async fn call(client: &Client, name: &'static str, arguments: Value) -> CallToolResult {
    within(
        name,
        client.call_tool(CallToolRequestParams::new(name).with_arguments(args(arguments))),
    )
    .await
    .unwrap_or_else(|e| panic!("tools/call {name} failed: {e}"))
}

fn only_text(result: &CallToolResult) -> &str {
    assert_eq!(result.content.len(), 1, "{result:?}");
    &result.content[0].as_text().expect("text content").text
}

fn names(tools: &[Tool]) -> Vec<&str> {
    tools.iter().map(|t| t.name.as_ref()).collect()
}

fn tool<'a>(tools: &'a [Tool], name: &str) -> &'a Tool {
    tools.iter().find(|t| t.name == name).unwrap()
}

/// A fresh path for the server's event log.
fn log_path() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.log");
    (dir, path)
}

fn log_lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Waits until the log holds `line`; returns every line at that moment.
async fn wait_for_line(path: &Path, line: &str) -> Vec<String> {
    let what = format!("{line:?} in the log");
    eventually(WAIT, &what, async || {
        let lines = log_lines(path);
        if lines.iter().any(|l| l == line) {
            Ok(lines.clone())
        } else {
            Err(lines)
        }
    })
    .await
}

#[tokio::test]
async fn lists_eight_tools_with_schemas_annotations_and_name() {
    let (client, _notes) = stdio_client(&["--name", "fixture"]).await;
    let info = client.peer_info().unwrap();
    assert_eq!(info.server_info.as_ref().unwrap().name, "fixture");
    let tools_capability = info.capabilities.tools.as_ref().unwrap();
    assert_eq!(tools_capability.list_changed, Some(true));
    // rmcp's client asks for its newest version in `initialize`; the server answers with
    // the newest one that still has an initialize handshake.
    assert_eq!(info.protocol_version.as_str(), "2025-11-25");

    let tools = within("tools/list", client.list_all_tools()).await.unwrap();
    assert_eq!(names(&tools), TOOLS);

    let echo = tool(&tools, "echo");
    let annotations = echo.annotations.as_ref().unwrap();
    assert_eq!(annotations.read_only_hint, Some(true));
    assert_eq!(
        Value::Object((*echo.input_schema).clone()),
        json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
    );
    assert_eq!(tool(&tools, "sleep").annotations, None);
    assert_eq!(
        tool(&tools, "sleep").input_schema["required"],
        json!(["ms"])
    );
    let fail = tool(&tools, "fail").annotations.as_ref().unwrap();
    assert_eq!(fail.destructive_hint, Some(true));
    assert_eq!(fail.read_only_hint, None);
    let fetchish = tool(&tools, "fetchish").annotations.as_ref().unwrap();
    assert_eq!(
        (fetchish.read_only_hint, fetchish.open_world_hint),
        (Some(true), Some(true))
    );
    assert_eq!(
        tool(&tools, "large").input_schema["properties"]["chars"]["type"],
        "integer"
    );
    for name in ["image", "add_tool", "resource"] {
        let tool = tool(&tools, name);
        assert_eq!(tool.annotations, None, "{name}");
        assert_eq!(tool.input_schema["properties"], json!({}), "{name}");
        assert!(tool.description.as_deref().is_some_and(|d| !d.is_empty()));
    }
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn writes_mcp_test_stderr_to_stderr() {
    let mut command = Command::new(server_bin());
    command.env("MCP_TEST_STDERR", "hello from the server's stderr");
    let (transport, stderr) = TokioChildProcess::builder(command)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(stderr.unwrap()).lines();
    let client = within("initialize", ().serve(transport)).await.unwrap();
    let first = within("a stderr line", stderr.next_line()).await.unwrap();
    assert_eq!(first.as_deref(), Some("hello from the server's stderr"));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn each_tool_answers_its_content_and_the_log_records_calls() {
    let (_dir, log) = log_path();
    let (client, _notes) = stdio_client(&["--log", log.to_str().unwrap()]).await;

    let echo = call(&client, "echo", json!({"text": "hi there"})).await;
    assert_eq!(only_text(&echo), "hi there");
    assert_eq!(echo.is_error, Some(false));

    let fail = call(&client, "fail", json!({})).await;
    assert_eq!(fail.is_error, Some(true));
    assert_eq!(only_text(&fail), "the tool failed on purpose");

    let image = call(&client, "image", json!({})).await;
    assert_eq!(image.content.len(), 2, "{image:?}");
    let png = image.content[0].as_image().expect("an image first");
    assert_eq!(png.mime_type, "image/png");
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(&png.data)
        .unwrap();
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "{bytes:?}");
    assert!(bytes.ends_with(b"IEND\xaeB`\x82"), "{bytes:?}");
    assert_eq!(image.content[1].as_text().unwrap().text, "an image");

    for chars in [0, 1, 80, 81, 82, 1000, 100_000] {
        let large = call(&client, "large", json!({"chars": chars})).await;
        let text = only_text(&large);
        assert_eq!(text.chars().count(), chars);
        assert!(
            text.lines()
                .all(|l| l.len() <= 80 && l.bytes().all(|b| b == b'x'))
        );
        if chars >= 81 {
            assert_eq!(&text[..81], format!("{}\n", "x".repeat(80)));
        }
    }

    let fetched = call(&client, "fetchish", json!({"url": "https://example.org/a"})).await;
    assert_eq!(only_text(&fetched), "fetched https://example.org/a");

    let resource = call(&client, "resource", json!({})).await;
    assert_eq!(resource.content.len(), 1);
    let embedded = resource.content[0]
        .as_resource()
        .expect("an embedded resource");
    match &embedded.resource {
        ResourceContents::TextResourceContents { uri, text, .. } => {
            assert_eq!(
                (uri.as_str(), text.as_str()),
                ("test://note", "a resource note")
            );
        }
        other => panic!("expected a text resource, got {other:?}"),
    }

    // A bad argument is a tool error; an unknown tool is a protocol error.
    let bad = call(&client, "echo", json!({"text": 3})).await;
    assert_eq!(bad.is_error, Some(true));
    let unknown = within(
        "unknown tool",
        client.call_tool(CallToolRequestParams::new("read_file")),
    )
    .await;
    assert!(
        matches!(unknown, Err(ServiceError::McpError(_))),
        "{unknown:?}"
    );

    let lines = wait_for_line(&log, "done resource").await;
    assert_eq!(lines[0], r#"call echo {"text":"hi there"}"#);
    assert_eq!(lines[1], "done echo");
    assert!(lines.contains(&r#"call large {"chars":1000}"#.to_owned()));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn add_tool_grows_the_list_and_notifies() {
    let (client, mut notes) = stdio_client(&[]).await;
    let before = within("tools/list", client.list_all_tools()).await.unwrap();
    assert_eq!(before.len(), 8);

    let added = call(&client, "add_tool", json!({})).await;
    assert_eq!(only_text(&added), "added a tool");
    within("tools/list_changed", notes.list_changed.recv())
        .await
        .unwrap();

    let after = within("tools/list", client.list_all_tools()).await.unwrap();
    assert_eq!(names(&after)[..8], TOOLS);
    assert_eq!(names(&after)[8..], ["added"]);
    let works = call(&client, "added", json!({})).await;
    assert_eq!(only_text(&works), "added works");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn sleep_reports_progress_then_finishes() {
    let (client, mut notes) = stdio_client(&[]).await;
    let slept = call(&client, "sleep", json!({"ms": 350})).await;
    assert_eq!(only_text(&slept), "slept 350 ms");
    // Notifications are handled apart from responses: wait for each one.
    let mut seen = Vec::new();
    for _ in 0..3 {
        let progress = within("progress", notes.progress.recv()).await.unwrap();
        assert_eq!(progress.total, Some(350.0));
        seen.push(progress.progress);
    }
    assert_eq!(seen, [100.0, 200.0, 300.0]);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn cancelling_a_sleep_reaches_the_server() {
    let (_dir, log) = log_path();
    let (client, mut notes) = stdio_client(&["--log", log.to_str().unwrap()]).await;
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(
        CallToolRequestParams::new("sleep").with_arguments(args(json!({"ms": 60_000}))),
    ));
    let handle = within(
        "send tools/call",
        client.send_request_with_option(request, PeerRequestOptions::no_options()),
    )
    .await
    .unwrap();
    // rmcp puts a progress token on every request; the first report shows the call runs.
    let first = within("progress", notes.progress.recv()).await.unwrap();
    assert_eq!(first.progress_token, handle.progress_token);
    assert_eq!((first.progress, first.total), (100.0, Some(60_000.0)));

    within("cancel", handle.cancel(Some("test cancels".into())))
        .await
        .unwrap();
    let lines = wait_for_line(&log, "cancelled sleep").await;
    assert_eq!(lines[0], r#"call sleep {"ms":60000}"#);
    assert!(!lines.iter().any(|l| l == "done sleep"), "{lines:?}");

    // The server is still fine afterwards.
    let echo = call(&client, "echo", json!({"text": "still here"})).await;
    assert_eq!(only_text(&echo), "still here");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn crash_after_exits_three_without_answering() {
    let (_dir, log) = log_path();
    // Our own child (not TokioChildProcess) so the test can read its exit status.
    let mut child = Command::new(server_bin())
        .args(["--crash-after", "2", "--log", log.to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let io = (child.stdout.take().unwrap(), child.stdin.take().unwrap());
    let client = within("initialize", ().serve(io)).await.unwrap();

    let first = within(
        "first call",
        client.call_tool(
            CallToolRequestParams::new("echo").with_arguments(args(json!({"text": "one"}))),
        ),
    )
    .await
    .unwrap();
    assert_eq!(only_text(&first), "one");
    let second = within(
        "second call",
        client.call_tool(
            CallToolRequestParams::new("echo").with_arguments(args(json!({"text": "two"}))),
        ),
    )
    .await;
    assert!(
        matches!(second, Err(ServiceError::TransportClosed)),
        "{second:?}"
    );
    let status = within("exit", child.wait()).await.unwrap();
    assert_eq!(status.code(), Some(3));
    assert_eq!(
        log_lines(&log),
        [
            r#"call echo {"text":"one"}"#,
            "done echo",
            r#"call echo {"text":"two"}"#
        ]
    );
}

#[tokio::test]
async fn clash_adds_read_file() {
    let (client, _notes) = stdio_client(&["--clash"]).await;
    let tools = within("tools/list", client.list_all_tools()).await.unwrap();
    assert_eq!(names(&tools)[..8], TOOLS);
    assert_eq!(names(&tools)[8..], ["read_file"]);
    let read = call(&client, "read_file", json!({"path": "/etc/hostname"})).await;
    assert_eq!(only_text(&read), "mcp read_file: /etc/hostname");
    client.cancel().await.unwrap();
}

/// A server started with `--http 127.0.0.1:0`, killed on drop, and the URL it printed.
async fn http_server(extra: &[&str]) -> (tokio::process::Child, String) {
    let mut child = Command::new(server_bin())
        .args(["--http", "127.0.0.1:0"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = within("the listening line", stdout.next_line())
        .await
        .unwrap()
        .expect("a line on stdout");
    let url = line
        .strip_prefix("listening ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        .to_owned();
    assert!(
        url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp"),
        "{url}"
    );
    (child, url)
}

#[tokio::test]
async fn serves_streamable_http() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let (mut server, url) = http_server(&["--name", "over-http"]).await;

    let (handler, mut notes) = recorder();
    let transport = StreamableHttpClientTransport::from_uri(url.as_str());
    let client = within("initialize", handler.serve(transport))
        .await
        .unwrap();
    let info = client.peer_info().unwrap();
    assert_eq!(info.server_info.as_ref().unwrap().name, "over-http");

    let tools = within("tools/list", client.list_all_tools()).await.unwrap();
    assert_eq!(names(&tools), TOOLS);
    assert_eq!(
        tool(&tools, "echo")
            .annotations
            .as_ref()
            .unwrap()
            .read_only_hint,
        Some(true)
    );
    let echo = call(&client, "echo", json!({"text": "over http"})).await;
    assert_eq!(only_text(&echo), "over http");

    // Progress rides the call's SSE stream; list_changed the session's GET stream.
    let slept = call(&client, "sleep", json!({"ms": 150})).await;
    assert_eq!(only_text(&slept), "slept 150 ms");
    let progress = within("progress", notes.progress.recv()).await.unwrap();
    assert_eq!(progress.progress, 100.0);
    call(&client, "add_tool", json!({})).await;
    within("tools/list_changed", notes.list_changed.recv())
        .await
        .unwrap();
    let after = within("tools/list", client.list_all_tools()).await.unwrap();
    assert_eq!(names(&after).last(), Some(&"added"));

    client.cancel().await.unwrap();
    server.kill().await.unwrap();
}

#[tokio::test]
async fn http_other_paths_are_not_found() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let (mut server, url) = http_server(&[]).await;
    let other = url.replace("/mcp", "/other");
    let http = reqwest::Client::builder().no_proxy().build().unwrap();
    let response = within("GET /other", http.get(&other).send()).await.unwrap();
    assert_eq!(response.status(), 404);
    server.kill().await.unwrap();
}

/// One `tools/list` page as the server sent it (rmcp's typed result may not hold it).
async fn raw_list(client: &Client, cursor: Option<&str>) -> Value {
    let params = PaginatedRequestParams::default().with_cursor(cursor.map(str::to_owned));
    let request = ClientRequest::ListToolsRequest(ListToolsRequest::with_param(params));
    let result = within("tools/list", client.send_request(request))
        .await
        .unwrap();
    serde_json::to_value(result).unwrap()
}

/// A call's result as the server sent it.
async fn raw_call(client: &Client, name: &'static str) -> Value {
    let request =
        ClientRequest::CallToolRequest(CallToolRequest::new(CallToolRequestParams::new(name)));
    let result = within(name, client.send_request(request)).await.unwrap();
    serde_json::to_value(result).unwrap()
}

fn listed_names(page: &Value) -> Vec<Option<&str>> {
    page["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str())
        .collect()
}

#[tokio::test]
async fn odd_tools_are_sent_as_a_typed_client_cannot_read_them() {
    let (client, _notes) = stdio_client(&["--odd-tools", "--huge-schema", "1000"]).await;
    // rmcp's typed list refuses the whole page for one bad tool
    let typed = within("tools/list", client.list_all_tools()).await;
    assert!(typed.is_err(), "{typed:?}");
    let page = raw_list(&client, None).await;
    let names = listed_names(&page);
    let long = "n".repeat(70);
    for name in [
        "get.weather",
        "with space",
        "a/b",
        "météo",
        long.as_str(),
        "b__echo",
        "",
        "schema_string",
        "schema_props",
        "huge",
        "null_schema",
        "no_schema",
        "number_description",
    ] {
        assert!(names.contains(&Some(name)), "{name:?} in {names:?}");
    }
    assert_eq!(names.iter().filter(|n| **n == Some("dup")).count(), 2);
    assert_eq!(names.iter().filter(|n| n.is_none()).count(), 1);
    let tools = page["tools"].as_array().unwrap();
    let by_name = |name: &str| tools.iter().find(|t| t["name"] == name).unwrap();
    assert_eq!(
        by_name("schema_string")["inputSchema"],
        json!({"type": "string"})
    );
    assert_eq!(by_name("schema_props")["inputSchema"]["properties"], "oops");
    assert_eq!(by_name("null_schema")["inputSchema"], Value::Null);
    assert!(by_name("no_schema").get("inputSchema").is_none());
    assert_eq!(by_name("number_description")["description"], 42);
    assert!(by_name("huge")["inputSchema"].to_string().len() >= 1000);
    let called = call(&client, "get.weather", json!({})).await;
    assert_eq!(only_text(&called), "called get.weather");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn paginate_modes_page_as_named() {
    let (client, _notes) = stdio_client(&["--paginate", "pages"]).await;
    let mut cursor: Option<String> = None;
    let mut all = Vec::new();
    loop {
        let page = raw_list(&client, cursor.as_deref()).await;
        all.extend(
            listed_names(&page)
                .into_iter()
                .map(|n| n.unwrap().to_owned()),
        );
        match page["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    assert_eq!(all, TOOLS);
    client.cancel().await.unwrap();
    for (mode, next) in [("empty-forever", ""), ("repeat", "again")] {
        let (client, _notes) = stdio_client(&["--paginate", mode]).await;
        for cursor in [None, Some(next)] {
            let page = raw_list(&client, cursor).await;
            assert_eq!(page["nextCursor"], next, "{mode}");
            assert_eq!(listed_names(&page).len(), 8, "{mode}");
        }
        client.cancel().await.unwrap();
    }
    let (client, _notes) = stdio_client(&["--paginate", "endless"]).await;
    let page = raw_list(&client, Some("p41")).await;
    assert_eq!(listed_names(&page), [Some("endless_41")]);
    assert_eq!(page["nextCursor"], "p42");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn odd_results_are_sent_as_a_typed_client_cannot_read_them() {
    let (client, _notes) = stdio_client(&["--odd-results"]).await;
    let unknown = raw_call(&client, "unknown_content").await;
    assert_eq!(unknown["content"][1]["type"], "video");
    assert_eq!(unknown["content"][2]["text"], "also kept");
    let image = raw_call(&client, "image_no_mime").await;
    assert_eq!(image["content"][0]["type"], "image");
    assert!(image["content"][0].get("mimeType").is_none());
    assert_eq!(raw_call(&client, "no_content").await, json!({"answer": 42}));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn exit_after_list_exits_four_once_it_has_answered() {
    let mut child = Command::new(server_bin())
        .arg("--exit-after-list")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let io = (child.stdout.take().unwrap(), child.stdin.take().unwrap());
    let client = within("initialize", ().serve(io)).await.unwrap();
    let tools = within("tools/list", client.list_all_tools()).await.unwrap();
    assert_eq!(names(&tools), TOOLS);
    let status = within("exit", child.wait()).await.unwrap();
    assert_eq!(status.code(), Some(4));
}

#[tokio::test]
async fn storm_announces_n_times_then_the_change() {
    let (client, mut notes) = stdio_client(&["--storm", "10"]).await;
    let stormed = call(&client, "storm", json!({"add": true})).await;
    assert_eq!(only_text(&stormed), "stormed");
    // 10 and the change: within the recorder's 16 slots, read after the call
    for _ in 0..11 {
        within("tools/list_changed", notes.list_changed.recv())
            .await
            .unwrap();
    }
    let tools = within("tools/list", client.list_all_tools()).await.unwrap();
    assert!(names(&tools).contains(&"added"));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn many_tools_adds_numbered_ones() {
    let (client, _notes) = stdio_client(&["--many-tools", "3"]).await;
    let tools = within("tools/list", client.list_all_tools()).await.unwrap();
    assert_eq!(names(&tools)[8..], ["bulk_0001", "bulk_0002", "bulk_0003"]);
    let called = call(&client, "bulk_0002", json!({})).await;
    assert_eq!(only_text(&called), "called bulk_0002");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn stderr_flood_writes_bytes_without_a_newline() {
    let mut command = Command::new(server_bin());
    command.args(["--stderr-flood", "100000"]);
    let (transport, stderr) = TokioChildProcess::builder(command)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let client = within("initialize", ().serve(transport)).await.unwrap();
    let mut stderr = stderr.unwrap();
    let mut flood = vec![0u8; 100_000];
    within(
        "the flood",
        tokio::io::AsyncReadExt::read_exact(&mut stderr, &mut flood),
    )
    .await
    .unwrap();
    assert!(flood.iter().all(|b| *b == b'x'));
    client.cancel().await.unwrap();
}
