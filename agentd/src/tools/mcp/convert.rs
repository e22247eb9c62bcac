//! Mapping MCP's shapes to ours: tool definitions (with a permission level from their
//! annotations) and call results (text, images, resources) to a tool result. Works on the
//! JSON form of rmcp's types, which keeps it independent of their Rust layout.

use agent_proto::PermissionLevel;
use base64::Engine;
use serde_json::Value;

/// A tool as a server lists it (also the cached form in the store).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ToolDef {
    pub name: String,
    pub description: String,
    pub schema: Value,
    pub level: PermissionLevel,
}

/// The level of a tool from its annotations: destructive (or no annotations) is execute,
/// open-world is network, read-only is read. Hints are hints: the safer reading wins.
pub fn level_of(annotations: &Value) -> PermissionLevel {
    let hint = |name: &str| annotations.get(name).and_then(Value::as_bool);
    if hint("destructiveHint") == Some(true) {
        PermissionLevel::Execute
    } else if hint("openWorldHint") == Some(true) {
        PermissionLevel::Network
    } else if hint("readOnlyHint") == Some(true) {
        PermissionLevel::Read
    } else {
        PermissionLevel::Execute
    }
}

/// Longest tool description sent to the model; the rest is cut.
pub const MAX_DESCRIPTION_CHARS: usize = 4096;

/// Longest tool name kept in a skip reason.
const MAX_SKIPPED_NAME_CHARS: usize = 200;

/// A tool left out of a listing, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub name: Option<String>,
    pub reason: String,
}

impl Skipped {
    fn new(tool: &Value, reason: impl Into<String>) -> Skipped {
        Skipped {
            name: tool
                .get("name")
                .and_then(Value::as_str)
                .map(|n| n.chars().take(MAX_SKIPPED_NAME_CHARS).collect()),
            reason: reason.into(),
        }
    }
}

/// A tool definition from its JSON (one item of `tools/list`), or why it cannot be
/// offered: no name, a description that is not text, no input schema, a schema that is
/// not an object schema providers accept (or not valid JSON Schema), or one over
/// `max_schema_bytes`. A schema without `type` gets `"type": "object"`.
pub fn tool_def(tool: &Value, max_schema_bytes: usize) -> Result<ToolDef, Skipped> {
    let skip = |reason: String| Skipped::new(tool, reason);
    if !tool.is_object() {
        return Err(skip(format!(
            "the list item is not an object: {}",
            crate::provider::excerpt(&tool.to_string(), 100)
        )));
    }
    let name = match tool.get("name") {
        Some(Value::String(name)) if !name.is_empty() => name.clone(),
        Some(Value::String(_)) => return Err(skip("its name is empty".into())),
        None | Some(Value::Null) => return Err(skip("it has no name".into())),
        Some(other) => return Err(skip(format!("its name is not text: {other}"))),
    };
    let text_of = |key: &str| match tool.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.as_str())),
        Some(other) => Err(skip(format!(
            "its {key} is not text: {}",
            crate::provider::excerpt(&other.to_string(), 100)
        ))),
    };
    let description = text_of("description")?
        .or(text_of("title")?)
        .unwrap_or_default();
    let description = if description.chars().count() > MAX_DESCRIPTION_CHARS {
        let cut: String = description.chars().take(MAX_DESCRIPTION_CHARS).collect();
        format!("{cut}…")
    } else {
        description.to_owned()
    };
    let schema = input_schema(tool.get("inputSchema"), max_schema_bytes).map_err(skip)?;
    Ok(ToolDef {
        description,
        level: level_of(tool.get("annotations").unwrap_or(&Value::Null)),
        name,
        schema,
    })
}

