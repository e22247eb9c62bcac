//! Runs of a session: starting them (send, continue, permission answer, resume, cancel of a
//! suspended run), driving them to their end, and reporting how they ended.
//!
//! Every start takes the session's run slot first ([`RunSlotGuard`]), so there is at most
//! one run per agent. The guard moves into the run's task and frees the slot when dropped,
//! after the run's `loopFinished`: no error path of a start can leave the slot taken.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use agent_proto::{
    Agent, AgentMode, Block, Delivery, EventKind, LoopFinishReason, Message, MessageContent,
    MessageStatus, Role, SendMessageResult, SessionStatus, TurnOptions, WhenBusy, run_error,
};
use futures::FutureExt;
use tokio_util::sync::CancellationToken;

use super::attach::Attachments;
use super::input::user_blocks;
use super::queue::{Busy, steerable};
use super::web_images::WebImages;
use super::{RunSlot, Session, SessionError, SessionManager, provider_not_configured};
use crate::agent_loop::{
    self, AcpRun, Backend, RunControl, RunInput, RunOutcome, StopOutcome, StopReason,
};
use crate::store::{RunMessages, now_ms};

/// Default `maxSteps` of a run.
pub const DEFAULT_MAX_STEPS: u32 = 50;

/// How a run is started.
pub(super) struct Start {
    pub agent: Agent,
    pub assistant: Message,
    pub slot: RunSlotGuard,
}

/// A session's run slot, held. Dropping it frees the slot and wakes whoever waits for it;
/// it moves into the run's task, so every way out of a start (an error, a panic, the run's
/// end) frees it.
pub(super) struct RunSlotGuard {
    session: Arc<Session>,
    control: Arc<RunControl>,
}

impl RunSlotGuard {
    pub(super) fn control(&self) -> &Arc<RunControl> {
        &self.control
    }
}

impl Drop for RunSlotGuard {
    fn drop(&mut self) {
        let mut st = self.session.lock();
        let ours = st
            .run
            .as_ref()
            .is_some_and(|run| Arc::ptr_eq(&run.control, &self.control));
        if ours && let Some(run) = st.run.take() {
            run.done.cancel();
        }
    }
}

/// What claiming the run slot for a send gave.
enum Claim {
    Slot(RunSlotGuard),
    /// The same request is running or stored already: its ids.
    Answered(SendMessageResult),
}

/// A send's user message (`blocks`) and the empty assistant message that will answer it.
fn new_messages(agent_id: &str, blocks: Vec<Block>) -> (Message, Message) {
    let now = now_ms();
    let message = |role, blocks, status| {
        Message::new(
            uuid::Uuid::now_v7().to_string(),
            agent_id,
            role,
            blocks,
            status,
            now,
        )
    };
    (
        message(Role::User, blocks, MessageStatus::Done),
        message(Role::Assistant, Vec::new(), MessageStatus::Pending),
    )
}

/// `invalidState` for a send while the agent's run waits for a client or is paused.
fn refuse_while_suspended(status: SessionStatus) -> Result<(), SessionError> {
    let why = match status {
        SessionStatus::WaitingPermission => {
            "a permission prompt is pending: answer it (handlePermissionResponse) or cancel it (cancelLoop) before sending"
        }
        SessionStatus::WaitingQuestion => {
            "the model asked a question: answer it (answerQuestion) or cancel it (cancelLoop) before sending"
        }
        SessionStatus::Paused => {
            "the agent's run is paused: resume it (resumeSession) or cancel it (cancelLoop) before sending"
        }
        _ => return Ok(()),
    };
    Err(SessionError::InvalidState(why.into()))
}

impl SessionManager {
    /// Stores the user message and starts a run answering it; returns the two message ids.
    /// In phases: the content read into blocks, a `clientRequestId` already stored
    /// answered with its ids, the run slot claimed, the two messages stored, the run
    /// started.
    pub async fn send_message(
        self: &Arc<Self>,
        agent_id: &str,
        content: MessageContent,
        client_request_id: Option<String>,
        when_busy: WhenBusy,
    ) -> Result<SendMessageResult, SessionError> {
        self.send_message_with(
            agent_id,
            content,
            client_request_id,
            when_busy,
            TurnOptions::default(),
        )
        .await
    }

