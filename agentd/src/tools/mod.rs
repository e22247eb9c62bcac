//! Tools: what an agent can do besides talking.
//!
//! The tool center (`center.rs`) is the one place that decides which tools an agent has,
//! parses and validates arguments, asks the permission policy, runs a call with its
//! timeout and cancellation, and shapes (and offloads) the result. Builtin tools live in
//! `builtin/`; the path rules in `sandbox.rs`; shell command analysis in `command.rs`;
//! the permission policy in `permission.rs`; large results in `offload.rs`; how children
//! (bash commands, MCP stdio servers) are started in `process.rs`, with the environment
//! `env.rs` allows them.
//! Tools know nothing of RPC, sessions or events.

pub mod builtin;
pub mod center;
pub mod command;
pub mod env;
pub mod mcp;
pub mod offload;
pub mod permission;
pub mod process;
pub mod sandbox;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agent_proto::PermissionLevel;
use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use sandbox::{ResolvedPath, Sandbox};

/// What a tool call runs with.
#[derive(Debug, Clone)]
pub struct ToolContext {
    pub agent_id: String,
    pub sandbox: Sandbox,
    /// Cancelled when the run is cancelled: a tool must stop (and kill what it started).
    pub cancel: CancellationToken,
    /// The HTTP client for network tools.
    pub http: reqwest::Client,
    /// Starts child processes (the bash tool's commands).
    pub processes: Arc<process::ProcessLauncher>,
}

/// What a tool returns: text for the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    pub content: String,
    /// The call failed (bad input, missing file, non-zero exit...): still a result for the
    /// model, never an error of the run.
    pub is_error: bool,
}

impl ToolOutput {
    pub fn ok(content: impl Into<String>) -> Self {
        ToolOutput {
            content: content.into(),
            is_error: false,
        }
    }

    pub fn error(content: impl Into<String>) -> Self {
        ToolOutput {
            content: content.into(),
            is_error: true,
        }
    }
}

/// What a call will touch, worked out before it runs, for the permission policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Access {
    /// Files read (level read) or written (level write), already resolved.
    Paths {
        level: PermissionLevel,
        paths: Vec<ResolvedPath>,
    },
    /// A shell command (level execute).
    Command(String),
    /// A network request to this host (level network).
    Host(String),
    /// A tool of an MCP server (level from its annotations).
    Mcp {
        server: String,
        tool: String,
        level: PermissionLevel,
        /// The server's `autoApprove` covers it.
        auto_approved: bool,
    },
}

/// A builtin tool.
pub trait BuiltinTool: Send + Sync + std::fmt::Debug {
    /// The wire name, e.g. `read_file`.
    fn name(&self) -> &'static str;
    /// One paragraph for the model.
    fn description(&self) -> &'static str;
    /// JSON Schema of the arguments (an object schema).
    fn schema(&self) -> Value;
    fn level(&self) -> PermissionLevel;
    /// Whether a large result may be offloaded to a file (false for `read_file`, which
    /// pages instead, so reading an offload never offloads again).
    fn offloadable(&self) -> bool {
        true
    }
    /// How long a call may run when its arguments do not say.
    fn default_timeout(&self) -> Duration {
        Duration::from_secs(60)
    }
    /// What the call will touch. Called with arguments already validated against
    /// `schema`; an `Err` becomes an error result without running the tool.
    fn access(&self, args: &Value, ctx: &ToolContext) -> Result<Access, String>;
    /// Runs the call. Must return promptly once `ctx.cancel` is cancelled.
    fn run<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput>;
}

/// Where an agent's offloads live: `<data_dir>/sessions/<agent_id>`.
pub fn offload_dir(data_dir: &std::path::Path, agent_id: &str) -> PathBuf {
    data_dir.join("sessions").join(agent_id)
}
