//! Context building: turns an agent's stored history into the provider request.
//!
//! The one place that decides what the model sees of the past: which messages, which of
//! their blocks, with which system prompt, tools and options. Reasoning and error blocks
//! are for clients, never sent back. An assistant message is replayed step by step (its
//! text, its tool calls, then one result per call), so every tool call the model sees has
//! its result. A failed or empty assistant turn is left out; consecutive user messages are
//! merged (some APIs require alternating roles).

pub mod budget;
pub mod tokens;

use agent_proto::{Agent, Block, Message, MessageStatus, ModelInfo, Role, ToolCallResult};

use crate::agent_loop::legacy;
use crate::provider::{ChatMessage, ImageRef, ProviderRequest, ToolCallRequest, ToolSpec};

/// What a model call is built from.
#[derive(Debug, Clone, Copy)]
pub struct ContextInput<'a> {
    pub agent: &'a Agent,
    /// The agent's messages before the assistant message being written, oldest first.
    pub history: &'a [Message],
    /// The assistant message being written (its earlier steps are part of the context).
    pub current: Option<&'a Message>,
    pub model: &'a ModelInfo,
    /// The tools offered (with native function calling).
    pub tools: &'a [ToolSpec],
}

/// Result text for a call that has none (it never ran); keeps the transcript valid.
pub const NO_RESULT: &str = "(no result: the call did not run)";

/// Whether the tools go to the model as text (the legacy `<function_call>` protocol)
/// rather than by native function calling.
pub fn uses_legacy_tools(model: &ModelInfo, tools: &[ToolSpec]) -> bool {
    !model.tools && !tools.is_empty()
}

/// The request for the next model call.
pub fn build_request(input: ContextInput<'_>) -> ProviderRequest {
    let legacy = uses_legacy_tools(input.model, input.tools);
    let mut messages: Vec<ChatMessage> = Vec::with_capacity(input.history.len() + 1);
    for message in input.history {
        match message.role {
            Role::User => push_user(&mut messages, message, input.model.vision),
            Role::Assistant => {
                if matches!(
                    message.status,
                    MessageStatus::Pending | MessageStatus::Streaming
                ) {
                    continue; // being written by another run
                }
                push_assistant(&mut messages, message, legacy);
            }
        }
    }
    if let Some(current) = input.current {
        push_assistant(&mut messages, current, legacy);
    }
    let agent = input.agent;
    let mut system = agent.system_prompt.clone().filter(|s| !s.trim().is_empty());
    if legacy {
        let tools = legacy::tools_prompt(input.tools);
        system = Some(match system {
            Some(prompt) => format!("{prompt}\n\n{tools}"),
            None => tools,
        });
    }
    ProviderRequest {
        model: input.model.id.clone(),
        system,
        messages,
        tools: if legacy {
            Vec::new()
        } else {
            input.tools.to_vec()
        },
        max_output_tokens: agent
            .settings
            .max_output_tokens
            .map(|n| n.min(input.model.max_output_tokens)),
        temperature: agent.settings.temperature,
    }
}

fn message_text(message: &Message) -> String {
    let mut text = String::new();
    for block in &message.blocks {
        if let Block::Text { text: t } = block {
            text.push_str(t);
        }
    }
    text
}

/// A user message: its text, and its images (shown to vision models, named by path to
/// the others).
fn push_user(messages: &mut Vec<ChatMessage>, message: &Message, vision: bool) {
    let mut text = message_text(message);
    let mut images = Vec::new();
    for block in &message.blocks {
        if let Block::Image { mime_type, path } = block {
            if vision {
                images.push(ImageRef {
                    path: path.into(),
                    mime_type: mime_type.clone(),
                });
            } else {
                if !text.is_empty() {
                    text.push('\n');
                }
                text.push_str(&format!("[image attached as a file: {path} ({mime_type})]"));
            }
        }
    }
    if text.trim().is_empty() && images.is_empty() {
        return;
    }
    if let Some(ChatMessage::User {
        content,
        images: previous,
    }) = messages.last_mut()
    {
        if !text.is_empty() {
            content.push_str("\n\n");
            content.push_str(&text);
        }
        previous.extend(images);
    } else {
        messages.push(ChatMessage::User {
            content: text,
            images,
        });
    }
}

