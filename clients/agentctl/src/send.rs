//! `agentctl send`: subscribe, send, stream the answer, show tool calls as they happen,
//! ask at the terminal when a permission is requested, exit with how the run ended.
//!
//! stdout carries only the model's text; reasoning, tool activity, prompts and errors go to
//! stderr, so `agentctl send A "..." > answer.txt` captures the answer alone.

use std::io::{IsTerminal, Read, Write};

use agent_proto::client::Client;
use agent_proto::rpc::AgentRpcClient;
use agent_proto::{Event, EventKind, LoopFinishReason, Remember};

use crate::exit::{self, Exit};
use crate::format;

/// A permission prompt of our run.
#[derive(Debug, Clone, PartialEq)]
pub struct Prompt {
    pub message_id: String,
    pub tool_call_id: String,
    pub description: String,
    pub risk: Option<String>,
    pub rememberable: bool,
}

/// What to do with one event of the subscription.
#[derive(Debug, PartialEq)]
pub enum Action {
    Text(String),
    Reasoning(String),
    /// A line about tool activity (a call, a result, an answer).
    Tool(String),
    Ask(Prompt),
    Error(String),
    Done(LoopFinishReason),
    Nothing,
}

/// Follows the events of one agent and picks out those of our run: it starts at the
/// `messageStarted` of our assistant message and ends at the next `loopFinished`.
#[derive(Debug)]
pub struct RunTracker {
    message_id: String,
    started: bool,
}

impl RunTracker {
    pub fn new(message_id: String) -> Self {
        RunTracker {
            message_id,
            started: false,
        }
    }

    fn ours(&self, message_id: &str) -> bool {
        message_id == self.message_id
    }

    pub fn route(&mut self, event: &Event) -> Action {
        match &event.kind {
            EventKind::MessageStarted { message_id } if self.ours(message_id) => {
                self.started = true;
                Action::Nothing
            }
            _ if !self.started => Action::Nothing,
            EventKind::TextDelta { message_id, delta } if self.ours(message_id) => {
                Action::Text(delta.clone())
            }
            EventKind::ReasoningDelta { message_id, delta } if self.ours(message_id) => {
                Action::Reasoning(delta.clone())
            }
            EventKind::ToolCallReady {
                message_id,
                name,
                arguments,
                ..
            } if self.ours(message_id) => Action::Tool(format!(
                "[tool] {}",
                format::tool_call_line(name, arguments)
            )),
            EventKind::ToolResult {
                message_id,
                status,
                content,
                duration_ms,
                ..
            } if self.ours(message_id) => Action::Tool(format!(
                "[{} in {duration_ms} ms] {}",
                format::status_name(*status),
                format::first_lines(content, 3).replace('\n', "\n    ")
            )),
            EventKind::PermissionRequested {
                message_id,
                tool_call_id,
                description,
                risk,
                rememberable,
                ..
            } if self.ours(message_id) => Action::Ask(Prompt {
                message_id: message_id.clone(),
                tool_call_id: tool_call_id.clone(),
                description: description.clone(),
                risk: risk.clone(),
                rememberable: *rememberable,
            }),
            EventKind::Error {
                message_id,
                message,
                kind,
                ..
            } if message_id.as_ref().is_none_or(|id| self.ours(id)) => {
                Action::Error(format!("error: {message} ({kind})"))
            }
            EventKind::LoopFinished { reason, .. } => Action::Done(*reason),
            _ => Action::Nothing,
        }
    }
}

/// An answer typed at the prompt: `y`, `n`, `s`/`session`, `a`/`always` (empty is no).
pub fn parse_answer(line: &str) -> Option<(bool, Remember)> {
    match line.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Some((true, Remember::Once)),
        "n" | "no" | "" => Some((false, Remember::Once)),
        "s" | "session" => Some((true, Remember::Session)),
        "a" | "always" => Some((true, Remember::Always)),
        _ => None,
    }
}

fn read_text(text: String) -> Result<String, Exit> {
    if text != "-" {
        return Ok(text);
    }
    let mut buf = String::new();
    if let Err(e) = std::io::stdin().read_to_string(&mut buf) {
        eprintln!("error: cannot read the message from stdin: {e}");
        return Err(Exit::Error);
    }
    Ok(buf)
}

