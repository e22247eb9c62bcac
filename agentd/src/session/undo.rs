//! Undo: a turn's diff (`getTurnDiff`) and going back to a user message (`revertTo`).
//!
//! The snapshots are taken by the loop around a step's calls (`agent_loop::checkpoint`)
//! and kept in the agent's folder (`tools::checkpoint`); the store says which belong to
//! which answer. A revert holds the run slot, so no run changes the workspace or the
//! history meanwhile; it puts the files back first (refusing before it changes anything
//! when a snapshot it needs is gone), then cuts the history (messages, the summaries that
//! cover them, the context edge among them; the kept history and the snapshot mirror
//! dropped), then tells every client with `reverted`.
//!
//! Copies (fork, import) carry no snapshots: an answer copied from another agent, which
//! predates the copy, answers `invalidState` naming that; the copy's own turns work.

use std::sync::{Arc, PoisonError};

use agent_proto::{
    Agent, EventKind, Message, RevertConflict, RevertResult, Role, SessionStatus, TurnDiff,
    TurnFile, TurnFileStatus,
};

use super::{SessionError, SessionManager};
use crate::store::{Checkpoint, now_ms};
use crate::tools::checkpoint::{ChangeStatus, CheckpointError, Checkpoints};

/// What a revert's file part needs: the turns from the message on, each its snapshots.
struct FilePlan {
    checkpoints: Checkpoints,
    turns: Vec<(String, Option<String>)>,
}

fn invalid(e: CheckpointError) -> SessionError {
    match e {
        CheckpointError::Io(e) => SessionError::Internal(e),
        other => SessionError::InvalidState(other.to_string()),
    }
}

fn copied(message_id: &str) -> SessionError {
    SessionError::InvalidState(format!(
        "message {message_id} was copied from another agent (fork or import): snapshots are not carried by copies, so its file changes cannot be shown or undone here (revertTo with files: false still cuts the conversation)"
    ))
}

/// Whether `message` came with a copy of its agent (it predates the agent).
fn inherited(agent: &Agent, message: &Message) -> bool {
    message.created_at < agent.created_at
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, CheckpointError> + Send + 'static,
) -> Result<T, SessionError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| SessionError::Internal(format!("the undo task failed: {e}")))?
        .map_err(invalid)
}

impl SessionManager {
    /// The agent's snapshots (its workspace's path rules).
    fn checkpoints_of(&self, agent: &Agent) -> Result<Checkpoints, SessionError> {
        self.tools
            .checkpoints(agent)
            .map_err(SessionError::InvalidState)
    }

    /// The files an answer changed, as unified diffs.
    pub async fn turn_diff(
        &self,
        agent_id: &str,
        message_id: &str,
    ) -> Result<TurnDiff, SessionError> {
        let agent = self.get_agent(agent_id).await?;
        let message = self.message_of(agent_id, message_id).await?;
        if message.role != Role::Assistant {
            return Err(SessionError::InvalidParams(format!(
                "message {message_id} is a user message; getTurnDiff takes an answer"
            )));
        }
        let Some(checkpoint) = self.store.checkpoint(message_id).await? else {
            if inherited(&agent, &message) {
                return Err(copied(message_id));
            }
            return Ok(TurnDiff::default());
        };
        let Some(before) = checkpoint.before else {
            return Err(SessionError::InvalidState(format!(
                "no snapshot was taken before this answer's changes: {}",
                checkpoint.error.unwrap_or_default()
            )));
        };
        let checkpoints = self.checkpoints_of(&agent)?;
        let after = checkpoint.after;
        let changes = blocking(move || {
            let before = checkpoints.load(&before)?;
            // An answer still running (or cut by a crash) shows the workspace as it is.
            let after = match after {
                Some(id) => checkpoints.load(&id)?,
                None => checkpoints.scan(Some(&before))?,
            };
            checkpoints.diff(&before, &after)
        })
        .await?;
        let files = changes
            .into_iter()
            .map(|c| TurnFile {
                path: c.path,
                status: match c.status {
                    ChangeStatus::Added => TurnFileStatus::Added,
                    ChangeStatus::Modified => TurnFileStatus::Modified,
                    ChangeStatus::Deleted => TurnFileStatus::Deleted,
                },
                diff: c.diff,
            })
            .collect();
        Ok(TurnDiff { files })
    }

    /// Puts the workspace files back to how they were before `message_id` (a user
    /// message) and removes it and every later message; tells every client.
    pub async fn revert_to(
        self: &Arc<Self>,
        agent_id: &str,
        message_id: &str,
        files: bool,
        conversation: bool,
    ) -> Result<RevertResult, SessionError> {
        let session = self.session(agent_id).await?;
        let agent = self.get_agent(agent_id).await?;
        let message = self.message_of(agent_id, message_id).await?;
        if message.role != Role::User {
            return Err(SessionError::InvalidParams(format!(
                "message {message_id} is an answer; revertTo takes a user message (the one to go back before)"
            )));
        }
        let slot = self.claim_run_slot(&session, "").await?;
        match session.status() {
            SessionStatus::WaitingPermission
            | SessionStatus::WaitingQuestion
            | SessionStatus::Paused => {
                return Err(SessionError::InvalidState(format!(
                    "the agent's run is {}: answer or cancel it (cancelLoop) before reverting",
                    session.status().as_str()
                )));
            }
            _ => {}
        }
        let ord = self
            .store
            .message_position(message_id)
            .await?
            .ok_or_else(|| SessionError::MessageNotFound(message_id.to_owned()))?;
        let mut result = RevertResult::default();
        if files && let Some(plan) = self.file_plan(&agent, &message, ord).await? {
            let reverted = blocking(move || {
                let changes = plan.checkpoints.turn_changes(&plan.turns)?;
                plan.checkpoints.revert(&changes)
            })
            .await?;
            result.restored = reverted.restored;
            result.conflicts = reverted
                .conflicts
                .into_iter()
                .map(|c| RevertConflict {
                    path: c.path,
                    reason: c.reason,
                })
                .collect();
        }
        if conversation {
            let cut = self.store.truncate_history(agent_id, ord, now_ms()).await?;
            result.removed_messages = cut.messages;
            session.events.forget_message();
            session
                .tracker
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .last_reported = None;
        }
        session
            .emit(EventKind::Reverted {
                message_id: message_id.to_owned(),
                restored: result.restored.clone(),
                conflicts: result.conflicts.clone(),
                removed_messages: result.removed_messages,
            })
            .await;
        drop(slot);
        Ok(result)
    }

    /// The turns a revert to the user message at `ord` undoes, each its snapshots;
    /// `None` when no answer from there on took one (nothing to put back). Refuses what
    /// cannot be undone (a snapshot never taken), before anything changes.
    async fn file_plan(
        &self,
        agent: &Agent,
        message: &Message,
        ord: i64,
    ) -> Result<Option<FilePlan>, SessionError> {
        if inherited(agent, message) {
            return Err(copied(&message.id));
        }
        let from_here: Vec<Checkpoint> = self.store.checkpoints_from(&agent.id, ord).await?;
        if from_here.is_empty() {
            return Ok(None);
        }
        let mut turns = Vec::with_capacity(from_here.len());
        for c in from_here {
            let Some(before) = c.before else {
                return Err(SessionError::InvalidState(format!(
                    "no snapshot was taken before answer {}'s changes, so they cannot be undone: {}",
                    c.message_id,
                    c.error.unwrap_or_default()
                )));
            };
            turns.push((before, c.after));
        }
        Ok(Some(FilePlan {
            checkpoints: self.checkpoints_of(agent)?,
            turns,
        }))
    }
}
