//! The params of every method, one struct each, as the wire has them: a JSON object of
//! named params (camelCase). Optional params may be left out or be `null`; names a method
//! does not know are refused (`invalidParams` naming them).
//!
//! These structs are what the schema (`crate::schema`, `agent-proto/schema/openrpc.json`)
//! describes and what the daemon checks requests against before a method runs. The
//! `#[rpc]` trait (`crate::rpc`) names the same params one by one; a test of the daemon
//! checks that the two agree.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::agent::{AgentMode, AgentSettings, PermissionLevel};
use crate::event::Remember;
use crate::mcp::McpServerSpec;
use crate::message::MessageContent;
use crate::methods::ListOrder;
use crate::transfer::ExportFormat;

/// Params of a method that takes none.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoParams {}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InitializeParams {
    /// The client's name, for the daemon's log.
    #[serde(default)]
    pub client_name: Option<String>,
    #[serde(default)]
    pub client_version: Option<String>,
    /// The protocol version the client speaks; a newer one than the daemon's is refused
    /// (`notSupported`).
    #[serde(default)]
    pub protocol_version: Option<u32>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateAgentParams {
    /// Default `"New agent"` (then the first message names it).
    #[serde(default)]
    pub title: Option<String>,
    /// Default `chat`.
    #[serde(default)]
    pub mode: Option<AgentMode>,
    /// A provider id of `listProviders`; default: the daemon's default provider.
    #[serde(default)]
    pub provider: Option<String>,
    /// Default: the provider's default model.
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub system_prompt: Option<String>,
    /// An existing absolute folder the agent's tools work in; default: a folder of its own.
    #[serde(default)]
    pub workspace: Option<String>,
    /// Stored and returned, not used yet.
    #[serde(default)]
    pub profile: Option<String>,
    #[serde(default)]
    pub settings: Option<AgentSettings>,
    /// With mode `acp` (and only then): the external agent that answers this one.
    #[serde(default)]
    pub acp: Option<crate::AcpBackend>,
}

