//! The turn's output schema (`sendMessage` `outputSchema`) applied to the final answer:
//! the text of the step that called no tool, read as JSON and validated. A first answer
//! that does not fit gets one corrective retry in the same run: the next request adds a
//! user-role correction naming the errors after the answer (the correction is sent, not
//! stored: the message keeps both answers, and clients see the retry as a new step, its
//! `messageStarted`). A second misfit ends the run with `outputSchemaMismatch`.

use serde_json::Value;

/// How many validation errors a correction or an error names.
const ERRORS_NAMED: usize = 5;

/// What the final answer was against the schema.
#[derive(Debug, PartialEq)]
pub(super) enum Checked {
    /// Valid: the answer parsed.
    Valid(Value),
    /// Not valid: what is wrong with it, in a sentence.
    Invalid(String),
}

/// The schema of a run, compiled once.
pub(super) struct OutputCheck {
    schema: Value,
    validator: jsonschema::Validator,
    /// The one corrective retry was used.
    pub(super) retried: bool,
}

impl OutputCheck {
    /// `Err`: the schema does not compile (the send checked it, so the store changed).
    pub(super) fn new(schema: &Value) -> Result<OutputCheck, String> {
        let validator = jsonschema::validator_for(schema)
            .map_err(|e| format!("the turn's outputSchema is not a valid JSON Schema: {e}"))?;
        Ok(OutputCheck {
            schema: schema.clone(),
            validator,
            retried: false,
        })
    }

    /// The answer `text` read as JSON (a fence of ```json around it allowed) and
    /// validated.
    pub(super) fn check(&self, text: &str) -> Checked {
        let value: Value = match serde_json::from_str(unfenced(text)) {
            Ok(value) => value,
            Err(e) => return Checked::Invalid(format!("the answer is not JSON ({e})")),
        };
        let errors: Vec<String> = self
            .validator
            .iter_errors(&value)
            .take(ERRORS_NAMED)
            .map(|e| {
                let at = e.instance_path().to_string();
                let at = if at.is_empty() { "/".to_owned() } else { at };
                format!("at {at}: {e}")
            })
            .collect();
        if errors.is_empty() {
            Checked::Valid(value)
        } else {
            Checked::Invalid(format!(
                "the answer is not valid against the schema: {}",
                errors.join("; ")
            ))
        }
    }

    /// The user-role correction the retry sends after the misfit answer.
    pub(super) fn correction(&self, why: &str) -> String {
        format!(
            "Your last answer cannot be used: {why}. Answer again with only a JSON value \
             (no other text) that is valid against this JSON Schema:\n{}",
            self.schema
        )
    }
}

/// The text inside a Markdown code fence around the whole answer, else the text.
fn unfenced(text: &str) -> &str {
    let trimmed = text.trim();
    let Some(rest) = trimmed.strip_prefix("```") else {
        return trimmed;
    };
    let Some(body) = rest.strip_suffix("```") else {
        return trimmed;
    };
    // The fence's info string (`json`) runs to the end of its line.
    body.split_once('\n')
        .map_or(body, |(_, inside)| inside)
        .trim()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn answers_are_read_and_validated() {
        let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}},
            "required": ["n"]});
        let check = OutputCheck::new(&schema).unwrap();
        let valid = |text: &str| match check.check(text) {
            Checked::Valid(v) => Ok(v),
            Checked::Invalid(why) => Err(why),
        };
        assert_eq!(valid(" {\"n\": 3} "), Ok(json!({"n": 3})));
        assert_eq!(valid("```json\n{\"n\": 4}\n```"), Ok(json!({"n": 4})));
        let why = valid("{\"n\": \"x\"}").unwrap_err();
        assert!(why.contains("at /n:") && why.contains("integer"), "{why}");
        let why = valid("{}").unwrap_err();
        assert!(why.contains("at /:") && why.contains("\"n\""), "{why}");
        assert!(valid("sure! {\"n\": 1}").unwrap_err().contains("not JSON"));
        assert!(check.correction("x").contains("\"required\":[\"n\"]"));
        assert!(OutputCheck::new(&json!({"type": 12})).is_err());
    }
}
