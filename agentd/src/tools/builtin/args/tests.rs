use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::*;
use crate::tools::builtin::testing::world;

/// The keywords a schema offered to a model may use; anything else (`format`, `default`,
/// `title`, `anyOf`, a `null` type...) fails [`outline`].
const KEYWORDS: &[&str] = &[
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "description",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
];

/// A schema as the table below writes it: one line per property, `name: type bounds
/// "description"`, `?` when it is optional, the properties of an object (or of an array's
/// items) indented below it. Every object must be closed (`additionalProperties: false`).
fn outline(schema: &Value) -> String {
    let mut lines = Vec::new();
    let root = schema.as_object().expect("an object schema");
    assert_eq!(root.get("type"), Some(&json!("object")), "{schema}");
    properties(root, 0, &mut lines);
    lines.join("\n")
}

fn properties(object: &Map<String, Value>, depth: usize, lines: &mut Vec<String>) {
    assert_eq!(
        object.get("additionalProperties"),
        Some(&json!(false)),
        "every object is closed: {object:?}"
    );
    let required: Vec<&str> = object
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let props = object["properties"].as_object().expect("properties");
    for name in &required {
        assert!(props.contains_key(*name), "required {name} is a property");
    }
    for (name, prop) in props {
        let optional = if required.contains(&name.as_str()) {
            ""
        } else {
            "?"
        };
        let (head, nested) = describe(prop);
        lines.push(format!("{}{name}{optional}: {head}", "  ".repeat(depth)));
        if let Some(nested) = nested {
            properties(nested, depth + 1, lines);
        }
    }
}

/// A property's line after its name, and the object whose properties go below it.
fn describe(schema: &Value) -> (String, Option<&Map<String, Value>>) {
    let object = schema.as_object().expect("a schema object");
    for key in object.keys() {
        assert!(
            KEYWORDS.contains(&key.as_str()),
            "{key} is not for models: {schema}"
        );
    }
    let ty = object["type"].as_str().expect("exactly one type");
    let (mut head, nested) = match ty {
        "array" => {
            let (items, nested) = describe(&object["items"]);
            (format!("[{items}]"), nested)
        }
        "object" => ("object".to_owned(), Some(object)),
        _ => match object.get("enum").and_then(Value::as_array) {
            Some(values) => (
                values
                    .iter()
                    .map(Value::to_string)
                    .collect::<Vec<_>>()
                    .join("|"),
                None,
            ),
            None => (ty.to_owned(), None),
        },
    };
    for (what, min, max) in [
        ("", "minimum", "maximum"),
        ("len ", "minLength", "maxLength"),
        ("items ", "minItems", "maxItems"),
    ] {
        let bound = |key: &str| object.get(key).map(Value::to_string).unwrap_or_default();
        match (bound(min), bound(max)) {
            (lo, hi) if lo.is_empty() && hi.is_empty() => {}
            (lo, hi) if hi.is_empty() => head.push_str(&format!(" {what}{lo}..")),
            (lo, hi) => head.push_str(&format!(" {what}{lo}..={hi}")),
        }
    }
    if let Some(description) = object.get("description") {
        head.push_str(&format!(" {description}"));
    }
    (head, nested)
}

/// What every builtin tool's model sees of its arguments. A change here changes what
/// models are offered (and what calls are checked against): make it on purpose.
#[test]
fn every_builtin_tool_offers_the_arguments_pinned_here() {
    let table: &[(&str, &str)] = &[
        (
            "bash",
            r#"
command: string "The command line to run."
timeout?: integer 1..=600000 "Milliseconds before the command is killed (default 120000)."
network?: boolean "The command needs the network (asks the user unless allowed)."
outsideSandbox?: boolean "Run outside the sandbox, with the user's full rights. Always asks the user; give a `reason`."
reason?: string "Why the command must run outside the sandbox (shown to the user).""#,
        ),
        (
            "read_file",
            r#"
path: string "File path (relative to the workspace or absolute)."
offset?: integer 1.. "First line to read (1-based)."
limit?: integer 1.. "Number of lines to read (default 2000).""#,
        ),
        (
            "write_file",
            r#"
path: string "File path (relative to the workspace or absolute)."
content: string "The whole new content.""#,
        ),
        (
            "edit_file",
            r#"
path: string "File path (relative to the workspace or absolute)."
old_string: string "The exact text to replace."
new_string: string "The text to put in its place."
replace_all?: boolean "Replace every occurrence (default false).""#,
        ),
        (
            "glob",
            r#"
pattern: string "Glob pattern, e.g. **/*.rs"
path?: string "Directory to search (default: the workspace).""#,
        ),
        (
            "grep",
            r#"
pattern: string "Regular expression."
path?: string "File or directory (default: the workspace)."
glob?: string "Only files whose path matches this glob, e.g. *.rs"
case_insensitive?: boolean "Ignore case (default false).""#,
        ),
        (
            "list_directory",
            r#"
path?: string "Directory (default: the workspace).""#,
        ),
        (
            "directory_tree",
            r#"
path?: string "Directory (default: the workspace)."
depth?: integer 0.. "Levels to show (default 1, at most 3).""#,
        ),
        (
            "web_fetch",
            r#"
url: string "The http(s) URL.""#,
        ),
        (
            "web_search",
            r#"
query: string len 1..=400
limit?: integer 1..=20"#,
        ),
        (
            "todo_write",
            r#"
todos: [object] items ..=100
  content: string len 1..
  status: "pending"|"in_progress"|"completed"
  activeForm?: string"#,
        ),
        (
            "ask_user_question",
            r#"
questions: [object] items 1..=4
  question: string len 1..
  header?: string
  options: [object] items ..=8
    label: string len 1..
    description?: string
  multiSelect?: boolean"#,
        ),
        (
            "task",
            r#"
description: string len 1..=200
prompt: string len 1..
subagentType?: string
background?: boolean"#,
        ),
        (
            "skill",
            r#"
name: string len 1..=64 "The skill's name, as the system prompt lists it""#,
        ),
    ];
    let tools = crate::tools::builtin::all();
    let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
    let pinned: Vec<&str> = table.iter().map(|(name, _)| *name).collect();
    assert_eq!(names, pinned, "every builtin tool is pinned, in order");
    for (tool, (name, expected)) in tools.iter().zip(table) {
        let schema = tool.schema();
        assert_eq!(
            outline(&schema),
            expected.trim_start(),
            "{name}: {schema:#}"
        );
        assert!(
            jsonschema::validator_for(&schema).is_ok(),
            "{name}: a valid schema"
        );
    }
}