/// Asks at the terminal; `None` when there is no terminal to ask at (or it closed).
async fn ask(prompt: &Prompt) -> Option<(bool, Remember)> {
    if !std::io::stdin().is_terminal() {
        return None;
    }
    let mut question = format!("\nallow {}?", prompt.description);
    if let Some(risk) = &prompt.risk {
        question.push_str(&format!(" (risky: {risk})"));
    }
    question.push_str(if prompt.rememberable {
        " [y]es / [n]o / [s]ession / [a]lways: "
    } else {
        " [y]es / [n]o: "
    });
    loop {
        eprint!("{question}");
        let _ = std::io::stderr().flush();
        let line = tokio::task::spawn_blocking(|| {
            let mut line = String::new();
            std::io::stdin().read_line(&mut line).map(|n| (n, line))
        })
        .await
        .ok()?
        .ok()?;
        if line.0 == 0 {
            return None; // end of input
        }
        match parse_answer(&line.1) {
            Some((_, remember)) if !prompt.rememberable && remember != Remember::Once => {
                eprintln!("this call cannot be remembered; answer y or n");
            }
            Some(answer) => return Some(answer),
            None => eprintln!("answer y, n, s or a"),
        }
    }
}

/// How `send` answers permission prompts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answering {
    /// Ask at the terminal (and stop when there is none).
    Ask,
    /// Grant every prompt, once.
    Yes,
}

