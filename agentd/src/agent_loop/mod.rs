//! The agent loop: one run of an agent, from the built request to the finished message.
//!
//! In chat mode a run is one step: build the request, stream the model, apply each piece
//! to the assistant message, emit it as an event, and persist the message at most every
//! 250 ms and at its end. Every await on the outside world sits in a `select!` with the
//! run's cancellation, so a cancel drops the provider stream (closing the HTTP
//! connection) at once and the partial text is kept.
//!
//! This module has no socket and no SQL: it calls the store's methods and the session's
//! event log, and reports how the run ended; the session layer owns run slots and status.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use agent_proto::{
    Agent, Block, EventKind, LoopFinishReason, Message, MessageStatus, SessionStatus, run_error,
};
use futures::StreamExt;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::context;
use crate::provider::{ProviderError, ProviderEvent, Resolved};
use crate::session::events::EventLog;
use crate::store::{Store, StoreError, now_ms};

/// Longest time streamed text stays only in memory.
pub const FLUSH_INTERVAL: Duration = Duration::from_millis(250);

/// Why a run was stopped from outside.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// A client called `cancelLoop` (or deleted the agent).
    User,
    /// The daemon is shutting down.
    Shutdown,
}

/// The handle to stop a run; the first reason given wins.
#[derive(Debug, Default)]
pub struct RunControl {
    token: CancellationToken,
    reason: Mutex<Option<StopReason>>,
}

impl RunControl {
    pub fn new() -> Arc<RunControl> {
        Arc::new(RunControl::default())
    }

    pub fn stop(&self, reason: StopReason) {
        self.reason
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_or_insert(reason);
        self.token.cancel();
    }

