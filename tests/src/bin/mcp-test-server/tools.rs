//! The test server's tools and its rmcp `ServerHandler`: the tool list (which can grow at
//! run time through `add_tool`), what each tool answers, the event log, the crash switch
//! and the misbehaviours of `quirks.rs`. It knows nothing about transports; one
//! [`Shared`] serves every session.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, CustomNotification,
    Implementation, JsonObject, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam,
    ServerCapabilities, ServerConfig, ServerNotification, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::{Value, json};

use crate::quirks::{self, Quirks};

/// Exit code of `--crash-after`.
const CRASH_EXIT_CODE: i32 = 3;

/// How often `sleep` reports progress.
const PROGRESS_EVERY: Duration = Duration::from_millis(100);

/// Largest `large` answer, so a typo in a test cannot eat the machine's memory.
const LARGE_MAX_CHARS: u64 = 64 * 1024 * 1024;

/// A 1x1 green RGBA PNG (valid signature, chunks and CRCs), base64.
const TINY_PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg==";

/// Append-only event log for tests: one line per event, flushed at once.
pub(crate) struct EventLog {
    file: Mutex<File>,
}

impl EventLog {
    pub(crate) fn open(path: &Path) -> anyhow::Result<EventLog> {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .with_context(|| format!("cannot open log file {}", path.display()))?;
        Ok(EventLog {
            file: Mutex::new(file),
        })
    }

    fn write(&self, line: &str) {
        let mut file = self
            .file
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        // One write per line so a reader never sees half a line from two writers.
        let result = file
            .write_all(format!("{line}\n").as_bytes())
            .and_then(|()| file.flush());
        if let Err(e) = result {
            eprintln!("mcp-test-server: cannot write the log: {e}");
        }
    }
}

/// State of the whole process, shared by every session (one for stdio, one per HTTP
/// session).
pub(crate) struct Shared {
    name: String,
    log: Option<EventLog>,
    clash: bool,
    crash_after: Option<u64>,
    /// `tools/call` requests seen so far.
    calls: AtomicU64,
    /// Set by `add_tool`: the list then includes `added`.
    added: AtomicBool,
    /// Offer `env` (`--env-tool`).
    env_tool: bool,
    quirks: Quirks,
    /// `tools/list` requests seen so far.
    lists: AtomicU64,
}

impl Shared {
    pub(crate) fn new(
        name: String,
        log: Option<EventLog>,
        clash: bool,
        crash_after: Option<u64>,
    ) -> Self {
        Shared {
            name,
            log,
            clash,
            crash_after,
            calls: AtomicU64::new(0),
            added: AtomicBool::new(false),
            env_tool: false,
            quirks: Quirks::default(),
            lists: AtomicU64::new(0),
        }
    }

    /// Turns on the misbehaviours.
    pub(crate) fn with_quirks(mut self, quirks: Quirks) -> Self {
        self.quirks = quirks;
        self
    }

    /// Also offer `env`.
    pub(crate) fn with_env_tool(mut self, on: bool) -> Self {
        self.env_tool = on;
        self
    }

    fn log(&self, line: &str) {
        if let Some(log) = &self.log {
            log.write(line);
        }
    }

    /// The tools offered right now.
    fn tools(&self) -> Vec<Tool> {
        let mut tools = vec![
            tool("echo", "Returns its text.", string_props("text"))
                .annotate(ToolAnnotations::new().read_only(true)),
            // No annotations on purpose: a client must treat it as able to do anything.
            tool(
                "sleep",
                "Sleeps for ms milliseconds, reporting progress every 100 ms.",
                schema(json!({"ms": {"type": "integer", "minimum": 0}}), &["ms"]),
            ),
            tool("fail", "Always fails.", no_props())
                .annotate(ToolAnnotations::new().destructive(true)),
            tool("image", "Returns a tiny PNG and a caption.", no_props()),
            tool(
                "large",
                "Returns exactly chars characters of text.",
                schema(
                    json!({"chars": {"type": "integer", "minimum": 0}}),
                    &["chars"],
                ),
            ),
            tool("fetchish", "Pretends to fetch a URL.", string_props("url"))
                .annotate(ToolAnnotations::new().read_only(true).open_world(true)),
            tool(
                "add_tool",
                "Adds the tool `added` and announces the new list.",
                no_props(),
            ),
            tool("resource", "Returns an embedded text resource.", no_props()),
        ];
        if self.clash {
            tools.push(tool(
                "read_file",
                "Same name as a builtin of agentd.",
                string_props("path"),
            ));
        }
        if self.added.load(Ordering::SeqCst) {
            tools.push(tool("added", "Exists once add_tool ran.", no_props()));
        }
        if self.env_tool {
            tools.push(
                tool(
                    "env",
                    "Returns the server's environment, NAME=value per line.",
                    no_props(),
                )
                .annotate(ToolAnnotations::new().read_only(true)),
            );
        }
        tools.extend(quirks::typed_tools(&self.quirks));
        tools
    }

