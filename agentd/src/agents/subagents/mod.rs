//! Subagents: the `task` tool's children, and the agent layer the agent tools act through.
//!
//! A subagent is an ordinary agent (DESIGN.md 15, "children are agents"): stored with
//! `parentAgentId`, `subagentType` and the parent's `task` call, announced with
//! `agentCreated`, with its own messages, events and permission prompts that any client
//! sees and answers. The parent's call waits for the child's runs to settle (a child
//! waiting for a permission or an answer has not settled) and gets its final answer; a
//! cancel of the parent's run cancels the child. A background task returns at once; when
//! the child settles, the parent gets `backgroundTaskFinished` and the result goes to its
//! model with its next user message.
//!
//! A child works only while it holds one of its parent's slots (`[subagents]
//! max_parallel`, `session::TaskSlots`), foreground and background children together: a
//! foreground call waits for one before it creates its child; a background task's child
//! is created at once and sent its task when it gets one. The slot goes when the child's
//! runs have settled.

mod types;

use std::sync::Arc;
use std::time::Duration;

use agent_proto::{
    Agent, AgentMode, AgentSettings, EventKind, LoopFinishReason, MessageContent, MessageStatus,
    PlanItem, SessionStatus,
};
use futures::future::BoxFuture;
use tokio::sync::watch;

use self::types::SubagentType;
use super::AgentService;
use crate::session::{RunEnd, SessionError, SessionManager, TaskSlot};
use crate::store::{BackgroundTask, NewAgent, SubagentLink, now_ms};
use crate::tools::host::{AgentHost, TaskCall};
use crate::tools::mcp::Progress;
use crate::tools::{ToolContext, ToolOutput};

pub use crate::config::{SubagentTypeConfig, SubagentsConfig};

/// How long a cancelled parent waits for its subagent to stop.
const STOP_WAIT: Duration = Duration::from_secs(30);

impl AgentHost for AgentService {
    fn set_plan<'a>(
        &'a self,
        ctx: &'a ToolContext,
        items: Vec<PlanItem>,
    ) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            let saved = self
                .store
                .set_plan(&ctx.agent_id, &items, now_ms())
                .await
                .map_err(|e| e.to_string())?;
            if !saved {
                return Err("the agent no longer exists".into());
            }
            self.sessions
                .emit_for(&ctx.agent_id, EventKind::PlanUpdated { items })
                .await
                .map_err(|e| e.to_string())
        })
    }

    fn run_task<'a>(&'a self, ctx: &'a ToolContext, task: TaskCall) -> BoxFuture<'a, ToolOutput> {
        Box::pin(self.run_subagent(ctx, task))
    }
}

/// Whether an agent's runs have settled: no run, nothing waiting for a client.
fn settled(status: SessionStatus) -> bool {
    matches!(status, SessionStatus::Idle | SessionStatus::Error)
}

/// Cancels a subagent when the call waiting for it is dropped before it ended (its parent's
/// run failed mid-way), so no child is left working for nobody.
struct StopOnDrop {
    sessions: Arc<SessionManager>,
    child: Option<String>,
}

impl StopOnDrop {
    fn disarm(mut self) {
        self.child = None;
    }
}

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        if let Some(child) = self.child.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            let sessions = self.sessions.clone();
            runtime.spawn(async move {
                if let Err(e) = sessions.cancel(&child).await {
                    tracing::warn!(child, "cannot stop an abandoned subagent: {e}");
                }
            });
        }
    }
}

/// Tells the parent's model, through the call's progress, what became of the child.
fn report(ctx: &ToolContext, message: String) {
    if let Some(progress) = &ctx.progress {
        let _ = progress.try_send(Progress {
            progress: 0.0,
            total: None,
            message: Some(message),
            output: None,
        });
    }
}

/// What a background task does before it is watched: wait for a slot (unless it has one),
/// then send the child its task.
struct PendingStart {
    prompt: String,
    slot: Option<TaskSlot>,
}

