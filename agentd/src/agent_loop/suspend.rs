//! Suspension: a call that needs a client's answer (a permission prompt, a question of the
//! model to the user) is saved with everything needed to show it, announced, and the run
//! ends. The answer, saved with the call, is applied by the next run of the message;
//! a cancel resolves what is still open.

use agent_proto::{
    EventKind, MessageStatus, PermissionPrompt, PermissionResolution, Question, QuestionResolution,
    Remember, ToolCallStatus,
};

use super::{End, Run, Wait, prompt_event};
use crate::store::{Grant, GrantScope};
use crate::tools::builtin::question;
use crate::tools::center::{Outcome, Prepared};
use crate::tools::command::display::display_form;
use crate::tools::permission::{Ask, Decision};

impl Run<'_> {
    /// Saves the call as waiting for a client and asks; the run then ends.
    pub(super) async fn suspend(&mut self, id: &str, prepared: &Prepared, ask: Ask) -> End {
        if !self.control.try_suspend() {
            // Stopped before it could ask: the stop wins, nothing is asked.
            return self.stopped();
        }
        if let Some(call) = self.writer.call_mut(id) {
            call.status = ToolCallStatus::WaitingPermission;
            call.permission_paths = prepared.resolved_paths();
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
            network_access: ask.network_access,
            outside_sandbox: ask.outside_sandbox,
        };
        if let Some(call) = self.writer.call_mut(id) {
            call.prompt = Some(Box::new(prompt.clone()));
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
            Ok(()) => End::Suspended(Wait::Permission),
            Err(end) => end,
        }
    }

    /// Asks again for a call still waiting for its answer (after a restart): the prompt
    /// that was sent is sent again; a call with none kept is decided anew.
    pub(super) async fn ask_again(&mut self, id: &str) -> End {
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
            Ok(()) => End::Suspended(Wait::Permission),
            Err(end) => end,
        }
    }

    /// Applies a grant: remembers it if asked (and allowed), marks the call approved.
    pub(super) async fn approve(&mut self, id: &str, remember: Remember) -> Result<(), End> {
        let scope = match remember {
            Remember::Once => None,
            Remember::Session => Some(GrantScope::Session),
            Remember::Always => Some(GrantScope::Always),
        };
        // Remembered as the prompt showed it: keyed by its paths, not by where the
        // arguments resolve now.
        let shown = self.permission_paths(id);
        if let Some(scope) = scope
            && let Ok((prepared, ctx)) = self.prepare(id).await
            && let Some(prompted) = self.tools.as_prompted(&prepared, shown.as_deref(), &ctx)
        {
            let grants = self.store.grants_for(&self.agent.id).await?;
            if let Decision::Ask(ask) = self.tools.decide(self.agent, &prompted, &grants) {
                for (level, key) in &ask.grant_keys {
                    let grant = Grant {
                        scope,
                        level: *level,
                        key: key.clone(),
                    };
                    self.store.add_grant(&self.agent.id, &grant).await?;
                }
            }
        }
        if let Some(call) = self.writer.call_mut(id) {
            call.status = ToolCallStatus::Approved;
        }
        self.writer.flush().await?;
        Ok(())
    }

    /// Gives every unfinished call a synthetic result (so the transcript stays valid),
    /// except calls still waiting for an answer (to a prompt or a question) when
    /// `keep_waiting`. An unanswered prompt or question is resolved as cancelled.
    pub(super) async fn close_calls(
        &mut self,
        status: ToolCallStatus,
        text: &str,
        keep_waiting: bool,
    ) {
        for (id, current) in self.writer.unfinished_calls() {
            let waiting = matches!(
                current,
                ToolCallStatus::WaitingPermission | ToolCallStatus::WaitingAnswer
            );
            if waiting && keep_waiting {
                continue;
            }
            // An answer the user gave before the stop (acknowledged already) is applied,
            // never turned into a decline: a question is answered once.
            let answered = current == ToolCallStatus::WaitingAnswer
                && self
                    .writer
                    .call_mut(&id)
                    .and_then(|call| call.answer.as_ref())
                    .is_some_and(|answer| !answer.cancelled);
            if answered {
                if self.settle_question(&id).await.is_err() {
                    tracing::warn!(tool_call_id = id, "cannot save an answered question");
                }
                continue;
            }
            // One resolution per call: a prompt already answered is not resolved again.
            let resolved = match current {
                ToolCallStatus::WaitingPermission => self.cancel_prompt(&id),
                ToolCallStatus::WaitingAnswer => self.cancel_question(&id),
                _ => None,
            };
            if let Some(event) = resolved
                && self.emit(event).await.is_err()
            {
                tracing::warn!("cannot emit the resolution of a call while closing calls");
            }
            let text = if current == ToolCallStatus::WaitingAnswer {
                question::DECLINED
            } else {
                text
            };
            if self
                .settle(&id, Outcome::settled(status, text))
                .await
                .is_err()
            {
                tracing::warn!(tool_call_id = id, "cannot save the result of a closed call");
            }
        }
    }

    /// Resolves an unanswered prompt as cancelled; its event, or `None` when it was
    /// answered already.
    fn cancel_prompt(&mut self, id: &str) -> Option<EventKind> {
        let call = self.writer.call_mut(id)?;
        if call.resolution.is_some() {
            return None;
        }
        call.resolution = Some(PermissionResolution {
            granted: false,
            remember: Remember::Once,
            cancelled: true,
        });
        Some(EventKind::PermissionResolved {
            message_id: self.writer.id().to_owned(),
            tool_call_id: id.to_owned(),
            granted: false,
            remember: Remember::Once,
            cancelled: true,
        })
    }

    /// Resolves an unanswered question as cancelled; its event, or `None` when it was
    /// answered already.
    fn cancel_question(&mut self, id: &str) -> Option<EventKind> {
        let call = self.writer.call_mut(id)?;
        if call.answer.is_some() {
            return None;
        }
        call.answer = Some(Box::new(QuestionResolution {
            cancelled: true,
            ..QuestionResolution::default()
        }));
        Some(EventKind::QuestionResolved {
            message_id: self.writer.id().to_owned(),
            tool_call_id: id.to_owned(),
            answers: Vec::new(),
            declined: false,
            cancelled: true,
        })
    }

    /// Saves a question call as waiting for the user and asks; the run then ends.
    pub(super) async fn suspend_question(&mut self, id: &str, prepared: &Prepared) -> End {
        let questions = match question::parse_questions(&prepared.args) {
            Ok(q) => q,
            Err(message) => {
                let outcome = Outcome::settled(ToolCallStatus::Error, message);
                return match self.settle(id, outcome).await {
                    Ok(()) => End::Internal("a question was settled instead of asked".into()),
                    Err(end) => end,
                };
            }
        };
        if !self.control.try_suspend() {
            return self.stopped();
        }
        if let Some(call) = self.writer.call_mut(id) {
            call.status = ToolCallStatus::WaitingAnswer;
            call.questions = Some(questions.clone());
        }
        self.announce_question(id, questions).await
    }

    /// Marks the message waiting, saves it and sends `questionRequested`.
    async fn announce_question(&mut self, id: &str, questions: Vec<Question>) -> End {
        self.writer.set_status(MessageStatus::Waiting);
        if let Err(e) = self.writer.flush().await {
            return e.into();
        }
        let event = EventKind::QuestionRequested {
            message_id: self.writer.id().to_owned(),
            tool_call_id: id.to_owned(),
            questions,
        };
        match self.emit(event).await {
            Ok(()) => End::Suspended(Wait::Question),
            Err(end) => end,
        }
    }

    /// Settles a question call waiting for its answer: with the answer saved with it
    /// (answered, declined, cancelled), or by asking again when there is none yet (a run
    /// continued after a restart).
    pub(super) async fn settle_question(&mut self, id: &str) -> Result<(), End> {
        let kept = self
            .writer
            .call_mut(id)
            .map(|call| (call.questions.clone(), call.answer.clone()));
        let Some((questions, answer)) = kept else {
            return Ok(());
        };
        let questions = questions.unwrap_or_default();
        let Some(answer) = answer else {
            if !self.control.try_suspend() {
                return Err(self.stopped());
            }
            return Err(self.announce_question(id, questions).await);
        };
        let content = question::result_text(&questions, &answer);
        let outcome = if answer.cancelled {
            Outcome::settled(ToolCallStatus::Cancelled, content)
        } else if answer.declined {
            Outcome::settled(ToolCallStatus::Denied, content)
        } else {
            Outcome {
                status: ToolCallStatus::Success,
                content,
                is_error: false,
                offload_path: None,
                duration_ms: 0,
            }
        };
        self.settle(id, outcome).await
    }
}