    /// [`SessionManager::send_message`] with the turn's own choices (`provider`, `model`,
    /// `reasoningEffort`, `outputSchema`), checked before anything is stored and kept on
    /// the answer, so every run of the turn applies them.
    pub async fn send_message_with(
        self: &Arc<Self>,
        agent_id: &str,
        content: MessageContent,
        client_request_id: Option<String>,
        when_busy: WhenBusy,
        turn: TurnOptions,
    ) -> Result<SendMessageResult, SessionError> {
        let session = self.session(agent_id).await?;
        let blocks = self.user_blocks(agent_id, content).await?;
        let request_id = client_request_id.as_deref();
        if let Some(ids) = self.stored_request(agent_id, request_id).await? {
            return Ok(ids);
        }
        let agent = self.get_agent(agent_id).await?;
        if when_busy == WhenBusy::Steer {
            steerable(&agent, &blocks)?;
        }
        let turn = self.checked_turn(&agent, turn)?;
        let (user, mut assistant) = new_messages(agent_id, blocks);
        assistant.turn = turn;
        let result = SendMessageResult {
            user_message_id: user.id.clone(),
            assistant_message_id: assistant.id.clone(),
            delivery: Delivery::Started,
        };
        let slot = match self
            .claim_for_send(&session, agent_id, &assistant.id, request_id, &result)
            .await
        {
            Ok(Claim::Slot(slot)) => slot,
            Ok(Claim::Answered(ids)) => return Ok(ids),
            Err(SessionError::AgentBusy { message_id, .. }) if when_busy != WhenBusy::Refuse => {
                let busy = Busy::Running(message_id);
                return self
                    .enqueue(
                        &session,
                        user,
                        assistant,
                        busy,
                        when_busy,
                        client_request_id,
                    )
                    .await;
            }
            Err(e) => return Err(e),
        };
        if when_busy != WhenBusy::Refuse && refuse_while_suspended(session.status()).is_err() {
            drop(slot);
            let busy = Busy::Suspended;
            return self
                .enqueue(
                    &session,
                    user,
                    assistant,
                    busy,
                    when_busy,
                    client_request_id,
                )
                .await;
        }
        refuse_while_suspended(session.status())?;
        // Under the slot, a request already stored (by a send that finished its run) is
        // answered with its ids, not stored twice.
        if let Some(ids) = self.stored_request(agent_id, request_id).await? {
            return Ok(ids);
        }
        let user = self
            .store_send(agent_id, user, &assistant, client_request_id)
            .await?;
        self.begin_turn(session, agent, user, assistant, slot).await;
        Ok(result)
    }

    /// A turn's messages are stored: tells the clients, the observer and the hooks, and
    /// starts the run that answers it.
    pub(super) async fn begin_turn(
        self: &Arc<Self>,
        session: Arc<Session>,
        agent: Agent,
        user: Message,
        assistant: Message,
        slot: RunSlotGuard,
    ) {
        // Snapshots show the new answer from now on, before the user message's event.
        session.events().begin_message(&assistant);
        session
            .emit(EventKind::UserMessage {
                message: user.clone(),
            })
            .await;
        if let Some(observer) = self.observer() {
            observer.user_message(&agent, &user).await;
        }
        self.notify_hooks(
            &agent,
            agent_proto::HookEvent::UserMessage,
            serde_json::json!({"messageId": user.id, "text": user.text()}),
            Some(slot.control().stopped_token()),
        );
        let start = Start {
            agent,
            assistant,
            slot,
        };
        self.start_run(session, start).await;
    }

