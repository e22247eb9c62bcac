//! Configuration: where things live (socket, data, config file) and the TOML config file.
//!
//! Paths come from the command line, then `AGENTD_*` environment variables, then XDG
//! defaults. The config file is optional; when it names providers they are added to (or
//! override) the presets switched on by API keys in the environment. Secrets are held in
//! [`Secret`], whose `Debug` never shows them. Under systemd, a key may also come as a
//! credential ([`Credentials`]): a file in `$CREDENTIALS_DIRECTORY` named like the variable
//! the provider reads.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use agent_proto::{AgentMode, PermissionRule, PermissionRules, SandboxMode};
use serde::Deserialize;

mod acp;
mod hooks;
mod listen;
mod profiles;
mod skills;
mod store;
mod subagents;
mod web_search;

pub use acp::AcpAgentConfig;
pub use hooks::HookConfig;
pub use listen::ListenConfig;
pub use profiles::ProfileConfig;
pub use skills::SkillsConfig;
pub use store::{StoreConfig, StoreUrl, redacted as redacted_store_url};
pub use subagents::{SubagentTypeConfig, SubagentsConfig};
pub use web_search::{Backend as WebSearchBackend, WebSearchConfig};

/// Share of the model's window past which earlier rounds are summarized.
pub const DEFAULT_SUMMARIZE_THRESHOLD: f64 = 0.8;
/// Latest rounds kept as they are when summarizing.
pub const DEFAULT_KEEP_ROUNDS: usize = 3;

/// A secret string (an API key). Printing it with `{:?}` shows `"***"`.
#[derive(Clone, Deserialize, PartialEq, Eq)]
#[serde(transparent)]
pub struct Secret(String);

impl Secret {
    pub fn new(s: impl Into<String>) -> Self {
        Secret(s.into())
    }

    /// The secret itself, for the one place that sends it (an HTTP header).
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("\"***\"")
    }
}

/// systemd credentials (`LoadCredential=`, `LoadCredentialEncrypted=`, `SetCredential=`):
/// files in `$CREDENTIALS_DIRECTORY`, each named after the variable a provider reads its key
/// from (`OPENAI_API_KEY`, or the `api_key_env` of a config entry). A credential wins over a
/// variable of the same name, so a key given to the service this way is the one used.
#[derive(Debug, Clone, Default)]
pub struct Credentials {
    dir: Option<PathBuf>,
}

impl Credentials {
    /// Largest credential read; a key is far smaller.
    const MAX_BYTES: u64 = 64 * 1024;

    /// The directory systemd named, if it is an absolute path.
    pub fn from_env(env: impl Fn(&str) -> Option<String>) -> Credentials {
        let dir = env("CREDENTIALS_DIRECTORY")
            .map(PathBuf::from)
            .filter(|d| d.is_absolute());
        Credentials { dir }
    }

    /// The credential called `name`, trimmed of surrounding whitespace (files written by
    /// `echo` end in a newline); `None` without a directory, for a name that is not a plain
    /// file name (no `/`, no leading `.`), or for a missing, empty, oversized or unreadable
    /// file (one that exists but cannot be used is logged, by name only).
    pub fn get(&self, name: &str) -> Option<String> {
        use std::io::Read;
        let dir = self.dir.as_ref()?;
        let plain = !name.is_empty()
            && !name.starts_with('.')
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
        if !plain {
            return None;
        }
        let path = dir.join(name);
        let mut text = String::new();
        let read = std::fs::File::open(&path)
            .and_then(|f| f.take(Self::MAX_BYTES + 1).read_to_string(&mut text));
        match read {
            Ok(n) if n as u64 > Self::MAX_BYTES => {
                tracing::warn!(
                    "the credential {name} in {} is over {} bytes: not a key; ignored",
                    dir.display(),
                    Self::MAX_BYTES
                );
                None
            }
            Ok(_) => {
                let value = text.trim();
                (!value.is_empty()).then(|| value.to_owned())
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => {
                tracing::warn!(
                    "cannot read the credential {name} in {}: {e}",
                    dir.display()
                );
                None
            }
        }
    }

    /// A lookup of key variables for the provider registry: the credential of that name,
    /// else `env`.
    pub fn lookup<'a>(
        &'a self,
        env: impl Fn(&str) -> Option<String> + 'a,
    ) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| self.get(name).or_else(|| env(name))
    }
}

