//! What `getSession` tells: an agent's live status, its run, and what waits for a client
//! (permission prompts, questions of the model), rebuilt from the stored message so it
//! holds across a restart.

use agent_proto::{
    Block, PendingPermission, PendingQuestion, PermissionLevel, PermissionPrompt, SessionInfo,
    SessionStatus, ToolCallBlock, ToolCallStatus,
};

use super::{SessionError, SessionManager};

impl SessionManager {
    pub async fn session_info(&self, agent_id: &str) -> Result<SessionInfo, SessionError> {
        let session = self.session(agent_id).await?;
        let (status, run_message_id, step) = {
            let st = session.lock();
            (
                st.status,
                st.run.as_ref().map(|r| r.message_id.clone()),
                st.run.as_ref().map_or(0, |r| r.control.steps()),
            )
        };
        let pending_permissions = if status == SessionStatus::WaitingPermission {
            self.pending_permissions(agent_id).await?
        } else {
            Vec::new()
        };
        let pending_questions = if status == SessionStatus::WaitingQuestion {
            self.pending_questions(agent_id).await?
        } else {
            Vec::new()
        };
        Ok(SessionInfo {
            agent_id: agent_id.to_owned(),
            status,
            run_message_id: run_message_id
                .or_else(|| pending_permissions.first().map(|p| p.message_id.clone()))
                .or_else(|| pending_questions.first().map(|q| q.message_id.clone())),
            pending_permissions,
            pending_questions,
            step,
            last_seq: session.events().last_seq(),
            queue: self.store.queued(agent_id).await?,
        })
    }

    /// The calls of the agent's last message that wait for an answer, with the prompt that
    /// was sent for each (a call saved before prompts were kept is described anew).
    async fn pending_permissions(
        &self,
        agent_id: &str,
    ) -> Result<Vec<PendingPermission>, SessionError> {
        let Some(message) = self.store.last_assistant_message(agent_id).await? else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for block in &message.blocks {
            let Block::ToolCall(ToolCallBlock {
                tool_call_id,
                name,
                arguments,
                status: ToolCallStatus::WaitingPermission,
                prompt,
                resolution: None,
                ..
            }) = block
            else {
                continue;
            };
            let prompt = prompt
                .as_deref()
                .cloned()
                .unwrap_or_else(|| PermissionPrompt {
                    permission_type: self
                        .tools
                        .level_of(name)
                        .unwrap_or(PermissionLevel::Execute),
                    description: format!("{name} {arguments}"),
                    command: None,
                    command_display: None,
                    signature: None,
                    paths: None,
                    risk: None,
                    rememberable: false,
                    network_access: false,
                    outside_sandbox: false,
                });
            out.push(PendingPermission {
                message_id: message.id.clone(),
                tool_call_id: tool_call_id.clone(),
                tool_name: name.clone(),
                permission_type: prompt.permission_type,
                description: prompt.description,
                arguments: arguments.clone(),
                command: prompt.command,
                command_display: prompt.command_display,
                signature: prompt.signature,
                paths: prompt.paths,
                risk: prompt.risk,
                rememberable: prompt.rememberable,
                network_access: prompt.network_access,
                outside_sandbox: prompt.outside_sandbox,
            });
        }
        Ok(out)
    }

    /// The question calls of the agent's last message that wait for an answer.
    async fn pending_questions(
        &self,
        agent_id: &str,
    ) -> Result<Vec<PendingQuestion>, SessionError> {
        let Some(message) = self.store.last_assistant_message(agent_id).await? else {
            return Ok(Vec::new());
        };
        Ok(message
            .blocks
            .iter()
            .filter_map(|block| match block {
                Block::ToolCall(ToolCallBlock {
                    tool_call_id,
                    status: ToolCallStatus::WaitingAnswer,
                    questions,
                    answer: None,
                    ..
                }) => Some(PendingQuestion {
                    message_id: message.id.clone(),
                    tool_call_id: tool_call_id.clone(),
                    questions: questions.clone().unwrap_or_default(),
                }),
                _ => None,
            })
            .collect())
    }
}
