//! The method table of the protocol as a jsonrpsee `#[rpc]` trait.
//!
//! Behind the `rpc` feature (jsonrpsee pulls tokio). The daemon implements the generated
//! `AgentRpcServer`; Rust clients get `AgentRpcClient` for free on any jsonrpsee client (the
//! `client` feature adds one over the socket). Params are by name (a JSON object,
//! camelCase); omitted optional params may be left out or be `null`.

// The method table mirrors the wire, where some methods have many optional params.
#![allow(clippy::too_many_arguments)]

use jsonrpsee::core::{RpcResult, SubscriptionResult};
use jsonrpsee::proc_macros::rpc;
use serde_json::Value;

use crate::agent::PermissionLevel;
use crate::agent::{Agent, AgentMode};
use crate::event::{Event, Remember};
use crate::mcp::{McpServerInfo, McpServerList, McpServerSpec};
use crate::message::MessageContent;
use crate::methods::*;
use crate::transfer::{ExportFormat, ExportResult};

#[rpc(server, client)]
pub trait AgentRpc {
    /// Optional handshake: tells the client the server's version and capabilities.
    #[method(name = "initialize", param_kind = map)]
    async fn initialize(
        &self,
        #[argument(rename = "clientName")] client_name: Option<String>,
        #[argument(rename = "clientVersion")] client_version: Option<String>,
        #[argument(rename = "protocolVersion")] protocol_version: Option<u32>,
    ) -> RpcResult<InitializeResult>;

    /// Creates an agent; absent fields take the daemon's defaults.
    #[method(name = "createAgent", param_kind = map)]
    async fn create_agent(
        &self,
        title: Option<String>,
        mode: Option<AgentMode>,
        provider: Option<String>,
        model: Option<String>,
        #[argument(rename = "systemPrompt")] system_prompt: Option<String>,
        workspace: Option<String>,
        profile: Option<String>,
        settings: Option<Value>,
        acp: Option<crate::AcpBackend>,
    ) -> RpcResult<Agent>;

