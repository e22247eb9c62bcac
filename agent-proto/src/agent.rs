//! Agents (persistent, configured conversations) and their runtime status.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What an agent can do. `chat`: the model answers, no tools. `agent`: the model may call
/// tools. `acp`: an external agent (Zed's, Claude Code's, Gemini CLI's ACP adapter, ...) run
/// by the daemon and driven over the Agent Client Protocol; see [`AcpBackend`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "camelCase")]
pub enum AgentMode {
    #[default]
    Chat,
    Agent,
    Acp,
}

impl AgentMode {
    pub fn as_str(self) -> &'static str {
        match self {
            AgentMode::Chat => "chat",
            AgentMode::Agent => "agent",
            AgentMode::Acp => "acp",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "chat" => Some(AgentMode::Chat),
            "agent" => Some(AgentMode::Agent),
            "acp" => Some(AgentMode::Acp),
            _ => None,
        }
    }
}

/// Runtime status of an agent's session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "snake_case")]
pub enum SessionStatus {
    /// No run is active.
    #[default]
    Idle,
    /// A run is streaming the model or running tools.
    Generating,
    /// The run ended waiting for an answer to a permission prompt.
    WaitingPermission,
    /// The run ended waiting for the user to answer the model's question.
    WaitingQuestion,
    /// The run was paused at a checkpoint.
    Paused,
    /// The last run ended with an error; the next `sendMessage` or `continueLoop` clears it.
    Error,
}

impl SessionStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            SessionStatus::Idle => "idle",
            SessionStatus::Generating => "generating",
            SessionStatus::WaitingPermission => "waiting_permission",
            SessionStatus::WaitingQuestion => "waiting_question",
            SessionStatus::Paused => "paused",
            SessionStatus::Error => "error",
        }
    }
}

/// Per-agent settings. Every field is optional: an absent field means "use the daemon's
/// default". `updateAgent` merges the given fields into the stored ones (JSON merge patch:
/// `null` removes a field). Unknown fields are rejected so a typo is an error, not a no-op.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentSettings {
    /// Sampling temperature passed to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Cap on the tokens the model may write in one call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
    /// Steps (model calls) one run may take before it stops with `maxSteps` (default 50).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_steps: Option<u32>,
    /// Per-level permission rules overriding the config file's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permissions: Option<PermissionRules>,
    /// When set, only these tools are offered to the model (names as in `listTools`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled_tools: Option<Vec<String>>,
    /// MCP servers (`name`) or single MCP tools (`server/tool`) this agent may use; absent:
    /// all of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled_mcp_tools: Option<Vec<String>>,
    /// After the first answer, let the model write a short title (replacing the one taken
    /// from the first message). Default off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_title: Option<bool>,
    /// Fold old rounds into a model-written summary when the context fills up (default on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_summarize: Option<bool>,
    /// Commands run at points of this agent's runs, after the config's `[[hooks]]`.
    /// Dropped by `importAgent` (an export never brings commands to run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hooks: Option<Vec<HookSpec>>,
    /// The OS sandbox the agent's `bash` commands run in (over its profile's and the
    /// config's `[sandbox] mode`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxMode>,
}

/// The OS sandbox (Landlock and a seccomp filter) every `bash` command of an agent runs
/// in. Names as Codex's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// Writes only in the workspace, the agent's private temp folder and the configured
    /// `[sandbox] writable` folders; reads everywhere but the daemon's data dir and the
    /// hidden paths; no network unless the command's network permission is granted.
    #[default]
    WorkspaceWrite,
    /// As `workspace-write`, but nothing is written outside the agent's temp folder.
    ReadOnly,
    /// No sandbox: commands run with the user's full rights (the permission prompts are
    /// the only control).
    Off,
}

impl SandboxMode {
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::WorkspaceWrite => "workspace-write",
            SandboxMode::ReadOnly => "read-only",
            SandboxMode::Off => "off",
        }
    }
}

