//! Operations on an agent's history besides sending: the context edge, regenerating the
//! latest answer as a new variant, and titles.

use std::sync::{Arc, PoisonError};

use agent_proto::{
    Agent, Block, EventKind, Message, MessageStatus, RegenerateResult, Role, SessionStatus,
};

use super::runs::Start;
use super::{DEFAULT_TITLE, Session, SessionError, SessionManager};
use crate::provider::{ChatMessage, ProviderRequest, complete};
use crate::store::{AgentPatch, now_ms};

/// Longest title taken from a message or accepted from the model, in chars.
pub(super) const TITLE_CHARS: usize = 60;

/// A title from the first line of a text: whitespace collapsed, cut at a word boundary
/// to [`TITLE_CHARS`] with an ellipsis. None for a text with no words.
pub(super) fn title_from_text(text: &str) -> Option<String> {
    let line = text.lines().find(|l| !l.trim().is_empty())?;
    let whole = line.split_whitespace().collect::<Vec<_>>().join(" ");
    if whole.chars().count() <= TITLE_CHARS {
        return Some(whole);
    }
    // Whole words that leave room for the ellipsis; a first word too long is cut.
    let mut title = String::new();
    for word in whole.split(' ') {
        let len = title.chars().count() + usize::from(!title.is_empty()) + word.chars().count();
        if len > TITLE_CHARS - 1 {
            break;
        }
        if !title.is_empty() {
            title.push(' ');
        }
        title.push_str(word);
    }
    if title.is_empty() {
        title = whole.chars().take(TITLE_CHARS - 1).collect();
    }
    title.push('…');
    Some(title)
}

/// The model's title answer, cleaned: first line, no quotes or trailing period, no
/// "Title:" label.
pub(super) fn clean_model_title(answer: &str) -> Option<String> {
    let line = answer.lines().map(str::trim).find(|l| !l.is_empty())?;
    let line = line
        .strip_prefix("Title:")
        .or_else(|| line.strip_prefix("title:"))
        .unwrap_or(line);
    let line = line
        .trim()
        .trim_matches(|c: char| matches!(c, '"' | '\'' | '*' | '`' | '“' | '”'))
        .trim_end_matches('.')
        .trim();
    title_from_text(line)
}