/// The parsed config file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    #[serde(default)]
    pub defaults: Defaults,
    #[serde(default)]
    pub providers: Vec<ProviderConfig>,
    #[serde(default)]
    pub limits: Limits,
    #[serde(default)]
    pub permissions: PermissionsConfig,
    #[serde(default)]
    pub tools: ToolsConfig,
    /// The OS sandbox of `bash` commands (`[sandbox]`).
    #[serde(default)]
    pub sandbox: SandboxConfig,
    #[serde(default)]
    pub context: ContextConfig,
    /// Commands run at points of every agent's runs (`[[hooks]]`).
    #[serde(default)]
    pub hooks: Vec<HookConfig>,
    /// The `web_search` tool's backend (`[web_search]`); without it the tool is not offered.
    #[serde(default)]
    pub web_search: Option<WebSearchConfig>,
    /// More folders of skills (`[skills] folders`), besides the workspace's and the user's.
    #[serde(default)]
    pub skills: SkillsConfig,
    /// MCP servers (`[[mcp_servers]]`), read-only over RPC.
    #[serde(default)]
    pub mcp_servers: Vec<agent_proto::McpServerSpec>,
    /// How much the daemon takes from MCP servers, and how it treats misbehaving ones.
    #[serde(default)]
    pub mcp: McpConfig,
    /// Profiles (`[[profiles]]`) besides the built-in ones; one with a built-in's name
    /// replaces it.
    #[serde(default)]
    pub profiles: Vec<ProfileConfig>,
    /// Subagents (`task`): how deep and how wide, and more types (`[[subagents.types]]`).
    #[serde(default)]
    pub subagents: SubagentsConfig,
    /// External ACP agents clients name in `createAgent {mode: "acp", acp: {name}}`
    /// (`[[acp_agents]]`).
    #[serde(default)]
    pub acp_agents: Vec<AcpAgentConfig>,
    /// The WebSocket listener and its web page (`[listen]`); off without an address.
    #[serde(default)]
    pub listen: ListenConfig,
    /// Where sessions are kept (`[store]`): SQLite in the data directory unless a
    /// PostgreSQL URL is given.
    #[serde(default)]
    pub store: StoreConfig,
}

/// The `[mcp]` section: limits on what servers send and how the supervisor reacts.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct McpConfig {
    /// Tools offered in one model request, builtins included (default 128, OpenAI's
    /// limit); MCP tools past it are left out, with an `error` event naming them.
    pub max_tools_per_request: usize,
    /// Pages of `tools/list` read in one listing (default 100).
    pub max_list_pages: usize,
    /// Tools one server may list (default 1000); more fails the listing.
    pub max_tools_per_server: usize,
    /// Largest input schema of a tool, in bytes of JSON (default 65536); a tool with a
    /// larger one is skipped.
    pub max_schema_bytes: usize,
    /// After `tools/list_changed`, the wait before listing again (default 500 ms);
    /// announcements in between are folded into that one listing.
    pub list_changed_debounce_ms: u64,
    /// First wait before restarting a failed server (default 1000 ms); it doubles up to
    /// `restart_backoff_max_secs` (default 60).
    pub restart_backoff_first_ms: u64,
    pub restart_backoff_max_secs: u64,
    /// Seconds a server must stay up for the wait to start over from the first (default 30).
    pub stable_after_secs: u64,
    /// Call timeouts in a row after which the server is restarted (default 3; 0: never).
    pub timeouts_before_restart: u32,
    /// How long a run's first model request waits for servers still starting that have
    /// no tools listed or cached (default 5000 ms; 0: never waits). Those still without
    /// tools then are named in an `error` event `toolsLeftOut`.
    pub wait_for_tools_ms: u64,
}

impl Default for McpConfig {
    fn default() -> Self {
        McpConfig {
            max_tools_per_request: 128,
            max_list_pages: 100,
            max_tools_per_server: 1000,
            max_schema_bytes: 64 * 1024,
            list_changed_debounce_ms: 500,
            restart_backoff_first_ms: 1000,
            restart_backoff_max_secs: 60,
            stable_after_secs: 30,
            timeouts_before_restart: 3,
            wait_for_tools_ms: 5000,
        }
    }
}

