//! Sessions: the runtime side of agents.
//!
//! [`SessionManager`] is the registry of loaded sessions and the entry point for everything
//! that changes an agent at run time: creating, updating and deleting agents (which emit
//! events), starting runs (`sendMessage`), cancelling them, and subscribing to events. A
//! [`Session`] holds one agent's status, its run slot (at most one run at a time) and its
//! [`EventLog`]. Runs are tasks owned by the manager's `TaskTracker`; a panicking run
//! becomes an `error` event for its agent, never a crash of the daemon.

pub mod events;

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use agent_proto::{
    Agent, AgentMode, AgentSettings, Block, ContentPart, EventKind, LoopFinishReason,
    MAX_USER_TEXT_CHARS, Message, MessageContent, MessageStatus, Role, SendMessageResult,
    SessionInfo, SessionStatus, run_error,
};
use futures::FutureExt;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::agent_loop::{self, RunControl, RunInput, RunOutcome, StopReason};
use crate::config::Defaults;
use crate::provider::ProviderRegistry;
use crate::store::{AgentFilter, AgentPatch, NewAgent, RunMessages, Store, StoreError, now_ms};
use events::{EventHub, EventLog, ReplayLimits, Subscriber};

/// Title of an agent created without one.
pub const DEFAULT_TITLE: &str = "New agent";

/// Why a session operation failed; `rpc::error` maps each to its wire kind.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// No agent has this id: check it with `listAgents`.
    #[error("no agent with id {0:?}")]
    AgentNotFound(String),
    /// A run is active: wait for its `loopFinished` or cancel it.
    #[error(
        "agent {agent_id} is busy with a run (assistant message {message_id}); wait for loopFinished or call cancelLoop"
    )]
    AgentBusy {
        agent_id: String,
        message_id: String,
    },
    #[error("the message has {chars} characters; the limit is {max}")]
    InputTooLarge { chars: usize, max: usize },
    #[error("{0}")]
    ProviderNotConfigured(String),
    #[error("{0}")]
    InvalidParams(String),
    #[error("not supported yet: {0}")]
    NotSupported(String),
    #[error("the daemon is shutting down; reconnect when it is back")]
    ShuttingDown,
    /// The store failed; the daemon logs it. Retry later.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Settings of the session layer.
#[derive(Debug, Clone)]
pub struct SessionConfig {
    pub defaults: Defaults,
    pub replay: ReplayLimits,
}

/// The run slot of a session.
#[derive(Debug)]
struct RunSlot {
    message_id: String,
    control: Arc<RunControl>,
    /// The run is emitting its last events; a new send waits for `done` instead of failing.
    finishing: bool,
    /// Cancelled when the slot is freed.
    done: CancellationToken,
}

#[derive(Debug, Default)]
struct SessionState {
    status: SessionStatus,
    run: Option<RunSlot>,
}

/// The runtime of one agent.
#[derive(Debug)]
pub struct Session {
    agent_id: String,
    events: Arc<EventLog>,
    state: Mutex<SessionState>,
}

impl Session {
    fn lock(&self) -> MutexGuard<'_, SessionState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn status(&self) -> SessionStatus {
        self.lock().status
    }

    pub fn events(&self) -> &Arc<EventLog> {
        &self.events
    }

    /// Sets the status and tells the subscribers, if it changed.
    async fn set_status(&self, status: SessionStatus) {
        let changed = {
            let mut st = self.lock();
            std::mem::replace(&mut st.status, status) != status
        };
        if changed {
            self.emit(EventKind::StatusChanged { status }).await;
        }
    }

    /// Emits an event; a failure (the store cannot reserve seqs) is logged, since the
    /// state it reports is already saved.
    async fn emit(&self, kind: EventKind) {
        if let Err(e) = self.events.emit(kind).await {
            tracing::error!(agent_id = self.agent_id, "cannot emit an event: {e}");
        }
    }
}

/// The registry of loaded sessions.
#[derive(Debug)]
pub struct SessionManager {
    store: Store,
    providers: Arc<ProviderRegistry>,
    hub: Arc<EventHub>,
    config: SessionConfig,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    runs: TaskTracker,
    shutting_down: CancellationToken,
}

