//! A model's tool-call arguments: parsed (repaired when they are almost JSON) and checked
//! against the tool's schema. Pure: the results are texts for the model.

use serde_json::Value;

/// Arguments as the model wrote them, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedArguments {
    /// The parsed (or repaired) arguments; `Null` when they could not be parsed.
    pub value: Value,
    /// The text as written, when it is not exactly `value` (repaired or unparsable).
    pub raw: Option<String>,
    /// Why they could not be parsed.
    pub error: Option<String>,
}

/// Parses a model's argument text: JSON, else JSON repaired, else an error for the model.
pub fn parse_arguments(raw: &str) -> ParsedArguments {
    let trimmed = raw.trim();
    if trimmed.is_empty() {
        return ParsedArguments {
            value: Value::Object(serde_json::Map::new()),
            raw: None,
            error: None,
        };
    }
    if let Ok(value) = serde_json::from_str::<Value>(trimmed) {
        return ParsedArguments {
            value,
            raw: None,
            error: None,
        };
    }
    match jsonrepair::loads(trimmed, &jsonrepair::Options::default()) {
        Ok(value) if value.is_object() => ParsedArguments {
            value,
            raw: Some(raw.to_owned()),
            error: None,
        },
        Ok(_) | Err(_) => ParsedArguments {
            value: Value::Null,
            raw: Some(raw.to_owned()),
            error: Some(format!(
                "the arguments are not valid JSON and could not be repaired: {}",
                crate::provider::excerpt(raw, 500)
            )),
        },
    }
}

/// Checks arguments against a tool's schema; `Err` is the result text for the model.
pub(super) fn check_schema(
    validator: &jsonschema::Validator,
    args: &Value,
    name: &str,
    schema: &Value,
) -> Result<(), String> {
    let errors: Vec<String> = validator
        .iter_errors(args)
        .take(5)
        .map(|e| {
            let at = e.instance_path().to_string();
            if at.is_empty() {
                e.to_string()
            } else {
                format!("{at}: {e}")
            }
        })
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "invalid arguments for {name}: {}; the schema is {schema}",
            errors.join("; ")
        ))
    }
}