/// The input schema as sent to providers, or why it cannot be.
fn input_schema(schema: Option<&Value>, max_bytes: usize) -> Result<Value, String> {
    let mut schema = match schema {
        None | Some(Value::Null) => return Err("it has no inputSchema".into()),
        Some(Value::Object(map)) => map.clone(),
        Some(other) => {
            return Err(format!(
                "its inputSchema is not an object: {}",
                crate::provider::excerpt(&other.to_string(), 100)
            ));
        }
    };
    let size = serde_json::to_string(&schema).map_or(usize::MAX, |s| s.len());
    if size > max_bytes {
        return Err(format!(
            "its inputSchema is {size} bytes, over the limit of {max_bytes} (mcp.max_schema_bytes)"
        ));
    }
    match schema.get("type") {
        None => {
            schema.insert("type".into(), Value::from("object"));
        }
        Some(Value::String(t)) if t == "object" => {}
        Some(other) => {
            return Err(format!(
                "its inputSchema has type {other}; a tool's arguments must be an object"
            ));
        }
    }
    if let Some(properties) = schema.get("properties")
        && !properties.is_object()
    {
        return Err(format!(
            "its inputSchema's properties is not an object: {}",
            crate::provider::excerpt(&properties.to_string(), 100)
        ));
    }
    if let Some(required) = schema.get("required")
        && !required
            .as_array()
            .is_some_and(|names| names.iter().all(Value::is_string))
    {
        return Err(format!(
            "its inputSchema's required is not a list of names: {}",
            crate::provider::excerpt(&required.to_string(), 100)
        ));
    }
    let schema = Value::Object(schema);
    if let Err(e) = jsonschema::validator_for(&schema) {
        return Err(format!(
            "its inputSchema is not a usable JSON Schema: {}",
            crate::provider::excerpt(&e.to_string(), 200)
        ));
    }
    Ok(schema)
}

/// The tools of one listing: each item parsed, the bad ones skipped with their reason, and
/// a name listed twice kept once (the first).
pub fn tool_defs(items: &[Value], max_schema_bytes: usize) -> (Vec<ToolDef>, Vec<Skipped>) {
    let mut tools: Vec<ToolDef> = Vec::new();
    let mut skipped = Vec::new();
    let mut names = std::collections::HashSet::new();
    for item in items {
        match tool_def(item, max_schema_bytes) {
            Ok(def) if !names.insert(def.name.clone()) => skipped.push(Skipped::new(
                item,
                "the server lists another tool of this name before it",
            )),
            Ok(def) => tools.push(def),
            Err(skip) => skipped.push(skip),
        }
    }
    (tools, skipped)
}

/// A call result as text for the model. Images and binary resources are handed to
/// `save` (mime type, bytes), which returns where they were written. What cannot be read
/// (an unknown content type, a part without its data, a result without `content`) is
/// described in a line of its own; the parts that can be read are kept.
pub fn result_text(
    result: &Value,
    mut save: impl FnMut(&str, &[u8]) -> Result<String, String>,
) -> (String, bool) {
    let is_error = result
        .get("isError")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let mut parts: Vec<String> = Vec::new();
    let mut save_b64 = |mime: Option<&str>, data: Option<&str>, what: &str| -> String {
        let Some(data) = data else {
            return format!("[{what} without data]");
        };
        match base64::engine::general_purpose::STANDARD.decode(data) {
            Ok(bytes) => {
                let (mime, note) = match mime {
                    Some(mime) => (mime.to_owned(), String::new()),
                    None => {
                        let sniffed = sniff_mime(&bytes);
                        (
                            sniffed.to_owned(),
                            format!(" (no mimeType given; {sniffed} by its bytes)"),
                        )
                    }
                };
                match save(&mime, &bytes) {
                    Ok(path) => format!("[{mime}, {} bytes, saved to {path}]{note}", bytes.len()),
                    Err(e) => format!("[{mime}, {} bytes, not saved: {e}]{note}", bytes.len()),
                }
            }
            Err(e) => format!("[{what} data that is not valid base64: {e}]"),
        }
    };
    let str_of = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    match result.get("content") {
        Some(Value::Array(items)) => {
            for item in items {
                parts.push(content_text(item, &mut save_b64, &str_of));
            }
        }
        None | Some(Value::Null) => {
            if result.get("structuredContent").is_none() {
                parts.push(format!(
                    "[the server's result has no content: {}]",
                    crate::provider::excerpt(&result.to_string(), 300)
                ));
            }
        }
        Some(other) => parts.push(format!(
            "[the server's result content is not a list: {}]",
            crate::provider::excerpt(&other.to_string(), 300)
        )),
    }
    if parts.iter().all(|p| p.trim().is_empty())
        && let Some(structured) = result.get("structuredContent")
    {
        parts = vec![structured.to_string()];
    }
    let text = parts.join("\n");
    let text = if text.trim().is_empty() {
        if is_error {
            "the tool failed without saying why".to_owned()
        } else {
            "(the tool returned nothing)".to_owned()
        }
    } else {
        text
    };
    (text, is_error)
}

