//! Questions the model asks the user (`ask_user_question`), and their answers.
//!
//! A question suspends the run like a permission prompt does: the call is saved as
//! `waitingAnswer` with the questions, `questionRequested` goes out, and `answerQuestion`
//! (from any client, even after a restart) resumes the run with the answers as the call's
//! result.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One choice of a question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QuestionOption {
    /// What the user picks (short; also what an answer names).
    pub label: String,
    /// What the choice means, when the label is not enough.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// One question. The user may always answer in their own words instead of (or besides)
/// picking options.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Question {
    pub question: String,
    /// A short tag for the question (a few words), for a compact display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header: Option<String>,
    pub options: Vec<QuestionOption>,
    /// Whether more than one option may be picked.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub multi_select: bool,
}

/// The answer to one question: the labels picked, and/or free text.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct QuestionAnswer {
    /// Labels of the options picked (at most one unless the question is multiSelect).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub selected: Vec<String>,
    /// The user's own words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// How a question call was resolved: answered (one answer per question, in order),
/// declined by the user, or cancelled with its run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QuestionResolution {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub answers: Vec<QuestionAnswer>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub declined: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cancelled: bool,
}

/// A question call waiting for its answer, as `getSession` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PendingQuestion {
    pub message_id: String,
    pub tool_call_id: String,
    pub questions: Vec<Question>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn questions_and_answers_are_camel_case() {
        let q = Question {
            question: "Which database?".into(),
            header: Some("Database".into()),
            options: vec![QuestionOption {
                label: "SQLite".into(),
                description: None,
            }],
            multi_select: true,
        };
        let wire = json!({"question": "Which database?", "header": "Database",
            "options": [{"label": "SQLite"}], "multiSelect": true});
        assert_eq!(serde_json::to_value(&q).unwrap(), wire);
        assert_eq!(serde_json::from_value::<Question>(wire).unwrap(), q);
        let a: QuestionAnswer =
            serde_json::from_value(json!({"selected": ["SQLite"], "text": "and WAL"})).unwrap();
        assert_eq!(a.selected, vec!["SQLite".to_owned()]);
        assert!(
            serde_json::from_value::<QuestionAnswer>(json!({"choice": "x"})).is_err(),
            "a misspelt field is an error, not an empty answer"
        );
    }
}
