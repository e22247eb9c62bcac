//! `acp-test-agent`: a small external ACP agent for the tests of agents of mode `acp`,
//! built on the `agent-client-protocol` crate's agent side (as `mcp-test-server` is on
//! rmcp's). It answers each `session/prompt` with the next turn of a script.
//!
//! ```text
//! acp-test-agent --script FILE [--log FILE] [--no-images] [--silent-initialize]
//! ```
//!
//! `--silent-initialize`: never answers `initialize` (an agent stuck at start).
//!
//! The script is JSON: `{"turns": [{"steps": [STEP, ...], "stop": "end_turn"}, ...]}`
//! (`stop`: `end_turn` (default), `max_tokens`, `max_turn_requests`, `refusal`). Steps:
//! - `{"text": "..."}`, `{"thought": "..."}`: a message or thought chunk.
//! - `{"elsewhere": "..."}`: a message chunk for a session id nobody opened.
//! - `"echo"`: a message chunk `you said: <the prompt's text>`.
//! - `{"tool": {"id", "title", "kind", "input"?}}`: a tool call (pending).
//! - `{"done": {"id", "output"}}` / `{"fail": {"id", "output"}}`: its end.
//! - `{"permission": {"id"}}`: asks (allow once, allow always, reject once). Allowed: goes
//!   on. Rejected: the call fails, a chunk `rejected` and the turn ends (end_turn).
//!   Cancelled: the turn ends `cancelled`.
//! - `{"read": {"path", "line"?, "limit"?}}`: `fs/read_text_file`; a chunk
//!   `read: <content>` or `read failed: <error>`.
//! - `{"write": {"path", "content"}}`: `fs/write_text_file`; a chunk `wrote <path>` or
//!   `write failed: <error>`.
//! - `{"terminal": "cmd"}`: `terminal/create`; a chunk `terminal created` or
//!   `terminal refused: <error>`.
//! - `{"plan": ["a", "b"]}`: a plan, the first entry in progress, the rest pending.
//! - `{"chunks": {"text", "count"}}`: `count` message chunks of `text`, back to back.
//! - `{"tools": {"count", "talk"?, "overlap"?}}`: `count` tool calls `c1`, `c2`, ... (title
//!   `step <n>`, kind `read`), each completed at once with the output `out <n>`; with
//!   `talk`, each after a thought chunk `think <n>. ` and a message chunk `say <n>. `; with
//!   `overlap`, each completed once the next one has started.
//! - `{"sleep_ms": N}`: waits (a `session/cancel` meanwhile ends the turn `cancelled`).
//! - `{"exit": CODE}`: exits at once.
//!
//! Past the last turn it answers `(script over)`. `--log` appends one line per thing that
//! happened: `initialize <pid>`, `session/new <cwd>`, `prompt <text>`, `cancel`,
//! `permission <id> <option id or cancelled>`, `read <path> ok|error`, `write <path> ok|error`.
//! Env `ACP_TEST_STDERR` is written to stderr at start.

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, CancelNotification, ContentBlock, ContentChunk, CreateTerminalRequest,
    InitializeRequest, InitializeResponse, NewSessionRequest, NewSessionResponse, PermissionOption,
    PermissionOptionKind, Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus, PromptCapabilities,
    PromptRequest, PromptResponse, ReadTextFileRequest, RequestPermissionOutcome,
    RequestPermissionRequest, SessionNotification, SessionUpdate, StopReason, ToolCall,
    ToolCallContent, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind,
    WriteTextFileRequest,
};
use agent_client_protocol::{ByteStreams, Client, Error};
use serde::Deserialize;
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

#[derive(Debug, Deserialize, Default)]
struct Script {
    turns: Vec<Turn>,
}

