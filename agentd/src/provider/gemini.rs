//! Google Gemini (`models/{model}:streamGenerateContent?alt=sse`, key in `x-goog-api-key`,
//! never in the URL).
//!
//! Maps the request to `contents` (roles `user` and `model`, strictly alternating),
//! `systemInstruction`, `functionDeclarations` (with the schema cleaned of keywords Gemini
//! rejects) and `functionCall`/`functionResponse` parts; and each streamed
//! `GenerateContentResponse` back to provider events (the candidate with `index` 0). A
//! `functionCall` part's `thoughtSignature` is kept with the call and sent back on the same
//! part; signatures on text parts are not kept (the API does not require them). Gemini has
//! no end marker: the chunk with a `finishReason` ends the answer, and a stream without one
//! is truncated.
//! Usage is cumulative on every chunk, so it is reported once, at the end.

use agent_proto::Usage;
use serde_json::{Map, Value, json};

use super::http::{SseParser, WireFormat};
use super::{
    ChatMessage, FinishReason, ProviderError, ProviderEvent, ProviderRequest, UsageTotals, excerpt,
};
use crate::config::Secret;

/// `POST {base}/v1beta/models/{model}:streamGenerateContent?alt=sse`, key in
/// `x-goog-api-key`.
#[derive(Debug, Default)]
pub(super) struct GeminiFormat;

impl WireFormat for GeminiFormat {
    fn url(&self, base_url: &str, model: &str) -> String {
        let model = model.trim_start_matches("models/");
        format!(
            "{}/v1beta/models/{model}:streamGenerateContent?alt=sse",
            base_url.trim_end_matches('/')
        )
    }

    fn authorize(
        &self,
        request: reqwest::RequestBuilder,
        key: Option<&Secret>,
    ) -> reqwest::RequestBuilder {
        match key {
            Some(key) => request.header("x-goog-api-key", key.expose()),
            None => request,
        }
    }

    fn body(&self, request: &ProviderRequest, provider: &str) -> Result<Value, ProviderError> {
        request_body(request, provider)
    }

    fn parser(&self, provider: &str) -> Box<dyn SseParser> {
        Box::new(ChunkParser::new(provider))
    }
}

/// JSON Schema keywords Gemini's function declarations accept.
const SCHEMA_KEYS: &[&str] = &[
    "type",
    "properties",
    "required",
    "items",
    "enum",
    "description",
    "minimum",
    "maximum",
    "format",
    "nullable",
    "minItems",
    "maxItems",
];

