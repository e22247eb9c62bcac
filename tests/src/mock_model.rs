//! A scripted mock LLM: an HTTP/1.1 server on 127.0.0.1 that plays the OpenAI
//! chat-completions streaming API (and, with hand-made or helper-built streams, Anthropic
//! and Gemini).
//!
//! It also plays the quirks real servers have, each a helper or a modifier: no `[DONE]`
//! ([`Reply::without_done`]), bare-CR line ends ([`Reply::bare_cr`]), parallel calls
//! numbered oddly ([`CallIndexing`]), reasoning with tool calls ([`Reply::openai_calls`]),
//! Claude's signed and redacted thinking ([`Reply::anthropic_thinking`]), Gemini's
//! `thoughtSignature` ([`Reply::gemini_signed_calls`]) and redirects ([`Reply::redirect`]).
//!
//! Tests queue [`Reply`]s; each request gets the next one (FIFO) and is recorded as a
//! [`RecordedRequest`]. The server is hand-rolled on a TCP listener so a test controls every
//! byte: delays, a stream cut mid-way, a stream that stalls, garbage. Every response carries
//! `Connection: close` and ends its connection, so one connection is one request (unless
//! started with [`MockModel::start_keep_alive`], for measurements). A client
//! that goes away before its reply is complete is recorded as a [`Disconnect`]. The mock
//! knows nothing about the daemon; it must stay a dumb, predictable byte pump.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio::task::JoinSet;

/// How long a stalled reply keeps its connection open if the client stays.
const STALL_LIMIT: Duration = Duration::from_secs(120);

/// Largest request head (request line and headers) the mock reads.
const MAX_HEAD_BYTES: usize = 64 * 1024;

/// In the events of a [`Reply::stamped`] reply, replaced by the microseconds since
/// [`clock_us`]'s origin at the moment the event is written, so a client can tell how long
/// each piece took to reach it (the mock and the client must share the process).
pub const SENT_AT_MARKER: &str = "{sent_us}";

/// Microseconds since a fixed instant of this process (the first call). The clock of
/// [`SENT_AT_MARKER`].
pub fn clock_us() -> u64 {
    static ORIGIN: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    let origin = *ORIGIN.get_or_init(Instant::now);
    u64::try_from(origin.elapsed().as_micros()).unwrap_or(u64::MAX)
}

/// What the mock answers when no reply is queued.
pub const NO_REPLY_LEFT: &str = r#"{"error":{"message":"mock model: no scripted reply left"}}"#;

/// A request the mock received.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    pub method: String,
    /// The request target as sent, e.g. `/v1/chat/completions`.
    pub path: String,
    /// In arrival order; names are lowercase.
    pub headers: Vec<(String, String)>,
    /// The body as JSON (`Null` if it is not JSON).
    pub body: Value,
    pub body_text: String,
    /// When the whole request had been read.
    pub received_at: Instant,
    /// When the first byte of the reply went out (`None` until then, e.g. during a
    /// `first_byte_delay`, or if the client left first).
    pub served_at: Option<Instant>,
    /// When the last byte of the reply went out (`None` until then, or if the reply was
    /// cut, stalled or the client left first).
    pub finished_at: Option<Instant>,
}

impl RecordedRequest {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A client that closed its connection before its reply was complete.
#[derive(Debug, Clone, Copy)]
pub struct Disconnect {
    /// Index of the request (in [`MockModel::requests`]) whose reply was cut short.
    pub request_index: usize,
    /// SSE events fully written before the client went away.
    pub after_events: usize,
    /// When the mock noticed.
    pub at: Instant,
}

#[derive(Debug, Clone)]
enum Body {
    Sse(Vec<String>),
    Status(u16, String),
    Raw(String),
    /// A 200 response with this content type.
    Page(String, Vec<u8>),
}

/// One scripted answer: a body plus timing and failure modifiers.
#[derive(Debug, Clone)]
pub struct Reply {
    body: Body,
    chunk_delay: Duration,
    first_byte_delay: Duration,
    cut_after: Option<usize>,
    stall_after: Option<usize>,
    /// Replace [`SENT_AT_MARKER`] in each event by the time it is written.
    stamped: bool,
    /// Events written together, in one HTTP chunk and one write (1: each on its own).
    events_per_write: usize,
    /// Extra response headers.
    headers: Vec<(String, String)>,
    /// What ends each line of an SSE event (`\n`, or `\r` for servers that send bare CRs).
    line_end: &'static str,
}

/// One OpenAI `chat.completion.chunk` whose `choices[0]` has this `delta` and finish reason.
/// The building block for hand-made [`Reply::sse`] streams.
pub fn openai_chunk(delta: Value, finish_reason: Option<&str>) -> String {
    json!({
        "id": "chatcmpl-mock",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "mock-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}]
    })
    .to_string()
}

/// The final usage chunk of a stream (`choices: []`), as sent with `include_usage`.
pub fn openai_usage_chunk(prompt_tokens: u64, completion_tokens: u64) -> String {
    json!({
        "id": "chatcmpl-mock",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "mock-model",
        "choices": [],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens
        }
    })
    .to_string()
}

/// One Anthropic SSE event (`event:` name and `data:` JSON) for [`Reply::sse`].
pub fn anthropic_event(name: &str, data: Value) -> String {
    format!("event: {name}\ndata: {data}")
}

/// How an OpenAI stream numbers parallel tool calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallIndexing {
    /// `index` 0, 1, 2... as OpenAI does.
    Standard,
    /// Every call at `index: 0` (some proxies and inference servers): only the `id` tells
    /// calls apart.
    AllAtZero,
    /// No `index` at all.
    Absent,
}

/// Prompt tokens reported by the `openai_*` helpers.
pub const MOCK_PROMPT_TOKENS: u64 = 11;

