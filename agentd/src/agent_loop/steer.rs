//! Steering: the user's words sent into the running turn (`sendMessage {whenBusy:
//! "steer"}`) join it between steps, after the calls in flight settled and before the
//! next model call, as a `steer` block the model sees as a user message.
//!
//! The session stores a steer and sets the run's flag; the loop looks at the store only
//! when the flag is set, so a turn without steers costs one atomic read per step. The
//! block is saved before the steer leaves the queue: a crash in between leaves both, and
//! start-up drops a queued steer its message already holds (never lost, never twice).

use std::sync::atomic::Ordering;

use agent_proto::{Block, EventKind};

use super::{End, Run};

impl Run<'_> {
    /// Joins the steers waiting for this turn; true when there were any.
    pub(super) async fn join_steers(&mut self) -> Result<bool, End> {
        if !self.steering.swap(false, Ordering::SeqCst) {
            return Ok(false);
        }
        let steers = self.store.steers(&self.agent.id, self.writer.id()).await?;
        if steers.is_empty() {
            return Ok(false);
        }
        let message_id = self.writer.id().to_owned();
        let mut joined = Vec::with_capacity(steers.len());
        for steer in steers {
            let text = steer_text(&steer.content);
            self.writer.push_block(Block::Steer {
                id: steer.user_message_id.clone(),
                text: text.clone(),
            });
            joined.push((steer.user_message_id, text));
        }
        self.writer.flush().await?;
        for (id, text) in joined {
            self.store.drop_queued(&self.agent.id, Some(&id)).await?;
            self.emit(EventKind::Steered {
                message_id: message_id.clone(),
                id,
                text,
            })
            .await?;
        }
        let queue = self.store.queued(&self.agent.id).await?;
        self.emit(EventKind::QueueUpdated { queue }).await?;
        Ok(true)
    }
}

/// The text of a steer's blocks (a steer is text only).
fn steer_text(blocks: &[Block]) -> String {
    let texts: Vec<&str> = blocks
        .iter()
        .filter_map(|b| match b {
            Block::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    texts.join("\n\n")
}
