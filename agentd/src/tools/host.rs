//! What the tools that act on agents ask of the agent layer above the tools.
//!
//! `todo_write` keeps the agent's plan and `task` starts a subagent: both need the store,
//! the sessions and their events, which the tools know nothing of. The agent layer
//! implements [`AgentHost`] and registers it with the tool center; a call reaches it through
//! its `ToolContext`.

use agent_proto::PlanItem;
use futures::future::BoxFuture;

use super::{ToolContext, ToolOutput};

/// A `task` call: what the subagent is to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskCall {
    /// A few words on the task (the subagent's title).
    pub description: String,
    /// The subagent's instructions (its first user message).
    pub prompt: String,
    /// `explore`, `general`, or a type from the config.
    pub subagent_type: String,
    /// Return at once with the subagent's id; its result comes later.
    pub background: bool,
}

/// The agent layer, as the agent tools see it.
pub trait AgentHost: Send + Sync + std::fmt::Debug {
    /// Replaces the plan of `ctx.agent_id` and tells its clients (`planUpdated`).
    fn set_plan<'a>(
        &'a self,
        ctx: &'a ToolContext,
        items: Vec<PlanItem>,
    ) -> BoxFuture<'a, Result<(), String>>;

    /// Runs a subagent for the call `ctx.tool_call_id` of `ctx.agent_id` and returns what
    /// its parent's model gets: the subagent's final answer (at once, its id, when
    /// `background`). Stops the subagent when `ctx.cancel` fires.
    fn run_task<'a>(&'a self, ctx: &'a ToolContext, task: TaskCall) -> BoxFuture<'a, ToolOutput>;
}
