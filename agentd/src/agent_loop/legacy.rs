//! The legacy `<function_call>` text protocol, for models without native function calling.
//!
//! This module owns that protocol's text format: the tool list and the calling instructions
//! put in the system prompt ([`tools_prompt`]), the incremental parser that splits the
//! model's streamed text into plain text and calls ([`LegacyParser`]), and how a call and a
//! result are written back into the transcript ([`render_call`], [`render_result`]). It is
//! pure (no I/O, no async) and knows nothing of tools beyond their names: the agent loop
//! feeds it text deltas and turns its events into tool calls; the tool center validates the
//! arguments.

use serde_json::{Map, Value};

const OPEN: &str = "<function_call>";
const CLOSE: &str = "</function_call>";
const CLOSE_NAME: &str = "function_call";
const RESULT_CLOSE: &str = "</function_call_result>";

/// What the parser found in the model's text.
#[derive(Debug, Clone, PartialEq)]
pub enum LegacyEvent {
    /// Text outside the tags: shown and kept as the assistant's text.
    Text(String),
    /// A well-formed call; `arguments` is always a JSON object.
    Call { name: String, arguments: Value },
    /// A tag whose content is not a call: `raw` is the text inside the tag (or, when
    /// unterminated, everything after the opening tag), `error` says why, for the model.
    Malformed { raw: String, error: String },
}

/// The incremental parser of one assistant message.
///
/// Text outside tags is emitted as soon as it cannot be the start of `<function_call>`
/// (only a trailing prefix such as `<func` is held back). Inside a tag the content is
/// buffered until `</function_call>` (whitespace is allowed after `</` and before `>`), then
/// parsed as JSON, or repaired JSON: an object with a string `name` and an object
/// `arguments` (a string holding a JSON object is accepted; missing or `null` is `{}`;
/// `parameters` is accepted as another name for it), optionally inside a markdown code
/// fence. The first closing tag ends the call, even inside a JSON string. A new
/// `<function_call>` before the closing tag makes the open one `Malformed` (unterminated).
#[derive(Debug, Default)]
pub struct LegacyParser {
    /// Outside a tag: at most a prefix of `<function_call>`. Inside: the content so far.
    buf: String,
    in_tag: bool,
    /// Inside a tag: the byte offset in `buf` before which no tag can start.
    scan_from: usize,
}

enum TagMatch {
    /// The tag is there, this many bytes long.
    Full(usize),
    /// The text ends with what may become the tag.
    Partial,
    No,
}

fn match_open(s: &str) -> TagMatch {
    if s.starts_with(OPEN) {
        TagMatch::Full(OPEN.len())
    } else if OPEN.starts_with(s) {
        TagMatch::Partial
    } else {
        TagMatch::No
    }
}

/// `</function_call>`, also with whitespace after `</` and before `>`.
fn match_close(s: &str) -> TagMatch {
    let Some(rest) = s.strip_prefix("</") else {
        return if "</".starts_with(s) { TagMatch::Partial } else { TagMatch::No };
    };
    let rest = rest.trim_start();
    if rest.is_empty() {
        return TagMatch::Partial;
    }
    let Some(after) = rest.strip_prefix(CLOSE_NAME) else {
        return if CLOSE_NAME.starts_with(rest) { TagMatch::Partial } else { TagMatch::No };
    };
    let after = after.trim_start();
    match after.chars().next() {
        None => TagMatch::Partial,
        Some('>') => TagMatch::Full(s.len() - after.len() + 1),
        Some(_) => TagMatch::No,
    }
}

enum InTag {
    /// The closing tag spans these bytes.
    Close(usize, usize),
    /// A new opening tag spans these bytes.
    Reopen(usize, usize),
    /// No tag yet; a tag may start at this offset or later.
    Wait(usize),
}

impl LegacyParser {
    pub fn new() -> Self {
        LegacyParser::default()
    }

