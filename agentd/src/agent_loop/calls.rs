//! Running a step's tool calls: each is prepared (the tool found, its arguments checked,
//! what it touches worked out), put to the permission policy, run through the tool center
//! with its progress sent as events, and settled with its result. `task` calls of one
//! answer run side by side.

use agent_proto::{EventKind, ToolCallResult, ToolCallStatus};
use futures::StreamExt;

use super::{End, Run, StopReason};
use crate::store::{ToolExecution, ToolExecutionEnd, ToolRecord, now_ms};
use crate::tools::builtin::question;
use crate::tools::center::{Outcome, Prepared, ToolCenter};
use crate::tools::permission::Decision;
use crate::tools::{Approval, Permits, ToolContext};

/// A call the policy let through, ready to run.
pub(super) struct Checked {
    prepared: Prepared,
    ctx: ToolContext,
    /// The agent's grants, and what a client's answer granted besides running it.
    permits: Permits,
}

/// What running a call needs from its run, borrowed apart from the message writer.
#[derive(Clone)]
struct Shared<'a> {
    tools: &'a ToolCenter,
    hooks: &'a crate::hooks::Hooks,
    agent: &'a agent_proto::Agent,
    events: &'a dyn super::EventSink,
    message_id: String,
}

/// Runs a checked call to its end, sending its progress as `toolProgress` events.
async fn execute_call(shared: Shared<'_>, id: &str, checked: Checked) -> Result<Outcome, End> {
    let Checked {
        prepared,
        ctx,
        permits,
    } = checked;
    let (progress_tx, mut progress_rx) = tokio::sync::mpsc::channel(16);
    let execution = shared.tools.execute(
        shared.agent,
        &prepared,
        &ctx,
        permits,
        id,
        Some(progress_tx),
    );
    tokio::pin!(execution);
    let emit = async |p: crate::tools::mcp::Progress| {
        let event = EventKind::ToolProgress {
            message_id: shared.message_id.clone(),
            tool_call_id: id.to_owned(),
            progress: p.progress,
            total: p.total,
            message: p.message,
            output: p.output,
        };
        shared
            .events
            .emit(event)
            .await
            .map_err(|e| End::Internal(format!("cannot emit an event: {e}")))
    };
    let outcome = loop {
        tokio::select! {
            outcome = &mut execution => break outcome,
            Some(p) = progress_rx.recv() => emit(p).await?,
        }
    };
    // Progress that came before the result goes out before it (the result is emitted
    // once the call is settled): what the channel still holds is sent, nothing waited for.
    progress_rx.close();
    while let Ok(p) = progress_rx.try_recv() {
        emit(p).await?;
    }
    Ok(super::hooks::after_tool(
        shared.hooks,
        shared.agent,
        &shared.message_id,
        id,
        &prepared,
        &ctx,
        outcome,
    )
    .await)
}

impl<'a> Run<'a> {
    /// What a call's execution needs, free of the writer (so several can run at once).
    fn shared(&self) -> Shared<'a> {
        Shared {
            tools: self.tools,
            hooks: self.hooks,
            agent: self.agent,
            events: self.events,
            message_id: self.writer.id().to_owned(),
        }
    }
}

