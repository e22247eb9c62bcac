//! One ACP session: an agentd agent watched through a subscription. Its pump turns the
//! agent's events into `session/update` notifications, raises permission prompts as
//! `session/request_permission`, and ends the prompt turn in flight when the run does.
//!
//! Sessions are agents: events of runs another client started (agentctl, a second editor)
//! are shown too, and a prompt stays answerable from any client; an answer given
//! elsewhere withdraws the editor's question (`$/cancel_request`).

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, CurrentModeUpdate, PromptRequest, PromptResponse,
    RequestPermissionOutcome, RequestPermissionRequest, SessionNotification, SessionUpdate,
    StopReason, ToolCallContent, ToolCallLocation, ToolCallUpdate,
};
use agent_client_protocol::{Client, Error, RequestCancellationHandle};
use agent_proto::client::{Client as DaemonClient, Subscription};
use agent_proto::rpc::AgentRpcClient;
use agent_proto::{
    Block, ErrorKind, Event, EventKind, PendingPermission, PendingQuestion, PermissionLevel,
    Question,
};
use tokio::sync::{oneshot, watch};
use tokio_util::sync::CancellationToken;

use crate::convert::{self, ToolCalls};

/// How a prompt turn ended.
enum TurnEnd {
    Stop(StopReason),
    Failed(Error),
}

/// The prompt turn in flight.
struct Turn {
    /// The user message `sendMessage` stored (once it answered).
    user_message_id: Option<String>,
    /// The pump has seen that user message: the next run end is this turn's.
    started: bool,
    /// The last `error` event of the turn's runs.
    error: Option<String>,
    /// `session/cancel` came while the send was in flight.
    cancel_requested: bool,
    done: oneshot::Sender<TurnEnd>,
}

#[derive(Default)]
struct State {
    turn: Option<Turn>,
    /// User messages this session sent, not seen on the subscription yet (not echoed).
    own_user_messages: HashSet<String>,
    /// Questions the editor has not answered yet, by tool call.
    permissions: HashMap<String, RequestCancellationHandle>,
    /// Prompts and questions put to the editor (or told of) by this session, by tool
    /// call: each once, however it was learnt of (its event, or `getSession`).
    asked: HashSet<String>,
    /// The ACP mode id the editor was last told of.
    mode: Option<String>,
}

/// One session of the editor's connection.
pub(crate) struct Session {
    /// The agent's id, which is the ACP session id.
    pub(crate) id: String,
    workspace: Option<PathBuf>,
    state: Mutex<State>,
    /// Own `sendMessage` calls in flight: a user message event is judged (own or
    /// another client's) only once none is.
    sending: watch::Sender<usize>,
    /// Ends the pump (the session was loaded again, or the connection ends).
    pub(crate) stop: CancellationToken,
}

