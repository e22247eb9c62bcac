//! External ACP agents as the backend of agents of mode `acp`.
//!
//! An agent of mode `acp` is answered by another program that speaks the Agent Client
//! Protocol (Zed's, Claude Code's or Gemini CLI's ACP adapter, ...): the daemon is its ACP
//! *client*, as an editor would be. [`AcpAgents`] owns one supervised child per such agent
//! ([`link::Link`]: its own process group through the child guard, the MCP servers'
//! environment policy, a stderr tail, stopped at shutdown, started again with a backoff
//! after it exits), opened on a session whose `cwd` is the agent's workspace.
//!
//! The run of such an agent (`agent_loop::acp`) sends the user's message as
//! `session/prompt` and maps the `session/update` stream onto the message and the events.
//! The external agent's `session/request_permission` and the `fs/*` calls agentd's own
//! rules ask about become waiting tool calls, exactly like a prompt of agentd's own loop
//! (one suspension mechanism): saved, announced, answerable from any client.

pub mod link;

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_proto::AcpBackend;

pub use crate::config::AcpAgentConfig;
use crate::process::ProcessLauncher;
pub use link::{Inbound, InboxStream, Link, Pending, Turn};

/// Checks the config's entries: names unique and non-empty, commands non-empty.
pub fn validate(configs: &[AcpAgentConfig]) -> Result<(), String> {
    let mut seen = std::collections::HashSet::new();
    for (i, c) in configs.iter().enumerate() {
        if c.name.trim().is_empty() {
            return Err(format!("acp_agents[{i}]: name is empty"));
        }
        if c.command.trim().is_empty() {
            return Err(format!("acp_agents[{i}] ({}): command is empty", c.name));
        }
        if c.start_timeout_secs == Some(0) {
            return Err(format!(
                "acp_agents[{i}] ({}): start_timeout_secs must be at least 1",
                c.name
            ));
        }
        if !seen.insert(c.name.as_str()) {
            return Err(format!("acp_agents: the name {:?} is used twice", c.name));
        }
    }
    Ok(())
}

/// How long an agent gets to answer `initialize`, then `session/new`, unless its entry
/// says otherwise (`start_timeout_secs`): an agent that never answers must not hold the run.
pub const START_TIMEOUT: Duration = Duration::from_secs(30);
/// First wait before starting an agent again that exited soon after it started.
const BACKOFF_FIRST: Duration = Duration::from_millis(500);
/// The longest such wait.
const BACKOFF_MAX: Duration = Duration::from_secs(30);
/// An agent that ran this long before it exited starts again at once.
const STABLE_AFTER: Duration = Duration::from_secs(60);

/// What the daemon knows about one agent's external process.
#[derive(Default)]
struct Slot {
    link: Option<Arc<Link>>,
    /// The wait before the next start, grown each time a start dies young.
    backoff: Option<Duration>,
}

/// The external agents of the daemon's agents of mode `acp`.
pub struct AcpAgents {
    configs: HashMap<String, AcpAgentConfig>,
    processes: Arc<ProcessLauncher>,
    slots: Mutex<HashMap<String, Slot>>,
}

/// The command line an agent of mode `acp` runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// What errors call it: the entry's name, or the program's file name.
    pub name: String,
    pub program: String,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    /// The wait for each answer of its start (`initialize`, `session/new`).
    pub start_timeout: Duration,
}

impl std::fmt::Debug for AcpAgents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AcpAgents")
            .field("configured", &self.names())
            .finish_non_exhaustive()
    }
}

impl AcpAgents {
    pub fn new(configs: &[AcpAgentConfig], processes: Arc<ProcessLauncher>) -> AcpAgents {
        AcpAgents {
            configs: configs
                .iter()
                .map(|c| (c.name.clone(), c.clone()))
                .collect(),
            processes,
            slots: Mutex::new(HashMap::new()),
        }
    }

