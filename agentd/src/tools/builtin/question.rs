//! `ask_user_question`: the model asks the user. The call never "runs": the loop suspends
//! the run on it like on a permission prompt (`questionRequested`), and the answer given
//! with `answerQuestion` becomes its result. This file holds the tool's definition and the
//! pure parts: reading the questions, checking answers, writing the result.

use agent_proto::{PermissionLevel, Question, QuestionAnswer, QuestionOption, QuestionResolution};
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use super::args::TypedTool;
use crate::tools::{Access, ToolContext, ToolOutput};

/// The tool's name (the loop suspends on calls of it).
pub const NAME: &str = "ask_user_question";
/// Questions one call may ask.
const MAX_QUESTIONS: usize = 4;
/// Options one question may offer.
const MAX_OPTIONS: usize = 8;
/// Characters of one question, label, description or answer text.
const MAX_TEXT: usize = 4_000;

/// The result a declined (or cancelled) question gives the model.
pub const DECLINED: &str = "the user declined to answer these questions; go on without the answers (make a reasonable choice and say which), or stop and explain what you need";

#[derive(Debug)]
pub(super) struct AskUserQuestion;

/// `ask_user_question`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct AskArgs {
    #[schemars(length(min = 1, max = MAX_QUESTIONS))]
    questions: Vec<Asked>,
}

// One question as the model writes it (an `agent_proto::Question`). No doc comments here:
// they would become descriptions the model was never given.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Asked {
    #[schemars(length(min = 1))]
    question: String,
    header: Option<String>,
    #[schemars(length(max = MAX_OPTIONS))]
    options: Vec<Offered>,
    #[serde(default)]
    multi_select: bool,
}

// One option of a question (an `agent_proto::QuestionOption`).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Offered {
    #[schemars(length(min = 1))]
    label: String,
    description: Option<String>,
}

impl From<Asked> for Question {
    fn from(asked: Asked) -> Question {
        Question {
            question: asked.question,
            header: asked.header,
            options: asked
                .options
                .into_iter()
                .map(|o| QuestionOption {
                    label: o.label,
                    description: o.description,
                })
                .collect(),
            multi_select: asked.multi_select,
        }
    }
}

fn too_long(what: &str, text: &str) -> Option<String> {
    let n = text.chars().count();
    (n > MAX_TEXT).then(|| format!("{what} has {n} characters; at most {MAX_TEXT}"))
}

/// The questions in a call's arguments, checked as `ask_user_question` checks them. `Err`
/// is the result text for the model.
pub fn parse_questions(args: &Value) -> Result<Vec<Question>, String> {
    let raw = args.get("questions").ok_or("questions is required")?;
    let asked: Vec<Asked> = super::args::parse(raw).map_err(|e| {
        format!("questions is not a list of {{question, header?, options: [{{label, description?}}], multiSelect?}}: {e}")
    })?;
    check_questions(asked)
}

/// The questions, checked: 1 to 4, each with text, options with distinct non-empty
/// labels. `Err` is the result text for the model.
fn check_questions(asked: Vec<Asked>) -> Result<Vec<Question>, String> {
    let questions: Vec<Question> = asked.into_iter().map(Question::from).collect();
    if questions.is_empty() || questions.len() > MAX_QUESTIONS {
        return Err(format!(
            "ask 1 to {MAX_QUESTIONS} questions at a time, not {}",
            questions.len()
        ));
    }
    for (i, q) in questions.iter().enumerate() {
        let at = format!("question {}", i + 1);
        if q.question.trim().is_empty() {
            return Err(format!("{at} has no text"));
        }
        if q.options.len() > MAX_OPTIONS {
            return Err(format!(
                "{at} has {} options; at most {MAX_OPTIONS} (the user may always answer in their own words)",
                q.options.len()
            ));
        }
        let texts = std::iter::once(&q.question)
            .chain(q.header.iter())
            .chain(q.options.iter().map(|o| &o.label))
            .chain(q.options.iter().filter_map(|o| o.description.as_ref()));
        if let Some(e) = texts.into_iter().find_map(|t| too_long(&at, t)) {
            return Err(e);
        }
        for (j, option) in q.options.iter().enumerate() {
            if option.label.trim().is_empty() {
                return Err(format!("{at}: option {} has no label", j + 1));
            }
            if q.options[..j].iter().any(|o| o.label == option.label) {
                return Err(format!(
                    "{at}: two options are labelled {:?}; labels must differ",
                    option.label
                ));
            }
        }
    }
    Ok(questions)
}