impl Session {
    pub(crate) fn new(id: String, workspace: Option<PathBuf>, mode: String) -> Session {
        Session {
            id,
            workspace,
            state: Mutex::new(State {
                mode: Some(mode),
                ..State::default()
            }),
            sending: watch::channel(0).0,
            stop: CancellationToken::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding it leaves only plain data behind: keep going.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// True the first time a prompt or question (by tool call) is to be put to the editor.
    fn first_ask(&self, tool_call_id: &str) -> bool {
        self.lock().asked.insert(tool_call_id.to_owned())
    }

    fn notify(&self, cx: &ConnectionTo<Client>, update: SessionUpdate) -> Result<(), Error> {
        cx.send_notification(SessionNotification::new(self.id.clone(), update))
    }

    /// Sends `updates` (a history replay) to the editor.
    pub(crate) fn replay(
        &self,
        cx: &ConnectionTo<Client>,
        updates: Vec<SessionUpdate>,
    ) -> Result<(), Error> {
        for update in updates {
            self.notify(cx, update)?;
        }
        Ok(())
    }

    /// `session/prompt`: sends the message and waits for the run (and the runs that
    /// resume it after permission answers) to end.
    pub(crate) async fn prompt(
        &self,
        request: PromptRequest,
        daemon: &DaemonClient,
    ) -> Result<PromptResponse, Error> {
        let content = convert::prompt_content(&request.prompt)?;
        let (done, ended) = oneshot::channel();
        {
            let mut st = self.lock();
            if st.turn.as_ref().is_some_and(|t| !t.done.is_closed()) {
                return Err(Error::invalid_request()
                    .data("a prompt is already running in this session: cancel it first"));
            }
            st.turn = Some(Turn {
                user_message_id: None,
                started: false,
                error: None,
                cancel_requested: false,
                done,
            });
        }
        self.sending.send_modify(|n| *n += 1);
        let sent = daemon
            .send_message(self.id.clone(), content, None, None, None, None, None, None)
            .await;
        let cancel_now = {
            let mut st = self.lock();
            match &sent {
                Ok(ids) => {
                    st.own_user_messages.insert(ids.user_message_id.clone());
                    st.turn.as_mut().is_some_and(|t| {
                        t.user_message_id = Some(ids.user_message_id.clone());
                        t.cancel_requested
                    })
                }
                Err(_) => {
                    st.turn = None;
                    false
                }
            }
        };
        self.sending.send_modify(|n| *n -= 1);
        if let Err(e) = sent {
            return Err(convert::rpc_error(&e, Some(&self.id)));
        }
        if cancel_now {
            // The cancel came before the run existed; it is there now.
            let _ = daemon.cancel_loop(self.id.clone()).await;
        }
        match ended.await {
            Ok(TurnEnd::Stop(reason)) => Ok(PromptResponse::new(reason)),
            Ok(TurnEnd::Failed(e)) => Err(e),
            Err(_) => Err(Error::new(
                -32603,
                "the session ended before the run did (the daemon went away?)",
            )),
        }
    }

    /// `session/cancel`: cancels the run (or, if the send is still in flight, the run it
    /// is about to start).
    pub(crate) async fn cancel(&self, daemon: &DaemonClient) {
        {
            let mut st = self.lock();
            if let Some(turn) = st.turn.as_mut()
                && turn.user_message_id.is_none()
            {
                turn.cancel_requested = true;
            }
        }
        if let Err(e) = daemon.cancel_loop(self.id.clone()).await {
            eprintln!("agentd acp: cancelLoop for {} failed: {e}", self.id);
        }
    }

    /// Ends the turn in flight (if any) with `end`.
    fn end_turn(&self, end: TurnEnd) {
        if let Some(turn) = self.lock().turn.take() {
            let _ = turn.done.send(end);
        }
    }

    /// Forwards the agent's events until the subscription or the connection ends.
    pub(crate) async fn pump(
        self: Arc<Self>,
        mut events: Subscription<Event>,
        mut calls: ToolCalls,
        cx: ConnectionTo<Client>,
        daemon: Arc<DaemonClient>,
    ) -> Result<(), Error> {
        loop {
            let next = tokio::select! {
                next = events.next() => next,
                () = self.stop.cancelled() => return Ok(()),
            };
            let event = match next {
                Some(Ok(event)) => event,
                Some(Err(e)) => {
                    eprintln!("agentd acp: an event this bridge cannot read: {e}");
                    continue;
                }
                None => {
                    self.end_turn(TurnEnd::Failed(
                        Error::new(
                            -32603,
                            "the connection to agentd was lost; restart the agent",
                        )
                        .data(serde_json::json!({"kind": "daemonUnreachable"})),
                    ));
                    return Ok(());
                }
            };
            if !self.on_event(event.kind, &mut calls, &cx, &daemon).await? {
                return Ok(());
            }
        }
    }

    /// Handles one event; false when the session is over (the agent was deleted).
    async fn on_event(
        self: &Arc<Self>,
        event: EventKind,
        calls: &mut ToolCalls,
        cx: &ConnectionTo<Client>,
        daemon: &Arc<DaemonClient>,
    ) -> Result<bool, Error> {
        match event {
            EventKind::UserMessage { message } => {
                let mut sending = self.sending.subscribe();
                let _ = sending.wait_for(|n| *n == 0).await;
                let own = {
                    let mut st = self.lock();
                    let own = st.own_user_messages.remove(&message.id);
                    if let Some(turn) = st.turn.as_mut()
                        && turn.user_message_id.as_deref() == Some(message.id.as_str())
                    {
                        turn.started = true;
                    }
                    own
                };
                if !own {
                    for block in &message.blocks {
                        if let Block::Text { text } = block {
                            self.notify(
                                cx,
                                SessionUpdate::UserMessageChunk(ContentChunk::new(
                                    ContentBlock::from(text.clone()),
                                )),
                            )?;
                        }
                    }
                }
            }
            EventKind::PermissionRequested {
                message_id,
                tool_call_id,
                tool_name,
                permission_type,
                description,
                arguments,
                paths,
                risk,
                rememberable,
                ..
            } => {
                let ask = Ask {
                    message_id,
                    tool_call_id,
                    tool_name,
                    permission_type,
                    description,
                    arguments,
                    paths: paths.unwrap_or_default(),
                    risk,
                    rememberable,
                };
                if self.first_ask(&ask.tool_call_id) {
                    let session = self.clone();
                    let (cx2, daemon) = (cx.clone(), daemon.clone());
                    cx.spawn(async move { session.ask(ask, cx2, daemon).await })?;
                }
            }
            EventKind::QuestionRequested {
                message_id,
                tool_call_id,
                questions,
            } => {
                let first = self.first_ask(&tool_call_id);
                if !convert::questions_askable(&questions) {
                    // ACP has no free-text answer: say where to answer, end the turn; the
                    // question stays pending in the daemon.
                    if first {
                        self.notify(
                            cx,
                            SessionUpdate::AgentMessageChunk(ContentChunk::new(
                                ContentBlock::from(convert::unaskable_questions_text(&questions)),
                            )),
                        )?;
                    }
                    let mut st = self.lock();
                    if st.turn.as_ref().is_some_and(|t| t.started)
                        && let Some(turn) = st.turn.take()
                    {
                        let _ = turn.done.send(TurnEnd::Stop(StopReason::EndTurn));
                    }
                } else if first {
                    let session = self.clone();
                    let (cx2, daemon) = (cx.clone(), daemon.clone());
                    cx.spawn(async move {
                        session
                            .ask_questions(message_id, tool_call_id, questions, cx2, daemon)
                            .await
                    })?;
                }
            }
            EventKind::QuestionResolved {
                ref tool_call_id, ..
            } => {
                // Answered elsewhere (or cancelled): withdraw the editor's question.
                if let Some(handle) = self.lock().permissions.remove(tool_call_id) {
                    let _ = handle.cancel();
                }
            }
            EventKind::PermissionResolved {
                ref tool_call_id, ..
            } => {
                // Answered elsewhere (or cancelled): withdraw the editor's question.
                if let Some(handle) = self.lock().permissions.remove(tool_call_id) {
                    let _ = handle.cancel();
                }
                for update in calls.updates(&event, self.workspace.as_deref()) {
                    self.notify(cx, update)?;
                }
            }
            EventKind::Error { message, kind, .. } => {
                if kind != agent_proto::run_error::TOOLS_LEFT_OUT
                    && let Some(turn) = self.lock().turn.as_mut().filter(|t| t.started)
                {
                    turn.error = Some(message);
                }
            }
            EventKind::LoopFinished { reason, error, .. } => {
                // A run waiting for a permission or a question's answer resumes on it:
                // the turn goes on.
                let waiting = matches!(
                    reason,
                    agent_proto::LoopFinishReason::WaitingPermission
                        | agent_proto::LoopFinishReason::WaitingQuestion
                );
                if waiting {
                    // A prompt whose event came before this session subscribed (a load
                    // racing the run's end) is only in `getSession`: ask what it lists.
                    let (session, cx2, daemon) = (self.clone(), cx.clone(), daemon.clone());
                    cx.spawn(async move {
                        match daemon.get_session(session.id.clone()).await {
                            Ok(info) => session.ask_pending(
                                info.pending_permissions,
                                info.pending_questions,
                                &cx2,
                                &daemon,
                            ),
                            Err(e) => {
                                eprintln!("agentd acp: getSession for {} failed: {e}", session.id);
                                Ok(())
                            }
                        }
                    })?;
                }
                let mut st = self.lock();
                let ours = st.turn.as_ref().is_some_and(|t| t.started);
                if ours
                    && !waiting
                    && let Some(turn) = st.turn.take()
                {
                    let end = match convert::stop_reason(reason) {
                        Some(stop) => TurnEnd::Stop(stop),
                        None => TurnEnd::Failed(
                            Error::new(
                                -32603,
                                error
                                    .or(turn.error)
                                    .unwrap_or_else(|| "the run failed".to_owned()),
                            )
                            .data(serde_json::json!({"kind": "runFailed"})),
                        ),
                    };
                    let _ = turn.done.send(end);
                }
            }
            EventKind::AgentUpdated { agent } => {
                let mode = convert::mode_id(agent.mode, agent.profile.as_deref());
                let changed = {
                    let mut st = self.lock();
                    let changed = st.mode.as_deref() != Some(mode.as_str());
                    st.mode = Some(mode.clone());
                    changed
                };
                if changed {
                    self.notify(
                        cx,
                        SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(mode)),
                    )?;
                }
            }
            EventKind::AgentDeleted {} => {
                self.end_turn(TurnEnd::Failed(
                    Error::new(-32603, "the agent was deleted")
                        .data(serde_json::json!({"kind": ErrorKind::AgentNotFound.as_str()})),
                ));
                return Ok(false);
            }
            other => {
                for update in calls.updates(&other, self.workspace.as_deref()) {
                    self.notify(cx, update)?;
                }
            }
        }
        Ok(true)
    }

    /// Asks the editor about a permission prompt and gives its answer to the daemon. A
    /// prompt answered elsewhere first withdraws the question; an editor that goes away
    /// leaves the prompt pending in the daemon.
    async fn ask(
        self: Arc<Self>,
        ask: Ask,
        cx: ConnectionTo<Client>,
        daemon: Arc<DaemonClient>,
    ) -> Result<(), Error> {
        let ws = self.workspace.as_deref();
        let mut fields = convert::ready_fields(&ask.tool_name, &ask.arguments, ws)
            .title(ask.description.clone())
            .status(agent_client_protocol::v1::schema::ToolCallStatus::Pending);
        if !ask.paths.is_empty() {
            fields = fields.locations(
                ask.paths
                    .iter()
                    .map(|p| ToolCallLocation::new(p.clone()))
                    .collect::<Vec<_>>(),
            );
        }
        if let Some(risk) = &ask.risk {
            let mut content = fields.content.take().unwrap_or_default();
            content.push(ToolCallContent::from(ContentBlock::from(format!(
                "Risk: {risk}"
            ))));
            fields = fields.content(content);
        }
        let request = RequestPermissionRequest::new(
            self.id.clone(),
            ToolCallUpdate::new(ask.tool_call_id.clone(), fields),
            convert::permission_options(ask.rememberable),
        );
        let sent = cx.send_request(request);
        self.lock()
            .permissions
            .insert(ask.tool_call_id.clone(), sent.cancellation_handle());
        let answer = sent.block_task().await;
        self.lock().permissions.remove(&ask.tool_call_id);
        if self.stop.is_cancelled() {
            // This session was replaced or its connection ended: not ours to answer.
            return Ok(());
        }
        let option = match answer {
            Ok(response) => match response.outcome {
                RequestPermissionOutcome::Selected(selected) => selected.option_id.to_string(),
                // The turn is being cancelled: the cancel settles the prompt.
                _ => return Ok(()),
            },
            // Withdrawn, or the editor is gone: the prompt stays pending in the daemon.
            Err(_) => return Ok(()),
        };
        let Some((granted, remember)) = convert::permission_answer(&option) else {
            eprintln!("agentd acp: the editor chose an option never offered: {option:?}");
            return Ok(());
        };
        let answered = daemon
            .handle_permission_response(
                ask.message_id,
                ask.tool_call_id,
                granted,
                Some(ask.permission_type),
                Some(remember),
            )
            .await;
        match answered {
            Ok(_) => {}
            Err(agent_proto::client::Error::Call(e))
                if ErrorKind::from_code(e.code()) == Some(ErrorKind::PermissionNotPending) => {}
            Err(e) => {
                // The turn cannot go on without the answer: end it with the reason.
                self.end_turn(TurnEnd::Failed(convert::rpc_error(&e, Some(&self.id))));
            }
        }
        Ok(())
    }
}

impl Session {
    /// Puts the prompts already waiting in the daemon (at `session/load`) to the editor.
    pub(crate) fn ask_pending(
        self: &Arc<Self>,
        permissions: Vec<PendingPermission>,
        questions: Vec<PendingQuestion>,
        cx: &ConnectionTo<Client>,
        daemon: &Arc<DaemonClient>,
    ) -> Result<(), Error> {
        for p in permissions {
            if !self.first_ask(&p.tool_call_id) {
                continue;
            }
            let ask = Ask {
                message_id: p.message_id,
                tool_call_id: p.tool_call_id,
                tool_name: p.tool_name,
                permission_type: p.permission_type,
                description: p.description,
                arguments: p.arguments,
                paths: p.paths.unwrap_or_default(),
                risk: p.risk,
                rememberable: p.rememberable,
            };
            let (session, cx2, daemon) = (self.clone(), cx.clone(), daemon.clone());
            cx.spawn(async move { session.ask(ask, cx2, daemon).await })?;
        }
        for q in questions {
            if !self.first_ask(&q.tool_call_id) {
                continue;
            }
            if convert::questions_askable(&q.questions) {
                let (session, cx2, daemon) = (self.clone(), cx.clone(), daemon.clone());
                cx.spawn(async move {
                    session
                        .ask_questions(q.message_id, q.tool_call_id, q.questions, cx2, daemon)
                        .await
                })?;
            } else {
                self.notify(
                    cx,
                    SessionUpdate::AgentMessageChunk(ContentChunk::new(ContentBlock::from(
                        convert::unaskable_questions_text(&q.questions),
                    ))),
                )?;
            }
        }
        Ok(())
    }