/// One content part as text.
fn content_text(
    item: &Value,
    save_b64: &mut impl FnMut(Option<&str>, Option<&str>, &str) -> String,
    str_of: &impl Fn(&Value, &str) -> Option<String>,
) -> String {
    let kind = item.get("type").and_then(Value::as_str);
    match kind {
        Some("text") => match item.get("text") {
            Some(Value::String(text)) => text.clone(),
            other => format!(
                "[a text part without text: {}]",
                crate::provider::excerpt(&other.unwrap_or(&Value::Null).to_string(), 100)
            ),
        },
        Some(what @ ("image" | "audio")) => save_b64(
            str_of(item, "mimeType").as_deref(),
            str_of(item, "data").as_deref(),
            what,
        ),
        Some("resource") => {
            let resource = item.get("resource").unwrap_or(&Value::Null);
            let uri = str_of(resource, "uri").unwrap_or_default();
            if let Some(text) = str_of(resource, "text") {
                format!("[resource {uri}]\n{text}")
            } else if let Some(blob) = str_of(resource, "blob") {
                let mime = str_of(resource, "mimeType");
                format!(
                    "[resource {uri}] {}",
                    save_b64(mime.as_deref(), Some(&blob), "resource")
                )
            } else {
                format!("[resource {uri}]")
            }
        }
        Some("resource_link") => {
            let uri = str_of(item, "uri").unwrap_or_default();
            let name = str_of(item, "name").unwrap_or_default();
            format!("[resource link {uri} {name}]").replace(" ]", "]")
        }
        Some(other) => format!(
            "[a content part of type {:?} that agentd does not read ({} bytes of JSON)]",
            crate::provider::excerpt(other, 50),
            item.to_string().len()
        ),
        None => format!(
            "[a content part without a type: {}]",
            crate::provider::excerpt(&item.to_string(), 100)
        ),
    }
}