/// When a hook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum HookEvent {
    /// Before a tool call runs, after the permission check: exit 2 blocks the call (stderr
    /// is the reason the model sees); exit 0 may print `{"arguments": {...}}` to rewrite
    /// them (the rewritten call must pass the permission check without asking).
    BeforeTool,
    /// After a tool call has its result: what it prints (exit 0) is appended to the result.
    AfterTool,
    /// When a message is sent to the agent (informational).
    UserMessage,
    /// When a run ends (informational).
    RunFinished,
}

/// A command run at an event, with the event as JSON on stdin, in the agent's workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HookSpec {
    pub event: HookEvent,
    /// Tool names it applies to (`beforeTool`/`afterTool`): `*` matches any run of
    /// characters, `|` separates alternatives; absent: every tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matcher: Option<String>,
    /// Run with `bash -c`.
    pub command: String,
    /// Seconds before it is killed (default 30, at most 600).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_secs: Option<u64>,
}

/// What happens to a tool call of a level: run it, ask a client, or refuse it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum PermissionRule {
    Allow,
    Ask,
    Deny,
}

/// A rule per permission level; absent levels keep the daemon's rule.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PermissionRules {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read: Option<PermissionRule>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write: Option<PermissionRule>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub execute: Option<PermissionRule>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<PermissionRule>,
}

impl PermissionRules {
    pub fn get(&self, level: PermissionLevel) -> Option<PermissionRule> {
        match level {
            PermissionLevel::Read => self.read,
            PermissionLevel::Write => self.write,
            PermissionLevel::Execute => self.execute,
            PermissionLevel::Network => self.network,
        }
    }
}

/// A persistent, configured conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Agent {
    pub id: String,
    pub title: String,
    pub mode: AgentMode,
    /// Provider instance id (see `listProviders`).
    pub provider: String,
    pub model: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    #[serde(default)]
    pub settings: AgentSettings,
    pub pinned: bool,
    pub archived: bool,
    /// Runtime status of the agent's session at the time of the answer.
    pub status: SessionStatus,
    /// The last message the model no longer sees (`setContextEdge`); absent: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_edge: Option<String>,
    /// The agent this one was forked from (`forkAgent`), or the agent whose `task` call
    /// started it (a subagent: then `subagentType` is set too); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_agent_id: Option<String>,
    /// On a subagent: its type (`explore`, `general`, or one from the config).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subagent_type: Option<String>,
    /// On a subagent: the parent's `task` call that started it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_tool_call_id: Option<String>,
    /// The source's message the fork's copied history ends with (absent when the source
    /// had no messages).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fork_message_id: Option<String>,
    /// On an agent of mode `acp`: the external agent that answers it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acp: Option<AcpBackend>,
    /// On an agent of mode `agent`: the sandbox its `bash` commands run in, as it applies
    /// now (its settings, else its profile's, else the config's). `off` means commands run
    /// with the user's full rights.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxMode>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// The external ACP agent behind an agent of mode `acp`: one of the config's
/// `[[acp_agents]]` by `name`, or a `command` of its own (not both).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AcpBackend {
    /// The name of an `[[acp_agents]]` entry of the config.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The program to run (looked up in `PATH`), speaking ACP on its stdin/stdout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Variables added to the environment it gets (the daemon's own environment minus
    /// secrets, as MCP stdio servers get it). In answers, values are masked.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub env: std::collections::BTreeMap<String, String>,
}

impl AcpBackend {
    /// The form clients see: `env` values masked.
    pub fn masked(&self) -> AcpBackend {
        AcpBackend {
            env: self
                .env
                .keys()
                .map(|k| (k.clone(), "********".to_owned()))
                .collect(),
            ..self.clone()
        }
    }
}

/// What a tool call may do, which decides how it is permitted.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum PermissionLevel {
    Read,
    Write,
    Execute,
    Network,
}

impl PermissionLevel {
    pub const ALL: [PermissionLevel; 4] = [
        PermissionLevel::Read,
        PermissionLevel::Write,
        PermissionLevel::Execute,
        PermissionLevel::Network,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            PermissionLevel::Read => "read",
            PermissionLevel::Write => "write",
            PermissionLevel::Execute => "execute",
            PermissionLevel::Network => "network",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        PermissionLevel::ALL.into_iter().find(|l| l.as_str() == s)
    }
}
