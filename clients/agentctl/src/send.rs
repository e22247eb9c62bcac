//! `agentctl send`: subscribe, send, stream the answer, exit with how the run ended.

use std::io::{IsTerminal, Read, Write};

use agent_proto::client::Client;
use agent_proto::rpc::AgentRpcClient;
use agent_proto::{Event, EventKind, LoopFinishReason};

use crate::exit::{self, Exit};

/// What to do with one event of the subscription.
#[derive(Debug, PartialEq)]
pub enum Action {
    Text(String),
    Reasoning(String),
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

    pub fn route(&mut self, event: &Event) -> Action {
        match &event.kind {
            EventKind::MessageStarted { message_id } if *message_id == self.message_id => {
                self.started = true;
                Action::Nothing
            }
            _ if !self.started => Action::Nothing,
            EventKind::TextDelta { message_id, delta } if *message_id == self.message_id => {
                Action::Text(delta.clone())
            }
            EventKind::ReasoningDelta { message_id, delta } if *message_id == self.message_id => {
                Action::Reasoning(delta.clone())
            }
            EventKind::Error {
                message_id,
                message,
                kind,
                ..
            } if message_id.as_ref().is_none_or(|id| *id == self.message_id) => {
                Action::Error(format!("error: {message} ({kind})"))
            }
            EventKind::LoopFinished { reason, .. } => Action::Done(*reason),
            _ => Action::Nothing,
        }
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

pub async fn run(client: &Client, agent: String, text: String, json: bool) -> Exit {
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
            Action::Error(line) if !json => eprintln!("\n{line}"),
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
    use agent_proto::SessionStatus;

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
                Action::Error("error: cut (providerStreamTruncated)".into()),
                Action::Done(LoopFinishReason::Error),
                Action::Nothing,
            ]
        );
    }
}