/// Params naming one agent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentIdParams {
    pub agent_id: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListAgentsParams {
    /// `nextCursor` of the previous page.
    #[serde(default)]
    pub cursor: Option<String>,
    /// Page size: default 50, at most 500 (more is cut to 500); 0 is refused.
    #[serde(default)]
    pub limit: Option<u32>,
    /// Only agents whose title contains this text.
    #[serde(default)]
    pub search: Option<String>,
    #[serde(default)]
    pub pinned: Option<bool>,
    /// `true` lists archived agents (only them); default: unarchived ones.
    #[serde(default)]
    pub archived: Option<bool>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpdateAgentParams {
    pub agent_id: String,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub pinned: Option<bool>,
    #[serde(default)]
    pub archived: Option<bool>,
    #[serde(default)]
    pub provider: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub system_prompt: Option<String>,
    /// A JSON merge patch of the settings: the given fields replace the stored ones,
    /// `null` removes one.
    #[serde(default)]
    pub settings: Option<AgentSettings>,
    /// A profile by name (`listProfiles`); `""` removes the agent's profile.
    #[serde(default)]
    pub profile: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SetAgentModeParams {
    pub agent_id: String,
    /// `chat` or `agent` (`acp` is refused: an agent does not switch to or from it).
    pub mode: AgentMode,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ForkAgentParams {
    pub agent_id: String,
    /// The last message the fork's history copies; default: all of them.
    #[serde(default)]
    pub message_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExportAgentParams {
    pub agent_id: String,
    pub format: ExportFormat,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ImportAgentParams {
    /// A JSON export (`AgentExport`), or its text as `exportAgent` returned it in
    /// `content`.
    pub data: serde_json::Value,
    /// An existing absolute folder for the new agent to work in.
    #[serde(default)]
    pub workspace: Option<String>,
    /// Keep the exported workspace (it must exist here).
    #[serde(default)]
    pub keep_workspace: Option<bool>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListMessagesParams {
    pub agent_id: String,
    /// `nextCursor` of the previous page, used with the same `order`.
    #[serde(default)]
    pub cursor: Option<String>,
    /// Page size: default 50, at most 500; 0 is refused.
    #[serde(default)]
    pub limit: Option<u32>,
    /// Default `asc` (oldest first).
    #[serde(default)]
    pub order: Option<ListOrder>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SendMessageParams {
    pub agent_id: String,
    pub content: MessageContent,
    /// An idempotency key: the same key again returns the first send's ids and does
    /// nothing else.
    #[serde(default)]
    pub client_request_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HandlePermissionResponseParams {
    /// From the prompt.
    pub message_id: String,
    /// From the prompt.
    pub tool_call_id: String,
    pub granted: bool,
    /// If given, must be the prompt's (a guard against answering the wrong prompt).
    #[serde(default)]
    pub permission_type: Option<PermissionLevel>,
    /// Default `once`.
    #[serde(default)]
    pub remember: Option<Remember>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AnswerQuestionParams {
    /// From `questionRequested`.
    pub message_id: String,
    /// From `questionRequested`.
    pub tool_call_id: String,
    /// One answer per question, in order (unless `declined`).
    #[serde(default)]
    pub answers: Option<Vec<crate::QuestionAnswer>>,
    /// The user declines to answer; the model is told so.
    #[serde(default)]
    pub declined: Option<bool>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListToolsParams {
    /// With an agent, `enabled` says what its model is offered.
    #[serde(default)]
    pub agent_id: Option<String>,
}

/// Params naming an agent and, optionally, one of its messages.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentMessageParams {
    pub agent_id: String,
    #[serde(default)]
    pub message_id: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RegenerateParams {
    pub agent_id: String,
    /// The agent's latest answer.
    pub message_id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AddMcpServerParams {
    pub spec: McpServerSpec,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpdateMcpServerParams {
    pub name: String,
    /// The spec fields to replace (any of `McpServerSpec`'s but `name`).
    pub changes: serde_json::Map<String, serde_json::Value>,
}

/// Params naming one MCP server.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct McpServerNameParams {
    pub name: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListModelsParams {
    /// Only this provider's models.
    #[serde(default)]
    pub provider: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TestProviderParams {
    /// Default: the daemon's default provider.
    #[serde(default)]
    pub provider: Option<String>,
    /// Default: the provider's default model.
    #[serde(default)]
    pub model: Option<String>,
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

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CompleteParams {
    /// Default: the daemon's default provider.
    #[serde(default)]
    pub provider: Option<String>,
    /// Default: the provider's default model.
    #[serde(default)]
    pub model: Option<String>,
    /// The conversation (ending with a user message); or give `prompt`.
    #[serde(default)]
    pub messages: Option<Vec<CompleteMessage>>,
    /// One user message; or give `messages`.
    #[serde(default)]
    pub prompt: Option<String>,
    #[serde(default)]
    pub system: Option<String>,
    #[serde(default)]
    pub max_tokens: Option<u32>,
    #[serde(default)]
    pub temperature: Option<f64>,
    /// Also send the answer's pieces as they come, as `completionDelta` notifications
    /// (`{requestId, delta}`) to the calling connection, before the response.
    #[serde(default)]
    pub stream: Option<bool>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SubscribeParams {
    /// One agent's events; absent: every agent's (and the daemon's own events).
    #[serde(default)]
    pub agent_id: Option<String>,
    /// Replay the agent's events after this seq first (needs `agentId`).
    #[serde(default)]
    pub since_seq: Option<u64>,
    /// Start with a `snapshot` event: the agent's latest message as of the agent's
    /// latest seq, then the events after it (needs `agentId`; not with `sinceSeq`).
    #[serde(default)]
    pub snapshot: Option<bool>,
}

/// A subscription id as `subscribe` answered it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum SubscriptionId {
    Number(u64),
    String(String),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UnsubscribeParams {
    pub subscription: SubscriptionId,
}
