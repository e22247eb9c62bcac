//! The agent loop: one run of an agent, from its first model call to how it ends.
//!
//! A run is a sequence of steps. A step is one model call (streamed into the assistant
//! message and out as events) followed by the tool calls it asked for, each checked by the
//! permission policy and run through the tool center. A call that needs a client's answer
//! suspends the run: the call is saved as `waitingPermission`, `permissionRequested` goes
//! out, and the run ends. Suspension is persistence: an answer (even after a restart)
//! starts a new run on the same message, which first settles the calls of that step and
//! then goes on. Between steps and tool calls are checkpoints where a cancel or a pause
//! takes effect; every await on the outside world also races the run's cancellation.
//!
//! This module has no socket and no SQL: it calls the store, the tool center and the
//! session's event log, and reports how the run ended; the session layer owns run slots
//! and the session status.

mod control;
pub mod legacy;
mod step;
mod summarize;
mod writer;

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use agent_proto::{
    Agent, Block, EventKind, LoopFinishReason, Message, MessageStatus, PermissionPrompt,
    PermissionResolution, Remember, SessionStatus, ToolCallResult, ToolCallStatus, run_error,
};

use crate::config::ContextConfig;
use crate::context;
use crate::provider::{ProviderError, Resolved};
use crate::store::{Grant, GrantScope, Store, StoreError, ToolExecution, ToolExecutionEnd, now_ms};
use crate::tools::ToolContext;
use crate::tools::center::{Outcome, Prepared, ToolCenter};
use crate::tools::command::display::display_form;
use crate::tools::permission::{Ask, Decision};
use writer::MessageWriter;

pub use control::{RunControl, StopOutcome, StopReason};
pub use writer::FLUSH_INTERVAL;

/// Result text of a call a client denied.
pub const DENIED_BY_USER: &str = "denied by the user";
/// Result text of a call cancelled with its run.
pub const CANCELLED_BY_USER: &str = "cancelled by user";
/// Result text of a call the daemon stopped.
pub const INTERRUPTED: &str = "interrupted: the daemon stopped before the call finished";

/// Whether a call of `message` waits for an answer nobody gave yet.
pub fn has_unanswered_prompt(message: &Message) -> bool {
    message.blocks.iter().any(|b| {
        matches!(
            b,
            Block::ToolCall {
                status: ToolCallStatus::WaitingPermission,
                resolution: None,
                ..
            }
        )
    })
}

/// Where a run's events go. The loop only emits; numbering them, keeping them for replay
/// and sending them to subscribers is the owner's (the session's event log).
pub trait EventSink: Send + Sync {
    /// Emits one event of the run's agent; an error says why it could not be.
    fn emit(&self, kind: EventKind) -> futures::future::BoxFuture<'_, Result<(), String>>;
}

/// The `permissionRequested` event of a prompt.
pub fn prompt_event(
    message_id: &str,
    tool_call_id: &str,
    tool_name: &str,
    arguments: serde_json::Value,
    prompt: PermissionPrompt,
) -> EventKind {
    EventKind::PermissionRequested {
        message_id: message_id.to_owned(),
        tool_call_id: tool_call_id.to_owned(),
        tool_name: tool_name.to_owned(),
        permission_type: prompt.permission_type,
        description: prompt.description,
        arguments,
        command: prompt.command,
        command_display: prompt.command_display,
        signature: prompt.signature,
        paths: prompt.paths,
        risk: prompt.risk,
        rememberable: prompt.rememberable,
    }
}

/// Everything a run needs.
pub struct RunInput {
    pub agent: Agent,
    /// The assistant message to write: new and empty, or one being continued.
    pub assistant: Message,
    pub resolved: Resolved,
    pub store: Store,
    pub events: Arc<dyn EventSink>,
    pub control: Arc<RunControl>,
    pub tools: Arc<ToolCenter>,
    pub max_steps: u32,
    /// The agent's context tracker (shared with previews and later runs).
    pub tracker: Arc<Mutex<context::Tracker>>,
    pub context_config: ContextConfig,
}

/// How a run ended, for the session to report.
#[derive(Debug, Clone, PartialEq)]
pub struct RunOutcome {
    pub reason: LoopFinishReason,
    pub error: Option<String>,
    /// The session status after the run.
    pub status: SessionStatus,
}

