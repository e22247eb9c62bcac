//! The OpenAI chat-completions wire format (streaming), spoken by OpenAI and most
//! compatible services (DeepSeek, OpenRouter, Groq, Ollama, vLLM, LM Studio, ...).

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use agent_proto::Usage;
use bytes::Bytes;
use futures::stream::BoxStream;
use futures::{StreamExt, stream};
use serde_json::{Value, json};

use super::sse::{SseDecoder, SseItem};
use super::{
    ChatMessage, FinishReason, Provider, ProviderError, ProviderEvent, ProviderRequest,
    ProviderStream, excerpt,
};
use crate::config::Secret;

/// Most of an error body we keep (the start says what went wrong).
const MAX_ERROR_BODY: usize = 64 * 1024;

#[derive(Debug)]
pub struct OpenAiProvider {
    pub id: String,
    pub base_url: String,
    pub api_key: Option<Secret>,
    pub headers: BTreeMap<String, String>,
    pub http: reqwest::Client,
    pub idle_timeout: Duration,
}

impl OpenAiProvider {
    fn endpoint(&self) -> String {
        format!("{}/chat/completions", self.base_url.trim_end_matches('/'))
    }
}

/// The request body for a streaming chat completion.
pub fn request_body(request: &ProviderRequest) -> Value {
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    if let Some(system) = &request.system {
        messages.push(json!({"role": "system", "content": system}));
    }
    for m in &request.messages {
        messages.push(match m {
            ChatMessage::User { content } => json!({"role": "user", "content": content}),
            ChatMessage::Assistant {
                content,
                tool_calls,
            } if tool_calls.is_empty() => json!({"role": "assistant", "content": content}),
            ChatMessage::Assistant {
                content,
                tool_calls,
            } => {
                let calls: Vec<Value> = tool_calls
                    .iter()
                    .map(|c| {
                        json!({
                            "id": c.id,
                            "type": "function",
                            "function": {"name": c.name, "arguments": c.arguments}
                        })
                    })
                    .collect();
                let content = if content.is_empty() {
                    Value::Null
                } else {
                    json!(content)
                };
                json!({"role": "assistant", "content": content, "tool_calls": calls})
            }
            ChatMessage::Tool {
                tool_call_id,
                content,
                ..
            } => json!({"role": "tool", "tool_call_id": tool_call_id, "content": content}),
        });
    }
    let mut body = json!({
        "model": request.model,
        "messages": messages,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                json!({
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters,
                    }
                })
            })
            .collect();
        body["tools"] = Value::Array(tools);
    }
    if let Some(max) = request.max_output_tokens {
        body["max_tokens"] = json!(max);
    }
    if let Some(t) = request.temperature {
        body["temperature"] = json!(t);
    }
    body
}

/// What the parser remembers between chunks: which tool calls were announced.
#[derive(Debug, Default)]
pub struct ChunkState {
    started: Vec<usize>,
}

