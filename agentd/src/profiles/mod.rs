//! Profiles: named bundles of a system prompt template, a tool set, permission defaults and
//! model settings that an agent can be given (`profile` of `createAgent`/`updateAgent`).
//!
//! This module owns what a profile is and which ones exist: the four built-in ones
//! (`builtin.rs`: `basic`, `coder`, `planner`, `full`, the seeds' generations) and the
//! config file's `[[profiles]]` (`config.rs`, checked once at load), and the text a request's
//! system prompt is framed with (`environment.rs`: the profile's template rendered, the
//! environment section). It decides nothing at run time and does no I/O: the tool center
//! applies a profile's tools and permissions, `context` its prompt and model settings, and
//! `tools::git` gathers the facts of the environment section.

mod builtin;
mod config;
pub mod environment;

#[cfg(test)]
mod tests;

use agent_proto::{Agent, PermissionRules, ProfileInfo, ProfileSource};

pub use crate::config::ProfileConfig;
pub use environment::{Dirty, Environment, Git, Head};

/// A profile, resolved (everything it extends folded in).
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    pub name: String,
    pub description: String,
    /// The system prompt template: `{{workspace}}`, `{{date}}`, `{{os}}` and `{{profile}}`
    /// are filled in at request time, other `{{...}}` are left as they are.
    pub prompt: String,
    /// The builtin tools it offers, in order, each once. A name the daemon has no tool for
    /// is offered to no model.
    pub tools: Vec<String>,
    /// The MCP servers (`server`) or tools (`server/tool`) it offers; `None`: all of them.
    pub mcp: Option<Vec<String>>,
    /// Rules between the config file's and the agent's own.
    pub permissions: PermissionRules,
    /// Used when the agent's settings name none.
    pub temperature: Option<f64>,
    pub max_output_tokens: Option<u32>,
    /// The sandbox of its agents' commands, over the config's default.
    pub sandbox: Option<agent_proto::SandboxMode>,
    pub source: ProfileSource,
}

impl Profile {
    /// Whether the profile offers the builtin tool `name`.
    pub fn offers_tool(&self, name: &str) -> bool {
        self.tools.iter().any(|t| t == name)
    }

    /// Whether the profile offers the tool `tool` of the MCP server `server` (named by the
    /// server, or as `server/tool`, as in `settings.enabledMcpTools`).
    pub fn offers_mcp(&self, server: &str, tool: &str) -> bool {
        self.mcp.as_ref().is_none_or(|names| {
            names
                .iter()
                .any(|n| n == server || n.split_once('/') == Some((server, tool)))
        })
    }

    /// Whether the profile offers some tool of the MCP server `server`.
    pub fn offers_mcp_server(&self, server: &str) -> bool {
        self.mcp.as_ref().is_none_or(|names| {
            names
                .iter()
                .any(|n| n == server || n.split_once('/').is_some_and(|(s, _)| s == server))
        })
    }

    /// What `listProfiles` shows of it.
    pub fn info(&self) -> ProfileInfo {
        ProfileInfo {
            name: self.name.clone(),
            description: self.description.clone(),
            tools: self.tools.clone(),
            mcp_tools: self.mcp.clone(),
            permissions: self.permissions,
            temperature: self.temperature,
            max_output_tokens: self.max_output_tokens,
            sandbox: self.sandbox,
            source: self.source,
        }
    }
}

/// Why an agent's profile cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProfileError {
    /// The agent names a profile the daemon does not have (the config that defined it
    /// changed). Fail closed: the agent gets no tools and its runs fail with this text
    /// until a client gives it a profile that exists, or none.
    #[error(
        "this agent's profile {name:?} does not exist (the profiles are: {known}); give it one \
         that exists with updateAgent (profile), or profile \"\" for none"
    )]
    Missing { name: String, known: String },
}

/// What frames an agent's own system prompt in one request, gathered at request time:
/// the profile in force (its prompt template and model settings), the skills section and
/// the environment.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptFrame {
    pub profile: Option<Profile>,
    /// The project instructions (`crate::instructions`: the `AGENTS.md` files); `None`
    /// without any, and for agents not of mode `agent`.
    pub instructions: Option<std::sync::Arc<str>>,
    /// The skills the agent can load (`crate::skills::Catalog::section`); `None` without
    /// skills or without the `skill` tool.
    pub skills: Option<String>,
    pub environment: Environment,
}

impl PromptFrame {
    /// The profile's prompt, rendered (`None` without a profile or when it is blank).
    pub fn profile_prompt(&self) -> Option<String> {
        let profile = self.profile.as_ref()?;
        let text = environment::render_template(&profile.prompt, &self.environment);
        (!text.trim().is_empty()).then_some(text)
    }
}

/// Every profile the daemon has: the built-in ones (a config profile of the same name
/// replaces one in place), then the config file's, in its order.
#[derive(Debug, Clone)]
pub struct Profiles {
    list: Vec<Profile>,
}

impl Profiles {
    /// The built-in profiles only.
    pub fn builtin() -> Profiles {
        Profiles {
            list: builtin::all(),
        }
    }

    /// The built-in profiles and a config file's `[[profiles]]`, with its
    /// `[defaults] profile` one of them; `Err` names the entry and the key.
    pub fn from_file(config: &crate::config::ConfigFile) -> Result<Profiles, String> {
        let profiles = Profiles::from_config(&config.profiles)?;
        if let Some(name) = &config.defaults.profile {
            profiles
                .check(name)
                .map_err(|e| format!("defaults.profile: {e}"))?;
        }
        Ok(profiles)
    }

    /// The built-in profiles and the config file's `[[profiles]]`. `Err` names the entry
    /// and the key that is wrong (see [`ProfileConfig`]).
    pub fn from_config(entries: &[ProfileConfig]) -> Result<Profiles, String> {
        let mut profiles = Profiles::builtin();
        for (index, entry) in entries.iter().enumerate() {
            let profile = entry.resolve(index, &profiles, &entries[..index])?;
            match profiles.list.iter_mut().find(|p| p.name == profile.name) {
                Some(slot) => *slot = profile,
                None => profiles.list.push(profile),
            }
        }
        Ok(profiles)
    }

    pub fn get(&self, name: &str) -> Option<&Profile> {
        self.list.iter().find(|p| p.name == name)
    }

    /// Every profile, in order.
    pub fn all(&self) -> &[Profile] {
        &self.list
    }

    /// The names of every profile, comma-separated (for messages).
    pub fn names(&self) -> String {
        let names: Vec<&str> = self.list.iter().map(|p| p.name.as_str()).collect();
        names.join(", ")
    }

    /// The profile an agent runs with: `None` for an agent without one, an error for one
    /// whose profile the daemon does not have.
    pub fn resolve(&self, agent: &Agent) -> Result<Option<&Profile>, ProfileError> {
        let Some(name) = agent.profile.as_deref() else {
            return Ok(None);
        };
        self.get(name)
            .map(Some)
            .ok_or_else(|| ProfileError::Missing {
                name: name.to_owned(),
                known: self.names(),
            })
    }

    /// Checks a profile name a client gives an agent; `Err` is the message for
    /// `invalidParams`, naming the profiles there are.
    pub fn check(&self, name: &str) -> Result<(), String> {
        if self.get(name).is_some() {
            return Ok(());
        }
        Err(format!(
            "unknown profile {name:?}; the profiles are: {} (listProfiles), or \"\" for none",
            self.names()
        ))
    }

    /// What `listProfiles` answers.
    pub fn list(&self) -> Vec<ProfileInfo> {
        self.list.iter().map(Profile::info).collect()
    }
}