pub async fn run(
    client: &Client,
    agent: String,
    text: String,
    json: bool,
    answering: Answering,
) -> Exit {
    let text = match read_text(text) {
        Ok(t) => t,
        Err(exit) => return exit,
    };
    // Take over Ctrl-C before the run exists, so it always means "cancel the run".
    let mut interrupt =
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt()) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("error: cannot handle Ctrl-C: {e}");
                return Exit::Error;
            }
        };
    // Subscribe first so no event of the run is missed.
    let mut sub = match client.subscribe_events(Some(agent.clone()), None).await {
        Ok(sub) => sub,
        Err(e) => return exit::report(&e.into()),
    };
    let sent = match client.send_message(agent.clone(), text.into(), None).await {
        Ok(sent) => sent,
        Err(e) => return exit::report(&e.into()),
    };
    let mut tracker = RunTracker::new(sent.assistant_message_id);
    let dim = std::io::stderr().is_terminal();
    let mut printed_text = false;
    let mut printed_reasoning = false;
    // A prompt we answered: the loopFinished(waitingPermission) that follows is not the end.
    let mut answered = false;
    let mut interrupts = 0;
    loop {
        let event = tokio::select! {
            event = sub.next() => event,
            _ = interrupt.recv() => {
                interrupts += 1;
                if interrupts > 1 {
                    return Exit::Interrupted;
                }
                eprintln!("\ncancelling (Ctrl-C again to quit at once)...");
                if let Err(e) = client.cancel_loop(agent.clone()).await {
                    return exit::report(&e.into());
                }
                continue;
            }
        };
        let event = match event {
            Some(Ok(event)) => event,
            Some(Err(e)) => {
                eprintln!("warning: an event this agentctl cannot read: {e}");
                continue;
            }
            None => {
                eprintln!("\nerror: lost the connection to agentd before the run ended");
                return Exit::Unreachable;
            }
        };
        if json {
            match serde_json::to_string(&event) {
                Ok(line) => println!("{line}"),
                Err(e) => eprintln!("warning: cannot print an event: {e}"),
            }
        }
        match tracker.route(&event) {
            Action::Text(delta) if !json => {
                if printed_reasoning && !printed_text {
                    eprintln!(); // the answer starts below the reasoning
                }
                print!("{delta}");
                let _ = std::io::stdout().flush();
                printed_text = true;
            }
            Action::Reasoning(delta) if !json => {
                if dim {
                    eprint!("\x1b[2m{delta}\x1b[0m");
                } else {
                    eprint!("{delta}");
                }
                printed_reasoning = true;
            }
            Action::Tool(line) if !json => eprintln!("\n{line}"),
            Action::Error(line) if !json => eprintln!("\n{line}"),
            Action::Ask(prompt) => {
                let answer = match answering {
                    Answering::Yes => Some((true, Remember::Once)),
                    Answering::Ask => ask(&prompt).await,
                };
                let Some((granted, remember)) = answer else {
                    eprintln!(
                        "\npermission requested: {}\nanswer it with: agentctl permit {} {} allow|deny",
                        prompt.description, prompt.message_id, prompt.tool_call_id
                    );
                    continue;
                };
                match client
                    .handle_permission_response(
                        prompt.message_id.clone(),
                        prompt.tool_call_id.clone(),
                        granted,
                        None,
                        Some(remember),
                    )
                    .await
                {
                    Ok(_) => answered = true,
                    Err(agent_proto::client::Error::Call(e))
                        if e.code() == agent_proto::ErrorKind::PermissionNotPending.code() =>
                    {
                        // Another client answered first; its answer resumes the run.
                        eprintln!("(answered by another client)");
                        answered = true;
                    }
                    Err(e) => return exit::report(&e.into()),
                }
            }
            Action::Done(LoopFinishReason::WaitingPermission) if answered => answered = false,
            Action::Done(reason) => {
                if printed_text {
                    println!();
                }
                return Exit::of_run(reason);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_proto::{PermissionLevel, SessionStatus, ToolCallStatus};
    use serde_json::json;

    fn ev(kind: EventKind) -> Event {
        Event {
            seq: 0,
            agent_id: "a".into(),
            at: 0,
            kind,
        }
    }

    fn text(id: &str, delta: &str) -> EventKind {
        EventKind::TextDelta {
            message_id: id.into(),
            delta: delta.into(),
        }
    }

    fn finished(reason: LoopFinishReason) -> EventKind {
        EventKind::LoopFinished {
            reason,
            error: None,
        }
    }

    #[test]
    fn only_our_run_counts() {
        let events = [
            // The tail of an earlier run: ignored, including its loopFinished.
            text("old", "stale"),
            finished(LoopFinishReason::Cancelled),
            EventKind::StatusChanged {
                status: SessionStatus::Generating,
            },
            EventKind::MessageStarted {
                message_id: "ours".into(),
            },
            EventKind::ReasoningDelta {
                message_id: "ours".into(),
                delta: "hmm".into(),
            },
            text("ours", "Hi"),
            EventKind::ToolCallReady {
                message_id: "ours".into(),
                tool_call_id: "c1".into(),
                name: "bash".into(),
                arguments: json!({"command": "ls"}),
            },
            EventKind::PermissionRequested {
                message_id: "ours".into(),
                tool_call_id: "c1".into(),
                tool_name: "bash".into(),
                permission_type: PermissionLevel::Execute,
                description: "run: ls".into(),
                arguments: json!({"command": "ls"}),
                command: Some("ls".into()),
                signature: Some(vec!["ls".into()]),
                paths: None,
                risk: None,
                rememberable: true,
            },
            EventKind::ToolResult {
                message_id: "ours".into(),
                tool_call_id: "c1".into(),
                status: ToolCallStatus::Success,
                content: "a\nb\nc\nd".into(),
                offload_path: None,
                duration_ms: 3,
            },
            EventKind::Error {
                message_id: Some("ours".into()),
                message: "cut".into(),
                kind: "providerStreamTruncated".into(),
                retryable: true,
            },
            finished(LoopFinishReason::Error),
            text("later", "never reached"),
        ];
        let mut tracker = RunTracker::new("ours".into());
        let actions: Vec<Action> = events.into_iter().map(|k| tracker.route(&ev(k))).collect();
        assert_eq!(
            actions,
            [
                Action::Nothing,
                Action::Nothing,
                Action::Nothing,
                Action::Nothing,
                Action::Reasoning("hmm".into()),
                Action::Text("Hi".into()),
                Action::Tool("[tool] bash: ls".into()),
                Action::Ask(Prompt {
                    message_id: "ours".into(),
                    tool_call_id: "c1".into(),
                    description: "run: ls".into(),
                    risk: None,
                    rememberable: true,
                }),
                Action::Tool("[success in 3 ms] a\n    b\n    c\n    ... (1 more lines)".into()),
                Action::Error("error: cut (providerStreamTruncated)".into()),
                Action::Done(LoopFinishReason::Error),
                Action::Nothing,
            ]
        );
    }

    #[test]
    fn answers() {
        let cases = [
            ("y", Some((true, Remember::Once))),
            ("YES\n", Some((true, Remember::Once))),
            ("n", Some((false, Remember::Once))),
            ("", Some((false, Remember::Once))),
            ("s", Some((true, Remember::Session))),
            ("always", Some((true, Remember::Always))),
            ("maybe", None),
        ];
        for (line, expected) in cases {
            assert_eq!(parse_answer(line), expected, "{line:?}");
        }
    }
}