    /// The turn's choices as the answer keeps them (`None`: none made), checked like
    /// `updateAgent`'s: an unknown provider is `providerNotConfigured`; a provider without
    /// a model takes that provider's default model; provider and model are kept both, as
    /// the ones that answer. A schema that is not one is `invalidParams`.
    fn checked_turn(
        &self,
        agent: &Agent,
        turn: TurnOptions,
    ) -> Result<Option<TurnOptions>, SessionError> {
        if turn == TurnOptions::default() {
            return Ok(None);
        }
        if agent.mode == AgentMode::Acp && turn != TurnOptions::default() {
            return Err(SessionError::NotSupported(
                "per-turn provider, model, reasoningEffort or outputSchema for agents of mode \"acp\" (the external agent chooses its own)".into(),
            ));
        }
        if let Some(schema) = &turn.output_schema {
            super::input::check_output_schema(schema)?;
        }
        let (provider, model) = match (&turn.provider, &turn.model) {
            (None, None) => (None, None),
            (provider, model) => {
                let provider = provider.clone().unwrap_or_else(|| agent.provider.clone());
                let model = match model {
                    Some(m) if m.trim().is_empty() => {
                        return Err(SessionError::InvalidParams("model is empty".into()));
                    }
                    Some(m) => m.clone(),
                    None if provider == agent.provider => agent.model.clone(),
                    None => self
                        .providers
                        .default_model_for(&provider)
                        .ok_or_else(|| provider_not_configured(&self.providers, &provider))?,
                };
                if self.providers.resolve(&provider, &model).is_none() {
                    return Err(provider_not_configured(&self.providers, &provider));
                }
                (Some(provider), Some(model))
            }
        };
        Ok(Some(TurnOptions {
            provider,
            model,
            ..turn
        }))
    }

    /// A message's content as blocks: web images fetched (under the agent's network
    /// rule), attachments read. Images and documents are read and written as files: off
    /// the runtime; plain text is not worth the thread hop (it sits before the first
    /// token).
    async fn user_blocks(
        &self,
        agent_id: &str,
        content: MessageContent,
    ) -> Result<Vec<Block>, SessionError> {
        let content = if content.has_web_images() {
            let agent = self.get_agent(agent_id).await?;
            self.fetch_web_images(&agent, content).await?
        } else {
            content
        };
        let limits = Attachments::new(&self.tools.offload_dir(agent_id), &self.config);
        if matches!(content, MessageContent::Text(_)) {
            return user_blocks(content, &limits);
        }
        tokio::task::spawn_blocking(move || user_blocks(content, &limits))
            .await
            .map_err(|e| SessionError::Internal(format!("cannot read the message: {e}")))?
    }

    /// The ids a send with this `clientRequestId` was given when it was stored, if it was.
    async fn stored_request(
        &self,
        agent_id: &str,
        request_id: Option<&str>,
    ) -> Result<Option<SendMessageResult>, SessionError> {
        let Some(request_id) = request_id else {
            return Ok(None);
        };
        let found = self.store.find_client_request(agent_id, request_id).await?;
        if let Some((user, assistant)) = found {
            return Ok(Some(SendMessageResult {
                user_message_id: user,
                assistant_message_id: assistant,
                delivery: Delivery::Started,
            }));
        }
        let queued = self.store.find_queued_request(agent_id, request_id).await?;
        Ok(queued.map(|q| SendMessageResult {
            user_message_id: q.user_message_id,
            assistant_message_id: q.assistant_message_id,
            delivery: match q.when_busy {
                WhenBusy::Steer => Delivery::Steered,
                _ => Delivery::Queued,
            },
        }))
    }

