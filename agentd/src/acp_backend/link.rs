//! One external ACP agent: its process and the ACP connection to it, opened on one session.
//!
//! The connection's handlers hold its dispatch loop while they run, so they only forward
//! what arrives, in order, to the inbox of the prompt turn in progress ([`Turn`]); the run
//! of the agent reads it. A turn outlives a suspended run: the run parks it with the link
//! (the external agent still waits for the answer to its permission request) and the next
//! run of the message takes it back.

use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agent_client_protocol::v1::schema::{
    CancelNotification, ClientCapabilities, ContentBlock, FileSystemCapabilities, Implementation,
    InitializeRequest, NewSessionRequest, PermissionOption, PromptRequest, PromptResponse,
    ReadTextFileRequest, ReadTextFileResponse, RequestPermissionRequest, RequestPermissionResponse,
    SessionId, SessionNotification, SessionUpdate, WriteTextFileRequest, WriteTextFileResponse,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, ByteStreams, Client};
use tokio::io::AsyncBufReadExt;
use tokio::sync::mpsc;
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};
use tokio_util::sync::CancellationToken;

use super::Command;
use crate::process::{Piped, ProcessGroup, ProcessLauncher};

/// Lines of stderr kept, each cut to this many characters.
const STDERR_LINES: usize = 20;
const STDERR_LINE_CHARS: usize = 400;

/// What the external agent sent during a prompt turn, in its order.
pub enum Inbound {
    Update(Box<SessionUpdate>),
    Permission(
        Box<RequestPermissionRequest>,
        Responder<RequestPermissionResponse>,
    ),
    Read(Box<ReadTextFileRequest>, Responder<ReadTextFileResponse>),
    Write(Box<WriteTextFileRequest>, Responder<WriteTextFileResponse>),
    /// The answer to `session/prompt`: the turn is over.
    Done(Result<PromptResponse, String>),
    /// The process exited or the connection broke; the end of its stderr.
    Gone(String),
}

/// A request of the external agent that waits for a client's answer, by the id of the
/// waiting tool call it became.
pub enum Pending {
    Permission {
        options: Vec<PermissionOption>,
        responder: Responder<RequestPermissionResponse>,
    },
    Read {
        request: Box<ReadTextFileRequest>,
        responder: Responder<ReadTextFileResponse>,
    },
    Write {
        request: Box<WriteTextFileRequest>,
        responder: Responder<WriteTextFileResponse>,
    },
}

/// What the external agent sends during a turn, in its order.
pub type InboxStream = std::pin::Pin<Box<dyn futures::Stream<Item = Inbound> + Send>>;

/// One `session/prompt` in progress.
pub struct Turn {
    /// The assistant message it writes.
    pub message_id: String,
    /// Read only through the turn (it holds what the run's reading holds back), so a
    /// parked turn keeps everything that arrived.
    pub inbox: InboxStream,
    /// Requests waiting for a client's answer, by tool call id.
    pub pending: HashMap<String, Pending>,
    /// The external agent's tool call ids and the ids of their blocks in the message.
    pub calls: HashMap<String, String>,
}

impl Turn {
    /// Puts `wrap` around what arrives (the run joins ready chunks).
    pub fn wrap_inbox(&mut self, wrap: impl FnOnce(InboxStream) -> InboxStream) {
        let inbox = std::mem::replace(&mut self.inbox, Box::pin(futures::stream::empty()));
        self.inbox = wrap(inbox);
    }

    /// Answers every waiting request as cancelled (a cancelled turn must, per ACP).
    pub fn cancel_pending(&mut self) {
        for (_, pending) in self.pending.drain() {
            let _ =
                match pending {
                    Pending::Permission { responder, .. } => {
                        responder.respond(RequestPermissionResponse::new(
                            agent_client_protocol::v1::schema::RequestPermissionOutcome::Cancelled,
                        ))
                    }
                    Pending::Read { responder, .. } => responder
                        .respond_with_error(agent_client_protocol::Error::request_cancelled()),
                    Pending::Write { responder, .. } => responder
                        .respond_with_error(agent_client_protocol::Error::request_cancelled()),
                };
        }
    }
}

type Inbox = Arc<Mutex<Option<mpsc::UnboundedSender<Inbound>>>>;

/// The session this link opened, once `session/new` answered: what arrives for another
/// session id (one the daemon never opened) is not the turn's.
type Opened = Arc<std::sync::OnceLock<SessionId>>;

/// Why a request of the start got no answer.
enum Asked {
    Failed(String),
    /// No answer within the start timeout: the method asked.
    Unanswered(String),
}

