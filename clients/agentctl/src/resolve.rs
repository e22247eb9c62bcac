//! Agent ids as people type them: a full id, or the start of one (`watch` shows the first
//! eight characters). A prefix must name exactly one agent, archived ones included; an
//! ambiguous one is refused with the candidates, an unknown one with a clear error.
//!
//! The daemon knows only full ids, so every command resolves its agent here before it
//! calls anything else.

use agent_proto::client::Client;
use agent_proto::rpc::AgentRpcClient;
use agent_proto::{Agent, ErrorKind};
use anyhow::{Result, bail};

/// Agents listed per page while looking for a prefix.
const PAGE: u32 = 500;

/// The full id of the one agent whose id is `typed` or starts with it.
pub(crate) async fn agent_id(client: &Client, typed: &str) -> Result<String> {
    let typed = typed.trim();
    if typed.is_empty() {
        bail!("an empty agent id");
    }
    match client.get_agent(typed.to_owned()).await {
        Ok(agent) => return Ok(agent.id),
        Err(agent_proto::client::Error::Call(e)) if e.code() == ErrorKind::AgentNotFound.code() => {
        }
        Err(e) => return Err(e.into()),
    }
    let mut matches = Vec::new();
    for archived in [false, true] {
        let mut cursor = None;
        loop {
            let page = client
                .list_agents(cursor.take(), Some(PAGE), None, None, Some(archived))
                .await?;
            matches.extend(page.agents.into_iter().filter(|a| a.id.starts_with(typed)));
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
    }
    pick(typed, matches)
}

/// The one agent of `matches`, or why there is not one.
fn pick(typed: &str, mut matches: Vec<Agent>) -> Result<String> {
    match matches.len() {
        // Worded as the daemon's own error is, so scripts see the same kind.
        0 => bail!("no agent has the id {typed:?} or an id starting with it (agentNotFound)"),
        1 => Ok(matches.remove(0).id),
        n => {
            let candidates: Vec<String> = matches
                .iter()
                .map(|a| format!("  {}  {}", a.id, a.title))
                .collect();
            bail!(
                "{typed:?} is the start of {n} agent ids; type more of it:\n{}",
                candidates.join("\n")
            )
        }
    }
}