/// A schema with only what Gemini accepts, recursively.
pub(super) fn clean_schema(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => {
            let mut out = Map::new();
            for (key, value) in map {
                if !SCHEMA_KEYS.contains(&key.as_str()) {
                    continue;
                }
                let value = match key.as_str() {
                    // property names are not keywords: clean each property's schema
                    "properties" => match value {
                        Value::Object(props) => Value::Object(
                            props
                                .iter()
                                .map(|(name, s)| (name.clone(), clean_schema(s)))
                                .collect(),
                        ),
                        other => other.clone(),
                    },
                    "items" => clean_schema(value),
                    _ => value.clone(),
                };
                out.insert(key.clone(), value);
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

/// Appends parts to the conversation, merging into the last content of the same role.
fn push(contents: &mut Vec<Value>, role: &str, parts: Vec<Value>) {
    if parts.is_empty() {
        return;
    }
    if let Some(last) = contents.last_mut()
        && last["role"] == role
        && let Some(existing) = last["parts"].as_array_mut()
    {
        existing.extend(parts);
        return;
    }
    contents.push(json!({"role": role, "parts": parts}));
}

/// The request body.
pub(super) fn request_body(
    request: &ProviderRequest,
    provider: &str,
) -> Result<Value, ProviderError> {
    let mut contents: Vec<Value> = Vec::with_capacity(request.messages.len());
    for m in &request.messages {
        match m {
            ChatMessage::User {
                content,
                images,
                documents,
            } => {
                let mut parts = Vec::with_capacity(images.len() + documents.len() + 1);
                for image in images {
                    parts.push(json!({"inlineData": {"mimeType": image.mime_type, "data": image.base64(provider)?}}));
                }
                // The same part as an image: Gemini reads PDFs given inline (no name).
                for document in documents {
                    parts.push(json!({"inlineData": {"mimeType": document.mime_type, "data": document.base64(provider)?}}));
                }
                if !content.is_empty() {
                    parts.push(json!({"text": content}));
                }
                push(&mut contents, "user", parts);
            }
            ChatMessage::Assistant {
                content,
                tool_calls,
                ..
            } => {
                let mut parts = Vec::with_capacity(tool_calls.len() + 1);
                if !content.is_empty() {
                    parts.push(json!({"text": content}));
                }
                for call in tool_calls {
                    let args: Value = serde_json::from_str(&call.arguments)
                        .ok()
                        .filter(Value::is_object)
                        .unwrap_or_else(|| json!({}));
                    let mut part = json!({"functionCall": {"name": call.name, "args": args}});
                    if let Some(id) = given_id(&call.id) {
                        part["functionCall"]["id"] = json!(id);
                    }
                    // Back on the very part it came with (Gemini 3 refuses a call of the
                    // current turn without it; of parallel calls only the first has one).
                    if let Some(signature) = &call.signature {
                        part["thoughtSignature"] = json!(signature);
                    }
                    parts.push(part);
                }
                push(&mut contents, "model", parts);
            }
            ChatMessage::Tool {
                tool_call_id,
                name,
                content,
                is_error,
            } => {
                // A failure goes under `error`, the key Gemini's docs give a failed call's
                // response, not `content`.
                let key = if *is_error { "error" } else { "content" };
                let mut response =
                    json!({"functionResponse": {"name": name, "response": {key: content}}});
                // The call's id back with its result, when Gemini gave it one.
                if let Some(id) = given_id(tool_call_id) {
                    response["functionResponse"]["id"] = json!(id);
                }
                push(&mut contents, "user", vec![response]);
            }
        }
    }
    let mut body = json!({"contents": contents});
    if let Some(system) = &request.system {
        body["systemInstruction"] = json!({"parts": [{"text": system}]});
    }
    if !request.tools.is_empty() {
        let declarations: Vec<Value> = request
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "parameters": clean_schema(&t.parameters)}))
            .collect();
        body["tools"] = json!([{"functionDeclarations": declarations}]);
    }
    if let Some(generation) = generation_config(request) {
        body["generationConfig"] = generation;
    }
    Ok(body)
}

/// `generationConfig`: the output cap, the temperature, a turn's output schema
/// (`responseMimeType` + `responseJsonSchema`) and reasoning effort (`thinkingConfig`).
fn generation_config(request: &ProviderRequest) -> Option<Value> {
    let mut generation = Map::new();
    if let Some(max) = request.max_output_tokens {
        generation.insert("maxOutputTokens".into(), json!(max));
    }
    if let Some(t) = request.temperature {
        generation.insert("temperature".into(), json!(t));
    }
    if let Some(output) = &request.options.output {
        generation.insert("responseMimeType".into(), json!("application/json"));
        generation.insert("responseJsonSchema".into(), output.schema.clone());
    }
    if let Some(effort) = request.options.reasoning_effort {
        let budget = super::output::thinking_budget(effort);
        generation.insert("thinkingConfig".into(), json!({"thinkingBudget": budget}));
    }
    (!generation.is_empty()).then_some(Value::Object(generation))
}

/// The id of a call as Gemini gave it, or `None` for one the parser made up (Gemini gave
/// none: `call_` and 32 hex digits, see [`ChunkParser::function_call`]), which must not
/// go back to it.
fn given_id(id: &str) -> Option<&str> {
    let made_up = id
        .strip_prefix("call_")
        .is_some_and(|rest| rest.len() == 32 && rest.bytes().all(|b| b.is_ascii_hexdigit()));
    (!made_up && !id.is_empty()).then_some(id)
}

/// Gemini's response chunks.
#[derive(Debug, Default)]
pub(super) struct ChunkParser {
    provider: String,
    calls: usize,
    /// The usage totals of the latest `usageMetadata` (they are running totals).
    usage: Option<Usage>,
    /// What of them was passed on: at the finish, and again if a chunk after it brings
    /// larger totals (some responses carry the final usage after the finish reason).
    reported: UsageTotals,
    /// Text or a call came: a `STOP` with neither is an empty answer, not a complete one.
    answered: bool,
    /// A finish reason came (the stream has no end marker: its close ends it).
    stopped: bool,
    /// The prompt was blocked: nothing more will come.
    done: bool,
}

impl ChunkParser {
    pub(super) fn new(provider: &str) -> Self {
        ChunkParser {
            provider: provider.to_owned(),
            ..Self::default()
        }
    }
}