impl Run<'_> {
    pub(super) fn tool_context(&mut self) -> Result<ToolContext, String> {
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
    pub(super) fn permission_paths(&mut self, id: &str) -> Option<Vec<String>> {
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

    pub(super) async fn prepare(&mut self, id: &str) -> Result<(Prepared, ToolContext), String> {
        let (name, args) = self
            .call_of(id)
            .ok_or("the call vanished from its message")?;
        let ctx = self.tool_context()?;
        let prepared = self.tools.prepare(self.agent, &name, &args, &ctx).await?;
        Ok((prepared, ctx))
    }

    /// Checks (unless approved) and runs one call.
    pub(super) async fn run_call(&mut self, id: &str, approved: bool) -> Result<(), End> {
        let Some(checked) = self.check_call(id, approved).await? else {
            return Ok(());
        };
        self.before_change(&checked.prepared).await;
        self.start_call(id, &checked).await?;
        let outcome = self
            .saving_while(execute_call(self.shared(), id, checked))
            .await??;
        let outcome = self.stop_status(outcome);
        self.settle(id, outcome).await
    }

    /// Waits for `work` (calls running) while keeping the message's timed saves: what
    /// calls changed without a save of their own ([`MessageWriter::record`]) is saved
    /// beside the run once it is 250 ms old, however long the tools take.
    ///
    /// [`MessageWriter::record`]: super::writer::MessageWriter::record
    async fn saving_while<T>(&mut self, work: impl Future<Output = T>) -> Result<T, End> {
        tokio::pin!(work);
        let mut waits = super::waits::StreamWaits::new(&self.control.token);
        loop {
            waits.arm_save(self.writer.flush_due());
            tokio::select! {
                out = &mut work => return Ok(out),
                () = &mut waits.save, if waits.save_armed() => self.writer.save_soon()?,
            }
        }
    }

    /// Runs calls side by side (the `task` calls of one answer: each waits on a subagent),
    /// at most `max_parallel` at a time; each is settled as soon as it ends. A call the
    /// policy refuses is settled at once; one it would ask about suspends the run before
    /// any of them starts.
    pub(super) async fn run_parallel(&mut self, ids: Vec<String>) -> Result<(), End> {
        let mut batch = Vec::with_capacity(ids.len());
        for id in ids {
            if let Some(end) = self.checkpoint() {
                return Err(end);
            }
            if let Some(checked) = self.check_call(&id, false).await? {
                batch.push((id, checked));
            }
        }
        for (id, checked) in &batch {
            self.before_change(&checked.prepared).await;
            self.start_call(id, checked).await?;
        }
        let shared = self.shared();
        let mut running = futures::stream::iter(batch.into_iter().map(move |(id, checked)| {
            let shared = shared.clone();
            async move {
                let outcome = execute_call(shared, &id, checked).await;
                (id, outcome)
            }
        }))
        .buffer_unordered(self.max_parallel.max(1));
        // The calls still running are polled while a finished one is settled: a call
        // paused mid-query would keep its store connection, and the settle waiting for
        // that connection would never get it (the writer pool has one).
        let mut finished = std::collections::VecDeque::new();
        let mut all_done = false;
        loop {
            let Some((id, outcome)) = finished.pop_front() else {
                if all_done {
                    return Ok(());
                }
                match self.saving_while(running.next()).await? {
                    Some(done) => finished.push_back(done),
                    None => all_done = true,
                }
                continue;
            };
            let outcome = self.stop_status(outcome?);
            let settle = self.settle(&id, outcome);
            tokio::pin!(settle);
            loop {
                tokio::select! {
                    settled = &mut settle => {
                        settled?;
                        break;
                    }
                    next = running.next(), if !all_done => match next {
                        Some(done) => finished.push_back(done),
                        None => all_done = true,
                    },
                }
            }
        }
    }

    /// Prepares a call and asks the policy (unless a client approved it). `None`: the
    /// call was settled without running (invalid, denied); `Err`: the run ends (it
    /// suspended on a prompt or a question, or failed).
    async fn check_call(&mut self, id: &str, approved: bool) -> Result<Option<Checked>, End> {
        let (prepared, ctx) = match self.prepare(id).await {
            Ok(p) => p,
            Err(message) => {
                self.settle(id, Outcome::settled(ToolCallStatus::Error, message))
                    .await?;
                return Ok(None);
            }
        };
        let grants = self.store.grants_for(&self.agent.id).await?;
        let mut approval = Approval::default();
        if approved {
            // The prompt the client answered says what else it granted.
            approval = self.prompted_approval(id);
            // A client's answer applies to what its prompt showed, and to nothing else.
            let shown = self.permission_paths(id);
            if let Err(message) = prepared.check_prompted(shown.as_deref()) {
                self.settle(id, Outcome::settled(ToolCallStatus::Error, message))
                    .await?;
                return Ok(None);
            }
        } else {
            match self.tools.decide(self.agent, &prepared, &grants) {
                Decision::Allow => {}
                Decision::Deny(reason) => {
                    let outcome =
                        Outcome::settled(ToolCallStatus::Denied, format!("denied: {reason}"));
                    self.settle(id, outcome).await?;
                    return Ok(None);
                }
                Decision::Ask(ask) => return Err(self.suspend(id, &prepared, ask).await),
            }
        }
        let Some(prepared) = self.before_tool(id, prepared, &ctx, &grants).await? else {
            return Ok(None);
        };
        // A question is not run: the user answers it.
        if prepared.tool.name() == question::NAME {
            return Err(self.suspend_question(id, &prepared).await);
        }
        Ok(Some(Checked {
            prepared,
            ctx,
            permits: Permits { grants, approval },
        }))
    }

    /// What the prompt of an approved call granted besides running it: the network, or
    /// running outside the sandbox. A call without a kept prompt gets neither.
    fn prompted_approval(&mut self, id: &str) -> Approval {
        self.writer
            .call_mut(id)
            .and_then(|call| call.prompt.as_deref())
            .map(|prompt| Approval {
                network: prompt.network_access,
                outside_sandbox: prompt.outside_sandbox,
            })
            .unwrap_or_default()
    }

    /// Marks a checked call running, in the message and the execution record.
    async fn start_call(&mut self, id: &str, checked: &Checked) -> Result<(), End> {
        if let Some(call) = self.writer.call_mut(id) {
            call.status = ToolCallStatus::Running;
        }
        let start = ToolExecution {
            agent_id: self.agent.id.clone(),
            message_id: self.writer.id().to_owned(),
            tool_call_id: id.to_owned(),
            tool_name: checked.prepared.tool.name().to_owned(),
            input: checked.prepared.args.to_string(),
            started_at: now_ms(),
        };
        self.writer.record_start(ToolRecord::Start(&start)).await?;
        Ok(())
    }

    /// A call that did not succeed while its run was stopped was cancelled (or
    /// interrupted, when the daemon stops), whatever it says.
    fn stop_status(&self, mut outcome: Outcome) -> Outcome {
        if self.control.is_stopped() && outcome.status != ToolCallStatus::Success {
            outcome.status = match self.control.reason() {
                Some(StopReason::Shutdown) => ToolCallStatus::Interrupted,
                _ => ToolCallStatus::Cancelled,
            };
        }
        outcome
    }

    /// Gives a call its result: saved in the message and the execution record, and sent.
    pub(super) async fn settle(&mut self, id: &str, outcome: Outcome) -> Result<(), End> {
        let Some(call) = self.writer.call_mut(id) else {
            return Ok(());
        };
        let ran = call.status == ToolCallStatus::Running;
        let (name, input) = (call.name.clone(), call.arguments.to_string());
        self.metrics
            .tool_call(self.tools.metric_name(&name), outcome.status);
        let Some(call) = self.writer.call_mut(id) else {
            return Ok(());
        };
        call.status = outcome.status;
        call.result = Some(ToolCallResult {
            content: outcome.content.clone(),
            is_error: outcome.is_error,
            offload_path: outcome.offload_path.clone(),
            duration_ms: Some(outcome.duration_ms),
        });
        let message_id = self.writer.id().to_owned();
        let start = (!ran).then(|| ToolExecution {
            agent_id: self.agent.id.clone(),
            message_id: message_id.clone(),
            tool_call_id: id.to_owned(),
            tool_name: name,
            input,
            started_at: now_ms(),
        });
        let end = ToolExecutionEnd {
            status: status_name(outcome.status),
            output: outcome.content.clone(),
            offload_path: outcome.offload_path.clone(),
            finished_at: now_ms(),
            duration_ms: outcome.duration_ms,
        };
        self.writer
            .record(ToolRecord::End {
                tool_call_id: id,
                start: start.as_ref(),
                end: &end,
            })
            .await?;
        self.writer.result_given();
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
}

/// The finished call status of a `tool_executions.status` (`None`: `running`, or a name
/// this daemon does not write).
pub(super) fn status_of_name(name: &str) -> Option<ToolCallStatus> {
    [
        ToolCallStatus::Success,
        ToolCallStatus::Error,
        ToolCallStatus::Denied,
        ToolCallStatus::Cancelled,
        ToolCallStatus::Interrupted,
    ]
    .into_iter()
    .find(|s| status_name(*s) == name)
}

/// The `tool_executions.status` of a call status.
pub(super) fn status_name(status: ToolCallStatus) -> &'static str {
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
        | ToolCallStatus::WaitingAnswer
        | ToolCallStatus::Approved => "running",
    }
}