    /// The run slot for a send, or the ids of the same request (`request_id`) sent twice
    /// at once (running, or stored meanwhile); `agentBusy` for any other run.
    async fn claim_for_send(
        &self,
        session: &Arc<Session>,
        agent_id: &str,
        assistant_id: &str,
        request_id: Option<&str>,
        result: &SendMessageResult,
    ) -> Result<Claim, SessionError> {
        let request = request_id.map(|id| (id.to_owned(), result.clone()));
        let busy_with = match self
            .claim_run_slot_with(session, assistant_id, request)
            .await
        {
            Ok(slot) => return Ok(Claim::Slot(slot)),
            Err(SessionError::AgentBusy { message_id, .. }) if request_id.is_some() => message_id,
            Err(e) => return Err(e),
        };
        let running = {
            let st = session.lock();
            st.run.as_ref().and_then(|run| {
                run.request
                    .as_ref()
                    .filter(|(id, _)| Some(id.as_str()) == request_id)
                    .map(|(_, ids)| ids.clone())
            })
        };
        if let Some(ids) = running {
            return Ok(Claim::Answered(ids));
        }
        if let Some(ids) = self.stored_request(agent_id, request_id).await? {
            return Ok(Claim::Answered(ids));
        }
        Err(SessionError::AgentBusy {
            agent_id: agent_id.to_owned(),
            message_id: busy_with,
        })
    }

    /// Stores a send's two messages (the user's with the results of background subagents
    /// that finished meanwhile, marked delivered once it is stored: at worst given twice,
    /// never lost), closing an answer a run left stopped at maxSteps. Returns the user
    /// message as stored.
    pub(super) async fn store_send(
        &self,
        agent_id: &str,
        mut user: Message,
        assistant: &Message,
        client_request_id: Option<String>,
    ) -> Result<Message, SessionError> {
        // A run that stopped at maxSteps left its answer resumable (`waiting`); sending
        // instead of continuing closes it, so it does not look open forever.
        self.close_stopped_answer(agent_id).await?;
        let background = self.store.undelivered_background_results(agent_id).await?;
        if !background.is_empty() {
            user.blocks.insert(0, background_block(&background));
        }
        self.store
            .insert_run_messages(&RunMessages {
                user: user.clone(),
                assistant: assistant.clone(),
                client_request_id,
            })
            .await?;
        if !background.is_empty() {
            let ids: Vec<&str> = background
                .iter()
                .map(|t| t.child_agent_id.as_str())
                .collect();
            self.store.mark_background_delivered(&ids).await?;
        }
        Ok(user)
    }

    async fn close_stopped_answer(&self, agent_id: &str) -> Result<(), SessionError> {
        if let Some(mut last) = self.store.last_assistant_message(agent_id).await?
            && last.status == MessageStatus::Waiting
        {
            last.status = MessageStatus::Done;
            last.updated_at = now_ms();
            self.store.update_message(&last).await?;
        }
        Ok(())
    }

    /// Continues the agent's last run on the same assistant message.
    pub async fn continue_loop(self: &Arc<Self>, agent_id: &str) -> Result<String, SessionError> {
        let session = self.session(agent_id).await?;
        let agent = self.get_agent(agent_id).await?;
        if agent.mode == AgentMode::Acp {
            return Err(SessionError::NotSupported(
                "continueLoop for agents of mode \"acp\" (send a new message: the external agent keeps its own turn state)".into(),
            ));
        }
        let message = self.resumable_message(&session).await?;
        let slot = self.claim_run_slot(&session, &message.id).await?;
        let message = self.check_continuable(&session, message.id).await?;
        let id = message.id.clone();
        self.start_run(
            session,
            Start {
                agent,
                assistant: message,
                slot,
            },
        )
        .await;
        Ok(id)
    }

    /// The agent's last assistant message, if it can be continued.
    async fn resumable_message(&self, session: &Session) -> Result<Message, SessionError> {
        let message = self
            .store
            .last_assistant_message(&session.agent_id)
            .await?
            .ok_or_else(|| SessionError::InvalidState("the agent has no run to continue".into()))?;
        Ok(message)
    }