/// Content deltas, the first one carrying the assistant role as OpenAI does.
fn delta_chunks(events: &mut Vec<String>, key: &str, parts: &[&str]) {
    for part in parts {
        let mut delta = json!({ key: part });
        if events.is_empty() {
            delta["role"] = json!("assistant");
        }
        if key != "content" {
            delta["content"] = Value::Null;
        }
        events.push(openai_chunk(delta, None));
    }
}

/// Finish chunk, usage chunk (one completion token per streamed piece) and `[DONE]`.
fn finish(mut events: Vec<String>, reason: &str, pieces: usize) -> Reply {
    events.push(openai_chunk(json!({}), Some(reason)));
    events.push(openai_usage_chunk(MOCK_PROMPT_TOKENS, pieces as u64));
    events.push("[DONE]".into());
    Reply::sse(events)
}

impl Reply {
    fn new(body: Body) -> Reply {
        Reply {
            body,
            chunk_delay: Duration::ZERO,
            first_byte_delay: Duration::ZERO,
            cut_after: None,
            stall_after: None,
            stamped: false,
            events_per_write: 1,
            headers: Vec::new(),
            line_end: "\n",
        }
    }

    /// Adds a response header (e.g. `Retry-After`).
    pub fn header(mut self, name: &str, value: &str) -> Reply {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// An Anthropic Messages stream answering with these text parts.
    pub fn anthropic_text(parts: &[&str]) -> Reply {
        Reply::anthropic_tool_use(parts, &[])
    }

    /// An Anthropic Messages stream: text parts in block 0, then one `tool_use` block per
    /// `(id, name, input JSON)` with the input split in two `input_json_delta`s, then
    /// `message_delta` (stop reason, 5 output tokens) and `message_stop`.
    pub fn anthropic_tool_use(text: &[&str], calls: &[(&str, &str, &str)]) -> Reply {
        Reply::anthropic_thinking(None, None, text, calls)
    }

    /// Like [`Reply::anthropic_tool_use`], opened by extended thinking as Claude streams it:
    /// a `thinking` block whose text comes in two `thinking_delta`s and whose signature
    /// comes in a `signature_delta`, then (if given) a `redacted_thinking` block with this
    /// data.
    pub fn anthropic_thinking(
        thinking: Option<(&str, &str)>,
        redacted: Option<&str>,
        text: &[&str],
        calls: &[(&str, &str, &str)],
    ) -> Reply {
        let mut events = vec![anthropic_event(
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg_mock", "type": "message",
                "role": "assistant", "content": [], "model": "claude-mock",
                "usage": {"input_tokens": MOCK_PROMPT_TOKENS, "output_tokens": 1}}}),
        )];
        let mut index = 0;
        let mut block = |events: &mut Vec<String>, start: Value, deltas: Vec<Value>| {
            events.push(anthropic_event(
                "content_block_start",
                json!({"type": "content_block_start", "index": index, "content_block": start}),
            ));
            for delta in deltas {
                events.push(anthropic_event(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": index, "delta": delta}),
                ));
            }
            events.push(anthropic_event(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": index}),
            ));
            index += 1;
        };
        if let Some((thought, signature)) = thinking {
            let middle = thought.len() / 2;
            block(
                &mut events,
                json!({"type": "thinking", "thinking": "", "signature": ""}),
                vec![
                    json!({"type": "thinking_delta", "thinking": &thought[..middle]}),
                    json!({"type": "thinking_delta", "thinking": &thought[middle..]}),
                    json!({"type": "signature_delta", "signature": signature}),
                ],
            );
        }
        if let Some(data) = redacted {
            block(
                &mut events,
                json!({"type": "redacted_thinking", "data": data}),
                vec![],
            );
        }
        if !text.is_empty() {
            let deltas = text
                .iter()
                .map(|part| json!({"type": "text_delta", "text": part}))
                .collect();
            block(&mut events, json!({"type": "text", "text": ""}), deltas);
        }
        for (id, name, input) in calls {
            let middle = input.len() / 2;
            let deltas = [&input[..middle], &input[middle..]]
                .iter()
                .map(|piece| json!({"type": "input_json_delta", "partial_json": piece}))
                .collect();
            block(
                &mut events,
                json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
                deltas,
            );
        }
        let stop = if calls.is_empty() {
            "end_turn"
        } else {
            "tool_use"
        };
        events.push(anthropic_event(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 5}}),
        ));
        events.push(anthropic_event(
            "message_stop",
            json!({"type": "message_stop"}),
        ));
        Reply::sse(events)
    }

    /// A Gemini `streamGenerateContent?alt=sse` stream: one chunk per text part, then one
    /// chunk with the function calls `(name, args)` (if any), the finish reason and usage.
    pub fn gemini(text: &[&str], calls: &[(&str, Value)]) -> Reply {
        let mut events: Vec<String> = text
            .iter()
            .map(|t| {
                json!({"candidates": [{"content": {"role": "model", "parts": [{"text": t}]}, "index": 0}]})
                    .to_string()
            })
            .collect();
        let parts: Vec<Value> = calls
            .iter()
            .map(|(name, args)| json!({"functionCall": {"name": name, "args": args}}))
            .collect();
        let mut last = json!({
            "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": MOCK_PROMPT_TOKENS, "candidatesTokenCount": 5, "totalTokenCount": MOCK_PROMPT_TOKENS + 5}
        });
        if calls.is_empty() {
            last["candidates"][0]["content"]["parts"] = json!([{"text": ""}]);
        }
        events.push(last.to_string());
        Reply::sse(events)
    }

    /// A Gemini stream of one chunk with function calls `(name, args, thoughtSignature)`,
    /// the signature a sibling of `functionCall` in its part as Gemini 3 sends it (for
    /// parallel calls, only on the first), then the finish reason and usage.
    pub fn gemini_signed_calls(calls: &[(&str, Value, Option<&str>)]) -> Reply {
        let parts: Vec<Value> = calls
            .iter()
            .map(|(name, args, signature)| {
                let mut part = json!({"functionCall": {"name": name, "args": args}});
                if let Some(signature) = signature {
                    part["thoughtSignature"] = json!(signature);
                }
                part
            })
            .collect();
        Reply::sse(vec![
            json!({
                "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
                "usageMetadata": {"promptTokenCount": MOCK_PROMPT_TOKENS, "candidatesTokenCount": 5}
            })
            .to_string(),
        ])
    }

    /// A 200 event stream (chunked) with one `data: <s>` event per string, then the end of
    /// the body. Include `[DONE]` yourself if wanted.
    pub fn sse(events: Vec<String>) -> Reply {
        Reply::new(Body::Sse(events))
    }

    /// A complete OpenAI-style answer: one content chunk per part, a `finish_reason: "stop"`
    /// chunk, a usage chunk (11 prompt tokens, one completion token per part) and `[DONE]`.
    pub fn openai_text(parts: &[&str]) -> Reply {
        Reply::openai_reasoning_text(&[], parts)
    }

    /// Like [`Reply::openai_text`], with `reasoning_content` deltas first; completion tokens
    /// count the reasoning parts too.
    pub fn openai_reasoning_text(reasoning: &[&str], text: &[&str]) -> Reply {
        let mut events = Vec::new();
        delta_chunks(&mut events, "reasoning_content", reasoning);
        delta_chunks(&mut events, "content", text);
        finish(events, "stop", reasoning.len() + text.len())
    }

    /// A turn that calls tools: the `text` parts, then for each `(id, name, arguments)` a
    /// chunk opening the call (arguments empty) and two chunks carrying the arguments split
    /// in the middle, then `finish_reason: "tool_calls"`, usage (one completion token per text
    /// part and per call) and `[DONE]`.
    pub fn openai_tool_calls(text: &[&str], calls: &[(&str, &str, &str)]) -> Reply {
        Reply::openai_calls(&[], text, calls, CallIndexing::Standard)
    }

    /// A turn that makes one call and says nothing: [`Reply::openai_tool_calls`] with no
    /// text and `arguments` as the call's JSON arguments.
    pub fn openai_tool_call(id: &str, name: &str, arguments: Value) -> Reply {
        Reply::openai_tool_calls(&[], &[(id, name, &arguments.to_string())])
    }

    /// Like [`Reply::openai_tool_calls`], with `reasoning_content` deltas first (as
    /// DeepSeek's thinking mode sends them) and the calls numbered as `indexing` says.
    pub fn openai_calls(
        reasoning: &[&str],
        text: &[&str],
        calls: &[(&str, &str, &str)],
        indexing: CallIndexing,
    ) -> Reply {
        let mut events = Vec::new();
        delta_chunks(&mut events, "reasoning_content", reasoning);
        delta_chunks(&mut events, "content", text);
        for (index, (id, name, arguments)) in calls.iter().enumerate() {
            let call = |mut fields: Value| {
                match indexing {
                    CallIndexing::Standard => fields["index"] = json!(index),
                    CallIndexing::AllAtZero => fields["index"] = json!(0),
                    CallIndexing::Absent => {}
                }
                json!({ "tool_calls": [fields] })
            };
            let mut open = call(json!({
                "id": id, "type": "function",
                "function": {"name": name, "arguments": ""}
            }));
            if events.is_empty() {
                open["role"] = json!("assistant");
                open["content"] = Value::Null;
            }
            events.push(openai_chunk(open, None));
            let middle = arguments
                .char_indices()
                .nth(arguments.chars().count() / 2)
                .map_or(arguments.len(), |(i, _)| i);
            for piece in [&arguments[..middle], &arguments[middle..]] {
                let piece = call(json!({"function": {"arguments": piece}}));
                events.push(openai_chunk(piece, None));
            }
        }
        finish(
            events,
            "tool_calls",
            reasoning.len() + text.len() + calls.len(),
        )
    }

    /// A 3xx answer sending the client to `location`.
    pub fn redirect(code: u16, location: &str) -> Reply {
        Reply::status(code, "").header("Location", location)
    }

    /// Leaves out the stream's final `[DONE]`: the body ends cleanly right after the last
    /// chunk, as several local servers do.
    pub fn without_done(mut self) -> Reply {
        if let Body::Sse(events) = &mut self.body
            && events.last().is_some_and(|e| e == "[DONE]")
        {
            events.pop();
        }
        self
    }

    /// Ends every line of the SSE events with a bare CR instead of LF.
    pub fn bare_cr(mut self) -> Reply {
        self.line_end = "\r";
        self
    }

    /// A web page (for `web_fetch` pointed at the mock).
    pub fn html(body: &str) -> Reply {
        Reply::new(Body::Page("text/html".into(), body.as_bytes().to_vec()))
    }

    /// A 200 response of this type with these bytes (an image, a file).
    pub fn bytes(content_type: &str, body: &[u8]) -> Reply {
        Reply::new(Body::Page(content_type.into(), body.to_vec()))
    }

    /// An HTTP error: status `code` with this body (`Content-Type: application/json`).
    pub fn status(code: u16, body: &str) -> Reply {
        Reply::new(Body::Status(code, body.into()))
    }

    /// A 200 `text/event-stream` response whose body is exactly `text` (with a
    /// `Content-Length`), e.g. garbage a proxy might send.
    pub fn raw_sse_body(text: &str) -> Reply {
        Reply::new(Body::Raw(text.into()))
    }

    /// Waits this long before each SSE event.
    pub fn chunk_delay(mut self, delay: Duration) -> Reply {
        self.chunk_delay = delay;
        self
    }

    /// Writes each event with [`SENT_AT_MARKER`] replaced by [`clock_us`] at that moment
    /// (for latency measurements: put the marker in the text parts).
    pub fn stamped(mut self) -> Reply {
        self.stamped = true;
        self
    }

    /// Writes `n` SSE events at a time, in one HTTP chunk with one write, as providers and
    /// proxies that buffer do: the client reads many events at once. A delay, cut or stall
    /// still comes at its event (what is gathered before it is written first).
    pub fn events_per_write(mut self, n: usize) -> Reply {
        self.events_per_write = n.max(1);
        self
    }

    /// Waits this long before the response headers.
    pub fn first_byte_delay(mut self, delay: Duration) -> Reply {
        self.first_byte_delay = delay;
        self
    }

    /// After `n` events (or all of them, if there are fewer), closes the connection without
    /// the end of the chunked body: the client sees a truncated stream.
    pub fn cut_after(mut self, n: usize) -> Reply {
        self.cut_after = Some(n);
        self
    }

    /// After `n` events (or all of them, if there are fewer), sends nothing more but keeps the
    /// connection open until the client goes away (recorded as a [`Disconnect`]) or 120 s.
    pub fn stall_after(mut self, n: usize) -> Reply {
        self.stall_after = Some(n);
        self
    }
}

