//! Misbehaviours of real MCP servers, each behind a command-line switch so the default
//! tool list stays what the tests pin: tool names and schemas providers refuse, tools a
//! typed client rejects, pagination that never ends, a list that is never answered again,
//! `list_changed` storms, results of unknown shapes, chatter, and stderr without newlines.
//! What rmcp's types cannot express goes out raw (see `raw.rs`); those switches work over
//! stdio only.

use std::sync::Arc;

use rmcp::model::{CallToolResult, JsonObject, ListToolsResult, MetaObject, Tool};
use serde_json::{Value, json};

use crate::raw::RAW_KEY;

/// How `tools/list` pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Paginate {
    /// One tool per page, cursors `p1`, `p2`, ..., then the end.
    Pages,
    /// Every page has every tool and `nextCursor: ""`.
    EmptyForever,
    /// Every page has every tool and `nextCursor: "again"`.
    Repeat,
    /// A new tool and a new cursor on every page, forever.
    Endless,
}

impl Paginate {
    pub(crate) fn parse(text: &str) -> Option<Paginate> {
        match text {
            "pages" => Some(Paginate::Pages),
            "empty-forever" => Some(Paginate::EmptyForever),
            "repeat" => Some(Paginate::Repeat),
            "endless" => Some(Paginate::Endless),
            _ => None,
        }
    }
}

/// The switches.
#[derive(Debug, Clone, Default)]
pub(crate) struct Quirks {
    /// Tools named and shaped as providers refuse, plus raw ones a typed client rejects.
    pub odd_tools: bool,
    /// Tools whose results rmcp cannot type: `unknown_content`, `image_no_mime`,
    /// `no_content`.
    pub odd_results: bool,
    pub paginate: Option<Paginate>,
    /// `tools/list` is answered once; later ones never.
    pub hang_relist: bool,
    /// The process exits right after its first `tools/list` answer.
    pub exit_after_list: bool,
    /// `storm` sends this many `tools/list_changed`.
    pub storm: Option<u64>,
    /// `bulk_0001`, `bulk_0002`, ... this many more tools.
    pub many_tools: usize,
    /// A tool `huge` whose schema is an enum of about this many bytes.
    pub huge_schema: Option<usize>,
    /// This many bytes of `x` on stderr at start, without a newline.
    pub stderr_flood: Option<usize>,
    /// `chatty` sends a custom notification with a 100 KiB payload.
    pub chatty: bool,
    /// `progress_last` sends one progress notification right before its result.
    pub progress_last: bool,
    /// Every `tools/list` is answered this many milliseconds late.
    pub slow_list_ms: Option<u64>,
}

impl Quirks {
    /// Whether `tools/list` is sent raw.
    pub(crate) fn raw_list(&self) -> bool {
        self.odd_tools || self.paginate.is_some()
    }
}

/// The payload `chatty` sends: `NOTE-` and 100 KiB of `y`.
pub(crate) fn chatter() -> String {
    format!("NOTE-{}", "y".repeat(100 * 1024))
}

fn object_schema(properties: Value) -> Arc<JsonObject> {
    let mut schema = JsonObject::new();
    schema.insert("type".into(), json!("object"));
    schema.insert("properties".into(), properties);
    Arc::new(schema)
}

fn raw_schema(schema: Value) -> Arc<JsonObject> {
    Arc::new(schema.as_object().cloned().unwrap_or_default())
}

/// The names of the `--odd-tools` tools that are called like any tool.
pub(crate) fn odd_names() -> Vec<String> {
    vec![
        "get.weather".into(),
        "with space".into(),
        "a/b".into(),
        "météo".into(),
        "n".repeat(70),
        "b__echo".into(),
        "dup".into(),
    ]
}

