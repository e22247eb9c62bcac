//! The legacy `<function_call>` text protocol, for models without native function calling.
//!
//! The tools are described in the system prompt ([`tools_prompt`]) and the model answers
//! with `<function_call>{"name": "...", "arguments": {...}}</function_call>` in its text.
//! [`LegacyParser`] finds those tags in the stream as it arrives (a tag split across any
//! chunks works) and lets the text around them stream on. Calls and results go back to the
//! model as text ([`render_call`], [`render_result`]).

use serde_json::{Value, json};

use crate::provider::ToolSpec;

const OPEN: &str = "<function_call>";
const CLOSE: &str = "</function_call>";
const RESULT_CLOSE: &str = "</function_call_result>";

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
                let Some(end) = self.buf.find(CLOSE) else {
                    break;
                };
                let content: String = self.buf[..end].to_owned();
                self.buf.drain(..end + CLOSE.len());
                self.in_tag = false;
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

    /// Ends the stream: held text is released; an open tag is malformed.
    pub fn finish(&mut self) -> Vec<LegacyEvent> {
        let rest = std::mem::take(&mut self.buf);
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

/// The system prompt section describing the tools and how to call them.
pub fn tools_prompt(tools: &[ToolSpec]) -> String {
    let mut out = String::from(
        "You can use tools. To call a tool, write a tag exactly like this, with a JSON object \
         inside:\n\
         <function_call>{\"name\": \"TOOL_NAME\", \"arguments\": {\"ARG\": \"VALUE\"}}</function_call>\n\
         Rules: one call per tag; you may write several tags in one answer; after your answer \
         the results come back as <function_call_result name=\"...\" id=\"...\">...</function_call_result>. \
         Wait for them: never invent a result. When you need no tool, just answer.\n\nTools:\n",
    );
    for tool in tools {
        out.push_str(&format!(
            "- {}: {}\n  arguments schema: {}\n",
            tool.name, tool.description, tool.parameters
        ));
    }
    out
}

/// A call as it appears in the assistant's text.
pub fn render_call(name: &str, arguments: &Value) -> String {
    format!(
        "{OPEN}{}{CLOSE}",
        json!({"name": name, "arguments": arguments})
    )
}

/// A result as the model gets it back.
pub fn render_result(name: &str, id: &str, content: &str) -> String {
    let attr = |s: &str| s.replace('&', "&amp;").replace('"', "&quot;");
    let content = content.replace(RESULT_CLOSE, "<\\/function_call_result>");
    format!(
        "<function_call_result name=\"{}\" id=\"{}\">{content}{RESULT_CLOSE}",
        attr(name),
        attr(id)
    )
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
    fn rendering() {
        assert_eq!(
            render_call("bash", &json!({"command": "ls"})),
            "<function_call>{\"arguments\":{\"command\":\"ls\"},\"name\":\"bash\"}</function_call>"
        );
        assert_eq!(
            render_result("a\"b", "id1", "out</function_call_result>more"),
            "<function_call_result name=\"a&quot;b\" id=\"id1\">out<\\/function_call_result>more</function_call_result>"
        );
        let prompt = tools_prompt(&[ToolSpec {
            name: "glob".into(),
            description: "find files".into(),
            parameters: json!({"type": "object"}),
        }]);
        assert!(prompt.contains("<function_call>{\"name\": \"TOOL_NAME\""));
        assert!(prompt.contains("- glob: find files\n  arguments schema: {\"type\":\"object\"}"));
        // A rendered call parses back to itself.
        assert_eq!(
            parse(&render_call("bash", &json!({"command": "ls"})), 5),
            vec![call("bash", json!({"command": "ls"}))]
        );
    }
}
