//! The agent loop: one run of an agent, from its first model call to how it ends.
//!
//! A run is a sequence of steps. A step is one model call (streamed into the assistant
//! message and out as events) followed by the tool calls it asked for, each checked by the
//! permission policy and run through the tool center (`calls.rs`). A call that needs a
//! client's answer suspends the run (`suspend.rs`): the call is saved as
//! `waitingPermission` (or `waitingAnswer`, for the model's question to the user), its
//! `permissionRequested` (`questionRequested`) goes out, and the run ends. Suspension is persistence: an answer (even after a restart)
//! starts a new run on the same message, which first settles the calls of that step and
//! then goes on. Between steps and tool calls are checkpoints where a cancel or a pause
//! takes effect; every await on the outside world also races the run's cancellation.
//!
//! This module has no socket and no SQL: it calls the store, the tool center and the
//! session's event log, and reports how the run ended; the session layer owns run slots
//! and the session status.

mod acp;
mod calls;
mod caps;
mod checkpoint;
mod coalesce;
mod control;
mod hooks;
pub mod legacy;
mod steer;
mod step;
mod structured;
mod summarize;
mod suspend;
mod waits;
mod writer;

pub(crate) use writer::{CallIndex, Piece, append_piece, step_has_text};

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use agent_proto::{
    Agent, Block, EventKind, LoopFinishReason, Message, MessageStatus, PermissionPrompt,
    SessionStatus, ToolCallBlock, ToolCallResult, ToolCallStatus, run_error,
};

use crate::config::ContextConfig;
use crate::context;
use crate::provider::{AnswerOptions, OutputSchema, ProviderError, Resolved};
use crate::store::{Store, StoreError};
use crate::tools::ToolContext;
use crate::tools::builtin::task;
use crate::tools::center::{Outcome, ToolCenter};
use writer::MessageWriter;

pub use caps::AnswerCaps;
pub use control::{RunControl, StopOutcome, StopReason};
pub use summarize::{SummarizeError, summarize_now, summarized_event};
pub use writer::FLUSH_INTERVAL;

/// Result text of a call a client denied.
pub const DENIED_BY_USER: &str = "denied by the user";
/// Result text of a call cancelled with its run.
pub const CANCELLED_BY_USER: &str = "cancelled by user";
/// Result text of a call the daemon stopped.
pub const INTERRUPTED: &str = "interrupted: the daemon stopped before the call finished";

/// What the session of `message` (its agent's last assistant message) waits for: a
/// permission prompt nobody answered yet (first), or a question; `None` when nothing of it
/// waits for a client.
pub fn waiting_for(message: &Message) -> Option<SessionStatus> {
    let mut waiting = None;
    for block in &message.blocks {
        match block {
            Block::ToolCall(ToolCallBlock {
                status: ToolCallStatus::WaitingPermission,
                resolution: None,
                ..
            }) => return Some(SessionStatus::WaitingPermission),
            Block::ToolCall(ToolCallBlock {
                status: ToolCallStatus::WaitingAnswer,
                answer: None,
                ..
            }) => waiting = Some(SessionStatus::WaitingQuestion),
            _ => {}
        }
    }
    waiting
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
        network_access: prompt.network_access,
        outside_sandbox: prompt.outside_sandbox,
    }
}

/// What answers a run: a model of agentd's providers, or an external ACP agent (mode
/// `acp`).
pub enum Backend {
    Model(Resolved),
    Acp(acp::AcpRun),
}

pub use acp::AcpRun;

