//! The model's plan and questions at the terminal: the plan as a checklist, a question
//! asked and answered line by line (`send`), and `agentctl answer` / `agentctl plan` for
//! scripts and other terminals; and `agentctl ask`, a question to a model with no agent.

use agent_proto::client::Client;
use agent_proto::rpc::AgentRpcClient;
use agent_proto::{PlanItem, PlanStatus, Question, QuestionAnswer};
use anyhow::{Context, Result};

/// A question call of our run, waiting for its answer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct QuestionPrompt {
    pub message_id: String,
    pub tool_call_id: String,
    pub questions: Vec<Question>,
}

/// The plan as a checklist: `[x]` done, `[>]` under way (in its present form), `[ ]` to do.
pub(crate) fn plan_lines(items: &[PlanItem]) -> String {
    if items.is_empty() {
        return "(no plan)".to_owned();
    }
    items
        .iter()
        .map(|item| match item.status {
            PlanStatus::Completed => format!("[x] {}", item.content),
            PlanStatus::InProgress => format!(
                "[>] {}",
                item.active_form.as_deref().unwrap_or(&item.content)
            ),
            PlanStatus::Pending => format!("[ ] {}", item.content),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// One question with its options numbered from 1.
pub(crate) fn question_text(q: &Question) -> String {
    let mut out = match &q.header {
        Some(header) => format!("[{header}] {}", q.question),
        None => q.question.clone(),
    };
    for (i, option) in q.options.iter().enumerate() {
        out.push_str(&format!("\n  {}. {}", i + 1, option.label));
        if let Some(d) = &option.description {
            out.push_str(&format!(" - {d}"));
        }
    }
    out
}

/// What a line typed at a question means.
#[derive(Debug, PartialEq)]
pub(crate) enum Reply {
    Answer(QuestionAnswer),
    /// An empty line: decline every question of the call.
    Decline,
    /// Not understood; the reason is shown and the question asked again.
    Again(String),
}

/// Reads one typed line: option numbers (`2`, or `1,3` where several may be picked) pick
/// options; anything else is the user's own words; an empty line declines.
pub(crate) fn parse_reply(q: &Question, line: &str) -> Reply {
    let line = line.trim();
    if line.is_empty() {
        return Reply::Decline;
    }
    let picks: Option<Vec<usize>> = line
        .split([',', ' '])
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<usize>().ok())
        .collect();
    let Some(picks) = picks else {
        return Reply::Answer(QuestionAnswer {
            selected: Vec::new(),
            text: Some(line.to_owned()),
        });
    };
    if picks.len() > 1 && !q.multi_select {
        return Reply::Again("pick one option".into());
    }
    let mut selected = Vec::new();
    for n in picks {
        let Some(option) = n.checked_sub(1).and_then(|i| q.options.get(i)) else {
            return Reply::Again(format!("there is no option {n}"));
        };
        if !selected.contains(&option.label) {
            selected.push(option.label.clone());
        }
    }
    Reply::Answer(QuestionAnswer {
        selected,
        text: None,
    })
}

/// Asks every question of the call on stdin (the caller checks that it may). `None`:
/// stdin closed; `Some(None)`: declined; `Some(Some(answers))`: one answer per question.
pub(crate) async fn ask(prompt: &QuestionPrompt) -> Option<Option<Vec<QuestionAnswer>>> {
    let mut answers = Vec::new();
    for q in &prompt.questions {
        eprintln!("\n{}", question_text(q));
        let hint = if q.options.is_empty() {
            "your answer (empty declines): "
        } else if q.multi_select {
            "numbers (e.g. 1,3) or your own words (empty declines): "
        } else {
            "a number or your own words (empty declines): "
        };
        loop {
            let line = crate::send::prompt_line(hint).await?;
            match parse_reply(q, &line) {
                Reply::Answer(answer) => {
                    answers.push(answer);
                    break;
                }
                Reply::Decline => return Some(None),
                Reply::Again(why) => eprintln!("{why}"),
            }
        }
    }
    Some(Some(answers))
}

/// `agentctl answer`: answers a question call with `--data` (the `answers` array of
/// `answerQuestion`), or one free-text answer per question, or declines it.
pub(crate) async fn answer(
    client: &Client,
    message: String,
    tool_call: String,
    texts: Vec<String>,
    data: Option<String>,
    decline: bool,
) -> Result<()> {
    let answers = match (data, decline) {
        (Some(_), true) => anyhow::bail!("--data and --decline exclude each other"),
        (_, true) if !texts.is_empty() => anyhow::bail!("--decline takes no answers"),
        (_, true) => None,
        (Some(_), false) if !texts.is_empty() => {
            anyhow::bail!("give the answers either as --data or as words, not both")
        }
        (Some(json), false) => Some(
            serde_json::from_str::<Vec<QuestionAnswer>>(&json)
                .context("--data must be an array of {selected?: [label], text?}")?,
        ),
        (None, false) if texts.is_empty() => {
            anyhow::bail!("give one answer per question, --data, or --decline")
        }
        (None, false) => Some(
            texts
                .into_iter()
                .map(|text| QuestionAnswer {
                    selected: Vec::new(),
                    text: Some(text),
                })
                .collect(),
        ),
    };
    client
        .answer_question(message, tool_call, answers, decline.then_some(true))
        .await?;
    outln!("{}", if decline { "declined" } else { "answered" });
    Ok(())
}

/// `agentctl ask`: one model call with no agent (`complete`); the answer on stdout.
pub(crate) async fn ask_model(
    client: &Client,
    text: String,
    provider: Option<String>,
    model: Option<String>,
    system: Option<String>,
    json: bool,
) -> Result<()> {
    let text = if text == "-" {
        let mut buf = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut buf)
            .context("cannot read the question from stdin")?;
        buf
    } else {
        text
    };
    let answer = client
        .complete(provider, model, None, Some(text), system, None, None, None)
        .await?;
    if json {
        outln!("{}", serde_json::to_string(&answer)?);
    } else {
        outln!("{}", answer.text);
    }
    Ok(())
}

/// `agentctl plan`: the agent's plan as a checklist.
pub(crate) async fn plan(client: &Client, agent: String, json: bool) -> Result<()> {
    let plan = client.get_plan(agent).await?;
    if json {
        outln!("{}", serde_json::to_string(&plan)?);
    } else {
        outln!("{}", plan_lines(&plan.items));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_proto::QuestionOption;

    fn question(multi_select: bool) -> Question {
        Question {
            question: "Which database?".into(),
            header: Some("DB".into()),
            options: ["SQLite", "Postgres", "None"]
                .map(|label| QuestionOption {
                    label: label.into(),
                    description: None,
                })
                .to_vec(),
            multi_select,
        }
    }

    fn picked(labels: &[&str]) -> Reply {
        Reply::Answer(QuestionAnswer {
            selected: labels.iter().map(|l| l.to_string()).collect(),
            text: None,
        })
    }

    #[test]
    fn typed_replies() {
        let one = question(false);
        let many = question(true);
        assert_eq!(parse_reply(&one, "2\n"), picked(&["Postgres"]));
        assert_eq!(parse_reply(&many, "1, 3"), picked(&["SQLite", "None"]));
        assert_eq!(parse_reply(&many, "3 3"), picked(&["None"]));
        assert_eq!(
            parse_reply(&one, "1,2"),
            Reply::Again("pick one option".into())
        );
        assert_eq!(
            parse_reply(&one, "4"),
            Reply::Again("there is no option 4".into())
        );
        assert_eq!(
            parse_reply(&one, "0"),
            Reply::Again("there is no option 0".into())
        );
        assert_eq!(parse_reply(&one, "  "), Reply::Decline);
        assert_eq!(
            parse_reply(&one, "MySQL 8"),
            Reply::Answer(QuestionAnswer {
                selected: Vec::new(),
                text: Some("MySQL 8".into()),
            })
        );
    }

    #[test]
    fn plans_and_questions_as_text() {
        let item = |content: &str, status, active: Option<&str>| PlanItem {
            content: content.into(),
            status,
            active_form: active.map(str::to_owned),
        };
        let items = [
            item("Read the code", PlanStatus::Completed, None),
            item(
                "Fix the bug",
                PlanStatus::InProgress,
                Some("Fixing the bug"),
            ),
            item("Run the tests", PlanStatus::Pending, None),
        ];
        assert_eq!(
            plan_lines(&items),
            "[x] Read the code\n[>] Fixing the bug\n[ ] Run the tests"
        );
        assert_eq!(plan_lines(&[]), "(no plan)");
        assert_eq!(
            question_text(&question(false)),
            "[DB] Which database?\n  1. SQLite\n  2. Postgres\n  3. None"
        );
    }
}
