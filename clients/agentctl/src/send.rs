//! `agentctl send`: subscribe, send, stream the answer, show tool calls as they happen,
//! ask at the terminal when a permission is requested, exit with how the run ended.
//!
//! stdout carries only the model's text; reasoning, tool activity, prompts and errors go to
//! stderr, so `agentctl send A "..." > answer.txt` captures the answer alone.

use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;

use agent_proto::client::Client;
use agent_proto::rpc::AgentRpcClient;
use agent_proto::{
    ContentPart, Delivery, Event, EventKind, LoopFinishReason, MessageContent, Remember, WhenBusy,
};
use tokio::signal::unix::{Signal, SignalKind, signal};

use crate::exit::{self, Exit};
use crate::format;
use crate::questions::{self, QuestionPrompt};

/// A permission prompt of our run.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Prompt {
    pub message_id: String,
    pub tool_call_id: String,
    pub description: String,
    pub risk: Option<String>,
    pub rememberable: bool,
}

/// What to do with one event of the subscription.
#[derive(Debug, PartialEq)]
pub(crate) enum Action {
    Text(String),
    Reasoning(String),
    /// A line about tool activity (a call, a result).
    Tool(String),
    /// A piece of a running command's output.
    Output(agent_proto::OutputStream, String),
    /// Our run stopped at this permission prompt: answer it (the run then resumes with
    /// another `messageStarted` of our message) or end with `waitingPermission`.
    Ask(Prompt),
    /// Our run stopped at a question of the model: answer it (the run resumes) or end with
    /// `waitingQuestion`.
    AskQuestion(QuestionPrompt),
    /// The agent's plan changed: show it.
    Plan(Vec<agent_proto::PlanItem>),
    Error(String),
    /// Our run ended: `send` exits with this reason.
    Done(LoopFinishReason),
    Nothing,
}

/// Follows the events of one agent and picks out those of our run: it starts at the
/// `messageStarted` of our assistant message and ends at the next `loopFinished` (events
/// before that `messageStarted`, such as the tail of an earlier run, are ignored).
///
/// A permission prompt is held until the `loopFinished(waitingPermission)` that follows it,
/// because the daemon takes answers only once the run has stopped; that `loopFinished`
/// becomes [`Action::Ask`] instead of the end. The tracker does no I/O, so the choice of
/// the `loopFinished` that ends a `send` is tested over plain event sequences.
#[derive(Debug)]
pub(crate) struct RunTracker {
    message_id: String,
    started: bool,
    prompt: Option<Prompt>,
    question: Option<QuestionPrompt>,
}

impl RunTracker {
    pub(crate) fn new(message_id: String) -> Self {
        RunTracker {
            message_id,
            started: false,
            prompt: None,
            question: None,
        }
    }

    fn ours(&self, message_id: &str) -> bool {
        message_id == self.message_id
    }

    pub(crate) fn route(&mut self, event: &Event) -> Action {
        match &event.kind {
            EventKind::MessageStarted { message_id, .. } if self.ours(message_id) => {
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
            EventKind::ToolProgress {
                message_id,
                output: Some(output),
                ..
            } if self.ours(message_id) => Action::Output(output.stream, output.text.clone()),
            EventKind::ToolProgress {
                message_id,
                message: Some(note),
                ..
            } if self.ours(message_id) => Action::Tool(format!("[progress] {note}")),
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
            } if self.ours(message_id) => {
                self.prompt = Some(Prompt {
                    message_id: message_id.clone(),
                    tool_call_id: tool_call_id.clone(),
                    description: description.clone(),
                    risk: risk.clone(),
                    rememberable: *rememberable,
                });
                Action::Nothing
            }
            EventKind::QuestionRequested {
                message_id,
                tool_call_id,
                questions,
            } if self.ours(message_id) => {
                self.question = Some(QuestionPrompt {
                    message_id: message_id.clone(),
                    tool_call_id: tool_call_id.clone(),
                    questions: questions.clone(),
                });
                Action::Nothing
            }
            EventKind::PlanUpdated { items } => Action::Plan(items.clone()),
            EventKind::Error {
                message_id,
                message,
                kind,
                ..
            } if message_id.as_ref().is_none_or(|id| self.ours(id)) => {
                Action::Error(format!("error: {message} ({kind})"))
            }
            EventKind::LoopFinished {
                message_id, reason, ..
            } if self.ours(message_id) => {
                let prompt = self.prompt.take();
                let question = self.question.take();
                match (reason, prompt, question) {
                    (LoopFinishReason::WaitingPermission, Some(prompt), _) => Action::Ask(prompt),
                    (LoopFinishReason::WaitingQuestion, _, Some(question)) => {
                        Action::AskQuestion(question)
                    }
                    _ => Action::Done(*reason),
                }
            }
            _ => Action::Nothing,
        }
    }
}

