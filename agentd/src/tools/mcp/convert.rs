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

/// A tool definition from its JSON (`tools/list` item).
pub fn tool_def(tool: &Value) -> Option<ToolDef> {
    let name = tool.get("name")?.as_str()?.to_owned();
    let mut schema = tool
        .get("inputSchema")
        .cloned()
        .filter(Value::is_object)
        .unwrap_or_else(|| serde_json::json!({"type": "object"}));
    if schema.get("type").is_none() {
        schema["type"] = Value::from("object");
    }
    Some(ToolDef {
        description: tool
            .get("description")
            .and_then(Value::as_str)
            .or_else(|| tool.get("title").and_then(Value::as_str))
            .unwrap_or_default()
            .to_owned(),
        level: level_of(tool.get("annotations").unwrap_or(&Value::Null)),
        name,
        schema,
    })
}

/// A call result as text for the model. Images and binary resources are handed to
/// `save` (mime type, bytes), which returns where they were written.
pub fn result_text(
    result: &Value,
    mut save: impl FnMut(&str, &[u8]) -> Result<String, String>,
) -> (String, bool) {
    let is_error = result
        .get("isError")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let mut parts: Vec<String> = Vec::new();
    let mut save_b64 = |mime: &str, data: &str| -> String {
        match base64::engine::general_purpose::STANDARD.decode(data) {
            Ok(bytes) => match save(mime, &bytes) {
                Ok(path) => format!("[{mime}, {} bytes, saved to {path}]", bytes.len()),
                Err(e) => format!("[{mime}, {} bytes, not saved: {e}]", bytes.len()),
            },
            Err(e) => format!("[{mime} data that is not valid base64: {e}]"),
        }
    };
    for item in result
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let str_of = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        match item.get("type").and_then(Value::as_str) {
            Some("text") => parts.push(str_of(item, "text").unwrap_or_default()),
            Some("image") | Some("audio") => {
                let mime = str_of(item, "mimeType").unwrap_or_else(|| "image/png".into());
                let data = str_of(item, "data").unwrap_or_default();
                parts.push(save_b64(&mime, &data));
            }
            Some("resource") => {
                let resource = item.get("resource").unwrap_or(&Value::Null);
                let uri = str_of(resource, "uri").unwrap_or_default();
                if let Some(text) = str_of(resource, "text") {
                    parts.push(format!("[resource {uri}]\n{text}"));
                } else if let Some(blob) = str_of(resource, "blob") {
                    let mime = str_of(resource, "mimeType")
                        .unwrap_or_else(|| "application/octet-stream".into());
                    parts.push(format!("[resource {uri}] {}", save_b64(&mime, &blob)));
                } else {
                    parts.push(format!("[resource {uri}]"));
                }
            }
            Some("resource_link") => {
                let uri = str_of(item, "uri").unwrap_or_default();
                let name = str_of(item, "name").unwrap_or_default();
                parts.push(format!("[resource link {uri} {name}]").replace(" ]", "]"));
            }
            _ => parts.push(item.to_string()),
        }
    }
    if parts.is_empty()
        && let Some(structured) = result.get("structuredContent")
    {
        parts.push(structured.to_string());
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

/// Names the model sees: a tool's own name, unless another server has a tool of that
/// name too, in which case both become `server__tool`. Input: (server, tool name) pairs.
pub fn exposed_names(tools: &[(String, String)]) -> Vec<String> {
    tools
        .iter()
        .map(|(server, name)| {
            let shared = tools.iter().any(|(s, n)| n == name && s != server);
            if shared {
                format!("{server}__{name}")
            } else {
                name.clone()
            }
        })
        .collect()
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
        let def = tool_def(&json!({
            "name": "echo", "description": "says it back",
            "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
            "annotations": {"readOnlyHint": true}
        }))
        .unwrap();
        assert_eq!(
            (def.name.as_str(), def.description.as_str(), def.level),
            ("echo", "says it back", PermissionLevel::Read)
        );
        let bare = tool_def(&json!({"name": "x", "inputSchema": {}})).unwrap();
        assert_eq!(bare.schema, json!({"type": "object"}));
        assert_eq!(bare.level, PermissionLevel::Execute);
        assert!(tool_def(&json!({"description": "no name"})).is_none());
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
    fn clashing_names_get_the_server_prefix() {
        let tools: Vec<(String, String)> =
            [("a", "echo"), ("b", "echo"), ("a", "only"), ("b", "x")]
                .iter()
                .map(|(s, n)| ((*s).to_owned(), (*n).to_owned()))
                .collect();
        assert_eq!(exposed_names(&tools), ["a__echo", "b__echo", "only", "x"]);
    }
}