/// How the loop stopped.
enum End {
    Completed,
    MaxSteps,
    /// The output limit cut the model's answer; `continueLoop` goes on from it.
    MaxTokens,
    /// The provider refused or filtered the answer; its words.
    Refused(String),
    Suspended,
    Paused,
    Stopped(StopReason),
    Provider(ProviderError),
    Internal(String),
}

impl From<StoreError> for End {
    fn from(e: StoreError) -> Self {
        End::Internal(format!("the store failed: {e}"))
    }
}

/// Runs to the end and returns how it ended. Never fails: failures become the message's
/// error block, an `error` event and the outcome.
pub async fn run(input: RunInput) -> RunOutcome {
    let RunInput {
        agent,
        assistant,
        resolved,
        store,
        events,
        control,
        tools,
        max_steps,
        tracker,
        context_config,
    } = input;
    let mut run = Run {
        writer: MessageWriter::new(assistant, store.clone()),
        agent: &agent,
        resolved: &resolved,
        store: &store,
        events: events.as_ref(),
        control: &control,
        tools: &tools,
        context: None,
        tracker: &tracker,
        context_config,
    };
    if run.writer.message.status != MessageStatus::Pending {
        run.writer.set_status(MessageStatus::Streaming);
    }
    let end = run.drive(max_steps.max(1)).await;
    run.finish(end).await
}

struct Run<'a> {
    agent: &'a Agent,
    resolved: &'a Resolved,
    store: &'a Store,
    events: &'a dyn EventSink,
    control: &'a RunControl,
    tools: &'a ToolCenter,
    writer: MessageWriter,
    /// Made on the first tool call: creating it touches the file system.
    context: Option<Result<ToolContext, String>>,
    tracker: &'a Mutex<context::Tracker>,
    context_config: ContextConfig,
}