/// Events carried by one `data:` payload of the stream.
pub fn parse_chunk(
    provider: &str,
    data: &str,
    state: &mut ChunkState,
) -> Result<Vec<ProviderEvent>, ProviderError> {
    let value: Value = serde_json::from_str(data).map_err(|_| ProviderError::Malformed {
        provider: provider.to_owned(),
        raw: excerpt(data, 2048),
    })?;
    if value.get("error").is_some_and(|e| !e.is_null()) {
        return Err(ProviderError::InStream {
            provider: provider.to_owned(),
            raw: excerpt(data, 8192),
        });
    }
    let mut events = Vec::new();
    if let Some(choice) = value.pointer("/choices/0") {
        let delta = choice.get("delta");
        // DeepSeek sends `reasoning_content`; OpenRouter and some others `reasoning`.
        for key in ["reasoning_content", "reasoning"] {
            if let Some(text) = delta.and_then(|d| d.get(key)).and_then(Value::as_str) {
                if !text.is_empty() {
                    events.push(ProviderEvent::ReasoningDelta(text.to_owned()));
                }
                break;
            }
        }
        if let Some(text) = delta.and_then(|d| d.get("content")).and_then(Value::as_str)
            && !text.is_empty()
        {
            events.push(ProviderEvent::TextDelta(text.to_owned()));
        }
        let calls = delta
            .and_then(|d| d.get("tool_calls"))
            .and_then(Value::as_array);
        for (position, call) in calls.into_iter().flatten().enumerate() {
            let index = call
                .get("index")
                .and_then(Value::as_u64)
                .and_then(|i| usize::try_from(i).ok())
                .unwrap_or(position);
            let function = call.get("function");
            if !state.started.contains(&index) {
                let name = function.and_then(|f| f.get("name")).and_then(Value::as_str);
                let Some(name) = name.filter(|n| !n.is_empty()) else {
                    return Err(ProviderError::Malformed {
                        provider: provider.to_owned(),
                        raw: format!("a tool call without a name: {}", excerpt(data, 2048)),
                    });
                };
                let id = call
                    .get("id")
                    .and_then(Value::as_str)
                    .filter(|id| !id.is_empty())
                    .map_or_else(
                        || format!("call_{}", uuid::Uuid::new_v4().simple()),
                        str::to_owned,
                    );
                state.started.push(index);
                events.push(ProviderEvent::ToolCallStart {
                    index,
                    id,
                    name: name.to_owned(),
                });
            }
            if let Some(args) = function.and_then(|f| f.get("arguments")) {
                let delta = match args {
                    Value::String(s) => s.clone(),
                    Value::Null => String::new(),
                    // Some servers send the arguments as an object, not as JSON text.
                    other => other.to_string(),
                };
                if !delta.is_empty() {
                    events.push(ProviderEvent::ToolCallArgsDelta { index, delta });
                }
            }
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            events.push(ProviderEvent::Finish(FinishReason::parse(reason)));
        }
    }
    if let Some(usage) = value.get("usage").filter(|u| u.is_object()) {
        let count = |k: &str| usage.get(k).and_then(Value::as_u64).unwrap_or(0);
        events.push(ProviderEvent::Usage(Usage {
            input_tokens: count("prompt_tokens"),
            output_tokens: count("completion_tokens"),
        }));
    }
    Ok(events)
}

impl Provider for OpenAiProvider {
    fn request_body(&self, request: &ProviderRequest) -> Value {
        request_body(request)
    }

    fn stream(&self, request: ProviderRequest) -> ProviderStream {
        let url = self.endpoint();
        let mut builder = self
            .http
            .post(&url)
            .header("accept", "text/event-stream")
            .json(&request_body(&request));
        if let Some(key) = &self.api_key {
            builder = builder.bearer_auth(key.expose());
        }
        for (name, value) in &self.headers {
            builder = builder.header(name, value);
        }
        let state = State::Start(Box::new(Start {
            builder,
            provider: self.id.clone(),
            url,
            idle_secs: self.idle_timeout.as_secs(),
        }));
        Box::pin(stream::unfold(state, next))
    }
}

struct Start {
    builder: reqwest::RequestBuilder,
    provider: String,
    url: String,
    idle_secs: u64,
}

enum State {
    Start(Box<Start>),
    Streaming(Box<Streaming>),
    Done,
}

struct Streaming {
    provider: String,
    idle_secs: u64,
    body: BoxStream<'static, reqwest::Result<Bytes>>,
    decoder: SseDecoder,
    chunks: ChunkState,
    pending: VecDeque<ProviderEvent>,
    /// Lines outside the SSE format, kept to explain a failure.
    junk: String,
    done: bool,
}

type Item = Result<ProviderEvent, ProviderError>;

async fn next(state: State) -> Option<(Item, State)> {
    match state {
        State::Start(s) => match start(s.builder, &s.provider, &s.url, s.idle_secs).await {
            Ok(streaming) => pump(streaming).await,
            Err(e) => Some((Err(e), State::Done)),
        },
        State::Streaming(s) => pump(s).await,
        State::Done => None,
    }
}

async fn start(
    builder: reqwest::RequestBuilder,
    provider: &str,
    url: &str,
    idle_secs: u64,
) -> Result<Box<Streaming>, ProviderError> {
    let response = builder.send().await.map_err(|e| {
        if e.is_timeout() {
            ProviderError::IdleTimeout {
                provider: provider.to_owned(),
                secs: idle_secs,
            }
        } else {
            ProviderError::Unreachable {
                provider: provider.to_owned(),
                url: url.to_owned(),
                detail: error_chain(&e),
            }
        }
    })?;
    let status = response.status();
    if !status.is_success() {
        let body = read_body(response).await;
        return Err(ProviderError::Http {
            provider: provider.to_owned(),
            status: status.as_u16(),
            body: if body.is_empty() {
                status.canonical_reason().unwrap_or("no body").to_owned()
            } else {
                body
            },
        });
    }
    let is_json = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if is_json {
        // The server ignored `stream: true` or sent an error with a 200.
        let body = read_body(response).await;
        return Err(ProviderError::Malformed {
            provider: provider.to_owned(),
            raw: format!("expected an event stream, got JSON: {body}"),
        });
    }
    Ok(Box::new(Streaming {
        provider: provider.to_owned(),
        idle_secs,
        body: response.bytes_stream().boxed(),
        decoder: SseDecoder::new(),
        chunks: ChunkState::default(),
        pending: VecDeque::new(),
        junk: String::new(),
        done: false,
    }))
}

