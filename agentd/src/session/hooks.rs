//! The informational hooks of a session: `userMessage` when a message is sent, and
//! `runFinished` when a run ends. They run on their own task (a send is not delayed by
//! them, a run's end is not held), each with a timeout; `userMessage` hooks are killed when
//! the run they belong to is cancelled, both kinds when the daemon stops.

use agent_proto::{Agent, HookEvent};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::SessionManager;

impl SessionManager {
    /// Runs the agent's hooks for `event` in the background, with `fields` added to the
    /// event's JSON.
    pub(super) fn notify_hooks(
        &self,
        agent: &Agent,
        event: HookEvent,
        fields: Value,
        cancel: Option<CancellationToken>,
    ) {
        if self.config.hooks.matching(agent, event, None).is_empty() {
            return;
        }
        let workspace = self.tools.workspace_of(agent);
        let mut payload = json!({
            "event": event,
            "agentId": agent.id,
            "workspace": workspace,
        });
        if let (Some(all), Value::Object(more)) = (payload.as_object_mut(), fields) {
            all.extend(more);
        }
        let hooks = self.config.hooks.clone();
        let agent = agent.clone();
        let stop = self.shutting_down.clone();
        tokio::spawn(async move {
            // A stop of the daemon drops the hooks (their process groups go with them); a
            // cancel of the run they belong to kills them through `cancel`.
            let cancel = cancel.unwrap_or_default();
            tokio::select! {
                () = hooks.notify(&agent, event, &payload, &workspace, &cancel) => {}
                () = stop.cancelled() => {}
            }
        });
    }
}