impl Run<'_> {
    async fn emit(&self, kind: EventKind) -> Result<(), End> {
        self.events
            .emit(kind)
            .await
            .map_err(|e| End::Internal(format!("cannot emit an event: {e}")))
    }

    fn checkpoint(&self) -> Option<End> {
        if self.control.is_stopped() {
            return Some(End::Stopped(
                self.control.reason().unwrap_or(StopReason::User),
            ));
        }
        if self.control.pause_requested() {
            return Some(End::Paused);
        }
        None
    }

    async fn drive(&mut self, max_steps: u32) -> End {
        let mut steps = 0;
        let mut answered_without_tools = false;
        let mut then: Option<End> = None;
        loop {
            if let Err(end) = self.settle_calls().await {
                return end;
            }
            if let Some(end) = then.take() {
                return end;
            }
            if answered_without_tools {
                return End::Completed;
            }
            if let Some(end) = self.checkpoint() {
                return end;
            }
            if steps >= max_steps {
                return End::MaxSteps;
            }
            match self.model_step().await {
                Ok(outcome) => {
                    steps += 1;
                    self.control.steps.store(steps, Ordering::SeqCst);
                    answered_without_tools = !outcome.had_calls;
                    then = outcome.then;
                }
                Err(end) => return end,
            }
        }
    }

    fn stopped(&self) -> End {
        End::Stopped(self.control.reason().unwrap_or(StopReason::User))
    }

    /// Settles every call of the message that has no result yet, in order: run it, refuse
    /// it, or suspend the run for a client's answer.
    async fn settle_calls(&mut self) -> Result<(), End> {
        for (id, status) in self.writer.unfinished_calls() {
            if let Some(end) = self.checkpoint() {
                return Err(end);
            }
            match status {
                ToolCallStatus::Streaming => {
                    let outcome = Outcome::settled(
                        ToolCallStatus::Error,
                        "the model's answer broke off before this call was complete",
                    );
                    self.settle(&id, outcome).await?;
                }
                ToolCallStatus::Running => {
                    self.settle(
                        &id,
                        Outcome::settled(ToolCallStatus::Interrupted, INTERRUPTED),
                    )
                    .await?;
                }
                ToolCallStatus::WaitingPermission => {
                    // The answer was saved with the call before it was acknowledged.
                    let resolution = self.writer.call_mut(&id).and_then(|c| *c.resolution);
                    match resolution {
                        Some(r) if r.cancelled => {
                            let outcome =
                                Outcome::settled(ToolCallStatus::Cancelled, CANCELLED_BY_USER);
                            self.settle(&id, outcome).await?;
                        }
                        Some(r) if r.granted => {
                            self.approve(&id, r.remember).await?;
                            self.run_call(&id, true).await?;
                        }
                        Some(_) => {
                            let outcome = Outcome::settled(ToolCallStatus::Denied, DENIED_BY_USER);
                            self.settle(&id, outcome).await?;
                        }
                        // Still unanswered (a run continued after a restart): asked again,
                        // announced like any prompt.
                        None => return Err(self.ask_again(&id).await),
                    }
                }
                ToolCallStatus::Ready => self.run_call(&id, false).await?,
                ToolCallStatus::Approved => self.run_call(&id, true).await?,
                ToolCallStatus::Success
                | ToolCallStatus::Error
                | ToolCallStatus::Denied
                | ToolCallStatus::Cancelled
                | ToolCallStatus::Interrupted => {}
            }
        }
        Ok(())
    }

    fn tool_context(&mut self) -> Result<ToolContext, String> {
        let tools = self.tools;
        let agent = self.agent;
        let control = self.control;
        self.context
            .get_or_insert_with(|| tools.context(agent, control.token.child_token()))
            .clone()
            .map(|mut ctx| {
                // Each call gets its own token: a timeout cancels that call only.
                ctx.cancel = control.token.child_token();
                ctx
            })
    }

    /// The paths the call's permission prompt was about.
    fn permission_paths(&mut self, id: &str) -> Option<Vec<String>> {
        self.writer
            .call_mut(id)
            .and_then(|call| call.permission_paths.clone())
    }

    /// The call's name and arguments.
    fn call_of(&mut self, id: &str) -> Option<(String, serde_json::Value)> {
        self.writer
            .call_mut(id)
            .map(|call| (call.name.clone(), call.arguments.clone()))
    }

    fn prepare(&mut self, id: &str) -> Result<(Prepared, ToolContext), String> {
        let (name, args) = self
            .call_of(id)
            .ok_or("the call vanished from its message")?;
        let ctx = self.tool_context()?;
        let prepared = self.tools.prepare(self.agent, &name, &args, &ctx)?;
        Ok((prepared, ctx))
    }

    /// Checks (unless approved) and runs one call.
    async fn run_call(&mut self, id: &str, approved: bool) -> Result<(), End> {
        let (prepared, ctx) = match self.prepare(id) {
            Ok(p) => p,
            Err(message) => {
                return self
                    .settle(id, Outcome::settled(ToolCallStatus::Error, message))
                    .await;
            }
        };
        let grants = self.store.grants_for(&self.agent.id).await?;
        if approved {
            // A client's answer applies to what its prompt showed, and to nothing else.
            let shown = self.permission_paths(id);
            if let Err(message) = prepared.check_prompted(shown.as_deref()) {
                return self
                    .settle(id, Outcome::settled(ToolCallStatus::Error, message))
                    .await;
            }
        } else {
            match self.tools.decide(self.agent, &prepared, &grants) {
                Decision::Allow => {}
                Decision::Deny(reason) => {
                    let outcome =
                        Outcome::settled(ToolCallStatus::Denied, format!("denied: {reason}"));
                    return self.settle(id, outcome).await;
                }
                Decision::Ask(ask) => return Err(self.suspend(id, &prepared, ask).await),
            }
        }
        if let Some(call) = self.writer.call_mut(id) {
            *call.status = ToolCallStatus::Running;
        }
        self.writer.flush().await?;
        self.store
            .record_tool_start(&ToolExecution {
                agent_id: self.agent.id.clone(),
                message_id: self.writer.id().to_owned(),
                tool_call_id: id.to_owned(),
                tool_name: prepared.tool.name().to_owned(),
                input: prepared.args.to_string(),
                started_at: now_ms(),
            })
            .await?;
        let (progress_tx, mut progress_rx) = tokio::sync::mpsc::channel(16);
        let mut outcome = {
            let execution =
                self.tools
                    .execute(self.agent, &prepared, &ctx, grants, id, Some(progress_tx));
            tokio::pin!(execution);
            loop {
                tokio::select! {
                    outcome = &mut execution => break outcome,
                    Some(p) = progress_rx.recv() => {
                        self.emit(EventKind::ToolProgress {
                            message_id: self.writer.id().to_owned(),
                            tool_call_id: id.to_owned(),
                            progress: p.progress,
                            total: p.total,
                            message: p.message,
                        })
                        .await?;
                    }
                }
            }
        };
        if self.control.is_stopped() && outcome.status != ToolCallStatus::Success {
            outcome.status = match self.control.reason() {
                Some(StopReason::Shutdown) => ToolCallStatus::Interrupted,
                _ => ToolCallStatus::Cancelled,
            };
        }
        self.settle(id, outcome).await
    }

    /// Saves the call as waiting for a client and asks; the run then ends.
    async fn suspend(&mut self, id: &str, prepared: &Prepared, ask: Ask) -> End {
        if !self.control.try_suspend() {
            // Stopped before it could ask: the stop wins, nothing is asked.
            return self.stopped();
        }
        if let Some(call) = self.writer.call_mut(id) {
            *call.status = ToolCallStatus::WaitingPermission;
            *call.permission_paths = prepared.resolved_paths();
        }
        self.writer.set_status(MessageStatus::Waiting);
        if let Err(e) = self.writer.flush().await {
            return e.into();
        }
        let prompt = PermissionPrompt {
            permission_type: ask.level,
            description: ask.description,
            command_display: ask.command.as_deref().map(display_form),
            command: ask.command,
            signature: (!ask.signatures.is_empty()).then_some(ask.signatures),
            paths: (!ask.paths.is_empty()).then_some(ask.paths),
            risk: ask.risk,
            rememberable: !ask.grant_keys.is_empty(),
        };
        if let Some(call) = self.writer.call_mut(id) {
            *call.prompt = Some(Box::new(prompt.clone()));
        }
        if let Err(e) = self.writer.flush().await {
            return e.into();
        }
        let event = prompt_event(
            self.writer.id(),
            id,
            prepared.tool.name(),
            prepared.args.clone(),
            prompt,
        );
        match self.emit(event).await {
            Ok(()) => End::Suspended,
            Err(end) => end,
        }
    }

    /// Asks again for a call still waiting for its answer (after a restart): the prompt
    /// that was sent is sent again; a call with none kept is decided anew.
    async fn ask_again(&mut self, id: &str) -> End {
        let kept = self.writer.call_mut(id).and_then(|call| {
            call.prompt
                .clone()
                .map(|prompt| (call.name.clone(), call.arguments.clone(), prompt))
        });
        let Some((name, arguments, prompt)) = kept else {
            return match self.run_call(id, false).await {
                Ok(()) => End::Internal("the call ran instead of asking again".into()),
                Err(end) => end,
            };
        };
        if !self.control.try_suspend() {
            return self.stopped();
        }
        self.writer.set_status(MessageStatus::Waiting);
        if let Err(e) = self.writer.flush().await {
            return e.into();
        }
        let event = prompt_event(self.writer.id(), id, &name, arguments, *prompt);
        match self.emit(event).await {
            Ok(()) => End::Suspended,
            Err(end) => end,
        }
    }

    /// Applies a grant: remembers it if asked (and allowed), marks the call approved.
    async fn approve(&mut self, id: &str, remember: Remember) -> Result<(), End> {
        let scope = match remember {
            Remember::Once => None,
            Remember::Session => Some(GrantScope::Session),
            Remember::Always => Some(GrantScope::Always),
        };
        // Remembered as the prompt showed it: keyed by its paths, not by where the
        // arguments resolve now.
        let shown = self.permission_paths(id);
        if let Some(scope) = scope
            && let Ok((prepared, ctx)) = self.prepare(id)
            && let Some(prompted) = self.tools.as_prompted(&prepared, shown.as_deref(), &ctx)
        {
            let grants = self.store.grants_for(&self.agent.id).await?;
            if let Decision::Ask(ask) = self.tools.decide(self.agent, &prompted, &grants) {
                for key in &ask.grant_keys {
                    let grant = Grant {
                        scope,
                        level: ask.level,
                        key: key.clone(),
                    };
                    self.store.add_grant(&self.agent.id, &grant).await?;
                }
            }
        }
        if let Some(call) = self.writer.call_mut(id) {
            *call.status = ToolCallStatus::Approved;
        }
        self.writer.flush().await?;
        Ok(())
    }

    /// Gives a call its result: saved in the message and the execution record, and sent.
    async fn settle(&mut self, id: &str, outcome: Outcome) -> Result<(), End> {
        let Some(call) = self.writer.call_mut(id) else {
            return Ok(());
        };
        let ran = *call.status == ToolCallStatus::Running;
        let (name, input) = (call.name.clone(), call.arguments.to_string());
        *call.status = outcome.status;
        *call.result = Some(ToolCallResult {
            content: outcome.content.clone(),
            is_error: outcome.is_error,
            offload_path: outcome.offload_path.clone(),
            duration_ms: Some(outcome.duration_ms),
        });
        self.writer.flush().await?;
        let message_id = self.writer.id().to_owned();
        if !ran {
            self.store
                .record_tool_start(&ToolExecution {
                    agent_id: self.agent.id.clone(),
                    message_id: message_id.clone(),
                    tool_call_id: id.to_owned(),
                    tool_name: name,
                    input,
                    started_at: now_ms(),
                })
                .await?;
        }
        let end = ToolExecutionEnd {
            status: status_name(outcome.status),
            output: outcome.content.clone(),
            offload_path: outcome.offload_path.clone(),
            finished_at: now_ms(),
            duration_ms: outcome.duration_ms,
        };
        self.store.record_tool_end(&message_id, id, &end).await?;
        self.emit(EventKind::ToolResult {
            message_id,
            tool_call_id: id.to_owned(),
            status: outcome.status,
            content: outcome.content,
            offload_path: outcome.offload_path,
            duration_ms: outcome.duration_ms,
        })
        .await
    }

    /// Gives every unfinished call a synthetic result (so the transcript stays valid),
    /// except calls still waiting for an answer when `keep_waiting`.
    async fn close_calls(&mut self, status: ToolCallStatus, text: &str, keep_waiting: bool) {
        for (id, current) in self.writer.unfinished_calls() {
            let waiting = current == ToolCallStatus::WaitingPermission;
            if waiting && keep_waiting {
                continue;
            }
            // One resolution per call: a prompt already answered is not resolved again.
            let unanswered = waiting
                && self.writer.call_mut(&id).is_some_and(|call| {
                    let open = call.resolution.is_none();
                    if open {
                        *call.resolution = Some(PermissionResolution {
                            granted: false,
                            remember: Remember::Once,
                            cancelled: true,
                        });
                    }
                    open
                });
            if unanswered {
                let event = EventKind::PermissionResolved {
                    message_id: self.writer.id().to_owned(),
                    tool_call_id: id.clone(),
                    granted: false,
                    remember: Remember::Once,
                    cancelled: true,
                };
                if self.emit(event).await.is_err() {
                    tracing::warn!("cannot emit permissionResolved while closing calls");
                }
            }
            if self
                .settle(&id, Outcome::settled(status, text))
                .await
                .is_err()
            {
                tracing::warn!(tool_call_id = id, "cannot save the result of a closed call");
            }
        }
    }

    /// Ends the message and emits what the clients need to know; returns the outcome.
    async fn finish(mut self, end: End) -> RunOutcome {
        // A stop that came before the run decided how it ends wins over that end: a
        // client told `cancelled: true` sees the run cancelled.
        let end = match end {
            End::Suspended | End::Stopped(_) => end,
            other if self.control.try_finish() => other,
            _ => self.stopped(),
        };
        let outcome = |reason, error: Option<String>, status| RunOutcome {
            reason,
            error,
            status,
        };
        let mut error: Option<(String, &'static str, bool)> = None;
        let (message_status, result) = match end {
            End::Completed => (
                MessageStatus::Done,
                outcome(LoopFinishReason::Completed, None, SessionStatus::Idle),
            ),
            End::MaxSteps => (
                MessageStatus::Waiting,
                outcome(LoopFinishReason::MaxSteps, None, SessionStatus::Idle),
            ),
            End::MaxTokens => (
                MessageStatus::Waiting,
                outcome(LoopFinishReason::MaxTokens, None, SessionStatus::Idle),
            ),
            End::Refused(words) => (
                MessageStatus::Done,
                outcome(LoopFinishReason::Refused, Some(words), SessionStatus::Idle),
            ),
            End::Suspended => (
                MessageStatus::Waiting,
                outcome(
                    LoopFinishReason::WaitingPermission,
                    None,
                    SessionStatus::WaitingPermission,
                ),
            ),
            End::Paused => (
                MessageStatus::Waiting,
                outcome(LoopFinishReason::Paused, None, SessionStatus::Paused),
            ),
            End::Stopped(StopReason::User) => {
                self.close_calls(ToolCallStatus::Cancelled, CANCELLED_BY_USER, false)
                    .await;
                (
                    MessageStatus::Cancelled,
                    outcome(LoopFinishReason::Cancelled, None, SessionStatus::Idle),
                )
            }
            End::Stopped(StopReason::Shutdown) => {
                self.close_calls(ToolCallStatus::Interrupted, INTERRUPTED, true)
                    .await;
                (
                    MessageStatus::Interrupted,
                    outcome(
                        LoopFinishReason::Cancelled,
                        Some("the daemon is shutting down".into()),
                        SessionStatus::Idle,
                    ),
                )
            }
            End::Provider(e) => {
                let message = e.to_string();
                error = Some((message.clone(), e.kind(), e.retryable()));
                (
                    MessageStatus::Error,
                    outcome(LoopFinishReason::Error, Some(message), SessionStatus::Error),
                )
            }
            End::Internal(message) => {
                error = Some((message.clone(), run_error::INTERNAL, false));
                (
                    MessageStatus::Error,
                    outcome(LoopFinishReason::Error, Some(message), SessionStatus::Error),
                )
            }
        };
        if error.is_some() {
            // Calls cut off with the stream get a result, so the transcript stays valid.
            self.close_calls(
                ToolCallStatus::Error,
                "the model's answer broke off before this call was complete",
                true,
            )
            .await;
        }
        if let Some((message, kind, _)) = &error {
            self.writer.push_block(Block::Error {
                message: message.clone(),
                kind: (*kind).to_owned(),
            });
        }
        self.writer.set_status(message_status);
        let message_id = self.writer.id().to_owned();
        if let Err(e) = self.writer.flush().await {
            tracing::error!(message_id, "cannot save the finished message: {e}");
        }
        let mut kinds = Vec::with_capacity(2);
        if let Some((message, kind, retryable)) = error {
            tracing::warn!(message_id, kind, "run failed: {message}");
            kinds.push(EventKind::Error {
                message_id: Some(message_id.clone()),
                message,
                kind: kind.to_owned(),
                retryable,
                retry: None,
            });
        }
        if message_status != MessageStatus::Waiting {
            kinds.push(EventKind::MessageCompleted {
                message_id,
                status: message_status,
            });
        }
        for kind in kinds {
            if let Err(e) = self.events.emit(kind).await {
                tracing::error!("cannot emit the end of a run: {e}");
            }
        }
        result
    }
}