async fn read_body(response: reqwest::Response) -> String {
    let mut body = Vec::new();
    let mut chunks = response.bytes_stream();
    while let Some(Ok(chunk)) = chunks.next().await {
        body.extend_from_slice(&chunk);
        if body.len() >= MAX_ERROR_BODY {
            break;
        }
    }
    excerpt(String::from_utf8_lossy(&body).trim(), MAX_ERROR_BODY)
}

async fn pump(mut s: Box<Streaming>) -> Option<(Item, State)> {
    loop {
        if let Some(event) = s.pending.pop_front() {
            return Some((Ok(event), State::Streaming(s)));
        }
        if s.done {
            return None;
        }
        let items = match s.body.next().await {
            Some(Ok(bytes)) => s.decoder.push(&bytes),
            Some(Err(e)) => {
                let error = if e.is_timeout() {
                    ProviderError::IdleTimeout {
                        provider: s.provider.clone(),
                        secs: s.idle_secs,
                    }
                } else {
                    ProviderError::Truncated {
                        provider: s.provider.clone(),
                        detail: error_chain(&e),
                    }
                };
                return Some((Err(error), State::Done));
            }
            None => {
                let items = s.decoder.finish();
                if let Err(e) = take_items(&mut s, items) {
                    return Some((Err(e), State::Done));
                }
                if s.done {
                    continue;
                }
                let mut detail = "the connection closed before [DONE]".to_owned();
                if !s.junk.is_empty() {
                    detail.push_str("; it also sent: ");
                    detail.push_str(&excerpt(&s.junk, 4096));
                }
                return Some((
                    Err(ProviderError::Truncated {
                        provider: s.provider.clone(),
                        detail,
                    }),
                    State::Done,
                ));
            }
        };
        if let Err(e) = take_items(&mut s, items) {
            return Some((Err(e), State::Done));
        }
    }
}

fn take_items(s: &mut Streaming, items: Vec<SseItem>) -> Result<(), ProviderError> {
    for item in items {
        if s.done {
            break;
        }
        match item {
            SseItem::Event { data, .. } if data.trim() == "[DONE]" => s.done = true,
            SseItem::Event { data, .. } => {
                let events = parse_chunk(&s.provider, &data, &mut s.chunks)?;
                s.pending.extend(events);
            }
            SseItem::Junk(line) => {
                if s.junk.len() < 8192 {
                    s.junk.push_str(&line);
                    s.junk.push('\n');
                }
            }
            SseItem::Overflow => {
                return Err(ProviderError::Malformed {
                    provider: s.provider.clone(),
                    raw: "a line over 8 MiB".into(),
                });
            }
        }
    }
    Ok(())
}

