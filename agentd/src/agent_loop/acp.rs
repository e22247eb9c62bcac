//! The run of an agent of mode `acp`: an external ACP agent answers instead of a model.
//!
//! A new message sends the user's message as `session/prompt` and maps the turn's
//! `session/update` stream onto the message (text, thoughts, tool calls with their status,
//! the plan). A `session/request_permission`, or an `fs/*` request agentd's rules ask
//! about, becomes a waiting tool call like any prompt of agentd's own loop: saved,
//! announced, answerable from any client; the run ends suspended and parks the turn with
//! the link (the external agent keeps waiting). The answer starts the next run of the
//! message, which hands the answer to the waiting request and goes on reading the turn.
//! A cancel sends `session/cancel`, answers what waits as cancelled and lets the agent
//! finish the turn.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agent_client_protocol::v1::schema::{
    ContentBlock, ImageContent, PermissionOptionKind, Plan, PlanEntryStatus,
    RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse, ResourceLink,
    SessionUpdate, StopReason, ToolCall, ToolCallContent, ToolCallStatus as AcpStatus,
    ToolCallUpdate, ToolKind,
};
use agent_proto::{
    Block, EventKind, MessageStatus, PermissionPrompt, PlanItem, PlanStatus, Role, ToolCallBlock,
    ToolCallStatus,
};

use futures::StreamExt;

use super::caps::json_len;
use super::coalesce::Joinable;
use super::{CANCELLED_BY_USER, DENIED_BY_USER, End, Piece, Run, Wait, prompt_event};
use crate::acp_backend::{AcpAgents, Command, Inbound, Link, Pending, Turn};
use crate::store::{ToolExecution, ToolRecord, now_ms};
use crate::tools::center::Outcome;
use crate::tools::command::display::display_form;

mod fs;
mod map;

use map::{kind_name, level_of, option_kind_name, permission_outcome, result_text};

/// The result of a call whose turn ended before its answer could be given.
const TURN_GONE: &str = "the external agent's turn ended before this answer could be given (the daemon or the agent restarted); send a new message to go on";
/// How long a cancelled turn gets to end on its own.
const CANCEL_GRACE: Duration = Duration::from_secs(10);
/// In a burst of chunks, how long one waits for more before it goes out (the turn's
/// answer, a call or a request of the agent ends the wait at once).
const CHUNK_HOLD: Duration = Duration::from_millis(5);
/// The same when the daemon is stopping.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// What a stopped turn does with the updates the agent still sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Keep {
    /// Applied, as any (a cancel keeps the agent's last words).
    Updates,
    /// Dropped (the turn went past a cap).
    Nothing,
}

/// What the turn does after something the external agent sent.
enum Next {
    /// It goes on.
    Go,
    /// It waits for a client's answer to this call.
    Suspend(String),
    /// It ended so.
    Ended(End),
}

/// The external agent's message and thought chunks join as a model's deltas do: text to
/// text of the same kind, nothing else.
impl Joinable for Inbound {
    fn join(&mut self, mut next: Inbound) -> Option<Inbound> {
        let same =
            matches!((chunk_of(self), chunk_of(&mut next)), (Some((a, _)), Some((b, _))) if a == b);
        if !same {
            return Some(next);
        }
        let more = chunk_of(&mut next).map(|(_, t)| std::mem::take(t));
        if let (Some((_, text)), Some(more)) = (chunk_of(self), more) {
            text.push_str(&more);
        }
        None
    }

    fn delta_len(&self) -> Option<usize> {
        match self {
            Inbound::Update(update) => match &**update {
                SessionUpdate::AgentMessageChunk(chunk)
                | SessionUpdate::AgentThoughtChunk(chunk) => match &chunk.content {
                    ContentBlock::Text(text) => Some(text.text.len()),
                    _ => None,
                },
                _ => None,
            },
            _ => None,
        }
    }
}

/// The text of a message or thought chunk, and which of the two it is.
fn chunk_of(item: &mut Inbound) -> Option<(Piece, &mut String)> {
    let Inbound::Update(update) = item else {
        return None;
    };
    let (piece, chunk) = match &mut **update {
        SessionUpdate::AgentMessageChunk(chunk) => (Piece::Text, chunk),
        SessionUpdate::AgentThoughtChunk(chunk) => (Piece::Reasoning, chunk),
        _ => return None,
    };
    match &mut chunk.content {
        ContentBlock::Text(text) => Some((piece, &mut text.text)),
        _ => None,
    }
}

