//! Params checked against the schema before a method runs: a name the method does not
//! take, or a value of the wrong shape, is `invalidParams` naming it (`updateAgent` with
//! `mode`; `content[1].data`), never silently ignored (jsonrpsee's named params skip
//! unknown names) nor reported as a column of the re-serialized request.
//!
//! The schema is `agent_proto::schema::methods()`, the same one committed as
//! `agent-proto/schema/openrpc.json`: what the daemon enforces is what it publishes.

use std::collections::HashMap;

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::{ValidationError, Validator};
use serde_json::Value;

/// The params check of every method the schema describes.
pub(crate) struct ParamsCheck {
    methods: HashMap<&'static str, MethodCheck>,
}

struct MethodCheck {
    names: Vec<String>,
    validator: Validator,
}

impl std::fmt::Debug for ParamsCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParamsCheck")
            .field("methods", &self.methods.len())
            .finish()
    }
}

impl ParamsCheck {
    /// Built once from the schema. A method whose schema does not compile (a bug in the
    /// types) is logged and left to jsonrpsee's own parsing.
    pub(crate) fn from_schema() -> ParamsCheck {
        let mut methods = HashMap::new();
        for method in agent_proto::schema::methods() {
            match jsonschema::validator_for(&method.params) {
                Ok(validator) => {
                    let names = method
                        .param_names()
                        .into_iter()
                        .map(str::to_owned)
                        .collect();
                    methods.insert(method.name, MethodCheck { names, validator });
                }
                Err(e) => tracing::error!(method = method.name, "params schema: {e}"),
            }
        }
        ParamsCheck { methods }
    }

    /// `Err` is the message of an `invalidParams` answer. Positional params (an array)
    /// and methods the schema does not describe are left to jsonrpsee.
    pub(crate) fn check(&self, method: &str, params: &Value) -> Result<(), String> {
        let (Some(check), Value::Object(map)) = (self.methods.get(method), params) else {
            return Ok(());
        };
        let mut unknown: Vec<&str> = map
            .keys()
            .map(String::as_str)
            .filter(|k| !check.names.iter().any(|n| n == k))
            .collect();
        if !unknown.is_empty() {
            unknown.sort_unstable();
            let takes = if check.names.is_empty() {
                "it takes none".to_owned()
            } else {
                format!("it takes {}", check.names.join(", "))
            };
            let which = match unknown.as_slice() {
                [one] => format!("unknown param {one:?}"),
                many => format!("unknown params {}", quoted(many)),
            };
            return Err(format!("{which} for {method}; {takes}"));
        }
        let errors: Vec<ValidationError<'_>> = check.validator.iter_errors(params).collect();
        match best(&errors) {
            None => Ok(()),
            Some(error) => Err(format!("invalid params of {method}: {}", describe(error))),
        }
    }
}

