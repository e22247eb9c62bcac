//! The Anthropic Messages API (streaming): `POST {base}/v1/messages` with `x-api-key`.
//!
//! Maps the provider-neutral request to Anthropic's shape (system prompt apart, content
//! blocks, `tool_use` in assistant turns, `tool_result` blocks in the next user turn, roles
//! strictly alternating) and its named SSE events (`message_start`, `content_block_*`,
//! `message_delta`, `message_stop`) back to provider events. `thinking` deltas become
//! reasoning, with their `signature`; `redacted_thinking` is kept encrypted. With
//! `thinking_budget` set for a model, requests turn extended thinking on and send the
//! thinking blocks back as received. `message_stop` is the end marker: a stream without it
//! is truncated, unless a `stop_reason` came and the body closed cleanly.

use std::collections::BTreeMap;

use agent_proto::Usage;
use serde_json::{Value, json};

use super::http::{SseParser, WireFormat};
use super::{
    ChatMessage, FinishReason, Part, ProviderError, ProviderEvent, ProviderRequest, ReasoningPart,
    excerpt,
};
use crate::config::Secret;

/// The API version this mapping speaks.
const API_VERSION: &str = "2023-06-01";

/// The Messages API: `POST {base}/v1/messages`, key in `x-api-key`.
#[derive(Debug)]
pub(super) struct AnthropicFormat {
    /// `max_tokens` when the request sets none (the API requires it).
    pub default_max_tokens: u32,
    /// Extended thinking per model id: its `budget_tokens` (from `thinking_budget` in the
    /// config's model entries).
    pub thinking: BTreeMap<String, u32>,
}

impl AnthropicFormat {
    /// The thinking budget for this request, if thinking is on for its model. A tool-use
    /// loop keeps one thinking setting throughout (the API refuses a request whose
    /// tool-calling turn has no thinking block while thinking is on): if an assistant
    /// message of the current turn made calls without signed thinking (thinking was
    /// switched on mid-turn), this request goes without thinking.
    /// A turn's `reasoningEffort` sets the budget ([`super::output::thinking_budget`]),
    /// over the config's.
    fn thinking_for(&self, request: &ProviderRequest) -> Option<u32> {
        let budget = match request.options.reasoning_effort {
            Some(effort) => super::output::thinking_budget(effort),
            None => *self.thinking.get(&request.model)?,
        };
        let unsigned_calls =
            request.messages[request.current_turn_start()..]
                .iter()
                .any(|m| match m {
                    ChatMessage::Assistant {
                        tool_calls,
                        reasoning,
                        ..
                    } => {
                        !tool_calls.is_empty()
                            && !reasoning
                                .iter()
                                .any(|r| r.signature.is_some() || r.redacted.is_some())
                    }
                    _ => false,
                });
        (!unsigned_calls).then_some(budget)
    }
}

impl WireFormat for AnthropicFormat {
    fn url(&self, base_url: &str, _model: &str) -> String {
        format!("{}/v1/messages", base_url.trim_end_matches('/'))
    }

    fn authorize(
        &self,
        request: reqwest::RequestBuilder,
        key: Option<&Secret>,
    ) -> reqwest::RequestBuilder {
        let request = request.header("anthropic-version", API_VERSION);
        match key {
            Some(key) => request.header("x-api-key", key.expose()),
            None => request,
        }
    }

    fn body(&self, request: &ProviderRequest, provider: &str) -> Result<Value, ProviderError> {
        request_body(
            request,
            provider,
            self.default_max_tokens,
            self.thinking_for(request),
        )
    }

    fn parser(&self, provider: &str) -> Box<dyn SseParser> {
        Box::new(EventParser::new(provider))
    }
}

/// Appends content blocks to the conversation, merging into the last message when it has
/// the same role (the API wants user and assistant turns to alternate).
fn push(messages: &mut Vec<Value>, role: &str, blocks: Vec<Value>) {
    if blocks.is_empty() {
        return;
    }
    if let Some(last) = messages.last_mut()
        && last["role"] == role
        && let Some(content) = last["content"].as_array_mut()
    {
        content.extend(blocks);
        return;
    }
    messages.push(json!({"role": role, "content": blocks}));
}