impl AgentService {
    async fn run_subagent(&self, ctx: &ToolContext, task: TaskCall) -> ToolOutput {
        if task.background {
            return self.background(ctx, &task).await;
        }
        // A slot first: the parent's `max_parallel` counts its background children too.
        let slot = tokio::select! {
            slot = self.sessions.task_slots().take(&ctx.agent_id) => slot,
            _ = ctx.cancel.cancelled() => None,
        };
        let Some(slot) = slot else {
            return ToolOutput::error("cancelled: the subagent was not started");
        };
        let (child, ended) = match self.create_subagent(ctx, &task).await {
            Ok(created) => created,
            Err(e) => return ToolOutput::error(e),
        };
        if let Err(e) = self.send_task(&child.id, &task.prompt).await {
            return ToolOutput::error(e);
        }
        report(
            ctx,
            format!(
                "subagent {} ({}) started: {}",
                child.id, task.subagent_type, task.description
            ),
        );
        let guard = StopOnDrop {
            sessions: self.sessions.clone(),
            child: Some(child.id.clone()),
        };
        let mut ended = ended;
        let output = tokio::select! {
            reason = self.wait_settled(&child.id, &mut ended) => self.result_of(&child.id, reason).await,
            _ = ctx.cancel.cancelled() => {
                self.stop_subagent(&child.id, &mut ended).await;
                ToolOutput::error(format!("cancelled: the subagent {} was stopped", child.id))
            }
        };
        guard.disarm();
        drop(slot);
        output
    }

    /// Sends a created child its task, which starts its run.
    async fn send_task(&self, child_id: &str, prompt: &str) -> Result<(), String> {
        self.sessions
            .send_message(
                child_id,
                MessageContent::Text(prompt.to_owned()),
                None,
                agent_proto::WhenBusy::Refuse,
            )
            .await
            .map(drop)
            .map_err(|e| format!("the subagent {child_id} could not start: {e}"))
    }

    /// Creates the child agent for a `task` call (not started yet); returns it with a watch
    /// on its runs taken before it starts. `Err` is the result for the model.
    async fn create_subagent(
        &self,
        ctx: &ToolContext,
        task: &TaskCall,
    ) -> Result<(Agent, watch::Receiver<RunEnd>), String> {
        let parent = self
            .sessions
            .get_agent(&ctx.agent_id)
            .await
            .map_err(|e| e.to_string())?;
        let depth = self
            .store
            .agent_depth(&parent.id)
            .await
            .map_err(|e| e.to_string())?
            + 1;
        let max = self.subagents.max_depth;
        if depth > max {
            return Err(format!(
                "not started: subagents nest at most {max} level(s) deep and this one would be level {depth}; do the work yourself"
            ));
        }
        let kind = self.subagents.kind(&task.subagent_type)?;
        let (enabled_tools, enabled_mcp) = self.child_tools(&parent, &kind);
        let (provider, model) = self.child_model(&parent, &kind)?;
        self.check_provider(&provider, &model)
            .map_err(|e| e.to_string())?;
        let settings = AgentSettings {
            temperature: parent.settings.temperature,
            max_output_tokens: parent.settings.max_output_tokens,
            max_steps: kind.max_steps.or(parent.settings.max_steps),
            // What the parent's calls run under, config, profile and own settings layered:
            // the child's own settings win over every other layer, so a type that drops
            // the parent's profile keeps its rules (a child with the parent's profile and
            // settings got no more than this either).
            permissions: Some(self.tools.rules_for(&parent)),
            enabled_tools: Some(enabled_tools),
            enabled_mcp_tools: Some(enabled_mcp),
            auto_title: Some(false),
            auto_summarize: parent.settings.auto_summarize,
            // The parent's checks apply to the work it delegates.
            hooks: parent.settings.hooks.clone(),
            // So does its sandbox, whatever the child's profile says.
            sandbox: Some(self.tools.sandbox_mode_of(&parent)),
        };
        let new = NewAgent {
            id: uuid::Uuid::now_v7().to_string(),
            title: task.description.clone(),
            mode: AgentMode::Agent,
            provider,
            model,
            system_prompt: Some(kind.system_prompt.clone()),
            workspace: Some(self.tools.workspace_of(&parent).display().to_string()),
            // A type that takes the parent's tools takes its profile with them.
            profile: if kind.tools.is_none() {
                parent.profile.clone()
            } else {
                None
            },
            settings,
            acp: None,
            created_at: now_ms(),
        };
        let link = SubagentLink {
            parent_agent_id: &parent.id,
            parent_tool_call_id: &ctx.tool_call_id,
            subagent_type: &kind.name,
            depth,
        };
        let child = self
            .store
            .insert_subagent(&new, link)
            .await
            .map_err(|e| e.to_string())?;
        let child = self
            .announce_created(child)
            .await
            .map_err(|e| e.to_string())?;
        let ended = self
            .sessions
            .watch_runs(&child.id)
            .await
            .map_err(|e| e.to_string())?;
        Ok((child, ended))
    }