impl McpConfig {
    /// Refuses values the daemon cannot work with, naming the field.
    pub fn validate(&self) -> Result<(), String> {
        for (name, value) in [
            ("max_tools_per_request", self.max_tools_per_request),
            ("max_list_pages", self.max_list_pages),
            ("max_tools_per_server", self.max_tools_per_server),
            ("max_schema_bytes", self.max_schema_bytes),
        ] {
            if value == 0 {
                return Err(format!("mcp.{name} must be at least 1"));
            }
        }
        if self.restart_backoff_first_ms == 0 {
            return Err("mcp.restart_backoff_first_ms must be at least 1".into());
        }
        Ok(())
    }
}

/// The `[permissions]` section: a rule per level, and commands never to run.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PermissionsConfig {
    /// Default allow (inside the workspace).
    pub read: Option<PermissionRule>,
    /// Default ask.
    pub write: Option<PermissionRule>,
    /// Default ask.
    pub execute: Option<PermissionRule>,
    /// Default ask.
    pub network: Option<PermissionRule>,
    /// Command patterns denied without asking: words, `*` for any one word, matched
    /// against the start of every part of a command (e.g. "rm -rf /", "git push *").
    #[serde(default)]
    pub blocked_commands: Vec<String>,
}

impl PermissionsConfig {
    /// The rules of the config file, as per-level overrides.
    pub fn rules(&self) -> PermissionRules {
        PermissionRules {
            read: self.read,
            write: self.write,
            execute: self.execute,
            network: self.network,
        }
    }
}

/// The `[tools]` section.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolsConfig {
    /// Tool results longer than this many characters go to a file (default 3000).
    pub offload_threshold_chars: Option<usize>,
    /// Variable names removed from the environment of `bash` commands and MCP servers, on
    /// top of the built-in list of common secret names (`tools::env::DEFAULT_DENY`) and
    /// every variable a provider reads a key from. `*` matches any run of characters;
    /// matched ignoring case.
    #[serde(default)]
    pub env_deny: Vec<String>,
    /// Names the deny lists would remove that `bash` commands get anyway (e.g. `GH_TOKEN`
    /// for `gh`). Never lets through a provider's key variable.
    #[serde(default)]
    pub env_keep: Vec<String>,
    /// Names MCP stdio servers get from the daemon's environment, on top of the base list
    /// (`tools::env::DEFAULT_MCP_ALLOW`: `PATH`, `HOME`, `LANG`, `LC_*`, ...). A server's
    /// own `env` is always added.
    #[serde(default)]
    pub mcp_env_allow: Vec<String>,
}

/// The `[sandbox]` section: the OS sandbox every `bash` command runs in (see
/// docs/security.md, "The wall").
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SandboxConfig {
    /// `workspace-write` (default), `read-only` or `off`; profiles and agents may set
    /// their own.
    pub mode: SandboxMode,
    /// Folders commands may write besides the workspace and the agent's temp folder (e.g.
    /// `~/.cargo`, `~/.npm`): absolute, or starting with `~/`.
    pub writable: Vec<String>,
    /// Files and folders commands may not read, besides the daemon's data dir, its config
    /// file, its `env` file and `$CREDENTIALS_DIRECTORY` (e.g. `~/.ssh`, `~/.aws`):
    /// absolute, or starting with `~/`.
    pub hidden: Vec<String>,
}

impl SandboxConfig {
    /// Refuses paths that are neither absolute nor under `~/`, naming the key.
    pub fn validate(&self) -> Result<(), String> {
        for (key, paths) in [("writable", &self.writable), ("hidden", &self.hidden)] {
            for path in paths {
                if !(path.starts_with('/') || path.starts_with("~/")) {
                    return Err(format!(
                        "sandbox.{key}: {path:?} must be an absolute path or start with ~/"
                    ));
                }
            }
        }
        Ok(())
    }

    /// The paths of `writable` and `hidden` with `~/` taken as `home` (`None`: no home,
    /// and a `~/` path is an error).
    pub fn resolve(&self, home: Option<&Path>) -> Result<(Vec<PathBuf>, Vec<PathBuf>), String> {
        let resolve = |key: &str, paths: &[String]| -> Result<Vec<PathBuf>, String> {
            paths
                .iter()
                .map(|p| match p.strip_prefix("~/") {
                    Some(rest) => home.map(|h| h.join(rest)).ok_or_else(|| {
                        format!("sandbox.{key}: {p:?} starts with ~/ but HOME is not set")
                    }),
                    None => Ok(PathBuf::from(p)),
                })
                .collect()
        };
        Ok((
            resolve("writable", &self.writable)?,
            resolve("hidden", &self.hidden)?,
        ))
    }
}

