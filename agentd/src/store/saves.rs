//! Timed saves of streaming messages, written together: every run that streams saves its
//! message every 250 ms (DESIGN.md: a crash loses at most that much), and with thousands of
//! agents streaming those saves were thousands of round trips a second to SQLite's thread,
//! each a commit, a wake-up of that thread and one of the runtime (docs/performance.md).
//!
//! A save is queued ([`Store::save_soon`]); whoever queues into an idle queue starts one
//! task that writes what is queued, then what was queued meanwhile, until the queue is
//! empty. A batch of several messages is one transaction holding one multi-statement
//! query, so while the single writer is busy, saves pile up and go in one round trip.
//! Each save still lands whole or not at all, and a failed batch is written again one
//! message at a time, so each caller gets its own message's outcome.

use std::sync::{Mutex, PoisonError};

use agent_proto::Message;
use tokio::sync::oneshot;

use super::messages::{SAVE_MESSAGE, bind_save, blocks_json};
use super::{Store, StoreError};

/// Messages in one statement list (6 arguments each).
const MAX_BATCH: usize = 32;

/// The outcome of a queued save; dropped unanswered only if the runtime stops.
pub type SaveDone = oneshot::Receiver<Result<(), StoreError>>;

type Queued = (Message, oneshot::Sender<Result<(), StoreError>>);

#[derive(Debug, Default)]
pub(super) struct SaveQueue {
    inner: Mutex<QueueState>,
}

#[derive(Debug, Default)]
struct QueueState {
    queued: Vec<Queued>,
    /// A task is writing what is queued.
    draining: bool,
}

impl SaveQueue {
    fn lock(&self) -> std::sync::MutexGuard<'_, QueueState> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Store {
    /// Queues a save of `message` (as [`Store::update_message`]) to be written with the
    /// other saves queued meanwhile. One message must not have two saves queued at once:
    /// await the first.
    pub fn save_soon(&self, message: Message) -> SaveDone {
        let (done, outcome) = oneshot::channel();
        let start = {
            let mut state = self.saves.lock();
            state.queued.push((message, done));
            !std::mem::replace(&mut state.draining, true)
        };
        if start {
            let store = self.clone();
            tokio::spawn(async move { store.drain_saves().await });
        }
        outcome
    }

    async fn drain_saves(&self) {
        // Should writing panic, the next save starts a new task instead of queueing
        // behind one that is gone (the saves it held answer as lost).
        struct Draining<'a>(&'a SaveQueue);
        impl Drop for Draining<'_> {
            fn drop(&mut self) {
                if std::thread::panicking() {
                    self.0.lock().draining = false;
                }
            }
        }
        let _draining = Draining(&self.saves);
        loop {
            let batch = {
                let mut state = self.saves.lock();
                if state.queued.is_empty() {
                    state.draining = false;
                    return;
                }
                std::mem::take(&mut state.queued)
            };
            let mut batch = batch.into_iter().peekable();
            while batch.peek().is_some() {
                let chunk: Vec<Queued> = batch.by_ref().take(MAX_BATCH).collect();
                self.write_saves(chunk).await;
            }
        }
    }

    /// Writes queued saves: one alone as an ordinary save; several in one transaction,
    /// and each again on its own if that fails.
    async fn write_saves(&self, chunk: Vec<Queued>) {
        if chunk.len() > 1 {
            let messages: Vec<&Message> = chunk.iter().map(|(m, _)| m).collect();
            if self.update_messages(&messages).await.is_ok() {
                for (_, done) in chunk {
                    let _ = done.send(Ok(()));
                }
                return;
            }
        }
        for (message, done) in chunk {
            let _ = done.send(self.update_message(&message).await);
        }
    }

    /// Saves several messages (as [`Store::update_message`] does one) in one transaction
    /// and one round trip.
    pub(super) async fn update_messages(&self, messages: &[&Message]) -> Result<(), StoreError> {
        // Serialized before the single write connection is taken.
        let blocks = messages
            .iter()
            .map(|m| blocks_json(&m.blocks))
            .collect::<Result<Vec<_>, _>>()?;
        let mut query = self.statements(&vec![SAVE_MESSAGE; messages.len()], true);
        for (message, blocks) in messages.iter().zip(blocks) {
            query = bind_save(query, message, blocks);
        }
        self.execute_transaction(query, || {
            for message in messages {
                self.histories.update(message);
            }
        })
        .await
    }
}