    /// Feeds the next piece of the model's text.
    pub fn push(&mut self, chunk: &str) -> Vec<LegacyEvent> {
        self.buf.push_str(chunk);
        let mut events = Vec::new();
        loop {
            if self.in_tag {
                match self.find_in_tag() {
                    InTag::Close(start, end) => {
                        events.push(parse_call(&self.buf[..start]));
                        self.buf.drain(..end);
                        self.in_tag = false;
                        self.scan_from = 0;
                    }
                    InTag::Reopen(start, end) => {
                        events.push(LegacyEvent::Malformed {
                            raw: self.buf[..start].to_owned(),
                            error: "unterminated <function_call>: a new <function_call> began \
                                    before </function_call>"
                                .to_owned(),
                        });
                        self.buf.drain(..end);
                        self.scan_from = 0;
                    }
                    InTag::Wait(from) => {
                        self.scan_from = from;
                        return events;
                    }
                }
            } else {
                let mut held = None;
                for (j, _) in self.buf.match_indices('<') {
                    match match_open(&self.buf[j..]) {
                        TagMatch::Full(n) => {
                            held = Some((j, Some(n)));
                            break;
                        }
                        TagMatch::Partial => {
                            held = Some((j, None));
                            break;
                        }
                        TagMatch::No => {}
                    }
                }
                let text_end = held.map_or(self.buf.len(), |(j, _)| j);
                if text_end > 0 {
                    events.push(LegacyEvent::Text(self.buf[..text_end].to_owned()));
                }
                match held {
                    Some((j, Some(n))) => {
                        self.buf.drain(..j + n);
                        self.in_tag = true;
                        self.scan_from = 0;
                    }
                    Some((j, None)) => {
                        self.buf.drain(..j);
                        return events;
                    }
                    None => {
                        self.buf.clear();
                        return events;
                    }
                }
            }
        }
    }

    /// The end of the text: flushes held text; an open tag is `Malformed` (unterminated).
    pub fn finish(&mut self) -> Vec<LegacyEvent> {
        let rest = std::mem::take(&mut self.buf);
        let in_tag = std::mem::replace(&mut self.in_tag, false);
        self.scan_from = 0;
        if in_tag {
            vec![LegacyEvent::Malformed {
                raw: rest,
                error: "unterminated <function_call>: the text ended before </function_call>"
                    .to_owned(),
            }]
        } else if rest.is_empty() {
            Vec::new()
        } else {
            vec![LegacyEvent::Text(rest)]
        }
    }

    fn find_in_tag(&self) -> InTag {
        let from = self.scan_from.min(self.buf.len());
        for (j, _) in self.buf[from..].match_indices('<') {
            let j = from + j;
            let rest = &self.buf[j..];
            match (match_close(rest), match_open(rest)) {
                (TagMatch::Full(n), _) => return InTag::Close(j, j + n),
                (_, TagMatch::Full(n)) => return InTag::Reopen(j, j + n),
                // A partial tag runs to the end of the buffer: nothing can start later.
                (TagMatch::Partial, _) | (_, TagMatch::Partial) => return InTag::Wait(j),
                _ => {}
            }
        }
        InTag::Wait(self.buf.len())
    }
}

/// Removes a markdown code fence (```` ```json ... ``` ````) around the content.
fn strip_fence(content: &str) -> &str {
    let Some(rest) = content.strip_prefix("```") else { return content };
    let rest = match rest.split_once('\n') {
        Some((_language, body)) => body,
        None => rest.trim_start_matches(|c: char| c.is_ascii_alphanumeric()),
    };
    let rest = rest.trim_end();
    rest.strip_suffix("```").unwrap_or(rest).trim()
}