/// The `[context]` section: when earlier rounds are folded into a summary.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ContextConfig {
    /// Share of the model's window at which earlier rounds are summarized (default 0.8).
    pub summarize_threshold: f64,
    /// Latest rounds kept as they are when summarizing (default 3).
    pub keep_rounds: usize,
}

impl Default for ContextConfig {
    fn default() -> Self {
        ContextConfig {
            summarize_threshold: DEFAULT_SUMMARIZE_THRESHOLD,
            keep_rounds: DEFAULT_KEEP_ROUNDS,
        }
    }
}

/// Defaults for new agents.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Defaults {
    pub provider: Option<String>,
    pub model: Option<String>,
    pub mode: Option<AgentMode>,
    pub max_steps: Option<u32>,
    pub system_prompt: Option<String>,
    /// The profile of agents created without one (a built-in or a `[[profiles]]` name).
    pub profile: Option<String>,
}

/// Daemon limits (all optional; see the field docs for defaults).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// Simultaneous client connections; one more is answered `overloaded` and closed.
    /// At least 1.
    pub max_connections: usize,
    /// Requests being handled at once across all connections; more answer `overloaded`.
    /// At least 1.
    pub max_in_flight_requests: usize,
    /// Seconds a request may take before it answers an error. At least 1.
    pub request_timeout_secs: u64,
    /// Recent events kept per agent for replay with `sinceSeq`. At least 1.
    pub replay_events: usize,
    /// Bytes of recent events kept per agent for replay. At least 1024.
    pub replay_bytes: usize,
    /// Bytes of recent events the replay rings of all agents hold together; past it the
    /// oldest events of any agent go first. At least 1 MiB.
    pub replay_budget_bytes: usize,
    /// Seconds a session with no run and no subscriber stays loaded after its last use
    /// (its replay ring goes when it is unloaded). At least 1.
    pub idle_session_secs: u64,
    /// Seconds runs get to stop at shutdown before the daemon exits anyway.
    pub shutdown_grace_secs: u64,
    /// Bytes of unfinished frames all connections may buffer together (beyond 64 KiB each);
    /// a frame that would need more is skipped with an `overloaded` error. At least 1 MiB.
    pub max_buffered_input_bytes: usize,
    /// Requests in one batch; a longer batch is an invalid request. At least 1.
    pub max_batch_requests: usize,
    /// Live subscriptions on one connection; one more answers `tooManySubscriptions`.
    /// At least 1.
    pub max_subscriptions_per_connection: usize,
    /// A text file attached to a message (`file` part) up to this size is read into it;
    /// a larger one is named with its size (default 256 KiB; 0: never read).
    pub max_attached_text_bytes: usize,
    /// A PDF attached to a message up to this size is kept with it and goes to models that
    /// take documents (the others get its path); a larger one is named with its size
    /// (default 32 MiB; 0: never kept).
    pub max_attached_document_bytes: usize,
    /// Bytes a model (or an external ACP agent) may write into one assistant message: its
    /// text, reasoning and tool-call arguments (an ACP agent's tool results too), over all
    /// the steps of the message. Past it the answer is stopped and the run ends with an
    /// error; what came before is kept (default 16 MiB, far above what any model's window
    /// takes back). At least 1024.
    pub max_message_bytes: usize,
    /// Bytes of one tool call's arguments; past it the answer is stopped, the call is not
    /// run (default 4 MiB). At least 1024.
    pub max_tool_arguments_bytes: usize,
    /// Tool calls in one answer of the model (an ACP agent's prompt turn); one more stops
    /// the answer, and the calls before are not run (default 256). At least 1.
    pub max_tool_calls_per_answer: usize,
}

