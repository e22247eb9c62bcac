//! The Unix-socket transport: the listener, peer credentials, framing, and one reader and
//! one writer per connection.
//!
//! The transport moves frames; it does not look inside them. Each frame goes to the
//! connection's [`ConnectionRpc`] and the reply (plus any subscription streams it opened)
//! comes back as text to write. Requests of one connection are handled in order, one at a
//! time, so a client that subscribes and then sends sees every event of its send.
//! Everything a connection writes goes through its single writer task (`writer`), fed by
//! a bounded mailbox that event logs deliver into directly: a client that stops reading
//! backs up only its own subscriptions, which then catch up from the replay ring or get
//! `resyncRequired` (see `session::events`).
//!
//! Memory a client can make the daemon hold is bounded: unfinished frames draw on one
//! [`InputBudget`] shared by all connections (see `framing`), batches and subscriptions
//! per connection are capped in `rpc::dispatch`.
//!
//! The listening socket is bound here (`listener`) or passed by a service manager
//! (`activation`); with `--exit-when-idle` the accept loop also ends once the daemon has
//! been unused long enough (`idle`), leaving connections not yet accepted in the socket's
//! queue for the next daemon a socket-activating manager starts.

pub mod activation;
pub mod framing;
pub mod idle;
pub mod listener;
pub mod web;
mod writer;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use agent_proto::{ErrorKind, MAX_FRAME_BYTES};
use futures::StreamExt;
use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::net::UnixStream;
use tokio::sync::Semaphore;
use tokio_util::codec::FramedRead;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use crate::metrics::Transport;
use crate::rpc::dispatch::Dispatcher;
use crate::rpc::error::error_response;
pub use activation::{ActivationError, PassedSocket};
use framing::{Frame, FrameCodec, FrameError, Framing, InputBudget};
pub use idle::IdleExit;
pub use listener::{BoundSocket, ListenError, bind};
use writer::{Mailbox, write_frames};

/// Limits of the transport.
#[derive(Debug, Clone, Copy)]
pub struct TransportLimits {
    /// Simultaneous connections; one more is answered `overloaded` and closed. At least 1
    /// (the config checks it at load).
    pub max_connections: usize,
    /// Bytes of unfinished frames all connections may buffer together, beyond each
    /// connection's own [`framing::OWN_ALLOWANCE`].
    pub max_buffered_input: usize,
}

/// What every connection is served with, whichever door it came in by (the socket here,
/// the WebSocket listener in `web`): the dispatch, the connection slots and the input
/// budget all connections share.
#[derive(Clone)]
pub struct Admission {
    dispatcher: Dispatcher,
    slots: Arc<Semaphore>,
    max_connections: usize,
    budget: InputBudget,
}

impl Admission {
    pub fn new(dispatcher: Dispatcher, limits: TransportLimits) -> Admission {
        Admission {
            dispatcher,
            slots: Arc::new(Semaphore::new(limits.max_connections)),
            max_connections: limits.max_connections,
            budget: InputBudget::new(limits.max_buffered_input),
        }
    }

    /// What the daemon counts (the dispatch's): `/metrics` renders it.
    pub fn metrics(&self) -> &crate::metrics::Metrics {
        self.dispatcher.metrics()
    }

    /// Connections served at once, all doors together.
    pub fn max_connections(&self) -> usize {
        self.max_connections
    }

    /// A slot for one more connection that came in by `door`; none when every slot is
    /// taken (the caller answers `overloaded`, [`overloaded_reply`]). Either way counted in
    /// the metrics: accepted and open, or an `overloaded` error.
    pub fn admit(&self, door: Transport) -> Option<Admitted> {
        let metrics = self.dispatcher.metrics();
        let Ok(slot) = self.slots.clone().try_acquire_owned() else {
            metrics.rpc_error(ErrorKind::Overloaded);
            return None;
        };
        Some(Admitted {
            admission: self.clone(),
            _slot: slot,
            _open: metrics.connection_opened(door),
        })
    }
}

/// A connection's slot, held while it is served (freed on drop), and its place in the
/// metrics' open connections (ended on drop).
pub struct Admitted {
    admission: Admission,
    _slot: tokio::sync::OwnedSemaphorePermit,
    _open: crate::metrics::OpenConnection,
}