    /// Re-reads the message under the run slot and checks it can be continued.
    async fn check_continuable(
        &self,
        session: &Session,
        message_id: String,
    ) -> Result<Message, SessionError> {
        match session.status() {
            SessionStatus::WaitingPermission => {
                return Err(SessionError::InvalidState(
                    "a permission prompt is pending: answer it with handlePermissionResponse (or cancelLoop)".into(),
                ));
            }
            SessionStatus::WaitingQuestion => {
                return Err(SessionError::InvalidState(
                    "the model asked a question: answer it with answerQuestion (or cancelLoop)"
                        .into(),
                ));
            }
            _ => {}
        }
        let message = self
            .store
            .get_message(&message_id)
            .await?
            .ok_or(SessionError::MessageNotFound(message_id))?;
        match message.status {
            MessageStatus::Waiting
            | MessageStatus::Error
            | MessageStatus::Interrupted
            | MessageStatus::Cancelled => Ok(message),
            MessageStatus::Done => Err(SessionError::InvalidState(
                "the last run completed; send a message to go on".into(),
            )),
            MessageStatus::Pending | MessageStatus::Streaming => Err(SessionError::InvalidState(
                "the last message is still being written".into(),
            )),
        }
    }

    /// Asks the active run to stop at its next checkpoint.
    pub async fn pause(&self, agent_id: &str) -> Result<SessionStatus, SessionError> {
        let session = self.session(agent_id).await?;
        let st = session.lock();
        if let Some(run) = &st.run
            && !run.finishing
            && !run.control.is_ending()
        {
            run.control.request_pause();
        }
        Ok(st.status)
    }

    /// Continues a paused run.
    pub async fn resume(self: &Arc<Self>, agent_id: &str) -> Result<SessionStatus, SessionError> {
        let session = self.session(agent_id).await?;
        if session.status() != SessionStatus::Paused {
            return Err(SessionError::InvalidState(format!(
                "the session is {}, not paused",
                session.status().as_str()
            )));
        }
        self.continue_loop(agent_id).await?;
        Ok(session.status())
    }

    /// Cancels the agent's run (see [`SessionManager::cancel_run`]) and those of its
    /// subagents, foreground and background; its subagents still waiting for a slot never
    /// start. True when something was cancelled.
    pub async fn cancel(self: &Arc<Self>, agent_id: &str) -> Result<bool, SessionError> {
        let mut cancelled = self.task_slots.drop_waiting(agent_id);
        cancelled |= self.cancel_run(agent_id).await?;
        for child in self.store.active_subagents(agent_id).await? {
            match Box::pin(self.cancel(&child)).await {
                Ok(c) => cancelled |= c,
                Err(SessionError::AgentNotFound(_)) => {}
                Err(e) => tracing::warn!(agent_id, child, "cannot cancel a subagent: {e}"),
            }
        }
        Ok(cancelled)
    }

