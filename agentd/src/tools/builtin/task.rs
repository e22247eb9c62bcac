//! `task`: the model delegates to a subagent, a real child agent (its own messages,
//! events and permission prompts, visible to every client). The agent layer runs it
//! ([`crate::tools::host::AgentHost::run_task`]); this is the tool's definition.

use std::time::Duration;

use agent_proto::PermissionLevel;
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;

use super::args::TypedTool;
use crate::tools::host::TaskCall;
use crate::tools::{Access, ToolContext, ToolOutput};

/// The tool's name (the loop runs calls of it side by side).
pub const NAME: &str = "task";

/// Characters of a task's description (its subagent's title).
const MAX_DESCRIPTION: usize = 200;

#[derive(Debug)]
pub(super) struct Task;

/// `task`'s arguments. The schema requires `description` and `prompt`; a call without
/// one (which skipped the schema check) gets the same answer as a blank one.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TaskArgs {
    #[schemars(required, length(min = 1, max = MAX_DESCRIPTION))]
    description: Option<String>,
    #[schemars(required, length(min = 1))]
    prompt: Option<String>,
    subagent_type: Option<String>,
    #[serde(default)]
    background: bool,
}

/// The task in the arguments, checked. `Err` is the result text for the model.
fn task_call(args: &TaskArgs) -> Result<TaskCall, String> {
    let description = args
        .description
        .as_deref()
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .ok_or("description is required: a few words on the task")?;
    if description.chars().count() > MAX_DESCRIPTION {
        return Err(format!(
            "description has more than {MAX_DESCRIPTION} characters: a few words; the details go in prompt"
        ));
    }
    let prompt = args
        .prompt
        .as_deref()
        .filter(|p| !p.trim().is_empty())
        .ok_or("prompt is required: what the subagent is to do")?;
    Ok(TaskCall {
        description: description.to_owned(),
        prompt: prompt.to_owned(),
        subagent_type: args
            .subagent_type
            .as_deref()
            .unwrap_or("general")
            .to_owned(),
        background: args.background,
    })
}

impl TypedTool for Task {
    type Args = TaskArgs;

    fn name(&self) -> &'static str {
        NAME
    }

    fn description(&self) -> &'static str {
        "Delegate a self-contained piece of work to a subagent: a new agent with its own context that works in the same workspace and answers with a final report, which becomes this call's result. subagentType \"explore\" has read-only tools (search and read the code, answer a question about it); \"general\" has your tools except task. Give it a short description and a complete prompt (it does not see this conversation): what to do, what to return. Several task calls in one answer run in parallel. With background: true the call returns at once with the subagent's id and its result is given to you later; use it for long work you do not need to wait for."
    }

    fn level(&self) -> PermissionLevel {
        PermissionLevel::Read
    }

    /// A subagent may work for long; its own calls have their own limits, and its
    /// prompts wait for a client.
    fn default_timeout(&self) -> Duration {
        Duration::from_secs(24 * 3600)
    }

    fn access(&self, args: &TaskArgs, _ctx: &ToolContext) -> Result<Access, String> {
        task_call(args)?;
        Ok(Access::Agent)
    }

    fn run<'a>(&'a self, args: TaskArgs, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let task = match task_call(&args) {
                Ok(task) => task,
                Err(e) => return ToolOutput::error(e),
            };
            match &ctx.host {
                Some(host) => host.run_task(ctx, task).await,
                None => ToolOutput::error("subagents cannot be started here (no agent layer)"),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    /// The task in a call's arguments, as the tool reads it.
    fn parse_task(args: &Value) -> Result<TaskCall, String> {
        task_call(&crate::tools::builtin::args::parse(args).map_err(|e| e.to_string())?)
    }

    #[test]
    fn tasks_are_checked() {
        let task =
            parse_task(&json!({"description": " Find uses ", "prompt": "Find every use of foo"}))
                .unwrap();
        assert_eq!(
            task,
            TaskCall {
                description: "Find uses".into(),
                prompt: "Find every use of foo".into(),
                subagent_type: "general".into(),
                background: false,
            }
        );
        let bg = parse_task(&json!({"description": "d", "prompt": "p", "subagentType": "explore", "background": true}))
            .unwrap();
        assert_eq!(
            (bg.subagent_type.as_str(), bg.background),
            ("explore", true)
        );
        for (args, start) in [
            (json!({"prompt": "p"}), "description is required"),
            (
                json!({"description": "d", "prompt": "  "}),
                "prompt is required",
            ),
            (
                json!({"description": "d".repeat(201), "prompt": "p"}),
                "description has more than 200",
            ),
        ] {
            let e = parse_task(&args).unwrap_err();
            assert!(e.starts_with(start), "{args}: {e}");
        }
    }
}
