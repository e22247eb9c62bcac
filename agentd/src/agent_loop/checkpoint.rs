//! Taking undo's snapshots around a step's calls: "before" as the first call that could
//! change files is about to run, "after" once the step's calls have settled (also when the
//! run suspends or stops among them: what ran may have changed files). The store keeps per
//! answer the first "before" and the latest "after".
//!
//! A call could change files unless it is known not to: a read of paths, a web request,
//! the agent's own plan, question or skills. Commands, writes, `task` (a subagent shares
//! the workspace) and every MCP tool (its annotations are a server's word) count. A
//! snapshot that fails never fails the run: the answer's checkpoint keeps why, and undo
//! answers it.

use agent_proto::PermissionLevel;

use super::Run;
use crate::store::now_ms;
use crate::tools::Access;
use crate::tools::builtin::task;
use crate::tools::center::Prepared;
use crate::tools::checkpoint::Checkpoints;

/// Whether running `prepared` could change the workspace's files.
fn may_change_files(prepared: &Prepared) -> bool {
    match &prepared.access {
        Access::Paths { level, .. } => *level != PermissionLevel::Read,
        Access::Host(_) => false,
        Access::Agent => prepared.tool.name() == task::NAME,
        Access::Command(_) | Access::Mcp { .. } => true,
    }
}

impl Run<'_> {
    /// The agent's snapshots, when its calls have a workspace.
    fn checkpoints(&mut self) -> Option<Checkpoints> {
        match self.tool_context() {
            Ok(ctx) => Some(Checkpoints::new(&ctx.sandbox)),
            Err(_) => None,
        }
    }

    /// Before a call runs: the step's "before" snapshot, once per step, when the call
    /// could change files.
    pub(super) async fn before_change(&mut self, prepared: &Prepared) {
        if self.snapshot_pending || !may_change_files(prepared) {
            return;
        }
        let Some(checkpoints) = self.checkpoints() else {
            return;
        };
        self.snapshot_pending = true;
        // The newest snapshot of the agent: when the tree is still what it recorded (the
        // previous step's "after"), it is reused as this "before".
        let previous = match self.store.last_checkpoint(&self.agent.id).await {
            Ok(last) => last.and_then(|c| c.after.or(c.before)),
            Err(e) => {
                tracing::warn!("cannot read the agent's checkpoints: {e}");
                None
            }
        };
        let taken =
            tokio::task::spawn_blocking(move || checkpoints.take(previous.as_deref())).await;
        let taken = flatten(taken);
        if let Err(e) = &taken {
            tracing::warn!(
                agent_id = self.agent.id,
                "no undo snapshot before the step: {e}"
            );
        }
        let message_id = self.writer.id().to_owned();
        let recorded = self
            .store
            .begin_checkpoint(
                &self.agent.id,
                &message_id,
                taken.as_deref().map_err(String::as_str),
                now_ms(),
            )
            .await;
        if let Err(e) = recorded {
            tracing::warn!("cannot record the undo snapshot: {e}");
        }
    }

    /// After a step's calls: its "after" snapshot, when a "before" was taken.
    pub(super) async fn after_changes(&mut self) {
        if !std::mem::take(&mut self.snapshot_pending) {
            return;
        }
        let Some(checkpoints) = self.checkpoints() else {
            return;
        };
        let message_id = self.writer.id().to_owned();
        let before = match self.store.checkpoint(&message_id).await {
            Ok(c) => c.and_then(|c| c.after.or(c.before)),
            Err(_) => None,
        };
        let taken =
            flatten(tokio::task::spawn_blocking(move || checkpoints.take(before.as_deref())).await);
        if let Err(e) = &taken {
            tracing::warn!(
                agent_id = self.agent.id,
                "no undo snapshot after the step: {e}"
            );
        }
        let recorded = self
            .store
            .end_checkpoint(
                &message_id,
                taken.as_deref().map_err(String::as_str),
                now_ms(),
            )
            .await;
        if let Err(e) = recorded {
            tracing::warn!("cannot record the undo snapshot: {e}");
        }
    }
}

fn flatten(
    taken: Result<
        Result<String, crate::tools::checkpoint::CheckpointError>,
        tokio::task::JoinError,
    >,
) -> Result<String, String> {
    match taken {
        Ok(Ok(id)) => Ok(id),
        Ok(Err(e)) => Err(e.to_string()),
        Err(e) => Err(format!("the snapshot task failed: {e}")),
    }
}