fn quoted(names: &[&str]) -> String {
    names
        .iter()
        .map(|n| format!("{n:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The error that says most about what is wrong: inside `anyOf`/`oneOf`, the alternative
/// that got furthest (a variant whose `type` tag matched beats one whose tag did not; then
/// the deepest error; then the fewest errors).
fn best<'a>(errors: &'a [ValidationError<'a>]) -> Option<&'a ValidationError<'a>> {
    errors
        .iter()
        .max_by_key(|e| rank(e))
        .map(|e| match alternatives(e) {
            Some(branches) if !all_fail_on_the_value(branches, e) && !no_tag_matched(branches) => {
                branches
                    .iter()
                    .max_by_key(|b| branch_rank(b))
                    .and_then(|b| best(b))
                    .unwrap_or(e)
            }
            _ => e,
        })
}

fn alternatives<'a>(e: &'a ValidationError<'_>) -> Option<&'a [Vec<ValidationError<'static>>]> {
    match e.kind() {
        ValidationErrorKind::AnyOf { context } | ValidationErrorKind::OneOfNotValid { context } => {
            Some(context)
        }
        _ => None,
    }
}

fn depth(e: &ValidationError<'_>) -> usize {
    let own = e.instance_path().as_str().matches('/').count();
    let inner = alternatives(e)
        .into_iter()
        .flatten()
        .flatten()
        .map(depth)
        .max()
        .unwrap_or(0);
    own.max(inner)
}

fn rank(e: &ValidationError<'_>) -> usize {
    depth(e)
}

/// Higher is better: (the tag matched, depth, fewer errors).
fn branch_rank(branch: &[ValidationError<'_>]) -> (bool, usize, std::cmp::Reverse<usize>) {
    let tag_missed = branch.iter().any(|e| {
        matches!(e.kind(), ValidationErrorKind::Constant { .. })
            && e.instance_path().as_str().ends_with("/type")
    });
    let deepest = branch.iter().map(depth).max().unwrap_or(0);
    (!tag_missed, deepest, std::cmp::Reverse(branch.len()))
}

/// Tagged variants (`type`), none of whose tags is the value's.
fn no_tag_matched(branches: &[Vec<ValidationError<'_>>]) -> bool {
    branches.iter().all(|b| !branch_rank(b).0)
}

/// The constants a tag (`type`) of the alternatives may be.
fn tags(branches: &[Vec<ValidationError<'_>>]) -> Vec<String> {
    branches
        .iter()
        .flatten()
        .filter(|e| e.instance_path().as_str().ends_with("/type"))
        .filter_map(|e| match e.kind() {
            ValidationErrorKind::Constant { expected_value } => Some(expected_value.to_string()),
            _ => None,
        })
        .collect()
}

/// Every alternative failed only on the value itself, by its type or by not being one
/// constant (`content: 5`, `format: "pdf"`): then the message names all it could have been.
fn all_fail_on_the_value(branches: &[Vec<ValidationError<'_>>], at: &ValidationError<'_>) -> bool {
    branches.iter().all(|b| {
        !b.is_empty()
            && b.iter().all(|e| {
                matches!(
                    e.kind(),
                    ValidationErrorKind::Type { .. } | ValidationErrorKind::Constant { .. }
                ) && e.instance_path() == at.instance_path()
            })
    })
}

/// `/content/1/data` as `content[1].data`.
fn field_path(pointer: &str) -> String {
    let mut out = String::new();
    for segment in pointer.split('/').filter(|s| !s.is_empty()) {
        let segment = segment.replace("~1", "/").replace("~0", "~");
        if segment.parse::<usize>().is_ok() {
            out.push_str(&format!("[{segment}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&segment);
        }
    }
    out
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "an integer",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The types a value may have, `null` last ("string or null").
/// A value short enough to show in a message, else its type.
fn shown(value: &Value) -> String {
    let text = value.to_string();
    if text.len() <= 60 {
        text
    } else {
        format!(
            "the {}",
            json_type(value)
                .trim_start_matches("a ")
                .trim_start_matches("an ")
        )
    }
}

fn type_names(kind: &TypeKind) -> Vec<&'static str> {
    let mut names: Vec<&'static str> = match kind {
        TypeKind::Single(t) => vec![t.as_str()],
        TypeKind::Multiple(set) => set.iter().map(|t| t.as_str()).collect(),
    };
    names.sort_by_key(|n| *n == "null");
    names
}

/// The types the branches of an `anyOf`/`oneOf` expect, from the branches that failed
/// on the type.
fn branch_types(branches: &[Vec<ValidationError<'_>>]) -> Vec<&'static str> {
    branches
        .iter()
        .flatten()
        .filter_map(|b| match b.kind() {
            ValidationErrorKind::Type { kind } => Some(type_names(kind)),
            _ => None,
        })
        .flatten()
        .collect()
}

/// What is wrong with a value no branch of an `anyOf`/`oneOf` takes (without a tag to
/// go by): not one of the constants, not one of the types, or no shape at all.
fn no_branch_fits(e: &ValidationError<'_>, context: &[Vec<ValidationError<'_>>]) -> String {
    let constants: Vec<String> = context
        .iter()
        .flatten()
        .filter_map(|b| match b.kind() {
            ValidationErrorKind::Constant { expected_value } => Some(expected_value.to_string()),
            _ => None,
        })
        .collect();
    if !constants.is_empty() {
        return format!(
            "{} is not one of {}",
            shown(e.instance()),
            constants.join(", ")
        );
    }
    let expected = branch_types(context);
    if expected.is_empty() {
        "does not fit any of the shapes it may have".into()
    } else {
        format!(
            "expected {}, got {}",
            expected.join(" or "),
            json_type(e.instance())
        )
    }
}

/// A message naming the field and what is wrong with it, without echoing the value (it
/// may be megabytes).
fn describe(e: &ValidationError<'_>) -> String {
    let path = field_path(e.instance_path().as_str());
    let at = |what: String| {
        if path.is_empty() {
            what
        } else {
            format!("{path}: {what}")
        }
    };
    match e.kind() {
        ValidationErrorKind::Type { kind } => {
            let mut expected = type_names(kind);
            if let Some(branches) = alternatives(e) {
                expected = branch_types(branches);
            }
            at(format!(
                "expected {}, got {}",
                expected.join(" or "),
                json_type(e.instance())
            ))
        }
        ValidationErrorKind::AnyOf { context } | ValidationErrorKind::OneOfNotValid { context }
            if no_tag_matched(context) =>
        {
            let tag = e.instance().get("type").unwrap_or(&Value::Null);
            let field = if path.is_empty() {
                "type".to_owned()
            } else {
                format!("{path}.type")
            };
            format!(
                "{field}: {} is not one of {}",
                shown(tag),
                tags(context).join(", ")
            )
        }
        ValidationErrorKind::AnyOf { context } | ValidationErrorKind::OneOfNotValid { context } => {
            at(no_branch_fits(e, context))
        }
        ValidationErrorKind::Required { property } if path.is_empty() => {
            format!("missing param {property}")
        }
        ValidationErrorKind::Required { property } => at(format!("missing field {property}")),
        ValidationErrorKind::AdditionalProperties { unexpected } => {
            let names: Vec<&str> = unexpected.iter().map(String::as_str).collect();
            match names.as_slice() {
                [one] => at(format!("unknown field {one:?}")),
                many => at(format!("unknown fields {}", quoted(many))),
            }
        }
        ValidationErrorKind::Constant { expected_value } => {
            at(format!("{} must be {expected_value}", shown(e.instance())))
        }
        ValidationErrorKind::Enum { options } => {
            let options = match options.as_ref() {
                Value::Array(items) => items
                    .iter()
                    .map(Value::to_string)
                    .collect::<Vec<_>>()
                    .join(", "),
                other => other.to_string(),
            };
            at(format!("{} is not one of {options}", shown(e.instance())))
        }
        ValidationErrorKind::Minimum { limit } => at(format!("must be at least {limit}")),
        ValidationErrorKind::Maximum { limit } => at(format!("must be at most {limit}")),
        _ => at(e.masked().to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn bad_params_are_named_by_their_path() {
        let check = ParamsCheck::from_schema();
        let cases: &[(&str, Value, Option<&str>)] = &[
            ("getAgent", json!({"agentId": "a"}), None),
            ("listProviders", json!({}), None),
            (
                "updateAgent",
                json!({"agentId": "a", "mode": "agent"}),
                Some("unknown param \"mode\" for updateAgent; it takes agentId, "),
            ),
            (
                "listProviders",
                json!({"x": 1, "a": 2}),
                Some("unknown params \"a\", \"x\" for listProviders; it takes none"),
            ),
            (
                "getSession",
                json!({}),
                Some("invalid params of getSession: missing param \"agentId\""),
            ),
            (
                "getAgent",
                json!({"agentId": 5}),
                Some("invalid params of getAgent: agentId: expected string, got an integer"),
            ),
            (
                "sendMessage",
                json!({"agentId": "a", "content": [{"type": "text", "text": "hi"},
                    {"type": "image", "data": 5}]}),
                Some(
                    "invalid params of sendMessage: content[1].data: expected string or null, got an integer",
                ),
            ),
            (
                "sendMessage",
                json!({"agentId": "a", "content": [{"type": "text"}]}),
                Some("invalid params of sendMessage: content[0]: missing field \"text\""),
            ),
            (
                "sendMessage",
                json!({"agentId": "a", "content": 5}),
                Some(
                    "invalid params of sendMessage: content: expected string or array, got an integer",
                ),
            ),
            (
                "sendMessage",
                json!({"agentId": "a", "content": [{"type": "video"}]}),
                Some(
                    "invalid params of sendMessage: content[0].type: \"video\" is not one of \"text\", \"image\", \"file\"",
                ),
            ),
            (
                "createAgent",
                json!({"settings": {"temprature": 1}}),
                Some("invalid params of createAgent: settings: unknown field \"temprature\""),
            ),
            (
                "createAgent",
                json!({"settings": {"permissions": {"read": "maybe"}}}),
                Some(
                    "invalid params of createAgent: settings.permissions.read: \"maybe\" is not one of \"allow\", \"ask\", \"deny\"",
                ),
            ),
            (
                "listAgents",
                json!({"limit": 4_294_967_296_u64}),
                Some("invalid params of listAgents: limit: must be at most 4294967295"),
            ),
            (
                "createAgent",
                json!({"mode": "robot"}),
                Some(
                    "invalid params of createAgent: mode: \"robot\" is not one of \"chat\", \"agent\", \"acp\"",
                ),
            ),
            // positional params are left to jsonrpsee
            ("getAgent", json!(["a"]), None),
        ];
        for (method, params, expected) in cases {
            let got = check.check(method, params);
            match expected {
                None => assert_eq!(got, Ok(()), "{method} {params}"),
                Some(start) => {
                    let message = got.expect_err(&format!("{method} {params}"));
                    assert!(message.starts_with(start), "{method} {params}: {message}");
                }
            }
        }
    }

    #[test]
    fn every_method_of_the_schema_is_checked() {
        let check = ParamsCheck::from_schema();
        assert_eq!(check.methods.len(), agent_proto::schema::methods().len());
    }
}