    /// Cancels the agent's run: an active one at once; a suspended one (waiting for
    /// permission, paused) by settling its calls as cancelled. False when there is none.
    /// At any instant a cancel either takes effect or answers false with nothing changed:
    /// a run that has already decided how it ends (at a prompt, or finishing) is waited
    /// for, then what it left is cancelled if it is suspended.
    async fn cancel_run(self: &Arc<Self>, agent_id: &str) -> Result<bool, SessionError> {
        let session = self.session(agent_id).await?;
        loop {
            // (slot released, run started): what to wait for before looking again.
            let wait = {
                let st = session.lock();
                match &st.run {
                    Some(run) => match run.control.stop(StopReason::User) {
                        StopOutcome::Stopped => return Ok(true),
                        StopOutcome::AlreadyStopped => return Ok(false),
                        StopOutcome::Ending => Some((run.done.clone(), None)),
                        StopOutcome::NotStarted => {
                            Some((run.done.clone(), Some(run.control.started().clone())))
                        }
                    },
                    None => None,
                }
            };
            let Some((done, started)) = wait else { break };
            let waited = tokio::time::timeout(Duration::from_secs(30), async {
                match started {
                    // A start in progress: it runs stopped (the cancel took), or gives up
                    // and releases the slot (then look again: a prompt may still wait).
                    Some(started) => tokio::select! {
                        _ = started.cancelled() => true,
                        _ = done.cancelled() => false,
                    },
                    None => {
                        done.cancelled().await;
                        false
                    }
                }
            })
            .await;
            match waited {
                Ok(true) => return Ok(true),
                Ok(false) => {}
                Err(_) => {
                    return Err(SessionError::Internal(
                        "the run did not end within 30 s; try again".into(),
                    ));
                }
            }
        }
        if !matches!(
            session.status(),
            SessionStatus::WaitingPermission
                | SessionStatus::WaitingQuestion
                | SessionStatus::Paused
        ) {
            return Ok(false);
        }
        let Some(message) = self.store.last_assistant_message(agent_id).await? else {
            return Ok(false);
        };
        let agent = self.get_agent(agent_id).await?;
        let slot = match self.claim_run_slot(&session, &message.id).await {
            Ok(slot) => slot,
            // Another start (an answer, a continue) won the slot: that run is the one to
            // cancel now.
            Err(SessionError::AgentBusy { .. }) => {
                return Box::pin(self.cancel_run(agent_id)).await;
            }
            Err(e) => return Err(e),
        };
        // Under the slot: still suspended? (An answer may have resumed and finished it.)
        if !matches!(
            session.status(),
            SessionStatus::WaitingPermission
                | SessionStatus::WaitingQuestion
                | SessionStatus::Paused
        ) {
            return Ok(false);
        }
        let Some(message) = self.store.get_message(&message.id).await? else {
            return Ok(false);
        };
        // The run starts already stopped: it settles what is open as cancelled and ends.
        slot.control().stop(StopReason::User);
        self.start_run(
            session,
            Start {
                agent,
                assistant: message,
                slot,
            },
        )
        .await;
        Ok(true)
    }

    /// Emits the start of a run and spawns it.
    pub(super) async fn start_run(self: &Arc<Self>, session: Arc<Session>, start: Start) {
        let Start {
            agent,
            assistant,
            slot,
        } = start;
        let control = slot.control().clone();
        control.mark_started();
        self.config.metrics.run_started();
        session.events().begin_message(&assistant);
        session.set_status(SessionStatus::Generating).await;
        self.persist_status(&session).await;
        // A new message that does not start empty (a regenerated variant) comes with it.
        let new_with_blocks =
            assistant.status == MessageStatus::Pending && !assistant.blocks.is_empty();
        let message = new_with_blocks.then(|| Box::new(assistant.clone()));
        let message_id = assistant.id.clone();
        session
            .emit(EventKind::MessageStarted {
                message_id: message_id.clone(),
                message,
            })
            .await;
        let agent_id = agent.id.clone();
        let span = tracing::info_span!("run", agent_id, message_id);
        let manager = self.clone();
        let agent_provider = agent.provider.clone();
        // Kept only when a `runFinished` hook is there to be told (no read at the run's end).
        let notify = (!self
            .config
            .hooks
            .matching(&agent, agent_proto::HookEvent::RunFinished, None)
            .is_empty())
        .then(|| agent.clone());
        let max_steps = agent
            .settings
            .max_steps
            .or(self.config.defaults.max_steps)
            .unwrap_or(DEFAULT_MAX_STEPS);
        // The turn's own provider and model, else the agent's.
        let turn = assistant.turn.as_ref();
        let provider = turn.and_then(|t| t.provider.as_deref());
        let model = turn.and_then(|t| t.model.as_deref());
        let agent_provider = provider.map_or(agent_provider, str::to_owned);
        let backend = if agent.mode == AgentMode::Acp {
            Some(self.acp_backend(&agent).await)
        } else {
            self.providers
                .resolve(
                    provider.unwrap_or(&agent.provider),
                    model.unwrap_or(&agent.model),
                )
                .map(|resolved| Ok(Backend::Model(resolved)))
        };
        // Fail closed: an agent whose profile is gone runs nothing until it gets another.
        let missing_profile = self.tools.profiles().resolve(&agent).err();
        let input = backend.map(|backend| {
            backend.map(|backend| RunInput {
                agent,
                assistant,
                backend,
                store: self.store.clone(),
                events: session.events().clone(),
                control,
                tools: self.tools.clone(),
                hooks: self.config.hooks.clone(),
                max_steps,
                tracker: session.tracker.clone(),
                steering: session.steering.clone(),
                prices: session.prices.clone(),
                context_config: self.config.context,
                max_parallel: self.config.max_parallel_tasks,
                caps: self.config.answer_caps,
                metrics: self.config.metrics.clone(),
            })
        });
        let input = match (input, missing_profile) {
            (None, _) => Err((
                provider_not_configured(&self.providers, &agent_provider).to_string(),
                run_error::PROVIDER_NOT_CONFIGURED,
            )),
            (Some(Err(why)), _) => Err((why, run_error::ACP_AGENT)),
            (Some(_), Some(missing)) => Err((missing.to_string(), run_error::PROFILE_NOT_FOUND)),
            (Some(Ok(input)), None) => Ok(input),
        };
        self.runs.spawn(tracing::Instrument::instrument(
            async move {
                manager
                    .drive_run(session, input, message_id, slot, notify)
                    .await
            },
            span,
        ));
    }