/// A candidate's `finishReason`, with its `finishMessage` and the safety ratings that
/// blocked it as the provider's words for a refusal.
fn finish_reason(reason: &str, candidate: &Value) -> FinishReason {
    match reason {
        "STOP" => FinishReason::Stop,
        "MAX_TOKENS" => FinishReason::Length,
        "SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII" | "IMAGE_SAFETY"
        | "LANGUAGE" => {
            let mut words = format!("the answer was blocked (finishReason {reason})");
            if let Some(message) = candidate.get("finishMessage").and_then(Value::as_str) {
                words.push_str(&format!(": {message}"));
            }
            let blocked: Vec<&str> = candidate
                .get("safetyRatings")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter(|r| r["blocked"] == true || r["probability"] == "HIGH")
                .filter_map(|r| r["category"].as_str())
                .collect();
            if !blocked.is_empty() {
                words.push_str(&format!(" [{}]", blocked.join(", ")));
            }
            FinishReason::Refused(words)
        }
        other => match candidate.get("finishMessage").and_then(Value::as_str) {
            Some(message) => FinishReason::Other(format!("{other}: {message}")),
            None => FinishReason::Other(other.to_owned()),
        },
    }
}

impl ChunkParser {
    /// What the latest usage totals add to those passed on already.
    fn usage_added(&mut self) -> Option<Usage> {
        self.reported.added(self.usage?)
    }

    /// A whole tool call in a part: its start, its arguments at once, and its signature
    /// (a sibling of `functionCall` in the part).
    fn function_call(
        &mut self,
        call: &Value,
        part: &Value,
        data: &str,
    ) -> Result<Vec<ProviderEvent>, ProviderError> {
        let name = call["name"].as_str().unwrap_or_default().to_owned();
        if name.is_empty() {
            return Err(ProviderError::Malformed {
                provider: self.provider.clone(),
                raw: format!("a functionCall without a name: {}", excerpt(data, 2048)),
            });
        }
        let index = self.calls;
        self.calls += 1;
        let id = call["id"].as_str().filter(|id| !id.is_empty()).map_or_else(
            || format!("call_{}", uuid::Uuid::new_v4().simple()),
            str::to_owned,
        );
        let args = call.get("args").cloned().unwrap_or_else(|| json!({}));
        let mut events = vec![
            ProviderEvent::ToolCallStart { index, id, name },
            ProviderEvent::ToolCallArgsDelta {
                index,
                delta: args.to_string(),
            },
        ];
        if let Some(signature) = part
            .get("thoughtSignature")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
        {
            events.push(ProviderEvent::ToolCallSignature {
                index,
                signature: signature.to_owned(),
            });
        }
        Ok(events)
    }
}

/// The end of an answer whose prompt was blocked (`promptFeedback.blockReason`), if it was.
fn prompt_blocked(value: &Value) -> Option<ProviderEvent> {
    let reason = value
        .pointer("/promptFeedback/blockReason")
        .and_then(Value::as_str)?;
    let mut words = format!("the request was blocked (blockReason {reason})");
    if let Some(message) = value
        .pointer("/promptFeedback/blockReasonMessage")
        .and_then(Value::as_str)
    {
        words.push_str(&format!(": {message}"));
    }
    Some(ProviderEvent::Finish(FinishReason::Refused(words)))
}