/// An answer typed at the prompt: `y`, `n`, `s`/`session`, `a`/`always` (empty is no).
pub(crate) fn parse_answer(line: &str) -> Option<(bool, Remember)> {
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

/// Shows `prompt` on stderr and reads one line of stdin; `None` at the end of input (or
/// when stdin cannot be read).
pub(crate) async fn prompt_line(prompt: &str) -> Option<String> {
    eprint!("{prompt}");
    let _ = std::io::stderr().flush();
    let (n, line) = tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        std::io::stdin().read_line(&mut line).map(|n| (n, line))
    })
    .await
    .ok()?
    .ok()?;
    (n > 0).then_some(line)
}

/// Asks on stdin; `None` when it closed.
async fn ask(prompt: &Prompt) -> Option<(bool, Remember)> {
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
        let line = prompt_line(&question).await?;
        match parse_answer(&line) {
            Some((_, remember)) if !prompt.rememberable && remember != Remember::Once => {
                eprintln!("this call cannot be remembered; answer y or n");
            }
            Some(answer) => return Some(answer),
            None => eprintln!("answer y, n, s or a"),
        }
    }
}

/// How a run's permission prompts and questions are answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Answering {
    /// Ask at the terminal (and stop when there is none).
    Ask,
    /// Grant every permission prompt, once; stop at a question (nobody can answer for the
    /// user).
    Yes,
    /// Ask on stdin, terminal or not: `chat`, whose stdin is the conversation. `yes`
    /// grants every permission prompt, once, instead.
    Stdin { yes: bool },
}

impl Answering {
    /// The answer to a permission prompt given without asking, if any.
    fn granted(self) -> bool {
        matches!(self, Answering::Yes | Answering::Stdin { yes: true })
    }

    /// Whether a prompt or question may be asked on stdin.
    fn may_ask(self) -> bool {
        match self {
            Answering::Ask => std::io::stdin().is_terminal(),
            Answering::Yes => false,
            Answering::Stdin { .. } => true,
        }
    }
}

/// What Ctrl-C does during a run: the first cancels the run (and `send` keeps waiting for
/// its end), the second quits at once.
pub(crate) struct Interrupts {
    signal: Signal,
    seen: u32,
}

impl Interrupts {
    /// Takes over SIGINT; do it before the run exists, so Ctrl-C always means "cancel".
    pub(crate) fn install() -> std::io::Result<Self> {
        Ok(Interrupts {
            signal: signal(SignalKind::interrupt())?,
            seen: 0,
        })
    }

    pub(crate) async fn recv(&mut self) {
        // `None` only if the signal driver is gone: then never fire.
        if self.signal.recv().await.is_none() {
            std::future::pending::<()>().await;
        }
    }

    /// Handles one Ctrl-C; `Some` is the exit status when `send` must stop now.
    async fn handle(&mut self, client: &Client, agent: &str) -> Option<Exit> {
        self.seen += 1;
        if self.seen > 1 {
            return Some(Exit::Interrupted);
        }
        eprintln!("\ncancelling (Ctrl-C again to quit at once)...");
        match client.cancel_loop(agent.to_owned()).await {
            Ok(_) => None,
            Err(e) => Some(exit::report(&e.into())),
        }
    }
}

/// A send's choices for its turn alone (`--provider`, `--model`, `--effort`,
/// `--output-schema`).
#[derive(Debug, Default)]
pub(crate) struct TurnChoices {
    provider: Option<String>,
    model: Option<String>,
    effort: Option<agent_proto::ReasoningEffort>,
    output_schema: Option<serde_json::Value>,
}

