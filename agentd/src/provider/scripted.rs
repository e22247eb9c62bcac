//! The `scripted` provider: replays canned answers from a TOML file, so anyone can try the
//! daemon, and client authors can test against it, without an API key or a network.
//!
//! Script format:
//!
//! ```toml
//! [[turns]]
//! reasoning = "The user greets me."   # optional, streamed as reasoning first
//! text = "Hello! How can I help?"
//! chunk_chars = 4                     # optional: characters per delta (default: word by word)
//! delay_ms = 20                       # optional: pause before each delta (default 0)
//!
//! [[turns]]
//! text = "Partial answer"
//! error = "simulated provider failure" # optional: fail after the text
//!
//! [[turns]]
//! text = "Let me look."
//! [[turns.tool_calls]]                 # optional: tool calls after the text
//! name = "list_directory"
//! arguments = { path = "." }
//! ```
//!
//! The answer to a call is the turn whose index is the number of assistant messages in the
//! request (so the first answer of an agent is turn 0, the second turn 1, ...), wrapping
//! around at the end. Without a script it is the built-in demo model (`demo.rs`): it echoes
//! the last user message, and turns a few plain requests into tool calls.

mod demo;

use std::path::Path;
use std::time::Duration;

use agent_proto::{Role, Usage};
use futures::stream;
use serde::Deserialize;

use super::{
    ChatMessage, FinishReason, Provider, ProviderError, ProviderEvent, ProviderRequest,
    ProviderStream,
};

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(super) struct Script {
    pub turns: Vec<Turn>,
}

#[derive(Debug, Clone, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct Turn {
    #[serde(default)]
    pub text: String,
    pub reasoning: Option<String>,
    pub chunk_chars: Option<usize>,
    pub delay_ms: Option<u64>,
    pub error: Option<String>,
    #[serde(default)]
    pub tool_calls: Vec<ScriptToolCall>,
}

/// A tool call a scripted turn makes.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(super) struct ScriptToolCall {
    pub name: String,
    #[serde(default = "empty_table")]
    pub arguments: toml::Value,
}

fn empty_table() -> toml::Value {
    toml::Value::Table(toml::map::Map::new())
}

impl Script {
    pub(super) fn load(path: &Path) -> Result<Script, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read script {}: {e}", path.display()))?;
        let script: Script =
            toml::from_str(&text).map_err(|e| format!("invalid script {}: {e}", path.display()))?;
        if script.turns.is_empty() {
            return Err(format!("script {} has no [[turns]]", path.display()));
        }
        Ok(script)
    }
}

#[derive(Debug)]
pub(super) struct ScriptedProvider {
    pub id: String,
    /// `None`: the built-in echo demo.
    pub script: Option<Script>,
    /// Pause before each delta of the echo demo, so it looks like a stream.
    pub echo_delay: Duration,
}

impl ScriptedProvider {
    fn turn_for(&self, request: &ProviderRequest) -> Turn {
        let answered = request
            .messages
            .iter()
            .filter(|m| m.role() == Role::Assistant)
            .count();
        match &self.script {
            Some(script) => script.turns[answered % script.turns.len()].clone(),
            None => Turn {
                delay_ms: Some(u64::try_from(self.echo_delay.as_millis()).unwrap_or(0)),
                ..demo::answer(request)
            },
        }
    }
}

/// Splits text into deltas: `chunk_chars` characters each, or word by word (each word with
/// the whitespace after it).
pub(super) fn split_deltas(text: &str, chunk_chars: Option<usize>) -> Vec<String> {
    match chunk_chars {
        Some(n) if n > 0 => {
            let chars: Vec<char> = text.chars().collect();
            chars.chunks(n).map(|c| c.iter().collect()).collect()
        }
        _ => {
            let mut out: Vec<String> = Vec::new();
            let mut current = String::new();
            let mut in_space = false;
            for c in text.chars() {
                let space = c.is_whitespace();
                if !space && in_space && !current.trim().is_empty() {
                    out.push(std::mem::take(&mut current));
                }
                in_space = space;
                current.push(c);
            }
            if !current.is_empty() {
                out.push(current);
            }
            out
        }
    }
}

