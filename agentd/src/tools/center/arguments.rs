//! A model's argument text, parsed (and repaired when it can be).

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