/// A running external agent with its session open.
pub struct Link {
    agent_id: String,
    cx: ConnectionTo<Agent>,
    session_id: SessionId,
    /// It takes images in prompts.
    pub images: bool,
    inbox: Inbox,
    parked: Mutex<Option<Turn>>,
    gone: CancellationToken,
    started: Instant,
    stderr: Arc<Mutex<VecDeque<String>>>,
    process: tokio::sync::Mutex<Option<(tokio::process::Child, ProcessGroup)>>,
    connection: tokio::task::JoinHandle<()>,
}

impl Link {
    /// Runs `command` in `workspace`, initializes it and opens a session there; a start
    /// that fails stops what it started.
    pub(super) async fn start(
        agent_id: &str,
        command: &Command,
        workspace: &Path,
        processes: &ProcessLauncher,
    ) -> Result<Link, String> {
        let program = &command.program;
        // Errors name the agent as clients know it, and the program it runs.
        let who = if command.name == super::program_name(program) {
            format!("{:?}", command.name)
        } else {
            format!("{:?} ({program})", command.name)
        };
        let cmd = processes.mcp_command(program, &command.args, &command.env, Some(workspace))?;
        let Piped {
            process,
            group,
            stdin,
            stdout,
            stderr,
        } = processes.spawn_piped(cmd, &format!("the ACP agent {program:?}"))?;
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        tokio::spawn(keep_stderr(stderr, tail.clone(), agent_id.to_owned()));
        let inbox: Inbox = Arc::new(Mutex::new(None));
        let opened: Opened = Arc::default();
        let gone = CancellationToken::new();
        let (cx_tx, cx_rx) = tokio::sync::oneshot::channel();
        let connection = tokio::spawn(serve(
            ByteStreams::new(stdin.compat_write(), stdout.compat()),
            Routes {
                inbox: inbox.clone(),
                opened: opened.clone(),
            },
            gone.clone(),
            tail.clone(),
            cx_tx,
        ));
        let mut link = Link {
            agent_id: agent_id.to_owned(),
            cx: match cx_rx.await {
                Ok(cx) => cx,
                Err(_) => {
                    return Err(format!(
                        "the ACP agent {who} closed the connection at once{}",
                        tail_text(&tail)
                    ));
                }
            },
            session_id: SessionId::new(""),
            images: false,
            inbox,
            parked: Mutex::new(None),
            gone,
            started: Instant::now(),
            stderr: tail,
            process: tokio::sync::Mutex::new(Some((process, group))),
            connection,
        };
        if let Err(message) = link.open(command, workspace, &opened, &who).await {
            link.stop().await;
            return Err(message);
        }
        tracing::info!(
            agent_id,
            program,
            session = %link.session_id,
            "started the external ACP agent"
        );
        Ok(link)
    }

    /// The handshake: `initialize`, then `session/new` in `workspace`, each answered within
    /// the start timeout. `Err`: why not, naming the agent (`who`).
    async fn open(
        &mut self,
        command: &Command,
        workspace: &Path,
        opened: &Opened,
        who: &str,
    ) -> Result<(), String> {
        let fail = |what: &str, e: Asked, link: &Link| {
            let tail = tail_text(&link.stderr);
            match e {
                Asked::Failed(e) => format!("the ACP agent {who} failed {what}: {e}{tail}"),
                Asked::Unanswered(method) => format!(
                    "the ACP agent {who} did not answer `{method}` within {} s (start_timeout_secs \
                     of its [[acp_agents]] entry); it was stopped{tail}",
                    command.start_timeout.as_secs()
                ),
            }
        };
        let initialize = InitializeRequest::new(agent_client_protocol::schema::ProtocolVersion::V1)
            .client_capabilities(
                ClientCapabilities::new().fs(FileSystemCapabilities::new()
                    .read_text_file(true)
                    .write_text_file(true)),
            )
            .client_info(Implementation::new("agentd", env!("CARGO_PKG_VERSION")));
        let limit = command.start_timeout;
        let init = self
            .request(initialize, limit)
            .await
            .map_err(|e| fail("to initialize", e, self))?;
        self.images = init.agent_capabilities.prompt_capabilities.image;
        let session = self
            .request(NewSessionRequest::new(workspace), limit)
            .await
            .map_err(|e| fail("to open a session", e, self))?;
        let _ = opened.set(session.session_id.clone());
        self.session_id = session.session_id;
        Ok(())
    }