impl TurnChoices {
    /// The flags read: the effort named, the schema file read as JSON.
    pub(crate) fn read(
        provider: Option<String>,
        model: Option<String>,
        effort: Option<String>,
        output_schema: Option<PathBuf>,
    ) -> Result<TurnChoices, String> {
        let effort = effort
            .map(|e| {
                serde_json::from_value(serde_json::Value::String(e.clone()))
                    .map_err(|_| format!("--effort {e:?}: low, medium or high"))
            })
            .transpose()?;
        let output_schema = output_schema
            .map(|path| {
                let text = std::fs::read_to_string(&path)
                    .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
                serde_json::from_str(&text)
                    .map_err(|e| format!("{} is not JSON: {e}", path.display()))
            })
            .transpose()?;
        Ok(TurnChoices {
            provider,
            model,
            effort,
            output_schema,
        })
    }
}

/// How a `send` sends besides its content: the turn's choices, and what to do if the
/// agent is busy.
pub(crate) struct Choices {
    pub(crate) turn: TurnChoices,
    pub(crate) when_busy: WhenBusy,
}

pub(crate) async fn run(
    client: &Client,
    agent: String,
    text: String,
    attachments: Vec<PathBuf>,
    json: bool,
    answering: Answering,
    choices: Choices,
) -> Exit {
    let Choices { turn, when_busy } = choices;
    let text = match read_text(text) {
        Ok(t) => t,
        Err(exit) => return exit,
    };
    let content = match content_with(text, &attachments) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            return Exit::Error;
        }
    };
    let mut interrupts = match Interrupts::install() {
        Ok(i) => i,
        Err(e) => {
            eprintln!("error: cannot handle Ctrl-C: {e}");
            return Exit::Error;
        }
    };
    let sent = Sent {
        content,
        turn,
        when_busy,
    };
    follow(client, &agent, sent, json, answering, &mut interrupts).await
}

/// What one `send` sends: the message, its turn's choices, and what to do if the agent is
/// busy.
pub(crate) struct Sent {
    pub(crate) content: MessageContent,
    pub(crate) turn: TurnChoices,
    pub(crate) when_busy: WhenBusy,
}

impl From<MessageContent> for Sent {
    fn from(content: MessageContent) -> Sent {
        Sent {
            content,
            turn: TurnChoices::default(),
            when_busy: WhenBusy::Refuse,
        }
    }
}

/// The message's content: the text alone, or the text and the files as parts (an image
/// by its extension, anything else as a file the daemon reads in). Paths are made
/// absolute here: the daemon does not know our working directory.
fn content_with(text: String, attachments: &[PathBuf]) -> Result<MessageContent, String> {
    if attachments.is_empty() {
        return Ok(MessageContent::Text(text));
    }
    let mut parts = vec![ContentPart::Text { text }];
    for file in attachments {
        let path = std::fs::canonicalize(file)
            .map_err(|e| format!("cannot attach {}: {e}", file.display()))?;
        let image = path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| IMAGE_EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()));
        let path = path.display().to_string();
        parts.push(if image {
            ContentPart::Image {
                data: None,
                path: Some(path),
                mime_type: None,
                uri: None,
            }
        } else {
            ContentPart::File { path }
        });
    }
    Ok(MessageContent::Parts(parts))
}

/// Files attached as images rather than as files.
const IMAGE_EXTENSIONS: &[&str] = &["png", "jpg", "jpeg", "gif", "webp"];

