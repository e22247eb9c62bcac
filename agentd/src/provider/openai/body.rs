//! The chat-completions request body, serialized straight from the request.
//!
//! Every turn sends the whole fitted history, so the body is written from borrowed
//! structs in one pass: building a `serde_json::Value` first cost an allocation per key
//! and per string (an `IndexMap` per message) and was most of the daemon's work between
//! `sendMessage` and the model request on a long history (docs/performance.md).

use serde::Serialize;
use serde_json::{Value, json};

use crate::provider::http::write_body;
use crate::provider::{
    ChatMessage, ProviderError, ProviderRequest, ReasoningPart, ToolCallRequest, ToolSpec,
};

#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    messages: Vec<Wire<'a>>,
    stream: bool,
    stream_options: StreamOptions,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    tools: Vec<Tool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    /// The turn's `reasoningEffort` (`low`, `medium`, `high`).
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_effort: Option<&'static str>,
    /// The turn's `outputSchema`: `{type: "json_schema", json_schema: {name, schema,
    /// strict}}`, strict only when the schema meets OpenAI's strict rules.
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<Value>,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

/// One message as the API takes it.
#[derive(Serialize)]
#[serde(tag = "role", rename_all = "lowercase")]
enum Wire<'a> {
    System {
        content: &'a str,
    },
    User {
        content: UserContent<'a>,
    },
    Assistant {
        /// Left out beside tool calls when there is no text: OpenAI, vLLM and Ollama take
        /// that, while llama-cpp-python's server refuses `null` (its schema says
        /// `NotRequired[str]`) and some servers refuse `""`.
        #[serde(skip_serializing_if = "Option::is_none")]
        content: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        tool_calls: Option<Vec<Call<'a>>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        reasoning_content: Option<String>,
        /// OpenRouter's structured reasoning, as it came (OpenRouter asks for it back on a
        /// thinking model's tool-calling turns and refuses some of them without it).
        #[serde(skip_serializing_if = "Option::is_none")]
        reasoning_details: Option<Vec<&'a Value>>,
    },
    Tool {
        tool_call_id: &'a str,
        /// A failed call's text marked ([`crate::provider::marked_failure`]): the API has
        /// no error flag on a tool message.
        content: std::borrow::Cow<'a, str>,
    },
}

#[derive(Serialize)]
#[serde(untagged)]
enum UserContent<'a> {
    Text(&'a str),
    /// Text with images or documents: content parts (rare; built as values).
    Parts(Vec<Value>),
}

#[derive(Serialize)]
struct Call<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: Function<'a>,
}

#[derive(Serialize)]
struct Function<'a> {
    name: &'a str,
    arguments: &'a str,
}

#[derive(Serialize)]
struct Tool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: ToolFunction<'a>,
}

#[derive(Serialize)]
struct ToolFunction<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

/// The body of a streaming chat completion, as bytes. With `replay_reasoning`, the
/// assistant messages of turns with tool calls carry `reasoning_content` (see
/// [`tool_turns`]).
pub(in crate::provider) fn request_bytes(
    request: &ProviderRequest,
    provider: &str,
    replay_reasoning: bool,
) -> Result<Vec<u8>, ProviderError> {
    let in_tool_turn = replay_reasoning.then(|| tool_turns(request));
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    if let Some(system) = &request.system {
        messages.push(Wire::System { content: system });
    }
    for (i, m) in request.messages.iter().enumerate() {
        messages.push(match m {
            ChatMessage::User {
                content,
                images,
                documents,
            } if images.is_empty() && documents.is_empty() => Wire::User {
                content: UserContent::Text(content),
            },
            ChatMessage::User { .. } => Wire::User {
                content: UserContent::Parts(user_parts(m, provider)?),
            },
            ChatMessage::Assistant {
                content,
                tool_calls,
                reasoning,
                ..
            } => {
                let reasoning_content = in_tool_turn
                    .as_ref()
                    .is_some_and(|turns| turns[i])
                    .then(|| reasoning.iter().map(|r| r.text.as_str()).collect());
                let reasoning_details = reasoning_details(reasoning);
                if tool_calls.is_empty() {
                    Wire::Assistant {
                        content: Some(content),
                        tool_calls: None,
                        reasoning_content,
                        reasoning_details,
                    }
                } else {
                    Wire::Assistant {
                        content: (!content.is_empty()).then_some(content.as_str()),
                        tool_calls: Some(tool_calls.iter().map(call).collect()),
                        reasoning_content,
                        reasoning_details,
                    }
                }
            }
            ChatMessage::Tool {
                tool_call_id,
                content,
                is_error,
                ..
            } => Wire::Tool {
                tool_call_id,
                content: if *is_error {
                    crate::provider::marked_failure(content)
                } else {
                    std::borrow::Cow::Borrowed(content.as_str())
                },
            },
        });
    }
    let body = Body {
        model: &request.model,
        messages,
        stream: true,
        stream_options: StreamOptions {
            include_usage: true,
        },
        tools: request.tools.iter().map(tool).collect(),
        max_tokens: request.max_output_tokens,
        temperature: request.temperature,
        reasoning_effort: request.options.reasoning_effort.map(|e| e.as_str()),
        response_format: request.options.output.as_ref().map(|o| {
            json!({"type": "json_schema", "json_schema": {
                "name": o.name, "schema": o.schema, "strict": o.strict
            }})
        }),
    };
    write_body(&body, provider)
}

