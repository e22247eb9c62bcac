//! `compactContext`: the conversation summarized now, on a client's request, by the same
//! plan, request and storage as the automatic summary before a model call
//! (`agent_loop::summarize_now`). It holds the agent's run slot while the model writes
//! the summary: a send meanwhile is busy (or queued), and `cancelLoop` stops it.

use std::sync::{Arc, PoisonError};

use agent_proto::{AgentMode, CompactContextResult};

use agent_proto::Agent;

use super::{Session, SessionError, SessionManager, provider_not_configured};
use crate::agent_loop::{self, RunControl, SummarizeError};
use crate::context;
use crate::provider::Resolved;
use crate::store::Summary;

impl SessionManager {
    /// Summarizes every round of the agent's conversation but the last `keep_rounds`
    /// (default 1), stores the summary and tells every client (`summarized`).
    pub async fn compact(
        self: &Arc<Self>,
        agent_id: &str,
        keep_rounds: Option<u32>,
    ) -> Result<CompactContextResult, SessionError> {
        let keep = keep_rounds.unwrap_or(1);
        if keep == 0 {
            return Err(SessionError::InvalidParams(
                "keepRounds must be at least 1 (the round being answered is never summarized)"
                    .into(),
            ));
        }
        let session = self.session(agent_id).await?;
        let agent = self.get_agent(agent_id).await?;
        if agent.mode == AgentMode::Acp {
            return Err(SessionError::NotSupported(
                "compacting the context of an agent of mode \"acp\" (its external agent keeps its own)".into(),
            ));
        }
        let resolved = self
            .providers
            .resolve(&agent.provider, &agent.model)
            .ok_or_else(|| provider_not_configured(&self.providers, &agent.provider))?;
        let history = self.store.history(agent_id).await?;
        let last = history
            .last()
            .map(|m| m.id.clone())
            .ok_or_else(|| SessionError::InvalidState("the conversation is empty".into()))?;
        let slot = self.claim_run_slot(&session, &last).await?;
        slot.control().mark_started();
        let made = self
            .summary_now(&session, &agent, &resolved, &history, keep, slot.control())
            .await?;
        self.store.insert_summary(&made).await?;
        {
            let mut tracker = session
                .tracker
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            tracker.last_reported = None;
        }
        session
            .emit(agent_loop::summarized_event(&last, &made))
            .await;
        drop(slot);
        // A message queued while the summary was written runs now.
        self.run_queue(agent_id).await;
        Ok(CompactContextResult {
            through_message_id: made.through_message_id,
            summarized_messages: made.summarized_messages,
            before_tokens: made.before_tokens,
            after_tokens: made.after_tokens,
        })
    }

    /// The summary `compact` asks for, made under the run slot (`control`: a cancel
    /// stops it).
    async fn summary_now(
        &self,
        session: &Session,
        agent: &Agent,
        resolved: &Resolved,
        history: &[agent_proto::Message],
        keep: u32,
        control: &RunControl,
    ) -> Result<Summary, SessionError> {
        let summaries = self.store.summaries(&agent.id).await?;
        let selection = context::select(history, summaries, context::Point::Next)
            .map_err(SessionError::MessageNotFound)?;
        let (specs, frame) = self.request_frame(agent).await?;
        let calibration = session.calibration();
        let input = context::ContextInput {
            agent,
            history: selection.before,
            current: selection.current,
            model: &resolved.model,
            tools: &specs,
            summary: selection.summary.as_ref(),
            frame: Some(&frame),
            prices: None,
        };
        let made = agent_loop::summarize_now(
            resolved,
            input,
            keep as usize,
            calibration,
            &control.stopped_token(),
        )
        .await;
        let cancelled =
            || SessionError::InvalidState("the summary was cancelled (cancelLoop)".into());
        match made {
            // A cancel that came as the summary did wins: the client was told it took.
            Ok(Some(_)) if control.is_stopped() => Err(cancelled()),
            Ok(Some(made)) => Ok(made),
            Ok(None) => Err(SessionError::InvalidState(format!(
                "nothing to summarize: the conversation has no more than {keep} round(s) to keep"
            ))),
            Err(SummarizeError::Cancelled) => Err(cancelled()),
            Err(SummarizeError::Provider(e)) => Err(SessionError::ProviderFailed(format!(
                "the model could not summarize: {e}"
            ))),
        }
    }
}