impl Limits {
    /// Smallest accepted `max_buffered_input_bytes`.
    pub const MIN_BUFFERED_INPUT_BYTES: usize = 1024 * 1024;
    /// Smallest accepted `replay_bytes`.
    pub const MIN_REPLAY_BYTES: usize = 1024;
    /// Smallest accepted `replay_budget_bytes`.
    pub const MIN_REPLAY_BUDGET_BYTES: usize = 1024 * 1024;
    /// Smallest accepted `max_message_bytes` and `max_tool_arguments_bytes`.
    pub const MIN_ANSWER_BYTES: usize = 1024;

    /// Refuses limits the daemon cannot work with, naming the field. The daemon uses them
    /// as they are: nothing downstream clamps them again.
    fn validate(&self) -> Result<(), ConfigError> {
        let to_u64 = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
        for (name, value, min) in [
            ("max_connections", to_u64(self.max_connections), 1),
            (
                "max_in_flight_requests",
                to_u64(self.max_in_flight_requests),
                1,
            ),
            ("request_timeout_secs", self.request_timeout_secs, 1),
            ("replay_events", to_u64(self.replay_events), 1),
            (
                "replay_bytes",
                to_u64(self.replay_bytes),
                to_u64(Self::MIN_REPLAY_BYTES),
            ),
            (
                "replay_budget_bytes",
                to_u64(self.replay_budget_bytes),
                to_u64(Self::MIN_REPLAY_BUDGET_BYTES),
            ),
            ("idle_session_secs", self.idle_session_secs, 1),
            (
                "max_buffered_input_bytes",
                to_u64(self.max_buffered_input_bytes),
                to_u64(Self::MIN_BUFFERED_INPUT_BYTES),
            ),
            ("max_batch_requests", to_u64(self.max_batch_requests), 1),
            (
                "max_subscriptions_per_connection",
                to_u64(self.max_subscriptions_per_connection),
                1,
            ),
            (
                "max_message_bytes",
                to_u64(self.max_message_bytes),
                to_u64(Self::MIN_ANSWER_BYTES),
            ),
            (
                "max_tool_arguments_bytes",
                to_u64(self.max_tool_arguments_bytes),
                to_u64(Self::MIN_ANSWER_BYTES),
            ),
            (
                "max_tool_calls_per_answer",
                to_u64(self.max_tool_calls_per_answer),
                1,
            ),
        ] {
            at_least(&format!("limits.{name}"), value, min)?;
        }
        Ok(())
    }
}

/// `Err` naming `field` when `value` is below `min`.
fn at_least(field: &str, value: u64, min: u64) -> Result<(), ConfigError> {
    if value < min {
        return Err(ConfigError::Invalid(format!(
            "{field} must be at least {min}, got {value}"
        )));
    }
    Ok(())
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: 1024,
            max_in_flight_requests: 512,
            request_timeout_secs: 60,
            replay_events: 10_000,
            replay_bytes: 4 * 1024 * 1024,
            replay_budget_bytes: 64 * 1024 * 1024,
            idle_session_secs: 600,
            max_attached_text_bytes: 256 * 1024,
            max_attached_document_bytes: 32 * 1024 * 1024,
            shutdown_grace_secs: 5,
            max_buffered_input_bytes: 64 * 1024 * 1024,
            max_batch_requests: 1000,
            max_subscriptions_per_connection: 1000,
            max_message_bytes: 16 * 1024 * 1024,
            max_tool_arguments_bytes: 4 * 1024 * 1024,
            max_tool_calls_per_answer: 256,
        }
    }
}

/// One provider instance.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    /// Unique id agents refer to (`provider` of `createAgent`).
    pub id: String,
    /// A built-in preset to start from (`openai`, `anthropic`, `gemini`, `deepseek`,
    /// `ollama`, `lmstudio`, ...): its kind, base URL, key variable and models; the fields
    /// given here override it.
    pub preset: Option<String>,
    /// Wire format. Required unless `preset` gives it.
    pub kind: Option<ProviderKind>,
    pub base_url: Option<String>,
    /// The key itself. Prefer `api_key_env`, which keeps it out of the file.
    pub api_key: Option<Secret>,
    /// Environment variable holding the key.
    pub api_key_env: Option<String>,
    /// Model used when an agent names none.
    pub default_model: Option<String>,
    #[serde(default)]
    pub models: Vec<ModelConfig>,
    /// Extra HTTP headers sent with every request.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// `scripted` only: the script file (TOML) to replay.
    pub script: Option<PathBuf>,
    /// Seconds without a byte from a streaming answer before it is an error (default 120).
    pub idle_timeout_secs: Option<u64>,
    /// Seconds to establish the connection (default 10).
    pub connect_timeout_secs: Option<u64>,
    /// Retries of a request that failed before its first byte (connection refused or
    /// reset, 429, 5xx); default 4.
    pub max_retries: Option<u32>,
    /// The first wait before a retry, in ms, doubled each time (default 1000).
    pub retry_base_ms: Option<u64>,
    /// `openai` only: send the model's reasoning back as `reasoning_content` on the
    /// assistant messages of turns with tool calls (DeepSeek's thinking mode requires it).
    /// Default: on for the `deepseek` preset, off otherwise.
    pub replay_reasoning: Option<bool>,
}

