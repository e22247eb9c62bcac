//! The OpenAI chat-completions wire format (streaming), spoken by OpenAI and most
//! compatible services (DeepSeek, OpenRouter, Groq, Ollama, vLLM, LM Studio, ...).

use agent_proto::Usage;
use serde_json::Value;

use super::http::{SseParser, WireFormat};
use super::{FinishReason, ProviderError, ProviderEvent, ProviderRequest, UsageTotals, excerpt};
use crate::config::Secret;

mod body;
mod fast;

/// Chat completions: `POST {base}/chat/completions`, key as a bearer token.
#[derive(Debug, Default)]
pub(super) struct OpenAiFormat {
    /// Send the model's reasoning back as `reasoning_content` on the assistant messages of
    /// turns with tool calls (DeepSeek's thinking mode refuses a request without it).
    pub replay_reasoning: bool,
}

impl WireFormat for OpenAiFormat {
    fn url(&self, base_url: &str, _model: &str) -> String {
        format!("{}/chat/completions", base_url.trim_end_matches('/'))
    }

    fn authorize(
        &self,
        request: reqwest::RequestBuilder,
        key: Option<&Secret>,
    ) -> reqwest::RequestBuilder {
        match key {
            Some(key) => request.bearer_auth(key.expose()),
            None => request,
        }
    }

    fn body(&self, request: &ProviderRequest, provider: &str) -> Result<Value, ProviderError> {
        parsed(self.body_bytes(request, provider)?, provider)
    }

    fn body_bytes(
        &self,
        request: &ProviderRequest,
        provider: &str,
    ) -> Result<Vec<u8>, ProviderError> {
        body::request_bytes(request, provider, self.replay_reasoning)
    }

    fn parser(&self, provider: &str) -> Box<dyn SseParser> {
        Box::new(ChunkParser {
            provider: provider.to_owned(),
            state: ChunkState::default(),
            done: false,
        })
    }
}

/// The request body for a streaming chat completion, as a value (previews and tests; the
/// call itself sends [`body::request_bytes`]).
#[cfg(test)]
pub(super) fn request_body(
    request: &ProviderRequest,
    provider: &str,
) -> Result<Value, ProviderError> {
    parsed(body::request_bytes(request, provider, false)?, provider)
}

/// The value of a body this module wrote.
fn parsed(bytes: Vec<u8>, provider: &str) -> Result<Value, ProviderError> {
    serde_json::from_slice(&bytes).map_err(|e| ProviderError::BadRequest {
        provider: provider.to_owned(),
        detail: format!("cannot read back the request body: {e}"),
    })
}

/// What the parser remembers between chunks: the tool calls started, the refusal text so
/// far, and whether a finish reason came.
#[derive(Debug, Default)]
pub(super) struct ChunkState {
    /// Calls started, in order (their position is the `index` of their events): the key
    /// the stream filed them under (its `index`, else the position in the chunk's list)
    /// and their id.
    calls: Vec<(usize, String)>,
    refusal: String,
    stopped: bool,
    /// Some servers (vLLM's continuous usage, Gemini's OpenAI endpoint) put the running
    /// totals on every chunk, others one total at the end: only what a chunk adds counts.
    usage: UsageTotals,
    /// OpenRouter's `reasoning_details` so far, merged per `index` ([`merge_details`]).
    details: Vec<serde_json::Map<String, Value>>,
}

impl ChunkState {
    /// The call a `tool_calls` delta continues, if any. A delta with an id belongs to the
    /// call with that id, and an id not seen yet starts a new call, even at an `index`
    /// another call used (some servers put every parallel call at `index: 0`, or send no
    /// index at all). A delta without an id continues the latest call under its key.
    fn call_for(&self, key: usize, id: Option<&str>) -> Option<usize> {
        match id {
            Some(id) => self.calls.iter().position(|(_, known)| known == id),
            None => self.latest_at(key),
        }
    }

    /// The latest call filed under `key`.
    fn latest_at(&self, key: usize) -> Option<usize> {
        self.calls.iter().rposition(|(k, _)| *k == key)
    }
}