// A struct exercising what the generator writes and `ForModels` takes away.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[allow(dead_code)]
struct Sample {
    /// A count
    /// wrapped over two lines.
    #[schemars(range(min = 1, max = 9))]
    count: Option<u32>,
    #[serde(default)]
    dry_run: bool,
    /// A property named like a keyword keeps its name.
    title: Option<String>,
    format: String,
    mode: Option<Mode>,
    nested: Option<Inner>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)]
enum Mode {
    Fast,
    Slow,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)]
struct Inner {
    size: u64,
}

#[test]
fn generated_schemas_are_plain_for_models() {
    assert_eq!(
        schema_for::<Sample>(),
        json!({
            "type": "object",
            "properties": {
                "count": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 9,
                    "description": "A count wrapped over two lines."
                },
                "dryRun": {"type": "boolean"},
                "title": {
                    "type": "string",
                    "description": "A property named like a keyword keeps its name."
                },
                "format": {"type": "string"},
                "mode": {"type": "string", "enum": ["fast", "slow"]},
                "nested": {
                    "type": "object",
                    "properties": {"size": {"type": "integer", "minimum": 0}},
                    "required": ["size"],
                    "additionalProperties": false
                }
            },
            "required": ["format"],
            "additionalProperties": false
        })
    );
    // The text a model reads has its keys in the order a person writes them.
    let text = schema_for::<Sample>().to_string();
    assert!(
        text.starts_with(r#"{"type":"object","properties":{"count":{"type":"integer","minimum":1,"maximum":9,"description":"#),
        "{text}"
    );
    assert!(
        text.ends_with(r#""required":["format"],"additionalProperties":false}"#),
        "{text}"
    );
}

#[test]
fn whole_numbers_written_as_floats_are_integers_as_for_the_schema_check() {
    let schema = schema_for::<Inner>();
    let validator = jsonschema::validator_for(&schema).unwrap();
    for (args, parsed) in [
        (json!({"size": 2}), Some(2)),
        (json!({"size": 2.0}), Some(2)),
        (json!({"size": 2.5}), None),
        (json!({"size": -1}), None),
        (json!({"size": 1e300}), None),
    ] {
        let got = parse::<Inner>(&args).ok().map(|i| i.size);
        assert_eq!(got, parsed, "{args}");
        if parsed.is_some() {
            assert!(
                validator.is_valid(&args),
                "{args} passes the schema check too"
            );
        }
    }
}

#[tokio::test]
async fn arguments_a_tool_cannot_read_are_a_result_naming_the_tool_and_the_field() {
    let w = world();
    let tools = crate::tools::builtin::all();
    let tool = |name: &str| tools.iter().find(|t| t.name() == name).unwrap().clone();
    let cases = [
        (
            "read_file",
            json!({"path": 3}),
            "invalid arguments for read_file: invalid type: integer `3`, expected a string",
        ),
        (
            "bash",
            json!({"command": "ls", "shell": "zsh"}),
            "invalid arguments for bash: unknown field `shell`",
        ),
        (
            "write_file",
            json!({"path": "x"}),
            "invalid arguments for write_file: missing field `content`",
        ),
    ];
    for (name, args, expected) in cases {
        let access = tool(name).access(&args, &w.ctx).unwrap_err();
        assert!(access.starts_with(expected), "{name}: {access}");
        let run = tool(name).run(args, &w.ctx).await;
        assert!(
            run.is_error && run.content.starts_with(expected),
            "{name}: {run:?}"
        );
    }
}
