//! Results of the methods, and the shapes their params use that belong to no other
//! module. The methods and their params are declared in [`crate::rpc`].

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::agent::{
    Agent, AgentMode, PermissionLevel, PermissionRules, SandboxMode, SessionStatus,
};
use crate::message::{Message, Role};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    pub server_version: String,
    pub protocol_version: u32,
    pub capabilities: Capabilities,
}

/// What this daemon supports, so a client can adapt instead of probing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Capabilities {
    /// Every method name the daemon answers.
    pub methods: Vec<String>,
    /// Every event type the daemon may send.
    pub events: Vec<String>,
    /// Agent modes `createAgent` accepts.
    pub modes: Vec<AgentMode>,
    pub max_frame_bytes: usize,
    pub max_user_text_chars: usize,
    /// How many recent events per agent `subscribe` can replay with `sinceSeq`.
    pub replay_window: usize,
    /// The OS sandbox of `bash` commands on this machine.
    pub sandbox: SandboxInfo,
}

/// Whether this daemon can confine commands, and how it does by default.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SandboxInfo {
    /// The kernel offers what the sandbox needs (Landlock ABI 6 or later, seccomp), and a
    /// probe at start-up confined a process with it.
    pub available: bool,
    /// The kernel's Landlock ABI (absent: no Landlock).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub abi: Option<u32>,
    /// The config's default mode (`[sandbox] mode`); agents and profiles may set their own.
    pub mode: SandboxMode,
    /// Commands of agents in the default mode run confined: `available` and the mode is not
    /// `off`. When false and the mode is not `off`, every command asks (no grant or `allow`
    /// level covers it) and its prompt says it would run unconfined.
    pub enforced: bool,
    /// Why the sandbox is not available, when it is not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentList {
    pub agents: Vec<Agent>,
    /// Pass as `cursor` to get the next page; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// `deleteAgent`'s answer: `{}` (success is the answer; a failure is an error).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DeleteAgentResult {}

/// Order of `listMessages`: `asc` (oldest first, the default) or `desc`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "lowercase")]
pub enum ListOrder {
    #[default]
    Asc,
    Desc,
}

impl ListOrder {
    pub fn as_str(self) -> &'static str {
        match self {
            ListOrder::Asc => "asc",
            ListOrder::Desc => "desc",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MessageList {
    pub messages: Vec<Message>,
    /// Pass as `cursor`, with the same `order`, to get the next page; absent on the last
    /// page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// Tokens the answers used and what they cost (`getUsage`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UsageReport {
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Answers that reported their usage.
    pub answers: u64,
    /// USD, summed over the models the config gives a price; absent when none has one
    /// (`unpriced` names the others).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// `provider/model` of the models used that have no price in the config.
    pub unpriced: Vec<String>,
    pub by_model: Vec<ModelUsage>,
    pub by_agent: Vec<AgentUsage>,
}

/// The usage of one provider's model (`getUsage`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelUsage {
    pub provider: String,
    pub model: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub answers: u64,
    /// USD; absent when the config gives the model no price.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

/// The usage of one agent (`getUsage`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentUsage {
    pub agent_id: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub answers: u64,
    /// USD over its priced models; absent when none of them has a price.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
}

/// What `searchMessages` found, newest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MessageSearch {
    pub hits: Vec<MessageHit>,
}

/// A message whose text holds the query.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MessageHit {
    pub agent_id: String,
    pub message_id: String,
    pub role: Role,
    /// The text around the first match (about 160 characters, `…` where it was cut).
    pub snippet: String,
    pub created_at: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageResult {
    pub user_message_id: String,
    /// The answer's message: of a queued message, the id its answer will have; of a
    /// steer, the running answer it joins.
    pub assistant_message_id: String,
    /// What became of the message: a run started, queued, or steered into the running
    /// turn. Absent from daemons before `whenBusy`: `started`.
    #[serde(default)]
    pub delivery: Delivery,
}

