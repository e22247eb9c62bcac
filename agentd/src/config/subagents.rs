//! `[subagents]`: how deep and how wide subagents go, and more types (checked and resolved
//! by `agents::subagents`).

use serde::Deserialize;

/// The `[subagents]` section.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SubagentsConfig {
    /// How many levels of subagents below an agent a client created (default 2: a
    /// subagent may start subagents, theirs may not). 0 turns `task` off.
    pub max_depth: u32,
    /// Subagents of one parent working at once, foreground and background together
    /// (default 4); more wait their turn.
    pub max_parallel: usize,
    /// More types (`[[subagents.types]]`).
    pub types: Vec<SubagentTypeConfig>,
}

impl Default for SubagentsConfig {
    fn default() -> Self {
        SubagentsConfig {
            max_depth: 2,
            max_parallel: 4,
            types: Vec::new(),
        }
    }
}

/// A subagent type from the config.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct SubagentTypeConfig {
    pub name: String,
    /// For the model's tool description and for people.
    #[serde(default)]
    pub description: Option<String>,
    /// Builtin tools it gets (names as in `listTools`), those of them the parent has;
    /// absent: the parent's, less `task`.
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    /// MCP servers (`name`) or tools (`server/tool`) it gets, when `tools` is set, those of
    /// them the parent has (absent: none).
    #[serde(default)]
    pub mcp: Option<Vec<String>>,
    /// Its system prompt (absent: the `general` one).
    #[serde(default)]
    pub system_prompt: Option<String>,
    /// Provider and model (absent: the parent's).
    #[serde(default)]
    pub provider: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    /// Its runs' `maxSteps` (absent: the parent's).
    #[serde(default)]
    pub max_steps: Option<u32>,
}