/// Where the last step of an answer starts: after the tool calls of the step before it.
/// The blocks before it are kept by `regenerate`.
pub(super) fn last_step_start(blocks: &[Block]) -> usize {
    let mut start = 0;
    for (i, pair) in blocks.windows(2).enumerate() {
        let call_then_other = matches!(pair[0], Block::ToolCall { .. })
            && !matches!(pair[1], Block::ToolCall { .. } | Block::Error { .. });
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
        let agent = self.get_agent(agent_id).await?;
        session
            .emit(EventKind::AgentUpdated {
                agent: agent.clone(),
            })
            .await;
        Ok(agent)
    }

    /// A message of this agent, or `messageNotFound`.
    async fn message_of(&self, agent_id: &str, message_id: &str) -> Result<Message, SessionError> {
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
        let old = self.message_of(agent_id, message_id).await?;
        if old.role != Role::Assistant {
            return Err(SessionError::InvalidParams(format!(
                "message {message_id} is a user message; regenerate takes an answer"
            )));
        }
        let variant = Message {
            id: uuid::Uuid::now_v7().to_string(),
            agent_id: agent_id.to_owned(),
            role: Role::Assistant,
            blocks: Vec::new(),
            status: MessageStatus::Pending,
            created_at: now_ms(),
            updated_at: now_ms(),
            usage: None,
            variant_of: Some(old.variant_of.clone().unwrap_or_else(|| old.id.clone())),
            superseded: false,
        };
        let agent = self.get_agent(agent_id).await?;
        let slot = self.claim_run_slot(&session, &variant.id).await?;
        let old = self.check_regenerable(&session, message_id).await?;
        let keep = last_step_start(&old.blocks);
        let variant = Message {
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

    /// A new agent is named after its first message at once.
    pub(super) async fn title_from_first_message(
        &self,
        session: &Session,
        agent: &Agent,
        user: &Message,
    ) {
        if agent.title != DEFAULT_TITLE {
            return;
        }
        let Some(title) = title_from_text(&user.text()) else {
            return;
        };
        self.set_title(session, &agent.id, title, &agent.title)
            .await;
    }

    /// Sets a title the daemon chose, unless a client changed the title since it was
    /// `was`.
    async fn set_title(&self, session: &Session, agent_id: &str, title: String, was: &str) {
        let patch = AgentPatch {
            title: Some(title.clone()),
            title_was: Some(was.to_owned()),
            ..AgentPatch::default()
        };
        match self.store.update_agent(agent_id, &patch, now_ms()).await {
            Ok(Some(agent)) if agent.title == title => {
                let agent = self.with_status(agent);
                session.emit(EventKind::AgentUpdated { agent }).await;
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(agent_id, "cannot save the title: {e}"),
        }
    }

    /// With `autoTitle` on, after the agent's first answer completes the model writes a
    /// short title, which replaces the one taken from the first message.
    pub(super) async fn auto_title(&self, session: &Session, message_id: &str) {
        let Ok(agent) = self.get_agent(&session.agent_id).await else {
            return;
        };
        if agent.settings.auto_title != Some(true) {
            return;
        }
        let history = match self.store.history(&agent.id).await {
            Ok(history) => history,
            Err(e) => {
                tracing::warn!(agent_id = agent.id, "cannot read the history: {e}");
                return;
            }
        };
        let answers: Vec<&Message> = history
            .iter()
            .filter(|m| m.role == Role::Assistant)
            .collect();
        let first_answer = match answers.as_slice() {
            [only] if only.id == message_id && only.status == MessageStatus::Done => *only,
            _ => return,
        };
        let Some(question) = history.iter().find(|m| m.role == Role::User) else {
            return;
        };
        let Some(resolved) = self.providers.resolve(&agent.provider, &agent.model) else {
            return;
        };
        let cut = |t: String| t.chars().take(1000).collect::<String>();
        let request = ProviderRequest {
            model: resolved.model.id.clone(),
            system: Some(
                "You name conversations. Answer with a title of at most 6 words, in the language of the conversation, and nothing else."
                    .into(),
            ),
            messages: vec![ChatMessage::User {
                content: format!(
                    "User: {}\n\nAssistant: {}\n\nTitle:",
                    cut(question.text()),
                    cut(first_answer.text())
                ),
                images: Vec::new(),
            }],
            tools: Vec::new(),
            max_output_tokens: Some(32.min(resolved.model.max_output_tokens.max(1))),
            temperature: None,
        };
        let call = async { complete(resolved.provider.as_ref(), request).await.text() };
        // A title is not worth delaying a shutdown for.
        let answer = tokio::select! {
            _ = self.shutting_down.cancelled() => return,
            answer = call => answer,
        };
        let answer = match answer {
            Ok(answer) => answer,
            Err(e) => {
                tracing::warn!(agent_id = agent.id, "the title call failed: {e}");
                return;
            }
        };
        if let Some(title) = clean_model_title(&answer) {
            self.set_title(session, &agent.id, title, &agent.title)
                .await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_proto::{ToolCallResult, ToolCallStatus};

    #[test]
    fn titles_from_text() {
        let cases: &[(&str, Option<&str>)] = &[
            ("Fix the login bug", Some("Fix the login bug")),
            ("\n\n  spaced   out \n second line", Some("spaced out")),
            ("   \n ", None),
            (
                "Please refactor the session manager so that runs are spawned on a tracker and cancelled",
                Some("Please refactor the session manager so that runs are…"),
            ),
            (&"x".repeat(100), Some(&*format!("{}…", "x".repeat(59)))),
            ("修复登录页面的错误", Some("修复登录页面的错误")),
        ];
        for (text, expected) in cases {
            assert_eq!(title_from_text(text).as_deref(), *expected, "{text:?}");
        }
        assert!(
            title_from_text(&"word ".repeat(50))
                .unwrap()
                .chars()
                .count()
                <= TITLE_CHARS
        );
    }

    #[test]
    fn model_titles_are_cleaned() {
        assert_eq!(
            clean_model_title("\"Login bug fix.\"\nextra").as_deref(),
            Some("Login bug fix")
        );
        assert_eq!(
            clean_model_title("Title: **Rust build**").as_deref(),
            Some("Rust build")
        );
        assert_eq!(clean_model_title("  \n").as_deref(), None);
    }

    fn call(id: &str) -> Block {
        Block::ToolCall {
            tool_call_id: id.into(),
            name: "bash".into(),
            arguments: serde_json::json!({}),
            raw_arguments: None,
            permission_paths: None,
            prompt: None,
            resolution: None,
            signature: None,
            provider_call_id: None,
            status: ToolCallStatus::Success,
            result: Some(ToolCallResult {
                content: "ok".into(),
                is_error: false,
                offload_path: None,
                duration_ms: None,
            }),
        }
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
