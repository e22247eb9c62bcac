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

pub mod legacy;
mod summarize;
mod writer;

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use agent_proto::{
    Agent, Block, EventKind, LoopFinishReason, Message, MessageStatus, Remember, SessionStatus,
    ToolCallResult, ToolCallStatus, run_error,
};
use futures::StreamExt;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::config::ContextConfig;
use crate::context;
use crate::provider::{FinishReason, ProviderError, ProviderEvent, Resolved};
use crate::session::events::EventLog;
use crate::store::{Grant, GrantScope, Store, StoreError, ToolExecution, ToolExecutionEnd, now_ms};
use crate::tools::ToolContext;
use crate::tools::center::{Outcome, Prepared, ToolCenter, parse_arguments};
use crate::tools::command::display::display_form;
use crate::tools::permission::{Ask, Decision};
use writer::{MessageWriter, Piece};

pub use writer::FLUSH_INTERVAL;

/// Result text of a call a client denied.
pub const DENIED_BY_USER: &str = "denied by the user";
/// Result text of a call cancelled with its run.
pub const CANCELLED_BY_USER: &str = "cancelled by user";
/// Result text of a call the daemon stopped.
pub const INTERRUPTED: &str = "interrupted: the daemon stopped before the call finished";

/// Why a run was stopped from outside.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopReason {
    /// A client called `cancelLoop` (or deleted the agent).
    User,
    /// The daemon is shutting down.
    Shutdown,
}

/// The handle to stop or pause a run; the first stop reason given wins.
#[derive(Debug, Default)]
pub struct RunControl {
    token: CancellationToken,
    reason: Mutex<Option<StopReason>>,
    pause: AtomicBool,
    steps: AtomicU32,
    /// The run is ending at a permission prompt: answers may already arrive.
    suspending: AtomicBool,
}

impl RunControl {
    pub fn new() -> Arc<RunControl> {
        Arc::new(RunControl::default())
    }

    pub fn stop(&self, reason: StopReason) {
        self.reason
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_or_insert(reason);
        self.token.cancel();
    }

    pub fn reason(&self) -> Option<StopReason> {
        *self.reason.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn is_stopped(&self) -> bool {
        self.token.is_cancelled()
    }

    /// Asks the run to stop at its next checkpoint, resumable.
    pub fn request_pause(&self) {
        self.pause.store(true, Ordering::SeqCst);
    }

    pub fn pause_requested(&self) -> bool {
        self.pause.load(Ordering::SeqCst)
    }

    /// True once the run has decided to end at a permission prompt (before it emits it):
    /// whoever wants the run slot waits for the run's end instead of failing.
    pub fn is_suspending(&self) -> bool {
        self.suspending.load(Ordering::SeqCst)
    }

    /// Model calls the run has made so far.
    pub fn steps(&self) -> u32 {
        self.steps.load(Ordering::SeqCst)
    }
}

/// A client's answer to a permission prompt, applied when the run resumes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PermissionAnswer {
    pub tool_call_id: String,
    pub granted: bool,
    pub remember: Remember,
}