/// The type of media bytes by their signature, for a part that did not name it.
fn sniff_mime(bytes: &[u8]) -> &'static str {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        "image/png"
    } else if bytes.starts_with(&[0xff, 0xd8, 0xff]) {
        "image/jpeg"
    } else if bytes.starts_with(b"GIF8") {
        "image/gif"
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        "image/webp"
    } else {
        "application/octet-stream"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn levels_from_annotations() {
        let cases = [
            (json!(null), PermissionLevel::Execute),
            (json!({}), PermissionLevel::Execute),
            (json!({"readOnlyHint": true}), PermissionLevel::Read),
            (
                json!({"readOnlyHint": true, "openWorldHint": true}),
                PermissionLevel::Network,
            ),
            (json!({"openWorldHint": true}), PermissionLevel::Network),
            (
                json!({"destructiveHint": true, "readOnlyHint": true}),
                PermissionLevel::Execute,
            ),
            (json!({"readOnlyHint": false}), PermissionLevel::Execute),
        ];
        for (annotations, level) in cases {
            assert_eq!(level_of(&annotations), level, "{annotations}");
        }
    }

    #[test]
    fn tool_definitions() {
        let def = tool_def(
            &json!({
                "name": "echo", "description": "says it back",
                "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
                "annotations": {"readOnlyHint": true}
            }),
            1000,
        )
        .unwrap();
        assert_eq!(
            (def.name.as_str(), def.description.as_str(), def.level),
            ("echo", "says it back", PermissionLevel::Read)
        );
        let bare = tool_def(&json!({"name": "x", "inputSchema": {}}), 1000).unwrap();
        assert_eq!(bare.schema, json!({"type": "object"}));
        assert_eq!(bare.level, PermissionLevel::Execute);
        let titled = tool_def(
            &json!({"name": "t", "title": "A title", "description": null, "inputSchema": {}}),
            1000,
        )
        .unwrap();
        assert_eq!(titled.description, "A title");
        let long = tool_def(
            &json!({"name": "l", "description": "d".repeat(5000), "inputSchema": {}}),
            1000,
        )
        .unwrap();
        assert_eq!(long.description.chars().count(), MAX_DESCRIPTION_CHARS + 1);
    }

    #[test]
    fn bad_tools_are_skipped_with_their_reason() {
        let big_enum: Vec<String> = (0..200).map(|i| format!("value-{i}")).collect();
        // (the tool, the skipped name, the start of the reason)
        let cases = [
            (
                json!({"description": "no name", "inputSchema": {}}),
                None,
                "it has no name",
            ),
            (
                json!({"name": "", "inputSchema": {}}),
                Some(""),
                "its name is empty",
            ),
            (
                json!({"name": 7, "inputSchema": {}}),
                None,
                "its name is not text: 7",
            ),
            (json!("just text"), None, "the list item is not an object"),
            (json!({"name": "n"}), Some("n"), "it has no inputSchema"),
            (
                json!({"name": "n", "inputSchema": null}),
                Some("n"),
                "it has no inputSchema",
            ),
            (
                json!({"name": "d", "description": 42, "inputSchema": {}}),
                Some("d"),
                "its description is not text: 42",
            ),
            (
                json!({"name": "s", "inputSchema": {"type": "string"}}),
                Some("s"),
                "its inputSchema has type \"string\"; a tool's arguments must be an object",
            ),
            (
                json!({"name": "p", "inputSchema": {"type": "object", "properties": "oops"}}),
                Some("p"),
                "its inputSchema's properties is not an object: \"oops\"",
            ),
            (
                json!({"name": "q", "inputSchema": "oops"}),
                Some("q"),
                "its inputSchema is not an object: \"oops\"",
            ),
            (
                json!({"name": "r", "inputSchema": {"type": "object", "required": "text"}}),
                Some("r"),
                "its inputSchema's required is not a list of names",
            ),
            (
                json!({"name": "v", "inputSchema": {"type": "object", "properties": {"a": {"type": 12}}}}),
                Some("v"),
                "its inputSchema is not a usable JSON Schema",
            ),
            (
                json!({"name": "big", "inputSchema": {"type": "object", "properties": {"e": {"enum": big_enum}}}}),
                Some("big"),
                "its inputSchema is 2",
            ),
        ];
        for (tool, name, reason) in cases {
            let skipped = tool_def(&tool, 1000).unwrap_err();
            assert_eq!(skipped.name.as_deref(), name, "{tool}");
            assert!(
                skipped.reason.starts_with(reason),
                "{tool}: {}",
                skipped.reason
            );
        }
    }

    #[test]
    fn one_bad_tool_leaves_the_others_and_duplicates_keep_the_first() {
        let items = [
            json!({"name": "a", "description": "first", "inputSchema": {}}),
            json!({"name": "b"}),
            json!({"name": "a", "description": "second", "inputSchema": {}}),
            json!({"name": "c", "inputSchema": {}}),
        ];
        let (tools, skipped) = tool_defs(&items, 1000);
        let names: Vec<(&str, &str)> = tools
            .iter()
            .map(|t| (t.name.as_str(), t.description.as_str()))
            .collect();
        assert_eq!(names, [("a", "first"), ("c", "")]);
        let reasons: Vec<(Option<&str>, &str)> = skipped
            .iter()
            .map(|s| (s.name.as_deref(), s.reason.as_str()))
            .collect();
        assert_eq!(
            reasons,
            [
                (Some("b"), "it has no inputSchema"),
                (
                    Some("a"),
                    "the server lists another tool of this name before it"
                )
            ]
        );
    }

    #[test]
    fn results_become_text() {
        let mut saved = Vec::new();
        let (text, is_error) = result_text(
            &json!({"content": [
                {"type": "text", "text": "an image"},
                {"type": "image", "mimeType": "image/png", "data": "aGk="},
                {"type": "resource", "resource": {"uri": "test://note", "text": "a note"}},
                {"type": "resource_link", "uri": "file:///x", "name": "x"}
            ]}),
            |mime, bytes| {
                saved.push((mime.to_owned(), bytes.to_vec()));
                Ok("/d/img-1.png".into())
            },
        );
        assert!(!is_error);
        assert_eq!(
            text,
            "an image\n[image/png, 2 bytes, saved to /d/img-1.png]\n[resource test://note]\na note\n[resource link file:///x x]"
        );
        assert_eq!(saved, [("image/png".to_owned(), b"hi".to_vec())]);
        let (text, is_error) = result_text(&json!({"content": [], "isError": true}), |_, _| {
            Err("unused".into())
        });
        assert_eq!(
            (text.as_str(), is_error),
            ("the tool failed without saying why", true)
        );
        let (text, _) = result_text(
            &json!({"content": [], "structuredContent": {"a": 1}}),
            |_, _| Err("unused".into()),
        );
        assert_eq!(text, r#"{"a":1}"#);
    }

    #[test]
    fn parts_that_cannot_be_read_are_described_and_the_rest_kept() {
        // A 1x1 PNG's first bytes, base64.
        let png = "iVBORw0KGgoAAAANSUhEUg==";
        let cases = [
            (
                json!({"content": [
                    {"type": "text", "text": "kept"},
                    {"type": "video", "url": "x"},
                    {"type": "text", "text": "also kept"}
                ]}),
                "kept\n[a content part of type \"video\" that agentd does not read (26 bytes of JSON)]\nalso kept",
            ),
            (
                json!({"content": [{"type": "image", "data": png}, {"type": "text", "text": "caption"}]}),
                "[image/png, 16 bytes, saved to /saved] (no mimeType given; image/png by its bytes)\ncaption",
            ),
            (
                json!({"content": [{"type": "image", "data": "aGk="}]}),
                "[application/octet-stream, 2 bytes, saved to /saved] (no mimeType given; application/octet-stream by its bytes)",
            ),
            (
                json!({"content": [{"type": "image", "mimeType": "image/png"}, {"text": "no type"}]}),
                "[image without data]\n[a content part without a type: {\"text\":\"no type\"}]",
            ),
            (
                json!({"isError": false, "other": 1}),
                "[the server's result has no content: {\"isError\":false,\"other\":1}]",
            ),
            (json!({"structuredContent": {"x": 1}}), "{\"x\":1}"),
            (
                json!({"content": "just text"}),
                "[the server's result content is not a list: \"just text\"]",
            ),
            (
                json!({"content": [{"type": "text", "text": 5}]}),
                "[a text part without text: 5]",
            ),
        ];
        for (result, expected) in cases {
            let (text, _) = result_text(&result, |_, _| Ok("/saved".into()));
            assert_eq!(text, expected, "{result}");
        }
    }
}
