//! Messages sent into a busy agent (`sendMessage {whenBusy}`): the queue of next turns and
//! the steers waiting to join the running turn.
//!
//! Both are stored before the send is answered (`store/queue.rs`), so they survive a
//! restart. A queued message runs as the agent's next turn when a run ends without
//! waiting for a client (`run_queue`, called at the end of every run and at start-up); a
//! steer is taken by the running turn's loop before its next model call
//! (`agent_loop/steer.rs`). A steer whose turn ended first (completed, cancelled, failed)
//! is not dropped: it becomes the first of the queued messages it was sent before.
//! Every change is told as `queueUpdated` with the whole queue.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use agent_proto::{
    Agent, AgentMode, Block, Delivery, EventKind, Message, QueuedMessage, SendMessageResult,
    SessionStatus, WhenBusy,
};

use futures::future::BoxFuture;

use super::{Session, SessionError, SessionManager};
use crate::store::now_ms;

/// What the agent is busy with when a message comes in.
pub(super) enum Busy {
    /// A run is writing this assistant message.
    Running(String),
    /// The run waits for a client (a prompt, a question) or is paused.
    Suspended,
}

/// Whether a message can steer: text only (its words join a turn as a user message), and
/// only into a turn the daemon's loop runs (an external ACP agent's turn is its own).
pub(super) fn steerable(agent: &Agent, blocks: &[Block]) -> Result<(), SessionError> {
    if agent.mode == AgentMode::Acp {
        return Err(SessionError::NotSupported(
            "steering an agent of mode \"acp\" (its external agent runs the turn): queue the message instead (whenBusy \"queue\")".into(),
        ));
    }
    if blocks.iter().any(|b| !matches!(b, Block::Text { .. })) {
        return Err(SessionError::InvalidParams(
            "a steer takes text only: send attachments with whenBusy \"queue\"".into(),
        ));
    }
    Ok(())
}

impl SessionManager {
    /// Stores a message sent into a busy agent and tells every client; returns the ids it
    /// was given and how it was delivered.
    pub(super) async fn enqueue(
        self: &Arc<Self>,
        session: &Arc<Session>,
        user: Message,
        assistant: Message,
        busy: Busy,
        when_busy: WhenBusy,
        client_request_id: Option<String>,
    ) -> Result<SendMessageResult, SessionError> {
        let agent_id = &session.agent_id;
        if when_busy == WhenBusy::Steer && assistant.turn.is_some() {
            return Err(SessionError::InvalidParams(
                "a steer joins the running turn, whose choices stand: provider, model, reasoningEffort and outputSchema go with a turn of its own (whenBusy \"queue\")".into(),
            ));
        }
        // A steer joins the answer being written; into a suspended run, the answer it
        // resumes (the agent's last).
        let answer = match (when_busy, busy) {
            (WhenBusy::Steer, Busy::Running(message_id)) => message_id,
            (WhenBusy::Steer, Busy::Suspended) => self
                .store
                .last_assistant_message(agent_id)
                .await?
                .map(|m| m.id)
                .ok_or_else(|| {
                    SessionError::InvalidState("the agent has no turn to steer".into())
                })?,
            _ => assistant.id,
        };
        let queued = QueuedMessage {
            user_message_id: user.id,
            assistant_message_id: answer,
            when_busy,
            content: user.blocks,
            turn: assistant.turn,
            created_at: now_ms(),
        };
        self.store
            .insert_queued(agent_id, &queued, client_request_id.as_deref())
            .await?;
        session.queued.store(true, Ordering::SeqCst);
        if when_busy == WhenBusy::Steer {
            session.steering.store(true, Ordering::SeqCst);
        }
        self.emit_queue(session).await;
        // The run may have ended while this was stored: then nothing would take it.
        if session.lock().run.is_none() {
            self.run_queue(agent_id).await;
        }
        Ok(SendMessageResult {
            user_message_id: queued.user_message_id,
            assistant_message_id: queued.assistant_message_id,
            delivery: match when_busy {
                WhenBusy::Steer => Delivery::Steered,
                _ => Delivery::Queued,
            },
        })
    }

    /// Drops the agent's queued message `id` (all of them without one); tells every
    /// client. Returns how many were dropped.
    pub async fn cancel_queued(
        &self,
        agent_id: &str,
        id: Option<&str>,
    ) -> Result<u32, SessionError> {
        let session = self.session(agent_id).await?;
        let dropped = self.store.drop_queued(agent_id, id).await?;
        if dropped > 0 {
            self.emit_queue(&session).await;
        }
        Ok(u32::try_from(dropped).unwrap_or(u32::MAX))
    }