#[derive(Debug, Deserialize)]
struct Turn {
    steps: Vec<Step>,
    #[serde(default)]
    stop: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Step {
    Text(String),
    /// A message chunk for a session id nobody opened.
    Elsewhere(String),
    Thought(String),
    Echo,
    Tool {
        id: String,
        title: String,
        kind: String,
        #[serde(default)]
        input: Option<serde_json::Value>,
    },
    Done {
        id: String,
        output: String,
    },
    Fail {
        id: String,
        output: String,
    },
    Permission {
        id: String,
    },
    Read {
        path: String,
        #[serde(default)]
        line: Option<u32>,
        #[serde(default)]
        limit: Option<u32>,
    },
    Write {
        path: String,
        content: String,
    },
    Plan(Vec<String>),
    Chunks {
        text: String,
        count: u64,
    },
    Tools {
        count: u64,
        /// Each call follows a thought chunk and a message chunk.
        #[serde(default)]
        talk: bool,
        /// Each call ends after the next one started (calls overlap, as parallel ones do).
        #[serde(default)]
        overlap: bool,
    },
    Terminal(String),
    SleepMs(u64),
    Exit(i32),
}

struct State {
    script: Mutex<std::collections::VecDeque<Turn>>,
    log: Option<PathBuf>,
    images: bool,
    cancelled: tokio::sync::Notify,
    cancel_flag: Mutex<bool>,
    /// `--silent-initialize`: the `initialize` requests left unanswered (a dropped
    /// responder would answer with an error).
    unanswered: Option<Mutex<Vec<Box<dyn std::any::Any + Send>>>>,
}

impl State {
    fn log(&self, line: &str) {
        if let Some(path) = &self.log
            && let Ok(mut f) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
        {
            let _ = writeln!(f, "{line}");
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn kind_of(name: &str) -> ToolKind {
    match name {
        "read" => ToolKind::Read,
        "edit" => ToolKind::Edit,
        "execute" => ToolKind::Execute,
        "search" => ToolKind::Search,
        "fetch" => ToolKind::Fetch,
        _ => ToolKind::Other,
    }
}

fn text_of(content: &[ContentBlock]) -> String {
    content
        .iter()
        .filter_map(|c| match c {
            ContentBlock::Text(t) => Some(t.text.clone()),
            ContentBlock::Image(i) => Some(format!("[image {}]", i.mime_type)),
            ContentBlock::ResourceLink(r) => Some(format!(
                "[link {} {}]",
                r.uri,
                r.mime_type.as_deref().unwrap_or("-")
            )),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Runs one prompt to its stop reason.
async fn run_turn(
    state: &State,
    cx: &ConnectionTo<Client>,
    request: PromptRequest,
) -> Result<PromptResponse, Error> {
    let session = request.session_id.clone();
    let said = text_of(&request.prompt);
    state.log(&format!("prompt {said}"));
    *lock(&state.cancel_flag) = false;
    let turn = lock(&state.script).pop_front();
    let Some(turn) = turn else {
        chunk(cx, &session, "(script over)")?;
        return Ok(PromptResponse::new(StopReason::EndTurn));
    };
    for step in turn.steps {
        if *lock(&state.cancel_flag) {
            return Ok(PromptResponse::new(StopReason::Cancelled));
        }
        match step {
            Step::Text(t) => chunk(cx, &session, &t)?,
            Step::Elsewhere(t) => chunk(
                cx,
                &agent_client_protocol::v1::schema::SessionId::new("sess-nobody-opened"),
                &t,
            )?,
            Step::Echo => chunk(cx, &session, &format!("you said: {said}"))?,
            Step::Thought(t) => cx.send_notification(SessionNotification::new(
                session.clone(),
                SessionUpdate::AgentThoughtChunk(ContentChunk::new(ContentBlock::from(t))),
            ))?,
            Step::Tool {
                id,
                title,
                kind,
                input,
            } => cx.send_notification(SessionNotification::new(
                session.clone(),
                SessionUpdate::ToolCall(
                    ToolCall::new(id, title)
                        .kind(kind_of(&kind))
                        .status(ToolCallStatus::Pending)
                        .raw_input(input),
                ),
            ))?,
            Step::Done { id, output } => {
                update(cx, &session, &id, ToolCallStatus::Completed, &output)?
            }
            Step::Fail { id, output } => {
                update(cx, &session, &id, ToolCallStatus::Failed, &output)?
            }
            Step::Permission { id } => {
                let options = vec![
                    PermissionOption::new("allow", "Allow", PermissionOptionKind::AllowOnce),
                    PermissionOption::new(
                        "always",
                        "Always allow",
                        PermissionOptionKind::AllowAlways,
                    ),
                    PermissionOption::new("reject", "Reject", PermissionOptionKind::RejectOnce),
                ];
                let ask = RequestPermissionRequest::new(
                    session.clone(),
                    ToolCallUpdate::new(id.clone(), ToolCallUpdateFields::new()),
                    options,
                );
                let answer = cx.send_request(ask).block_task().await?;
                match answer.outcome {
                    RequestPermissionOutcome::Selected(s) => {
                        let option = s.option_id.to_string();
                        state.log(&format!("permission {id} {option}"));
                        if option == "reject" {
                            update(
                                cx,
                                &session,
                                &id,
                                ToolCallStatus::Failed,
                                "rejected by the user",
                            )?;
                            chunk(cx, &session, "rejected")?;
                            return Ok(PromptResponse::new(StopReason::EndTurn));
                        }
                    }
                    _ => {
                        state.log(&format!("permission {id} cancelled"));
                        return Ok(PromptResponse::new(StopReason::Cancelled));
                    }
                }
            }
            Step::Read { path, line, limit } => {
                let read = cx
                    .send_request(
                        ReadTextFileRequest::new(session.clone(), path.clone())
                            .line(line)
                            .limit(limit),
                    )
                    .block_task()
                    .await;
                match read {
                    Ok(r) => {
                        state.log(&format!("read {path} ok"));
                        chunk(cx, &session, &format!("read: {}", r.content))?;
                    }
                    Err(e) => {
                        state.log(&format!("read {path} error"));
                        chunk(cx, &session, &format!("read failed: {e}"))?;
                    }
                }
            }
            Step::Write { path, content } => {
                let wrote = cx
                    .send_request(WriteTextFileRequest::new(
                        session.clone(),
                        path.clone(),
                        content,
                    ))
                    .block_task()
                    .await;
                match wrote {
                    Ok(_) => {
                        state.log(&format!("write {path} ok"));
                        chunk(cx, &session, &format!("wrote {path}"))?;
                    }
                    Err(e) => {
                        state.log(&format!("write {path} error"));
                        chunk(cx, &session, &format!("write failed: {e}"))?;
                    }
                }
            }
            Step::Terminal(command) => {
                let made = cx
                    .send_request(CreateTerminalRequest::new(session.clone(), command))
                    .block_task()
                    .await;
                let said = match made {
                    Ok(_) => "terminal created".to_owned(),
                    Err(e) => format!("terminal refused: {e}"),
                };
                chunk(cx, &session, &said)?;
            }
            Step::Plan(entries) => {
                let entries = entries
                    .into_iter()
                    .enumerate()
                    .map(|(i, e)| {
                        let status = if i == 0 {
                            PlanEntryStatus::InProgress
                        } else {
                            PlanEntryStatus::Pending
                        };
                        PlanEntry::new(e, PlanEntryPriority::Medium, status)
                    })
                    .collect();
                cx.send_notification(SessionNotification::new(
                    session.clone(),
                    SessionUpdate::Plan(Plan::new(entries)),
                ))?;
            }
            Step::Chunks { text, count } => {
                for _ in 0..count {
                    chunk(cx, &session, &text)?;
                }
            }
            Step::Tools {
                count,
                talk,
                overlap,
            } => {
                let done = |n: u64| {
                    update(
                        cx,
                        &session,
                        &format!("c{n}"),
                        ToolCallStatus::Completed,
                        &format!("out {n}"),
                    )
                };
                for n in 1..=count {
                    if talk {
                        cx.send_notification(SessionNotification::new(
                            session.clone(),
                            SessionUpdate::AgentThoughtChunk(ContentChunk::new(
                                ContentBlock::from(format!("think {n}. ")),
                            )),
                        ))?;
                        chunk(cx, &session, &format!("say {n}. "))?;
                    }
                    cx.send_notification(SessionNotification::new(
                        session.clone(),
                        SessionUpdate::ToolCall(
                            ToolCall::new(format!("c{n}"), format!("step {n}"))
                                .kind(ToolKind::Read)
                                .status(ToolCallStatus::Pending)
                                .raw_input(Some(serde_json::json!({"n": n}))),
                        ),
                    ))?;
                    match (overlap, n) {
                        (false, _) => done(n)?,
                        (true, 1) => {}
                        (true, _) => done(n - 1)?,
                    }
                }
                if overlap && count > 0 {
                    done(count)?;
                }
            }
            Step::SleepMs(ms) => {
                tokio::select! {
                    _ = tokio::time::sleep(Duration::from_millis(ms)) => {}
                    _ = state.cancelled.notified() => {
                        return Ok(PromptResponse::new(StopReason::Cancelled));
                    }
                }
            }
            Step::Exit(code) => std::process::exit(code),
        }
    }
    let stop = match turn.stop.as_deref() {
        Some("max_tokens") => StopReason::MaxTokens,
        Some("max_turn_requests") => StopReason::MaxTurnRequests,
        Some("refusal") => StopReason::Refusal,
        _ => StopReason::EndTurn,
    };
    Ok(PromptResponse::new(stop))
}

fn chunk(
    cx: &ConnectionTo<Client>,
    session: &agent_client_protocol::v1::schema::SessionId,
    text: &str,
) -> Result<(), Error> {
    cx.send_notification(SessionNotification::new(
        session.clone(),
        SessionUpdate::AgentMessageChunk(ContentChunk::new(ContentBlock::from(text.to_owned()))),
    ))
}

fn update(
    cx: &ConnectionTo<Client>,
    session: &agent_client_protocol::v1::schema::SessionId,
    id: &str,
    status: ToolCallStatus,
    output: &str,
) -> Result<(), Error> {
    let content: Vec<ToolCallContent> = vec![ContentBlock::from(output.to_owned()).into()];
    cx.send_notification(SessionNotification::new(
        session.clone(),
        SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            id.to_owned(),
            ToolCallUpdateFields::new().status(status).content(content),
        )),
    ))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let (mut script, mut log, mut images, mut silent) = (None, None, true, false);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--script" => script = args.next().map(PathBuf::from),
            "--log" => log = args.next().map(PathBuf::from),
            "--no-images" => images = false,
            "--silent-initialize" => silent = true,
            other => anyhow::bail!("unknown argument {other:?}"),
        }
    }
    if let Ok(text) = std::env::var("ACP_TEST_STDERR") {
        eprintln!("{text}");
    }
    let script: Script = match script {
        Some(path) => serde_json::from_str(&std::fs::read_to_string(path)?)?,
        None => Script::default(),
    };
    let state = Arc::new(State {
        script: Mutex::new(script.turns.into()),
        log,
        images,
        cancelled: tokio::sync::Notify::new(),
        cancel_flag: Mutex::new(false),
        unanswered: silent.then(|| Mutex::new(Vec::new())),
    });
    let (s1, s2, s3, s4) = (state.clone(), state.clone(), state.clone(), state.clone());
    let transport = ByteStreams::new(
        tokio::io::stdout().compat_write(),
        tokio::io::stdin().compat(),
    );
    agent_client_protocol::Agent
        .v1()
        .name("acp-test-agent")
        .on_receive_request(
            async move |request: InitializeRequest, responder, _cx| {
                s1.log(&format!("initialize {}", std::process::id()));
                if let Some(unanswered) = &s1.unanswered {
                    lock(unanswered).push(Box::new(responder));
                    return Ok(());
                }
                responder.respond(
                    InitializeResponse::new(request.protocol_version).agent_capabilities(
                        AgentCapabilities::new()
                            .prompt_capabilities(PromptCapabilities::new().image(s1.images)),
                    ),
                )
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: NewSessionRequest, responder, _cx| {
                s2.log(&format!("session/new {}", request.cwd.display()));
                responder.respond(NewSessionResponse::new("test-session"))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: PromptRequest, responder, cx: ConnectionTo<Client>| {
                let state = s3.clone();
                let cx2 = cx.clone();
                cx.spawn(async move {
                    let answer = run_turn(&state, &cx2, request).await;
                    responder.respond_with_result(answer)
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |_cancel: CancelNotification, _cx| {
                s4.log("cancel");
                *lock(&s4.cancel_flag) = true;
                s4.cancelled.notify_waiters();
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .connect_to(transport)
        .await?;
    Ok(())
}