    /// The child's tools: never more than its parent's. The tools its type names that the
    /// parent has (a type without a list: the parent's, less `task`), builtins and MCP
    /// tools apart.
    fn child_tools(&self, parent: &Agent, kind: &SubagentType) -> (Vec<String>, Vec<String>) {
        let (parent_tools, parent_mcp) = self.tools_of(parent);
        let Some(named) = &kind.tools else {
            let builtins = parent_tools
                .into_iter()
                .filter(|t| t != crate::tools::builtin::task::NAME)
                .collect();
            return (builtins, parent_mcp);
        };
        let builtins = named
            .iter()
            .filter(|t| parent_tools.contains(t))
            .cloned()
            .collect();
        let mcp = parent_mcp
            .into_iter()
            .filter(|entry| {
                let server = entry.split_once('/').map_or(entry.as_str(), |(s, _)| s);
                kind.mcp.iter().flatten().any(|n| n == server || n == entry)
            })
            .collect();
        (builtins, mcp)
    }

    /// The child's provider and model: the type's, the type's provider with its default
    /// model, or the parent's.
    fn child_model(&self, parent: &Agent, kind: &SubagentType) -> Result<(String, String), String> {
        let provider = kind.provider.clone().unwrap_or(parent.provider.clone());
        let model = match (&kind.model, &kind.provider) {
            (Some(m), _) => m.clone(),
            (None, Some(p)) => self
                .providers
                .default_model_for(p)
                .ok_or_else(|| format!("the subagent type's provider {p:?} is not configured"))?,
            (None, None) => parent.model.clone(),
        };
        Ok((provider, model))
    }

    /// The tools the parent has: its enabled builtins, and its enabled MCP tools as
    /// `server/tool`.
    fn tools_of(&self, parent: &Agent) -> (Vec<String>, Vec<String>) {
        let mut builtins = Vec::new();
        let mut mcp = Vec::new();
        for tool in self.tools.list(Some(parent)) {
            if !tool.enabled {
                continue;
            }
            match tool.source.strip_prefix("mcp:") {
                Some(server) => mcp.push(format!(
                    "{server}/{}",
                    tool.original_name.as_deref().unwrap_or(&tool.name)
                )),
                None => builtins.push(tool.name),
            }
        }
        (builtins, mcp)
    }

    /// Waits until the child's runs have settled; how its last run ended (`None`: it was
    /// deleted).
    async fn wait_settled(
        &self,
        child_id: &str,
        ended: &mut watch::Receiver<RunEnd>,
    ) -> Option<LoopFinishReason> {
        loop {
            if ended.changed().await.is_err() {
                // The session was unloaded (or deleted): look again.
                match self.sessions.watch_runs(child_id).await {
                    Ok(fresh) => *ended = fresh,
                    Err(_) => return None,
                }
                match self.sessions.get_agent(child_id).await {
                    Ok(agent) if settled(agent.status) => {
                        return Some(self.last_reason(child_id).await);
                    }
                    Ok(_) => continue,
                    Err(_) => return None,
                }
            }
            let end = *ended.borrow_and_update();
            if end.deleted {
                return None;
            }
            match self.sessions.get_agent(child_id).await {
                Ok(agent) if settled(agent.status) => {
                    return Some(end.reason.unwrap_or(LoopFinishReason::Completed));
                }
                Ok(_) => {}
                Err(_) => return None,
            }
        }
    }