    /// A request of the start, answered within `limit`.
    async fn request<R: agent_client_protocol::JsonRpcRequest>(
        &self,
        request: R,
        limit: Duration,
    ) -> Result<R::Response, Asked> {
        let method = request.method().to_owned();
        tokio::select! {
            answer = tokio::time::timeout(limit, self.cx.send_request(request).block_task()) => match answer {
                Ok(Ok(response)) => Ok(response),
                Ok(Err(e)) => Err(Asked::Failed(e.to_string())),
                Err(_) => Err(Asked::Unanswered(method)),
            },
            _ = self.gone.cancelled() => Err(Asked::Failed("it exited".into())),
        }
    }

    /// The process exited or the connection broke.
    pub fn is_gone(&self) -> bool {
        self.gone.is_cancelled()
    }

    /// Resolves once the process exited or the connection broke.
    pub async fn gone(&self) {
        self.gone.cancelled().await;
    }

    pub(super) fn started(&self) -> Instant {
        self.started
    }

    /// The end of its stderr, as a suffix for an error message.
    pub fn stderr_tail(&self) -> String {
        tail_text(&self.stderr)
    }

    /// Sends `content` as a prompt; its updates and answer arrive in the returned turn.
    pub fn prompt(&self, message_id: &str, content: Vec<ContentBlock>) -> Turn {
        let (tx, mut inbox) = mpsc::unbounded_channel();
        *lock(&self.inbox) = Some(tx.clone());
        let request = PromptRequest::new(self.session_id.clone(), content);
        let cx = self.cx.clone();
        let gone = self.gone.clone();
        let stderr = self.stderr.clone();
        tokio::spawn(async move {
            let answer = tokio::select! {
                answer = cx.send_request(request).block_task() => answer.map_err(|e| e.to_string()),
                _ = gone.cancelled() => Err(format!("the ACP agent exited{}", tail_text(&stderr))),
            };
            let _ = tx.send(Inbound::Done(answer));
        });
        Turn {
            message_id: message_id.to_owned(),
            inbox: Box::pin(futures::stream::poll_fn(move |cx| inbox.poll_recv(cx))),
            pending: HashMap::new(),
            calls: HashMap::new(),
        }
    }

    /// Keeps a turn whose run suspended (its requests wait for a client's answer).
    pub fn park(&self, turn: Turn) {
        *lock(&self.parked) = Some(turn);
    }

    /// The parked turn writing `message_id`, if there is one.
    pub fn take_turn(&self, message_id: &str) -> Option<Turn> {
        let mut parked = lock(&self.parked);
        if parked.as_ref().is_some_and(|t| t.message_id == message_id) {
            parked.take()
        } else {
            None
        }
    }

    /// The turn is over: what arrives from now on has no turn to go to.
    pub fn end_turn(&self) {
        *lock(&self.inbox) = None;
    }

    /// Asks the agent to stop the turn (`session/cancel`); it answers the prompt with
    /// `cancelled` when it has.
    pub fn cancel(&self) {
        if let Err(e) = self
            .cx
            .send_notification(CancelNotification::new(self.session_id.clone()))
        {
            tracing::debug!(agent_id = self.agent_id, "cannot send session/cancel: {e}");
        }
    }