/// Checks a client's answers against the questions: one per question, in order; labels
/// among the options (one at most unless multiSelect); something picked or written.
/// `Err` is the message for the client.
pub fn check_answers(questions: &[Question], answers: &[QuestionAnswer]) -> Result<(), String> {
    if answers.len() != questions.len() {
        return Err(format!(
            "{} answers for {} questions: give one answer per question, in order (or declined: true)",
            answers.len(),
            questions.len()
        ));
    }
    for (i, (q, a)) in questions.iter().zip(answers).enumerate() {
        let at = format!("answer {}", i + 1);
        let text = a.text.as_deref().map(str::trim).unwrap_or_default();
        if a.selected.is_empty() && text.is_empty() {
            return Err(format!(
                "{at} picks no option and has no text: pick an option or write an answer"
            ));
        }
        if let Some(e) = a.text.as_deref().and_then(|t| too_long(&at, t)) {
            return Err(e);
        }
        if !q.multi_select && a.selected.len() > 1 {
            return Err(format!(
                "{at} picks {} options; question {} takes one",
                a.selected.len(),
                i + 1
            ));
        }
        for label in &a.selected {
            if !q.options.iter().any(|o| &o.label == label) {
                let labels: Vec<&str> = q.options.iter().map(|o| o.label.as_str()).collect();
                return Err(format!(
                    "{at} picks {label:?}, which is not an option of question {} (options: {})",
                    i + 1,
                    labels.join(", ")
                ));
            }
        }
        if a.selected
            .iter()
            .enumerate()
            .any(|(j, l)| a.selected[..j].contains(l))
        {
            return Err(format!("{at} picks the same option twice"));
        }
    }
    Ok(())
}

/// What the model gets: each question with the user's answer, or that the user declined.
pub fn result_text(questions: &[Question], resolution: &QuestionResolution) -> String {
    if resolution.declined || resolution.cancelled || resolution.answers.is_empty() {
        return DECLINED.to_owned();
    }
    let mut out = String::from("The user answered:\n");
    for (q, a) in questions.iter().zip(&resolution.answers) {
        out.push_str(&format!("\nQ: {}\nA: ", q.question));
        let mut parts = Vec::new();
        if !a.selected.is_empty() {
            parts.push(a.selected.join(", "));
        }
        if let Some(text) = a.text.as_deref().map(str::trim).filter(|t| !t.is_empty()) {
            parts.push(if a.selected.is_empty() {
                text.to_owned()
            } else {
                format!("(and wrote) {text}")
            });
        }
        out.push_str(&parts.join(" "));
        out.push('\n');
    }
    out
}

impl TypedTool for AskUserQuestion {
    type Args = AskArgs;

