//! MCP servers: how one is configured (config file or RPC) and what `listMcpServers` shows.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How the daemon talks to a server.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum McpTransport {
    /// A child process speaking MCP on stdin/stdout.
    #[default]
    Stdio,
    /// Streamable HTTP at `url`.
    Http,
}

fn yes() -> bool {
    true
}

/// An MCP server's configuration. The same shape in the config file (`[[mcp_servers]]`,
/// where snake_case names are accepted too) and in `addMcpServer`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct McpServerSpec {
    /// Unique; letters, digits, `-` and `_` (it prefixes tool names on a clash).
    pub name: String,
    #[serde(default)]
    pub transport: McpTransport,
    /// stdio: the program to run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// stdio: environment added to the daemon's.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// stdio: working directory.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        alias = "working_dir"
    )]
    pub cwd: Option<String>,
    /// http: the endpoint, e.g. `http://127.0.0.1:3001/mcp`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// http: headers sent with every request.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Start with the daemon (else when an agent with tools first runs).
    #[serde(default = "yes", alias = "auto_start")]
    pub auto_start: bool,
    /// Tools (by the server's names; `*` for all) that run without a permission prompt.
    #[serde(default, skip_serializing_if = "Vec::is_empty", alias = "auto_approve")]
    pub auto_approve: Vec<String>,
    /// Seconds to start and list tools (default 10).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        alias = "startup_timeout_secs"
    )]
    pub startup_timeout_secs: Option<u64>,
    /// Seconds one tool call may take (default 120).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        alias = "call_timeout_secs"
    )]
    pub call_timeout_secs: Option<u64>,
    /// Only these agents (by id) are offered the server's tools; empty: every agent (as
    /// their `enabledMcpTools` allow). `agentd acp` adds an editor's servers this way.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<String>,
}

impl McpServerSpec {
    /// A spec for showing: env and header values (often secrets) replaced by `***`.
    pub fn redacted(&self) -> McpServerSpec {
        let hide = |m: &BTreeMap<String, String>| {
            m.keys()
                .map(|k| (k.clone(), "***".to_owned()))
                .collect::<BTreeMap<_, _>>()
        };
        McpServerSpec {
            env: hide(&self.env),
            headers: hide(&self.headers),
            ..self.clone()
        }
    }
}

/// Where a server's configuration comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum McpSource {
    /// The config file: read-only over RPC.
    Config,
    /// Added with `addMcpServer` (stored).
    Rpc,
}

/// A server's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum McpServerStatus {
    Starting,
    Ready,
    /// Down; restarted with backoff (1 s doubling to 60 s).
    Failed,
    /// Disabled, not started yet (lazy), or removed.
    Stopped,
}

impl McpServerStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            McpServerStatus::Starting => "starting",
            McpServerStatus::Ready => "ready",
            McpServerStatus::Failed => "failed",
            McpServerStatus::Stopped => "stopped",
        }
    }
}

/// One tool of a server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpToolName {
    /// The server's name for it.
    pub name: String,
    /// The name the model sees: letters, digits, `_` and `-`, at most 64, unique across
    /// servers and builtins (`server__tool` when two servers share a name).
    pub exposed_name: String,
}

/// A tool a server listed that is not offered to any model, and why (no name, no usable
/// input schema, a schema over the size limit, a name listed twice, ...).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpSkippedTool {
    /// Its name, when it had one (cut to 200 characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub reason: String,
}

/// What `listMcpServers` shows of a server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpServerInfo {
    /// The configuration, secrets redacted.
    pub spec: McpServerSpec,
    pub source: McpSource,
    pub status: McpServerStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// The last lines the server wrote to stderr (stdio servers).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stderr_tail: Vec<String>,
    /// Its tools (the cached list while it is down).
    pub tools: Vec<McpToolName>,
    /// Tools of its last listing that are left out, with the reason.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped_tools: Vec<McpSkippedTool>,
    /// Starts after the first.
    pub restarts: u32,
    /// While `failed`: the wait before the next start (it doubles while the server keeps
    /// failing, and starts over once a server stayed up long enough).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_delay_ms: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpServerList {
    pub servers: Vec<McpServerInfo>,
}