/// The `tool_executions.status` of a call status.
fn status_name(status: ToolCallStatus) -> &'static str {
    match status {
        ToolCallStatus::Success => "success",
        ToolCallStatus::Error => "error",
        ToolCallStatus::Denied => "denied",
        ToolCallStatus::Cancelled => "cancelled",
        ToolCallStatus::Interrupted => "interrupted",
        ToolCallStatus::Running
        | ToolCallStatus::Streaming
        | ToolCallStatus::Ready
        | ToolCallStatus::WaitingPermission
        | ToolCallStatus::Approved => "running",
    }
}

/// Repairs a message a crash or kill left unfinished: every call that was streaming,
/// ready, approved or running gets an "interrupted" result (calls waiting for a
/// permission stay answerable). Returns true if anything changed.
pub fn recover_calls(message: &mut Message) -> bool {
    let mut changed = false;
    for block in &mut message.blocks {
        if let Block::ToolCall { status, result, .. } = block
            && !status.is_finished()
            && *status != ToolCallStatus::WaitingPermission
        {
            *status = ToolCallStatus::Interrupted;
            *result = Some(ToolCallResult {
                content: INTERRUPTED.into(),
                is_error: true,
                offload_path: None,
                duration_ms: None,
            });
            changed = true;
        }
    }
    changed
}