    /// Tells every client the agent's queue as it is now.
    pub(super) async fn emit_queue(&self, session: &Session) {
        match self.store.queued(&session.agent_id).await {
            Ok(queue) => session.emit(EventKind::QueueUpdated { queue }).await,
            Err(e) => tracing::warn!(
                agent_id = session.agent_id,
                "cannot read the queue to announce it: {e}"
            ),
        }
    }

    /// After a run ended (not suspended), or at start-up: steers that did not join a turn
    /// become queued messages, and the first queued message starts as the next turn, if
    /// the agent is free and not waiting for a client. A failure is logged; the queue
    /// stays for the next run's end.
    ///
    /// Boxed: a run's end starts the next run, whose end starts the next (a future of a
    /// known type breaks the cycle the compiler cannot see through).
    pub(super) fn run_queue<'a>(self: &'a Arc<Self>, agent_id: &'a str) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            if let Err(e) = self.start_next_queued(agent_id).await {
                match e {
                    SessionError::AgentNotFound(_) | SessionError::ShuttingDown => {}
                    e => tracing::warn!(agent_id, "cannot start the next queued message: {e}"),
                }
            }
        })
    }

    async fn start_next_queued(self: &Arc<Self>, agent_id: &str) -> Result<(), SessionError> {
        if self.shutting_down.is_cancelled() {
            return Ok(());
        }
        let session = self.session(agent_id).await?;
        if suspended(session.status()) {
            return Ok(());
        }
        // Cleared before the store is read: a message stored meanwhile sets it again.
        if !session.queued.swap(false, Ordering::SeqCst) {
            return Ok(());
        }
        let queue = self.store.queued(agent_id).await?;
        if queue.is_empty() {
            return Ok(());
        }
        // Something is queued: whatever happens below, the next look reads the store.
        session.queued.store(true, Ordering::SeqCst);
        // Steers left over become queued messages, with the ids of answers of their own.
        let converted = queue.iter().any(|q| q.when_busy == WhenBusy::Steer)
            && self
                .store
                .queue_leftover_steers(agent_id, || uuid::Uuid::now_v7().to_string())
                .await?;
        let first = if converted {
            self.store
                .first_queued(agent_id)
                .await?
                .map(|(first, _)| first)
        } else {
            queue.into_iter().find(|q| q.when_busy == WhenBusy::Queue)
        };
        let Some(first) = first else {
            if converted {
                self.emit_queue(&session).await;
            }
            return Ok(());
        };
        let slot = match self
            .claim_run_slot(&session, &first.assistant_message_id)
            .await
        {
            Ok(slot) => slot,
            // Another run took the agent: the queue goes on when that one ends.
            Err(SessionError::AgentBusy { .. }) => return Ok(()),
            Err(e) => return Err(e),
        };
        // Under the slot: what is first now (one may have been cancelled meanwhile), and
        // is the agent still free of a prompt?
        if suspended(session.status()) {
            return Ok(());
        }
        let Some((next, request_id)) = self.store.first_queued(agent_id).await? else {
            self.emit_queue(&session).await;
            return Ok(());
        };
        let agent = self.get_agent(agent_id).await?;
        let now = now_ms();
        let user = Message::new(
            next.user_message_id.clone(),
            agent_id,
            agent_proto::Role::User,
            next.content,
            agent_proto::MessageStatus::Done,
            now,
        );
        let mut assistant = Message::new(
            next.assistant_message_id,
            agent_id,
            agent_proto::Role::Assistant,
            Vec::new(),
            agent_proto::MessageStatus::Pending,
            now,
        );
        // The send's choices for its turn, checked when it was sent.
        assistant.turn = next.turn;
        let user = self
            .store_send(agent_id, user, &assistant, request_id)
            .await?;
        self.store
            .drop_queued(agent_id, Some(&next.user_message_id))
            .await?;
        self.emit_queue(&session).await;
        self.begin_turn(session, agent, user, assistant, slot).await;
        Ok(())
    }

    /// Start-up: the queues left by the last run of the daemon go on (steers of a turn
    /// that was interrupted are queued; a turn waiting for a client keeps its steers for
    /// when it resumes).
    /// Starts agent `agent_id`'s next queued message, if it has one and is idle (after this
    /// daemon took the agent over from a daemon that died).
    pub async fn resume_queue(self: &Arc<Self>, agent_id: &str) {
        self.run_queue(agent_id).await;
    }

    pub async fn resume_queues(self: &Arc<Self>) -> Result<(), SessionError> {
        for agent_id in self.store.agents_with_queue().await? {
            self.run_queue(&agent_id).await;
        }
        Ok(())
    }
}

/// Whether the session's run waits for a client or is paused (its queue waits too).
fn suspended(status: SessionStatus) -> bool {
    matches!(
        status,
        SessionStatus::WaitingPermission | SessionStatus::WaitingQuestion | SessionStatus::Paused
    )
}