/// What `sendMessage` does when the agent is busy (a run active, waiting for a client or
/// paused).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum WhenBusy {
    /// Refused: `agentBusy` (`invalidState` while the run waits for a client or is paused).
    #[default]
    Refuse,
    /// Stored and run as the next turn when the current run ends; several run in order.
    Queue,
    /// Text only: joins the running turn as a user message before its next model call
    /// (after the tool calls in flight finish). Queued instead when the run ends first.
    Steer,
}

/// What became of a sent message.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Delivery {
    /// A run answering it started.
    #[default]
    Started,
    /// Queued behind the agent's run (`queueUpdated`).
    Queued,
    /// Waiting to join the running turn (`queueUpdated`, then `steered` when it joins).
    Steered,
}

/// A message waiting in an agent's queue: sent with `whenBusy` `queue`, or a steer not yet
/// joined to the running turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QueuedMessage {
    /// The id the user message gets (a steer: the id of its `steer` block).
    pub user_message_id: String,
    /// The id its answer gets (a steer: the running answer's).
    pub assistant_message_id: String,
    /// `queue` or `steer`.
    pub when_busy: WhenBusy,
    /// The message as it will be stored.
    pub content: Vec<crate::Block>,
    /// The send's choices for its turn (`provider`, `model`, `reasoningEffort`,
    /// `outputSchema`), applied when it runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<crate::TurnOptions>,
    /// Unix ms.
    pub created_at: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CancelQueuedResult {
    /// How many queued messages were dropped (0: none matched; it had started or joined).
    pub cancelled: u32,
}

/// A summary made by `compactContext`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompactContextResult {
    /// The last message the summary covers.
    pub through_message_id: String,
    /// Messages the summary replaces, for the model.
    pub summarized_messages: u64,
    /// Estimated tokens of the next request before and after.
    pub before_tokens: u64,
    pub after_tokens: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CancelLoopResult {
    /// True if a run was active and is now cancelled; false if there was nothing to cancel.
    pub cancelled: bool,
}

/// A tool call waiting for a client's answer: the prompt exactly as `permissionRequested`
/// sent it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PendingPermission {
    pub message_id: String,
    pub tool_call_id: String,
    pub tool_name: String,
    pub permission_type: PermissionLevel,
    pub description: String,
    pub arguments: serde_json::Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_display: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paths: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub risk: Option<String>,
    #[serde(default)]
    pub rememberable: bool,
    /// A granted command gets the network in its sandbox.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub network_access: bool,
    /// A granted command runs outside the OS sandbox.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub outside_sandbox: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContinueLoopResult {
    /// The assistant message the run goes on writing.
    pub assistant_message_id: String,
}

/// `handlePermissionResponse`'s answer: `{}`. The answer was taken (it was the first; a
/// later one gets `permissionNotPending`), saved with the call, and the run resumed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PermissionResponseResult {}

/// `answerQuestion`'s answer: `{}`. The answer was taken (it was the first; a later one gets
/// `questionNotPending`), saved with the call, and the run resumed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AnswerQuestionResult {}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionStatusResult {
    pub status: SessionStatus,
}

/// A tool an agent can be offered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolInfo {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments.
    pub schema: serde_json::Value,
    /// `builtin` or `mcp:<server>`.
    pub source: String,
    pub permission_level: PermissionLevel,
    /// Offered to the agent's model (always true without `agentId`, unless the per-request
    /// cap leaves the tool out).
    pub enabled: bool,
    /// An MCP tool's name on its server, which `name` (what the model sees: letters,
    /// digits, `_` and `-`, at most 64, unique) maps back to. Absent for builtins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original_name: Option<String>,
    /// For a tool that runs commands (`bash`): the sandbox they run in, for the agent
    /// asked about (without `agentId`: the config's default mode). `off`: unconfined.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxMode>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolList {
    pub tools: Vec<ToolInfo>,
}

/// Where a profile comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ProfileSource {
    /// One of the daemon's own: `basic`, `coder`, `planner`, `full`.
    Builtin,
    /// A `[[profiles]]` entry of the config file (which may replace a built-in one).
    Config,
}

