//! The method table: every method of the protocol, declared once, here.
//!
//! A method is one entry of the `declare_methods!` table below: its doc, the error kinds
//! it may answer, its wire name, the Rust method, the params struct, its params and its
//! result. Everything else that names methods is made from the table:
//!
//! - [`METHODS`]: one [`MethodDescriptor`] per method (name, doc, params with their wire
//!   names and presence, result schema, error kinds), as `const` data;
//! - [`params`]: one struct per method's params, which the schema describes and the
//!   daemon checks requests against;
//! - (feature `rpc`) the jsonrpsee `#[rpc]` trait `AgentRpc`, so `AgentRpcServer` (the
//!   daemon implements it) and `AgentRpcClient` (agentctl, the tests);
//! - from those, [`crate::schema`]'s OpenRPC document (`agent-proto/schema/openrpc.json`),
//!   and from that the Python client's method table and the TypeScript client's method
//!   list; `agent-proto/tests/schema.rs` checks docs/protocol.md's method index against
//!   [`METHODS`].
//!
//! An entry reads:
//!
//! ```text
//! /// Summary: the first paragraph (OpenRPC `summary`, one line).
//! ///
//! /// More paragraphs: the rest of the description.
//! #[errors(AgentNotFound)]                      // besides invalidParams, internal, overloaded
//! method "wireName" fn rust_name(WireNameParams) {
//!     /// The param's doc.
//!     req agent_id "agentId": String,           // required
//!     opt limit "limit": u32,                   // optional: Option<u32>, may be left out
//!     null message_id "messageId": String,      // optional, but null means something
//!     opt settings "settings": Value as AgentSettings, // the trait takes a Value, the
//!                                               // schema describes AgentSettings
//! } -> ResultType;
//! ```
//!
//! `subscription` and `unsubscribe` entries declare the event subscription the same way.
//! Wire names are the camelCase of the Rust names and params structs are named after the
//! method (tests check both); required params come first.
//!
//! Why a `macro_rules!` table and not a build-time generator: the table stays Rust, next to
//! the types it names, checked by the compiler where it is written (a wrong type is an
//! error on the line of the table, not in generated text), read by rust-analyzer, and the
//! crate needs no build script, no second parser and no data format of its own. What the
//! macro cannot do (case conversion, new identifiers) the table states and tests check.
//! The price is a tt-muncher (see `declare.rs`), because jsonrpsee's attribute must see the
//! trait whole. The descriptors are plain data without a runtime, so a client in another
//! runtime has them without the `rpc` feature.

// The method table mirrors the wire, where some methods have many optional params.
#![allow(clippy::too_many_arguments)]

mod declare;
mod descriptor;

use serde_json::Value;

use crate::agent::{AcpBackend, Agent, AgentMode, AgentSettings, PermissionLevel};
use crate::event::Remember;
use crate::mcp::{McpServerInfo, McpServerList, McpServerSpec};
use crate::message::{MessageContent, ReasoningEffort};
use crate::methods::*;
use crate::plan::Plan;
use crate::question::QuestionAnswer;
use crate::transfer::{ExportFormat, ExportResult};
use declare::declare_methods;

/// A JSON object of any members (a param's schema: `outputSchema`).
type JsonObject = serde_json::Map<String, Value>;
pub use descriptor::{
    ANY_METHOD_ERRORS, MethodDescriptor, MethodKind, ParamDescriptor, Presence, camel_case,
};

