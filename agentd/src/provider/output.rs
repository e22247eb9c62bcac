//! What a turn may ask of an answer besides the conversation (`sendMessage`'s per-turn
//! choices): how much a reasoning model thinks, and the JSON Schema its final answer must
//! fit. Each wire format writes these in its own form; this module holds what they share:
//! the thinking budgets an effort stands for, and whether a schema meets OpenAI's strict
//! rules.

use agent_proto::ReasoningEffort;
use serde_json::Value;

/// A turn's choices for one request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AnswerOptions {
    /// `None` also for a model the capability table marks as not reasoning.
    pub reasoning_effort: Option<ReasoningEffort>,
    pub output: Option<OutputSchema>,
}

/// The schema the final answer must be valid JSON against, as the APIs take it.
#[derive(Debug, Clone, PartialEq)]
pub struct OutputSchema {
    /// The schema's `title` when it is a name OpenAI takes (`^[a-zA-Z0-9_-]{1,64}$`),
    /// else `output`.
    pub name: String,
    pub schema: Value,
    /// The schema meets OpenAI's strict rules ([`meets_strict_rules`]).
    pub strict: bool,
}

impl OutputSchema {
    pub fn new(schema: Value) -> OutputSchema {
        let name = schema
            .get("title")
            .and_then(Value::as_str)
            .filter(|t| {
                (1..=64).contains(&t.len())
                    && t.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
            })
            .unwrap_or("output")
            .to_owned();
        OutputSchema {
            name,
            strict: meets_strict_rules(&schema),
            schema,
        }
    }
}

/// The thinking budget (tokens) an effort stands for, where an API takes a budget
/// (Anthropic's `budget_tokens`, Gemini's `thinkingBudget`).
pub(super) fn thinking_budget(effort: ReasoningEffort) -> u32 {
    match effort {
        ReasoningEffort::Low => 1024,
        ReasoningEffort::Medium => 4096,
        ReasoningEffort::High => 16384,
    }
}

/// Whether OpenAI's strict structured outputs take `schema` as it is: the root is an
/// object, and every object (at any depth) lists all its properties in `required` and
/// sets `additionalProperties: false`. A schema that does not is sent with `strict:
/// false` (the answer is still validated here).
fn meets_strict_rules(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("object") && objects_are_strict(schema)
}

fn objects_are_strict(schema: &Value) -> bool {
    match schema {
        Value::Object(map) => {
            let is_object = match map.get("type") {
                Some(Value::String(t)) => t == "object",
                Some(Value::Array(types)) => types.iter().any(|t| t == "object"),
                _ => map.contains_key("properties"),
            };
            if is_object {
                let closed = map.get("additionalProperties") == Some(&Value::Bool(false));
                let required: Vec<&str> = map
                    .get("required")
                    .and_then(Value::as_array)
                    .map(|r| r.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                let all_required = map
                    .get("properties")
                    .and_then(Value::as_object)
                    .is_none_or(|p| p.keys().all(|k| required.contains(&k.as_str())));
                if !closed || !all_required {
                    return false;
                }
            }
            map.values().all(objects_are_strict)
        }
        Value::Array(items) => items.iter().all(objects_are_strict),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn strict_rules_and_names() {
        let strict = json!({"type": "object", "title": "answer_v2",
            "properties": {"a": {"type": "object", "properties": {"b": {"type": "string"}},
                "required": ["b"], "additionalProperties": false}},
            "required": ["a"], "additionalProperties": false});
        let open_inner = json!({"type": "object",
            "properties": {"a": {"type": "object", "properties": {"b": {"type": "string"}}}},
            "required": ["a"], "additionalProperties": false});
        let optional = json!({"type": "object", "properties": {"a": {"type": "string"}},
            "additionalProperties": false});
        let cases = [
            (strict, true, "answer_v2"),
            (open_inner, false, "output"),
            (optional, false, "output"),
            (
                json!({"type": "array", "items": {"type": "string"}}),
                false,
                "output",
            ),
            (
                json!({"type": "object", "title": "has space", "additionalProperties": false}),
                true,
                "output",
            ),
        ];
        for (schema, is_strict, name) in cases {
            let out = OutputSchema::new(schema.clone());
            assert_eq!(out.strict, is_strict, "{schema}");
            assert_eq!(out.name, name, "{schema}");
        }
    }
}