    /// The config's entries, by name.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.configs.keys().cloned().collect();
        names.sort();
        names
    }

    /// What `backend` runs: its config entry's command, or its own. `Err` says why it
    /// cannot run (both or neither given, an unknown name).
    pub fn command(&self, backend: &AcpBackend) -> Result<Command, String> {
        match (&backend.name, &backend.command) {
            (Some(_), Some(_)) => Err("acp: give name or command, not both".into()),
            (None, None) => {
                Err("acp: name (one of the config's [[acp_agents]]) or command is required".into())
            }
            (Some(name), None) => {
                if !backend.args.is_empty() || !backend.env.is_empty() {
                    return Err(
                        "acp: args and env come from the config entry when name is given".into(),
                    );
                }
                let config = self.configs.get(name).ok_or_else(|| {
                    let names = self.names();
                    format!(
                        "acp: no [[acp_agents]] entry is named {name:?} (configured: {})",
                        if names.is_empty() {
                            "none".to_owned()
                        } else {
                            names.join(", ")
                        }
                    )
                })?;
                Ok(Command {
                    name: name.clone(),
                    program: config.command.clone(),
                    args: config.args.clone(),
                    env: config.env.clone(),
                    start_timeout: config
                        .start_timeout_secs
                        .map_or(START_TIMEOUT, Duration::from_secs),
                })
            }
            (None, Some(command)) if command.trim().is_empty() => {
                Err("acp: command is empty".into())
            }
            (None, Some(command)) => Ok(Command {
                name: program_name(command),
                program: command.clone(),
                args: backend.args.clone(),
                env: backend.env.clone(),
                start_timeout: START_TIMEOUT,
            }),
        }
    }

    /// The agent's live link, if its process runs.
    pub fn live(&self, agent_id: &str) -> Option<Arc<Link>> {
        let slots = self.lock();
        slots
            .get(agent_id)
            .and_then(|s| s.link.clone())
            .filter(|l| !l.is_gone())
    }

    /// The agent's live link, or (`Err`) the wait its last exit earned before the next
    /// start, if any: an agent that exited soon after it started waits longer each time
    /// (from 0.5 s, doubling, at most 30 s).
    pub fn next_start(&self, agent_id: &str) -> Result<Arc<Link>, Option<Duration>> {
        let mut slots = self.lock();
        let slot = slots.entry(agent_id.to_owned()).or_default();
        match &slot.link {
            Some(link) if !link.is_gone() => Ok(link.clone()),
            Some(link) => {
                let young = link.started().elapsed() < STABLE_AFTER;
                slot.backoff = young.then(|| grow(slot.backoff));
                slot.link = None;
                Err(slot.backoff)
            }
            None => Err(slot.backoff),
        }
    }

    /// Starts the agent's process in `workspace` and opens its session there. A start
    /// that fails grows the wait before the next one.
    pub async fn start(
        &self,
        agent_id: &str,
        command: &Command,
        workspace: &Path,
    ) -> Result<Arc<Link>, String> {
        match Link::start(agent_id, command, workspace, &self.processes).await {
            Ok(link) => {
                let link = Arc::new(link);
                let old = self
                    .lock()
                    .entry(agent_id.to_owned())
                    .or_default()
                    .link
                    .replace(link.clone());
                if let Some(old) = old {
                    old.stop().await;
                }
                Ok(link)
            }
            Err(e) => {
                let mut slots = self.lock();
                let slot = slots.entry(agent_id.to_owned()).or_default();
                slot.backoff = Some(grow(slot.backoff));
                Err(e)
            }
        }
    }

    /// Stops the agent's process (the agent was deleted, or its backend changed).
    pub async fn stop(&self, agent_id: &str) {
        let link = self.lock().remove(agent_id).and_then(|s| s.link);
        if let Some(link) = link {
            link.stop().await;
        }
    }

    /// Stops every process (daemon shutdown).
    pub async fn shutdown(&self) {
        let links: Vec<Arc<Link>> = self.lock().drain().filter_map(|(_, s)| s.link).collect();
        futures::future::join_all(links.iter().map(|l| l.stop())).await;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Slot>> {
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The file name of a program (what an agent running its own command is called).
pub fn program_name(program: &str) -> String {
    Path::new(program)
        .file_name()
        .map_or_else(|| program.to_owned(), |n| n.to_string_lossy().into_owned())
}

/// The next wait before a start, after one more young death.
fn grow(backoff: Option<Duration>) -> Duration {
    backoff.map_or(BACKOFF_FIRST, |b| (b * 2).min(BACKOFF_MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn configs() -> Vec<AcpAgentConfig> {
        vec![AcpAgentConfig {
            name: "gem".into(),
            command: "gemini".into(),
            args: vec!["--experimental-acp".into()],
            env: BTreeMap::new(),
            start_timeout_secs: Some(5),
        }]
    }

    #[test]
    fn a_backend_names_an_entry_or_brings_a_command() {
        let agents = AcpAgents::new(&configs(), Arc::new(ProcessLauncher::for_tests()));
        let named = AcpBackend {
            name: Some("gem".into()),
            ..AcpBackend::default()
        };
        let command = agents.command(&named).unwrap();
        assert_eq!(
            (command.name.as_str(), command.program.as_str()),
            ("gem", "gemini")
        );
        assert_eq!(command.start_timeout, Duration::from_secs(5));
        let own = AcpBackend {
            command: Some("my-agent".into()),
            args: vec!["--acp".into()],
            ..AcpBackend::default()
        };
        let command = agents.command(&own).unwrap();
        assert_eq!(command.args, vec!["--acp"]);
        assert_eq!(
            (command.name.as_str(), command.start_timeout),
            ("my-agent", START_TIMEOUT)
        );
        for (bad, why) in [
            (AcpBackend::default(), "is required"),
            (
                AcpBackend {
                    name: Some("gem".into()),
                    command: Some("x".into()),
                    ..AcpBackend::default()
                },
                "not both",
            ),
            (
                AcpBackend {
                    name: Some("nope".into()),
                    ..AcpBackend::default()
                },
                "configured: gem",
            ),
            (
                AcpBackend {
                    name: Some("gem".into()),
                    args: vec!["x".into()],
                    ..AcpBackend::default()
                },
                "come from the config entry",
            ),
            (
                AcpBackend {
                    command: Some(" ".into()),
                    ..AcpBackend::default()
                },
                "command is empty",
            ),
        ] {
            let e = agents.command(&bad).unwrap_err();
            assert!(e.contains(why), "{e}");
        }
    }

    #[test]
    fn young_deaths_wait_longer_each_time() {
        let mut b = None;
        let waits: Vec<u128> = (0..9)
            .map(|_| {
                let next = grow(b);
                b = Some(next);
                next.as_millis()
            })
            .collect();
        assert_eq!(
            waits,
            [500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]
        );
    }

    #[test]
    fn config_entries_are_checked() {
        assert!(validate(&configs()).is_ok());
        let mut twice = configs();
        twice.extend(configs());
        assert!(validate(&twice).unwrap_err().contains("used twice"));
        let mut empty = configs();
        empty[0].command = String::new();
        assert!(validate(&empty).unwrap_err().contains("command is empty"));
        let mut never = configs();
        never[0].start_timeout_secs = Some(0);
        assert!(validate(&never).unwrap_err().contains("at least 1"));
    }
}