declare_methods! {
    // The trait's attribute, name and receiver (see `declare.rs` for why they are here).
    #[jsonrpsee::proc_macros::rpc(server, client)]
    pub trait AgentRpc(&self);

    /// Optional handshake: the server's version and capabilities (methods, events, modes,
    /// limits).
    #[errors(NotSupported)]
    method "initialize" fn initialize(InitializeParams) {
        /// The client's name, for the daemon's log.
        opt client_name "clientName": String,
        opt client_version "clientVersion": String,
        /// The protocol version the client speaks; a newer one than the daemon's is refused
        /// (`notSupported`).
        opt protocol_version "protocolVersion": u32,
    } -> InitializeResult;

    /// Creates an agent; absent fields take the daemon's defaults.
    ///
    /// With `mode: "acp"`, `acp` names the external ACP agent that answers it.
    #[errors(ProviderNotConfigured, NotSupported)]
    method "createAgent" fn create_agent(CreateAgentParams) {
        /// Default `"New agent"` (then the first message names it).
        opt title "title": String,
        /// Default `chat`.
        opt mode "mode": AgentMode,
        /// A provider id of `listProviders`; default: the daemon's default provider.
        opt provider "provider": String,
        /// Default: the provider's default model.
        opt model "model": String,
        opt system_prompt "systemPrompt": String,
        /// An existing absolute folder the agent's tools work in; default: a folder of its own.
        opt workspace "workspace": String,
        /// Stored and returned, not used yet.
        opt profile "profile": String,
        opt settings "settings": Value as AgentSettings,
        /// With mode `acp` (and only then): the external agent that answers this one.
        opt acp "acp": AcpBackend,
    } -> Agent;

    /// One agent, with its live session status.
    #[errors(AgentNotFound)]
    method "getAgent" fn get_agent(GetAgentParams) {
        req agent_id "agentId": String,
    } -> Agent;

    /// Agents, newest first; archived ones only with `archived: true`.
    method "listAgents" fn list_agents(ListAgentsParams) {
        /// `nextCursor` of the previous page.
        opt cursor "cursor": String,
        /// Page size: default 50, at most 500 (more is cut to 500); 0 is refused.
        opt limit "limit": u32,
        /// Only agents whose title contains this text.
        opt search "search": String,
        opt pinned "pinned": bool,
        /// `true` lists archived agents (only them); default: unarchived ones.
        opt archived "archived": bool,
    } -> AgentList;

    /// Changes the given fields; `settings` is merged into the stored settings.
    ///
    /// `profile: ""` removes the agent's profile.
    #[errors(AgentNotFound, ProviderNotConfigured)]
    method "updateAgent" fn update_agent(UpdateAgentParams) {
        req agent_id "agentId": String,
        opt title "title": String,
        opt pinned "pinned": bool,
        opt archived "archived": bool,
        opt provider "provider": String,
        opt model "model": String,
        opt system_prompt "systemPrompt": String,
        /// A JSON merge patch of the settings: the given fields replace the stored ones,
        /// `null` removes one.
        opt settings "settings": Value as AgentSettings,
        /// A profile by name (`listProfiles`); `""` removes the agent's profile.
        opt profile "profile": String,
    } -> Agent;

    /// Switches the agent between `chat` and `agent` (a workspace is made when it has
    /// none).
    ///
    /// Runs started afterwards use the new mode. `acp` agents cannot switch, nor can an
    /// agent switch to `acp`.
    #[errors(AgentNotFound)]
    method "setAgentMode" fn set_agent_mode(SetAgentModeParams) {
        req agent_id "agentId": String,
        /// `chat` or `agent` (`acp` is refused: an agent does not switch to or from it).
        req mode "mode": AgentMode,
    } -> Agent;

    /// Cancels the agent's run, then removes it with its messages and files.
    #[errors(AgentNotFound)]
    method "deleteAgent" fn delete_agent(DeleteAgentParams) {
        req agent_id "agentId": String,
    } -> DeleteAgentResult;

    /// A new agent with the settings of `agentId` and a copy of its history up to and
    /// including `messageId` (all of it when absent).
    ///
    /// The copy has new ids and its own copies of offloaded results and images;
    /// unfinished messages are closed as `interrupted`.
    #[errors(AgentNotFound, MessageNotFound)]
    method "forkAgent" fn fork_agent(ForkAgentParams) {
        req agent_id "agentId": String,
        /// The last message the fork's history copies; default: all of them.
        opt message_id "messageId": String,
    } -> Agent;

    /// The agent and its history as a markdown transcript or a JSON export.
    ///
    /// The JSON export (with the offloaded results and images) is what `importAgent`
    /// reads back.
    #[errors(AgentNotFound, InputTooLarge)]
    method "exportAgent" fn export_agent(ExportAgentParams) {
        req agent_id "agentId": String,
        req format "format": ExportFormat,
    } -> ExportResult;

    /// Creates a new agent from a JSON export.
    ///
    /// The export's permission rules and profile are dropped (the daemon's rules apply);
    /// the agent works in `workspace` (an existing absolute folder), or in the exported
    /// one with `keepWorkspace: true` (it must exist here), else in a new folder of its
    /// own.
    #[errors(InputTooLarge)]
    method "importAgent" fn import_agent(ImportAgentParams) {
        /// A JSON export (`AgentExport`), or its text as `exportAgent` returned it in
        /// `content`.
        req data "data": Value,
        /// An existing absolute folder for the new agent to work in.
        opt workspace "workspace": String,
        /// Keep the exported workspace (it must exist here).
        opt keep_workspace "keepWorkspace": bool,
    } -> Agent;

    /// One page of the agent's messages.
    #[errors(AgentNotFound)]
    method "listMessages" fn list_messages(ListMessagesParams) {
        req agent_id "agentId": String,
        /// `nextCursor` of the previous page, used with the same `order`.
        opt cursor "cursor": String,
        /// Page size: default 50, at most 500; 0 is refused.
        opt limit "limit": u32,
        /// Default `asc` (oldest first).
        opt order "order": ListOrder,
    } -> MessageList;

    /// Tokens the answers used and what they cost, by model and by agent: of one agent, or
    /// of every agent there is.
    ///
    /// Costs come from the prices the config gives models (`input_price`, `output_price`,
    /// USD per million tokens).
    #[errors(AgentNotFound)]
    method "getUsage" fn get_usage(GetUsageParams) {
        opt agent_id "agentId": String,
    } -> UsageReport;

    /// Messages whose text contains `query`, newest first: of one agent, or of all.
    ///
    /// Case-insensitive (letters outside ASCII match their case only as they are written);
    /// the text of user and assistant messages, not tool output.
    #[errors(AgentNotFound, InvalidParams)]
    method "searchMessages" fn search_messages(SearchMessagesParams) {
        /// At least one character that is not whitespace.
        req query "query": String,
        opt agent_id "agentId": String,
        /// At most this many hits: default 50, at most 500; 0 is refused.
        opt limit "limit": u32,
    } -> MessageSearch;

    /// Stores the user message and starts a run; the answer streams as events.
    ///
    /// Returns at once. `clientRequestId` makes a retry of the same send return the same
    /// ids. Into a busy agent (a run active, waiting for a client or paused) `whenBusy`
    /// says what happens: `refuse` (the default: `agentBusy`, or `invalidState` while
    /// suspended), `queue` (stored and run as the next turn when the current run ends) or
    /// `steer` (text only: joins the running turn as a user message before its next model
    /// call). An idle agent runs it at once whatever `whenBusy` says; `delivery` in the
    /// answer tells which happened.
    #[errors(AgentNotFound, AgentBusy, InputTooLarge, InvalidParams, InvalidState, NotSupported, ShuttingDown)]
    method "sendMessage" fn send_message(SendMessageParams) {
        req agent_id "agentId": String,
        req content "content": MessageContent,
        /// An idempotency key: the same key again returns the first send's ids and does
        /// nothing else.
        opt client_request_id "clientRequestId": String,
        /// Default `refuse`.
        opt when_busy "whenBusy": WhenBusy,
        /// This turn only: the provider that answers (its default model unless `model`
        /// is given too); checked like `updateAgent`'s.
        opt provider "provider": String,
        /// This turn only: the model that answers.
        opt model "model": String,
        /// This turn only: how much a reasoning model thinks (ignored for a model the
        /// capability table marks as not reasoning).
        opt reasoning_effort "reasoningEffort": ReasoningEffort,
        /// This turn only: a JSON Schema (an object, at most 64 KiB) the final answer must
        /// be valid JSON against; one corrective retry, then the run ends in an error.
        opt output_schema "outputSchema": Value as JsonObject,
    } -> SendMessageResult;

    /// Cancels the agent's run (active or suspended); idempotent.
    ///
    /// Messages queued behind it stay queued and the next one starts when the run has
    /// ended (`cancelQueuedMessage` drops them first); a steer that had not yet joined
    /// the turn is queued as the next turn instead.
    #[errors(AgentNotFound)]
    method "cancelLoop" fn cancel_loop(CancelLoopParams) {
        req agent_id "agentId": String,
    } -> CancelLoopResult;

    /// Drops a message queued (or a steer not yet joined) with `sendMessage {whenBusy}`;
    /// without `userMessageId`, all of the agent's. `queueUpdated` tells every client.
    #[errors(AgentNotFound)]
    method "cancelQueuedMessage" fn cancel_queued_message(CancelQueuedMessageParams) {
        req agent_id "agentId": String,
        /// The `userMessageId` `sendMessage` answered; absent: every queued message.
        opt user_message_id "userMessageId": String,
    } -> CancelQueuedResult;

    /// Summarizes the conversation now, as the automatic path does when the context fills.
    ///
    /// Every round but the last `keepRounds` (default 1) is folded into a model-written
    /// summary; the messages stay in the store. A `summarized` event tells every client.
    /// Refused while a run is active (`agentBusy`) and when there is nothing to summarize
    /// (`invalidState`).
    #[errors(AgentNotFound, AgentBusy, InvalidParams, InvalidState, NotSupported, ProviderNotConfigured, ProviderFailed, ShuttingDown)]
    method "compactContext" fn compact_context(CompactContextParams) {
        req agent_id "agentId": String,
        /// Rounds kept word for word (a round starts at a user message); at least 1.
        opt keep_rounds "keepRounds": u32,
    } -> CompactContextResult;

    /// Continues the agent's last answer in a new run on the same message.
    ///
    /// For a run that ended at `maxSteps`, a pause, an error or an interruption.
    #[errors(AgentNotFound, AgentBusy, InvalidState, ShuttingDown)]
    method "continueLoop" fn continue_loop(ContinueLoopParams) {
        req agent_id "agentId": String,
    } -> ContinueLoopResult;

    /// Answers a `permissionRequested`; the first answer wins and the run resumes.
    ///
    /// Later answers get `permissionNotPending`. The run resumes on the same assistant
    /// message.
    #[errors(MessageNotFound, PermissionNotPending, ShuttingDown)]
    method "handlePermissionResponse" fn handle_permission_response(HandlePermissionResponseParams) {
        /// From the prompt.
        req message_id "messageId": String,
        /// From the prompt.
        req tool_call_id "toolCallId": String,
        req granted "granted": bool,
        /// If given, must be the prompt's (a guard against answering the wrong prompt).
        opt permission_type "permissionType": PermissionLevel,
        /// Default `once`.
        opt remember "remember": Remember,
    } -> PermissionResponseResult;

    /// Answers (or declines) a `questionRequested`; the first answer wins and the run
    /// resumes.
    ///
    /// One answer per question, in order (`selected` labels and/or free `text`), or
    /// `declined: true`. Later answers get `questionNotPending`. The run resumes on the
    /// same assistant message with the answers as the call's result.
    #[errors(MessageNotFound, QuestionNotPending, ShuttingDown)]
    method "answerQuestion" fn answer_question(AnswerQuestionParams) {
        /// From `questionRequested`.
        req message_id "messageId": String,
        /// From `questionRequested`.
        req tool_call_id "toolCallId": String,
        /// One answer per question, in order (unless `declined`).
        opt answers "answers": Vec<QuestionAnswer>,
        /// The user declines to answer; the model is told so.
        opt declined "declined": bool,
    } -> AnswerQuestionResult;

    /// The agent's plan as its last `todo_write` left it (empty when there was none).
    #[errors(AgentNotFound)]
    method "getPlan" fn get_plan(GetPlanParams) {
        req agent_id "agentId": String,
    } -> Plan;

    /// Stops the active run at its next checkpoint (between steps and tool calls).
    #[errors(AgentNotFound)]
    method "pauseSession" fn pause_session(PauseSessionParams) {
        req agent_id "agentId": String,
    } -> SessionStatusResult;

    /// Continues a paused run.
    #[errors(AgentNotFound, AgentBusy, InvalidState, ShuttingDown)]
    method "resumeSession" fn resume_session(ResumeSessionParams) {
        req agent_id "agentId": String,
    } -> SessionStatusResult;

    /// The tools there are, or those of one agent with `enabled` for it.
    #[errors(AgentNotFound)]
    method "listTools" fn list_tools(ListToolsParams) {
        /// With an agent, `enabled` says what its model is offered.
        opt agent_id "agentId": String,
    } -> ToolList;

    /// The exact request body of the agent's next model call (or of the first call of
    /// `messageId`).
    #[errors(AgentNotFound, MessageNotFound, ProviderNotConfigured)]
    method "getMessageRequestPreview" fn get_message_request_preview(GetMessageRequestPreviewParams) {
        req agent_id "agentId": String,
        opt message_id "messageId": String,
    } -> RequestPreview;

    /// Hides every message up to and including `messageId` from the model (`null`: shows
    /// everything again).
    ///
    /// Messages stay in the store and in `listMessages`.
    #[errors(AgentNotFound, MessageNotFound)]
    method "setContextEdge" fn set_context_edge(SetContextEdgeParams) {
        req agent_id "agentId": String,
        null message_id "messageId": String,
    } -> Agent;

    /// Runs the last step of the agent's latest answer again, as a new variant of it.
    #[errors(AgentNotFound, MessageNotFound, AgentBusy, InvalidState, ShuttingDown)]
    method "regenerate" fn regenerate(RegenerateParams) {
        req agent_id "agentId": String,
        /// The agent's latest answer.
        req message_id "messageId": String,
    } -> RegenerateResult;

    /// The workspace files an answer's tool calls changed (write_file, edit_file, bash
    /// commands, MCP tools), as unified diffs.
    ///
    /// Empty for an answer that changed nothing, and for agents without tools. An answer
    /// copied from another agent (fork, import) has no snapshots: `invalidState`.
    #[errors(AgentNotFound, MessageNotFound, InvalidParams, InvalidState)]
    method "getTurnDiff" fn get_turn_diff(GetTurnDiffParams) {
        req agent_id "agentId": String,
        /// An assistant message of the agent.
        req message_id "messageId": String,
    } -> TurnDiff;

    /// Undoes the agent's turns from a user message on: the workspace files the runs from
    /// that message on changed go back to how they were before it, and that message and
    /// every later one leave the conversation; a `reverted` event tells every client.
    ///
    /// Files changed since by someone else are named in `conflicts` and left alone.
    /// Refused while a run is active (`agentBusy`) or waits for an answer (`invalidState`).
    #[errors(AgentNotFound, MessageNotFound, AgentBusy, InvalidParams, InvalidState, ShuttingDown)]
    method "revertTo" fn revert_to(RevertToParams) {
        req agent_id "agentId": String,
        /// A user message of the agent.
        req message_id "messageId": String,
        /// Put the workspace files back (default true).
        opt files "files": bool,
        /// Remove the message and every later one from the conversation (default true).
        opt conversation "conversation": bool,
    } -> RevertResult;

    /// MCP servers with their status and tools.
    method "listMcpServers" fn list_mcp_servers(ListMcpServersParams) {} -> McpServerList;

    /// Adds (and, when enabled, starts) an MCP server; stored, so it comes back after a
    /// restart.
    method "addMcpServer" fn add_mcp_server(AddMcpServerParams) {
        req spec "spec": McpServerSpec,
    } -> McpServerInfo;

    /// Changes a server added over RPC; it restarts with the changes.
    ///
    /// `changes` holds the spec fields to replace (not `name`).
    #[errors(McpServerNotFound, InvalidState)]
    method "updateMcpServer" fn update_mcp_server(UpdateMcpServerParams) {
        req name "name": String,
        /// The spec fields to replace (any of `McpServerSpec`'s but `name`).
        req changes "changes": Value as serde_json::Map<String, Value>,
    } -> McpServerInfo;

    /// Stops and forgets a server added over RPC.
    #[errors(McpServerNotFound, InvalidState)]
    method "removeMcpServer" fn remove_mcp_server(RemoveMcpServerParams) {
        req name "name": String,
    } -> RemovedResult;

    /// Restarts an MCP server now (also one waiting out a backoff, or a lazy one not
    /// started).
    #[errors(McpServerNotFound)]
    method "restartMcpServer" fn restart_mcp_server(RestartMcpServerParams) {
        req name "name": String,
    } -> McpServerInfo;

    /// The agent's runtime state: status, the run's message, pending prompts, last seq.
    #[errors(AgentNotFound)]
    method "getSession" fn get_session(GetSessionParams) {
        req agent_id "agentId": String,
    } -> SessionInfo;

    /// The profiles agents can be given: the built-in ones and the config's.
    method "listProfiles" fn list_profiles(ListProfilesParams) {} -> ProfileList;

    /// The skills an agent has (its workspace's, the config's, the user's), and the
    /// `SKILL.md` files that could not be used, with the reason.
    #[errors(AgentNotFound)]
    method "listSkills" fn list_skills(ListSkillsParams) {
        req agent_id "agentId": String,
    } -> SkillList;

    /// The configured providers (never their keys).
    method "listProviders" fn list_providers(ListProvidersParams) {} -> ProviderList;

    /// The models of every provider, or of one.
    #[errors(ProviderNotConfigured)]
    method "listModels" fn list_models(ListModelsParams) {
        /// Only this provider's models.
        opt provider "provider": String,
        /// Also ask each provider which models it serves (one request each, up to 10 s).
        opt served "served": bool,
    } -> ModelList;

    /// Sends one tiny request to a provider and reports the latency or its error text.
    #[errors(ProviderNotConfigured)]
    method "testProvider" fn test_provider(TestProviderParams) {
        /// Default: the daemon's default provider.
        opt provider "provider": String,
        /// Default: the provider's default model.
        opt model "model": String,
    } -> TestProviderResult;

    /// One model call with no agent and no history, never stored.
    ///
    /// `messages` (ending with a user message) or `prompt`, and an optional `system`
    /// prompt; the answer comes whole.
    #[errors(ProviderNotConfigured, ProviderFailed, NotSupported)]
    method "complete" fn complete(CompleteParams) {
        /// Default: the daemon's default provider.
        opt provider "provider": String,
        /// Default: the provider's default model.
        opt model "model": String,
        /// The conversation (ending with a user message); or give `prompt`.
        opt messages "messages": Vec<CompleteMessage>,
        /// One user message; or give `messages`.
        opt prompt "prompt": String,
        opt system "system": String,
        opt max_tokens "maxTokens": u32,
        opt temperature "temperature": f64,
        /// Also send the answer's pieces as they come, as `completionDelta` notifications
        /// (`{requestId, delta}`) to the calling connection, before the response.
        opt stream "stream": bool,
    } -> CompleteResult;

    /// Events of one agent (or of all) as `event` notifications (see `x-notifications`).
    ///
    /// With `agentId` and `sinceSeq`, first replays the events after `sinceSeq`, or sends
    /// `resyncRequired` when they are too old to replay. With `agentId` and
    /// `snapshot: true`, the first event is a `snapshot` of the agent (its latest message
    /// as of that seq), and the events after it follow.
    #[errors(AgentNotFound, TooManySubscriptions)]
    subscription "subscribe" fn subscribe_events(SubscribeParams) {
        /// One agent's events; absent: every agent's (and the daemon's own events).
        opt agent_id "agentId": String,
        /// Replay the agent's events after this seq first (needs `agentId`).
        opt since_seq "sinceSeq": u64,
        /// Start with a `snapshot` event: the agent's latest message as of the agent's
        /// latest seq, then the events after it (needs `agentId`; not with `sinceSeq`).
        opt snapshot "snapshot": bool,
    } -> SubscriptionId, notification "event" of crate::event::Event, unsubscribe "unsubscribe";

    /// Ends a subscription of this connection; `false` if it has none of that id.
    unsubscribe "unsubscribe" (UnsubscribeParams) {
        req subscription "subscription": SubscriptionId,
    } -> bool;
}
