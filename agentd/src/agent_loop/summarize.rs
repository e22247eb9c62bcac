//! The context of a model step: fitting the request into the window, and summarizing
//! earlier rounds first when the context is filling up (see `context::summary`).

use std::sync::PoisonError;

use agent_proto::{EventKind, Message};

use super::{End, Run};
use crate::context::{self, ContextInput, Prepared, summary};
use crate::profiles::PromptFrame;
use crate::provider::{ProviderError, ProviderRequest, Resolved, ToolSpec, complete};
use crate::store::{Summary, now_ms};
use agent_proto::ModelInfo;

impl Run<'_> {
    fn context_input<'b>(
        &'b self,
        before: &'b [Message],
        specs: &'b [ToolSpec],
        summary: Option<&'b Summary>,
        frame: &'b PromptFrame,
        model: &'b ModelInfo,
    ) -> ContextInput<'b> {
        ContextInput {
            agent: self.agent,
            history: before,
            current: Some(&self.writer.message),
            model,
            tools: specs,
            summary,
            frame: Some(frame),
            prices: Some(self.prices),
        }
    }

    /// The request of the next model call, fitted into the window; summarizes first when
    /// due (a failed summary falls back to shrinking).
    pub(super) async fn prepare_context(
        &mut self,
        before: &[Message],
        specs: &[ToolSpec],
        summary: Option<Summary>,
        frame: &PromptFrame,
    ) -> Result<Prepared, End> {
        let resolved = self.model()?;
        let tracker = *self.tracker.lock().unwrap_or_else(PoisonError::into_inner);
        let prepared = context::prepare(
            self.context_input(before, specs, summary.as_ref(), frame, &resolved.model),
            tracker.calibration,
        );
        if !self.summary_due(&prepared, &resolved.model) {
            return Ok(prepared);
        }
        let input = self.context_input(before, specs, summary.as_ref(), frame, &resolved.model);
        let before_tokens = prepared.report.estimated_before;
        let keep = self.context_config.keep_rounds;
        let token = &self.control.token;
        let made = summarize(
            resolved,
            input,
            keep,
            before_tokens,
            tracker.calibration,
            token,
        );
        let (made, after) = match made.await {
            Ok(Some(made)) => made,
            Ok(None) => return Ok(prepared),
            Err(SummarizeError::Cancelled) => return Err(self.stopped()),
            Err(SummarizeError::Provider(e)) => {
                // Not again on the very next call: a provider that fails now likely fails
                // again at once.
                tracing::warn!(
                    agent_id = self.agent.id,
                    "summarizing failed, shrinking instead: {e}"
                );
                self.tracker
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .skip_next_check = true;
                return Ok(prepared);
            }
        };
        self.store.insert_summary(&made).await?;
        {
            let mut tracker = self.tracker.lock().unwrap_or_else(PoisonError::into_inner);
            tracker.skip_next_check = true;
            tracker.last_reported = None;
        }
        self.emit(summarized_event(self.writer.id(), &made)).await?;
        Ok(after)
    }

    /// Whether to summarize before this call (clears a pending skip).
    fn summary_due(&self, prepared: &Prepared, model: &ModelInfo) -> bool {
        if self.agent.settings.auto_summarize == Some(false) {
            return false;
        }
        let mut tracker = self.tracker.lock().unwrap_or_else(PoisonError::into_inner);
        if std::mem::take(&mut tracker.skip_next_check) {
            return false;
        }
        summary::due(
            prepared.report.estimated_before,
            tracker.last_reported,
            model,
            self.context_config.summarize_threshold,
        )
    }
}

/// The model's summary: its text, or why there is none.
async fn ask_for_summary(
    resolved: &Resolved,
    request: ProviderRequest,
) -> Result<String, ProviderError> {
    let text = complete(resolved.provider.as_ref(), request).await.text()?;
    let text = text.trim();
    if text.is_empty() {
        return Err(ProviderError::Malformed {
            provider: resolved.model.provider.clone(),
            raw: "the summary came back empty".into(),
        });
    }
    Ok(text.to_owned())
}

/// Why an on-demand summary was not made.
#[derive(Debug)]
pub enum SummarizeError {
    /// Stopped by a cancel.
    Cancelled,
    Provider(ProviderError),
}

/// A summary made on demand (`compactContext`): every round of `input`'s history but the
/// last `keep_rounds`, summarized by the model now, as the automatic path does before a
/// call. `Ok(None)`: there is nothing to summarize. The caller stores and announces it.
pub async fn summarize_now(
    resolved: &Resolved,
    input: ContextInput<'_>,
    keep_rounds: usize,
    calibration: context::tokens::Calibration,
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<Option<Summary>, SummarizeError> {
    let before_tokens = context::prepare(input, calibration).report.estimated_before;
    let made = summarize(
        resolved,
        input,
        keep_rounds,
        before_tokens,
        calibration,
        cancel,
    );
    Ok(made.await?.map(|(made, _)| made))
}

/// The `summarized` event of a summary made while `message_id` was the latest message.
pub fn summarized_event(message_id: &str, made: &Summary) -> EventKind {
    EventKind::Summarized {
        message_id: message_id.to_owned(),
        before_tokens: made.before_tokens,
        after_tokens: made.after_tokens,
        summarized_messages: made.summarized_messages,
        through_message_id: made.through_message_id.clone(),
    }
}

/// The one way a summary is made, automatic or on demand: the rounds of `input`'s history
/// but the last `keep_rounds` (`Ok(None)`: no more than that), written by the model, and
/// the request the summary leaves. `before_tokens` is the estimate without it.
async fn summarize(
    resolved: &Resolved,
    input: ContextInput<'_>,
    keep_rounds: usize,
    before_tokens: u64,
    calibration: context::tokens::Calibration,
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<Option<(Summary, Prepared)>, SummarizeError> {
    let Some((through, previous, messages)) = summary::plan(&input, keep_rounds) else {
        return Ok(None);
    };
    let request = summary::request(
        &resolved.model,
        previous,
        messages,
        context::budget(input.agent, input.frame, &resolved.model),
    );
    let before = input.history;
    let hidden =
        context::visible(before, input.agent.context_edge.as_deref(), input.summary).hidden_by_edge;
    let text = tokio::select! {
        biased;
        _ = cancel.cancelled() => return Err(SummarizeError::Cancelled),
        text = ask_for_summary(resolved, request) => text.map_err(SummarizeError::Provider)?,
    };
    let mut made = Summary {
        agent_id: input.agent.id.clone(),
        through_message_id: before[through].id.clone(),
        text,
        summarized_messages: (through + 1 - hidden) as u64,
        before_tokens,
        after_tokens: 0,
        created_at: now_ms(),
    };
    let after = context::prepare(
        ContextInput {
            summary: Some(&made),
            ..input
        },
        calibration,
    );
    made.after_tokens = after.report.estimated_before;
    Ok(Some((made, after)))
}