/// An error and its sources, e.g. "error sending request: connection refused".
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let s_text = s.to_string();
        if !text.contains(&s_text) {
            text.push_str(": ");
            text.push_str(&s_text);
        }
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::{ToolCallRequest, ToolSpec};

    #[test]
    fn chunks_become_events() {
        let cases: &[(&str, Vec<ProviderEvent>)] = &[
            (
                r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"}}]}"#,
                vec![ProviderEvent::TextDelta("Hel".into())],
            ),
            (
                r#"{"choices":[{"delta":{"reasoning_content":"hmm","content":null}}]}"#,
                vec![ProviderEvent::ReasoningDelta("hmm".into())],
            ),
            (
                r#"{"choices":[{"delta":{"reasoning":"or","content":""}}]}"#,
                vec![ProviderEvent::ReasoningDelta("or".into())],
            ),
            (
                r#"{"choices":[{"delta":{},"finish_reason":"stop"}]}"#,
                vec![ProviderEvent::Finish(FinishReason::Stop)],
            ),
            (
                r#"{"choices":[],"usage":{"prompt_tokens":11,"completion_tokens":3,"total_tokens":14}}"#,
                vec![ProviderEvent::Usage(Usage {
                    input_tokens: 11,
                    output_tokens: 3,
                })],
            ),
            (
                r#"{"choices":[{"delta":{"content":"x"}}],"usage":null}"#,
                vec![ProviderEvent::TextDelta("x".into())],
            ),
        ];
        for (data, expected) in cases {
            let mut state = ChunkState::default();
            assert_eq!(
                &parse_chunk("p", data, &mut state).unwrap(),
                expected,
                "{data}"
            );
        }
    }

    #[test]
    fn tool_calls_stream_in_pieces() {
        let chunks = [
            r#"{"choices":[{"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"read_file","arguments":""}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"pa"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"call_a","function":{"arguments":"th\": \"x\"}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"call_b","function":{"name":"bash","arguments":{"command":"ls"}}}]}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
        ];
        let mut state = ChunkState::default();
        let events: Vec<ProviderEvent> = chunks
            .iter()
            .flat_map(|c| parse_chunk("p", c, &mut state).unwrap())
            .collect();
        assert_eq!(
            events,
            vec![
                ProviderEvent::ToolCallStart {
                    index: 0,
                    id: "call_a".into(),
                    name: "read_file".into()
                },
                ProviderEvent::ToolCallArgsDelta {
                    index: 0,
                    delta: "{\"pa".into()
                },
                ProviderEvent::ToolCallArgsDelta {
                    index: 0,
                    delta: "th\": \"x\"}".into()
                },
                ProviderEvent::ToolCallStart {
                    index: 1,
                    id: "call_b".into(),
                    name: "bash".into()
                },
                ProviderEvent::ToolCallArgsDelta {
                    index: 1,
                    delta: "{\"command\":\"ls\"}".into()
                },
                ProviderEvent::Finish(FinishReason::ToolCalls),
            ]
        );
        let err = parse_chunk(
            "p",
            r#"{"choices":[{"delta":{"tool_calls":[{"index":5,"function":{"arguments":"{}"}}]}}]}"#,
            &mut state,
        )
        .unwrap_err();
        assert!(err.to_string().contains("without a name"), "{err}");
    }

    #[test]
    fn transcript_with_tool_calls_and_tools() {
        let request = ProviderRequest {
            model: "m".into(),
            system: None,
            messages: vec![
                ChatMessage::User {
                    content: "list".into(),
                },
                ChatMessage::Assistant {
                    content: String::new(),
                    tool_calls: vec![ToolCallRequest {
                        id: "c1".into(),
                        name: "bash".into(),
                        arguments: r#"{"command":"ls"}"#.into(),
                    }],
                },
                ChatMessage::Tool {
                    tool_call_id: "c1".into(),
                    name: "bash".into(),
                    content: "a\nexit code: 0".into(),
                },
            ],
            tools: vec![ToolSpec {
                name: "bash".into(),
                description: "run".into(),
                parameters: json!({"type": "object"}),
            }],
            max_output_tokens: None,
            temperature: None,
        };
        let body = request_body(&request);
        assert_eq!(
            body["messages"],
            json!([
                {"role": "user", "content": "list"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{\"command\":\"ls\"}"}}
                ]},
                {"role": "tool", "tool_call_id": "c1", "content": "a\nexit code: 0"}
            ])
        );
        assert_eq!(
            body["tools"],
            json!([{"type": "function", "function": {"name": "bash", "description": "run", "parameters": {"type": "object"}}}])
        );
    }

    #[test]
    fn bad_chunks_keep_the_raw_text() {
        let mut state = ChunkState::default();
        let err = parse_chunk("p", "not json at all", &mut state).unwrap_err();
        assert_eq!(err.kind(), agent_proto::run_error::PROVIDER_MALFORMED);
        assert!(err.to_string().contains("not json at all"), "{err}");
        let err =
            parse_chunk("p", r#"{"error":{"message":"quota exceeded"}}"#, &mut state).unwrap_err();
        assert_eq!(err.kind(), agent_proto::run_error::PROVIDER_STREAM_ERROR);
        assert!(err.to_string().contains("quota exceeded"), "{err}");
    }

    #[test]
    fn body_has_system_history_and_options() {
        let request = ProviderRequest {
            model: "m".into(),
            system: Some("be brief".into()),
            messages: vec![
                ChatMessage::User {
                    content: "hi".into(),
                },
                ChatMessage::Assistant {
                    content: "hello".into(),
                    tool_calls: vec![],
                },
            ],
            tools: vec![],
            max_output_tokens: Some(100),
            temperature: None,
        };
        let body = request_body(&request);
        assert_eq!(
            body,
            json!({
                "model": "m",
                "messages": [
                    {"role": "system", "content": "be brief"},
                    {"role": "user", "content": "hi"},
                    {"role": "assistant", "content": "hello"}
                ],
                "stream": true,
                "stream_options": {"include_usage": true},
                "max_tokens": 100
            })
        );
    }
}