/// A profile an agent can be given (`createAgent`/`updateAgent` `profile`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProfileInfo {
    pub name: String,
    pub description: String,
    /// The builtin tools it offers (names as in `listTools`). A name this daemon has no
    /// tool for is listed but offered to no model.
    pub tools: Vec<String>,
    /// The MCP servers (`server`) or tools (`server/tool`) it offers; absent: all of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_tools: Option<Vec<String>>,
    /// Its permission rules, between the config file's and the agent's own.
    #[serde(default, skip_serializing_if = "is_default_rules")]
    pub permissions: PermissionRules,
    /// Model settings used when the agent's settings name none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_output_tokens: Option<u32>,
    /// The sandbox of its agents' commands, between the config's and the agent's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxMode>,
    pub source: ProfileSource,
}

fn is_default_rules(rules: &PermissionRules) -> bool {
    *rules == PermissionRules::default()
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProfileList {
    pub profiles: Vec<ProfileInfo>,
}

/// Where a skill was found. On a name clash the first wins: the workspace's, then the
/// config's folders (in their order), then the user's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SkillSource {
    /// `<workspace>/.agentd/skills/`.
    Workspace,
    /// A folder of the config's `[skills] folders`.
    Config,
    /// `$XDG_CONFIG_HOME/agentd/skills/` (`~/.config/agentd/skills/`).
    User,
}

/// A skill an agent can load with the `skill` tool: a folder with a `SKILL.md`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SkillInfo {
    /// From the front matter: `[a-z0-9-]{1,64}`, unique among the skills shown.
    pub name: String,
    pub description: String,
    /// The skill's folder (absolute), where the files beside `SKILL.md` are.
    pub path: String,
    pub source: SkillSource,
}

/// A `SKILL.md` (or a skill folder) that could not be used, and why. It is left out of
/// the system prompt and the `skill` tool; nothing else is affected.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SkillProblem {
    /// The file or folder (absolute).
    pub path: String,
    /// What is wrong, e.g. `missing description`, `symlink: ...`, `too large: ...`.
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SkillList {
    /// The skills the agent has, in the order its system prompt lists them.
    pub skills: Vec<SkillInfo>,
    pub errors: Vec<SkillProblem>,
}

/// The exact body of a model call, for debugging.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RequestPreview {
    pub provider: String,
    pub model: String,
    /// The request body as the provider would receive it.
    pub request: serde_json::Value,
    /// Estimated tokens of the request as sent (a heuristic fitted against the o200k
    /// tokenizer, corrected by what the provider reported for earlier calls).
    pub estimated_tokens: u64,
    /// The estimate by part, the budget, and what was left out to fit it.
    pub context: ContextReport,
}

/// How a request was fitted into the model's window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContextReport {
    /// The model's context window.
    pub context_window: u64,
    /// Tokens the request may use: the window minus the output reserve.
    pub budget: u64,
    /// Estimated tokens by part, as sent.
    pub system_tokens: u64,
    pub tools_tokens: u64,
    pub messages_tokens: u64,
    /// Estimated tokens before shrinking (after the edge and the summary).
    pub estimated_before: u64,
    /// Tool results of earlier rounds replaced by stubs.
    pub stubbed_results: u64,
    /// Oldest whole rounds left out.
    pub dropped_rounds: u64,
    /// Messages before the context edge.
    pub hidden_by_edge: u64,
    /// Messages replaced by the stored summary.
    pub summarized_messages: u64,
    /// Even the latest round alone does not fit: the request is sent over the budget.
    pub over_budget: bool,
}

/// Result of `removeMcpServer`: `{}`, sent once the server is stopped and forgotten.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RemovedResult {}

/// Result of `regenerate`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RegenerateResult {
    /// The new variant, being written.
    pub assistant_message_id: String,
}

/// Result of `getTurnDiff`: the workspace files one answer's tool calls changed, from
/// before its first call that could change files to after its last step.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnDiff {
    /// In path order; empty when the answer changed nothing (or ran no such call).
    pub files: Vec<TurnFile>,
}

/// One file (or symbolic link) an answer changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnFile {
    /// Relative to the agent's workspace, `/`-separated.
    pub path: String,
    pub status: TurnFileStatus,
    /// A unified diff with git's headers (`a/path`, `b/path`, `/dev/null`); a binary
    /// file, or one not kept (over 4 MiB), is one line saying so; a link shows as
    /// `symbolic link to <target>`.
    pub diff: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum TurnFileStatus {
    Added,
    Modified,
    Deleted,
}