/// Sends `content` and follows the run it starts to its end, answering prompts as
/// `answering` says; the exit status says how the run ended.
pub(crate) async fn follow(
    client: &Client,
    agent: &str,
    sent: Sent,
    json: bool,
    answering: Answering,
    interrupts: &mut Interrupts,
) -> Exit {
    interrupts.seen = 0;
    let agent = agent.to_owned();
    // Subscribe first so no event of the run is missed.
    let mut sub = match client
        .subscribe_events(Some(agent.clone()), None, None)
        .await
    {
        Ok(sub) => sub,
        Err(e) => return exit::report(&e.into()),
    };
    let Sent {
        content,
        turn,
        when_busy,
    } = sent;
    let sent = match client
        .send_message(
            agent.clone(),
            content,
            None,
            Some(when_busy),
            turn.provider,
            turn.model,
            turn.effort,
            turn.output_schema,
        )
        .await
    {
        Ok(sent) => sent,
        Err(e) => return exit::report(&e.into()),
    };
    // A steer joins a turn already under way (whoever follows it sees the answer); a
    // queued message is followed when its turn comes.
    if sent.delivery == Delivery::Steered {
        if json {
            outln!("{}", serde_json::to_string(&sent).unwrap_or_default());
            return Exit::Ok;
        }
        outln!(
            "steered into the running turn (message {})",
            sent.assistant_message_id
        );
        return Exit::Ok;
    }
    if sent.delivery == Delivery::Queued && !json {
        eprintln!("queued: the answer follows when the agent's current run ends");
    }
    let mut tracker = RunTracker::new(sent.assistant_message_id);
    let dim = std::io::stderr().is_terminal();
    let mut printed_text = false;
    let mut printed_reasoning = false;
    let mut live = format::LiveLines::default();
    // Ends the output and picks the exit status for how the run ended.
    let finish = |printed_text: bool, reason: LoopFinishReason| {
        if printed_text {
            outln!();
        }
        Exit::of_run(reason)
    };
    loop {
        let event = tokio::select! {
            event = sub.next() => event,
            _ = interrupts.recv() => {
                match interrupts.handle(client, &agent).await {
                    Some(exit) => return exit,
                    None => continue,
                }
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
                Ok(line) => outln!("{line}"),
                Err(e) => eprintln!("warning: cannot print an event: {e}"),
            }
        }
        match tracker.route(&event) {
            Action::Text(delta) if !json => {
                if printed_reasoning && !printed_text {
                    eprintln!(); // the answer starts below the reasoning
                }
                out!("{delta}");
                printed_text = true;
            }
            Action::Reasoning(delta) if !json => {
                if dim {
                    eprint!("\x1b[2m{delta}\x1b[0m");
                } else {
                    eprint!("{delta}");
                }
                let _ = std::io::stderr().flush();
                printed_reasoning = true;
            }
            Action::Output(stream, text) if !json => {
                let shown = live.piece(stream, &text);
                if dim {
                    eprint!("\x1b[2m{shown}\x1b[0m");
                } else {
                    eprint!("{shown}");
                }
                let _ = std::io::stderr().flush();
            }
            Action::Tool(line) if !json => eprintln!("{}\n{line}", live.close()),
            Action::Plan(items) if !json => {
                eprintln!("\n[plan]\n{}", questions::plan_lines(&items));
            }
            Action::AskQuestion(question) => {
                let answer = if !answering.may_ask() {
                    None
                } else {
                    tokio::select! {
                        answer = questions::ask(&question) => answer,
                        _ = interrupts.recv() => {
                            match interrupts.handle(client, &agent).await {
                                Some(exit) => return exit,
                                None => continue,
                            }
                        }
                    }
                };
                let Some(answers) = answer else {
                    for q in &question.questions {
                        eprintln!("\nquestion: {}", questions::question_text(q));
                    }
                    eprintln!(
                        "answer it with: agentctl answer {} {} <one answer per question> (or --data, --decline)",
                        question.message_id, question.tool_call_id
                    );
                    return finish(printed_text, LoopFinishReason::WaitingQuestion);
                };
                let declined = answers.is_none().then_some(true);
                match client
                    .answer_question(
                        question.message_id.clone(),
                        question.tool_call_id.clone(),
                        answers,
                        declined,
                    )
                    .await
                {
                    Ok(_) => {}
                    Err(agent_proto::client::Error::Call(e))
                        if e.code() == agent_proto::ErrorKind::QuestionNotPending.code() =>
                    {
                        eprintln!("(answered by another client)");
                    }
                    Err(e) => return exit::report(&e.into()),
                }
            }
            Action::Error(line) if !json => eprintln!("\n{line}"),
            Action::Ask(prompt) => {
                let answer = if answering.granted() {
                    Some((true, Remember::Once))
                } else if !answering.may_ask() {
                    None
                } else {
                    tokio::select! {
                        answer = ask(&prompt) => answer,
                        // Ctrl-C at the prompt cancels the run (its pending call with it).
                        _ = interrupts.recv() => {
                            match interrupts.handle(client, &agent).await {
                                Some(exit) => return exit,
                                None => continue,
                            }
                        }
                    }
                };
                let Some((granted, remember)) = answer else {
                    eprintln!(
                        "\npermission requested: {}\nanswer it with: agentctl permit {} {} allow|deny",
                        prompt.description, prompt.message_id, prompt.tool_call_id
                    );
                    return finish(printed_text, LoopFinishReason::WaitingPermission);
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
                    Ok(_) => {}
                    Err(agent_proto::client::Error::Call(e))
                        if e.code() == agent_proto::ErrorKind::PermissionNotPending.code() =>
                    {
                        // Another client answered (or cancelled) first; the run goes on
                        // (or ends) all the same, so keep following it.
                        eprintln!("(answered by another client)");
                    }
                    Err(e) => return exit::report(&e.into()),
                }
            }
            Action::Done(reason) => return finish(printed_text, reason),
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

    fn started(id: &str) -> EventKind {
        EventKind::MessageStarted {
            message_id: id.into(),
            message: None,
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
            message_id: "ours".into(),
            reason,
            error: None,
        }
    }

    fn asked(id: &str, call: &str) -> EventKind {
        EventKind::PermissionRequested {
            message_id: id.into(),
            tool_call_id: call.into(),
            tool_name: "bash".into(),
            permission_type: PermissionLevel::Execute,
            description: format!("run: {call}"),
            arguments: json!({"command": call}),
            command: Some(call.into()),
            command_display: Some(call.into()),
            signature: Some(vec![call.into()]),
            paths: None,
            risk: None,
            rememberable: true,
            network_access: false,
            outside_sandbox: false,
        }
    }

    fn prompt(id: &str, call: &str) -> Prompt {
        Prompt {
            message_id: id.into(),
            tool_call_id: call.into(),
            description: format!("run: {call}"),
            risk: None,
            rememberable: true,
        }
    }

    /// Where a send stops: the position of the event and what it does (None: still going).
    type Stop = Option<(usize, Action)>;

    /// Feeds events to a tracker of "ours" until the first action that asks at a prompt or
    /// ends the send.
    fn first_stop(events: Vec<EventKind>) -> Stop {
        let mut tracker = RunTracker::new("ours".into());
        events
            .into_iter()
            .map(|k| tracker.route(&ev(k)))
            .enumerate()
            .find(|(_, action)| {
                matches!(
                    action,
                    Action::Done(_) | Action::Ask(_) | Action::AskQuestion(_)
                )
            })
    }

    #[test]
    fn the_loop_finished_that_ends_a_send() {
        use LoopFinishReason::*;
        let cases: Vec<(&str, Vec<EventKind>, Stop)> = vec![
            (
                "completed",
                vec![started("ours"), text("ours", "hi"), finished(Completed)],
                Some((2, Action::Done(Completed))),
            ),
            (
                "an earlier run's loopFinished is not ours",
                vec![
                    text("old", "x"),
                    finished(Cancelled),
                    started("ours"),
                    finished(Error),
                ],
                Some((3, Action::Done(Error))),
            ),
            (
                "another message's start does not start ours",
                vec![started("other"), finished(Completed)],
                None,
            ),
            (
                "nothing of ours yet",
                vec![started("ours"), text("ours", "partial")],
                None,
            ),
            (
                "a question of ours: its waitingQuestion asks instead of ending",
                vec![
                    started("ours"),
                    EventKind::QuestionRequested {
                        message_id: "ours".into(),
                        tool_call_id: "q1".into(),
                        questions: Vec::new(),
                    },
                    finished(WaitingQuestion),
                ],
                Some((
                    2,
                    Action::AskQuestion(QuestionPrompt {
                        message_id: "ours".into(),
                        tool_call_id: "q1".into(),
                        questions: Vec::new(),
                    }),
                )),
            ),
            (
                "another message's question is not ours",
                vec![
                    started("ours"),
                    EventKind::QuestionRequested {
                        message_id: "other".into(),
                        tool_call_id: "q1".into(),
                        questions: Vec::new(),
                    },
                    finished(WaitingQuestion),
                ],
                Some((2, Action::Done(WaitingQuestion))),
            ),
            (
                "a prompt of ours: its waitingPermission asks instead of ending",
                vec![
                    started("ours"),
                    asked("ours", "ls"),
                    EventKind::StatusChanged {
                        status: SessionStatus::WaitingPermission,
                    },
                    finished(WaitingPermission),
                ],
                Some((3, Action::Ask(prompt("ours", "ls")))),
            ),
            (
                "waitingPermission without a prompt of ours ends the send",
                vec![
                    started("ours"),
                    asked("other", "ls"),
                    finished(WaitingPermission),
                ],
                Some((2, Action::Done(WaitingPermission))),
            ),
            (
                "a prompt then a cancel: the cancel ends it",
                vec![started("ours"), asked("ours", "ls"), finished(Cancelled)],
                Some((2, Action::Done(Cancelled))),
            ),
            (
                "max steps",
                vec![started("ours"), finished(MaxSteps)],
                Some((1, Action::Done(MaxSteps))),
            ),
            (
                "paused",
                vec![started("ours"), finished(Paused)],
                Some((1, Action::Done(Paused))),
            ),
        ];
        for (name, events, expected) in cases {
            assert_eq!(first_stop(events), expected, "{name}");
        }
    }

    #[test]
    fn after_an_answer_the_resumed_run_is_followed_to_its_end() {
        use LoopFinishReason::*;
        let events = [
            started("ours"),
            asked("ours", "ls"),
            finished(WaitingPermission),
            // Answered: the run resumes on the same message.
            EventKind::PermissionResolved {
                message_id: "ours".into(),
                tool_call_id: "ls".into(),
                granted: true,
                remember: Remember::Once,
                cancelled: false,
            },
            started("ours"),
            text("ours", "done"),
            asked("ours", "pwd"),
            finished(WaitingPermission),
            started("ours"),
            finished(Completed),
        ];
        let mut tracker = RunTracker::new("ours".into());
        let stops: Vec<(usize, Action)> = events
            .into_iter()
            .map(|k| tracker.route(&ev(k)))
            .enumerate()
            .filter(|(_, a)| matches!(a, Action::Done(_) | Action::Ask(_)))
            .collect();
        assert_eq!(
            stops,
            [
                (2, Action::Ask(prompt("ours", "ls"))),
                (7, Action::Ask(prompt("ours", "pwd"))),
                (9, Action::Done(Completed)),
            ]
        );
    }

    #[test]
    fn what_each_event_of_our_run_does() {
        let events = [
            // The tail of an earlier run: ignored, including its loopFinished.
            text("old", "stale"),
            finished(LoopFinishReason::Cancelled),
            EventKind::StatusChanged {
                status: SessionStatus::Generating,
            },
            started("ours"),
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
            asked("ours", "c1"),
            EventKind::ToolProgress {
                message_id: "ours".into(),
                tool_call_id: "c1".into(),
                progress: 2.0,
                total: None,
                message: None,
                output: Some(agent_proto::LiveOutput {
                    stream: agent_proto::OutputStream::Stdout,
                    text: "a\n".into(),
                }),
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
                retry: None,
            },
            EventKind::Error {
                message_id: Some("other".into()),
                message: "not ours".into(),
                kind: "internal".into(),
                retryable: false,
                retry: None,
            },
            EventKind::Error {
                message_id: None,
                message: "agent-wide".into(),
                kind: "internal".into(),
                retryable: false,
                retry: None,
            },
            finished(LoopFinishReason::Error),
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
                Action::Nothing,
                Action::Output(agent_proto::OutputStream::Stdout, "a\n".into()),
                Action::Tool("[success in 3 ms] a\n    b\n    c\n    ... (1 more lines)".into()),
                Action::Error("error: cut (providerStreamTruncated)".into()),
                Action::Nothing,
                Action::Error("error: agent-wide (internal)".into()),
                Action::Done(LoopFinishReason::Error),
            ]
        );
    }

    #[test]
    fn attachments_are_parts_with_absolute_paths() {
        let dir = tempfile::tempdir().unwrap();
        let dir = std::fs::canonicalize(dir.path()).unwrap();
        for name in ["a.txt", "b.PNG"] {
            std::fs::write(dir.join(name), "x").unwrap();
        }
        assert_eq!(
            content_with("hi".into(), &[]).unwrap(),
            MessageContent::Text("hi".into())
        );
        let parts = content_with("hi".into(), &[dir.join("a.txt"), dir.join("b.PNG")]).unwrap();
        let MessageContent::Parts(parts) = parts else {
            panic!("{parts:?}")
        };
        assert_eq!(
            parts,
            [
                ContentPart::Text { text: "hi".into() },
                ContentPart::File {
                    path: dir.join("a.txt").display().to_string()
                },
                ContentPart::Image {
                    data: None,
                    path: Some(dir.join("b.PNG").display().to_string()),
                    mime_type: None,
                    uri: None
                },
            ]
        );
        let missing = content_with("hi".into(), &[dir.join("nope")]).unwrap_err();
        assert!(missing.starts_with("cannot attach "), "{missing}");
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