impl Admitted {
    /// Serves one connection until the client leaves or `close` is cancelled.
    pub async fn serve(self, stream: UnixStream, close: CancellationToken) {
        let Admission {
            dispatcher, budget, ..
        } = self.admission.clone();
        serve_connection(stream, dispatcher, budget, close).await;
    }
}

/// The one frame a connection over the limit gets before it is closed.
pub fn overloaded_reply() -> String {
    error_response(
        Value::Null,
        ErrorKind::Overloaded,
        "too many connections to agentd; retry later",
    )
}

/// How [`serve`] goes about it.
#[derive(Debug)]
pub struct ServeOptions {
    /// Stop accepting once the daemon has been idle this long (`--exit-when-idle`).
    pub idle: Option<IdleExit>,
    /// Peers (by pid) whose connections are closed at once: commands of the daemon's own
    /// sandbox, which must never drive the daemon (answer their own prompts).
    pub refused_peer: Option<PeerFilter>,
}

/// Says whether the process with this pid must be refused.
#[derive(Clone)]
pub struct PeerFilter(pub Arc<dyn Fn(u32) -> bool + Send + Sync>);

impl std::fmt::Debug for PeerFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PeerFilter")
    }
}

/// Why [`serve`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServeEnd {
    /// `stop` was cancelled.
    Stopped,
    /// No connection, no run and no waiting prompt for the whole idle time.
    Idle,
}

/// Accepts connections until `stop` is cancelled, or until the daemon has been idle for
/// `options.idle`. Each connection is a task of `tasks` and ends when `close` is cancelled
/// (or the client leaves). Idleness is judged in this loop, between two accepts, so no
/// connection is accepted once it has decided.
pub async fn serve(
    socket: &BoundSocket,
    admission: Admission,
    uid: u32,
    options: ServeOptions,
    stop: CancellationToken,
    close: CancellationToken,
    tasks: &TaskTracker,
) -> ServeEnd {
    let mut idle = options.idle.as_ref().map(IdleWatch::new);
    loop {
        let next_check = idle
            .as_ref()
            .map(|w| w.clock.next_check(tokio::time::Instant::now()));
        let accepted = tokio::select! {
            _ = stop.cancelled() => return ServeEnd::Stopped,
            accepted = socket.listener.accept() => accepted,
            _ = sleep_until_some(next_check) => {
                if let Some(watch) = idle.as_mut()
                    && watch.idle_long_enough(tasks).await
                {
                    return ServeEnd::Idle;
                }
                continue;
            }
        };
        if let Some(watch) = idle.as_mut() {
            watch.clock.activity();
        }
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(e) => {
                // EMFILE and friends: wait a little rather than spin.
                tracing::warn!("accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        if !peer_allowed(&stream, uid, options.refused_peer.as_ref()) {
            continue;
        }
        let Some(admitted) = admission.admit(Transport::Unix) else {
            tasks.spawn(refuse_overloaded(stream));
            continue;
        };
        tasks.spawn(admitted.serve(stream, close.child_token()));
    }
}

/// The accept loop's view of `--exit-when-idle`: the quiet-time clock and the last reason
/// logged for staying up (`""` once idle), so each change is logged once.
struct IdleWatch<'a> {
    clock: idle::IdleClock,
    idle: &'a IdleExit,
    logged: Option<&'static str>,
}

