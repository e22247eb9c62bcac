//! Reading the legacy `<function_call>` text protocol out of a streamed answer, for models
//! without native function calling.
//!
//! The model answers with `<function_call>{"name": "...", "arguments": {...}}</function_call>`
//! in its text. [`LegacyParser`] finds those tags in the stream as it arrives (a tag split
//! across any chunks works) and lets the text around them stream on. How the tools, calls
//! and results are written for the model is `context::legacy`'s.

use serde_json::{Value, json};

use crate::context::legacy::{CLOSE, OPEN};

#[derive(Debug, Clone, PartialEq)]
pub enum LegacyEvent {
    Text(String),
    Call { name: String, arguments: Value },
    Malformed { raw: String, error: String },
}

/// Incremental parser of a streamed answer.
#[derive(Debug, Default)]
pub struct LegacyParser {
    buf: String,
    in_tag: bool,
    /// In a tag: how much of `buf` is known to hold no closing tag (a search goes on from
    /// there, so a long call costs its length once, not once per chunk).
    scanned: usize,
}

impl LegacyParser {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds a chunk; returns what it completed.
    pub fn push(&mut self, chunk: &str) -> Vec<LegacyEvent> {
        self.buf.push_str(chunk);
        let mut out = Vec::new();
        loop {
            if self.in_tag {
                let from = self.buf.floor_char_boundary(self.scanned);
                let Some(end) = self.buf[from..].find(CLOSE).map(|i| i + from) else {
                    self.scanned = self.buf.len().saturating_sub(CLOSE.len() - 1);
                    break;
                };
                let content: String = self.buf[..end].to_owned();
                self.buf.drain(..end + CLOSE.len());
                self.in_tag = false;
                self.scanned = 0;
                out.push(parse_call(&content));
            } else if let Some(start) = self.buf.find(OPEN) {
                if start > 0 {
                    out.push(LegacyEvent::Text(self.buf[..start].to_owned()));
                }
                self.buf.drain(..start + OPEN.len());
                self.in_tag = true;
            } else {
                // Hold back only what could be the start of a tag.
                let hold = (1..OPEN.len())
                    .rev()
                    .find(|&k| self.buf.ends_with(&OPEN[..k]))
                    .unwrap_or(0);
                let emit = self.buf.len() - hold;
                if emit > 0 {
                    out.push(LegacyEvent::Text(self.buf[..emit].to_owned()));
                    self.buf.drain(..emit);
                }
                break;
            }
        }
        out
    }

    /// Bytes of the call being written (after its opening tag); 0 outside a call.
    pub fn open_call_bytes(&self) -> usize {
        if self.in_tag { self.buf.len() } else { 0 }
    }

    /// Ends the stream: held text is released; an open tag is malformed.
    pub fn finish(&mut self) -> Vec<LegacyEvent> {
        let rest = std::mem::take(&mut self.buf);
        self.scanned = 0;
        if self.in_tag {
            self.in_tag = false;
            return vec![LegacyEvent::Malformed {
                raw: format!("{OPEN}{rest}"),
                error: "the <function_call> tag was never closed".into(),
            }];
        }
        if rest.is_empty() {
            Vec::new()
        } else {
            vec![LegacyEvent::Text(rest)]
        }
    }
}