/// A rough token count (4 characters a token) for the usage event.
fn rough_tokens(chars: usize) -> u64 {
    u64::try_from(chars.div_ceil(4)).unwrap_or(u64::MAX)
}

impl Provider for ScriptedProvider {
    fn request_body(&self, request: &ProviderRequest) -> serde_json::Value {
        // There is no wire format: show the provider-neutral request.
        serde_json::json!({
            "model": request.model,
            "system": request.system,
            "messages": request.messages.iter().map(|m| match m {
                ChatMessage::User { content, images, documents } => serde_json::json!({
                    "role": "user",
                    "content": content,
                    "images": images.iter().map(|i| i.path.display().to_string()).collect::<Vec<_>>(),
                    "documents": documents.iter().map(|d| d.path.display().to_string()).collect::<Vec<_>>(),
                }),
                ChatMessage::Assistant { content, tool_calls, .. } => serde_json::json!({
                    "role": "assistant",
                    "content": content,
                    "toolCalls": tool_calls.iter().map(|c| serde_json::json!({
                        "id": c.id, "name": c.name, "arguments": c.arguments
                    })).collect::<Vec<_>>(),
                }),
                ChatMessage::Tool { tool_call_id, name, content, is_error } => serde_json::json!({
                    "role": "tool", "toolCallId": tool_call_id, "name": name, "content": content,
                    "isError": is_error
                }),
            }).collect::<Vec<_>>(),
            "tools": request.tools.iter().map(|t| t.name.clone()).collect::<Vec<_>>(),
            // The turn's choices are shown; the canned answers do not depend on them.
            "reasoningEffort": request.options.reasoning_effort.map(|e| e.as_str()),
            "outputSchema": request.options.output.as_ref().map(|o| &o.schema),
        })
    }

