//! Tools: what an agent can do besides talking.
//!
//! The tool center (`center.rs`) is the one place that decides which tools an agent has,
//! parses and validates arguments, asks the permission policy, runs a call with its
//! timeout and cancellation, and shapes (and offloads) the result. Builtin tools live in
//! `builtin/`; the path rules in `sandbox.rs`; shell command analysis in `command.rs`;
//! the permission policy in `permission.rs`; large results in `offload.rs`; how children
//! (bash commands, MCP stdio servers, the workspace's `git`) are started in `process.rs`,
//! with the environment `env.rs` allows them; the workspace's git state for the system
//! prompt is found in `git.rs`, without running what a repository's configuration names.
//! Tools know nothing of RPC, sessions or events.

pub mod builtin;
pub mod center;
pub mod checkpoint;
pub mod command;
pub mod git;
pub mod host;
pub mod mcp;
pub mod offload;
pub mod permission;
pub mod sandbox;
pub mod wall;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agent_proto::PermissionLevel;
use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use center::CallPolicy;
use sandbox::{ResolvedPath, Sandbox};

/// What a tool call runs with.
#[derive(Debug, Clone)]
pub struct ToolContext {
    pub agent_id: String,
    pub sandbox: Sandbox,
    /// Cancelled when the run is cancelled: a tool must stop (and kill what it started).
    pub cancel: CancellationToken,
    /// The HTTP client for network tools. It follows no redirect: `web_fetch` checks each
    /// hop with the policy itself (build it with `builtin::http_client`).
    pub http: reqwest::Client,
    /// What the policy checked for the call being run; set by the tool center just before
    /// it runs the call (empty in a context not running a call).
    pub checked: Checked,
    /// Starts child processes (the bash tool's commands).
    pub processes: Arc<crate::process::ProcessLauncher>,
    /// The agent layer, for the tools that act on agents (`todo_write`, `task`); `None`
    /// where there is none (unit tests).
    pub host: Option<Arc<dyn host::AgentHost>>,
    /// The id of the call being run (set by the tool center with `checked`).
    pub tool_call_id: String,
    /// Where the call being run reports progress (`toolProgress` events); set by the tool
    /// center with `checked`.
    pub progress: Option<tokio::sync::mpsc::Sender<mcp::Progress>>,
    /// How the agent's commands are confined (the OS sandbox).
    pub wall: wall::Wall,
}

/// What the permission policy checked for one call.
#[derive(Debug, Clone, Default)]
pub struct Checked {
    /// The resolved paths of the call's `Access::Paths`, in order: a tool operates on
    /// these, never on a new resolution of its arguments.
    pub paths: Vec<ResolvedPath>,
    /// The policy for accesses the call finds while it runs (a redirect to another
    /// host). `None`: every such access counts as one that needs a prompt.
    pub policy: Option<Arc<CallPolicy>>,
    /// A command gets the network in its sandbox: the policy allows it (an `allow` rule, a
    /// remembered grant) or the client granted a prompt that said so.
    pub network: bool,
    /// A command runs outside the OS sandbox: only ever after a client granted a prompt
    /// that said so (`outsideSandbox`).
    pub outside_sandbox: bool,
}

/// What a client's answer to a command's prompt granted besides running it (from the
/// prompt it answered).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Approval {
    pub network: bool,
    pub outside_sandbox: bool,
}

/// What a call runs with besides the policy's rules: the agent's remembered grants (for
/// what the call finds on its way, a redirect to another host) and what a client's answer
/// granted it.
#[derive(Debug, Clone, Default)]
pub struct Permits {
    pub grants: Vec<crate::store::Grant>,
    pub approval: Approval,
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
    /// A shell command (level execute), analyzed against the agent's workspace.
    Command(CommandAccess),
    /// A network request to this host (level network).
    Host(String),
    /// Only the daemon's own state of this agent: its plan, a question to its user, a
    /// subagent (whose own calls its own policy checks), or one of its skills (the user's
    /// own instructions). Allowed unless the policy denies the read level.
    Agent,
    /// A tool of an MCP server (level from its annotations).
    Mcp {
        server: String,
        tool: String,
        level: PermissionLevel,
        /// The server's `autoApprove` covers it.
        auto_approved: bool,
    },
}

/// A shell command as the policy sees it: what the checker read in it, and what the
/// model asked for around it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandAccess {
    pub analysis: command::CommandAnalysis,
    /// The model asked for the network (`network: true`).
    pub network_requested: bool,
    /// The model asked to run it outside the sandbox (`outsideSandbox: true`), and why.
    pub outside_sandbox: Option<String>,
    /// How the agent's commands are confined.
    pub wall: wall::WallState,
}

impl CommandAccess {
    /// A command with nothing asked around it, confined as `wall` says.
    pub fn plain(analysis: command::CommandAnalysis, wall: wall::WallState) -> CommandAccess {
        CommandAccess {
            analysis,
            network_requested: false,
            outside_sandbox: None,
            wall,
        }
    }

    /// Whether the command wants the network: asked for, or a part of it is known to use
    /// it (`curl`, `git fetch`, ...).
    pub fn wants_network(&self) -> bool {
        self.network_requested || !self.analysis.network.is_empty()
    }
}

/// A builtin tool, as the tool center keeps it: arguments as JSON. Every builtin is written
/// as a [`builtin::args::TypedTool`] (its arguments a typed struct, its schema generated
/// from it) and is this through that trait's blanket impl, which also holds the defaults.
pub trait BuiltinTool: Send + Sync + std::fmt::Debug {
    /// The wire name, e.g. `read_file`.
    fn name(&self) -> &'static str;
    /// One paragraph for the model.
    fn description(&self) -> &'static str;
    /// JSON Schema of the arguments (an object schema), as a model is offered it.
    fn schema(&self) -> Value;
    fn level(&self) -> PermissionLevel;
    /// Whether a large result may be offloaded to a file (false for `read_file`, which
    /// pages instead, so reading an offload never offloads again).
    fn offloadable(&self) -> bool;
    /// Whether the tool runs the model's commands (`bash`), in the OS sandbox of the
    /// agent's mode (`listTools` shows the mode).
    fn runs_commands(&self) -> bool;
    /// Whether the tool can work in this daemon (e.g. `web_search` needs a configured
    /// backend). An unavailable tool is listed but never offered to a model.
    fn available(&self) -> bool;
    /// How long a call may run when its arguments do not say.
    fn default_timeout(&self) -> Duration;
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
