//! Hooks around tool calls (`crate::hooks` runs them; this decides what they may do).
//!
//! `beforeTool` hooks run after the permission check, in order: exit 2 blocks the call
//! (status `denied`, the hook's stderr as the reason); exit 0 may print
//! `{"arguments": {...}}` to rewrite the arguments, and the rewritten call must then pass
//! the policy on its own, without asking (an approval was for the call the user saw), or it
//! is blocked: a hook only ever makes a call stricter. Any other end is logged and ignored.
//! `afterTool` hooks run once the call has its result; what one prints (exit 0) is
//! appended to the result the model gets.

use agent_proto::{Agent, HookEvent, ToolCallStatus};
use serde_json::{Value, json};

use super::{End, Run};
use crate::hooks::{self, HookEnd};
use crate::store::Grant;
use crate::tools::ToolContext;
use crate::tools::center::{Outcome, Prepared};
use crate::tools::permission::Decision;

impl Run<'_> {
    /// Runs the `beforeTool` hooks of a checked call: the call to run (maybe rewritten), or
    /// `None` when it was settled without running.
    pub(super) async fn before_tool(
        &mut self,
        id: &str,
        mut prepared: Prepared,
        ctx: &ToolContext,
        grants: &[Grant],
    ) -> Result<Option<Prepared>, End> {
        let hooks = self.hooks;
        let agent = self.agent;
        let name = prepared.tool.name().to_owned();
        let specs = hooks.matching(agent, HookEvent::BeforeTool, Some(&name));
        for spec in specs {
            let payload = json!({
                "event": "beforeTool",
                "agentId": agent.id,
                "messageId": self.writer.id(),
                "toolCallId": id,
                "tool": name,
                "arguments": prepared.args,
                "workspace": ctx.sandbox.workspace(),
            });
            let run = hooks
                .run(spec, &payload, ctx.sandbox.workspace(), &ctx.cancel)
                .await;
            match run.end {
                HookEnd::Exited(2) => {
                    let why = run.stderr.trim();
                    let why = if why.is_empty() {
                        "no reason given"
                    } else {
                        why
                    };
                    let outcome = Outcome::settled(
                        ToolCallStatus::Denied,
                        format!("blocked by a beforeTool hook: {why}"),
                    );
                    self.settle(id, outcome).await?;
                    return Ok(None);
                }
                HookEnd::Exited(0) => {
                    let Some(arguments) = rewritten(&run.stdout) else {
                        continue;
                    };
                    match self.rewrite(&name, arguments, ctx, grants).await {
                        Ok(next) => {
                            if let Some(call) = self.writer.call_mut(id) {
                                call.arguments = next.args.clone();
                            }
                            prepared = next;
                        }
                        Err(why) => {
                            let outcome = Outcome::settled(
                                ToolCallStatus::Denied,
                                format!(
                                    "blocked: a beforeTool hook rewrote the arguments, and {why}"
                                ),
                            );
                            self.settle(id, outcome).await?;
                            return Ok(None);
                        }
                    }
                }
                HookEnd::Cancelled => {
                    // The run is stopping: the call does not start.
                    let outcome =
                        Outcome::settled(ToolCallStatus::Cancelled, "cancelled before it ran");
                    self.settle(id, outcome).await?;
                    return Ok(None);
                }
                _ => hooks::log_unless_ok(spec, &run),
            }
        }
        Ok(Some(prepared))
    }

    /// The call with rewritten arguments, if the policy allows it without asking.
    async fn rewrite(
        &self,
        name: &str,
        arguments: Value,
        ctx: &ToolContext,
        grants: &[Grant],
    ) -> Result<Prepared, String> {
        let next = self
            .tools
            .prepare(self.agent, name, &arguments, ctx)
            .await
            .map_err(|e| format!("the new call is not valid: {e}"))?;
        match self.tools.decide(self.agent, &next, grants) {
            Decision::Allow => Ok(next),
            Decision::Deny(reason) => Err(format!("the new call is refused: {reason}")),
            Decision::Ask(_) => Err("the new call would need a permission nobody gave".into()),
        }
    }
}

/// The arguments a `beforeTool` hook's output rewrites the call to, if it asks for that:
/// a JSON object with an `arguments` object. Anything else leaves the call as it was.
fn rewritten(stdout: &str) -> Option<Value> {
    let reply: Value = serde_json::from_str(stdout.trim()).ok()?;
    let arguments = reply.get("arguments")?;
    arguments.is_object().then(|| arguments.clone())
}

/// Runs the `afterTool` hooks of a call that has its outcome; returns it with what they
/// printed appended.
pub(super) async fn after_tool(
    hooks: &crate::hooks::Hooks,
    agent: &Agent,
    message_id: &str,
    id: &str,
    prepared: &Prepared,
    ctx: &ToolContext,
    mut outcome: Outcome,
) -> Outcome {
    if ctx.cancel.is_cancelled() {
        return outcome; // the run is stopping: nothing more runs for this call
    }
    let name = prepared.tool.name();
    for spec in hooks.matching(agent, HookEvent::AfterTool, Some(name)) {
        let payload = json!({
            "event": "afterTool",
            "agentId": agent.id,
            "messageId": message_id,
            "toolCallId": id,
            "tool": name,
            "arguments": prepared.args,
            "workspace": ctx.sandbox.workspace(),
            "result": {
                "status": super::calls::status_name(outcome.status),
                "content": outcome.content,
                "isError": outcome.is_error,
            },
        });
        let run = hooks
            .run(spec, &payload, ctx.sandbox.workspace(), &ctx.cancel)
            .await;
        match run.end {
            HookEnd::Exited(0) if !run.stdout.trim().is_empty() => {
                outcome.content.push_str("\n\n[afterTool hook]\n");
                outcome.content.push_str(run.stdout.trim_end());
            }
            HookEnd::Exited(0) => {}
            HookEnd::Cancelled => break,
            _ => hooks::log_unless_ok(spec, &run),
        }
    }
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_arguments_object_rewrites() {
        assert_eq!(
            rewritten("{\"arguments\": {\"command\": \"ls\"}}\n"),
            Some(json!({"command": "ls"}))
        );
        assert_eq!(rewritten(""), None);
        assert_eq!(rewritten("ok"), None);
        assert_eq!(rewritten("{\"arguments\": \"ls\"}"), None);
        assert_eq!(rewritten("{\"decision\": \"allow\"}"), None);
    }
}
