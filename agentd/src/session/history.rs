//! Operations on an agent's history besides sending: the context edge, regenerating the
//! latest answer as a new variant, and titles.

use std::sync::{Arc, PoisonError};

use agent_proto::{
    Agent, Block, Message, MessageStatus, RegenerateResult, Role, SessionStatus, ToolCallBlock,
};

use super::runs::Start;
use super::{Session, SessionError, SessionManager};
use crate::store::now_ms;

/// Where the last step of an answer starts: after the tool calls of the step before it.
/// The blocks before it are kept by `regenerate`.
pub(super) fn last_step_start(blocks: &[Block]) -> usize {
    let mut start = 0;
    for (i, pair) in blocks.windows(2).enumerate() {
        let call_then_other = matches!(pair[0], Block::ToolCall(ToolCallBlock { .. }))
            && !matches!(
                pair[1],
                Block::ToolCall(ToolCallBlock { .. }) | Block::Error { .. }
            );
        if call_then_other {
            start = i + 1;
        }
    }
    start
}

impl SessionManager {
    /// Sets or clears the context edge; the model no longer sees the edge message and
    /// everything before it.
    pub async fn set_context_edge(
        &self,
        agent_id: &str,
        message_id: Option<&str>,
    ) -> Result<Agent, SessionError> {
        let session = self.session(agent_id).await?;
        if let Some(id) = message_id {
            self.message_of(agent_id, id).await?;
        }
        let write = async || -> Result<Option<Agent>, SessionError> {
            if !self
                .store
                .set_context_edge(agent_id, message_id, now_ms())
                .await?
            {
                return Err(SessionError::AgentNotFound(agent_id.to_owned()));
            }
            // What the provider counted last no longer describes the next request.
            session
                .tracker
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .last_reported = None;
            Ok(Some(self.get_agent(agent_id).await?))
        };
        let updated = self.update_agent_row(agent_id, write).await?;
        updated.ok_or_else(|| SessionError::AgentNotFound(agent_id.to_owned()))
    }

    /// A message of this agent, or `messageNotFound`.
    pub(super) async fn message_of(
        &self,
        agent_id: &str,
        message_id: &str,
    ) -> Result<Message, SessionError> {
        self.store
            .get_message(message_id)
            .await?
            .filter(|m| m.agent_id == agent_id)
            .ok_or_else(|| SessionError::MessageNotFound(message_id.to_owned()))
    }

    /// Runs the last step of the agent's latest answer again, as a new variant: the old
    /// answer stays (superseded), the new one keeps the steps before the last.
    pub async fn regenerate(
        self: &Arc<Self>,
        agent_id: &str,
        message_id: &str,
    ) -> Result<RegenerateResult, SessionError> {
        let session = self.session(agent_id).await?;
        if self.get_agent(agent_id).await?.mode == agent_proto::AgentMode::Acp {
            return Err(SessionError::NotSupported(
                "regenerate for agents of mode \"acp\" (the external agent keeps its own history; send a new message)".into(),
            ));
        }
        let old = self.message_of(agent_id, message_id).await?;
        if old.role != Role::Assistant {
            return Err(SessionError::InvalidParams(format!(
                "message {message_id} is a user message; regenerate takes an answer"
            )));
        }
        let variant = Message {
            variant_of: Some(old.variant_of.clone().unwrap_or_else(|| old.id.clone())),
            ..Message::new(
                uuid::Uuid::now_v7().to_string(),
                agent_id,
                Role::Assistant,
                Vec::new(),
                MessageStatus::Pending,
                now_ms(),
            )
        };
        let agent = self.get_agent(agent_id).await?;
        let slot = self.claim_run_slot(&session, &variant.id).await?;
        let old = self.check_regenerable(&session, message_id).await?;
        let keep = last_step_start(&old.blocks);
        let variant = Message {
            // A variant answers the same turn: with the same choices.
            turn: old.turn.clone(),
            blocks: old.blocks[..keep]
                .iter()
                .filter(|b| !matches!(b, Block::Error { .. }))
                .cloned()
                .collect(),
            ..variant
        };
        self.store.insert_variant(&old, &variant).await?;
        let result = RegenerateResult {
            assistant_message_id: variant.id.clone(),
        };
        self.start_run(
            session,
            Start {
                agent,
                assistant: variant,
                slot,
            },
        )
        .await;
        Ok(result)
    }

    /// Under the run slot: the message is the agent's latest answer and has ended.
    async fn check_regenerable(
        &self,
        session: &Session,
        message_id: &str,
    ) -> Result<Message, SessionError> {
        match session.status() {
            SessionStatus::WaitingPermission | SessionStatus::Paused => {
                return Err(SessionError::InvalidState(format!(
                    "the agent's run is {}: answer or cancel it (cancelLoop) before regenerating",
                    session.status().as_str()
                )));
            }
            _ => {}
        }
        let latest = self
            .store
            .last_assistant_message(&session.agent_id)
            .await?
            .ok_or_else(|| SessionError::MessageNotFound(message_id.to_owned()))?;
        if latest.id != message_id {
            return Err(SessionError::InvalidState(format!(
                "only the latest answer ({}) can be regenerated; fork the agent at an earlier one (forkAgent) to branch from there",
                latest.id
            )));
        }
        match latest.status {
            MessageStatus::Pending | MessageStatus::Streaming | MessageStatus::Waiting => Err(
                SessionError::InvalidState("the answer is still being written".into()),
            ),
            _ => Ok(latest),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_proto::{ToolCallResult, ToolCallStatus};

    fn call(id: &str) -> Block {
        Block::ToolCall(ToolCallBlock {
            result: Some(ToolCallResult {
                content: "ok".into(),
                is_error: false,
                offload_path: None,
                duration_ms: None,
            }),
            ..ToolCallBlock::new(id, "bash", serde_json::json!({}), ToolCallStatus::Success)
        })
    }

    fn text(t: &str) -> Block {
        Block::Text { text: t.into() }
    }

    #[test]
    fn the_last_step_starts_after_the_calls_before_it() {
        let reasoning = Block::reasoning("r");
        let error = Block::Error {
            message: "e".into(),
            kind: "k".into(),
        };
        let cases: Vec<(Vec<Block>, usize)> = vec![
            (vec![text("a")], 0),
            (vec![], 0),
            (vec![text("a"), call("1"), text("b")], 2),
            (
                vec![
                    text("a"),
                    call("1"),
                    call("2"),
                    reasoning.clone(),
                    text("b"),
                ],
                3,
            ),
            // the last step is the one that made calls
            (vec![text("a"), call("1"), text("b"), call("2")], 2),
            // an error after the calls is part of that step
            (vec![text("a"), call("1"), error], 0),
        ];
        for (blocks, expected) in cases {
            assert_eq!(last_step_start(&blocks), expected, "{blocks:?}");
        }
    }
}