/// A provider's wire format (`kind` in the config file).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// Chat completions with SSE: OpenAI and every compatible server.
    Openai,
    /// The Anthropic Messages API.
    Anthropic,
    /// Google Gemini `streamGenerateContent`.
    Gemini,
    /// Canned answers from a TOML file (or the echo demo), no network.
    Scripted,
}

impl ProviderKind {
    /// The name used in the config file and in `listProviders`.
    pub fn as_str(self) -> &'static str {
        match self {
            ProviderKind::Openai => "openai",
            ProviderKind::Anthropic => "anthropic",
            ProviderKind::Gemini => "gemini",
            ProviderKind::Scripted => "scripted",
        }
    }
}

/// A model of a provider and its capabilities; absent fields come from the built-in table
/// of well-known models or the defaults.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    pub id: String,
    pub context_window: Option<u32>,
    pub max_output_tokens: Option<u32>,
    pub tools: Option<bool>,
    pub vision: Option<bool>,
    pub reasoning: Option<bool>,
    /// PDFs go to the model natively (its API takes documents). Unknown models: false.
    pub documents: Option<bool>,
    /// `anthropic` only: turn extended thinking on for this model with this many tokens of
    /// budget (at least 1024). Requests then carry `thinking`, `max_tokens` grows by the
    /// budget, and no temperature is sent.
    pub thinking_budget: Option<u32>,
    /// Its price in USD per million input tokens, for `getUsage`'s cost (no price: no
    /// cost figure for this model).
    pub input_price: Option<f64>,
    /// Its price in USD per million output tokens.
    pub output_price: Option<f64>,
}

/// Errors reading the configuration: start-up stops and prints them.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("invalid config file {path}: {message}")]
    Parse { path: String, message: String },
    #[error("invalid config: {0}")]
    Invalid(String),
}

impl ConfigFile {
    /// Reads the config file. A missing file is fine (defaults) unless it was named
    /// explicitly (`required`).
    pub fn load(path: &Path, required: bool) -> Result<ConfigFile, ConfigError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && !required => {
                return Ok(ConfigFile::default());
            }
            Err(source) => {
                return Err(ConfigError::Read {
                    path: path.display().to_string(),
                    source,
                });
            }
        };
        let mut config = Self::parse(&text).map_err(|message| ConfigError::Parse {
            path: path.display().to_string(),
            message,
        })?;
        config.validate()?;
        // Relative paths in the file are relative to the file, not to the daemon's cwd.
        if let Some(dir) = path.parent() {
            for provider in &mut config.providers {
                if let Some(script) = provider.script.as_mut().filter(|s| s.is_relative()) {
                    *script = dir.join(&*script);
                }
            }
        }
        Ok(config)
    }

    /// Reads the file's text: its syntax and shape (unknown fields are errors), not yet
    /// whether its values are usable (see [`ConfigFile::validate`]).
    pub fn parse(text: &str) -> Result<ConfigFile, String> {
        toml::from_str(text).map_err(|e| e.to_string())
    }

    /// Refuses values the daemon cannot work with (a limit of 0, a threshold that is no
    /// share of the window), naming the field, in the sections this module owns. The
    /// sections of the other modules (`[[profiles]]`, `[subagents]`, `[[acp_agents]]`,
    /// `[[hooks]]`, `[web_search]`, `[skills]`) are checked by their owners, from the
    /// daemon's wiring (`daemon::check_config`). Done once, at start: the code that uses a
    /// value takes it as it is.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.limits.validate()?;
        self.mcp.validate().map_err(ConfigError::Invalid)?;
        self.sandbox.validate().map_err(ConfigError::Invalid)?;
        for provider in &self.providers {
            for model in &provider.models {
                for (name, price) in [
                    ("input_price", model.input_price),
                    ("output_price", model.output_price),
                ] {
                    if price.is_some_and(|p| !(p.is_finite() && p >= 0.0)) {
                        return Err(ConfigError::Invalid(format!(
                            "providers {:?}, model {:?}: {name} is USD per million tokens, \
                             0 or more",
                            provider.id, model.id
                        )));
                    }
                }
            }
        }
        if let Some(steps) = self.defaults.max_steps {
            at_least("defaults.max_steps", u64::from(steps), 1)?;
        }
        let context = &self.context;
        let keep_rounds = u64::try_from(context.keep_rounds).unwrap_or(u64::MAX);
        at_least("context.keep_rounds", keep_rounds, 1)?;
        let threshold = context.summarize_threshold;
        if !(threshold > 0.0 && threshold <= 1.0) {
            return Err(ConfigError::Invalid(format!(
                "context.summarize_threshold must be above 0 and at most 1 (a share of the \
                 model's window), got {threshold}"
            )));
        }
        Ok(())
    }
}