/// A workspace path `revertTo` left alone, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RevertConflict {
    pub path: String,
    pub reason: String,
}

/// Result of `revertTo`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RevertResult {
    /// Workspace paths put back as they were before the message (rewritten, recreated,
    /// or removed when the runs created them), in path order.
    pub restored: Vec<String>,
    /// Paths the runs changed that were left alone: changed by someone else since the
    /// agent's last step, not kept (over 4 MiB), or not safely writable (a link on the way).
    pub conflicts: Vec<RevertConflict>,
    /// Messages removed from the conversation (the user message and every later one; 0
    /// with `conversation: false`).
    pub removed_messages: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfo {
    pub agent_id: String,
    pub status: SessionStatus,
    /// The assistant message of the active (or suspended) run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_message_id: Option<String>,
    pub pending_permissions: Vec<PendingPermission>,
    /// Questions of the model waiting for the user (`answerQuestion`).
    #[serde(default)]
    pub pending_questions: Vec<crate::PendingQuestion>,
    /// Steps taken by the current run (a step is one model call and its tool calls).
    pub step: u32,
    /// The agent's latest event seq: subscribe with `sinceSeq` = this to get only new events.
    pub last_seq: u64,
    /// Messages queued behind the run and steers not yet joined, in the order they run.
    #[serde(default)]
    pub queue: Vec<QueuedMessage>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProviderInfo {
    pub id: String,
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// Whether an API key is present. The key itself never leaves the daemon.
    pub has_api_key: bool,
    /// The environment variable the key is read from, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key_env: Option<String>,
    /// Model used when an agent names this provider but no model.
    pub default_model: String,
    /// Where this provider comes from: `builtin`, `preset` (an API key in the environment)
    /// or `config`.
    pub source: String,
    /// True for the provider new agents get when `createAgent` names none.
    pub is_default: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProviderList {
    pub providers: Vec<ProviderInfo>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelInfo {
    pub provider: String,
    pub id: String,
    pub context_window: u32,
    pub max_output_tokens: u32,
    /// Native function calling.
    pub tools: bool,
    pub vision: bool,
    pub reasoning: bool,
    /// PDF documents go to the model natively; without it they are named by path.
    #[serde(default)]
    pub documents: bool,
    /// USD per million input tokens, when the config gives a price (`getUsage` costs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_price: Option<f64>,
    /// USD per million output tokens, when the config gives a price.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_price: Option<f64>,
    /// With `listModels {served: true}`: whether the provider lists this model (a model it
    /// lists that the config does not name is added with `served: true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub served: Option<bool>,
}

/// A provider that could not say which models it serves (`listModels {served: true}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelListError {
    pub provider: String,
    /// What went wrong, in the provider's words where it gave some.
    pub error: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelList {
    pub models: Vec<ModelInfo>,
    /// With `served: true`: the providers that could not say what they serve.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<ModelListError>,
}

/// The answer of `complete`: a model call with no agent, never stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompleteResult {
    pub provider: String,
    pub model: String,
    pub text: String,
    /// Why the model stopped (`stop`, `length`, ... as the provider said), when it said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<crate::Usage>,
}

/// The outcome of `testProvider`: one tiny request to the provider.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TestProviderResult {
    pub provider: String,
    pub model: String,
    /// The provider answered (streamed an answer to its end).
    pub ok: bool,
    /// Milliseconds until the first streamed piece arrived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<u64>,
    /// Milliseconds until the answer ended (or failed).
    pub total_ms: u64,
    /// What the model answered (cut to 200 characters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply: Option<String>,
    /// The provider's error text, when it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_kind: Option<String>,
    /// How many times the request was retried.
    pub retries: u32,
}

/// One message of a `complete` call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CompleteMessage {
    pub role: CompleteRole,
    pub content: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CompleteRole {
    User,
    Assistant,
}

/// A subscription id as `subscribe` answered it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum SubscriptionId {
    Number(u64),
    String(String),
}
