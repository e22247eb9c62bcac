//! Answers to suspended runs: a permission prompt (`handlePermissionResponse`) and a
//! question of the model (`answerQuestion`). Both work the same way: under the agent's run
//! slot, the waiting call is re-read (so of two racing answers exactly one finds it
//! waiting), the answer is saved with the call (one per call, ever) before it is
//! acknowledged, and a run resumes the message, applying it. An answer saved just before
//! a crash is applied by `continueLoop`.

use std::sync::Arc;

use agent_proto::{
    Block, EventKind, PermissionLevel, PermissionResolution, QuestionAnswer, QuestionResolution,
    Remember, ToolCallBlock, ToolCallStatus,
};

use super::runs::Start;
use super::{SessionError, SessionManager};
use crate::store::now_ms;
use crate::tools::builtin::question;

impl SessionManager {
    /// Answers a permission prompt; the first answer wins and resumes the run. The answer
    /// is saved with the call (one resolution per call, ever) before it is acknowledged,
    /// so it holds across a crash: a continued run applies it.
    pub async fn answer_permission(
        self: &Arc<Self>,
        message_id: &str,
        tool_call_id: &str,
        granted: bool,
        permission_type: Option<PermissionLevel>,
        remember: Remember,
    ) -> Result<(), SessionError> {
        let not_pending = || {
            SessionError::PermissionNotPending(format!(
                "tool call {tool_call_id} of message {message_id} is not waiting for permission (already answered, cancelled, or never asked)"
            ))
        };
        let Suspended {
            session,
            agent,
            slot,
            mut message,
        } = self.claim_suspended(message_id, not_pending).await?;
        let pending = message.blocks.iter_mut().find_map(|b| match b {
            Block::ToolCall(ToolCallBlock {
                tool_call_id: id,
                name,
                status: ToolCallStatus::WaitingPermission,
                prompt,
                resolution: resolution @ None,
                ..
            }) if id == tool_call_id => Some((name.clone(), prompt.clone(), resolution)),
            _ => None,
        });
        let Some((tool_name, prompt, resolution)) = pending else {
            return Err(not_pending());
        };
        if let Some(level) = permission_type {
            let expected = prompt
                .as_ref()
                .map(|p| p.permission_type)
                .or_else(|| self.tools.level_of(&tool_name));
            if expected.is_some_and(|e| e != level) {
                return Err(SessionError::InvalidParams(format!(
                    "permissionType {:?} does not match the prompt ({:?})",
                    level.as_str(),
                    expected.map(PermissionLevel::as_str).unwrap_or_default()
                )));
            }
        }
        *resolution = Some(PermissionResolution {
            granted,
            remember,
            cancelled: false,
        });
        message.updated_at = now_ms();
        self.store.update_message(&message).await?;
        session
            .emit(EventKind::PermissionResolved {
                message_id: message_id.to_owned(),
                tool_call_id: tool_call_id.to_owned(),
                granted,
                remember,
                cancelled: false,
            })
            .await;
        self.start_run(
            session,
            Start {
                agent,
                assistant: message,
                slot,
            },
        )
        .await;
        Ok(())
    }

    /// Answers a question of the model (or declines it); the first answer wins and
    /// resumes the run, with the answers as the call's result.
    pub async fn answer_question(
        self: &Arc<Self>,
        message_id: &str,
        tool_call_id: &str,
        answers: Vec<QuestionAnswer>,
        declined: bool,
    ) -> Result<(), SessionError> {
        if declined && !answers.is_empty() {
            return Err(SessionError::InvalidParams(
                "give answers or declined: true, not both".into(),
            ));
        }
        if !declined && answers.is_empty() {
            return Err(SessionError::InvalidParams(
                "answers is required (one per question, in order), or declined: true".into(),
            ));
        }
        let not_pending = || {
            SessionError::QuestionNotPending(format!(
                "tool call {tool_call_id} of message {message_id} is not waiting for an answer (already answered, cancelled, or never asked)"
            ))
        };
        let Suspended {
            session,
            agent,
            slot,
            mut message,
        } = self.claim_suspended(message_id, not_pending).await?;
        let pending = message.blocks.iter_mut().find_map(|b| match b {
            Block::ToolCall(ToolCallBlock {
                tool_call_id: id,
                status: ToolCallStatus::WaitingAnswer,
                questions,
                answer: answer @ None,
                ..
            }) if id == tool_call_id => Some((questions.clone().unwrap_or_default(), answer)),
            _ => None,
        });
        let Some((questions, answer)) = pending else {
            return Err(not_pending());
        };
        if !declined {
            question::check_answers(&questions, &answers).map_err(SessionError::InvalidParams)?;
        }
        *answer = Some(Box::new(QuestionResolution {
            answers: answers.clone(),
            declined,
            cancelled: false,
        }));
        message.updated_at = now_ms();
        self.store.update_message(&message).await?;
        session
            .emit(EventKind::QuestionResolved {
                message_id: message_id.to_owned(),
                tool_call_id: tool_call_id.to_owned(),
                answers,
                declined,
                cancelled: false,
            })
            .await;
        self.start_run(
            session,
            Start {
                agent,
                assistant: message,
                slot,
            },
        )
        .await;
        Ok(())
    }

    /// The suspended run of `message_id`, taken: its session and agent, its run slot, and
    /// the message re-read under the slot (so of two racing answers exactly one sees the
    /// call waiting). A run already active means nothing waits: `not_pending`.
    async fn claim_suspended(
        &self,
        message_id: &str,
        not_pending: impl Fn() -> SessionError,
    ) -> Result<Suspended, SessionError> {
        let message = self
            .store
            .get_message(message_id)
            .await?
            .ok_or_else(|| SessionError::MessageNotFound(message_id.to_owned()))?;
        let session = self.session(&message.agent_id).await?;
        let agent = self.get_agent(&message.agent_id).await?;
        let slot = match self.claim_run_slot(&session, message_id).await {
            Ok(slot) => slot,
            Err(SessionError::AgentBusy { .. }) => return Err(not_pending()),
            Err(e) => return Err(e),
        };
        let message = self
            .store
            .get_message(message_id)
            .await?
            .ok_or_else(|| SessionError::MessageNotFound(message_id.to_owned()))?;
        // Only the agent's last answer can wait: a call of an earlier one was superseded
        // (the conversation went on without it), and resuming it would run it mid-history.
        let last = self.store.last_assistant_message(&message.agent_id).await?;
        if last.is_none_or(|last| last.id != message.id) {
            return Err(not_pending());
        }
        Ok(Suspended {
            session,
            agent,
            slot,
            message,
        })
    }
}

/// A suspended run taken by an answer.
struct Suspended {
    session: Arc<super::Session>,
    agent: agent_proto::Agent,
    slot: super::runs::RunSlotGuard,
    message: agent_proto::Message,
}