    /// Whether `name` is a tool of the switches that answers `called <name>`.
    fn answers_called(&self, name: &str) -> bool {
        let q = &self.quirks;
        (q.odd_tools
            && (quirks::odd_names().iter().any(|n| n == name)
                || matches!(name, "schema_string" | "schema_props")))
            || (q.huge_schema.is_some() && name == "huge")
            || (q.many_tools > 0 && name.starts_with("bulk_"))
            || (q.paginate.is_some() && name.starts_with("endless_"))
    }
}

fn tool(name: &'static str, description: &'static str, input_schema: JsonObject) -> Tool {
    Tool::new(name, description, Arc::new(input_schema))
}

fn schema(properties: Value, required: &[&str]) -> JsonObject {
    let mut schema = JsonObject::new();
    schema.insert("type".into(), json!("object"));
    schema.insert("properties".into(), properties);
    if !required.is_empty() {
        schema.insert("required".into(), json!(required));
    }
    schema
}

fn no_props() -> JsonObject {
    schema(json!({}), &[])
}

fn string_props(name: &str) -> JsonObject {
    schema(json!({ name: {"type": "string"} }), &[name])
}

/// One session's handler; clones share everything.
#[derive(Clone)]
pub(crate) struct TestServer {
    shared: Arc<Shared>,
}

impl TestServer {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        TestServer { shared }
    }

    /// Runs tool `name`. A bad argument is a tool error (the model can fix it); an unknown
    /// tool is a protocol error, as the MCP spec asks.
    async fn run(
        &self,
        name: &str,
        args: &JsonObject,
        context: &RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let text = |t: String| Ok(CallToolResult::success(vec![ContentBlock::text(t)]));
        match name {
            "echo" => match str_arg(args, "text") {
                Ok(t) => text(t.to_owned()),
                Err(e) => Ok(e),
            },
            "sleep" => match u64_arg(args, "ms") {
                Ok(ms) => {
                    sleep_with_progress(ms, context).await;
                    text(format!("slept {ms} ms"))
                }
                Err(e) => Ok(e),
            },
            "fail" => Ok(CallToolResult::error(vec![ContentBlock::text(
                "the tool failed on purpose",
            )])),
            "image" => Ok(CallToolResult::success(vec![
                ContentBlock::image(TINY_PNG, "image/png"),
                ContentBlock::text("an image"),
            ])),
            "large" => match u64_arg(args, "chars") {
                Ok(chars) if chars > LARGE_MAX_CHARS => Ok(tool_error(format!(
                    "chars must be at most {LARGE_MAX_CHARS}"
                ))),
                Ok(chars) => text(large_text(chars as usize)),
                Err(e) => Ok(e),
            },
            "fetchish" => match str_arg(args, "url") {
                Ok(url) => text(format!("fetched {url}")),
                Err(e) => Ok(e),
            },
            "add_tool" => {
                self.shared.added.store(true, Ordering::SeqCst);
                if let Err(e) = context.peer.notify_tool_list_changed().await {
                    eprintln!("mcp-test-server: cannot send tools/list_changed: {e}");
                }
                text("added a tool".to_owned())
            }
            "resource" => Ok(CallToolResult::success(vec![ContentBlock::embedded_text(
                "test://note",
                "a resource note",
            )])),
            "read_file" if self.shared.clash => match str_arg(args, "path") {
                Ok(path) => text(format!("mcp read_file: {path}")),
                Err(e) => Ok(e),
            },
            "added" if self.shared.added.load(Ordering::SeqCst) => text("added works".to_owned()),
            "env" if self.shared.env_tool => {
                let mut vars: Vec<String> = std::env::vars_os()
                    .map(|(k, v)| format!("{}={}", k.to_string_lossy(), v.to_string_lossy()))
                    .collect();
                vars.sort();
                text(vars.join("\n"))
            }
            "storm" if self.shared.quirks.storm.is_some() => {
                let add = args.get("add").and_then(Value::as_bool).unwrap_or(false);
                self.storm(add, context).await;
                text("stormed".to_owned())
            }
            "progress_last" if self.shared.quirks.progress_last => {
                // No wait between the two: they leave back to back, progress first.
                if let Some(token) = context.meta.get_progress_token() {
                    let progress = ProgressNotificationParam::new(token, 1.0)
                        .with_total(1.0)
                        .with_message("last");
                    if let Err(e) = context.peer.notify_progress(progress).await {
                        eprintln!("mcp-test-server: cannot send progress: {e}");
                    }
                }
                text("progressed".to_owned())
            }
            "chatty" if self.shared.quirks.chatty => {
                let note = CustomNotification::new(
                    "notifications/x-test-chatter",
                    Some(json!({"payload": quirks::chatter()})),
                );
                if let Err(e) = context
                    .peer
                    .send_notification(ServerNotification::CustomNotification(note))
                    .await
                {
                    eprintln!("mcp-test-server: cannot send the chatter: {e}");
                }
                text("chatted".to_owned())
            }
            name if self.shared.quirks.odd_results
                && let Some(result) = quirks::odd_result(name, TINY_PNG) =>
            {
                Ok(result)
            }
            name if self.shared.answers_called(name) => text(format!("called {name}")),
            other => Err(McpError::invalid_params(
                format!("unknown tool: {other}"),
                None,
            )),
        }
    }

    /// `--storm N`: N `tools/list_changed`, 2 ms apart (so a client that lists on each
    /// one lists many times), then `added` joins the list (when `add`) and one more.
    async fn storm(&self, add: bool, context: &RequestContext<RoleServer>) {
        let n = self.shared.quirks.storm.unwrap_or(0);
        for _ in 0..n {
            if let Err(e) = context.peer.notify_tool_list_changed().await {
                eprintln!("mcp-test-server: cannot send tools/list_changed: {e}");
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        if add {
            self.shared.added.store(true, Ordering::SeqCst);
            if let Err(e) = context.peer.notify_tool_list_changed().await {
                eprintln!("mcp-test-server: cannot send tools/list_changed: {e}");
            }
        }
    }
}

impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
        .with_server_info(Implementation::new(
            self.shared.name.clone(),
            env!("CARGO_PKG_VERSION"),
        ))
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let cursor = request.and_then(|r| r.cursor);
        self.shared
            .log(&format!("list {}", cursor.as_deref().unwrap_or("-")));
        let n = self.shared.lists.fetch_add(1, Ordering::SeqCst) + 1;
        let q = &self.shared.quirks;
        if let Some(ms) = q.slow_list_ms {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
        if q.hang_relist && n > 1 {
            // Never answered; a cancellation from the client is logged.
            context.ct.cancelled().await;
            self.shared.log("cancelled list");
            return Err(McpError::internal_error("cancelled", None));
        }
        let tools = self.shared.tools();
        if !q.raw_list() {
            return Ok(ListToolsResult::with_all_items(tools));
        }
        let mut items: Vec<Value> = tools
            .iter()
            .map(|t| serde_json::to_value(t).unwrap_or(Value::Null))
            .collect();
        if q.odd_tools {
            items.extend(quirks::raw_bad_tools());
        }
        let (items, next) = match q.paginate {
            Some(mode) => quirks::page(mode, cursor.as_deref(), items),
            None => (items, None),
        };
        let mut result = json!({ "tools": items });
        if let Some(next) = next {
            result["nextCursor"] = json!(next);
        }
        Ok(quirks::raw_list(result))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = request.name.as_ref();
        let args = request.arguments.clone().unwrap_or_default();
        self.shared
            .log(&format!("call {name} {}", Value::Object(args.clone())));
        let n = self.shared.calls.fetch_add(1, Ordering::SeqCst) + 1;
        if self.shared.crash_after == Some(n) {
            eprintln!("mcp-test-server: crashing on call {n} as asked");
            std::process::exit(CRASH_EXIT_CODE);
        }
        // rmcp fires `ct` on notifications/cancelled for this request (and drops whatever
        // we answer afterwards), so every tool stops there.
        let outcome = tokio::select! {
            result = self.run(name, &args, &context) => result,
            () = context.ct.cancelled() => {
                self.shared.log(&format!("cancelled {name}"));
                return Ok(CallToolResult::error(vec![ContentBlock::text("cancelled")]).into());
            }
        };
        self.shared.log(&format!("done {name}"));
        outcome.map(Into::into)
    }
}