/// One step of an assistant message: the text the model wrote, then the calls it made.
#[derive(Debug, Default)]
pub struct Step<'a> {
    pub text: String,
    pub calls: Vec<StepCall<'a>>,
}

#[derive(Debug)]
pub struct StepCall<'a> {
    pub id: &'a str,
    pub name: &'a str,
    pub arguments: String,
    pub result: Option<&'a ToolCallResult>,
}

/// Splits an assistant message into its steps: a step ends with its tool calls, so text
/// after a tool call starts the next step.
pub fn steps(message: &Message) -> Vec<Step<'_>> {
    let mut steps: Vec<Step<'_>> = vec![Step::default()];
    for block in &message.blocks {
        match block {
            Block::Text { text } => {
                let last_has_calls = steps.last().is_some_and(|s| !s.calls.is_empty());
                if last_has_calls {
                    steps.push(Step::default());
                }
                if let Some(step) = steps.last_mut() {
                    step.text.push_str(text);
                }
            }
            Block::ToolCall {
                tool_call_id,
                name,
                arguments,
                raw_arguments,
                result,
                ..
            } => {
                if let Some(step) = steps.last_mut() {
                    step.calls.push(StepCall {
                        id: tool_call_id,
                        name,
                        arguments: raw_arguments
                            .clone()
                            .unwrap_or_else(|| arguments.to_string()),
                        result: result.as_ref(),
                    });
                }
            }
            Block::Reasoning { .. } | Block::Error { .. } | Block::Image { .. } => {}
        }
    }
    steps.retain(|s| !s.text.trim().is_empty() || !s.calls.is_empty());
    steps
}

fn push_assistant(messages: &mut Vec<ChatMessage>, message: &Message, legacy: bool) {
    if legacy {
        return push_assistant_legacy(messages, message);
    }
    for step in steps(message) {
        messages.push(ChatMessage::Assistant {
            content: step.text,
            tool_calls: step
                .calls
                .iter()
                .map(|c| ToolCallRequest {
                    id: c.id.to_owned(),
                    name: c.name.to_owned(),
                    arguments: c.arguments.clone(),
                })
                .collect(),
        });
        for call in step.calls {
            messages.push(ChatMessage::Tool {
                tool_call_id: call.id.to_owned(),
                name: call.name.to_owned(),
                content: call
                    .result
                    .map_or_else(|| NO_RESULT.to_owned(), |r| r.content.clone()),
            });
        }
    }
}

/// An assistant message in the legacy protocol: calls rendered into the text, results
/// back in a user message.
fn push_assistant_legacy(messages: &mut Vec<ChatMessage>, message: &Message) {
    for step in steps(message) {
        let mut content = step.text;
        for call in &step.calls {
            let arguments = serde_json::from_str(&call.arguments)
                .unwrap_or_else(|_| serde_json::Value::String(call.arguments.clone()));
            content.push_str(&legacy::render_call(call.name, &arguments));
        }
        messages.push(ChatMessage::Assistant {
            content,
            tool_calls: Vec::new(),
        });
        if !step.calls.is_empty() {
            let results: Vec<String> = step
                .calls
                .iter()
                .map(|c| {
                    let content = c.result.map_or(NO_RESULT, |r| r.content.as_str());
                    legacy::render_result(c.name, c.id, content)
                })
                .collect();
            messages.push(ChatMessage::User {
                content: results.join("\n"),
                images: Vec::new(),
            });
        }
    }
}

#[cfg(test)]
mod tests;