/// A request ending with an assistant message asks the model to go on from it (a
/// `continueLoop` after `max_tokens`). The API refuses such a final message whose text ends
/// in whitespace (400 "final assistant content cannot end with trailing whitespace"):
/// its last text block is trimmed, and dropped when nothing is left.
fn trim_prefill(messages: &mut Vec<Value>) {
    let Some(last) = messages.last_mut().filter(|m| m["role"] == "assistant") else {
        return;
    };
    let Some(blocks) = last["content"].as_array_mut() else {
        return;
    };
    let Some(block) = blocks.last_mut().filter(|b| b["type"] == "text") else {
        return;
    };
    let trimmed = block["text"]
        .as_str()
        .unwrap_or_default()
        .trim_end()
        .to_owned();
    if trimmed.is_empty() {
        blocks.pop();
    } else {
        block["text"] = Value::String(trimmed);
    }
    if blocks.is_empty() {
        messages.pop();
    }
}

/// A piece of reasoning as a thinking block, as received: signed thinking or redacted
/// thinking (reasoning without a signature came from elsewhere and cannot go back).
fn thinking_block(r: &ReasoningPart) -> Option<Value> {
    match (&r.redacted, &r.signature) {
        (Some(data), _) => Some(json!({"type": "redacted_thinking", "data": data})),
        (None, Some(signature)) => {
            Some(json!({"type": "thinking", "thinking": r.text, "signature": signature}))
        }
        (None, None) => None,
    }
}

/// An assistant message's content blocks, in the order the model wrote them (`order`;
/// when empty: thinking, text, calls). The API wants a turn's thinking blocks back as they
/// were, in their places: with interleaved thinking a turn is thinking, tool_use,
/// thinking, tool_use, and regrouped it is refused or loses the model's reasoning. Thinking
/// goes back only while thinking is on.
fn assistant_blocks(
    content: &str,
    tool_calls: &[super::ToolCallRequest],
    reasoning: &[ReasoningPart],
    order: &[Part],
    thinking: Option<u32>,
) -> Vec<Value> {
    let default_order: Vec<Part>;
    let order = if order.is_empty() {
        default_order = (0..reasoning.len())
            .map(Part::Reasoning)
            .chain(std::iter::once(Part::Text(0..content.len())))
            .chain((0..tool_calls.len()).map(Part::Call))
            .collect();
        &default_order
    } else {
        order
    };
    let mut blocks: Vec<Value> = Vec::with_capacity(order.len());
    let mut last_text_end = None;
    for part in order {
        match part {
            Part::Reasoning(i) => {
                if thinking.is_some() {
                    blocks.extend(reasoning.get(*i).and_then(thinking_block));
                }
            }
            Part::Text(range) => {
                // Pieces of text one after the other are one block (their ranges meet).
                let Some(text) = content.get(range.clone()) else {
                    continue;
                };
                match blocks.last_mut() {
                    Some(last) if last["type"] == "text" && last_text_end == Some(range.start) => {
                        if let Some(Value::String(joined)) = last.get_mut("text") {
                            joined.push_str(text);
                        }
                    }
                    _ => blocks.push(json!({"type": "text", "text": text})),
                }
                last_text_end = Some(range.end);
            }
            Part::Call(i) => {
                let Some(call) = tool_calls.get(*i) else {
                    continue;
                };
                let input: Value = serde_json::from_str(&call.arguments)
                    .ok()
                    .filter(Value::is_object)
                    .unwrap_or_else(|| json!({}));
                blocks.push(
                    json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input}),
                );
            }
        }
        if !matches!(part, Part::Text(_)) {
            last_text_end = None;
        }
    }
    // The API refuses a text block of nothing or of whitespace only (the empty block that
    // keeps two steps apart, for one).
    blocks.retain(|b| {
        b["type"] != "text" || b["text"].as_str().is_some_and(|t| !t.trim().is_empty())
    });
    blocks
}

