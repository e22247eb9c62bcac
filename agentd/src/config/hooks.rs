//! `[[hooks]]`: commands run at points of every agent's runs (checked by `hooks::validate`,
//! run by `hooks`).

use agent_proto::{HookEvent, HookSpec};
use serde::Deserialize;

/// A `[[hooks]]` entry of the config.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookConfig {
    pub event: HookEvent,
    #[serde(default)]
    pub matcher: Option<String>,
    pub command: String,
    #[serde(default)]
    pub timeout_secs: Option<u64>,
}

impl HookConfig {
    pub fn spec(&self) -> HookSpec {
        HookSpec {
            event: self.event,
            matcher: self.matcher.clone(),
            command: self.command.clone(),
            timeout_secs: self.timeout_secs,
        }
    }
}