    fn stream(&self, request: ProviderRequest) -> ProviderStream {
        let turn = self.turn_for(&request);
        let input_chars: usize = request.system.as_ref().map_or(0, |s| s.chars().count())
            + request
                .messages
                .iter()
                .map(|m| m.text().chars().count())
                .sum::<usize>();
        let mut events: Vec<Result<ProviderEvent, ProviderError>> = Vec::new();
        if let Some(reasoning) = &turn.reasoning {
            events.extend(
                split_deltas(reasoning, turn.chunk_chars)
                    .into_iter()
                    .map(|d| Ok(ProviderEvent::ReasoningDelta(d))),
            );
        }
        events.extend(
            split_deltas(&turn.text, turn.chunk_chars)
                .into_iter()
                .map(|d| Ok(ProviderEvent::TextDelta(d))),
        );
        for (index, call) in turn.tool_calls.iter().enumerate() {
            let arguments = serde_json::to_string(&call.arguments).unwrap_or_else(|_| "{}".into());
            events.push(Ok(ProviderEvent::ToolCallStart {
                index,
                id: format!("call_{}", uuid::Uuid::new_v4().simple()),
                name: call.name.clone(),
            }));
            events.push(Ok(ProviderEvent::ToolCallArgsDelta {
                index,
                delta: arguments,
            }));
        }
        match &turn.error {
            Some(error) => events.push(Err(ProviderError::InStream {
                provider: self.id.clone(),
                raw: error.clone(),
            })),
            None => {
                events.push(Ok(ProviderEvent::Finish(if turn.tool_calls.is_empty() {
                    FinishReason::Stop
                } else {
                    FinishReason::ToolCalls
                })));
                events.push(Ok(ProviderEvent::Usage(Usage {
                    input_tokens: rough_tokens(input_chars),
                    output_tokens: rough_tokens(
                        turn.text.chars().count()
                            + turn.reasoning.as_ref().map_or(0, |r| r.chars().count()),
                    ),
                })));
            }
        }
        let delay = Duration::from_millis(turn.delay_ms.unwrap_or(0));
        Box::pin(stream::unfold(
            events.into_iter(),
            move |mut rest| async move {
                let item = rest.next()?;
                if !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
                Some((item, rest))
            },
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;

    #[test]
    fn deltas() {
        let cases: &[(&str, Option<usize>, &[&str])] = &[
            ("Hello big world", None, &["Hello ", "big ", "world"]),
            ("  lead", None, &["  lead"]),
            ("abcdefg", Some(3), &["abc", "def", "g"]),
            ("héllo", Some(2), &["hé", "ll", "o"]),
            ("", None, &[]),
        ];
        for (text, chunk, expected) in cases {
            let got = split_deltas(text, *chunk);
            assert_eq!(got, *expected, "{text:?}");
            assert_eq!(got.concat(), *text);
        }
    }

    fn request(assistant_turns: usize) -> ProviderRequest {
        let mut messages = Vec::new();
        for i in 0..assistant_turns {
            messages.push(ChatMessage::User {
                content: format!("q{i}"),
                images: vec![],
                documents: Vec::new(),
            });
            messages.push(ChatMessage::Assistant {
                content: format!("a{i}"),
                tool_calls: vec![],
                reasoning: vec![],
                order: Vec::new(),
            });
        }
        messages.push(ChatMessage::User {
            content: "last".into(),
            images: vec![],
            documents: Vec::new(),
        });
        ProviderRequest {
            model: "m".into(),
            system: None,
            messages,
            tools: vec![],
            max_output_tokens: None,
            temperature: None,
            options: Default::default(),
        }
    }

    async fn text_of(
        provider: &ScriptedProvider,
        req: ProviderRequest,
    ) -> (String, Option<String>) {
        let answer = crate::provider::complete(provider, req).await;
        (answer.text, answer.error.map(|e| e.to_string()))
    }

    #[tokio::test]
    async fn turns_follow_the_number_of_answers() {
        let script: Script = toml::from_str(
            "[[turns]]\ntext = \"one\"\n[[turns]]\ntext = \"two\"\nerror = \"boom\"\n",
        )
        .unwrap();
        let provider = ScriptedProvider {
            id: "s".into(),
            script: Some(script),
            echo_delay: Duration::ZERO,
        };
        assert_eq!(text_of(&provider, request(0)).await, ("one".into(), None));
        let (text, err) = text_of(&provider, request(1)).await;
        assert_eq!(text, "two");
        assert!(err.unwrap().contains("boom"));
        assert_eq!(text_of(&provider, request(2)).await, ("one".into(), None));
    }

    #[tokio::test]
    async fn turns_can_call_tools() {
        let script: Script = toml::from_str(
            "[[turns]]\ntext = \"Looking.\"\n[[turns.tool_calls]]\nname = \"glob\"\narguments = { pattern = \"*.rs\" }\n",
        )
        .unwrap();
        let provider = ScriptedProvider {
            id: "s".into(),
            script: Some(script),
            echo_delay: Duration::ZERO,
        };
        let events: Vec<ProviderEvent> = provider
            .stream(request(0))
            .map(|e| e.unwrap())
            .collect()
            .await;
        assert!(
            matches!(&events[1], ProviderEvent::ToolCallStart { index: 0, name, .. } if name == "glob")
        );
        assert_eq!(
            events[2],
            ProviderEvent::ToolCallArgsDelta {
                index: 0,
                delta: r#"{"pattern":"*.rs"}"#.into()
            }
        );
        assert_eq!(events[3], ProviderEvent::Finish(FinishReason::ToolCalls));
    }

    #[tokio::test]
    async fn echo_demo_repeats_the_user() {
        let provider = ScriptedProvider {
            id: "demo".into(),
            script: None,
            echo_delay: Duration::ZERO,
        };
        let (text, err) = text_of(&provider, request(0)).await;
        assert!(text.ends_with("You said: last"), "{text}");
        assert_eq!(err, None);
    }
}