/// The request body; `thinking` is the thinking budget when thinking is on. Then the
/// thinking blocks of earlier turns go back as received (the API needs those of the
/// current tool-use loop and ignores older ones), `max_tokens` is the budget plus the
/// answer's cap (the budget counts in it), and no temperature is sent (thinking does not
/// allow one).
pub(super) fn request_body(
    request: &ProviderRequest,
    provider: &str,
    default_max_tokens: u32,
    thinking: Option<u32>,
) -> Result<Value, ProviderError> {
    let mut messages: Vec<Value> = Vec::with_capacity(request.messages.len());
    for m in &request.messages {
        match m {
            ChatMessage::User {
                content,
                images,
                documents,
            } => {
                let mut blocks = Vec::with_capacity(images.len() + documents.len() + 1);
                for image in images {
                    blocks.push(json!({
                        "type": "image",
                        "source": {"type": "base64", "media_type": image.mime_type, "data": image.base64(provider)?}
                    }));
                }
                for document in documents {
                    blocks.push(json!({
                        "type": "document",
                        "source": {"type": "base64", "media_type": document.mime_type, "data": document.base64(provider)?},
                        "title": document.name
                    }));
                }
                if !content.is_empty() {
                    blocks.push(json!({"type": "text", "text": content}));
                }
                push(&mut messages, "user", blocks);
            }
            ChatMessage::Assistant {
                content,
                tool_calls,
                reasoning,
                order,
            } => {
                let blocks = assistant_blocks(content, tool_calls, reasoning, order, thinking);
                push(&mut messages, "assistant", blocks);
            }
            ChatMessage::Tool {
                tool_call_id,
                content,
                is_error,
                ..
            } => {
                let mut block =
                    json!({"type": "tool_result", "tool_use_id": tool_call_id, "content": content});
                if *is_error {
                    block["is_error"] = json!(true);
                }
                push(&mut messages, "user", vec![block]);
            }
        }
    }
    trim_prefill(&mut messages);
    let answer_cap = request.max_output_tokens.unwrap_or(default_max_tokens);
    let mut body = json!({
        "model": request.model,
        "max_tokens": answer_cap.saturating_add(thinking.unwrap_or(0)),
        "stream": true,
        "messages": messages,
    });
    if let Some(system) = &request.system {
        body["system"] = json!(system);
    }
    match (thinking, request.temperature) {
        (Some(budget), _) => {
            body["thinking"] = json!({"type": "enabled", "budget_tokens": budget});
        }
        (None, Some(t)) => body["temperature"] = json!(t),
        (None, None) => {}
    }
    if !request.tools.is_empty() {
        body["tools"] = Value::Array(
            request
                .tools
                .iter()
                .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
                .collect(),
        );
    }
    // Structured outputs in the API's generally available form (no beta header).
    if let Some(output) = &request.options.output {
        body["output_config"] = json!({"format": {"type": "json_schema", "schema": output.schema}});
    }
    Ok(body)
}

/// Anthropic's named events.
#[derive(Debug, Default)]
pub(super) struct EventParser {
    provider: String,
    input_tokens: u64,
    /// Tool calls whose `content_block_start` carried their input whole (some gateways send
    /// it there and no `input_json_delta`), by block index, as JSON text: passed on as the
    /// call's arguments when the block stops, unless pieces came after all.
    whole_inputs: Vec<(usize, String)>,
    /// A `stop_reason` came.
    stopped: bool,
    done: bool,
}

impl EventParser {
    pub(super) fn new(provider: &str) -> Self {
        EventParser {
            provider: provider.to_owned(),
            ..Self::default()
        }
    }
}

fn index_of(value: &Value) -> usize {
    value
        .get("index")
        .and_then(Value::as_u64)
        .and_then(|i| usize::try_from(i).ok())
        .unwrap_or(0)
}

/// The Messages API's `stop_reason`s.
fn stop_reason(reason: &str) -> FinishReason {
    match reason {
        "end_turn" | "stop_sequence" => FinishReason::Stop,
        "max_tokens" | "model_context_window_exceeded" => FinishReason::Length,
        "tool_use" => FinishReason::ToolCalls,
        "pause_turn" => FinishReason::Paused,
        "refusal" => {
            FinishReason::Refused("the model declined to answer (stop_reason refusal)".into())
        }
        other => FinishReason::Other(other.to_owned()),
    }
}