impl<'a> IdleWatch<'a> {
    fn new(idle: &'a IdleExit) -> IdleWatch<'a> {
        IdleWatch {
            clock: idle::IdleClock::new(idle.after),
            idle,
            logged: None,
        }
    }

    /// One look at the daemon; true when it has been idle for the whole quiet time.
    async fn idle_long_enough(&mut self, tasks: &TaskTracker) -> bool {
        // A run or a prompt begins only through a connection: with none open, the
        // daemon's own state is stable while it is asked.
        let busy = if tasks.is_empty() {
            (self.idle.busy)().await
        } else {
            Some(idle::CLIENT_CONNECTED)
        };
        if self.logged != Some(busy.unwrap_or("")) {
            match busy {
                Some(reason) => tracing::debug!("idle check: staying up, {reason}"),
                None => tracing::debug!(
                    "idle check: idle; exiting unless used within {:?}",
                    self.idle.after
                ),
            }
            self.logged = Some(busy.unwrap_or(""));
        }
        self.clock
            .observe(tokio::time::Instant::now(), busy.is_some())
    }
}

/// Whether a connection's peer may be served: the daemon's user, and not a sandboxed
/// command (`refused`); a refusal is logged.
fn peer_allowed(stream: &UnixStream, uid: u32, refused: Option<&PeerFilter>) -> bool {
    match stream.peer_cred() {
        Ok(cred)
            if cred.uid() == uid
                && refused.is_some_and(|refused| {
                    // No pid (the peer is gone, or another namespace): refused.
                    cred.pid()
                        .and_then(|p| u32::try_from(p).ok())
                        .is_none_or(|pid| (refused.0)(pid))
                }) =>
        {
            tracing::warn!(
                peer_pid = cred.pid(),
                "refused a connection from a sandboxed command"
            );
            false
        }
        Ok(cred) if cred.uid() == uid => true,
        Ok(cred) => {
            tracing::warn!(
                peer_uid = cred.uid(),
                "refused a connection from another user"
            );
            false
        }
        Err(e) => {
            tracing::warn!("refused a connection without peer credentials: {e}");
            false
        }
    }
}

/// Sleeps until `at`, or forever without one.
async fn sleep_until_some(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

async fn refuse_overloaded(mut stream: UnixStream) {
    let reply = overloaded_reply();
    let _ = stream
        .write_all(Framing::Ndjson.encode(&reply).as_ref())
        .await;
    let _ = stream.shutdown().await;
}

/// Serves one connection until the client leaves or `close` is cancelled.
async fn serve_connection(
    stream: UnixStream,
    dispatcher: Dispatcher,
    budget: InputBudget,
    close: CancellationToken,
) {
    let (read, write) = stream.into_split();
    let framing = Arc::new(OnceLock::new());
    let mailbox = Arc::new(Mailbox::new(framing.clone()));
    let mut rpc = dispatcher.connection(mailbox.clone());
    let writer = tokio::spawn(write_frames(write, mailbox.clone(), close.clone()));
    let limit = budget.limit();
    let mut frames = FramedRead::new(read, FrameCodec::new(MAX_FRAME_BYTES, budget));

    loop {
        let next = tokio::select! {
            _ = close.cancelled() => break,
            next = frames.next() => next,
        };
        if let Some(f) = frames.decoder().framing() {
            let _ = framing.set(f);
        }
        let reply = match next {
            None => break,
            Some(Ok(Frame::Message(bytes))) => {
                let reply = tokio::select! {
                    _ = close.cancelled() => break,
                    reply = rpc.handle_frame(&bytes) => reply,
                };
                mailbox.frame_reply(reply).await;
                continue;
            }
            Some(Ok(Frame::TooLarge { len })) => rpc.error_response(
                ErrorKind::InputTooLarge,
                format!(
                    "a frame of {len} bytes is over the {} MiB limit; it was skipped",
                    MAX_FRAME_BYTES / (1024 * 1024)
                ),
            ),
            Some(Ok(Frame::OverBudget { len })) => rpc.error_response(
                ErrorKind::Overloaded,
                format!(
                    "unfinished frames from all connections fill the daemon's input buffers \
                     ({} MiB); this frame ({len} bytes so far) was skipped. Send it again later",
                    limit / (1024 * 1024)
                ),
            ),
            Some(Err(FrameError::BadHeader(detail))) => {
                let reply = rpc.error_response(
                    ErrorKind::InvalidRequest,
                    format!("{detail}; closing the connection"),
                );
                mailbox.reply(reply).await;
                break;
            }
            Some(Err(FrameError::Io(e))) => {
                tracing::debug!("connection read failed: {e}");
                break;
            }
        };
        mailbox.reply(reply).await;
    }
    // Stop the subscriptions, let the writer send what is queued, and go.
    drop(rpc);
    mailbox.close();
    let _ = tokio::time::timeout(Duration::from_secs(2), writer).await;
}