/// What a run of an agent of mode `acp` needs.
pub struct AcpRun {
    pub agents: Arc<AcpAgents>,
    pub command: Command,
    pub workspace: PathBuf,
}

impl Run<'_> {
    pub(super) async fn drive_acp(&mut self, acp: &AcpRun) -> End {
        let live = acp.agents.live(&self.agent.id);
        let parked = live
            .as_ref()
            .and_then(|l| l.take_turn(self.writer.id()).map(|t| (l.clone(), t)));
        let (link, mut turn) = match parked {
            Some(parked) => parked,
            None if self.writer.message.status == MessageStatus::Pending => {
                match self.start_turn(acp).await {
                    Ok(started) => started,
                    Err(end) => return end,
                }
            }
            // A message whose turn is gone (a restart): what still waits cannot be given.
            None => return self.orphaned().await,
        };
        // The turn is the answer: the calls it made before a prompt suspended it count.
        let calls = self
            .writer
            .message
            .blocks
            .iter()
            .filter(|b| matches!(b, Block::ToolCall(ToolCallBlock { .. })))
            .count();
        self.budget.answer_goes_on(calls);
        if self.control.is_stopped() {
            return self.cancel_turn(&link, turn, Keep::Updates).await;
        }
        match self.give_answers(&mut turn).await {
            Ok(None) => {}
            Ok(Some(id)) => return self.suspend_turn(&link, turn, &id).await,
            Err(end) => {
                turn.cancel_pending();
                link.end_turn();
                return end;
            }
        }
        let mut waits = super::waits::StreamWaits::new(&self.control.token);
        loop {
            waits.arm_save(self.writer.flush_due());
            let item = tokio::select! {
                biased;
                () = &mut waits.stopped => return self.cancel_turn(&link, turn, Keep::Updates).await,
                () = &mut waits.save, if waits.save_armed() => {
                    if let Err(e) = self.writer.save_soon() {
                        return e.into();
                    }
                    continue;
                }
                item = turn.inbox.next() => item,
            };
            match self.on_inbound(&link, &mut turn, item).await {
                Ok(Next::Go) => {}
                Ok(Next::Suspend(id)) => return self.suspend_turn(&link, turn, &id).await,
                Ok(Next::Ended(end)) => return end,
                // The agent is told to stop; what it still sends goes past the cap.
                Err(End::Limit(exceeded)) => {
                    self.cancel_turn(&link, turn, Keep::Nothing).await;
                    return End::Limit(exceeded);
                }
                Err(end) => {
                    turn.cancel_pending();
                    link.end_turn();
                    return end;
                }
            }
        }
    }

    /// One thing the external agent sent during the turn (`None`: the connection ended).
    async fn on_inbound(
        &mut self,
        link: &Arc<Link>,
        turn: &mut Turn,
        item: Option<Inbound>,
    ) -> Result<Next, End> {
        let opened = |id: Option<String>| id.map_or(Next::Go, Next::Suspend);
        match item {
            None => Err(End::External(
                "the connection to the ACP agent ended".into(),
            )),
            Some(Inbound::Update(update)) => {
                self.apply_update(turn, *update).await?;
                Ok(Next::Go)
            }
            Some(Inbound::Permission(request, responder)) => {
                let id = self.permission_call(turn, &request).await?;
                let options = request.options;
                turn.pending
                    .insert(id.clone(), Pending::Permission { options, responder });
                Ok(Next::Suspend(id))
            }
            Some(Inbound::Read(request, responder)) => {
                Ok(opened(self.fs_read(turn, request, responder).await?))
            }
            Some(Inbound::Write(request, responder)) => {
                Ok(opened(self.fs_write(turn, request, responder).await?))
            }
            Some(Inbound::Done(Ok(response))) => {
                link.end_turn();
                turn.cancel_pending();
                Ok(Next::Ended(match response.stop_reason {
                    StopReason::EndTurn => End::Completed,
                    StopReason::MaxTokens => End::MaxTokens,
                    StopReason::MaxTurnRequests => End::MaxSteps,
                    StopReason::Refusal => End::Refused("the external agent refused".into()),
                    StopReason::Cancelled => self.stopped(),
                    _ => End::Completed,
                }))
            }
            Some(Inbound::Done(Err(e))) => {
                // A broken connection is most often the agent exiting: say so, with the
                // end of its stderr.
                let exited = tokio::time::timeout(Duration::from_secs(1), link.gone())
                    .await
                    .is_ok();
                Err(End::External(if exited {
                    format!(
                        "the ACP agent exited during the prompt{}",
                        link.stderr_tail()
                    )
                } else {
                    format!("the ACP agent failed the prompt: {e}{}", link.stderr_tail())
                }))
            }
            Some(Inbound::Gone(why)) => Err(End::External(why)),
        }
    }

    /// The link (started if need be, after the backoff its last exit earned) and a new
    /// turn prompting the user's message.
    async fn start_turn(&mut self, acp: &AcpRun) -> Result<(Arc<Link>, Turn), End> {
        let link = match acp.agents.next_start(&self.agent.id) {
            Ok(link) => link,
            Err(wait) => {
                if let Some(wait) = wait {
                    self.emit(EventKind::Error {
                        message_id: Some(self.writer.id().to_owned()),
                        message: format!(
                            "the ACP agent exited; starting it again in {} ms",
                            wait.as_millis()
                        ),
                        kind: agent_proto::run_error::ACP_AGENT.into(),
                        retryable: true,
                        retry: Some(agent_proto::RetryNotice {
                            attempt: 1,
                            max: 1,
                            delay_ms: u64::try_from(wait.as_millis()).unwrap_or(u64::MAX),
                        }),
                    })
                    .await?;
                    tokio::select! {
                        biased;
                        _ = self.control.token.cancelled() => return Err(self.stopped()),
                        _ = tokio::time::sleep(wait) => {}
                    }
                }
                let start = acp
                    .agents
                    .start(&self.agent.id, &acp.command, &acp.workspace);
                tokio::select! {
                    biased;
                    _ = self.control.token.cancelled() => return Err(self.stopped()),
                    link = start => link.map_err(End::External)?,
                }
            }
        };
        let content = self.prompt_content(link.images).await?;
        let mut turn = link.prompt(self.writer.id(), content);
        // Chunks forwarded one by one join as a model's deltas do (one event, one save).
        turn.wrap_inbox(|inbox| Box::pin(super::coalesce::coalesce(inbox).holding(CHUNK_HOLD)));
        Ok((link, turn))
    }

    /// The user message this answer answers, as ACP content.
    async fn prompt_content(&self, images: bool) -> Result<Vec<ContentBlock>, End> {
        let history = self.store.history(&self.agent.id).await?;
        let at = history
            .iter()
            .position(|m| m.id == self.writer.id())
            .unwrap_or(history.len());
        let Some(user) = history[..at].iter().rev().find(|m| m.role == Role::User) else {
            return Err(End::Internal("no user message precedes this answer".into()));
        };
        let mut content = Vec::new();
        for block in &user.blocks {
            match block {
                Block::Text { text } => content.push(ContentBlock::from(text.clone())),
                Block::Image { mime_type, path } if images => {
                    let bytes = tokio::fs::read(path).await.map_err(|e| {
                        End::Internal(format!("cannot read the attached image {path}: {e}"))
                    })?;
                    use base64::Engine;
                    let data = base64::engine::general_purpose::STANDARD.encode(bytes);
                    content.push(ContentBlock::Image(ImageContent::new(data, mime_type)));
                }
                Block::Image { path, .. } => content.push(ContentBlock::from(format!(
                    "[an image is attached at {path}; this agent does not take images]"
                ))),
                // Every ACP agent takes resource links: the stored copy, by its path.
                Block::Document {
                    mime_type,
                    path,
                    name,
                    size,
                } => content.push(ContentBlock::ResourceLink(
                    ResourceLink::new(name.clone(), format!("file://{path}"))
                        .mime_type(mime_type.clone())
                        .size(i64::try_from(*size).ok()),
                )),
                _ => {}
            }
        }
        Ok(content)
    }

    /// Hands the answers saved with the message's waiting calls to the requests that wait
    /// for them. `Some(id)`: a call still waits (unanswered), so the run suspends again.
    async fn give_answers(&mut self, turn: &mut Turn) -> Result<Option<String>, End> {
        for (id, status) in self.writer.unfinished_calls() {
            if status != ToolCallStatus::WaitingPermission {
                continue;
            }
            let resolution = self.writer.call_mut(&id).and_then(|c| c.resolution);
            let Some(resolution) = resolution else {
                if turn.pending.contains_key(&id) {
                    return Ok(Some(id));
                }
                self.settle(
                    &id,
                    Outcome::settled(ToolCallStatus::Interrupted, TURN_GONE),
                )
                .await?;
                continue;
            };
            match turn.pending.remove(&id) {
                Some(Pending::Permission { options, responder }) => {
                    let outcome = permission_outcome(&options, resolution);
                    if let Err(e) = responder.respond(RequestPermissionResponse::new(outcome)) {
                        tracing::debug!("cannot answer the ACP permission request: {e}");
                    }
                    if resolution.cancelled {
                        self.settle(
                            &id,
                            Outcome::settled(ToolCallStatus::Cancelled, CANCELLED_BY_USER),
                        )
                        .await?;
                    } else if resolution.granted {
                        // The external agent runs it; its updates tell how it ends.
                        if let Some(call) = self.writer.call_mut(&id) {
                            call.status = ToolCallStatus::Running;
                        }
                        self.writer.flush().await?;
                    } else {
                        self.settle(
                            &id,
                            Outcome::settled(ToolCallStatus::Denied, DENIED_BY_USER),
                        )
                        .await?;
                    }
                }
                Some(pending @ (Pending::Read { .. } | Pending::Write { .. })) => {
                    self.answer_fs(&id, pending, resolution).await?;
                }
                None => {
                    self.settle(
                        &id,
                        Outcome::settled(ToolCallStatus::Interrupted, TURN_GONE),
                    )
                    .await?;
                }
            }
        }
        Ok(None)
    }

    /// A message whose turn is gone: answers that cannot be given are settled, and the
    /// run ends (stopped, or with the reason).
    async fn orphaned(&mut self) -> End {
        if self.control.is_stopped() {
            return self.stopped();
        }
        let waiting: Vec<String> = self
            .writer
            .unfinished_calls()
            .into_iter()
            .filter(|(_, s)| *s == ToolCallStatus::WaitingPermission)
            .map(|(id, _)| id)
            .collect();
        for id in waiting {
            let answered = self
                .writer
                .call_mut(&id)
                .is_some_and(|c| c.resolution.is_some());
            if answered
                && let Err(end) = self
                    .settle(
                        &id,
                        Outcome::settled(ToolCallStatus::Interrupted, TURN_GONE),
                    )
                    .await
            {
                return end;
            }
        }
        End::External(TURN_GONE.into())
    }

    /// Saves the call as waiting (its prompt is on it already), parks the turn and ends.
    async fn suspend_turn(&mut self, link: &Arc<Link>, mut turn: Turn, id: &str) -> End {
        if !self.control.try_suspend() {
            return self.cancel_turn(link, turn, Keep::Updates).await;
        }
        let shown = self.writer.call_mut(id).and_then(|call| {
            call.status = ToolCallStatus::WaitingPermission;
            call.prompt
                .clone()
                .map(|p| (call.name.clone(), call.arguments.clone(), *p))
        });
        let Some((name, arguments, prompt)) = shown else {
            turn.cancel_pending();
            link.end_turn();
            return End::Internal(format!("the waiting call {id} is not in the message"));
        };
        self.writer.set_status(MessageStatus::Waiting);
        if let Err(e) = self.writer.flush().await {
            turn.cancel_pending();
            link.end_turn();
            return e.into();
        }
        link.park(turn);
        let event = prompt_event(self.writer.id(), id, &name, arguments, prompt);
        match self.emit(event).await {
            Ok(()) => End::Suspended(Wait::Permission),
            Err(end) => end,
        }
    }

    /// Stops the turn: `session/cancel`, what waits answered as cancelled, then the
    /// agent's last updates (applied, or dropped after a cap: `keep`) until it answers the
    /// prompt (for a while).
    async fn cancel_turn(&mut self, link: &Arc<Link>, mut turn: Turn, keep: Keep) -> End {
        link.cancel();
        turn.cancel_pending();
        // A daemon stopping does not wait long: the process is stopped next anyway.
        let grace = if self.control.reason() == Some(super::StopReason::Shutdown) {
            SHUTDOWN_GRACE
        } else {
            CANCEL_GRACE
        };
        let deadline = tokio::time::Instant::now() + grace;
        loop {
            match tokio::time::timeout_at(deadline, turn.inbox.next()).await {
                Ok(Some(Inbound::Update(update))) => {
                    if keep == Keep::Updates
                        && let Err(end) = self.apply_update(&mut turn, *update).await
                    {
                        link.end_turn();
                        return end;
                    }
                }
                Ok(Some(Inbound::Permission(_, responder))) => {
                    let _ = responder.respond(RequestPermissionResponse::new(
                        RequestPermissionOutcome::Cancelled,
                    ));
                }
                Ok(Some(Inbound::Read(_, responder))) => {
                    let _ = responder
                        .respond_with_error(agent_client_protocol::Error::request_cancelled());
                }
                Ok(Some(Inbound::Write(_, responder))) => {
                    let _ = responder
                        .respond_with_error(agent_client_protocol::Error::request_cancelled());
                }
                Ok(Some(Inbound::Done(_) | Inbound::Gone(_)) | None) => break,
                Err(_) => {
                    tracing::warn!(
                        agent_id = self.agent.id,
                        "the ACP agent did not end its cancelled turn within {} s",
                        grace.as_secs()
                    );
                    break;
                }
            }
        }
        link.end_turn();
        self.stopped()
    }

    /// Applies one `session/update` to the message and tells the subscribers.
    async fn apply_update(&mut self, turn: &mut Turn, update: SessionUpdate) -> Result<(), End> {
        match update {
            SessionUpdate::AgentMessageChunk(chunk) => {
                if let ContentBlock::Text(text) = chunk.content {
                    self.chunk(Piece::Text, text.text).await?;
                }
            }
            SessionUpdate::AgentThoughtChunk(chunk) => {
                if let ContentBlock::Text(text) = chunk.content {
                    self.chunk(Piece::Reasoning, text.text).await?;
                }
            }
            SessionUpdate::ToolCall(call) => {
                let ToolCall {
                    tool_call_id,
                    title,
                    kind,
                    status,
                    content,
                    locations,
                    raw_input,
                    raw_output,
                    ..
                } = call;
                let acp_id = tool_call_id.to_string();
                let id = self
                    .open_call(turn, &acp_id, &title, kind, raw_input, &locations)
                    .await?;
                self.update_call(&id, Some(status), Some(content), raw_output)
                    .await?;
            }
            SessionUpdate::ToolCallUpdate(update) => {
                let ToolCallUpdate {
                    tool_call_id,
                    fields,
                    ..
                } = update;
                let acp_id = tool_call_id.to_string();
                let id = match turn.calls.get(&acp_id) {
                    Some(id) => id.clone(),
                    None => {
                        let title = fields.title.clone().unwrap_or_else(|| acp_id.clone());
                        let kind = fields.kind.unwrap_or(ToolKind::Other);
                        let locations = fields.locations.clone().unwrap_or_default();
                        self.open_call(
                            turn,
                            &acp_id,
                            &title,
                            kind,
                            fields.raw_input.clone(),
                            &locations,
                        )
                        .await?
                    }
                };
                if let Some(input) = fields.raw_input {
                    self.budget
                        .whole(json_len(&input), true)
                        .map_err(End::Limit)?;
                    if let Some(call) = self.writer.call_mut(&id)
                        && !call.status.is_finished()
                    {
                        call.arguments = input;
                    }
                }
                self.update_call(&id, fields.status, fields.content, fields.raw_output)
                    .await?;
            }
            SessionUpdate::Plan(plan) => self.apply_plan(plan).await?,
            _ => {}
        }
        Ok(())
    }

    /// A piece of the agent's text or thoughts: what fits the message's cap is applied
    /// and sent; `Err` when the cap cut it.
    async fn chunk(&mut self, piece: Piece, mut text: String) -> Result<(), End> {
        let over = self.budget.text(&mut text).err();
        if !text.is_empty() {
            self.writer.append(piece, &text);
            let message_id = self.writer.id().to_owned();
            self.emit(match piece {
                Piece::Text => EventKind::TextDelta {
                    message_id,
                    delta: text,
                },
                Piece::Reasoning => EventKind::ReasoningDelta {
                    message_id,
                    delta: text,
                },
            })
            .await?;
        }
        over.map_or(Ok(()), |e| Err(End::Limit(e)))
    }

    /// Adds a tool call of the external agent to the message (running: the agent runs
    /// it), recorded like any call; returns its id in the message.
    async fn open_call(
        &mut self,
        turn: &mut Turn,
        acp_id: &str,
        title: &str,
        kind: ToolKind,
        input: Option<serde_json::Value>,
        locations: &[agent_client_protocol::v1::schema::ToolCallLocation],
    ) -> Result<String, End> {
        if let Some(id) = turn.calls.get(acp_id) {
            return Ok(id.clone());
        }
        self.budget.call().map_err(End::Limit)?;
        if let Some(input) = &input {
            self.budget
                .whole(json_len(input), true)
                .map_err(End::Limit)?;
        }
        let id = self.writer.start_call(acp_id, title);
        turn.calls.insert(acp_id.to_owned(), id.clone());
        let arguments = input.unwrap_or_else(|| {
            serde_json::json!({
                "kind": kind_name(kind),
                "locations": locations.iter().map(|l| l.path.display().to_string()).collect::<Vec<_>>(),
            })
        });
        if let Some(call) = self.writer.call_mut(&id) {
            call.arguments = arguments.clone();
            call.status = ToolCallStatus::Running;
        }
        let start = ToolExecution {
            agent_id: self.agent.id.clone(),
            message_id: self.writer.id().to_owned(),
            tool_call_id: id.clone(),
            tool_name: title.to_owned(),
            input: arguments.to_string(),
            started_at: now_ms(),
        };
        self.writer.record(ToolRecord::Start(&start)).await?;
        let message_id = self.writer.id().to_owned();
        self.emit(EventKind::ToolCallStarted {
            message_id: message_id.clone(),
            tool_call_id: id.clone(),
            name: title.to_owned(),
        })
        .await?;
        self.emit(EventKind::ToolCallReady {
            message_id,
            tool_call_id: id.clone(),
            name: title.to_owned(),
            arguments,
        })
        .await?;
        Ok(id)
    }

    /// A call's new status from the external agent: finished ones get their result.
    async fn update_call(
        &mut self,
        id: &str,
        status: Option<AcpStatus>,
        content: Option<Vec<ToolCallContent>>,
        raw_output: Option<serde_json::Value>,
    ) -> Result<(), End> {
        let finished = self
            .writer
            .call_mut(id)
            .is_none_or(|c| c.status.is_finished());
        if finished {
            return Ok(());
        }
        let ours = match status {
            Some(AcpStatus::Completed) => ToolCallStatus::Success,
            Some(AcpStatus::Failed) => ToolCallStatus::Error,
            _ => return Ok(()),
        };
        let text = result_text(content.as_deref().unwrap_or_default(), raw_output.as_ref());
        self.budget.whole(text.len(), false).map_err(End::Limit)?;
        self.settle(id, Outcome::settled(ours, text)).await
    }

    /// A permission request: the call it is about (opened if the agent never announced
    /// it) gets the prompt agentd shows.
    async fn permission_call(
        &mut self,
        turn: &mut Turn,
        request: &RequestPermissionRequest,
    ) -> Result<String, End> {
        let fields = &request.tool_call.fields;
        let acp_id = request.tool_call.tool_call_id.to_string();
        let kind = fields.kind.unwrap_or(ToolKind::Other);
        let title = fields.title.clone().unwrap_or_else(|| acp_id.clone());
        let locations = fields.locations.clone().unwrap_or_default();
        let id = self
            .open_call(
                turn,
                &acp_id,
                &title,
                kind,
                fields.raw_input.clone(),
                &locations,
            )
            .await?;
        let paths: Vec<String> = locations
            .iter()
            .map(|l| display_form(&l.path.display().to_string()))
            .collect();
        let options: Vec<String> = request
            .options
            .iter()
            .map(|o| format!("{} ({})", o.name, option_kind_name(&o.kind)))
            .collect();
        let prompt = PermissionPrompt {
            permission_type: level_of(kind),
            description: display_form(&format!(
                "The external agent asks to run: {title} (its options: {})",
                options.join(", ")
            )),
            command: None,
            command_display: None,
            signature: None,
            paths: (!paths.is_empty()).then_some(paths),
            risk: None,
            rememberable: request
                .options
                .iter()
                .any(|o| o.kind == PermissionOptionKind::AllowAlways),
            network_access: false,
            outside_sandbox: false,
        };
        if let Some(call) = self.writer.call_mut(&id) {
            call.prompt = Some(Box::new(prompt));
        }
        Ok(id)
    }

    async fn apply_plan(&mut self, plan: Plan) -> Result<(), End> {
        let items: Vec<PlanItem> = plan
            .entries
            .into_iter()
            .map(|e| PlanItem {
                content: e.content,
                status: match e.status {
                    PlanEntryStatus::Pending => PlanStatus::Pending,
                    PlanEntryStatus::InProgress => PlanStatus::InProgress,
                    _ => PlanStatus::Completed,
                },
                active_form: None,
            })
            .collect();
        self.store
            .set_plan(&self.agent.id, &items, now_ms())
            .await?;
        self.emit(EventKind::PlanUpdated { items }).await
    }
}