impl EventParser {
    /// A content block starts: a tool call (which must have a name), or text, thinking or
    /// redacted thinking given whole.
    fn block_start(
        &mut self,
        value: &Value,
        data: &str,
    ) -> Result<Vec<ProviderEvent>, ProviderError> {
        let block = &value["content_block"];
        let mut events = Vec::new();
        if block["type"] == "tool_use" {
            let id = block["id"].as_str().unwrap_or_default().to_owned();
            let name = block["name"].as_str().unwrap_or_default().to_owned();
            if name.is_empty() {
                return Err(ProviderError::Malformed {
                    provider: self.provider.clone(),
                    raw: format!("a tool_use block without a name: {}", excerpt(data, 2048)),
                });
            }
            events.push(ProviderEvent::ToolCallStart {
                index: index_of(value),
                id: if id.is_empty() {
                    format!("call_{}", uuid::Uuid::new_v4().simple())
                } else {
                    id
                },
                name,
            });
            if let Some(input) = block["input"].as_object().filter(|i| !i.is_empty()) {
                self.whole_inputs
                    .push((index_of(value), Value::Object(input.clone()).to_string()));
            }
        } else if block["type"] == "text"
            && let Some(text) = block["text"].as_str().filter(|t| !t.is_empty())
        {
            events.push(ProviderEvent::TextDelta(text.to_owned()));
        } else if block["type"] == "thinking" {
            let field = |key: &str| block[key].as_str().filter(|t| !t.is_empty());
            if let Some(text) = field("thinking") {
                events.push(ProviderEvent::ReasoningDelta(text.to_owned()));
            }
            if let Some(signature) = field("signature") {
                events.push(ProviderEvent::ReasoningSignature(signature.to_owned()));
            }
        } else if block["type"] == "redacted_thinking"
            && let Some(data) = block["data"].as_str()
        {
            events.push(ProviderEvent::RedactedReasoning(data.to_owned()));
        }
        Ok(events)
    }

    /// The whole inputs not continued by pieces, of the block at `index` (or of every
    /// block), as the calls' arguments.
    fn whole_inputs_of(&mut self, index: Option<usize>) -> Vec<ProviderEvent> {
        let (taken, kept) = std::mem::take(&mut self.whole_inputs)
            .into_iter()
            .partition(|(i, _)| index.is_none_or(|index| *i == index));
        self.whole_inputs = kept;
        taken
            .into_iter()
            .map(|(index, delta)| ProviderEvent::ToolCallArgsDelta { index, delta })
            .collect::<Vec<_>>()
    }
}

/// A piece of a content block: text, thinking, a tool call's arguments or a signature.
fn block_delta(value: &Value) -> Option<ProviderEvent> {
    let delta = &value["delta"];
    let text = |key: &str| {
        delta[key]
            .as_str()
            .filter(|t| !t.is_empty())
            .map(str::to_owned)
    };
    match delta["type"].as_str() {
        Some("text_delta") => text("text").map(ProviderEvent::TextDelta),
        Some("thinking_delta") => text("thinking").map(ProviderEvent::ReasoningDelta),
        Some("input_json_delta") => {
            text("partial_json").map(|delta| ProviderEvent::ToolCallArgsDelta {
                index: index_of(value),
                delta,
            })
        }
        Some("signature_delta") => text("signature").map(ProviderEvent::ReasoningSignature),
        _ => None, // future kinds
    }
}