#[derive(Default)]
struct State {
    queue: VecDeque<Reply>,
    /// Replies for requests whose body contains a text, checked before the queue; each
    /// serves every matching request.
    routes: Vec<(String, Reply)>,
    requests: Vec<RecordedRequest>,
    disconnects: Vec<Disconnect>,
}

/// State shared with the connection tasks; `changed` fires on every new record.
#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    changed: Notify,
    /// Serve request after request on one connection.
    keep_alive: bool,
}

impl Shared {
    fn update<T>(&self, f: impl FnOnce(&mut State) -> T) -> T {
        let out = f(&mut self.state.lock().unwrap());
        self.changed.notify_waiters();
        out
    }
}

/// The running mock. Dropping it stops the server and closes every open connection.
pub struct MockModel {
    addr: SocketAddr,
    shared: Arc<Shared>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for MockModel {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl MockModel {
    /// Binds 127.0.0.1:0 and starts serving.
    pub async fn start() -> MockModel {
        MockModel::start_with(false).await
    }

    /// Like [`MockModel::start`], but a connection serves request after request
    /// (`Connection: keep-alive`), as real providers do, so a client's connection pool is
    /// used: for measuring the daemon, where a new TCP connection per call is not what
    /// users see. A cut or stalled reply still ends its connection.
    pub async fn start_keep_alive() -> MockModel {
        MockModel::start_with(true).await
    }

    async fn start_with(keep_alive: bool) -> MockModel {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("mock model: cannot bind 127.0.0.1:0");
        let addr = listener.local_addr().unwrap();
        let shared = Arc::new(Shared {
            keep_alive,
            ..Shared::default()
        });
        let server = tokio::spawn(serve(listener, shared.clone()));
        MockModel {
            addr,
            shared,
            server,
        }
    }

    /// The base URL to configure as the provider's `base_url`: `http://127.0.0.1:PORT/v1`.
    pub fn url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Queues a reply for the next request.
    pub fn push(&self, reply: Reply) {
        self.shared.update(|s| s.queue.push_back(reply));
    }

    /// Answers every request whose body contains `needle` with `reply` (before the queue,
    /// which such requests leave alone). For calls the daemon makes on its own, e.g. a
    /// summary or a title, whose place among the others a test does not fix.
    pub fn route(&self, needle: &str, reply: Reply) {
        self.shared
            .update(|s| s.routes.push((needle.to_owned(), reply)));
    }

    /// Every request so far, oldest first.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.state.lock().unwrap().requests.clone()
    }

    /// The latest request, if any (without copying the others).
    pub fn last_request(&self) -> Option<RecordedRequest> {
        self.shared.state.lock().unwrap().requests.last().cloned()
    }

    /// Every disconnect so far, oldest first.
    pub fn disconnects(&self) -> Vec<Disconnect> {
        self.shared.state.lock().unwrap().disconnects.clone()
    }

    /// Waits until at least `n` requests arrived; returns all of them.
    pub async fn wait_requests(&self, n: usize, timeout: Duration) -> Vec<RecordedRequest> {
        self.wait_until(
            timeout,
            |s| (s.requests.len() >= n).then(|| s.requests.clone()),
            |s| {
                let seen: Vec<String> = s
                    .requests
                    .iter()
                    .map(|r| format!("{} {}", r.method, r.path))
                    .collect();
                format!("{n} request(s), got {}: {seen:?}", seen.len())
            },
        )
        .await
    }

    /// Waits until at least `n` disconnects were recorded; returns all of them.
    pub async fn wait_disconnects(&self, n: usize, timeout: Duration) -> Vec<Disconnect> {
        self.wait_until(
            timeout,
            |s| (s.disconnects.len() >= n).then(|| s.disconnects.clone()),
            |s| {
                format!(
                    "{n} client disconnect(s), got {:?} ({} request(s) received, {} reply(ies) \
                     still queued)",
                    s.disconnects,
                    s.requests.len(),
                    s.queue.len()
                )
            },
        )
        .await
    }

    /// Waits until a client went away mid-reply; returns the first such disconnect.
    pub async fn wait_disconnect(&self, timeout: Duration) -> Disconnect {
        self.wait_disconnects(1, timeout).await[0]
    }

    /// Re-checks `check` on every change until it gives a value; on timeout, panics with
    /// "waited for <describe>".
    async fn wait_until<T>(
        &self,
        timeout: Duration,
        check: impl Fn(&State) -> Option<T>,
        describe: impl Fn(&State) -> String,
    ) -> T {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let changed = self.shared.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if let Some(out) = check(&self.shared.state.lock().unwrap()) {
                return out;
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                let what = describe(&self.shared.state.lock().unwrap());
                panic!("mock model: waited {timeout:?} for {what}");
            }
        }
    }
}

