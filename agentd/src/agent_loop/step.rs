//! One model call of a run: the request is prepared, the answer streamed into the
//! assistant message and out as events, and the calls it made are completed (or refused
//! when the answer was cut or refused) for the loop to settle.

use std::sync::PoisonError;

use agent_proto::{EventKind, HookEvent, ToolCallStatus};
use futures::StreamExt;

use super::writer::Piece;
use super::{End, Run, caps, legacy};
use crate::context;
use crate::provider::{FinishReason, ProviderError, ProviderEvent};
use crate::tools::center::{Outcome, parse_arguments};

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
pub(super) struct StepOutcome {
    pub(super) had_calls: bool,
    /// The provider paused the answer (Anthropic `pause_turn`): the next step sends it
    /// back for the model to go on.
    pub(super) paused: bool,
    pub(super) then: Option<End>,
}

/// The result a call gets when the output limit cut its arguments.
const ARGUMENTS_CUT: &str = "not run: your answer reached the output token limit while you were writing this call's arguments, so they are incomplete. Write the call again, with shorter arguments if you can (for example, write a large file in parts).";

/// The result a call gets when the provider refused the answer that made it.
const ANSWER_REFUSED: &str = "not run: the provider refused the answer this call was part of";

impl Run<'_> {
    /// One model call: the request prepared, the answer streamed into the message and out
    /// as events, its calls completed (or refused when the answer was cut or refused).
    pub(super) async fn model_step(&mut self) -> Result<StepOutcome, End> {
        let resolved = self.model()?;
        self.writer.begin_step();
        self.budget.new_answer();
        let (request, specs, sent_estimate) = self.step_request().await?;
        let mut step = StepState {
            calls: Vec::new(),
            legacy: context::uses_legacy_tools(&resolved.model, &specs)
                .then(legacy::LegacyParser::new),
            malformed: Vec::new(),
            reported_input: None,
            finish: None,
            answered: false,
        };
        self.stream_answer(request, &mut step).await?;
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
        let answered = step.answered;
        let paused = finish == Some(FinishReason::Paused);
        self.complete_calls(step, finish.as_ref()).await?;
        // A step that did not call tools ends the run, and the run's end saves the message
        // at once (`Run::finish`). One that did is saved before anything slow: as the
        // first of its calls starts to run (`MessageWriter::record_start`), or at a prompt
        // or a question; only a `beforeTool` hook runs before those, and may take long, so
        // with one the step is saved here. A save here in every case was one more store
        // round trip on every turn.
        let hooks_first = !self
            .hooks
            .matching(self.agent, HookEvent::BeforeTool, None)
            .is_empty();
        if had_calls && hooks_first {
            self.writer.flush().await?;
        }
        let then = match finish {
            Some(FinishReason::Length) => Some(End::MaxTokens),
            Some(FinishReason::Refused(words)) => Some(End::Refused(words)),
            Some(FinishReason::Other(reason)) if !answered && !had_calls => {
                return Err(End::Provider(ProviderError::InStream {
                    provider: resolved.model.provider.clone(),
                    raw: format!("the model stopped without an answer (finish reason {reason})"),
                }));
            }
            _ => None,
        };
        Ok(StepOutcome {
            had_calls,
            paused,
            then,
        })
    }

    /// The request of this step: what it continues (the history before the message being
    /// written, the summary in force), the tools offered (their cap's notice sent once a
    /// run), the frame as of now (profile, date, workspace, git state), fitted into the
    /// model's window. With the tools it offers and its estimate in tokens.
    async fn step_request(
        &mut self,
    ) -> Result<
        (
            crate::provider::ProviderRequest,
            Vec<crate::provider::ToolSpec>,
            u64,
        ),
        End,
    > {
        let resolved = self.model()?;
        let history = tokio::select! {
            biased;
            _ = self.control.token.cancelled() => return Err(self.stopped()),
            history = self.store.history(&self.agent.id) => history?,
        };
        let summaries = self.store.summaries(&self.agent.id).await?;
        let current_id = self.writer.id().to_owned();
        let selection =
            context::select(&history, summaries, context::Point::Continuing(&current_id)).map_err(
                |id| End::Internal(format!("the message {id} being written is not stored")),
            )?;
        // The first request waits a little for MCP servers still listing their tools, and
        // says which are missing.
        if self.control.steps() == 0 {
            let missing = tokio::select! {
                biased;
                _ = self.control.token.cancelled() => return Err(self.stopped()),
                missing = self.tools.wait_for_mcp(self.agent) => missing,
            };
            if let Some(message) = missing {
                self.emit(EventKind::Error {
                    message_id: Some(self.writer.id().to_owned()),
                    message,
                    kind: agent_proto::run_error::TOOLS_LEFT_OUT.to_owned(),
                    retryable: false,
                    retry: None,
                })
                .await?;
            }
        }
        let offer = self.tools.offer(self.agent);
        if let Some(message) = offer.left_out.filter(|_| self.control.steps() == 0) {
            let message_id = Some(self.writer.id().to_owned());
            let kind = agent_proto::run_error::TOOLS_LEFT_OUT.to_owned();
            self.emit(EventKind::Error {
                message_id,
                message,
                kind,
                retryable: false,
                retry: None,
            })
            .await?;
        }
        let frame = self
            .tools
            .frame(self.agent)
            .await
            .map_err(|e| End::Internal(e.to_string()))?;
        let prepared = self
            .prepare_context(selection.before, &offer.specs, selection.summary, &frame)
            .await?;
        if let Some(detail) = context::budget::overflow(&prepared.report) {
            let provider = resolved.model.provider.clone();
            return Err(End::Provider(ProviderError::BadRequest {
                provider,
                detail,
            }));
        }
        let estimate = prepared.estimate.total();
        let mut request = prepared.request;
        request.options = self.options.clone();
        // The corrective retry of a misfit final answer: sent once, after that answer.
        if let Some(correction) = self.correction.take() {
            request.messages.push(crate::provider::ChatMessage::User {
                content: correction,
                images: Vec::new(),
                documents: Vec::new(),
            });
        }
        Ok((request, offer.specs, estimate))
    }

    /// Streams the model's answer to `request` into the message and out as events, with
    /// the message's timed saves beside it, until it ends, fails, goes past a cap (the
    /// arguments that arrived stay with their calls, which do not run) or the run stops.
    async fn stream_answer(
        &mut self,
        request: crate::provider::ProviderRequest,
        step: &mut StepState,
    ) -> Result<(), End> {
        let resolved = self.model()?;
        // Deltas already waiting are joined into one (never waiting for more).
        let mut stream = super::coalesce::coalesce(resolved.provider.stream(request));
        let mut waits = super::waits::StreamWaits::new(&self.control.token);
        loop {
            waits.arm_save(self.writer.flush_due());
            tokio::select! {
                biased;
                () = &mut waits.stopped => return Err(self.stopped()),
                () = &mut waits.save, if waits.save_armed() => {
                    self.writer.save_soon()?;
                }
                item = stream.next() => match item {
                    None => return Ok(()),
                    Some(Err(e)) => return Err(End::Provider(e)),
                    Some(Ok(event)) => match self.apply(event, step).await {
                        Ok(()) => {}
                        Err(End::Limit(exceeded)) => {
                            for (_, id, raw) in std::mem::take(&mut step.calls) {
                                if let Some(call) = self.writer.call_mut(&id)
                                    && call.raw_arguments.is_none()
                                    && !raw.is_empty()
                                {
                                    call.raw_arguments = Some(raw);
                                }
                            }
                            return Err(End::Limit(exceeded));
                        }
                        Err(end) => return Err(end),
                    },
                },
            }
        }
    }

    /// The calls of a streamed answer, in the provider's order: completed for the loop to
    /// settle, or given a result at once when the output limit cut their arguments or the
    /// provider refused the answer; legacy calls that could not be read get one saying
    /// how to write them.
    async fn complete_calls(
        &mut self,
        mut step: StepState,
        finish: Option<&FinishReason>,
    ) -> Result<(), End> {
        step.calls.sort_by_key(|(index, _, _)| *index);
        for (_, id, raw) in step.calls {
            let cut = finish == Some(&FinishReason::Length)
                && serde_json::from_str::<serde_json::Value>(&raw).is_err();
            let refused = matches!(finish, Some(FinishReason::Refused(_)));
            if cut || refused {
                if let Some(call) = self.writer.call_mut(&id) {
                    call.raw_arguments = Some(raw);
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
                call.raw_arguments = Some(raw);
            }
            let message = format!(
                "could not read your function call ({error}); write it as <function_call>{{\"name\": \"TOOL\", \"arguments\": {{...}}}}</function_call>"
            );
            self.settle(&id, Outcome::settled(ToolCallStatus::Error, message))
                .await?;
        }
        Ok(())
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
                self.budget.call().map_err(End::Limit)?;
                let id = format!("call_{}", uuid::Uuid::new_v4().simple());
                let id = self.writer.start_call(&id, &name);
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
                self.budget.call().map_err(End::Limit)?;
                let id = format!("call_{}", uuid::Uuid::new_v4().simple());
                let name = "invalid_function_call".to_owned();
                let id = self.writer.start_call(&id, &name);
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

    async fn apply(&mut self, event: ProviderEvent, step: &mut StepState) -> Result<(), End> {
        let message_id = self.writer.id().to_owned();
        let calls = &mut step.calls;
        // Past a cap, what fits of the piece is applied, then the answer stops.
        let mut over = None;
        let kind = match event {
            ProviderEvent::TextDelta(mut delta) => {
                over = self.budget.text(&mut delta).err();
                if let Some(parser) = step.legacy.as_mut() {
                    // The tags' text counts as the message's: a call's arguments are in it.
                    let events = parser.push(&delta);
                    let open = parser.open_call_bytes();
                    for event in events {
                        self.apply_legacy(event, step).await?;
                    }
                    self.budget.open_arguments(open).map_err(End::Limit)?;
                    return over.map_or(Ok(()), |e| Err(End::Limit(e)));
                }
                if delta.is_empty() {
                    return over.map_or(Ok(()), |e| Err(End::Limit(e)));
                }
                step.answered = true;
                self.writer.append(Piece::Text, &delta);
                EventKind::TextDelta { message_id, delta }
            }
            ProviderEvent::ReasoningDelta(mut delta) => {
                over = self.budget.text(&mut delta).err();
                if delta.is_empty() {
                    return over.map_or(Ok(()), |e| Err(End::Limit(e)));
                }
                self.writer.append(Piece::Reasoning, &delta);
                EventKind::ReasoningDelta { message_id, delta }
            }
            // Opaque data to send back, kept in the message and never shown as text.
            event @ (ProviderEvent::ReasoningSignature(_)
            | ProviderEvent::RedactedReasoning(_)
            | ProviderEvent::ReasoningDetails(_)
            | ProviderEvent::ToolCallSignature { .. }) => return self.keep_opaque(event, calls),
            ProviderEvent::ToolCallStart { index, id, name } => {
                self.budget.call().map_err(End::Limit)?;
                let id = self.writer.start_call(&id, &name);
                calls.push((index, id.clone(), String::new()));
                // Saved with the stream's next timed save, like its text: a save here
                // cost a copy of the whole message per call.
                EventKind::ToolCallStarted {
                    message_id,
                    tool_call_id: id,
                    name,
                }
            }
            ProviderEvent::ToolCallArgsDelta { index, delta } => {
                let (kind, past) = self.arguments_delta(message_id, calls, index, delta)?;
                over = past;
                kind
            }
            ProviderEvent::Usage(usage) => {
                self.metrics.tokens(usage.input_tokens, usage.output_tokens);
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
            } => retry_notice(message_id, attempt, max, delay, &error),
            ProviderEvent::Finish(reason) => {
                step.finish = Some(reason);
                return Ok(());
            }
        };
        self.emit(kind).await?;
        over.map_or(Ok(()), |e| Err(End::Limit(e)))
    }

    /// What the provider needs back and no client is shown (signatures, encrypted or
    /// structured reasoning), kept in the message as far as the caps let.
    fn keep_opaque(
        &mut self,
        event: ProviderEvent,
        calls: &[(usize, String, String)],
    ) -> Result<(), End> {
        match event {
            ProviderEvent::ReasoningSignature(signature) => {
                self.budget
                    .whole(signature.len(), false)
                    .map_err(End::Limit)?;
                self.writer.sign_reasoning(signature);
            }
            ProviderEvent::RedactedReasoning(data) => {
                self.budget.whole(data.len(), false).map_err(End::Limit)?;
                self.writer.push_redacted_reasoning(data);
            }
            ProviderEvent::ReasoningDetails(details) => {
                let size = details.to_string().len();
                self.budget.whole(size, false).map_err(End::Limit)?;
                self.writer.add_reasoning_details(details);
            }
            ProviderEvent::ToolCallSignature { index, signature } => {
                let id = calls
                    .iter()
                    .find(|(i, _, _)| *i == index)
                    .map(|c| c.1.clone());
                if let Some(call) = id.and_then(|id| self.writer.call_mut(&id)) {
                    call.signature = Some(signature);
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// A piece of the arguments of the call the provider numbers `index`: kept with it,
    /// as far as the caps let (past them, what arrived stays on the call, which does not
    /// run, and the cap is returned with the event).
    fn arguments_delta(
        &mut self,
        message_id: String,
        calls: &mut [(usize, String, String)],
        index: usize,
        mut delta: String,
    ) -> Result<(EventKind, Option<caps::Exceeded>), End> {
        // The latest call is the one most deltas are for.
        let Some((_, id, raw)) = calls.iter_mut().rev().find(|(i, _, _)| *i == index) else {
            return Err(End::Provider(ProviderError::Malformed {
                provider: self.model()?.model.provider.clone(),
                raw: format!("arguments for tool call {index}, which was never started"),
            }));
        };
        let over = self.budget.arguments(raw.len(), &mut delta).err();
        raw.push_str(&delta);
        if over.is_some()
            && let Some(call) = self.writer.call_mut(id)
        {
            call.raw_arguments = Some(std::mem::take(raw));
        }
        let kind = EventKind::ToolCallArgsDelta {
            message_id,
            tool_call_id: id.clone(),
            delta,
        };
        Ok((kind, over))
    }

    /// A call's arguments are complete: parse them and tell the clients.
    async fn complete_call(&mut self, id: &str, raw: &str) -> Result<(), End> {
        let parsed = parse_arguments(raw);
        let Some(call) = self.writer.call_mut(id) else {
            return Ok(());
        };
        call.arguments = parsed.value.clone();
        call.raw_arguments = parsed.raw.clone();
        call.status = ToolCallStatus::Ready;
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
}

/// The `error` event a retry of the model call is told by (the run goes on).
fn retry_notice(
    message_id: String,
    attempt: u32,
    max: u32,
    delay: std::time::Duration,
    error: &ProviderError,
) -> EventKind {
    tracing::info!(attempt, max, ?delay, "retrying the model call: {error}");
    EventKind::Error {
        message_id: Some(message_id),
        message: format!(
            "retrying in {:.1} s (retry {attempt} of {max}): {error}",
            delay.as_secs_f64()
        ),
        kind: error.kind().to_owned(),
        retryable: true,
        retry: Some(agent_proto::RetryNotice {
            attempt,
            max,
            delay_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
        }),
    }
}