impl SseParser for EventParser {
    fn event(
        &mut self,
        name: Option<&str>,
        data: &str,
    ) -> Result<Vec<ProviderEvent>, ProviderError> {
        let value: Value = serde_json::from_str(data).map_err(|_| ProviderError::Malformed {
            provider: self.provider.clone(),
            raw: excerpt(data, 2048),
        })?;
        // The event name is also in the data's `type`; either will do.
        let kind = name
            .map(str::to_owned)
            .or_else(|| value["type"].as_str().map(str::to_owned));
        let mut events = Vec::new();
        match kind.as_deref() {
            Some("message_start") => {
                self.input_tokens = value
                    .pointer("/message/usage/input_tokens")
                    .and_then(Value::as_u64)
                    .unwrap_or(0);
            }
            Some("content_block_start") => events = self.block_start(&value, data)?,
            Some("content_block_delta") => {
                if value.pointer("/delta/type").and_then(Value::as_str) == Some("input_json_delta")
                {
                    // The pieces are the input: a whole one given at the start is not used.
                    let index = index_of(&value);
                    self.whole_inputs.retain(|(i, _)| *i != index);
                }
                events.extend(block_delta(&value));
            }
            Some("content_block_stop") => events = self.whole_inputs_of(Some(index_of(&value))),
            Some("message_delta") => {
                events = self.whole_inputs_of(None);
                if self.input_tokens == 0 {
                    // Some gateways count the input only here.
                    self.input_tokens = value
                        .pointer("/usage/input_tokens")
                        .and_then(Value::as_u64)
                        .unwrap_or(0);
                }
                if let Some(reason) = value.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stopped = true;
                    events.push(ProviderEvent::Finish(stop_reason(reason)));
                }
                if let Some(output) = value
                    .pointer("/usage/output_tokens")
                    .and_then(Value::as_u64)
                {
                    events.push(ProviderEvent::Usage(Usage {
                        input_tokens: self.input_tokens,
                        output_tokens: output,
                    }));
                }
            }
            Some("message_stop") => self.done = true,
            Some("error") => {
                return Err(ProviderError::InStream {
                    provider: self.provider.clone(),
                    raw: excerpt(data, 8192),
                });
            }
            _ => {} // ping, future events
        }
        Ok(events)
    }

    fn finished(&self) -> bool {
        self.done
    }

    fn stopped(&self) -> bool {
        self.stopped
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::{ImageRef, ReasoningPart, ToolCallRequest, ToolSpec};

    fn request(messages: Vec<ChatMessage>) -> ProviderRequest {
        ProviderRequest {
            model: "claude-x".into(),
            system: Some("be brief".into()),
            messages,
            tools: vec![ToolSpec {
                name: "bash".into(),
                description: "run".into(),
                parameters: json!({"type": "object"}),
            }],
            max_output_tokens: None,
            temperature: Some(0.2),
            options: Default::default(),
        }
    }

    #[test]
    fn bodies_alternate_roles_and_pair_results() {
        let dir = tempfile::tempdir().unwrap();
        let image = dir.path().join("a.png");
        std::fs::write(&image, b"png!").unwrap();
        let body = request_body(
            &request(vec![
                ChatMessage::User {
                    content: "look".into(),
                    images: vec![ImageRef {
                        path: image,
                        mime_type: "image/png".into(),
                    }],
                    documents: vec![],
                },
                ChatMessage::Assistant {
                    content: "Running.".into(),
                    tool_calls: vec![
                        ToolCallRequest {
                            id: "t1".into(),
                            name: "bash".into(),
                            arguments: r#"{"command":"ls"}"#.into(),
                            signature: None,
                        },
                        ToolCallRequest {
                            id: "t2".into(),
                            name: "bash".into(),
                            arguments: "not json".into(),
                            signature: None,
                        },
                    ],
                    reasoning: vec![],
                    order: Vec::new(),
                },
                ChatMessage::Tool {
                    is_error: false,
                    tool_call_id: "t1".into(),
                    name: "bash".into(),
                    content: "a.png".into(),
                },
                ChatMessage::Tool {
                    is_error: false,
                    tool_call_id: "t2".into(),
                    name: "bash".into(),
                    content: "error".into(),
                },
                ChatMessage::User {
                    content: "and now?".into(),
                    images: vec![],
                    documents: Vec::new(),
                },
            ]),
            "anthropic",
            4096,
            None,
        )
        .unwrap();
        assert_eq!(
            body,
            json!({
                "model": "claude-x",
                "max_tokens": 4096,
                "stream": true,
                "system": "be brief",
                "temperature": 0.2,
                "tools": [{"name": "bash", "description": "run", "input_schema": {"type": "object"}}],
                "messages": [
                    {"role": "user", "content": [
                        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "cG5nIQ=="}},
                        {"type": "text", "text": "look"}
                    ]},
                    {"role": "assistant", "content": [
                        {"type": "text", "text": "Running."},
                        {"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": "ls"}},
                        {"type": "tool_use", "id": "t2", "name": "bash", "input": {}}
                    ]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "t1", "content": "a.png"},
                        {"type": "tool_result", "tool_use_id": "t2", "content": "error"},
                        {"type": "text", "text": "and now?"}
                    ]}
                ]
            })
        );
    }

    fn feed(events: &[(&str, Value)]) -> (Vec<ProviderEvent>, bool) {
        let mut parser = EventParser::new("anthropic");
        let mut out = Vec::new();
        for (name, data) in events {
            assert!(!parser.finished());
            out.extend(parser.event(Some(name), &data.to_string()).unwrap());
        }
        (out, parser.finished())
    }

    #[test]
    fn a_prefill_never_ends_in_whitespace() {
        let assistant = |text: &str| ChatMessage::Assistant {
            content: text.into(),
            tool_calls: Vec::new(),
            reasoning: Vec::new(),
            order: Vec::new(),
        };
        let user = ChatMessage::User {
            content: "write".into(),
            images: Vec::new(),
            documents: Vec::new(),
        };
        for (partial, last) in [
            (
                "The first part ends here \n\n",
                Some(json!("The first part ends here")),
            ),
            ("  \n", None),
        ] {
            let body = request_body(
                &request(vec![user.clone(), assistant(partial)]),
                "p",
                1024,
                None,
            )
            .unwrap();
            let messages = body["messages"].as_array().unwrap();
            match last {
                Some(text) => {
                    assert_eq!(messages.len(), 2);
                    assert_eq!(messages[1]["content"][0]["text"], text);
                }
                // Nothing left of the prefill: the request ends with the user's message.
                None => assert_eq!(messages.len(), 1, "{messages:?}"),
            }
        }
        // Whitespace inside an earlier assistant message is the history's, kept as it is.
        let body = request_body(
            &request(vec![user.clone(), assistant("kept \n"), user.clone()]),
            "p",
            1024,
            None,
        )
        .unwrap();
        assert_eq!(body["messages"][1]["content"][0]["text"], "kept \n");
    }

    #[test]
    fn a_tool_input_given_whole_at_the_start_is_the_calls_arguments() {
        let start = |index: u64, id: &str, input: Value| {
            (
                "content_block_start",
                json!({"type": "content_block_start", "index": index,
                    "content_block": {"type": "tool_use", "id": id, "name": "bash", "input": input}}),
            )
        };
        let stop = |index: u64| {
            (
                "content_block_stop",
                json!({"type": "content_block_stop", "index": index}),
            )
        };
        let (events, _) = feed(&[
            (
                "message_start",
                json!({"type": "message_start", "message": {"usage": {}}}),
            ),
            // A gateway's: the input whole at the start, no pieces.
            start(0, "t1", json!({"command": "ls"})),
            stop(0),
            // Whole at the start and pieces after all: the pieces win.
            start(1, "t2", json!({"command": "stale"})),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 1,
                    "delta": {"type": "input_json_delta", "partial_json": "{\"command\": \"pwd\"}"}}),
            ),
            stop(1),
            // No stop for the block: the message's end passes it on.
            start(2, "t3", json!({"command": "id"})),
            (
                "message_delta",
                json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"},
                    "usage": {"input_tokens": 30, "output_tokens": 9}}),
            ),
        ]);
        let args: Vec<(usize, String)> = events
            .iter()
            .filter_map(|e| match e {
                ProviderEvent::ToolCallArgsDelta { index, delta } => Some((*index, delta.clone())),
                _ => None,
            })
            .collect();
        assert_eq!(
            args,
            [
                (0, r#"{"command":"ls"}"#.to_owned()),
                (1, r#"{"command": "pwd"}"#.to_owned()),
                (2, r#"{"command":"id"}"#.to_owned()),
            ]
        );
        // The input counted only in `message_delta` (some gateways) is kept.
        assert_eq!(
            events.last(),
            Some(&ProviderEvent::Usage(Usage {
                input_tokens: 30,
                output_tokens: 9
            }))
        );
    }

    #[test]
    fn a_recorded_stream_becomes_events() {
        let (events, finished) = feed(&[
            (
                "message_start",
                json!({"type": "message_start", "message": {"usage": {"input_tokens": 25, "output_tokens": 1}}}),
            ),
            (
                "content_block_start",
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}}),
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "hmm"}}),
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "x"}}),
            ),
            (
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 0}),
            ),
            (
                "content_block_start",
                json!({"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}}),
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Let me check."}}),
            ),
            ("ping", json!({"type": "ping"})),
            (
                "content_block_start",
                json!({"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "toolu_a", "name": "read_file", "input": {}}}),
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "{\"pa"}}),
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "th\": \"a"}}),
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": ".txt\"}"}}),
            ),
            (
                "content_block_start",
                json!({"type": "content_block_start", "index": 3, "content_block": {"type": "tool_use", "id": "toolu_b", "name": "bash", "input": {}}}),
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 3, "delta": {"type": "input_json_delta", "partial_json": "{}"}}),
            ),
            (
                "message_delta",
                json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 42}}),
            ),
            ("message_stop", json!({"type": "message_stop"})),
        ]);
        assert!(finished);
        assert_eq!(
            events,
            vec![
                ProviderEvent::ReasoningDelta("hmm".into()),
                ProviderEvent::ReasoningSignature("x".into()),
                ProviderEvent::TextDelta("Let me check.".into()),
                ProviderEvent::ToolCallStart {
                    index: 2,
                    id: "toolu_a".into(),
                    name: "read_file".into()
                },
                ProviderEvent::ToolCallArgsDelta {
                    index: 2,
                    delta: "{\"pa".into()
                },
                ProviderEvent::ToolCallArgsDelta {
                    index: 2,
                    delta: "th\": \"a".into()
                },
                ProviderEvent::ToolCallArgsDelta {
                    index: 2,
                    delta: ".txt\"}".into()
                },
                ProviderEvent::ToolCallStart {
                    index: 3,
                    id: "toolu_b".into(),
                    name: "bash".into()
                },
                ProviderEvent::ToolCallArgsDelta {
                    index: 3,
                    delta: "{}".into()
                },
                ProviderEvent::Finish(FinishReason::ToolCalls),
                ProviderEvent::Usage(Usage {
                    input_tokens: 25,
                    output_tokens: 42
                }),
            ]
        );
    }

    #[test]
    fn thinking_and_redacted_thinking_keep_what_goes_back() {
        let (events, _) = feed(&[
            (
                "content_block_start",
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Let me "}}),
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "see."}}),
            ),
            (
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "EqQBCkgIARABGAIiQL=="}}),
            ),
            (
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 0}),
            ),
            (
                "content_block_start",
                json!({"type": "content_block_start", "index": 1, "content_block": {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"}}),
            ),
            (
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 1}),
            ),
        ]);
        assert_eq!(
            events,
            vec![
                ProviderEvent::ReasoningDelta("Let me ".into()),
                ProviderEvent::ReasoningDelta("see.".into()),
                ProviderEvent::ReasoningSignature("EqQBCkgIARABGAIiQL==".into()),
                ProviderEvent::RedactedReasoning("EmwKAhgBEgy3va3pzix/LafPsn4a".into()),
            ]
        );
    }

    fn thinking_turn(signed: bool) -> Vec<ChatMessage> {
        let reasoning = if signed {
            vec![
                ReasoningPart {
                    text: "Let me see.".into(),
                    signature: Some("sig-1".into()),
                    redacted: None,
                    details: None,
                },
                ReasoningPart {
                    text: String::new(),
                    signature: None,
                    redacted: Some("enc-1".into()),
                    details: None,
                },
                // from another provider: no signature, cannot go back
                ReasoningPart {
                    text: "unsigned".into(),
                    signature: None,
                    redacted: None,
                    details: None,
                },
            ]
        } else {
            vec![]
        };
        vec![
            ChatMessage::User {
                content: "list".into(),
                images: vec![],
                documents: Vec::new(),
            },
            ChatMessage::Assistant {
                content: String::new(),
                tool_calls: vec![ToolCallRequest {
                    id: "t1".into(),
                    name: "bash".into(),
                    arguments: "{}".into(),
                    signature: None,
                }],
                reasoning,
                order: Vec::new(),
            },
            ChatMessage::Tool {
                is_error: false,
                tool_call_id: "t1".into(),
                name: "bash".into(),
                content: "a.txt".into(),
            },
        ]
    }

    #[test]
    fn thinking_models_get_thinking_and_their_blocks_back() {
        let format = AnthropicFormat {
            default_max_tokens: 8192,
            thinking: BTreeMap::from([("claude-x".to_owned(), 4000)]),
        };
        let body = format
            .body(&request(thinking_turn(true)), "anthropic")
            .unwrap();
        assert_eq!(
            body["thinking"],
            json!({"type": "enabled", "budget_tokens": 4000})
        );
        assert_eq!(
            body["max_tokens"], 12_192,
            "the budget comes on top of the answer"
        );
        assert!(body.get("temperature").is_none(), "{body}");
        assert_eq!(
            body["messages"][1]["content"],
            json!([
                {"type": "thinking", "thinking": "Let me see.", "signature": "sig-1"},
                {"type": "redacted_thinking", "data": "enc-1"},
                {"type": "tool_use", "id": "t1", "name": "bash", "input": {}}
            ])
        );

        // A model without a budget: no thinking, no thinking blocks, temperature as set.
        let mut other = request(thinking_turn(true));
        other.model = "claude-y".into();
        let body = format.body(&other, "anthropic").unwrap();
        assert!(body.get("thinking").is_none());
        assert_eq!(body["max_tokens"], 8192);
        assert_eq!(body["temperature"], 0.2);
        assert_eq!(body["messages"][1]["content"][0]["type"], "tool_use");

        // Thinking switched on in the middle of a tool-use loop: this request goes without.
        let body = format
            .body(&request(thinking_turn(false)), "anthropic")
            .unwrap();
        assert!(body.get("thinking").is_none(), "{body}");
        assert_eq!(body["max_tokens"], 8192);
    }

    #[test]
    fn an_assistant_turn_goes_back_in_the_order_it_came() {
        let signed = |text: &str| ReasoningPart {
            text: text.into(),
            signature: Some(format!("sig-{text}")),
            ..Default::default()
        };
        let call = |id: &str| ToolCallRequest {
            id: id.into(),
            name: "bash".into(),
            arguments: "{}".into(),
            signature: None,
        };
        let assistant = ChatMessage::Assistant {
            // Whitespace alone after the first call (the API refuses such a block); "Now "
            // and "b." written one after the other are one block.
            content: "Reading a.\n\nNow b.".into(),
            tool_calls: vec![call("t1"), call("t2")],
            reasoning: vec![signed("one"), signed("two")],
            order: vec![
                Part::Reasoning(0),
                Part::Text(0..10),
                Part::Call(0),
                Part::Text(10..12),
                Part::Reasoning(1),
                Part::Text(12..16),
                Part::Text(16..18),
                Part::Call(1),
            ],
        };
        let user = ChatMessage::User {
            content: "go".into(),
            images: vec![],
            documents: Vec::new(),
        };
        let thinking = request_body(
            &request(vec![user.clone(), assistant.clone()]),
            "p",
            1024,
            Some(2048),
        )
        .unwrap();
        assert_eq!(
            thinking["messages"][1]["content"],
            json!([
                {"type": "thinking", "thinking": "one", "signature": "sig-one"},
                {"type": "text", "text": "Reading a."},
                {"type": "tool_use", "id": "t1", "name": "bash", "input": {}},
                {"type": "thinking", "thinking": "two", "signature": "sig-two"},
                {"type": "text", "text": "Now b."},
                {"type": "tool_use", "id": "t2", "name": "bash", "input": {}}
            ])
        );
        // Without thinking: the same order, no thinking blocks.
        let plain = request_body(&request(vec![user, assistant]), "p", 1024, None).unwrap();
        let kinds: Vec<&str> = plain["messages"][1]["content"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b["type"].as_str().unwrap())
            .collect();
        assert_eq!(kinds, ["text", "tool_use", "text", "tool_use"]);
    }

    #[test]
    fn errors_keep_the_raw_text() {
        let mut parser = EventParser::new("anthropic");
        let err = parser
            .event(
                Some("error"),
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            )
            .unwrap_err();
        assert_eq!(err.kind(), agent_proto::run_error::PROVIDER_STREAM_ERROR);
        assert!(err.to_string().contains("Overloaded"));
        let err = parser
            .event(Some("content_block_delta"), "{oops")
            .unwrap_err();
        assert!(err.to_string().contains("{oops"));
    }

    #[test]
    fn stop_reasons() {
        let cases: &[(&str, FinishReason)] = &[
            ("end_turn", FinishReason::Stop),
            ("stop_sequence", FinishReason::Stop),
            ("max_tokens", FinishReason::Length),
            ("tool_use", FinishReason::ToolCalls),
            (
                "refusal",
                FinishReason::Refused("the model declined to answer (stop_reason refusal)".into()),
            ),
            ("pause_turn", FinishReason::Paused),
            (
                "server_busy_someday",
                FinishReason::Other("server_busy_someday".into()),
            ),
        ];
        for (reason, expected) in cases {
            let mut parser = EventParser::new("anthropic");
            let data =
                json!({"type": "message_delta", "delta": {"stop_reason": reason}}).to_string();
            let events = parser.event(Some("message_delta"), &data).unwrap();
            assert_eq!(
                events,
                vec![ProviderEvent::Finish(expected.clone())],
                "{reason}"
            );
        }
    }
}