    #[method(name = "getAgent", param_kind = map)]
    async fn get_agent(&self, #[argument(rename = "agentId")] agent_id: String)
    -> RpcResult<Agent>;

    /// Agents, newest first. Archived agents are listed only with `archived: true`.
    #[method(name = "listAgents", param_kind = map)]
    async fn list_agents(
        &self,
        cursor: Option<String>,
        limit: Option<u32>,
        search: Option<String>,
        pinned: Option<bool>,
        archived: Option<bool>,
    ) -> RpcResult<AgentList>;

    /// Changes the given fields; `settings` is merged into the stored settings; `profile`
    /// `""` removes the profile.
    #[method(name = "updateAgent", param_kind = map)]
    async fn update_agent(
        &self,
        #[argument(rename = "agentId")] agent_id: String,
        title: Option<String>,
        pinned: Option<bool>,
        archived: Option<bool>,
        provider: Option<String>,
        model: Option<String>,
        #[argument(rename = "systemPrompt")] system_prompt: Option<String>,
        settings: Option<Value>,
        profile: Option<String>,
    ) -> RpcResult<Agent>;

    /// Switches an agent between `chat` (answers only) and `agent` (tools in its workspace,
    /// which is created when it has none). Runs started afterwards use the new mode; `acp`
    /// agents cannot switch, nor can an agent switch to `acp`.
    #[method(name = "setAgentMode", param_kind = map)]
    async fn set_agent_mode(
        &self,
        #[argument(rename = "agentId")] agent_id: String,
        mode: AgentMode,
    ) -> RpcResult<Agent>;

    /// Cancels the agent's run, then removes it with its messages.
    #[method(name = "deleteAgent", param_kind = map)]
    async fn delete_agent(
        &self,
        #[argument(rename = "agentId")] agent_id: String,
    ) -> RpcResult<DeleteAgentResult>;

    /// A new agent with the settings of `agentId` and a copy of its history up to and
    /// including `messageId` (all of it when absent): new ids, its own copies of offloaded
    /// results and images, unfinished messages closed as `interrupted`.
    #[method(name = "forkAgent", param_kind = map)]
    async fn fork_agent(
        &self,
        #[argument(rename = "agentId")] agent_id: String,
        #[argument(rename = "messageId")] message_id: Option<String>,
    ) -> RpcResult<Agent>;

    /// The agent and its history as a markdown transcript, or as a JSON export (with the
    /// offloaded results and images) that `importAgent` reads back.
    #[method(name = "exportAgent", param_kind = map)]
    async fn export_agent(
        &self,
        #[argument(rename = "agentId")] agent_id: String,
        format: ExportFormat,
    ) -> RpcResult<ExportResult>;

    /// Creates a new agent from a JSON export (the object, or its text as `exportAgent`
    /// returned it in `content`). The export's permission rules and profile are dropped (the
    /// daemon's rules apply); the agent works in `workspace` (an existing absolute folder), or in the
    /// exported one with `keepWorkspace: true` (it must exist here), else in a new folder
    /// of its own.
    #[method(name = "importAgent", param_kind = map)]
    async fn import_agent(
        &self,
        data: Value,
        workspace: Option<String>,
        #[argument(rename = "keepWorkspace")] keep_workspace: Option<bool>,
    ) -> RpcResult<Agent>;

    #[method(name = "listMessages", param_kind = map)]
    async fn list_messages(
        &self,
        #[argument(rename = "agentId")] agent_id: String,
        cursor: Option<String>,
        limit: Option<u32>,
        order: Option<ListOrder>,
    ) -> RpcResult<MessageList>;

    /// Stores the user message and starts a run; returns at once. The answer streams as
    /// events. `clientRequestId` makes a retry of the same send return the same ids.
    #[method(name = "sendMessage", param_kind = map)]
    async fn send_message(
        &self,
        #[argument(rename = "agentId")] agent_id: String,
        content: MessageContent,
        #[argument(rename = "clientRequestId")] client_request_id: Option<String>,
    ) -> RpcResult<SendMessageResult>;

    /// Cancels the agent's active run; idempotent.
    #[method(name = "cancelLoop", param_kind = map)]
    async fn cancel_loop(
        &self,
        #[argument(rename = "agentId")] agent_id: String,
    ) -> RpcResult<CancelLoopResult>;

    /// Continues the agent's last run (after maxSteps, a pause, an error or an interruption)
    /// on the same assistant message.
    #[method(name = "continueLoop", param_kind = map)]
    async fn continue_loop(
        &self,
        #[argument(rename = "agentId")] agent_id: String,
    ) -> RpcResult<ContinueLoopResult>;

    /// Answers a `permissionRequested`. The first answer wins; later ones get
    /// `permissionNotPending`. The run resumes on the same assistant message.
    #[method(name = "handlePermissionResponse", param_kind = map)]
    async fn handle_permission_response(
        &self,
        #[argument(rename = "messageId")] message_id: String,
        #[argument(rename = "toolCallId")] tool_call_id: String,
        granted: bool,
        #[argument(rename = "permissionType")] permission_type: Option<PermissionLevel>,
        remember: Option<Remember>,
    ) -> RpcResult<PermissionResponseResult>;

    /// Answers a `questionRequested`: one answer per question, in order (`selected` labels
    /// and/or free `text`), or `declined: true`. The first answer wins; later ones get
    /// `questionNotPending`. The run resumes on the same assistant message with the answers
    /// as the call's result.
    #[method(name = "answerQuestion", param_kind = map)]
    async fn answer_question(
        &self,
        #[argument(rename = "messageId")] message_id: String,
        #[argument(rename = "toolCallId")] tool_call_id: String,
        answers: Option<Vec<crate::QuestionAnswer>>,
        declined: Option<bool>,
    ) -> RpcResult<AnswerQuestionResult>;

    /// The agent's plan, as its last `todo_write` left it (empty when there was none).
    #[method(name = "getPlan", param_kind = map)]
    async fn get_plan(
        &self,
        #[argument(rename = "agentId")] agent_id: String,
    ) -> RpcResult<crate::Plan>;

    /// Stops the active run at its next checkpoint (between steps and tool calls).
    #[method(name = "pauseSession", param_kind = map)]
    async fn pause_session(
        &self,
        #[argument(rename = "agentId")] agent_id: String,
    ) -> RpcResult<SessionStatusResult>;

    /// Continues a paused run.
    #[method(name = "resumeSession", param_kind = map)]
    async fn resume_session(
        &self,
        #[argument(rename = "agentId")] agent_id: String,
    ) -> RpcResult<SessionStatusResult>;

    /// The tools there are, or those of one agent with `enabled` for it.
    #[method(name = "listTools", param_kind = map)]
    async fn list_tools(
        &self,
        #[argument(rename = "agentId")] agent_id: Option<String>,
    ) -> RpcResult<ToolList>;

    /// The exact request body of the agent's next model call (or of the first call of the
    /// given assistant message).
    #[method(name = "getMessageRequestPreview", param_kind = map)]
    async fn get_message_request_preview(
        &self,
        #[argument(rename = "agentId")] agent_id: String,
        #[argument(rename = "messageId")] message_id: Option<String>,
    ) -> RpcResult<RequestPreview>;

    /// Hides every message up to and including `messageId` from the model (null: shows
    /// everything again). Messages stay in the store and in `listMessages`.
    #[method(name = "setContextEdge", param_kind = map)]
    async fn set_context_edge(
        &self,
        #[argument(rename = "agentId")] agent_id: String,
        #[argument(rename = "messageId")] message_id: Option<String>,
    ) -> RpcResult<Agent>;

    /// Runs the last step of the agent's latest answer again, as a new variant of it.
    #[method(name = "regenerate", param_kind = map)]
    async fn regenerate(
        &self,
        #[argument(rename = "agentId")] agent_id: String,
        #[argument(rename = "messageId")] message_id: String,
    ) -> RpcResult<RegenerateResult>;

    /// MCP servers with their status and tools.
    #[method(name = "listMcpServers", param_kind = map)]
    async fn list_mcp_servers(&self) -> RpcResult<McpServerList>;

    /// Adds (and, when enabled, starts) a server; stored, so it comes back after a restart.
    #[method(name = "addMcpServer", param_kind = map)]
    async fn add_mcp_server(&self, spec: McpServerSpec) -> RpcResult<McpServerInfo>;

    /// Changes a server added over RPC: `changes` holds the spec fields to replace (not
    /// `name`); the server restarts with them.
    #[method(name = "updateMcpServer", param_kind = map)]
    async fn update_mcp_server(&self, name: String, changes: Value) -> RpcResult<McpServerInfo>;

    /// Stops and forgets a server added over RPC.
    #[method(name = "removeMcpServer", param_kind = map)]
    async fn remove_mcp_server(&self, name: String) -> RpcResult<RemovedResult>;

    /// Restarts a server now (also one waiting out a backoff, or a lazy one not started).
    #[method(name = "restartMcpServer", param_kind = map)]
    async fn restart_mcp_server(&self, name: String) -> RpcResult<McpServerInfo>;

    #[method(name = "getSession", param_kind = map)]
    async fn get_session(
        &self,
        #[argument(rename = "agentId")] agent_id: String,
    ) -> RpcResult<SessionInfo>;

    /// The profiles agents can be given: the built-in ones and the config file's.
    #[method(name = "listProfiles", param_kind = map)]
    async fn list_profiles(&self) -> RpcResult<ProfileList>;

    /// The skills an agent has (its workspace's, the config's, the user's), and the
    /// `SKILL.md` files that could not be used with the reason.
    #[method(name = "listSkills", param_kind = map)]
    async fn list_skills(
        &self,
        #[argument(rename = "agentId")] agent_id: String,
    ) -> RpcResult<SkillList>;

    #[method(name = "listProviders", param_kind = map)]
    async fn list_providers(&self) -> RpcResult<ProviderList>;

    #[method(name = "listModels", param_kind = map)]
    async fn list_models(&self, provider: Option<String>) -> RpcResult<ModelList>;

    /// Sends one tiny request to a provider (the default one, and its default model, when
    /// absent) and reports the latency or the error text.
    #[method(name = "testProvider", param_kind = map)]
    async fn test_provider(
        &self,
        provider: Option<String>,
        model: Option<String>,
    ) -> RpcResult<TestProviderResult>;

    /// One model call with no agent and no history (never stored): `messages` (ending with
    /// a user message) or `prompt`, an optional `system` prompt; the whole answer.
    #[method(name = "complete", param_kind = map)]
    async fn complete(
        &self,
        provider: Option<String>,
        model: Option<String>,
        messages: Option<Vec<crate::CompleteMessage>>,
        prompt: Option<String>,
        system: Option<String>,
        #[argument(rename = "maxTokens")] max_tokens: Option<u32>,
        temperature: Option<f64>,
        stream: Option<bool>,
    ) -> RpcResult<crate::CompleteResult>;

    /// Events of one agent (or of all agents when `agentId` is absent) as `event`
    /// notifications. With `agentId` and `sinceSeq`, first replays the events after
    /// `sinceSeq`, or sends `resyncRequired` when they are too old to replay. With
    /// `agentId` and `snapshot: true`, the first event is a `snapshot` of the agent (its
    /// latest message as of that seq), and the events after it follow.
    #[subscription(name = "subscribe" => "event", unsubscribe = "unsubscribe", item = Event, param_kind = map)]
    async fn subscribe_events(
        &self,
        #[argument(rename = "agentId")] agent_id: Option<String>,
        #[argument(rename = "sinceSeq")] since_seq: Option<u64>,
        snapshot: Option<bool>,
    ) -> SubscriptionResult;
}