/// Sleeps `ms`, sending `notifications/progress` (progress = elapsed ms, total = ms) every
/// 100 ms when the request carried a progress token.
async fn sleep_with_progress(ms: u64, context: &RequestContext<RoleServer>) {
    let token = context.meta.get_progress_token();
    let mut elapsed = 0;
    while elapsed < ms {
        let step = (ms - elapsed).min(PROGRESS_EVERY.as_millis() as u64);
        tokio::time::sleep(Duration::from_millis(step)).await;
        elapsed += step;
        if elapsed < ms
            && let Some(token) = &token
        {
            let progress =
                ProgressNotificationParam::new(token.clone(), elapsed as f64).with_total(ms as f64);
            if let Err(e) = context.peer.notify_progress(progress).await {
                eprintln!("mcp-test-server: cannot send progress: {e}");
            }
        }
    }
}

/// `chars` characters: lines of 80 `x` and a newline, cut to length.
fn large_text(chars: usize) -> String {
    let line = format!("{}\n", "x".repeat(80));
    line.repeat(chars / line.len() + 1)[..chars].to_owned()
}

fn tool_error(message: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}

#[allow(
    clippy::result_large_err,
    reason = "a test server's argument check; large only where serde_json keeps key order (a feature agent-client-protocol turns on)"
)]
fn str_arg<'a>(args: &'a JsonObject, name: &str) -> Result<&'a str, CallToolResult> {
    args.get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| tool_error(format!("argument {name:?} must be a string")))
}

#[allow(
    clippy::result_large_err,
    reason = "a test server's argument check; large only where serde_json keeps key order (a feature agent-client-protocol turns on)"
)]
fn u64_arg(args: &JsonObject, name: &str) -> Result<u64, CallToolResult> {
    args.get(name)
        .and_then(Value::as_u64)
        .ok_or_else(|| tool_error(format!("argument {name:?} must be a non-negative integer")))
}