    /// How an agent's last run ended, as its last answer shows it.
    async fn last_reason(&self, agent_id: &str) -> LoopFinishReason {
        match self.store.last_assistant_message(agent_id).await {
            Ok(Some(m)) => match m.status {
                MessageStatus::Done => LoopFinishReason::Completed,
                MessageStatus::Cancelled | MessageStatus::Interrupted => {
                    LoopFinishReason::Cancelled
                }
                MessageStatus::Waiting => LoopFinishReason::MaxSteps,
                _ => LoopFinishReason::Error,
            },
            _ => LoopFinishReason::Error,
        }
    }

    /// Cancels a child whose parent's call was cancelled, and waits (a while) for it to
    /// stop, so its tools are stopped when the parent's call ends.
    async fn stop_subagent(&self, child_id: &str, ended: &mut watch::Receiver<RunEnd>) {
        if !self.sessions.shutting_down().is_cancelled()
            && let Err(e) = self.sessions.cancel(child_id).await
        {
            tracing::warn!(child_id, "cannot cancel a subagent: {e}");
        }
        let _ = tokio::time::timeout(STOP_WAIT, self.wait_settled(child_id, ended)).await;
    }

    /// What the parent's model gets from a settled child: its final answer, or why there
    /// is none.
    async fn result_of(&self, child_id: &str, reason: Option<LoopFinishReason>) -> ToolOutput {
        let Some(reason) = reason else {
            return ToolOutput::error(format!(
                "the subagent {child_id} was deleted before it finished"
            ));
        };
        let text = match self.store.last_assistant_message(child_id).await {
            Ok(Some(m)) => m.text().trim().to_owned(),
            Ok(None) => String::new(),
            Err(e) => return ToolOutput::error(format!("cannot read the subagent's answer: {e}")),
        };
        if reason == LoopFinishReason::Completed {
            return if text.is_empty() {
                ToolOutput::ok(format!(
                    "the subagent {child_id} finished without a final answer"
                ))
            } else {
                ToolOutput::ok(text)
            };
        }
        let why = serde_json::to_value(reason)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        let mut out =
            format!("the subagent {child_id} did not finish its task (it ended with {why})");
        if !text.is_empty() {
            out.push_str(&format!("; its last words:\n{text}"));
        }
        ToolOutput::error(out)
    }

    /// Creates a background task's child and records the task; the child starts now if
    /// one of the parent's slots is free, else when one is (in turn). Answers the parent's
    /// model at once.
    async fn background(&self, ctx: &ToolContext, task: &TaskCall) -> ToolOutput {
        let (child, ended) = match self.create_subagent(ctx, task).await {
            Ok(created) => created,
            Err(e) => return ToolOutput::error(e),
        };
        let record = BackgroundTask {
            child_agent_id: child.id.clone(),
            parent_agent_id: ctx.agent_id.clone(),
            tool_call_id: ctx.tool_call_id.clone(),
            description: task.description.clone(),
            status: None,
            result: None,
        };
        if let Err(e) = self.store.insert_background_task(&record, now_ms()).await {
            // Never started: nothing of it is worth keeping.
            if let Err(e) = self.sessions.delete_agent(&child.id).await {
                tracing::warn!(child = child.id, "cannot remove an unused subagent: {e}");
            }
            return ToolOutput::error(format!("the background task could not be recorded: {e}"));
        }
        let slot = self.sessions.task_slots().try_take(&ctx.agent_id);
        let queued = slot.is_none();
        self.watch_background(
            record,
            ended,
            Some(PendingStart {
                prompt: task.prompt.clone(),
                slot,
            }),
        );
        let (what, when) = if queued {
            (
                "Queued",
                format!(
                    " It starts when one of the {} subagents working for you ends.",
                    self.sessions.task_slots().limit()
                ),
            )
        } else {
            ("Started", String::new())
        };
        report(
            ctx,
            format!(
                "subagent {} ({}) {}: {}",
                child.id,
                task.subagent_type,
                what.to_lowercase(),
                task.description
            ),
        );
        ToolOutput::ok(format!(
            "{what} subagent {} ({}) in the background: {}.{when} Its result will be given to you with a later message; go on with other work.",
            child.id, task.subagent_type, task.description
        ))
    }