    /// Puts the model's questions to the editor one by one as permission requests (one
    /// option per choice, and "decline") and gives the answers to the daemon. As with a
    /// permission prompt, a question answered elsewhere is withdrawn, and an editor that
    /// goes away (or cancels) leaves it pending in the daemon.
    async fn ask_questions(
        self: Arc<Self>,
        message_id: String,
        tool_call_id: String,
        questions: Vec<Question>,
        cx: ConnectionTo<Client>,
        daemon: Arc<DaemonClient>,
    ) -> Result<(), Error> {
        let mut answers = Vec::new();
        let mut declined = false;
        for (i, question) in questions.iter().enumerate() {
            let request = RequestPermissionRequest::new(
                self.id.clone(),
                ToolCallUpdate::new(
                    tool_call_id.clone(),
                    convert::question_fields(question, i + 1, questions.len()),
                ),
                convert::question_options(question),
            );
            let sent = cx.send_request(request);
            self.lock()
                .permissions
                .insert(tool_call_id.clone(), sent.cancellation_handle());
            let answer = sent.block_task().await;
            self.lock().permissions.remove(&tool_call_id);
            if self.stop.is_cancelled() {
                return Ok(());
            }
            let option = match answer {
                Ok(response) => match response.outcome {
                    RequestPermissionOutcome::Selected(selected) => selected.option_id.to_string(),
                    _ => return Ok(()),
                },
                Err(_) => return Ok(()),
            };
            match convert::question_answer(question, &option) {
                Some(Some(answer)) => answers.push(answer),
                Some(None) => {
                    declined = true;
                    break;
                }
                None => {
                    eprintln!("agentd acp: the editor chose an option never offered: {option:?}");
                    return Ok(());
                }
            }
        }
        let answered = if declined {
            daemon
                .answer_question(message_id, tool_call_id, None, Some(true))
                .await
        } else {
            daemon
                .answer_question(message_id, tool_call_id, Some(answers), None)
                .await
        };
        match answered {
            Ok(_) => {}
            Err(agent_proto::client::Error::Call(e))
                if ErrorKind::from_code(e.code()) == Some(ErrorKind::QuestionNotPending) => {}
            Err(e) => self.end_turn(TurnEnd::Failed(convert::rpc_error(&e, Some(&self.id)))),
        }
        Ok(())
    }
}

/// A permission prompt to put to the editor.
struct Ask {
    message_id: String,
    tool_call_id: String,
    tool_name: String,
    permission_type: PermissionLevel,
    description: String,
    arguments: serde_json::Value,
    paths: Vec<String>,
    risk: Option<String>,
    rememberable: bool,
}