/// The typed tools the switches add.
pub(crate) fn typed_tools(quirks: &Quirks) -> Vec<Tool> {
    let mut tools = Vec::new();
    if quirks.odd_tools {
        for name in odd_names() {
            tools.push(Tool::new(
                name.clone(),
                format!("Answers `called {name}`."),
                object_schema(json!({})),
            ));
        }
        // A name listed twice, and an empty one.
        tools.push(Tool::new(
            "dup",
            "The second dup.",
            object_schema(json!({})),
        ));
        tools.push(Tool::new("", "No name at all.", object_schema(json!({}))));
        tools.push(Tool::new(
            "schema_string",
            "Its schema is a string's.",
            raw_schema(json!({"type": "string"})),
        ));
        tools.push(Tool::new(
            "schema_props",
            "Its properties are not an object.",
            raw_schema(json!({"type": "object", "properties": "oops"})),
        ));
    }
    if let Some(bytes) = quirks.huge_schema {
        let values: Vec<String> = (0..bytes / 12).map(|i| format!("v{i:09}")).collect();
        tools.push(Tool::new(
            "huge",
            "Takes one of very many values.",
            object_schema(json!({"choice": {"type": "string", "enum": values}})),
        ));
    }
    for i in 1..=quirks.many_tools {
        tools.push(Tool::new(
            format!("bulk_{i:04}"),
            "One of many.",
            object_schema(json!({})),
        ));
    }
    if quirks.odd_results {
        for (name, what) in [
            (
                "unknown_content",
                "Answers a part of an unknown type between two texts.",
            ),
            (
                "image_no_mime",
                "Answers an image without mimeType and a caption.",
            ),
            ("no_content", "Answers a result without content."),
        ] {
            tools.push(Tool::new(name, what, object_schema(json!({}))));
        }
    }
    if quirks.storm.is_some() {
        tools.push(Tool::new(
            "storm",
            "Announces a changed tool list many times (then adds `added` when `add` is true).",
            object_schema(json!({"add": {"type": "boolean"}})),
        ));
    }
    if quirks.progress_last {
        tools.push(Tool::new(
            "progress_last",
            "Reports progress once, right before its result.",
            object_schema(json!({})),
        ));
    }
    if quirks.chatty {
        tools.push(Tool::new(
            "chatty",
            "Sends a large custom notification, then answers.",
            object_schema(json!({})),
        ));
    }
    tools
}

/// The raw tools `--odd-tools` adds: what a typed list cannot hold.
pub(crate) fn raw_bad_tools() -> Vec<Value> {
    vec![
        json!({"description": "Has no name.", "inputSchema": {"type": "object"}}),
        json!({"name": "null_schema", "description": "Its inputSchema is null.", "inputSchema": null}),
        json!({"name": "no_schema", "description": "Has no inputSchema."}),
        json!({"name": "number_description", "description": 42, "inputSchema": {"type": "object"}}),
    ]
}

/// One page of `items` for `cursor`: the items and the next cursor.
pub(crate) fn page(
    mode: Paginate,
    cursor: Option<&str>,
    items: Vec<Value>,
) -> (Vec<Value>, Option<String>) {
    let number: usize = cursor
        .and_then(|c| c.strip_prefix('p'))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    match mode {
        Paginate::Pages => {
            let next = (number + 1 < items.len()).then(|| format!("p{}", number + 1));
            (items.into_iter().skip(number).take(1).collect(), next)
        }
        Paginate::EmptyForever => (items, Some(String::new())),
        Paginate::Repeat => (items, Some("again".into())),
        Paginate::Endless => (
            vec![json!({
                "name": format!("endless_{number}"),
                "inputSchema": {"type": "object"}
            })],
            Some(format!("p{}", number + 1)),
        ),
    }
}

fn raw_meta(value: Value) -> MetaObject {
    let mut meta = JsonObject::new();
    meta.insert(RAW_KEY.into(), value);
    MetaObject(meta)
}

/// A `tools/list` answer sent as `value`.
pub(crate) fn raw_list(value: Value) -> ListToolsResult {
    let mut result = ListToolsResult::with_all_items(Vec::new());
    result.meta = Some(raw_meta(value));
    result
}

/// The result of an `--odd-results` tool, sent raw.
pub(crate) fn odd_result(name: &str, png: &str) -> Option<CallToolResult> {
    let raw = match name {
        "unknown_content" => json!({"content": [
            {"type": "text", "text": "kept"},
            {"type": "video", "url": "https://example.org/v.mp4"},
            {"type": "text", "text": "also kept"}
        ]}),
        "image_no_mime" => json!({"content": [
            {"type": "image", "data": png},
            {"type": "text", "text": "a caption"}
        ]}),
        "no_content" => json!({"answer": 42}),
        _ => return None,
    };
    let mut result = CallToolResult::success(Vec::new());
    result.meta = Some(raw_meta(raw));
    Some(result)
}