    /// Watches a background child in a task of its own: first (`start`) waits for a slot
    /// and sends it its task, then waits for it to settle, records its result and tells
    /// the parent. Its slot goes when it has settled.
    fn watch_background(
        &self,
        task: BackgroundTask,
        mut ended: watch::Receiver<RunEnd>,
        start: Option<PendingStart>,
    ) {
        let Some(service) = self.this.upgrade() else {
            return;
        };
        tokio::spawn(async move {
            let mut working = None;
            if let Some(PendingStart { prompt, slot }) = start {
                let slot = match slot {
                    Some(slot) => Some(slot),
                    None => tokio::select! {
                        slot = service.sessions.task_slots().take(&task.parent_agent_id) => slot,
                        _ = service.sessions.shutting_down().cancelled() => None,
                    },
                };
                let Some(slot) = slot else {
                    let output = ToolOutput::error(format!(
                        "the subagent {} never started: its parent's run was cancelled (or the daemon stopped) while it waited for its turn",
                        task.child_agent_id
                    ));
                    service
                        .finish_background_with(&task, LoopFinishReason::Cancelled, output)
                        .await;
                    return;
                };
                if let Err(e) = service.send_task(&task.child_agent_id, &prompt).await {
                    service
                        .finish_background_with(
                            &task,
                            LoopFinishReason::Error,
                            ToolOutput::error(e),
                        )
                        .await;
                    return;
                }
                working = Some(slot);
            }
            let reason = service.wait_settled(&task.child_agent_id, &mut ended).await;
            // Settled: the next child waiting for a slot may start.
            drop(working);
            service.finish_background(&task, reason).await;
        });
    }

    async fn finish_background(&self, task: &BackgroundTask, reason: Option<LoopFinishReason>) {
        let output = self.result_of(&task.child_agent_id, reason).await;
        let status = reason.unwrap_or(LoopFinishReason::Cancelled);
        self.finish_background_with(task, status, output).await;
    }

    /// Records a background task's end and tells its parent (`backgroundTaskFinished`).
    async fn finish_background_with(
        &self,
        task: &BackgroundTask,
        status: LoopFinishReason,
        output: ToolOutput,
    ) {
        match self
            .store
            .finish_background_task(&task.child_agent_id, status, &output.content, now_ms())
            .await
        {
            Ok(true) => {}
            // The parent is gone (or the task was finished already): nobody to tell.
            Ok(false) => return,
            Err(e) => {
                tracing::error!(
                    child = task.child_agent_id,
                    "cannot record a background task's end: {e}"
                );
                return;
            }
        }
        let event = EventKind::BackgroundTaskFinished {
            child_agent_id: task.child_agent_id.clone(),
            tool_call_id: task.tool_call_id.clone(),
            status,
        };
        match self.sessions.emit_for(&task.parent_agent_id, event).await {
            Ok(()) | Err(SessionError::AgentNotFound(_)) => {}
            Err(e) => tracing::warn!("cannot announce a background task's end: {e}"),
        }
    }

    /// At start-up: background tasks that were running when the daemon stopped. A child
    /// still waiting for a client is watched again; one that was stopped with the daemon
    /// is finished now.
    pub async fn resume_background_tasks(&self) -> Result<(), SessionError> {
        for task in self.store.running_background_tasks().await? {
            let child = self.sessions.get_agent(&task.child_agent_id).await;
            match child {
                Ok(agent) if !settled(agent.status) => {
                    let ended = self.sessions.watch_runs(&agent.id).await?;
                    self.watch_background(task, ended, None);
                }
                Ok(_)
                    if self
                        .store
                        .last_assistant_message(&task.child_agent_id)
                        .await?
                        .is_none() =>
                {
                    // It was still waiting for its turn: its task went with the daemon.
                    let output = ToolOutput::error(format!(
                        "the subagent {} never started: the daemon stopped while it waited for its turn; start it again if it is still needed",
                        task.child_agent_id
                    ));
                    self.finish_background_with(&task, LoopFinishReason::Cancelled, output)
                        .await;
                }
                Ok(_) => {
                    let reason = self.last_reason(&task.child_agent_id).await;
                    self.finish_background(&task, Some(reason)).await;
                }
                Err(_) => self.finish_background(&task, None).await,
            }
        }
        Ok(())
    }
}