/// Everything a run needs.
pub struct RunInput {
    pub agent: Agent,
    /// The assistant message to write: new and empty, or one being continued.
    pub assistant: Message,
    pub backend: Backend,
    pub store: Store,
    pub events: Arc<dyn EventSink>,
    pub control: Arc<RunControl>,
    pub tools: Arc<ToolCenter>,
    /// The config's hooks, and how every hook is run.
    pub hooks: Arc<crate::hooks::Hooks>,
    pub max_steps: u32,
    /// The agent's context tracker (shared with previews and later runs).
    pub tracker: Arc<Mutex<context::Tracker>>,
    /// The prices of the agent's history messages (shared with later runs).
    pub prices: Arc<Mutex<context::Prices>>,
    /// Set when a steer may wait to join the turn (`steer.rs`).
    pub steering: Arc<AtomicBool>,
    pub context_config: ContextConfig,
    /// `task` calls of one answer run side by side, this many at a time.
    pub max_parallel: usize,
    /// What the model (or ACP agent) may write into the message.
    pub caps: AnswerCaps,
    /// Where the run's tokens and tool calls are counted.
    pub metrics: crate::metrics::Metrics,
}

/// How a run ended, for the session to report.
#[derive(Debug, Clone, PartialEq)]
pub struct RunOutcome {
    pub reason: LoopFinishReason,
    pub error: Option<String>,
    /// The session status after the run.
    pub status: SessionStatus,
    /// `status` is saved already (with the run's message); the session only sets it live.
    pub status_saved: bool,
}

/// How the loop stopped.
enum End {
    Completed,
    MaxSteps,
    /// The output limit cut the model's answer; `continueLoop` goes on from it.
    MaxTokens,
    /// The provider refused or filtered the answer; its words.
    Refused(String),
    /// A call waits for a client's answer.
    Suspended(Wait),
    Paused,
    Stopped(StopReason),
    Provider(ProviderError),
    /// The external ACP agent failed (could not start, exited, failed the prompt).
    External(String),
    /// The answer went past a cap of `[limits]`; it was stopped there.
    Limit(caps::Exceeded),
    /// The final answer did not fit the turn's output schema, also after the retry.
    OutputInvalid(String),
    Internal(String),
}

/// What a suspended run waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wait {
    Permission,
    Question,
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
        backend,
        store,
        events,
        control,
        tools,
        hooks,
        max_steps,
        tracker,
        prices,
        steering,
        context_config,
        max_parallel,
        caps,
        metrics,
    } = input;
    let (resolved, external) = match &backend {
        Backend::Model(resolved) => (Some(resolved), None),
        Backend::Acp(acp) => (None, Some(acp)),
    };
    let budget = caps::Budget::new(caps, &assistant);
    let (options, output) = turn_choices(&assistant, resolved);
    let mut run = Run {
        options,
        output,
        correction: None,
        budget,
        writer: MessageWriter::new(assistant, store.clone()),
        agent: &agent,
        resolved,
        store: &store,
        events: events.as_ref(),
        control: &control,
        tools: &tools,
        hooks: &hooks,
        context: None,
        tracker: &tracker,
        prices: &prices,
        steering: &steering,
        context_config,
        max_parallel,
        snapshot_pending: false,
        metrics: &metrics,
    };
    if run.writer.message.status != MessageStatus::Pending {
        run.writer.set_status(MessageStatus::Streaming);
    }
    let end = match external {
        Some(acp) => run.drive_acp(acp).await,
        None => run.drive(max_steps.max(1)).await,
    };
    run.finish(end).await
}

/// What a turn's choices ask of this run's requests, and the check of its final answer
/// (`Err`: the stored schema does not compile).
fn turn_choices(
    assistant: &Message,
    resolved: Option<&Resolved>,
) -> (
    AnswerOptions,
    Option<Result<structured::OutputCheck, String>>,
) {
    let Some(turn) = &assistant.turn else {
        return (AnswerOptions::default(), None);
    };
    let reasoning = resolved.is_some_and(|r| r.model.reasoning);
    let reasoning_effort = turn.reasoning_effort.filter(|effort| {
        if !reasoning {
            tracing::debug!(
                effort = effort.as_str(),
                "reasoningEffort ignored: the model is not marked as reasoning"
            );
        }
        reasoning
    });
    let options = AnswerOptions {
        reasoning_effort,
        output: turn.output_schema.clone().map(OutputSchema::new),
    };
    let output = turn
        .output_schema
        .as_ref()
        .map(structured::OutputCheck::new);
    (options, output)
}