/// JSON, else JSON repaired; the error is the strict parser's.
fn parse_json(text: &str) -> Result<Value, String> {
    serde_json::from_str(text).or_else(|strict| {
        jsonrepair::loads(text, &jsonrepair::Options::default())
            .map_err(|_| format!("not valid JSON ({strict})"))
    })
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The content of one `<function_call>` tag.
fn parse_call(raw: &str) -> LegacyEvent {
    match call_from(raw) {
        Ok((name, arguments)) => LegacyEvent::Call { name, arguments },
        Err(error) => LegacyEvent::Malformed { raw: raw.to_owned(), error },
    }
}

fn call_from(raw: &str) -> Result<(String, Value), String> {
    const SHAPE: &str = r#"expected {"name": "<tool>", "arguments": {...}}"#;
    let body = strip_fence(raw.trim());
    if body.is_empty() {
        return Err(format!("empty <function_call>: {SHAPE}"));
    }
    let value = parse_json(body).map_err(|e| format!("{e}: {SHAPE}"))?;
    let Value::Object(mut call) = value else {
        return Err(format!("the call is {}, {SHAPE}", json_type(&value)));
    };
    let name = match call.remove("name") {
        Some(Value::String(name)) if !name.trim().is_empty() => name.trim().to_owned(),
        Some(other) => return Err(format!("\"name\" must be a non-empty string, not {}", json_type(&other))),
        None => return Err(format!("missing \"name\": {SHAPE}")),
    };
    let arguments = match call.remove("arguments").or_else(|| call.remove("parameters")) {
        None | Some(Value::Null) => Value::Object(Map::new()),
        Some(Value::Object(arguments)) => Value::Object(arguments),
        Some(Value::String(text)) if text.trim().is_empty() => Value::Object(Map::new()),
        Some(Value::String(text)) => match parse_json(text.trim()) {
            Ok(Value::Object(arguments)) => Value::Object(arguments),
            Ok(other) => {
                return Err(format!("\"arguments\" must be a JSON object, not {}", json_type(&other)));
            }
            Err(e) => return Err(format!("\"arguments\" is a string that is {e}")),
        },
        Some(other) => {
            return Err(format!("\"arguments\" must be a JSON object, not {}", json_type(&other)));
        }
    };
    Ok((name, arguments))
}

/// An example call for the first tool, from its schema (a placeholder per parameter).
fn example_call(name: &str, schema: &Value) -> String {
    let mut arguments = Map::new();
    let properties = schema.get("properties").and_then(Value::as_object);
    let required = schema.get("required").and_then(Value::as_array);
    let first = required
        .and_then(|r| r.iter().find_map(Value::as_str))
        .or_else(|| properties.and_then(|p| p.keys().next().map(String::as_str)));
    if let Some(parameter) = first {
        let kind = properties
            .and_then(|p| p.get(parameter))
            .and_then(|p| p.get("type"))
            .and_then(Value::as_str);
        let placeholder = match kind {
            Some("integer" | "number") => Value::from(1),
            Some("boolean") => Value::Bool(true),
            Some("array") => Value::Array(Vec::new()),
            Some("object") => Value::Object(Map::new()),
            _ => Value::from("..."),
        };
        arguments.insert(parameter.to_owned(), placeholder);
    }
    render_call(name, &Value::Object(arguments))
}

/// The system-prompt section for models without native function calling: each tool
/// (name, description, parameters as compact JSON Schema) and the calling rules. Empty
/// when there are no tools.
pub fn tools_prompt(tools: &[(String, String, Value)]) -> String {
    let Some((first_name, _, first_schema)) = tools.first() else { return String::new() };
    let mut out = String::from(
        "# Tools\n\nYou can use the tools below. Each has a name, a description and its \
         parameters as a JSON Schema.\n",
    );
    for (name, description, schema) in tools {
        out.push_str(&format!("\n## {name}\n{}\nParameters: {schema}\n", description.trim()));
    }
    out.push_str(&format!(
        "\n# How to call a tool\n\n\
         To call a tool, write a {OPEN} tag holding one JSON object with the tool's \"name\" \
         and its \"arguments\" (an object that matches the tool's parameters), then \
         {CLOSE}. For example:\n\n\
         {example}\n\n\
         Rules:\n\
         - Write the tags exactly as shown. The content must be valid JSON: double quotes, \
         no comments, no trailing commas. Use only the tools listed above.\n\
         - One call per tag. To call several tools, write several tags one after another.\n\
         - After your calls, stop and wait. Each result comes back in the next message as \
         <function_call_result name=\"...\" id=\"...\">...{RESULT_CLOSE}.\n\
         - Do not assume what a tool returned before you have read its \
         <function_call_result>. Never write <function_call_result> yourself and never \
         invent tool results.\n\
         - Text outside the tags is your answer to the user. If you need no tool, just \
         answer.\n",
        example = example_call(first_name, first_schema),
    ));
    out
}

/// A call as the assistant wrote it, for the transcript of the next step. A `</` inside
/// the JSON is written `<\/` (the same string in JSON), so the tag cannot end early.
pub fn render_call(name: &str, arguments: &Value) -> String {
    let json = format!(r#"{{"name":{},"arguments":{arguments}}}"#, Value::from(name));
    format!("{OPEN}{}{CLOSE}", json.replace("</", "<\\/"))
}

/// A tool result for the transcript. The content is not escaped, except that a literal
/// `</function_call_result>` inside it is written `<\/function_call_result>` so it cannot
/// end the block early; `&` and `"` are escaped in the attributes.
pub fn render_result(name: &str, id: &str, content: &str) -> String {
    format!(
        "<function_call_result name=\"{}\" id=\"{}\">{}{RESULT_CLOSE}",
        escape_attribute(name),
        escape_attribute(id),
        content.replace(RESULT_CLOSE, "<\\/function_call_result>"),
    )
}

fn escape_attribute(value: &str) -> String {
    value.replace('&', "&amp;").replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// An expected event; `Bad` holds the raw text and a piece of the error.
    #[derive(Debug)]
    enum Ev {
        Text(&'static str),
        Call(&'static str, Value),
        Bad(&'static str, &'static str),
    }

    /// Adjacent `Text` events merged: how text is split is not part of the contract.
    fn merged(events: Vec<LegacyEvent>) -> Vec<LegacyEvent> {
        let mut out: Vec<LegacyEvent> = Vec::new();
        for event in events {
            if let (Some(LegacyEvent::Text(last)), LegacyEvent::Text(text)) = (out.last_mut(), &event) {
                last.push_str(text);
                continue;
            }
            out.push(event);
        }
        out
    }

    /// Feeds `input` in chunks of `size` chars (0: whole).
    fn feed(input: &str, size: usize) -> Vec<LegacyEvent> {
        let mut parser = LegacyParser::new();
        let mut events = Vec::new();
        let chars: Vec<char> = input.chars().collect();
        let size = if size == 0 { chars.len().max(1) } else { size };
        for chunk in chars.chunks(size) {
            events.extend(parser.push(&chunk.iter().collect::<String>()));
        }
        events.extend(parser.finish());
        merged(events)
    }

    fn matches(event: &LegacyEvent, expected: &Ev) -> bool {
        match (event, expected) {
            (LegacyEvent::Text(text), Ev::Text(want)) => text == want,
            (LegacyEvent::Call { name, arguments }, Ev::Call(want_name, want_args)) => {
                name == want_name && arguments == want_args
            }
            (LegacyEvent::Malformed { raw, error }, Ev::Bad(want_raw, want_error)) => {
                raw == want_raw && error.contains(want_error)
            }
            _ => false,
        }
    }

    #[test]
    fn parses_the_same_in_any_chunking() {
        let cases: Vec<(&str, Vec<Ev>)> = vec![
            ("Hello, world.", vec![Ev::Text("Hello, world.")]),
            ("", vec![]),
            (
                "Let me look. <function_call>{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.rs\"}}</function_call>",
                vec![Ev::Text("Let me look. "), Ev::Call("read_file", json!({"path": "a.rs"}))],
            ),
            (
                "a<function_call>{\"name\":\"ls\",\"arguments\":{}}</function_call>b<function_call>{\"name\":\"glob\",\"arguments\":{\"pattern\":\"*.rs\"}}</function_call>c",
                vec![
                    Ev::Text("a"),
                    Ev::Call("ls", json!({})),
                    Ev::Text("b"),
                    Ev::Call("glob", json!({"pattern": "*.rs"})),
                    Ev::Text("c"),
                ],
            ),
            (
                "<function_call>{\"name\":\"a\",\"arguments\":{}}</function_call><function_call>{\"name\":\"b\",\"arguments\":{}}</function_call>",
                vec![Ev::Call("a", json!({})), Ev::Call("b", json!({}))],
            ),
            (
                "<function_call>\n  {\"name\": \"ls\", \"arguments\": {\"path\": \".\"}}\n</function_call>\nDone.",
                vec![Ev::Call("ls", json!({"path": "."})), Ev::Text("\nDone.")],
            ),
            (
                "<function_call>{\"name\":\"ls\"}</ function_call >x",
                vec![Ev::Call("ls", json!({})), Ev::Text("x")],
            ),
            ("<function_call>{\"name\":\"ls\"}</function_call\n>", vec![Ev::Call("ls", json!({}))]),
            (
                "<function_call>\n```json\n{\"name\": \"ls\", \"arguments\": {\"path\": \"src\"}}\n```\n</function_call>",
                vec![Ev::Call("ls", json!({"path": "src"}))],
            ),
            (
                "<function_call>{'name': 'grep', 'arguments': {'pattern': 'fn main'}}</function_call>",
                vec![Ev::Call("grep", json!({"pattern": "fn main"}))],
            ),
            (
                "<function_call>{\"name\": \"ls\", \"arguments\": {\"path\": \".\",},}</function_call>",
                vec![Ev::Call("ls", json!({"path": "."}))],
            ),
            (
                "<function_call>{name: \"ls\", arguments: {path: \"docs\"}}</function_call>",
                vec![Ev::Call("ls", json!({"path": "docs"}))],
            ),
            (
                "<function_call>{\"name\": \"ls\", \"arguments\": \"{\\\"path\\\": \\\"x\\\"}\"}</function_call>",
                vec![Ev::Call("ls", json!({"path": "x"}))],
            ),
            (
                "<function_call>{\"name\": \"ls\", \"arguments\": \"\"}</function_call>",
                vec![Ev::Call("ls", json!({}))],
            ),
            (
                "<function_call>{\"name\": \"ls\", \"parameters\": {\"path\": \"p\"}}</function_call>",
                vec![Ev::Call("ls", json!({"path": "p"}))],
            ),
            (
                "<function_call>{\"name\": \"write_file\", \"arguments\": {\"content\": \"a < b <func\"}}</function_call>",
                vec![Ev::Call("write_file", json!({"content": "a < b <func"}))],
            ),
            (
                "<function_call>{\"arguments\": {}}</function_call>",
                vec![Ev::Bad("{\"arguments\": {}}", "missing \"name\"")],
            ),
            (
                "<function_call>{\"name\": 3}</function_call>",
                vec![Ev::Bad("{\"name\": 3}", "\"name\" must be a non-empty string")],
            ),
            (
                "<function_call>[1, 2]</function_call>",
                vec![Ev::Bad("[1, 2]", "the call is an array")],
            ),
            (
                "<function_call>{\"name\": \"ls\", \"arguments\": [1]}</function_call>",
                vec![Ev::Bad("{\"name\": \"ls\", \"arguments\": [1]}", "must be a JSON object")],
            ),
            (
                "<function_call>please list the files</function_call>ok",
                vec![Ev::Bad("please list the files", "expected {\"name\""), Ev::Text("ok")],
            ),
            ("<function_call> </function_call>", vec![Ev::Bad(" ", "empty")]),
            (
                "Sure. <function_call>{\"name\": \"ls\", \"arguments\": {",
                vec![Ev::Text("Sure. "), Ev::Bad("{\"name\": \"ls\", \"arguments\": {", "unterminated")],
            ),
            (
                "<function_call>{\"name\":\"a\"<function_call>{\"name\":\"b\"}</function_call>",
                vec![Ev::Bad("{\"name\":\"a\"", "unterminated"), Ev::Call("b", json!({}))],
            ),
            ("if a < b then", vec![Ev::Text("if a < b then")]),
            ("<functional> programming", vec![Ev::Text("<functional> programming")]),
            ("x <function_call_result> y", vec![Ev::Text("x <function_call_result> y")]),
            ("</function_call> stray", vec![Ev::Text("</function_call> stray")]),
            ("ends with <func", vec![Ev::Text("ends with <func")]),
            ("ends with <", vec![Ev::Text("ends with <")]),
            ("<<<function_call>{\"name\":\"ls\"}</function_call>", vec![Ev::Text("<<"), Ev::Call("ls", json!({}))]),
            (
                "Grüße 👋 <function_call>{\"name\":\"echo\",\"arguments\":{\"text\":\"héllo ✓\"}}</function_call> ✓",
                vec![Ev::Text("Grüße 👋 "), Ev::Call("echo", json!({"text": "héllo ✓"})), Ev::Text(" ✓")],
            ),
        ];
        for (input, expected) in &cases {
            let whole = feed(input, 0);
            let ok = whole.len() == expected.len() && whole.iter().zip(expected).all(|(e, x)| matches(e, x));
            assert!(ok, "input {input:?}\n got {whole:?}\nwant {expected:?}");
            for size in [1, 2, 3, 7] {
                assert_eq!(feed(input, size), whole, "input {input:?} in chunks of {size}");
            }
        }
    }

    #[test]
    fn text_streams_as_early_as_possible() {
        let mut parser = LegacyParser::new();
        let steps: Vec<(&str, Vec<LegacyEvent>)> = vec![
            ("Hello <func", vec![LegacyEvent::Text("Hello ".into())]),
            ("tion_call>{\"name\"", vec![]),
            (":\"ls\"}</funct", vec![]),
            ("ion_call> and", vec![
                LegacyEvent::Call { name: "ls".into(), arguments: json!({}) },
                LegacyEvent::Text(" and".into()),
            ]),
            (" a < b", vec![LegacyEvent::Text(" a < b".into())]),
            (" <", vec![LegacyEvent::Text(" ".into())]),
            ("x", vec![LegacyEvent::Text("<x".into())]),
            ("<function_ca", vec![]),
        ];
        for (chunk, expected) in steps {
            assert_eq!(parser.push(chunk), expected, "after {chunk:?}");
        }
        assert_eq!(parser.finish(), vec![LegacyEvent::Text("<function_ca".into())]);
        // The parser is reusable after finish.
        assert_eq!(parser.push("again"), vec![LegacyEvent::Text("again".into())]);
        assert_eq!(parser.finish(), vec![]);
    }

    #[test]
    fn rendered_calls_parse_back() {
        let cases = [
            ("read_file", json!({"path": "src/main.rs", "limit": 10})),
            ("write_file", json!({"path": "p.md", "content": "x </function_call> y\n\"q\""})),
            ("ls", json!({})),
        ];
        for (name, arguments) in cases {
            let text = render_call(name, &arguments);
            assert!(text.starts_with("<function_call>{\"name\":"), "{text}");
            assert_eq!(text.matches(CLOSE).count(), 1, "{text}");
            let events = feed(&text, 0);
            assert_eq!(events, vec![LegacyEvent::Call { name: name.to_owned(), arguments }]);
        }
    }

    #[test]
    fn renders_results() {
        let cases = [
            (("bash", "call_1", "exit code 0"), "<function_call_result name=\"bash\" id=\"call_1\">exit code 0</function_call_result>"),
            (
                ("read_file", "c2", "a</function_call_result>b <x> & \"q\""),
                "<function_call_result name=\"read_file\" id=\"c2\">a<\\/function_call_result>b <x> & \"q\"</function_call_result>",
            ),
            (("we\"ird&", "i\"d", ""), "<function_call_result name=\"we&quot;ird&amp;\" id=\"i&quot;d\"></function_call_result>"),
        ];
        for ((name, id, content), expected) in cases {
            assert_eq!(render_result(name, id, content), expected);
        }
    }

    #[test]
    fn tools_prompt_lists_tools_and_rules() {
        let tools = vec![
            (
                "read_file".to_owned(),
                "Reads a file.\n".to_owned(),
                json!({"type": "object", "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}}, "required": ["path"]}),
            ),
            ("ls".to_owned(), "Lists a directory.".to_owned(), json!({"type": "object"})),
        ];
        let prompt = tools_prompt(&tools);
        for needle in [
            "## read_file\nReads a file.\nParameters: {\"properties\":{\"limit\":{\"type\":\"integer\"},\"path\":{\"type\":\"string\"}},\"required\":[\"path\"],\"type\":\"object\"}\n",
            "## ls\nLists a directory.\nParameters: {\"type\":\"object\"}\n",
            "<function_call>{\"name\":\"read_file\",\"arguments\":{\"path\":\"...\"}}</function_call>",
            "One call per tag",
            "several tags",
            "<function_call_result name=\"...\" id=\"...\">",
            "never invent tool results",
        ] {
            assert!(prompt.contains(needle), "missing {needle:?} in:\n{prompt}");
        }
        // The example in the prompt is a call the parser accepts.
        let example = prompt.lines().find(|l| l.starts_with("<function_call>")).unwrap_or_default();
        assert_eq!(
            feed(example, 0),
            vec![LegacyEvent::Call { name: "read_file".into(), arguments: json!({"path": "..."}) }]
        );
        assert_eq!(tools_prompt(&[]), "");
    }
}
