//! `[[profiles]]`: profiles besides the built-in ones (checked and resolved by
//! `profiles`).

use agent_proto::PermissionRules;
use serde::Deserialize;

/// One `[[profiles]]` entry. Every key but `name` is optional; what it does not give comes
/// from the profile it `extends`.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ProfileConfig {
    /// Letters, digits, `_`, `-` and `.`, at most 64. A built-in profile's name replaces
    /// that profile.
    pub name: String,
    pub description: Option<String>,
    /// A built-in profile or one defined earlier in the file, to start from.
    pub extends: Option<String>,
    /// The prompt template (`{{workspace}}`, `{{date}}`, `{{os}}`, `{{profile}}`).
    pub system_prompt: Option<String>,
    /// The builtin tools, replacing the extended profile's (`[]`: none).
    pub tools: Option<Vec<String>>,
    /// Tools added to the set (`tools`, else the extended profile's).
    #[serde(default)]
    pub add_tools: Vec<String>,
    /// Tools taken out of the set; each must be in it.
    #[serde(default)]
    pub remove_tools: Vec<String>,
    /// MCP servers (`server`) or tools (`server/tool`) offered; absent: the extended
    /// profile's, else all of them.
    pub mcp: Option<Vec<String>>,
    /// Per-level rules over the config's `[permissions]`; levels not given are the
    /// extended profile's.
    pub permissions: Option<PermissionRules>,
    pub temperature: Option<f64>,
    pub max_output_tokens: Option<u32>,
    /// The OS sandbox of its agents' commands, over the config's `[sandbox] mode`; absent:
    /// the extended profile's.
    pub sandbox: Option<agent_proto::SandboxMode>,
}