struct Run<'a> {
    /// The turn's choices each request carries.
    options: AnswerOptions,
    /// The turn's output schema, compiled.
    output: Option<Result<structured::OutputCheck, String>>,
    /// The correction the next request adds after a misfit answer (once a run).
    correction: Option<String>,
    agent: &'a Agent,
    /// The model, unless an external ACP agent answers.
    resolved: Option<&'a Resolved>,
    store: &'a Store,
    events: &'a dyn EventSink,
    control: &'a RunControl,
    tools: &'a ToolCenter,
    hooks: &'a crate::hooks::Hooks,
    writer: MessageWriter,
    /// What the message may still take of what the model writes.
    budget: caps::Budget,
    /// Made on the first tool call: creating it touches the file system.
    context: Option<Result<ToolContext, String>>,
    tracker: &'a Mutex<context::Tracker>,
    prices: &'a Mutex<context::Prices>,
    steering: &'a AtomicBool,
    context_config: ContextConfig,
    max_parallel: usize,
    /// A step's "before" snapshot was taken; its "after" is due when its calls settle
    /// (`checkpoint.rs`).
    snapshot_pending: bool,
    metrics: &'a crate::metrics::Metrics,
}

impl<'a> Run<'a> {
    /// The model the run calls (none for an agent of mode `acp`).
    fn model(&self) -> Result<&'a Resolved, End> {
        self.resolved.ok_or_else(|| {
            End::Internal("this agent is answered by an external ACP agent, not a model".into())
        })
    }

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
            // The user's words steered in join now, after the calls in flight: the model
            // answers them next, even when it had finished its answer (whose check against
            // the turn's schema waits for the answer after them).
            let steered = match self.join_steers().await {
                Ok(steered) => steered,
                Err(end) => return end,
            };
            if answered_without_tools && !steered {
                match self.check_final_answer().await {
                    Ok(true) => return End::Completed,
                    // The retry is the next model step.
                    Ok(false) => {}
                    Err(end) => return end,
                }
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
                    // A paused answer goes on in the next step, which sends it back as
                    // it is (bounded by the steps like any other).
                    answered_without_tools = !outcome.had_calls && !outcome.paused;
                    then = outcome.then;
                }
                Err(end) => return end,
            }
        }
    }

    /// Applies the turn's output schema to the final answer: `true` when there is none or
    /// the answer is valid (kept parsed on the message); `false` when the corrective
    /// retry goes next (announced as a new step of the message, `messageStarted`).
    async fn check_final_answer(&mut self) -> Result<bool, End> {
        let Some(output) = self.output.as_mut() else {
            return Ok(true);
        };
        let check = output.as_mut().map_err(|why| End::Internal(why.clone()))?;
        let why = match check.check(&self.writer.step_text()) {
            structured::Checked::Valid(value) => {
                self.writer.set_structured_output(value);
                return Ok(true);
            }
            structured::Checked::Invalid(why) => why,
        };
        if check.retried {
            return Err(End::OutputInvalid(format!(
                "the model's final answer does not fit the turn's outputSchema, also after a corrective retry: {why}"
            )));
        }
        check.retried = true;
        self.correction = Some(check.correction(&why));
        tracing::debug!(message_id = self.writer.id(), "output schema retry: {why}");
        self.emit(EventKind::MessageStarted {
            message_id: self.writer.id().to_owned(),
            message: None,
        })
        .await?;
        Ok(false)
    }

    /// Whether the call is a `task` call.
    fn is_task(&self, id: &str) -> bool {
        self.writer.call_name(id) == Some(task::NAME)
    }

    fn stopped(&self) -> End {
        End::Stopped(self.control.reason().unwrap_or(StopReason::User))
    }

    /// Settles every call of the message that has no result yet, in order: run it, refuse
    /// it, or suspend the run for a client's answer; then takes the step's "after"
    /// snapshot when a call that could change files ran (also when the run ends among
    /// them).
    async fn settle_calls(&mut self) -> Result<(), End> {
        let settled = self.settle_each_call().await;
        self.after_changes().await;
        settled
    }

    async fn settle_each_call(&mut self) -> Result<(), End> {
        let calls = self.writer.unfinished_calls();
        let mut i = 0;
        while let Some((id, status)) = calls.get(i).cloned() {
            i += 1;
            // `task` calls ready side by side run side by side.
            if status == ToolCallStatus::Ready && self.is_task(&id) {
                let mut batch = vec![id];
                while let Some((next, ToolCallStatus::Ready)) = calls.get(i)
                    && self.is_task(next)
                {
                    batch.push(next.clone());
                    i += 1;
                }
                if batch.len() > 1 {
                    self.run_parallel(batch).await?;
                    continue;
                }
                let id = batch.swap_remove(0);
                self.run_call(&id, false).await?;
                continue;
            }
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
                    let resolution = self.writer.call_mut(&id).and_then(|c| c.resolution);
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
                ToolCallStatus::WaitingAnswer => self.settle_question(&id).await?,
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

    /// Ends the message and emits what the clients need to know; returns the outcome.
    async fn finish(mut self, end: End) -> RunOutcome {
        // A stop that came before the run decided how it ends wins over that end: a
        // client told `cancelled: true` sees the run cancelled.
        let end = match end {
            End::Suspended(_) | End::Stopped(_) => end,
            other if self.control.try_finish() => other,
            _ => self.stopped(),
        };
        let Ending {
            message_status,
            mut result,
            error,
            unfinished,
            closed_by_stop,
        } = ending(end, self.resolved.is_none());
        if let Some((status, text, keep_waiting)) = closed_by_stop {
            self.close_calls(status, text, keep_waiting).await;
        }
        if let Some((message, kind, _)) = &error {
            // Calls cut off with the stream get a result, so the transcript stays valid.
            self.close_calls(ToolCallStatus::Error, &unfinished, true)
                .await;
            self.writer.push_block(Block::Error {
                message: message.clone(),
                kind: (*kind).to_owned(),
            });
        }
        self.writer.set_status(message_status);
        let message_id = self.writer.id().to_owned();
        match self.writer.flush_finished(result.status).await {
            Ok(()) => result.status_saved = true,
            Err(e) => tracing::error!(message_id, "cannot save the finished message: {e}"),
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
            let structured_output = (message_status == MessageStatus::Done)
                .then(|| self.writer.message.structured_output.clone())
                .flatten();
            kinds.push(EventKind::MessageCompleted {
                message_id,
                status: message_status,
                structured_output,
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

/// How a run's end shows.
struct Ending {
    message_status: MessageStatus,
    result: RunOutcome,
    /// The error told (its text, kind, whether a retry may help).
    error: Option<(String, &'static str, bool)>,
    /// What the calls an error leaves unfinished are told.
    unfinished: String,
    /// A stop closes the unfinished calls this way (status, result, keep those waiting).
    closed_by_stop: Option<(ToolCallStatus, &'static str, bool)>,
}

/// How `end` shows: the message's status, the outcome, the error; `external`: an ACP
/// agent answered, not a model.
fn ending(end: End, external: bool) -> Ending {
    let mut ending = Ending {
        message_status: MessageStatus::Waiting,
        result: RunOutcome {
            reason: LoopFinishReason::Completed,
            error: None,
            status: SessionStatus::Idle,
            status_saved: false,
        },
        error: None,
        unfinished: "the model's answer broke off before this call was complete".to_owned(),
        closed_by_stop: None,
    };
    let mut set = |message_status, reason, error: Option<String>, status| {
        ending.message_status = message_status;
        ending.result.reason = reason;
        ending.result.error = error;
        ending.result.status = status;
    };
    use LoopFinishReason as R;
    use MessageStatus as M;
    use SessionStatus as S;
    match end {
        End::Completed => set(M::Done, R::Completed, None, S::Idle),
        End::MaxSteps => set(M::Waiting, R::MaxSteps, None, S::Idle),
        End::MaxTokens => set(M::Waiting, R::MaxTokens, None, S::Idle),
        End::Refused(words) => set(M::Done, R::Refused, Some(words), S::Idle),
        End::Suspended(Wait::Permission) => {
            set(M::Waiting, R::WaitingPermission, None, S::WaitingPermission);
        }
        End::Suspended(Wait::Question) => {
            set(M::Waiting, R::WaitingQuestion, None, S::WaitingQuestion);
        }
        End::Paused => set(M::Waiting, R::Paused, None, S::Paused),
        End::Stopped(StopReason::User) => {
            set(M::Cancelled, R::Cancelled, None, S::Idle);
            ending.closed_by_stop = Some((ToolCallStatus::Cancelled, CANCELLED_BY_USER, false));
        }
        End::Stopped(StopReason::Shutdown) => {
            let why = Some("the daemon is shutting down".to_owned());
            set(M::Interrupted, R::Cancelled, why, S::Idle);
            ending.closed_by_stop = Some((ToolCallStatus::Interrupted, INTERRUPTED, true));
        }
        End::Provider(e) => {
            let message = e.to_string();
            set(M::Error, R::Error, Some(message.clone()), S::Error);
            ending.error = Some((message, e.kind(), e.retryable()));
        }
        End::External(message) => {
            set(M::Error, R::Error, Some(message.clone()), S::Error);
            ending.error = Some((message, run_error::ACP_AGENT, true));
        }
        End::Limit(exceeded) => {
            let writer = if external {
                "the ACP agent"
            } else {
                "the model"
            };
            let message = exceeded.message(writer);
            set(M::Error, R::Error, Some(message.clone()), S::Error);
            ending.unfinished = exceeded.call_result(external);
            ending.error = Some((message, run_error::ANSWER_TOO_LARGE, false));
        }
        End::OutputInvalid(message) => {
            set(M::Error, R::Error, Some(message.clone()), S::Error);
            ending.error = Some((message, run_error::OUTPUT_SCHEMA_MISMATCH, false));
        }
        End::Internal(message) => {
            set(M::Error, R::Error, Some(message.clone()), S::Error);
            ending.error = Some((message, run_error::INTERNAL, false));
        }
    }
    ending
}

/// Gives the calls of a message a crash or kill left unfinished the results their
/// execution records kept (`ended`): a call's end is recorded at once, the message saved
/// with it at most 250 ms later. Returns true if anything changed.
pub fn restore_results(message: &mut Message, ended: &[crate::store::EndedTool]) -> bool {
    let ended: std::collections::HashMap<&str, &crate::store::EndedTool> =
        ended.iter().map(|e| (e.tool_call_id.as_str(), e)).collect();
    let mut changed = false;
    for block in &mut message.blocks {
        let Block::ToolCall(ToolCallBlock {
            tool_call_id,
            status,
            result,
            ..
        }) = block
        else {
            continue;
        };
        if status.is_finished() {
            continue;
        }
        let Some((record, ended_as)) = ended
            .get(tool_call_id.as_str())
            .and_then(|e| calls::status_of_name(&e.status).map(|s| (*e, s)))
        else {
            continue;
        };
        *status = ended_as;
        *result = Some(ToolCallResult {
            content: record.output.clone().unwrap_or_default(),
            is_error: ended_as != ToolCallStatus::Success,
            offload_path: record.offload_path.clone(),
            duration_ms: record.duration_ms.and_then(|d| u64::try_from(d).ok()),
        });
        changed = true;
    }
    changed
}

/// Repairs a message a crash or kill left unfinished: every call that was streaming,
/// ready, approved or running gets an "interrupted" result (calls waiting for a
/// permission or an answer stay answerable). Returns true if anything changed.
pub fn recover_calls(message: &mut Message) -> bool {
    let mut changed = false;
    for block in &mut message.blocks {
        if let Block::ToolCall(ToolCallBlock { status, result, .. }) = block
            && !status.is_finished()
            && !matches!(
                status,
                ToolCallStatus::WaitingPermission | ToolCallStatus::WaitingAnswer
            )
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