    fn name(&self) -> &'static str {
        NAME
    }

    fn description(&self) -> &'static str {
        "Ask the user 1 to 4 questions when you cannot go on well without their decision (a choice between approaches, a missing requirement, a preference). Each question has a short header, 2 to 4 options (label and optional description) and multiSelect when several may be picked; the user may always answer in their own words instead. Your turn pauses until they answer; the answers come back as this call's result. Do not ask what you can find out yourself."
    }

    fn level(&self) -> PermissionLevel {
        PermissionLevel::Read
    }

    fn offloadable(&self) -> bool {
        false
    }

    fn access(&self, args: &AskArgs, _ctx: &ToolContext) -> Result<Access, String> {
        check_questions(args.questions.clone())?;
        Ok(Access::Agent)
    }

    /// Never reached through the loop, which suspends on the call instead.
    fn run<'a>(&'a self, _args: AskArgs, _ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async {
            ToolOutput::error("ask_user_question can only be answered by a user of an agent's run")
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn question(multi: bool) -> Question {
        Question {
            question: "Which database?".into(),
            header: Some("DB".into()),
            options: vec![
                QuestionOption {
                    label: "SQLite".into(),
                    description: None,
                },
                QuestionOption {
                    label: "Postgres".into(),
                    description: Some("a server".into()),
                },
            ],
            multi_select: multi,
        }
    }

    #[test]
    fn questions_are_checked() {
        let ok = json!({"questions": [{"question": "Which?", "options": [{"label": "a"}, {"label": "b"}]}]});
        assert_eq!(parse_questions(&ok).unwrap().len(), 1);
        let q = |n: usize| json!({"question": format!("q{n}"), "options": []});
        let cases = [
            (json!({}), "questions is required"),
            (json!({"questions": []}), "ask 1 to 4 questions"),
            (
                json!({"questions": [q(1), q(2), q(3), q(4), q(5)]}),
                "ask 1 to 4 questions",
            ),
            (
                json!({"questions": [{"question": " ", "options": []}]}),
                "question 1 has no text",
            ),
            (
                json!({"questions": [{"question": "x", "options": [{"label": "a"}, {"label": "a"}]}]}),
                "question 1: two options are labelled \"a\"",
            ),
            (
                json!({"questions": [{"question": "x", "options": [{"label": ""}]}]}),
                "question 1: option 1 has no label",
            ),
            (
                json!({"questions": [{"question": "x"}]}),
                "questions is not a list",
            ),
        ];
        for (args, start) in cases {
            let e = parse_questions(&args).unwrap_err();
            assert!(e.starts_with(start), "{args}: {e}");
        }
    }

    #[test]
    fn answers_are_checked_against_their_questions() {
        let qs = [question(false), question(true)];
        let pick = |labels: &[&str], text: Option<&str>| QuestionAnswer {
            selected: labels.iter().map(|l| (*l).to_owned()).collect(),
            text: text.map(str::to_owned),
        };
        let good = [
            pick(&["SQLite"], None),
            pick(&["SQLite", "Postgres"], Some("both")),
        ];
        assert_eq!(check_answers(&qs, &good), Ok(()));
        assert_eq!(
            check_answers(&qs, &[pick(&[], Some("MySQL")), pick(&[], Some("none"))]),
            Ok(()),
            "free text is always allowed"
        );
        let cases: Vec<(Vec<QuestionAnswer>, &str)> = vec![
            (vec![pick(&["SQLite"], None)], "1 answers for 2 questions"),
            (
                vec![pick(&[], None), pick(&["SQLite"], None)],
                "answer 1 picks no option",
            ),
            (
                vec![pick(&["SQLite", "Postgres"], None), pick(&["SQLite"], None)],
                "answer 1 picks 2 options; question 1 takes one",
            ),
            (
                vec![pick(&["Oracle"], None), pick(&["SQLite"], None)],
                "answer 1 picks \"Oracle\", which is not an option",
            ),
            (
                vec![pick(&["SQLite"], None), pick(&["SQLite", "SQLite"], None)],
                "answer 2 picks the same option twice",
            ),
        ];
        for (answers, start) in cases {
            let e = check_answers(&qs, &answers).unwrap_err();
            assert!(e.starts_with(start), "{answers:?}: {e}");
        }
        let text = result_text(
            &qs,
            &QuestionResolution {
                answers: good.to_vec(),
                declined: false,
                cancelled: false,
            },
        );
        assert_eq!(
            text,
            "The user answered:\n\nQ: Which database?\nA: SQLite\n\nQ: Which database?\nA: SQLite, Postgres (and wrote) both\n"
        );
        let declined = QuestionResolution {
            declined: true,
            ..QuestionResolution::default()
        };
        assert_eq!(result_text(&qs, &declined), DECLINED);
    }
}
