//! The chunk nearly every chat-completions event is: one choice whose delta holds text and
//! nothing else. It is read into borrowed structs, without building a `serde_json::Value`
//! (an `IndexMap` per object: most of the parsing cost of a streamed token). Anything else
//! (a finish reason, usage, tool calls, reasoning, a refusal, an error, a second choice, a
//! field of an unexpected type) is left to the general parser, which gives the same events
//! for a chunk this path takes.

use std::borrow::Cow;

use serde::Deserialize;
use serde::de::IgnoredAny;

use crate::provider::ProviderEvent;

#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(default)]
    error: Option<IgnoredAny>,
    #[serde(default)]
    usage: Option<IgnoredAny>,
    #[serde(default, borrow)]
    choices: Vec<Choice<'a>>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default, borrow)]
    delta: Option<Delta<'a>>,
    #[serde(default)]
    finish_reason: Option<IgnoredAny>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(default, borrow)]
    content: Option<Cow<'a, str>>,
    #[serde(default)]
    reasoning_content: Option<IgnoredAny>,
    #[serde(default)]
    reasoning: Option<IgnoredAny>,
    /// OpenRouter's: `[]` on its text chunks, which stay on this path.
    #[serde(default)]
    reasoning_details: Option<Vec<IgnoredAny>>,
    #[serde(default)]
    refusal: Option<IgnoredAny>,
    #[serde(default)]
    tool_calls: Option<IgnoredAny>,
}

/// The events of a plain text chunk, or `None` when the chunk is anything else.
pub(super) fn plain_text(data: &str) -> Option<Vec<ProviderEvent>> {
    // An object only: derived structs would also take a JSON array by position.
    if !data.trim_start().starts_with('{') {
        return None;
    }
    let chunk: Chunk<'_> = serde_json::from_str(data).ok()?;
    let [choice] = chunk.choices.as_slice() else {
        return None;
    };
    if chunk.error.is_some()
        || chunk.usage.is_some()
        || choice.index.unwrap_or(0) != 0
        || choice.finish_reason.is_some()
    {
        return None;
    }
    let text = match &choice.delta {
        None => None,
        Some(d) => {
            if d.reasoning_content.is_some()
                || d.reasoning.is_some()
                || d.reasoning_details.as_ref().is_some_and(|r| !r.is_empty())
                || d.refusal.is_some()
                || d.tool_calls.is_some()
            {
                return None;
            }
            d.content.as_deref()
        }
    };
    Some(match text {
        Some(text) if !text.is_empty() => vec![ProviderEvent::TextDelta(text.to_owned())],
        _ => Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::openai::{ChunkState, parse_any_chunk};

    /// Every chunk either takes the general parser's path or gives exactly its events.
    #[test]
    fn the_fast_path_agrees_with_the_general_parser_or_stands_aside() {
        let cases: &[(&str, bool)] = &[
            (
                r#"{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}"#,
                true,
            ),
            (
                r#"{"choices":[{"delta":{"role":"assistant","content":""}}]}"#,
                true,
            ),
            (
                r#"{"choices":[{"delta":{"content":"tab\tand \"quotes\" \u00e9"}}]}"#,
                true,
            ),
            (r#"{"choices":[{"delta":{}}]}"#, true),
            (
                r#"{"choices":[{"index":0,"delta":{"content":null}}],"usage":null}"#,
                true,
            ),
            (
                r#"{"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":"stop"}]}"#,
                false,
            ),
            (
                r#"{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4}}"#,
                false,
            ),
            (
                r#"{"choices":[{"delta":{"reasoning_content":"hm"}}]}"#,
                false,
            ),
            (
                r#"{"choices":[{"delta":{"reasoning":"hm","content":"x"}}]}"#,
                false,
            ),
            (r#"{"choices":[{"delta":{"refusal":"no"}}]}"#, false),
            // OpenRouter's text chunk, and one with reasoning details.
            (
                r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":"The","reasoning":null,"reasoning_details":[]},"finish_reason":null}]}"#,
                true,
            ),
            (
                r#"{"choices":[{"index":0,"delta":{"content":"","reasoning":null,"reasoning_details":[{"type":"reasoning.text","signature":"x","index":0}]}}]}"#,
                false,
            ),
            (
                r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"f"}}]}}]}"#,
                false,
            ),
            (
                r#"{"choices":[{"index":1,"delta":{"content":"other"}}]}"#,
                false,
            ),
            (
                r#"{"choices":[{"index":"0","delta":{"content":"odd index"}}]}"#,
                false,
            ),
            (r#"{"choices":[{"delta":{"content":5}}]}"#, false),
            (
                r#"{"choices":[{"delta":{"content":"a"}},{"index":1,"delta":{"content":"b"}}]}"#,
                false,
            ),
            (r#"{"error":{"message":"boom"}}"#, false),
            (
                r#"[null,null,[{"delta":{"content":"by position"}}]]"#,
                false,
            ),
            (
                r#"{"choices":[{"delta":{"content":"a","content":"b"}}]}"#,
                false,
            ),
            ("not json", false),
        ];
        for (data, fast) in cases {
            let taken = plain_text(data);
            assert_eq!(taken.is_some(), *fast, "{data}");
            if let Some(events) = taken {
                let general = parse_any_chunk("p", data, &mut ChunkState::default()).unwrap();
                assert_eq!(events, general, "{data}");
            }
        }
    }
}