fn parse_call(content: &str) -> LegacyEvent {
    let malformed = |error: &str| LegacyEvent::Malformed {
        raw: format!("{OPEN}{content}{CLOSE}"),
        error: error.to_owned(),
    };
    let mut body = content.trim();
    if let Some(fenced) = body.strip_prefix("```") {
        body = fenced
            .trim_start_matches(|c: char| c.is_ascii_alphanumeric())
            .trim()
            .trim_end_matches("```")
            .trim();
    }
    let value = serde_json::from_str::<Value>(body)
        .ok()
        .or_else(|| jsonrepair::loads(body, &jsonrepair::Options::default()).ok());
    let Some(Value::Object(mut call)) = value else {
        return malformed("the content is not a JSON object");
    };
    let Some(Value::String(name)) = call.remove("name") else {
        return malformed("the call has no \"name\" string");
    };
    let arguments = match call.remove("arguments") {
        None | Some(Value::Null) => json!({}),
        Some(Value::Object(map)) => Value::Object(map),
        Some(Value::String(text)) => match serde_json::from_str::<Value>(&text)
            .ok()
            .or_else(|| jsonrepair::loads(&text, &jsonrepair::Options::default()).ok())
        {
            Some(Value::Object(map)) => Value::Object(map),
            _ => return malformed("\"arguments\" is a string that does not hold a JSON object"),
        },
        Some(_) => return malformed("\"arguments\" must be an object"),
    };
    LegacyEvent::Call { name, arguments }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `input` in chunks of `size` and merges adjacent texts.
    fn parse(input: &str, size: usize) -> Vec<LegacyEvent> {
        let chars: Vec<char> = input.chars().collect();
        let mut parser = LegacyParser::new();
        let mut events = Vec::new();
        for chunk in chars.chunks(size.max(1)) {
            events.extend(parser.push(&chunk.iter().collect::<String>()));
        }
        events.extend(parser.finish());
        let mut merged: Vec<LegacyEvent> = Vec::new();
        for event in events {
            match (merged.last_mut(), event) {
                (Some(LegacyEvent::Text(a)), LegacyEvent::Text(b)) => a.push_str(&b),
                (_, event) => merged.push(event),
            }
        }
        merged
    }

    fn text(s: &str) -> LegacyEvent {
        LegacyEvent::Text(s.into())
    }

    fn call(name: &str, arguments: Value) -> LegacyEvent {
        LegacyEvent::Call {
            name: name.into(),
            arguments,
        }
    }

    #[test]
    fn chunking_never_changes_the_result() {
        let cases: Vec<(&str, Vec<LegacyEvent>)> = vec![
            ("just text", vec![text("just text")]),
            (
                "Let me look. <function_call>{\"name\": \"glob\", \"arguments\": {\"pattern\": \"*.rs\"}}</function_call> Done.",
                vec![
                    text("Let me look. "),
                    call("glob", json!({"pattern": "*.rs"})),
                    text(" Done."),
                ],
            ),
            (
                "<function_call>{\"name\":\"a\",\"arguments\":{}}</function_call><function_call>{\"name\":\"b\"}</function_call>",
                vec![call("a", json!({})), call("b", json!({}))],
            ),
            (
                "<function_call>{'name': 'read_file', 'arguments': {path: 'x', }}</function_call>",
                vec![call("read_file", json!({"path": "x"}))],
            ),
            (
                "<function_call>{\"name\": \"bash\", \"arguments\": \"{\\\"command\\\": \\\"ls\\\"}\"}</function_call>",
                vec![call("bash", json!({"command": "ls"}))],
            ),
            (
                "<function_call>\n```json\n{\"name\": \"ls\"}\n```\n</function_call>",
                vec![call("ls", json!({}))],
            ),
            (
                "a < b and <functional> stuff <function",
                vec![text("a < b and <functional> stuff <function")],
            ),
            (
                "<function_call>{\"arguments\": {}}</function_call>",
                vec![LegacyEvent::Malformed {
                    raw: "<function_call>{\"arguments\": {}}</function_call>".into(),
                    error: "the call has no \"name\" string".into(),
                }],
            ),
            (
                "x <function_call>{\"name\": \"a\"",
                vec![
                    text("x "),
                    LegacyEvent::Malformed {
                        raw: "<function_call>{\"name\": \"a\"".into(),
                        error: "the <function_call> tag was never closed".into(),
                    },
                ],
            ),
        ];
        for (input, expected) in cases {
            for size in [1, 2, 3, 7, 1000] {
                assert_eq!(
                    parse(input, size),
                    expected,
                    "{input:?} in chunks of {size}"
                );
            }
        }
    }

    #[test]
    fn text_streams_before_a_tag_completes() {
        let mut parser = LegacyParser::new();
        assert_eq!(parser.push("Hello <func"), vec![text("Hello ")]);
        assert_eq!(parser.push("tion_call>{\"name\":"), vec![]);
        assert_eq!(
            parser.push("\"x\"}</function_call>!"),
            vec![call("x", json!({})), text("!")]
        );
        let garbage = parse("<function_call>not json at all</function_call>", 4);
        assert!(
            matches!(&garbage[0], LegacyEvent::Malformed { error, .. } if error.contains("not a JSON object"))
        );
    }

    #[test]
    fn a_rendered_call_parses_back_to_itself() {
        use crate::context::legacy::render_call;
        assert_eq!(
            parse(&render_call("bash", &json!({"command": "ls"})), 5),
            vec![call("bash", json!({"command": "ls"}))]
        );
    }
}