async fn serve(listener: TcpListener, shared: Arc<Shared>) {
    // Connection tasks live in this set, so aborting the server aborts them all.
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                if let Ok((stream, _)) = accepted {
                    // Events are small writes: without this, Nagle's algorithm holds one
                    // back until the client's delayed ACK (~40 ms) on a reused connection.
                    let _ = stream.set_nodelay(true);
                    connections.spawn(handle(stream, shared.clone()));
                }
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

async fn handle(mut stream: TcpStream, shared: Arc<Shared>) {
    while let Some(request) = read_request(&mut stream).await {
        let (index, reply) = shared.update(|s| {
            s.requests.push(request);
            let request = s.requests.last().expect("just pushed");
            let routed = s
                .routes
                .iter()
                .find(|(needle, _)| request.body_text.contains(needle.as_str()))
                .map(|(_, reply)| reply.clone());
            (s.requests.len() - 1, routed.or_else(|| s.queue.pop_front()))
        });
        let reply = reply.unwrap_or_else(|| Reply::status(500, NO_REPLY_LEFT));
        let mut responder = Responder {
            stream: &mut stream,
            shared: &shared,
            index,
            events: 0,
            served: false,
        };
        match responder.send(&reply).await {
            Ok(Reuse::Yes) => {}
            Ok(Reuse::No) => return,
            Err(Gone) => {
                let after_events = responder.events;
                shared.update(|s| {
                    s.disconnects.push(Disconnect {
                        request_index: index,
                        after_events,
                        at: Instant::now(),
                    })
                });
                return;
            }
        }
    }
}

/// Reads one request; `None` if the client left or sent something that is not HTTP.
async fn read_request(stream: &mut TcpStream) -> Option<RecordedRequest> {
    let mut buf = Vec::new();
    let head_end = loop {
        if let Some(pos) = find(&buf, b"\r\n\r\n") {
            break pos;
        }
        if buf.len() > MAX_HEAD_BYTES || stream.read_buf(&mut buf).await.ok()? == 0 {
            return None;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    buf.drain(..head_end + 4);
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split_whitespace();
    let method = first.next()?.to_owned();
    let path = first.next()?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let header = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    };
    let body = if header("transfer-encoding").is_some_and(|v| v.contains("chunked")) {
        read_chunked(stream, buf).await?
    } else {
        let length: usize = header("content-length").map_or(Some(0), |v| v.parse().ok())?;
        while buf.len() < length {
            if stream.read_buf(&mut buf).await.ok()? == 0 {
                return None;
            }
        }
        buf.truncate(length);
        buf
    };
    // Taken before the body is parsed: timings measure the client, not this parser (a
    // 2,000-message request takes the mock milliseconds to parse).
    let received_at = Instant::now();
    let body_text = String::from_utf8_lossy(&body).into_owned();
    Some(RecordedRequest {
        method,
        path,
        headers,
        body: serde_json::from_str(&body_text).unwrap_or(Value::Null),
        body_text,
        received_at,
        served_at: None,
        finished_at: None,
    })
}

/// Decodes a chunked request body whose first bytes are already in `buf`.
async fn read_chunked(stream: &mut TcpStream, mut buf: Vec<u8>) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let line_end = loop {
            if let Some(pos) = find(&buf, b"\r\n") {
                break pos;
            }
            if stream.read_buf(&mut buf).await.ok()? == 0 {
                return None;
            }
        };
        let size_text = String::from_utf8_lossy(&buf[..line_end]).into_owned();
        let size_text = size_text.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_text, 16).ok()?;
        if size == 0 {
            // Trailers are not supported: the last chunk is followed by one blank line.
            return Some(body);
        }
        let needed = line_end + 2 + size + 2;
        while buf.len() < needed {
            if stream.read_buf(&mut buf).await.ok()? == 0 {
                return None;
            }
        }
        body.extend_from_slice(&buf[line_end + 2..line_end + 2 + size]);
        buf.drain(..needed);
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The client went away before the reply was complete.
struct Gone;

/// Whether a connection may carry the next request after a reply.
enum Reuse {
    Yes,
    No,
}

/// Writes one reply, counting the events sent and stamping `served_at` on the first byte.
struct Responder<'a> {
    stream: &'a mut TcpStream,
    shared: &'a Shared,
    index: usize,
    events: usize,
    served: bool,
}