/// Everything a run needs.
pub struct RunInput {
    pub agent: Agent,
    /// The assistant message to write: new and empty, or one being continued.
    pub assistant: Message,
    pub resolved: Resolved,
    pub store: Store,
    pub events: Arc<EventLog>,
    pub control: Arc<RunControl>,
    pub tools: Arc<ToolCenter>,
    pub answer: Option<PermissionAnswer>,
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
        answer,
        max_steps,
        tracker,
        context_config,
    } = input;
    let mut run = Run {
        writer: MessageWriter::new(assistant, store.clone()),
        agent: &agent,
        resolved: &resolved,
        store: &store,
        events: &events,
        control: &control,
        tools: &tools,
        answer,
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

/// What one model call has produced so far besides text.
struct StepState {
    /// Tool calls by the provider's index: (index, id, arguments so far).
    calls: Vec<(usize, String, String)>,
    /// The tag parser, when tools go to the model as text.
    legacy: Option<legacy::LegacyParser>,
    /// Legacy calls that could not be read: (id, raw text, why).
    malformed: Vec<(String, String, String)>,
    /// Input tokens the provider counted for this call.
    reported_input: Option<u64>,
    /// Why the model stopped, as the provider said.
    finish: Option<FinishReason>,
    /// Whether the model wrote any text in this call.
    answered: bool,
}

/// What a model call left for the loop: whether it asked for tools, and how the run must
/// end once they are settled (cut by the output limit, refused).
struct StepOutcome {
    had_calls: bool,
    then: Option<End>,
}

/// The result a call gets when the output limit cut its arguments.
const ARGUMENTS_CUT: &str = "not run: your answer reached the output token limit while you were writing this call's arguments, so they are incomplete. Write the call again, with shorter arguments if you can (for example, write a large file in parts).";

/// The result a call gets when the provider refused the answer that made it.
const ANSWER_REFUSED: &str = "not run: the provider refused the answer this call was part of";

struct Run<'a> {
    agent: &'a Agent,
    resolved: &'a Resolved,
    store: &'a Store,
    events: &'a EventLog,
    control: &'a RunControl,
    tools: &'a ToolCenter,
    writer: MessageWriter,
    answer: Option<PermissionAnswer>,
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
            .map(drop)
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

    /// One model call: stream it into the message and out as events.
    async fn model_step(&mut self) -> Result<StepOutcome, End> {
        self.writer.begin_step();
        let history = tokio::select! {
            biased;
            _ = self.control.token.cancelled() => return Err(self.stopped()),
            history = self.store.history(&self.agent.id) => history?,
        };
        let current_id = self.writer.id().to_owned();
        let end = history
            .iter()
            .position(|m| m.id == current_id)
            .unwrap_or(history.len());
        let before = &history[..end];
        let offer = self.tools.offer(self.agent);
        if let Some(message) = offer.left_out.filter(|_| self.control.steps() == 0) {
            let message_id = Some(self.writer.id().to_owned());
            let kind = agent_proto::run_error::TOOLS_LEFT_OUT.to_owned();
            self.emit(EventKind::Error {
                message_id,
                message,
                kind,
                retryable: false,
            })
            .await?;
        }
        let specs = offer.specs;
        let mut step = StepState {
            calls: Vec::new(),
            legacy: context::uses_legacy_tools(&self.resolved.model, &specs)
                .then(legacy::LegacyParser::new),
            malformed: Vec::new(),
            reported_input: None,
            finish: None,
            answered: false,
        };
        let prepared = self.prepare_context(before, &specs).await?;
        if let Some(detail) = context::budget::overflow(&prepared.report) {
            let provider = self.resolved.model.provider.clone();
            return Err(End::Provider(ProviderError::BadRequest {
                provider,
                detail,
            }));
        }
        drop(history);
        let sent_estimate = prepared.estimate.total();
        let request = prepared.request;
        let mut stream = self.resolved.provider.stream(request);
        loop {
            let flush_at = self.writer.flush_due();
            tokio::select! {
                biased;
                _ = self.control.token.cancelled() => return Err(self.stopped()),
                _ = tokio::time::sleep_until(flush_at.unwrap_or_else(Instant::now)), if flush_at.is_some() => {
                    self.writer.flush().await?;
                }
                item = stream.next() => match item {
                    None => break,
                    Some(Err(e)) => return Err(End::Provider(e)),
                    Some(Ok(event)) => self.apply(event, &mut step).await?,
                },
            }
        }
        drop(stream);
        if let Some(reported) = step.reported_input {
            let mut tracker = self.tracker.lock().unwrap_or_else(PoisonError::into_inner);
            tracker.calibration = context::tokens::Calibration::from_usage(sent_estimate, reported);
            tracker.last_reported = Some(reported);
        }
        if let Some(mut parser) = step.legacy.take() {
            for event in parser.finish() {
                self.apply_legacy(event, &mut step).await?;
            }
        }
        let had_calls = !step.calls.is_empty() || !step.malformed.is_empty();
        let finish = step.finish.take();
        step.calls.sort_by_key(|(index, _, _)| *index);
        for (_, id, raw) in step.calls {
            let cut = finish == Some(FinishReason::Length)
                && serde_json::from_str::<serde_json::Value>(&raw).is_err();
            let refused = matches!(finish, Some(FinishReason::Refused(_)));
            if cut || refused {
                if let Some(call) = self.writer.call_mut(&id) {
                    *call.raw_arguments = Some(raw);
                }
                let message = if cut { ARGUMENTS_CUT } else { ANSWER_REFUSED };
                self.settle(
                    &id,
                    Outcome::settled(ToolCallStatus::Error, message.to_owned()),
                )
                .await?;
                continue;
            }
            self.complete_call(&id, &raw).await?;
        }
        for (id, raw, error) in step.malformed {
            if let Some(call) = self.writer.call_mut(&id) {
                *call.raw_arguments = Some(raw);
            }
            let message = format!(
                "could not read your function call ({error}); write it as <function_call>{{\"name\": \"TOOL\", \"arguments\": {{...}}}}</function_call>"
            );
            self.settle(&id, Outcome::settled(ToolCallStatus::Error, message))
                .await?;
        }
        self.writer.flush().await?;
        let then = match finish {
            Some(FinishReason::Length) => Some(End::MaxTokens),
            Some(FinishReason::Refused(words)) => Some(End::Refused(words)),
            Some(FinishReason::Other(reason)) if !step.answered && !had_calls => {
                return Err(End::Provider(ProviderError::InStream {
                    provider: self.resolved.model.provider.clone(),
                    raw: format!("the model stopped without an answer (finish reason {reason})"),
                }));
            }
            _ => None,
        };
        Ok(StepOutcome { had_calls, then })
    }

    /// One piece of a legacy-protocol answer.
    async fn apply_legacy(
        &mut self,
        event: legacy::LegacyEvent,
        step: &mut StepState,
    ) -> Result<(), End> {
        let message_id = self.writer.id().to_owned();
        match event {
            legacy::LegacyEvent::Text(delta) => {
                step.answered = true;
                self.writer.append(Piece::Text, &delta);
                self.emit(EventKind::TextDelta { message_id, delta }).await
            }
            legacy::LegacyEvent::Call { name, arguments } => {
                let id = format!("call_{}", uuid::Uuid::new_v4().simple());
                self.writer.start_call(&id, &name);
                let index = step.calls.len();
                step.calls.push((index, id.clone(), arguments.to_string()));
                self.emit(EventKind::ToolCallStarted {
                    message_id,
                    tool_call_id: id,
                    name,
                })
                .await
            }
            legacy::LegacyEvent::Malformed { raw, error } => {
                let id = format!("call_{}", uuid::Uuid::new_v4().simple());
                let name = "invalid_function_call".to_owned();
                self.writer.start_call(&id, &name);
                step.malformed.push((id.clone(), raw, error));
                self.emit(EventKind::ToolCallStarted {
                    message_id,
                    tool_call_id: id,
                    name,
                })
                .await
            }
        }
    }

    fn stopped(&self) -> End {
        End::Stopped(self.control.reason().unwrap_or(StopReason::User))
    }

    async fn apply(&mut self, event: ProviderEvent, step: &mut StepState) -> Result<(), End> {
        let message_id = self.writer.id().to_owned();
        let calls = &mut step.calls;
        let kind = match event {
            ProviderEvent::TextDelta(delta) => {
                if let Some(parser) = step.legacy.as_mut() {
                    for event in parser.push(&delta) {
                        self.apply_legacy(event, step).await?;
                    }
                    return Ok(());
                }
                step.answered = true;
                self.writer.append(Piece::Text, &delta);
                EventKind::TextDelta { message_id, delta }
            }
            ProviderEvent::ReasoningDelta(delta) => {
                self.writer.append(Piece::Reasoning, &delta);
                EventKind::ReasoningDelta { message_id, delta }
            }
            ProviderEvent::ToolCallStart { index, id, name } => {
                self.writer.start_call(&id, &name);
                calls.push((index, id.clone(), String::new()));
                // A call's start is a block boundary: save it.
                self.writer.flush().await?;
                EventKind::ToolCallStarted {
                    message_id,
                    tool_call_id: id,
                    name,
                }
            }
            ProviderEvent::ToolCallArgsDelta { index, delta } => {
                let Some((_, id, raw)) = calls.iter_mut().find(|(i, _, _)| *i == index) else {
                    return Err(End::Provider(ProviderError::Malformed {
                        provider: self.resolved.model.provider.clone(),
                        raw: format!("arguments for tool call {index}, which was never started"),
                    }));
                };
                raw.push_str(&delta);
                EventKind::ToolCallArgsDelta {
                    message_id,
                    tool_call_id: id.clone(),
                    delta,
                }
            }
            ProviderEvent::Usage(usage) => {
                self.writer.add_usage(usage);
                if usage.input_tokens > 0 {
                    step.reported_input = Some(usage.input_tokens);
                }
                EventKind::Usage {
                    message_id,
                    input_tokens: usage.input_tokens,
                    output_tokens: usage.output_tokens,
                }
            }
            ProviderEvent::Retrying {
                attempt,
                max,
                delay,
                error,
            } => {
                tracing::info!(attempt, max, ?delay, "retrying the model call: {error}");
                EventKind::Error {
                    message_id: Some(message_id),
                    message: format!(
                        "retrying in {:.1} s (retry {attempt} of {max}): {error}",
                        delay.as_secs_f64()
                    ),
                    kind: error.kind().to_owned(),
                    retryable: true,
                }
            }
            ProviderEvent::Finish(reason) => {
                step.finish = Some(reason);
                return Ok(());
            }
        };
        self.emit(kind).await
    }

    /// A call's arguments are complete: parse them and tell the clients.
    async fn complete_call(&mut self, id: &str, raw: &str) -> Result<(), End> {
        let parsed = parse_arguments(raw);
        let Some(call) = self.writer.call_mut(id) else {
            return Ok(());
        };
        *call.arguments = parsed.value.clone();
        *call.raw_arguments = parsed.raw.clone();
        *call.status = ToolCallStatus::Ready;
        let name = call.name.clone();
        self.emit(EventKind::ToolCallReady {
            message_id: self.writer.id().to_owned(),
            tool_call_id: id.to_owned(),
            name,
            arguments: parsed.value,
        })
        .await?;
        if let Some(error) = parsed.error {
            self.settle(id, Outcome::settled(ToolCallStatus::Error, error))
                .await?;
        }
        Ok(())
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
                    let answer = self.answer.take_if(|a| a.tool_call_id == id);
                    match answer {
                        Some(answer) if answer.granted => {
                            self.approve(&id, answer.remember).await?;
                            self.run_call(&id, true).await?;
                        }
                        Some(_) => {
                            let outcome = Outcome::settled(ToolCallStatus::Denied, DENIED_BY_USER);
                            self.settle(&id, outcome).await?;
                        }
                        None => return Err(End::Suspended),
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
        self.control.suspending.store(true, Ordering::SeqCst);
        if let Some(call) = self.writer.call_mut(id) {
            *call.status = ToolCallStatus::WaitingPermission;
            *call.permission_paths = prepared.resolved_paths();
        }
        self.writer.set_status(MessageStatus::Waiting);
        if let Err(e) = self.writer.flush().await {
            return e.into();
        }
        let rememberable = ask.rememberable();
        let event = EventKind::PermissionRequested {
            message_id: self.writer.id().to_owned(),
            tool_call_id: id.to_owned(),
            tool_name: prepared.tool.name().to_owned(),
            permission_type: ask.level,
            description: ask.description,
            arguments: prepared.args.clone(),
            command_display: ask.command.as_deref().map(display_form),
            command: ask.command,
            signature: (!ask.signatures.is_empty()).then_some(ask.signatures),
            paths: (!ask.paths.is_empty()).then_some(ask.paths),
            risk: ask.risk,
            rememberable,
        };
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
            if waiting {
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
