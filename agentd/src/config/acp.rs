//! `[[acp_agents]]`: external ACP agents clients name (checked and run by `acp_backend`).

use std::collections::BTreeMap;

use serde::Deserialize;

/// An `[[acp_agents]]` entry of the config: an external agent clients name in
/// `createAgent {mode: "acp", acp: {name}}`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AcpAgentConfig {
    pub name: String,
    /// The program (looked up in `PATH`), speaking ACP on its stdin/stdout.
    pub command: String,
    #[serde(default)]
    pub args: Vec<String>,
    /// Variables added to its environment.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Seconds it gets to answer `initialize`, then `session/new`, each (default 30;
    /// raise it for an adapter that installs itself at first start, e.g. through `npx`).
    #[serde(default)]
    pub start_timeout_secs: Option<u64>,
}