    /// What answers a run of an agent of mode `acp`: its external agent's command (read
    /// with its env unmasked) in its workspace. `Err` says why it cannot run.
    async fn acp_backend(&self, agent: &Agent) -> Result<Backend, String> {
        let spec = self
            .store
            .acp_backend(&agent.id)
            .await
            .map_err(|e| format!("cannot read the agent's ACP agent: {e}"))?
            .ok_or("the agent of mode \"acp\" names no external agent")?;
        let command = self.acp_agents().command(&spec)?;
        Ok(Backend::Acp(AcpRun {
            agents: self.acp_agents().clone(),
            command,
            workspace: self.tools.workspace_of(agent),
        }))
    }

    /// Takes the session's run slot, waiting for a run that has decided how it ends (at a
    /// prompt, or emitting its last events). Fails for a deleted agent.
    pub(super) async fn claim_run_slot(
        &self,
        session: &Arc<Session>,
        message_id: &str,
    ) -> Result<RunSlotGuard, SessionError> {
        self.claim_run_slot_with(session, message_id, None).await
    }

    /// [`SessionManager::claim_run_slot`] for a send with a `clientRequestId`.
    async fn claim_run_slot_with(
        &self,
        session: &Arc<Session>,
        message_id: &str,
        request: Option<(String, SendMessageResult)>,
    ) -> Result<RunSlotGuard, SessionError> {
        // With several daemons on one store, only the agent's home runs it (requests are
        // routed there; this holds for the runs a daemon starts by itself too).
        if !self.take_home(&session.agent_id).await {
            return Err(SessionError::AgentBusy {
                agent_id: session.agent_id.clone(),
                message_id: String::new(),
            });
        }
        loop {
            if self.shutting_down.is_cancelled() {
                return Err(SessionError::ShuttingDown);
            }
            let wait = {
                let mut st = session.lock();
                if st.deleted {
                    return Err(SessionError::AgentNotFound(session.agent_id.clone()));
                }
                match &st.run {
                    None => {
                        let control = RunControl::new();
                        st.run = Some(RunSlot {
                            message_id: message_id.to_owned(),
                            control: control.clone(),
                            finishing: false,
                            done: CancellationToken::new(),
                            request,
                        });
                        return Ok(RunSlotGuard {
                            session: session.clone(),
                            control,
                        });
                    }
                    Some(run) if run.finishing || run.control.is_ending() => run.done.clone(),
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

    async fn persist_status(&self, session: &Session) {
        if let Err(e) = self
            .store
            .set_session_status(&session.agent_id, session.status())
            .await
        {
            tracing::warn!(
                agent_id = session.agent_id,
                "cannot save the session status: {e}"
            );
        }
    }

    /// Runs the loop to its end, then reports it and frees the slot. A panic inside the
    /// loop becomes an error for this agent.
    async fn drive_run(
        self: &Arc<Self>,
        session: Arc<Session>,
        input: Result<RunInput, (String, &'static str)>,
        message_id: String,
        slot: RunSlotGuard,
        notify: Option<Agent>,
    ) {
        let outcome = match input {
            Err((message, kind)) => {
                self.fail_message(&session, &message_id, &message, kind)
                    .await
            }
            Ok(input) => match AssertUnwindSafe(agent_loop::run(input))
                .catch_unwind()
                .await
            {
                Ok(outcome) => outcome,
                Err(panic) => {
                    let what = panic
                        .downcast_ref::<&str>()
                        .map(|s| (*s).to_owned())
                        .or_else(|| panic.downcast_ref::<String>().cloned())
                        .unwrap_or_else(|| "unknown panic".into());
                    let message = format!("internal error: the run panicked: {what}");
                    tracing::error!(agent_id = session.agent_id, message_id, "{message}");
                    self.fail_message(&session, &message_id, &message, run_error::INTERNAL)
                        .await
                }
            },
        };
        {
            let mut st = session.lock();
            if let Some(run) = st.run.as_mut() {
                run.finishing = true;
            }
        }
        session.set_status(outcome.status).await;
        if !outcome.status_saved {
            self.persist_status(&session).await;
        }
        session
            .emit(EventKind::LoopFinished {
                message_id: message_id.clone(),
                reason: outcome.reason,
                error: outcome.error,
            })
            .await;
        drop(slot);
        self.config.metrics.run_ended(outcome.reason);
        session.run_ended(outcome.reason);
        if let Some(agent) = notify {
            self.notify_hooks(
                &agent,
                agent_proto::HookEvent::RunFinished,
                serde_json::json!({"messageId": message_id, "reason": outcome.reason}),
                None,
            );
        }
        if outcome.reason == LoopFinishReason::Completed
            && let Some(observer) = self.observer()
        {
            observer.run_completed(&session.agent_id, &message_id).await;
        }
        // The turn is over (not suspended): what was queued behind it goes next.
        if !matches!(
            outcome.status,
            SessionStatus::WaitingPermission
                | SessionStatus::WaitingQuestion
                | SessionStatus::Paused
        ) {
            self.run_queue(&session.agent_id).await;
        }
    }

    /// Ends a run that could not run: the message gets an error block and status.
    async fn fail_message(
        &self,
        session: &Session,
        message_id: &str,
        message: &str,
        kind: &str,
    ) -> RunOutcome {
        if let Ok(Some(mut stored)) = self.store.get_message(message_id).await {
            agent_loop::recover_calls(&mut stored);
            stored.blocks.push(Block::Error {
                message: message.to_owned(),
                kind: kind.to_owned(),
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
                message: message.to_owned(),
                kind: kind.to_owned(),
                retryable: false,
                retry: None,
            })
            .await;
        session
            .emit(EventKind::MessageCompleted {
                message_id: message_id.to_owned(),
                status: MessageStatus::Error,
                structured_output: None,
            })
            .await;
        RunOutcome {
            reason: LoopFinishReason::Error,
            error: Some(message.to_owned()),
            status: SessionStatus::Error,
            status_saved: false,
        }
    }
}

/// The text block that carries finished background tasks to the parent's model, before
/// the user's own text.
fn background_block(tasks: &[crate::store::BackgroundTask]) -> Block {
    let mut text = String::new();
    for task in tasks {
        text.push_str(&format!(
            "<background-task-result subagent=\"{}\" call=\"{}\" status=\"{}\" description=\"{}\">\n{}\n</background-task-result>\n\n",
            task.child_agent_id,
            task.tool_call_id,
            task.status.as_deref().unwrap_or("unknown"),
            task.description.replace('"', "'"),
            task.result.as_deref().unwrap_or_default()
        ));
    }
    Block::Text { text }
}