/// The parts of a `delta.content` given as a list (Mistral's Magistral streams its
/// thinking so: `[{"type": "thinking", "thinking": [{"type": "text", "text": ..}]}]`, then
/// `[{"type": "text", "text": ..}]`): text parts are text, thinking parts reasoning; a part
/// of another kind carries nothing shown.
fn content_parts(parts: &[Value], events: &mut Vec<ProviderEvent>) {
    for part in parts {
        let text_of = |value: &Value| -> String {
            match value {
                Value::String(text) => text.clone(),
                Value::Array(pieces) => pieces
                    .iter()
                    .filter_map(|p| p.get("text").and_then(Value::as_str))
                    .collect(),
                _ => String::new(),
            }
        };
        let (text, reasoning) = match part.get("type").and_then(Value::as_str) {
            Some("text") => (text_of(&part["text"]), false),
            Some("thinking") => (text_of(&part["thinking"]), true),
            _ => continue,
        };
        if text.is_empty() {
            continue;
        }
        events.push(if reasoning {
            ProviderEvent::ReasoningDelta(text)
        } else {
            ProviderEvent::TextDelta(text)
        });
    }
}

/// Merges the `reasoning_details` pieces of one chunk into those so far, as OpenRouter
/// streams them: a piece with the `index` of one before continues it (its `text` and
/// `summary` appended, any other field taken as it comes, an empty or null value never
/// replacing one already there); a piece with a new index, or none, is a detail of its own.
fn merge_details(details: &mut Vec<serde_json::Map<String, Value>>, pieces: &[Value]) {
    for piece in pieces {
        let Some(piece) = piece.as_object() else {
            continue;
        };
        let index = piece.get("index").and_then(Value::as_u64);
        let known = index.and_then(|index| {
            details
                .iter()
                .position(|d| d.get("index").and_then(Value::as_u64) == Some(index))
        });
        let Some(known) = known else {
            details.push(piece.clone());
            continue;
        };
        let detail = &mut details[known];
        for (key, value) in piece {
            let appended = matches!(key.as_str(), "text" | "summary");
            match (detail.get_mut(key), value) {
                (Some(Value::String(old)), Value::String(more)) if appended => {
                    old.push_str(more);
                }
                (Some(old), Value::Null) if !old.is_null() => {}
                (Some(old), Value::String(new)) if new.is_empty() && !old.is_null() => {}
                _ => {
                    detail.insert(key.clone(), value.clone());
                }
            }
        }
    }
}

/// The chat-completions `finish_reason`s; a refusal streamed before wins over any of them.
fn finish_reason(reason: &str, refusal: &str) -> FinishReason {
    if !refusal.is_empty() {
        return FinishReason::Refused(refusal.to_owned());
    }
    match reason {
        "stop" => FinishReason::Stop,
        "length" => FinishReason::Length,
        "tool_calls" | "function_call" => FinishReason::ToolCalls,
        "content_filter" => FinishReason::Refused(
            "the provider's content filter stopped the answer (finish_reason content_filter)"
                .into(),
        ),
        other => FinishReason::Other(other.to_owned()),
    }
}

/// Events carried by one `data:` payload of the stream: a plain text chunk (nearly all of
/// them) on the fast path, anything else read as a JSON value.
pub(super) fn parse_chunk(
    provider: &str,
    data: &str,
    state: &mut ChunkState,
) -> Result<Vec<ProviderEvent>, ProviderError> {
    match fast::plain_text(data) {
        Some(events) => Ok(events),
        None => parse_any_chunk(provider, data, state),
    }
}