impl SessionManager {
    pub fn new(store: Store, providers: Arc<ProviderRegistry>, config: SessionConfig) -> Arc<Self> {
        let hub_capacity = config.replay.events.clamp(1024, 16_384);
        Arc::new(SessionManager {
            store,
            providers,
            hub: Arc::new(EventHub::new(hub_capacity)),
            config,
            sessions: Mutex::new(HashMap::new()),
            runs: TaskTracker::new(),
            shutting_down: CancellationToken::new(),
        })
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn providers(&self) -> &ProviderRegistry {
        &self.providers
    }

    fn sessions(&self) -> MutexGuard<'_, HashMap<String, Arc<Session>>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The loaded session of an agent, loading it from the store if needed.
    pub async fn session(&self, agent_id: &str) -> Result<Arc<Session>, SessionError> {
        if let Some(session) = self.sessions().get(agent_id) {
            return Ok(session.clone());
        }
        let last_seq = self
            .store
            .agent_last_seq(agent_id)
            .await?
            .ok_or_else(|| SessionError::AgentNotFound(agent_id.to_owned()))?;
        let session = Arc::new(Session {
            agent_id: agent_id.to_owned(),
            events: Arc::new(EventLog::new(
                agent_id,
                last_seq,
                self.store.clone(),
                self.hub.clone(),
                self.config.replay,
            )),
            state: Mutex::new(SessionState::default()),
        });
        // Two loads may race: the first one in wins, so there is one event log per agent.
        Ok(self
            .sessions()
            .entry(agent_id.to_owned())
            .or_insert(session)
            .clone())
    }

    /// The status of an agent without loading its session.
    pub fn status_of(&self, agent_id: &str) -> SessionStatus {
        self.sessions()
            .get(agent_id)
            .map_or(SessionStatus::Idle, |s| s.status())
    }

    fn with_status(&self, mut agent: Agent) -> Agent {
        agent.status = self.status_of(&agent.id);
        agent
    }

    pub async fn get_agent(&self, agent_id: &str) -> Result<Agent, SessionError> {
        let agent = self
            .store
            .get_agent(agent_id)
            .await?
            .ok_or_else(|| SessionError::AgentNotFound(agent_id.to_owned()))?;
        Ok(self.with_status(agent))
    }

    pub async fn list_agents(
        &self,
        filter: &AgentFilter,
    ) -> Result<(Vec<Agent>, Option<String>), SessionError> {
        let (agents, next) = self.store.list_agents(filter).await?;
        Ok((
            agents.into_iter().map(|a| self.with_status(a)).collect(),
            next,
        ))
    }

    /// Creates an agent; absent fields take the configured defaults.
    pub async fn create_agent(&self, spec: AgentSpec) -> Result<Agent, SessionError> {
        let mode = spec
            .mode
            .or(self.config.defaults.mode)
            .unwrap_or(AgentMode::Chat);
        if mode != AgentMode::Chat {
            return Err(SessionError::NotSupported(format!(
                "mode {:?}; this daemon runs chat agents only (tools come with the agent loop)",
                mode.as_str()
            )));
        }
        let provider = match spec.provider {
            Some(p) => p,
            None => self.providers.default_provider().to_owned(),
        };
        let model = match spec.model {
            Some(m) if !m.trim().is_empty() => m,
            Some(_) => return Err(SessionError::InvalidParams("model is empty".into())),
            None => self
                .providers
                .default_model_for(&provider)
                .ok_or_else(|| provider_not_configured(&self.providers, &provider))?,
        };
        self.check_provider(&provider, &model)?;
        let settings = match spec.settings {
            Some(value) => parse_settings(value)?,
            None => AgentSettings::default(),
        };
        if let Some(workspace) = &spec.workspace
            && !std::path::Path::new(workspace).is_absolute()
        {
            return Err(SessionError::InvalidParams(format!(
                "workspace {workspace:?} must be an absolute path"
            )));
        }
        let title = spec
            .title
            .map(|t| t.trim().to_owned())
            .filter(|t| !t.is_empty())
            .unwrap_or_else(|| DEFAULT_TITLE.to_owned());
        let new = NewAgent {
            id: uuid::Uuid::now_v7().to_string(),
            title,
            mode,
            provider,
            model,
            system_prompt: spec
                .system_prompt
                .or_else(|| self.config.defaults.system_prompt.clone()),
            workspace: spec.workspace,
            profile: spec.profile,
            settings,
            created_at: now_ms(),
        };
        Ok(self.store.insert_agent(&new).await?)
    }

    fn check_provider(&self, provider: &str, model: &str) -> Result<(), SessionError> {
        if self.providers.resolve(provider, model).is_none() {
            return Err(provider_not_configured(&self.providers, provider));
        }
        Ok(())
    }

    /// Changes an agent and tells the subscribers (`agentUpdated`).
    pub async fn update_agent(
        &self,
        agent_id: &str,
        update: AgentUpdate,
    ) -> Result<Agent, SessionError> {
        let session = self.session(agent_id).await?;
        let current = self.get_agent(agent_id).await?;
        let provider = update.provider.clone().unwrap_or(current.provider.clone());
        let model = match (&update.model, &update.provider) {
            (Some(m), _) => m.clone(),
            // A new provider without a model: that provider's default model.
            (None, Some(p)) if *p != current.provider => self
                .providers
                .default_model_for(p)
                .ok_or_else(|| provider_not_configured(&self.providers, p))?,
            (None, _) => current.model.clone(),
        };
        if update.provider.is_some() || update.model.is_some() {
            self.check_provider(&provider, &model)?;
        }
        let settings = match update.settings {
            Some(patch) => Some(merge_settings(&current.settings, patch)?),
            None => None,
        };
        let title = match update.title {
            Some(t) if t.trim().is_empty() => {
                return Err(SessionError::InvalidParams("title is empty".into()));
            }
            Some(t) => Some(t.trim().to_owned()),
            None => None,
        };
        let provider_changed = update.provider.is_some();
        let patch = AgentPatch {
            title,
            pinned: update.pinned,
            archived: update.archived,
            provider: provider_changed.then_some(provider),
            model: (update.model.is_some() || provider_changed).then_some(model),
            system_prompt: update
                .system_prompt
                .map(|s| Some(s).filter(|s| !s.is_empty())),
            settings,
        };
        let agent = self
            .store
            .update_agent(agent_id, &patch, now_ms())
            .await?
            .ok_or_else(|| SessionError::AgentNotFound(agent_id.to_owned()))?;
        let agent = self.with_status(agent);
        session
            .emit(EventKind::AgentUpdated {
                agent: agent.clone(),
            })
            .await;
        Ok(agent)
    }

    /// Stops the agent's run, tells the subscribers (`agentDeleted`), deletes the agent and
    /// its messages, and ends its subscriptions.
    pub async fn delete_agent(&self, agent_id: &str) -> Result<(), SessionError> {
        let session = self.session(agent_id).await?;
        let done = {
            let st = session.lock();
            st.run.as_ref().map(|run| {
                run.control.stop(StopReason::User);
                run.done.clone()
            })
        };
        if let Some(done) = done
            && tokio::time::timeout(Duration::from_secs(10), done.cancelled())
                .await
                .is_err()
        {
            tracing::warn!(
                agent_id,
                "the run did not stop within 10 s; deleting anyway"
            );
        }
        session.emit(EventKind::AgentDeleted {}).await;
        let deleted = self.store.delete_agent(agent_id).await?;
        self.sessions().remove(agent_id);
        session.events.close();
        if !deleted {
            return Err(SessionError::AgentNotFound(agent_id.to_owned()));
        }
        Ok(())
    }

    /// Stores the user message and starts a run answering it; returns the two message ids.
    pub async fn send_message(
        self: &Arc<Self>,
        agent_id: &str,
        content: MessageContent,
        client_request_id: Option<String>,
    ) -> Result<SendMessageResult, SessionError> {
        let text = user_text(content)?;
        let session = self.session(agent_id).await?;
        if let Some(request_id) = &client_request_id
            && let Some((user, assistant)) =
                self.store.find_client_request(agent_id, request_id).await?
        {
            return Ok(SendMessageResult {
                user_message_id: user,
                assistant_message_id: assistant,
            });
        }
        let agent = self.get_agent(agent_id).await?;
        let resolved = self
            .providers
            .resolve(&agent.provider, &agent.model)
            .ok_or_else(|| provider_not_configured(&self.providers, &agent.provider))?;

        let now = now_ms();
        let user = Message {
            id: uuid::Uuid::now_v7().to_string(),
            agent_id: agent_id.to_owned(),
            role: Role::User,
            blocks: vec![Block::Text { text }],
            status: MessageStatus::Done,
            created_at: now,
            updated_at: now,
            usage: None,
        };
        let assistant = Message {
            id: uuid::Uuid::now_v7().to_string(),
            agent_id: agent_id.to_owned(),
            role: Role::Assistant,
            blocks: Vec::new(),
            status: MessageStatus::Pending,
            created_at: now,
            updated_at: now,
            usage: None,
        };
        let control = self.claim_run_slot(&session, &assistant.id).await?;
        let stored = self
            .store
            .insert_run_messages(&RunMessages {
                user: user.clone(),
                assistant: assistant.clone(),
                client_request_id,
            })
            .await;
        if let Err(e) = stored {
            self.free_run_slot(&session);
            return Err(e.into());
        }
        let result = SendMessageResult {
            user_message_id: user.id.clone(),
            assistant_message_id: assistant.id.clone(),
        };
        session.emit(EventKind::UserMessage { message: user }).await;
        session.set_status(SessionStatus::Generating).await;
        session
            .emit(EventKind::MessageStarted {
                message_id: assistant.id.clone(),
            })
            .await;

        let input = RunInput {
            agent,
            assistant,
            resolved,
            store: self.store.clone(),
            events: session.events.clone(),
            control,
        };
        let manager = self.clone();
        let span = tracing::info_span!("run", agent_id, message_id = result.assistant_message_id);
        self.runs.spawn(tracing::Instrument::instrument(
            async move { manager.drive_run(session, input).await },
            span,
        ));
        Ok(result)
    }

    /// Takes the session's run slot, waiting briefly for a run that is only emitting its
    /// last events.
    async fn claim_run_slot(
        &self,
        session: &Session,
        message_id: &str,
    ) -> Result<Arc<RunControl>, SessionError> {
        loop {
            if self.shutting_down.is_cancelled() {
                return Err(SessionError::ShuttingDown);
            }
            let wait = {
                let mut st = session.lock();
                match &st.run {
                    None => {
                        let control = RunControl::new();
                        st.run = Some(RunSlot {
                            message_id: message_id.to_owned(),
                            control: control.clone(),
                            finishing: false,
                            done: CancellationToken::new(),
                        });
                        return Ok(control);
                    }
                    Some(run) if run.finishing => run.done.clone(),
                    Some(run) => {
                        return Err(SessionError::AgentBusy {
                            agent_id: session.agent_id.clone(),
                            message_id: run.message_id.clone(),
                        });
                    }
                }
            };
            let _ = tokio::time::timeout(Duration::from_secs(5), wait.cancelled()).await;
        }
    }

    fn free_run_slot(&self, session: &Session) {
        if let Some(run) = session.lock().run.take() {
            run.done.cancel();
        }
    }

    /// Runs the loop to its end, then reports it and frees the slot. A panic inside the
    /// loop becomes an error for this agent.
    async fn drive_run(&self, session: Arc<Session>, input: RunInput) {
        let message_id = input.assistant.id.clone();
        let outcome = match AssertUnwindSafe(agent_loop::run(input))
            .catch_unwind()
            .await
        {
            Ok(outcome) => outcome,
            Err(panic) => self.recover_from_panic(&session, &message_id, panic).await,
        };
        {
            let mut st = session.lock();
            if let Some(run) = st.run.as_mut() {
                run.finishing = true;
            }
        }
        session.set_status(outcome.status).await;
        session
            .emit(EventKind::LoopFinished {
                reason: outcome.reason,
                error: outcome.error,
            })
            .await;
        self.free_run_slot(&session);
    }

    async fn recover_from_panic(
        &self,
        session: &Session,
        message_id: &str,
        panic: Box<dyn std::any::Any + Send>,
    ) -> RunOutcome {
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        let message = format!("internal error: the run panicked: {what}");
        tracing::error!(agent_id = session.agent_id, message_id, "{message}");
        if let Ok(Some(mut stored)) = self.store.get_message(message_id).await {
            stored.blocks.push(Block::Error {
                message: message.clone(),
                kind: run_error::INTERNAL.into(),
            });
            stored.status = MessageStatus::Error;
            stored.updated_at = now_ms();
            if let Err(e) = self.store.update_message(&stored).await {
                tracing::error!(message_id, "cannot save the failed message: {e}");
            }
        }
        session
            .emit(EventKind::Error {
                message_id: Some(message_id.to_owned()),
                message: message.clone(),
                kind: run_error::INTERNAL.into(),
                retryable: false,
            })
            .await;
        session
            .emit(EventKind::MessageCompleted {
                message_id: message_id.to_owned(),
                status: MessageStatus::Error,
            })
            .await;
        RunOutcome {
            reason: LoopFinishReason::Error,
            error: Some(message),
            status: SessionStatus::Error,
        }
    }

    /// Cancels the agent's active run; false when there is none.
    pub async fn cancel(&self, agent_id: &str) -> Result<bool, SessionError> {
        let session = self.session(agent_id).await?;
        let st = session.lock();
        match &st.run {
            Some(run) if !run.finishing && !run.control.is_stopped() => {
                run.control.stop(StopReason::User);
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    pub async fn session_info(&self, agent_id: &str) -> Result<SessionInfo, SessionError> {
        let session = self.session(agent_id).await?;
        let st = session.lock();
        Ok(SessionInfo {
            agent_id: agent_id.to_owned(),
            status: st.status,
            run_message_id: st.run.as_ref().map(|r| r.message_id.clone()),
            pending_permissions: Vec::new(),
            step: u32::from(st.run.is_some()),
            last_seq: session.events.last_seq(),
        })
    }

    /// Events of one agent (replaying after `since`) or of all agents.
    pub async fn subscribe(
        &self,
        agent_id: Option<&str>,
        since: Option<u64>,
    ) -> Result<Subscriber, SessionError> {
        match agent_id {
            Some(id) => Ok(self.session(id).await?.events.subscribe(since)),
            None if since.is_some() => Err(SessionError::InvalidParams(
                "sinceSeq needs agentId: seqs are per agent".into(),
            )),
            None => Ok(self.hub.subscribe_all()),
        }
    }

    /// Stops every run (their messages become `interrupted`), waits up to `grace` for them
    /// to save their state, then stores each agent's exact last seq.
    pub async fn shutdown(&self, grace: Duration) {
        self.shutting_down.cancel();
        let sessions: Vec<Arc<Session>> = self.sessions().values().cloned().collect();
        for session in &sessions {
            if let Some(run) = &session.lock().run {
                run.control.stop(StopReason::Shutdown);
            }
        }
        self.runs.close();
        if tokio::time::timeout(grace, self.runs.wait()).await.is_err() {
            tracing::warn!(
                "runs did not stop within {grace:?}; their messages are recovered at the next start"
            );
        }
        for session in &sessions {
            if let Err(e) = session.events.persist_last_seq().await {
                tracing::warn!(agent_id = session.agent_id, "cannot save the last seq: {e}");
            }
        }
    }
}

/// What `createAgent` asks for.
#[derive(Debug, Clone, Default)]
pub struct AgentSpec {
    pub title: Option<String>,
    pub mode: Option<AgentMode>,
    pub provider: Option<String>,
    pub model: Option<String>,
    pub system_prompt: Option<String>,
    pub workspace: Option<String>,
    pub profile: Option<String>,
    pub settings: Option<serde_json::Value>,
}

/// What `updateAgent` changes.
#[derive(Debug, Clone, Default)]
pub struct AgentUpdate {
    pub title: Option<String>,
    pub pinned: Option<bool>,
    pub archived: Option<bool>,
    pub provider: Option<String>,
    pub model: Option<String>,
    /// An empty string clears the system prompt.
    pub system_prompt: Option<String>,
    /// A JSON merge patch of the settings.
    pub settings: Option<serde_json::Value>,
}

fn provider_not_configured(providers: &ProviderRegistry, provider: &str) -> SessionError {
    let known: Vec<String> = providers
        .list_providers()
        .into_iter()
        .map(|p| p.id)
        .collect();
    SessionError::ProviderNotConfigured(format!(
        "provider {provider:?} is not configured (configured: {}); see listProviders",
        known.join(", ")
    ))
}

fn parse_settings(value: serde_json::Value) -> Result<AgentSettings, SessionError> {
    if !value.is_object() {
        return Err(SessionError::InvalidParams(
            "settings must be an object".into(),
        ));
    }
    serde_json::from_value(value)
        .map_err(|e| SessionError::InvalidParams(format!("invalid settings: {e}")))
}

/// Applies a JSON merge patch (RFC 7396) to the settings and validates the result.
pub fn merge_settings(
    current: &AgentSettings,
    patch: serde_json::Value,
) -> Result<AgentSettings, SessionError> {
    let serde_json::Value::Object(patch) = patch else {
        return Err(SessionError::InvalidParams(
            "settings must be an object".into(),
        ));
    };
    let mut merged = serde_json::to_value(current)
        .map_err(|e| SessionError::InvalidParams(format!("invalid settings: {e}")))?;
    if let serde_json::Value::Object(map) = &mut merged {
        for (key, value) in patch {
            if value.is_null() {
                map.remove(&key);
            } else {
                map.insert(key, value);
            }
        }
    }
    parse_settings(merged)
}

/// The text of a `sendMessage` content, checked against the limits.
fn user_text(content: MessageContent) -> Result<String, SessionError> {
    let text = match content {
        MessageContent::Text(text) => text,
        MessageContent::Parts(parts) => {
            let mut text = String::new();
            for part in parts {
                match part {
                    ContentPart::Text { text: t } => {
                        if !text.is_empty() {
                            text.push('\n');
                        }
                        text.push_str(&t);
                    }
                    ContentPart::Image { .. } => {
                        return Err(SessionError::NotSupported("image content parts".into()));
                    }
                    ContentPart::File { .. } => {
                        return Err(SessionError::NotSupported("file content parts".into()));
                    }
                }
            }
            text
        }
    };
    // Count lazily: only texts that could be over the limit need a full count.
    if text.len() > MAX_USER_TEXT_CHARS {
        let chars = text.chars().count();
        if chars > MAX_USER_TEXT_CHARS {
            return Err(SessionError::InputTooLarge {
                chars,
                max: MAX_USER_TEXT_CHARS,
            });
        }
    }
    if text.trim().is_empty() {
        return Err(SessionError::InvalidParams("the message is empty".into()));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn settings_merge_patch() {
        let current = AgentSettings {
            temperature: Some(0.2),
            max_output_tokens: Some(100),
        };
        let merged = merge_settings(
            &current,
            json!({"temperature": null, "maxOutputTokens": 50}),
        )
        .unwrap();
        assert_eq!(
            merged,
            AgentSettings {
                temperature: None,
                max_output_tokens: Some(50)
            }
        );
        let err = merge_settings(&current, json!({"temprature": 1})).unwrap_err();
        assert!(err.to_string().contains("temprature"), "{err}");
        assert!(merge_settings(&current, json!([1])).is_err());
        assert!(merge_settings(&current, json!({"maxOutputTokens": "x"})).is_err());
    }

    #[test]
    fn user_text_limits() {
        assert_eq!(user_text("hi".into()).unwrap(), "hi");
        let parts = MessageContent::Parts(vec![
            ContentPart::Text { text: "a".into() },
            ContentPart::Text { text: "b".into() },
        ]);
        assert_eq!(user_text(parts).unwrap(), "a\nb");
        assert!(matches!(
            user_text("  ".into()),
            Err(SessionError::InvalidParams(_))
        ));
        let big = "x".repeat(MAX_USER_TEXT_CHARS + 1);
        assert!(matches!(
            user_text(big.into()),
            Err(SessionError::InputTooLarge { chars, .. }) if chars == MAX_USER_TEXT_CHARS + 1
        ));
        // multi-byte characters count as one each
        let exact = "é".repeat(MAX_USER_TEXT_CHARS);
        assert!(user_text(exact.into()).is_ok());
        let image = MessageContent::Parts(vec![ContentPart::Image {
            data: None,
            path: Some("/a.png".into()),
            mime_type: None,
        }]);
        assert!(matches!(
            user_text(image),
            Err(SessionError::NotSupported(_))
        ));
    }
}