    pub fn reason(&self) -> Option<StopReason> {
        *self.reason.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn is_stopped(&self) -> bool {
        self.token.is_cancelled()
    }
}

/// Everything a run needs.
pub struct RunInput {
    pub agent: Agent,
    /// The assistant message to write (already stored, `pending`).
    pub assistant: Message,
    pub resolved: Resolved,
    pub store: Store,
    pub events: Arc<EventLog>,
    pub control: Arc<RunControl>,
}

/// How a run ended, for the session to report.
#[derive(Debug, Clone, PartialEq)]
pub struct RunOutcome {
    pub reason: LoopFinishReason,
    pub error: Option<String>,
    /// The session status after the run.
    pub status: SessionStatus,
}

/// How the streaming part ended.
enum StreamEnd {
    Completed,
    Stopped(StopReason),
    Provider(ProviderError),
    Internal(String),
}

/// Runs to the end and returns how it ended. Never fails: failures become the message's
/// error block, an `error` event and the outcome.
pub async fn run(input: RunInput) -> RunOutcome {
    let RunInput {
        agent,
        assistant,
        resolved,
        store,
        events,
        control,
    } = input;
    let mut writer = MessageWriter::new(assistant, store.clone());
    let end = stream_answer(&agent, &resolved, &store, &events, &control, &mut writer).await;
    finish(end, &mut writer, &events).await
}

async fn stream_answer(
    agent: &Agent,
    resolved: &Resolved,
    store: &Store,
    events: &EventLog,
    control: &RunControl,
    writer: &mut MessageWriter,
) -> StreamEnd {
    let message_id = writer.message.id.clone();
    let history = tokio::select! {
        biased;
        _ = control.token.cancelled() => return stopped(control),
        history = store.history(&agent.id) => match history {
            Ok(mut history) => {
                history.retain(|m| m.id != message_id);
                history
            }
            Err(e) => return StreamEnd::Internal(format!("cannot read the history: {e}")),
        },
    };
    let request = context::build_request(agent, &history, &resolved.model);
    drop(history);
    let mut stream = resolved.provider.stream(request);
    loop {
        let flush_at = writer.flush_due();
        tokio::select! {
            biased;
            _ = control.token.cancelled() => return stopped(control),
            _ = tokio::time::sleep_until(flush_at.unwrap_or_else(Instant::now)), if flush_at.is_some() => {
                if let Err(e) = writer.flush().await {
                    return StreamEnd::Internal(format!("cannot save the message: {e}"));
                }
            }
            item = stream.next() => match item {
                None => return StreamEnd::Completed,
                Some(Err(e)) => return StreamEnd::Provider(e),
                Some(Ok(event)) => {
                    if let Err(e) = apply(event, writer, events).await {
                        return StreamEnd::Internal(format!("cannot emit an event: {e}"));
                    }
                }
            },
        }
    }
}

fn stopped(control: &RunControl) -> StreamEnd {
    StreamEnd::Stopped(control.reason().unwrap_or(StopReason::User))
}

/// Applies one provider event to the message and tells the subscribers.
async fn apply(
    event: ProviderEvent,
    writer: &mut MessageWriter,
    events: &EventLog,
) -> Result<(), StoreError> {
    let message_id = writer.message.id.clone();
    let kind = match event {
        ProviderEvent::TextDelta(delta) => {
            writer.append(Piece::Text, &delta);
            EventKind::TextDelta { message_id, delta }
        }
        ProviderEvent::ReasoningDelta(delta) => {
            writer.append(Piece::Reasoning, &delta);
            EventKind::ReasoningDelta { message_id, delta }
        }
        ProviderEvent::Usage(usage) => {
            writer.message.usage = Some(usage);
            writer.dirty = true;
            EventKind::Usage {
                message_id,
                input_tokens: usage.input_tokens,
                output_tokens: usage.output_tokens,
            }
        }
        ProviderEvent::Finish(_) => return Ok(()),
    };
    events.emit(kind).await.map(drop)
}

/// Ends the message and emits what the clients need to know; returns the outcome.
async fn finish(end: StreamEnd, writer: &mut MessageWriter, events: &EventLog) -> RunOutcome {
    let message_id = writer.message.id.clone();
    let (status, outcome, error) = match end {
        StreamEnd::Completed => (
            MessageStatus::Done,
            RunOutcome {
                reason: LoopFinishReason::Completed,
                error: None,
                status: SessionStatus::Idle,
            },
            None,
        ),
        StreamEnd::Stopped(StopReason::User) => (
            MessageStatus::Cancelled,
            RunOutcome {
                reason: LoopFinishReason::Cancelled,
                error: None,
                status: SessionStatus::Idle,
            },
            None,
        ),
        StreamEnd::Stopped(StopReason::Shutdown) => (
            MessageStatus::Interrupted,
            RunOutcome {
                reason: LoopFinishReason::Cancelled,
                error: Some("the daemon is shutting down".into()),
                status: SessionStatus::Idle,
            },
            None,
        ),
        StreamEnd::Provider(e) => {
            let message = e.to_string();
            (
                MessageStatus::Error,
                RunOutcome {
                    reason: LoopFinishReason::Error,
                    error: Some(message.clone()),
                    status: SessionStatus::Error,
                },
                Some((message, e.kind(), e.retryable())),
            )
        }
        StreamEnd::Internal(message) => (
            MessageStatus::Error,
            RunOutcome {
                reason: LoopFinishReason::Error,
                error: Some(message.clone()),
                status: SessionStatus::Error,
            },
            Some((message, run_error::INTERNAL, false)),
        ),
    };
    if let Some((message, kind, _)) = &error {
        writer.message.blocks.push(Block::Error {
            message: message.clone(),
            kind: (*kind).to_owned(),
        });
    }
    writer.message.status = status;
    writer.dirty = true;
    if let Err(e) = writer.flush().await {
        tracing::error!(message_id, "cannot save the finished message: {e}");
    }
    let mut kinds = Vec::with_capacity(2);
    if let Some((message, kind, retryable)) = error {
        tracing::warn!(message_id, kind, "run failed: {message}");
        kinds.push(EventKind::Error {
            message_id: Some(message_id.clone()),
            message,
            kind: kind.to_owned(),
            retryable,
        });
    }
    kinds.push(EventKind::MessageCompleted { message_id, status });
    for kind in kinds {
        if let Err(e) = events.emit(kind).await {
            tracing::error!("cannot emit the end of a run: {e}");
        }
    }
    outcome
}

#[derive(Clone, Copy, PartialEq)]
enum Piece {
    Text,
    Reasoning,
}

/// The assistant message being written, and when it was last saved.
struct MessageWriter {
    message: Message,
    store: Store,
    dirty: bool,
    last_flush: Instant,
}

impl MessageWriter {
    fn new(message: Message, store: Store) -> Self {
        MessageWriter {
            message,
            store,
            dirty: false,
            last_flush: Instant::now(),
        }
    }

    /// Appends streamed text to the last block of its kind, or starts a new block.
    fn append(&mut self, piece: Piece, delta: &str) {
        if self.message.status == MessageStatus::Pending {
            self.message.status = MessageStatus::Streaming;
        }
        let last = match (self.message.blocks.last_mut(), piece) {
            (Some(Block::Text { text }), Piece::Text)
            | (Some(Block::Reasoning { text }), Piece::Reasoning) => Some(text),
            _ => None,
        };
        match last {
            Some(text) => text.push_str(delta),
            None => {
                let text = delta.to_owned();
                self.message.blocks.push(match piece {
                    Piece::Text => Block::Text { text },
                    Piece::Reasoning => Block::Reasoning { text },
                });
            }
        }
        self.dirty = true;
    }

    /// When the next save is due, if there is something to save.
    fn flush_due(&self) -> Option<Instant> {
        self.dirty.then(|| self.last_flush + FLUSH_INTERVAL)
    }

    async fn flush(&mut self) -> Result<(), StoreError> {
        self.message.updated_at = now_ms();
        self.store.update_message(&self.message).await?;
        self.dirty = false;
        self.last_flush = Instant::now();
        Ok(())
    }
}