/// Any chunk, read as a JSON value (see [`parse_chunk`]).
fn parse_any_chunk(
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
    // Only one answer is asked for: the choice with index 0 (an absent index is 0).
    let choice = value
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|choices| {
            choices
                .iter()
                .find(|c| c.get("index").and_then(Value::as_u64).unwrap_or(0) == 0)
        });
    if let Some(choice) = choice {
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
        match delta.and_then(|d| d.get("content")) {
            Some(Value::String(text)) if !text.is_empty() => {
                events.push(ProviderEvent::TextDelta(text.clone()));
            }
            Some(Value::Array(parts)) => content_parts(parts, &mut events),
            _ => {}
        }
        // A refusal is shown like text and ends the answer as refused.
        if let Some(text) = delta.and_then(|d| d.get("refusal")).and_then(Value::as_str)
            && !text.is_empty()
        {
            state.refusal.push_str(text);
            events.push(ProviderEvent::TextDelta(text.to_owned()));
        }
        if let Some(pieces) = delta
            .and_then(|d| d.get("reasoning_details"))
            .and_then(Value::as_array)
        {
            merge_details(&mut state.details, pieces);
        }
        let calls = delta
            .and_then(|d| d.get("tool_calls"))
            .and_then(Value::as_array);
        for (position, call) in calls.into_iter().flatten().enumerate() {
            let key = call
                .get("index")
                .and_then(Value::as_u64)
                .and_then(|i| usize::try_from(i).ok())
                .unwrap_or(position);
            let id = call
                .get("id")
                .and_then(Value::as_str)
                .filter(|id| !id.is_empty());
            let function = call.get("function");
            let name = function
                .and_then(|f| f.get("name"))
                .and_then(Value::as_str)
                .filter(|n| !n.is_empty());
            // Some servers give a call a new id after its first chunk: a piece with an
            // unknown id and no name continues the latest call under its key.
            let renamed = || name.is_none().then(|| state.latest_at(key)).flatten();
            let index = match state.call_for(key, id).or_else(renamed) {
                Some(index) => index,
                None => {
                    let Some(name) = name else {
                        return Err(ProviderError::Malformed {
                            provider: provider.to_owned(),
                            raw: format!("a tool call without a name: {}", excerpt(data, 2048)),
                        });
                    };
                    let id = id.map_or_else(
                        || format!("call_{}", uuid::Uuid::new_v4().simple()),
                        str::to_owned,
                    );
                    state.calls.push((key, id.clone()));
                    let index = state.calls.len() - 1;
                    events.push(ProviderEvent::ToolCallStart {
                        index,
                        id,
                        name: name.to_owned(),
                    });
                    index
                }
            };
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
            // vLLM and OpenRouter end an answer that failed while generating so: an error,
            // not a complete answer, whatever text came before.
            if reason == "error" {
                return Err(ProviderError::InStream {
                    provider: provider.to_owned(),
                    raw: format!("finish_reason \"error\": {}", excerpt(data, 8192)),
                });
            }
            state.stopped = true;
            if !state.details.is_empty() {
                let details = std::mem::take(&mut state.details);
                events.push(ProviderEvent::ReasoningDetails(Value::Array(
                    details.into_iter().map(Value::Object).collect(),
                )));
            }
            events.push(ProviderEvent::Finish(finish_reason(reason, &state.refusal)));
        }
    }
    if let Some(usage) = value.get("usage").filter(|u| u.is_object()) {
        let count = |k: &str| usage.get(k).and_then(Value::as_u64).unwrap_or(0);
        let totals = Usage {
            input_tokens: count("prompt_tokens"),
            output_tokens: count("completion_tokens"),
        };
        events.extend(state.usage.added(totals).map(ProviderEvent::Usage));
    }
    Ok(events)
}

/// The chat-completions stream: `data:` chunks until `[DONE]`.
struct ChunkParser {
    provider: String,
    state: ChunkState,
    done: bool,
}

impl SseParser for ChunkParser {
    fn event(
        &mut self,
        _name: Option<&str>,
        data: &str,
    ) -> Result<Vec<ProviderEvent>, ProviderError> {
        if data.trim() == "[DONE]" {
            self.done = true;
            return Ok(Vec::new());
        }
        parse_chunk(&self.provider, data, &mut self.state)
    }

    fn finished(&self) -> bool {
        self.done
    }

    fn stopped(&self) -> bool {
        self.state.stopped
    }
}

#[cfg(test)]
mod tests;