/// The `reasoning_details` an assistant message goes back with: those its reasoning came
/// with, in order, as received (`None` when it came with none).
fn reasoning_details(reasoning: &[ReasoningPart]) -> Option<Vec<&Value>> {
    let details: Vec<&Value> = reasoning
        .iter()
        .filter_map(|r| r.details.as_ref())
        .flat_map(|d| match d {
            Value::Array(items) => items.iter().collect(),
            other => vec![other],
        })
        .collect();
    (!details.is_empty()).then_some(details)
}

fn call(c: &ToolCallRequest) -> Call<'_> {
    Call {
        id: &c.id,
        kind: "function",
        function: Function {
            name: &c.name,
            arguments: &c.arguments,
        },
    }
}

fn tool(t: &ToolSpec) -> Tool<'_> {
    Tool {
        kind: "function",
        function: ToolFunction {
            name: &t.name,
            description: &t.description,
            parameters: &t.parameters,
        },
    }
}

/// A user message with images or documents: the files' bytes as data URLs, then the text.
fn user_parts(message: &ChatMessage, provider: &str) -> Result<Vec<Value>, ProviderError> {
    let ChatMessage::User {
        content,
        images,
        documents,
    } = message
    else {
        return Ok(Vec::new());
    };
    let mut parts = Vec::with_capacity(images.len() + documents.len() + 1);
    for image in images {
        let data = image.base64(provider)?;
        parts.push(json!({
            "type": "image_url",
            "image_url": {"url": format!("data:{};base64,{data}", image.mime_type)}
        }));
    }
    for document in documents {
        let data = document.base64(provider)?;
        parts.push(json!({
            "type": "file",
            "file": {
                "filename": document.name,
                "file_data": format!("data:{};base64,{data}", document.mime_type)
            }
        }));
    }
    if !content.is_empty() {
        parts.push(json!({"type": "text", "text": content}));
    }
    Ok(parts)
}

/// Per message: whether it belongs to a turn (the messages between two user messages) in
/// which the model called tools. DeepSeek's documented rule for its thinking mode: the
/// reasoning of a tool-calling turn goes back in every later request, earlier turns
/// included (a request without it is refused with HTTP 400); the reasoning of turns
/// without tool calls is ignored by the API, so it is not sent.
fn tool_turns(request: &ProviderRequest) -> Vec<bool> {
    let mut in_tool_turn = vec![false; request.messages.len()];
    let mut start = 0;
    for end in 0..=request.messages.len() {
        let turn_ends = request
            .messages
            .get(end)
            .is_none_or(|m| matches!(m, ChatMessage::User { .. }));
        if !turn_ends {
            continue;
        }
        let turn = &request.messages[start..end];
        let calls = turn.iter().any(
            |m| matches!(m, ChatMessage::Assistant { tool_calls, .. } if !tool_calls.is_empty()),
        );
        in_tool_turn[start..end].fill(calls);
        start = end + 1;
    }
    in_tool_turn
}