    /// Closes the connection and stops the process: SIGTERM to its group, SIGKILL after 2 s.
    pub async fn stop(&self) {
        self.connection.abort();
        self.gone.cancel();
        if let Some(mut turn) = lock(&self.parked).take() {
            turn.cancel_pending();
        }
        let Some((mut process, group)) = self.process.lock().await.take() else {
            return;
        };
        use nix::sys::signal::Signal;
        if group.signal(Signal::SIGTERM) {
            for _ in 0..20 {
                if !group.alive() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        drop(group);
        let _ = tokio::time::timeout(Duration::from_secs(1), process.wait()).await;
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        self.connection.abort();
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn tail_text(tail: &Mutex<VecDeque<String>>) -> String {
    let lines = lock(tail);
    if lines.is_empty() {
        String::new()
    } else {
        format!(
            "; its stderr ends with:\n{}",
            lines.iter().cloned().collect::<Vec<_>>().join("\n")
        )
    }
}

/// Where what the agent sends goes: the inbox of the turn in progress, for the session
/// this link opened.
#[derive(Clone)]
struct Routes {
    inbox: Inbox,
    opened: Opened,
}

impl Routes {
    /// Forwards `item`, sent for `session`, to the turn in progress; gives it back when
    /// there is none, or when `session` is not the one this link opened.
    fn forward(&self, session: &SessionId, item: Inbound) -> Option<Inbound> {
        if self.opened.get() != Some(session) {
            tracing::debug!(%session, "an ACP message for a session this link did not open");
            return Some(item);
        }
        forward(&self.inbox, item)
    }
}

/// Forwards to the turn in progress, or answers for the daemon when there is none.
fn forward(inbox: &Inbox, item: Inbound) -> Option<Inbound> {
    let guard = lock(inbox);
    match guard.as_ref() {
        Some(tx) => tx.send(item).err().map(|e| e.0),
        None => Some(item),
    }
}

/// A request that came with no turn to take it (or for another session).
fn refuse_outside_turn(item: Inbound) -> Result<(), agent_client_protocol::Error> {
    let error = || {
        agent_client_protocol::Error::invalid_request().data(serde_json::json!(
            "agentd has no prompt turn in progress for this session"
        ))
    };
    match item {
        Inbound::Permission(_, r) => r.respond_with_error(error()),
        Inbound::Read(_, r) => r.respond_with_error(error()),
        Inbound::Write(_, r) => r.respond_with_error(error()),
        _ => Ok(()),
    }
}

/// Runs the ACP connection until it ends, then tells the turn in progress.
async fn serve(
    transport: ByteStreams<
        tokio_util::compat::Compat<tokio::process::ChildStdin>,
        tokio_util::compat::Compat<tokio::process::ChildStdout>,
    >,
    routes: Routes,
    gone: CancellationToken,
    stderr: Arc<Mutex<VecDeque<String>>>,
    cx_tx: tokio::sync::oneshot::Sender<ConnectionTo<Agent>>,
) {
    let inbox = routes.inbox.clone();
    let (r1, r2, r3, r4) = (routes.clone(), routes.clone(), routes.clone(), routes);
    let served = Client
        .v1()
        .name("agentd")
        .on_receive_notification(
            async move |n: SessionNotification, _cx| {
                let update = Inbound::Update(Box::new(n.update));
                if r1.forward(&n.session_id, update).is_some() {
                    tracing::debug!("an ACP update arrived outside a prompt turn: dropped");
                }
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |r: RequestPermissionRequest, responder, _cx| {
                let session = r.session_id.clone();
                match r2.forward(&session, Inbound::Permission(Box::new(r), responder)) {
                    Some(item) => refuse_outside_turn(item),
                    None => Ok(()),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |r: ReadTextFileRequest, responder, _cx| {
                let session = r.session_id.clone();
                match r3.forward(&session, Inbound::Read(Box::new(r), responder)) {
                    Some(item) => refuse_outside_turn(item),
                    None => Ok(()),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |r: WriteTextFileRequest, responder, _cx| {
                let session = r.session_id.clone();
                match r4.forward(&session, Inbound::Write(Box::new(r), responder)) {
                    Some(item) => refuse_outside_turn(item),
                    None => Ok(()),
                }
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_with(transport, async move |cx: ConnectionTo<Agent>| {
            let _ = cx_tx.send(cx.clone());
            cx.incoming_closed().await;
            Ok(())
        })
        .await;
    if let Err(e) = served {
        tracing::debug!("the ACP connection ended: {e}");
    }
    gone.cancel();
    let _ = forward(
        &inbox,
        Inbound::Gone(format!("the ACP agent exited{}", tail_text(&stderr))),
    );
}

/// Keeps the last lines of the agent's stderr (and logs them at debug level). A line is
/// cut at a cap as it is read, so an agent that never ends a line cannot fill memory.
async fn keep_stderr(
    stderr: tokio::process::ChildStderr,
    tail: Arc<Mutex<VecDeque<String>>>,
    agent_id: String,
) {
    let mut reader = tokio::io::BufReader::new(stderr);
    let mut line: Vec<u8> = Vec::new();
    loop {
        let (consumed, ended) = match reader.fill_buf().await {
            Ok(buf) if !buf.is_empty() => {
                let newline = buf.iter().position(|b| *b == b'\n');
                let chunk = &buf[..newline.unwrap_or(buf.len())];
                let room = (STDERR_LINE_CHARS * 4).saturating_sub(line.len());
                line.extend_from_slice(&chunk[..chunk.len().min(room)]);
                (newline.map_or(buf.len(), |n| n + 1), newline.is_some())
            }
            _ => break,
        };
        reader.consume(consumed);
        if ended {
            let text: String = String::from_utf8_lossy(&line)
                .chars()
                .take(STDERR_LINE_CHARS)
                .collect();
            line.clear();
            tracing::debug!(agent_id, "ACP agent stderr: {text}");
            let mut tail = lock(&tail);
            if tail.len() == STDERR_LINES {
                tail.pop_front();
            }
            tail.push_back(text);
        }
    }
}