/// Resolved locations of the daemon's files.
#[derive(Debug, Clone)]
pub struct Paths {
    pub socket: PathBuf,
    pub data_dir: PathBuf,
    /// The config file read (or looked for), which commands never read (it may hold keys).
    pub config_file: Option<PathBuf>,
}

impl Paths {
    /// What no confined command may read besides the data dir: the config file, the `env`
    /// file beside it (the service's keys, packaging/), and `$CREDENTIALS_DIRECTORY`.
    pub fn secrets(&self, env: impl Fn(&str) -> Option<String>) -> Vec<PathBuf> {
        let mut out = Vec::new();
        if let Some(file) = &self.config_file {
            out.push(file.clone());
        }
        if let Some(dir) = default_config_file(&env).and_then(|f| f.parent().map(Path::to_owned)) {
            out.push(dir.join("env"));
        }
        if let Some(credentials) = env("CREDENTIALS_DIRECTORY").filter(|d| d.starts_with('/')) {
            out.push(PathBuf::from(credentials));
        }
        out
    }
}

impl Paths {
    /// The database file.
    pub fn database(&self) -> PathBuf {
        self.data_dir.join("agentd.db")
    }
}

/// `$XDG_DATA_HOME/agentd`, else `$HOME/.local/share/agentd`.
pub fn default_data_dir(env: impl Fn(&str) -> Option<String>) -> Option<PathBuf> {
    xdg_dir(&env, "XDG_DATA_HOME", ".local/share").map(|d| d.join("agentd"))
}

/// `$XDG_CONFIG_HOME/agentd/config.toml`, else `$HOME/.config/agentd/config.toml`.
pub fn default_config_file(env: impl Fn(&str) -> Option<String>) -> Option<PathBuf> {
    xdg_dir(&env, "XDG_CONFIG_HOME", ".config").map(|d| d.join("agentd").join("config.toml"))
}

/// The user's skills: `$XDG_CONFIG_HOME/agentd/skills`, else `$HOME/.config/agentd/skills`.
pub fn default_skills_dir(env: impl Fn(&str) -> Option<String>) -> Option<PathBuf> {
    xdg_dir(&env, "XDG_CONFIG_HOME", ".config").map(|d| d.join("agentd").join("skills"))
}

/// The user's own project instructions, for every agent-mode agent:
/// `$XDG_CONFIG_HOME/agentd/AGENTS.md`, else `$HOME/.config/agentd/AGENTS.md`.
pub fn default_instructions_file(env: impl Fn(&str) -> Option<String>) -> Option<PathBuf> {
    xdg_dir(&env, "XDG_CONFIG_HOME", ".config").map(|d| d.join("agentd").join("AGENTS.md"))
}

fn xdg_dir(env: &impl Fn(&str) -> Option<String>, var: &str, home_rel: &str) -> Option<PathBuf> {
    let non_empty = |k: &str| env(k).filter(|v| !v.is_empty());
    non_empty(var)
        .map(PathBuf::from)
        .or_else(|| non_empty("HOME").map(|h| PathBuf::from(h).join(home_rel)))
}

#[cfg(test)]
mod tests;