impl Responder<'_> {
    async fn send(&mut self, reply: &Reply) -> Result<Reuse, Gone> {
        self.wait(reply.first_byte_delay).await?;
        let (content_type, body, status): (&str, &[u8], u16) = match &reply.body {
            Body::Sse(events) => return self.send_sse(reply, events).await,
            Body::Status(code, body) => ("application/json", body.as_bytes(), *code),
            Body::Raw(text) => ("text/event-stream", text.as_bytes(), 200),
            Body::Page(content_type, bytes) => (content_type.as_str(), bytes, 200),
        };
        let extra: String = reply
            .headers
            .iter()
            .map(|(name, value)| format!("{name}: {value}\r\n"))
            .collect();
        let mut response = format!(
            "HTTP/1.1 {status} Mock\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
             {extra}Connection: {}\r\n\r\n",
            body.len(),
            self.connection_header(),
        )
        .into_bytes();
        response.extend_from_slice(body);
        self.write(&response).await?;
        self.finished();
        self.end().await
    }

    fn connection_header(&self) -> &'static str {
        if self.shared.keep_alive {
            "keep-alive"
        } else {
            "close"
        }
    }

    /// After a complete reply: keep the connection for the next request, or close it.
    async fn end(&mut self) -> Result<Reuse, Gone> {
        if self.shared.keep_alive {
            return Ok(Reuse::Yes);
        }
        let _ = self.stream.shutdown().await;
        Ok(Reuse::No)
    }

    async fn send_sse(&mut self, reply: &Reply, events: &[String]) -> Result<Reuse, Gone> {
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\
             Transfer-Encoding: chunked\r\nConnection: {}\r\n\r\n",
            self.connection_header()
        );
        self.write(head.as_bytes()).await?;
        let last = events.len();
        // SSE events gathered for the next write (one HTTP chunk).
        let mut gathered = String::new();
        let mut count = 0;
        for i in 0..=last {
            let interrupted = reply.cut_after.is_some_and(|n| n.min(last) == i)
                || reply.stall_after.is_some_and(|n| n.min(last) == i);
            if interrupted || i == last || count == reply.events_per_write {
                self.write_chunk(&gathered).await?;
                gathered.clear();
                count = 0;
            }
            if reply.cut_after.is_some_and(|n| n.min(last) == i) {
                // Dropping the stream ends the connection without the last chunk.
                return Ok(Reuse::No);
            }
            if reply.stall_after.is_some_and(|n| n.min(last) == i) {
                return self.wait(STALL_LIMIT).await.map(|()| Reuse::No);
            }
            let Some(event) = events.get(i) else { break };
            if count == 0 {
                self.wait(reply.chunk_delay).await?;
            }
            // A string that names its event is sent as it is; others become `data:` lines.
            let stamped;
            let event = if reply.stamped {
                stamped = event.replace(SENT_AT_MARKER, &clock_us().to_string());
                &stamped
            } else {
                event
            };
            let data = if event.starts_with("event:") {
                format!("{event}\n\n")
            } else {
                format!("data: {event}\n\n")
            };
            gathered.push_str(&data.replace('\n', reply.line_end));
            count += 1;
            self.events += 1;
        }
        self.write(b"0\r\n\r\n").await?;
        self.finished();
        self.end().await
    }

    /// Writes `data` as one HTTP chunk (nothing when it is empty).
    async fn write_chunk(&mut self, data: &str) -> Result<(), Gone> {
        if data.is_empty() {
            return Ok(());
        }
        let mut chunk = format!("{:x}\r\n", data.len());
        chunk.push_str(data);
        chunk.push_str("\r\n");
        self.write(chunk.as_bytes()).await
    }

    /// Stamps `finished_at`: the whole reply is written.
    fn finished(&self) {
        let index = self.index;
        self.shared.update(|s| {
            s.requests[index].finished_at = Some(Instant::now());
        });
    }

    async fn write(&mut self, bytes: &[u8]) -> Result<(), Gone> {
        if !self.served {
            self.served = true;
            let index = self.index;
            self.shared.update(|s| {
                let request = &mut s.requests[index];
                request.served_at.get_or_insert_with(Instant::now);
            });
        }
        self.stream.write_all(bytes).await.map_err(|_| Gone)
    }

    /// Waits `delay`, or less if the client goes away meanwhile.
    async fn wait(&mut self, delay: Duration) -> Result<(), Gone> {
        if delay.is_zero() {
            return Ok(());
        }
        let deadline = tokio::time::Instant::now() + delay;
        let mut sink = [0u8; 512];
        loop {
            tokio::select! {
                _ = tokio::time::sleep_until(deadline) => return Ok(()),
                read = self.stream.read(&mut sink) => match read {
                    Ok(0) | Err(_) => return Err(Gone),
                    Ok(_) => {} // bytes after the request are ignored
                },
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;

    fn http() -> reqwest::Client {
        // Workspace builds unify reqwest's features with the daemon's (rustls without a
        // provider), so a provider must be installed even for plain http.
        let _ = rustls::crypto::ring::default_provider().install_default();
        reqwest::Client::builder().no_proxy().build().unwrap()
    }

    async fn post(mock: &MockModel, body: &str) -> reqwest::Response {
        http()
            .post(format!("{}/chat/completions", mock.url()))
            .header("Authorization", "Bearer k")
            .header("content-type", "application/json")
            .body(body.to_owned())
            .send()
            .await
            .unwrap()
    }

    /// The `data:` payloads of an SSE body.
    fn data_of(body: &str) -> Vec<String> {
        body.split("\n\n")
            .filter(|e| !e.is_empty())
            .map(|e| e.strip_prefix("data: ").unwrap_or(e).to_owned())
            .collect()
    }

    /// The decoded chunks of a helper reply, minus `[DONE]` (checked to be last).
    async fn chunks(reply: Reply) -> Vec<Value> {
        let mock = MockModel::start().await;
        mock.push(reply);
        let response = post(&mock, "{}").await;
        assert_eq!(response.status(), 200);
        assert_eq!(
            response.headers()["content-type"],
            "text/event-stream",
            "{response:?}"
        );
        let mut data = data_of(&response.text().await.unwrap());
        assert_eq!(data.pop().as_deref(), Some("[DONE]"));
        data.iter()
            .map(|d| serde_json::from_str(d).unwrap())
            .collect()
    }

    #[tokio::test]
    async fn openai_helpers_build_the_documented_streams() {
        let text = chunks(Reply::openai_text(&["Hel", "lo"])).await;
        let reasoning = chunks(Reply::openai_reasoning_text(&["hmm"], &["ok"])).await;
        let tools = chunks(Reply::openai_tool_calls(
            &[],
            &[("call_1", "read_file", r#"{"path":"é.txt"}"#)],
        ))
        .await;
        let delta = |c: &Value| c["choices"][0]["delta"].clone();
        let finish = |c: &Value| c["choices"][0]["finish_reason"].clone();
        let usage = |c: &Value| (c["choices"].clone(), c["usage"].clone());
        let usage_of = |completion: u64| {
            let total = 11 + completion;
            let usage = json!({"prompt_tokens": 11, "completion_tokens": completion, "total_tokens": total});
            (json!([]), usage)
        };

        assert_eq!(text.len(), 4);
        assert_eq!(text[0]["object"], "chat.completion.chunk");
        assert_eq!(
            delta(&text[0]),
            json!({"role": "assistant", "content": "Hel"})
        );
        assert_eq!(delta(&text[1]), json!({"content": "lo"}));
        assert_eq!(finish(&text[1]), Value::Null);
        assert_eq!(
            (delta(&text[2]), finish(&text[2])),
            (json!({}), json!("stop"))
        );
        assert_eq!(usage(&text[3]), usage_of(2));

        assert_eq!(
            delta(&reasoning[0]),
            json!({"role": "assistant", "reasoning_content": "hmm", "content": null})
        );
        assert_eq!(delta(&reasoning[1]), json!({"content": "ok"}));
        assert_eq!(usage(&reasoning[3]), usage_of(2));

        let calls: Vec<Value> = tools[..3]
            .iter()
            .map(|c| delta(c)["tool_calls"][0].clone())
            .collect();
        assert_eq!(calls[0]["id"], "call_1");
        assert_eq!(calls[0]["function"]["name"], "read_file");
        let arguments: String = calls
            .iter()
            .map(|c| c["function"]["arguments"].as_str().unwrap())
            .collect();
        assert_eq!(arguments, r#"{"path":"é.txt"}"#);
        assert!(calls.iter().all(|c| c["index"] == 0));
        assert_eq!(finish(&tools[3]), "tool_calls");
        assert_eq!(usage(&tools[4]), usage_of(1));
    }

    #[tokio::test]
    async fn quirks_change_only_what_they_name() {
        let mock = MockModel::start().await;
        mock.push(Reply::openai_text(&["a"]).without_done());
        mock.push(Reply::sse(vec!["x".into(), "y".into()]).bare_cr());
        mock.push(Reply::redirect(
            307,
            "http://127.0.0.1:9/v1/chat/completions",
        ));
        let body = post(&mock, "{}").await.text().await.unwrap();
        assert!(
            !body.contains("[DONE]") && body.ends_with("}\n\n"),
            "{body}"
        );
        let body = post(&mock, "{}").await.text().await.unwrap();
        assert_eq!(body, "data: x\r\rdata: y\r\r");
        let response = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap()
            .post(format!("{}/chat/completions", mock.url()))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 307);
        assert_eq!(
            response.headers()["location"],
            "http://127.0.0.1:9/v1/chat/completions"
        );
        // Events gathered into fewer, larger writes: the same body.
        let events: Vec<String> = (0..7).map(|i| i.to_string()).collect();
        for per_write in [1, 3, 7, 100] {
            mock.push(Reply::sse(events.clone()).events_per_write(per_write));
            let body = post(&mock, "{}").await.text().await.unwrap();
            assert_eq!(data_of(&body), events, "{per_write} per write");
        }

        let numbered = |indexing| {
            let reply = Reply::openai_calls(
                &["think"],
                &[],
                &[("c1", "a", "{}"), ("c2", "b", "{}")],
                indexing,
            );
            let Body::Sse(events) = reply.body else {
                panic!("not a stream")
            };
            let indexes: Vec<Value> = events
                .iter()
                .filter_map(|e| serde_json::from_str::<Value>(e).ok())
                .filter_map(|c| {
                    c["choices"][0]["delta"]["tool_calls"][0]
                        .get("index")
                        .cloned()
                })
                .collect();
            let reasoning = events
                .iter()
                .any(|e| e.contains("\"reasoning_content\":\"think\""));
            (indexes, reasoning)
        };
        assert_eq!(
            numbered(CallIndexing::Standard),
            (
                vec![json!(0), json!(0), json!(0), json!(1), json!(1), json!(1)],
                true
            )
        );
        assert_eq!(numbered(CallIndexing::AllAtZero).0, vec![json!(0); 6]);
        assert_eq!(numbered(CallIndexing::Absent).0, Vec::<Value>::new());
    }

    #[tokio::test]
    async fn status_raw_and_empty_queue_replies() {
        let mock = MockModel::start().await;
        mock.push(Reply::status(429, r#"{"error":"slow down"}"#));
        mock.push(Reply::raw_sse_body("<html>bad gateway</html>\n"));
        mock.push(Reply::sse(vec!["a".into(), "[DONE]".into()]));

        let response = post(&mock, "{}").await;
        assert_eq!(response.status(), 429);
        assert_eq!(response.headers()["content-type"], "application/json");
        assert_eq!(response.text().await.unwrap(), r#"{"error":"slow down"}"#);

        let response = post(&mock, "{}").await;
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        assert_eq!(response.text().await.unwrap(), "<html>bad gateway</html>\n");

        let response = post(&mock, "{}").await;
        assert_eq!(
            response.text().await.unwrap(),
            "data: a\n\ndata: [DONE]\n\n"
        );

        let response = post(&mock, "{}").await;
        assert_eq!(response.status(), 500);
        assert_eq!(response.text().await.unwrap(), NO_REPLY_LEFT);
        assert!(mock.disconnects().is_empty(), "{:?}", mock.disconnects());
    }

    #[tokio::test]
    async fn requests_are_recorded() {
        let mock = MockModel::start().await;
        mock.push(Reply::openai_text(&["x"]).first_byte_delay(Duration::from_millis(30)));
        post(&mock, r#"{"model":"m","stream":true}"#)
            .await
            .text()
            .await
            .unwrap();
        // Not JSON, and sent chunked (a body of unknown length).
        let pieces = futures::stream::iter(["not ", "json"].map(Ok::<_, std::io::Error>));
        http()
            .post(format!("{}/other", mock.url()))
            .body(reqwest::Body::wrap_stream(pieces))
            .send()
            .await
            .unwrap();

        let requests = mock.wait_requests(2, Duration::from_secs(5)).await;
        let first = &requests[0];
        assert_eq!(
            (first.method.as_str(), first.path.as_str()),
            ("POST", "/v1/chat/completions")
        );
        assert_eq!(first.body, json!({"model": "m", "stream": true}));
        assert_eq!(first.body_text, r#"{"model":"m","stream":true}"#);
        assert_eq!(first.header("AUTHORIZATION"), Some("Bearer k"));
        assert!(
            first.headers.iter().any(|(n, _)| n == "authorization"),
            "{:?}",
            first.headers
        );
        let served = first.served_at.expect("the reply was served");
        assert!(served - first.received_at >= Duration::from_millis(30));
        assert!(first.finished_at.expect("the reply was finished") >= served);

        assert_eq!(requests[1].path, "/v1/other");
        assert_eq!(requests[1].header("transfer-encoding"), Some("chunked"));
        assert_eq!(requests[1].body_text, "not json");
        assert_eq!(requests[1].body, Value::Null);
    }

    #[tokio::test]
    async fn a_keep_alive_mock_serves_several_requests_on_one_connection() {
        let mock = MockModel::start_keep_alive().await;
        mock.push(Reply::openai_text(&["one"]));
        mock.push(Reply::status(429, "slow down"));
        mock.push(Reply::openai_text(&["three"]));
        let mut stream = TcpStream::connect(mock.addr).await.unwrap();
        let mut seen = String::new();
        for n in 0..3 {
            let request =
                "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}";
            stream.write_all(request.as_bytes()).await.unwrap();
            // Read until this reply's end: the chunked terminator, or the short body.
            let end: &str = if n == 1 { "slow down" } else { "0\r\n\r\n" };
            let mut buf = [0u8; 4096];
            while !seen.ends_with(end) {
                let read = stream.read(&mut buf).await.unwrap();
                assert!(read > 0, "the connection closed after {n} replies");
                seen.push_str(&String::from_utf8_lossy(&buf[..read]));
            }
        }
        assert_eq!(seen.matches("Connection: keep-alive").count(), 3, "{seen}");
        assert!(seen.contains("one") && seen.contains("three"));
        assert_eq!(mock.requests().len(), 3);
    }

    #[tokio::test]
    async fn a_stamped_reply_carries_the_time_each_event_was_written() {
        let before = clock_us();
        let marker = format!("t={SENT_AT_MARKER}");
        let pieces = chunks(Reply::openai_text(&[&marker, "plain"]).stamped()).await;
        let after = clock_us();
        let text = pieces[0]["choices"][0]["delta"]["content"]
            .as_str()
            .unwrap();
        let sent: u64 = text.strip_prefix("t=").unwrap().parse().unwrap();
        assert!(
            (before..=after).contains(&sent),
            "{before} <= {sent} <= {after}"
        );
        assert_eq!(pieces[1]["choices"][0]["delta"]["content"], "plain");
    }

    #[tokio::test]
    async fn a_cut_stream_is_an_error_for_the_client() {
        let mock = MockModel::start().await;
        mock.push(Reply::openai_text(&["a", "b", "c"]).cut_after(2));
        let mut body = post(&mock, "{}").await.bytes_stream();
        let mut received = Vec::new();
        let mut error = None;
        while let Some(item) = body.next().await {
            match item {
                Ok(bytes) => received.extend_from_slice(&bytes),
                Err(e) => error = Some(e),
            }
        }
        assert!(
            error.is_some(),
            "an unterminated chunked body must not look complete"
        );
        let data = data_of(&String::from_utf8(received).unwrap());
        assert_eq!(data.len(), 2, "{data:?}");
        assert!(
            mock.disconnects().is_empty(),
            "a cut is not a client disconnect"
        );
    }

    #[tokio::test]
    async fn a_client_leaving_mid_stream_is_recorded() {
        let mock = MockModel::start().await;
        mock.push(Reply::openai_text(&["a"; 50]).chunk_delay(Duration::from_millis(20)));
        mock.push(Reply::openai_text(&["a", "b"]).stall_after(1));
        mock.push(Reply::openai_text(&["never"]).first_byte_delay(Duration::from_secs(60)));

        let mut body = post(&mock, "{}").await.bytes_stream();
        body.next().await.unwrap().unwrap();
        let left = Instant::now();
        drop(body);
        let d = mock.wait_disconnect(Duration::from_secs(5)).await;
        assert_eq!(d.request_index, 0);
        assert!(d.after_events >= 1 && d.after_events < 50, "{d:?}");
        assert!(d.at >= left);

        let mut body = post(&mock, "{}").await.bytes_stream();
        let first = body.next().await.unwrap().unwrap();
        assert!(String::from_utf8_lossy(&first).contains(r#""content":"a""#));
        drop(body);
        let d = mock.wait_disconnects(2, Duration::from_secs(5)).await[1];
        assert_eq!((d.request_index, d.after_events), (1, 1));

        let pending = tokio::spawn(post_owned(mock.url()));
        mock.wait_requests(3, Duration::from_secs(5)).await;
        pending.abort();
        let d = mock.wait_disconnects(3, Duration::from_secs(5)).await[2];
        assert_eq!((d.request_index, d.after_events), (2, 0));
        assert_eq!(mock.requests()[2].served_at, None);
    }

    async fn post_owned(url: String) {
        let _ = http().post(format!("{url}/chat/completions")).send().await;
    }
}