impl SseParser for ChunkParser {
    fn event(
        &mut self,
        _name: Option<&str>,
        data: &str,
    ) -> Result<Vec<ProviderEvent>, ProviderError> {
        let value: Value = serde_json::from_str(data).map_err(|_| ProviderError::Malformed {
            provider: self.provider.clone(),
            raw: excerpt(data, 2048),
        })?;
        if value.get("error").is_some() {
            return Err(ProviderError::InStream {
                provider: self.provider.clone(),
                raw: excerpt(data, 8192),
            });
        }
        if let Some(usage) = value.get("usageMetadata") {
            let count = |k: &str| usage.get(k).and_then(Value::as_u64).unwrap_or(0);
            self.usage = Some(Usage {
                input_tokens: count("promptTokenCount"),
                output_tokens: count("candidatesTokenCount") + count("thoughtsTokenCount"),
            });
        }
        // One candidate is asked for: the one with index 0 (an absent index is 0), wherever
        // it sits in the list.
        let candidate = value
            .get("candidates")
            .and_then(Value::as_array)
            .and_then(|all| {
                all.iter()
                    .find(|c| c.get("index").and_then(Value::as_u64).unwrap_or(0) == 0)
            });
        let Some(candidate) = candidate else {
            // The prompt itself was blocked: no candidate will come. Or a chunk of usage
            // alone, after the finish reason.
            let blocked = prompt_blocked(&value);
            self.done |= blocked.is_some();
            let mut events: Vec<ProviderEvent> = blocked.into_iter().collect();
            if self.stopped {
                events.extend(self.usage_added().map(ProviderEvent::Usage));
            }
            return Ok(events);
        };
        let mut events = Vec::new();
        for part in candidate
            .pointer("/content/parts")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(call) = part.get("functionCall") {
                events.extend(self.function_call(call, part, data)?);
                self.answered = true;
            } else if let Some(text) = part["text"].as_str().filter(|t| !t.is_empty()) {
                if part["thought"] == true {
                    events.push(ProviderEvent::ReasoningDelta(text.to_owned()));
                } else {
                    events.push(ProviderEvent::TextDelta(text.to_owned()));
                    self.answered = true;
                }
            }
        }
        if let Some(reason) = candidate.get("finishReason").and_then(Value::as_str) {
            let finish = if reason == "STOP" && !self.answered {
                // Gemini sometimes ends with STOP and nothing at all: not an answer.
                FinishReason::Other("STOP with no text and no call (an empty answer)".into())
            } else {
                finish_reason(reason, candidate)
            };
            events.push(ProviderEvent::Finish(finish));
            self.stopped = true;
        }
        if self.stopped {
            events.extend(self.usage_added().map(ProviderEvent::Usage));
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
    use crate::provider::{ImageRef, ToolCallRequest, ToolSpec};

    #[test]
    fn bodies_map_roles_calls_results_and_clean_schemas() {
        let dir = tempfile::tempdir().unwrap();
        let image = dir.path().join("a.png");
        std::fs::write(&image, b"png!").unwrap();
        let request = ProviderRequest {
            model: "gemini-x".into(),
            system: Some("be brief".into()),
            messages: vec![
                ChatMessage::User {
                    content: "look".into(),
                    images: vec![ImageRef {
                        path: image,
                        mime_type: "image/png".into(),
                    }],
                    documents: vec![],
                },
                ChatMessage::Assistant {
                    content: String::new(),
                    tool_calls: vec![ToolCallRequest {
                        id: "c1".into(),
                        name: "glob".into(),
                        arguments: r#"{"pattern":"*.rs"}"#.into(),
                        signature: None,
                    }],
                    reasoning: vec![],
                    order: Vec::new(),
                },
                ChatMessage::Tool {
                    tool_call_id: "c1".into(),
                    name: "glob".into(),
                    content: "a.rs".into(),
                    is_error: false,
                },
                ChatMessage::User {
                    content: "thanks".into(),
                    images: vec![],
                    documents: Vec::new(),
                },
            ],
            tools: vec![ToolSpec {
                name: "glob".into(),
                description: "find".into(),
                parameters: json!({
                    "type": "object",
                    "$schema": "x",
                    "additionalProperties": false,
                    "properties": {"pattern": {"type": "string", "default": "*", "description": "p"},
                                   "items": {"type": "array", "items": {"type": "string", "examples": ["a"]}}},
                    "required": ["pattern"]
                }),
            }],
            max_output_tokens: Some(100),
            temperature: None,
            options: Default::default(),
        };
        assert_eq!(
            request_body(&request, "gemini").unwrap(),
            json!({
                "contents": [
                    {"role": "user", "parts": [{"inlineData": {"mimeType": "image/png", "data": "cG5nIQ=="}}, {"text": "look"}]},
                    {"role": "model", "parts": [{"functionCall": {"name": "glob", "args": {"pattern": "*.rs"}, "id": "c1"}}]},
                    {"role": "user", "parts": [
                        {"functionResponse": {"name": "glob", "response": {"content": "a.rs"}, "id": "c1"}},
                        {"text": "thanks"}
                    ]}
                ],
                "systemInstruction": {"parts": [{"text": "be brief"}]},
                "tools": [{"functionDeclarations": [{"name": "glob", "description": "find", "parameters": {
                    "type": "object",
                    "properties": {"pattern": {"type": "string", "description": "p"},
                                   "items": {"type": "array", "items": {"type": "string"}}},
                    "required": ["pattern"]
                }}]}],
                "generationConfig": {"maxOutputTokens": 100}
            })
        );
    }

    #[test]
    fn chunks_become_events_with_usage_once() {
        let chunks = [
            json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "thinking...", "thought": true}]}}], "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 1}}),
            json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "Hel"}]}}], "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 2}}),
            json!({"candidates": [{"content": {"role": "model", "parts": [{"text": "lo"}, {"functionCall": {"name": "a", "args": {"x": 1}}}, {"functionCall": {"name": "b"}}]}, "finishReason": "STOP"}], "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 7}}),
        ];
        let mut parser = ChunkParser::new("gemini");
        let mut events = Vec::new();
        for chunk in &chunks {
            assert!(!parser.stopped());
            events.extend(parser.event(None, &chunk.to_string()).unwrap());
        }
        // No end marker: the finish reason stops the answer, the stream's close ends it.
        assert!(parser.stopped());
        assert!(
            matches!(&events[3], ProviderEvent::ToolCallStart { index: 0, name, .. } if name == "a")
        );
        assert!(
            matches!(&events[5], ProviderEvent::ToolCallStart { index: 1, name, .. } if name == "b")
        );
        let expected_rest = vec![
            ProviderEvent::ReasoningDelta("thinking...".into()),
            ProviderEvent::TextDelta("Hel".into()),
            ProviderEvent::TextDelta("lo".into()),
            ProviderEvent::ToolCallArgsDelta {
                index: 0,
                delta: r#"{"x":1}"#.into(),
            },
            ProviderEvent::ToolCallArgsDelta {
                index: 1,
                delta: "{}".into(),
            },
            ProviderEvent::Finish(FinishReason::Stop),
            ProviderEvent::Usage(Usage {
                input_tokens: 10,
                output_tokens: 7,
            }),
        ];
        let rest: Vec<ProviderEvent> = events
            .into_iter()
            .filter(|e| !matches!(e, ProviderEvent::ToolCallStart { .. }))
            .collect();
        assert_eq!(rest, expected_rest);
    }

    #[test]
    fn thought_signatures_stay_with_their_calls() {
        // Parallel calls: only the first carries a signature.
        let chunk = json!({"candidates": [{"index": 0, "content": {"role": "model", "parts": [
            {"functionCall": {"name": "a", "args": {}}, "thoughtSignature": "c2lnLWE="},
            {"functionCall": {"name": "b", "args": {}}}
        ]}, "finishReason": "STOP"}]});
        let events = ChunkParser::new("gemini")
            .event(None, &chunk.to_string())
            .unwrap();
        let signatures: Vec<&ProviderEvent> = events
            .iter()
            .filter(|e| matches!(e, ProviderEvent::ToolCallSignature { .. }))
            .collect();
        assert_eq!(
            signatures,
            [&ProviderEvent::ToolCallSignature {
                index: 0,
                signature: "c2lnLWE=".into()
            }]
        );

        let call = |name: &str, signature: Option<&str>| ToolCallRequest {
            id: format!("id-{name}"),
            name: name.into(),
            arguments: "{}".into(),
            signature: signature.map(Into::into),
        };
        let request = ProviderRequest {
            model: "gemini-3".into(),
            system: None,
            messages: vec![
                ChatMessage::User {
                    content: "go".into(),
                    images: vec![],
                    documents: Vec::new(),
                },
                ChatMessage::Assistant {
                    content: String::new(),
                    tool_calls: vec![call("a", Some("c2lnLWE=")), call("b", None)],
                    reasoning: vec![],
                    order: Vec::new(),
                },
            ],
            tools: vec![],
            max_output_tokens: None,
            temperature: None,
            options: Default::default(),
        };
        assert_eq!(
            request_body(&request, "gemini").unwrap()["contents"][1]["parts"],
            json!([
                {"functionCall": {"name": "a", "args": {}, "id": "id-a"}, "thoughtSignature": "c2lnLWE="},
                {"functionCall": {"name": "b", "args": {}, "id": "id-b"}}
            ])
        );
    }

    #[test]
    fn candidates_are_matched_by_their_index() {
        let cases = [
            (
                json!({"candidates": [
                    {"index": 1, "content": {"parts": [{"text": "other"}]}},
                    {"index": 0, "content": {"parts": [{"text": "mine"}]}}
                ]}),
                vec![ProviderEvent::TextDelta("mine".into())],
            ),
            (
                json!({"candidates": [{"content": {"parts": [{"text": "no index is 0"}]}}]}),
                vec![ProviderEvent::TextDelta("no index is 0".into())],
            ),
            (
                json!({"candidates": [{"index": 2, "content": {"parts": [{"text": "x"}]}, "finishReason": "STOP"}]}),
                vec![],
            ),
        ];
        for (chunk, expected) in cases {
            let mut parser = ChunkParser::new("gemini");
            assert_eq!(
                parser.event(None, &chunk.to_string()).unwrap(),
                expected,
                "{chunk}"
            );
            assert!(
                !parser.finished(),
                "another candidate's finish is not ours: {chunk}"
            );
        }
    }

    #[test]
    fn errors_and_garbage_keep_the_raw_text() {
        let cases = [
            (
                r#"{"error": {"code": 429, "message": "Resource exhausted"}}"#,
                "Resource exhausted",
                agent_proto::run_error::PROVIDER_STREAM_ERROR,
            ),
            (
                "not json",
                "not json",
                agent_proto::run_error::PROVIDER_MALFORMED,
            ),
        ];
        for (data, needle, kind) in cases {
            let err = ChunkParser::new("gemini").event(None, data).unwrap_err();
            assert_eq!(err.kind(), kind, "{data}");
            assert!(err.to_string().contains(needle), "{err}");
        }
    }

    #[test]
    fn finish_reasons() {
        let cases: &[(&str, FinishReason)] = &[
            (
                r#"{"candidates": [{"content": {"parts": []}, "finishReason": "MAX_TOKENS"}]}"#,
                FinishReason::Length,
            ),
            (
                r#"{"candidates": [{"content": {"parts": [{"text": "ok"}]}, "finishReason": "STOP"}]}"#,
                FinishReason::Stop,
            ),
            (
                r#"{"candidates": [{"finishReason": "SAFETY", "safetyRatings": [{"category": "HARM_CATEGORY_HARASSMENT", "probability": "HIGH", "blocked": true}, {"category": "HARM_CATEGORY_HATE_SPEECH", "probability": "NEGLIGIBLE"}]}]}"#,
                FinishReason::Refused(
                    "the answer was blocked (finishReason SAFETY) [HARM_CATEGORY_HARASSMENT]"
                        .into(),
                ),
            ),
            (
                r#"{"promptFeedback": {"blockReason": "PROHIBITED_CONTENT", "blockReasonMessage": "not allowed"}}"#,
                FinishReason::Refused(
                    "the request was blocked (blockReason PROHIBITED_CONTENT): not allowed".into(),
                ),
            ),
            (
                r#"{"candidates": [{"finishReason": "MALFORMED_FUNCTION_CALL", "finishMessage": "Malformed function call: print(x"}]}"#,
                FinishReason::Other(
                    "MALFORMED_FUNCTION_CALL: Malformed function call: print(x".into(),
                ),
            ),
        ];
        for (data, expected) in cases {
            let mut parser = ChunkParser::new("gemini");
            let events = parser.event(None, data).unwrap();
            assert_eq!(
                events.last(),
                Some(&ProviderEvent::Finish(expected.clone())),
                "{data}"
            );
            // A finish reason stops the answer (the stream's close ends it); a blocked
            // prompt ends it at once.
            assert!(parser.stopped() || parser.finished(), "{data}");
        }
    }

    #[test]
    fn an_empty_stop_is_not_an_answer_and_usage_after_the_finish_counts() {
        let mut parser = ChunkParser::new("gemini");
        let stop = json!({"candidates": [{"content": {"role": "model", "parts": [{"text": ""}]},
            "finishReason": "STOP"}], "usageMetadata": {"promptTokenCount": 12}});
        let events = parser.event(None, &stop.to_string()).unwrap();
        assert!(
            matches!(&events[0], ProviderEvent::Finish(FinishReason::Other(why)) if why.contains("empty answer")),
            "{events:?}"
        );
        // The final usage in a chunk after the finish reason: what it adds is passed on.
        let after = json!({"usageMetadata": {"promptTokenCount": 12, "candidatesTokenCount": 3}});
        let events = parser.event(None, &after.to_string()).unwrap();
        assert_eq!(
            events,
            [ProviderEvent::Usage(Usage {
                input_tokens: 0,
                output_tokens: 3
            })]
        );
    }

    #[test]
    fn only_ids_gemini_gave_go_back() {
        assert_eq!(given_id("c1"), Some("c1"));
        assert_eq!(given_id("call_0123456789abcdef0123456789abcdef"), None);
        assert_eq!(given_id("call_short"), Some("call_short"));
        assert_eq!(given_id(""), None);
    }
}
