//! The JSON-RPC layer: the only module that knows JSON-RPC.
//!
//! [`methods`] builds the jsonrpsee method table (the `AgentRpcServer` implementation
//! below, thin calls into the agents service, the session manager, the MCP manager and the
//! provider registry); [`dispatch`] decodes frames
//! into calls on it, with batches, notifications and a tower stack for overload and
//! timeouts; [`error`] is the single mapping from errors to wire codes; [`route`] says
//! which daemon answers a request about an agent when several share one database.

pub mod dispatch;
pub mod error;
mod params;
pub mod route;
#[cfg(test)]
mod schema_tests;

use std::sync::{Arc, OnceLock};

use agent_proto::rpc::AgentRpcServer;
use agent_proto::{
    Agent, AgentList, AgentMode, CancelLoopResult, Capabilities, DeleteAgentResult, ErrorKind,
    InitializeResult, ListOrder, MAX_FRAME_BYTES, MAX_USER_TEXT_CHARS, MessageContent, MessageList,
    MessageSearch, ModelList, PROTOCOL_VERSION, ProfileList, ProviderList, SendMessageResult,
    SessionInfo, UsageReport,
};
use agent_proto::{
    AnswerQuestionResult, ContinueLoopResult, ExportFormat, ExportResult, McpServerInfo,
    McpServerList, McpServerSpec, PermissionLevel, PermissionResponseResult, Plan, QuestionAnswer,
    RegenerateResult, Remember, RemovedResult, RequestPreview, SessionStatusResult,
    TestProviderResult, ToolList,
};
use agent_proto::{CancelQueuedResult, CompactContextResult, WhenBusy};
use jsonrpsee::core::{RpcResult, SubscriptionResult, async_trait};
use jsonrpsee::{Methods, PendingSubscriptionSink};
use serde_json::Value;

use crate::agents::{AgentService, AgentSpec, AgentUpdate};
use crate::provider::ProviderRegistry;
use crate::session::SessionManager;
use crate::store::AgentFilter;
use crate::tools::mcp::McpManager;
use error::rpc_error;

/// Page size when `limit` is absent, and the largest accepted.
const DEFAULT_PAGE: u32 = 50;
const MAX_PAGE: u32 = 500;

/// The services the methods call into.
#[derive(Debug, Clone)]
pub struct Services {
    pub agents: Arc<AgentService>,
    pub sessions: Arc<SessionManager>,
    pub mcp: Arc<McpManager>,
    pub providers: Arc<ProviderRegistry>,
}

/// The method table served on every connection.
pub fn methods(services: Services, replay_window: usize) -> Methods {
    let method_names = Arc::new(OnceLock::new());
    let Services {
        agents,
        sessions,
        mcp,
        providers,
    } = services;
    let handler = RpcHandler {
        agents,
        sessions,
        mcp,
        providers,
        replay_window,
        method_names: method_names.clone(),
    };
    let methods: Methods = handler.into_rpc().into();
    let mut names: Vec<String> = methods.method_names().map(str::to_owned).collect();
    names.sort();
    // Set once, right here, before any call can read it.
    let _ = method_names.set(names);
    methods
}

struct RpcHandler {
    agents: Arc<AgentService>,
    sessions: Arc<SessionManager>,
    mcp: Arc<McpManager>,
    providers: Arc<ProviderRegistry>,
    replay_window: usize,
    /// The table's own method names, for `initialize`.
    method_names: Arc<OnceLock<Vec<String>>>,
}

fn page_limit(limit: Option<u32>) -> RpcResult<u32> {
    match limit {
        None => Ok(DEFAULT_PAGE),
        Some(0) => Err(rpc_error(
            ErrorKind::InvalidParams,
            "limit must be at least 1",
        )),
        Some(n) => Ok(n.min(MAX_PAGE)),
    }
}

/// The position a `listMessages` cursor names. A cursor says the order it was given out
/// for (`asc:12`): used with the other order it would name another page (or none), so it
/// is refused.
fn message_cursor(cursor: &str, order: ListOrder) -> RpcResult<i64> {
    let parsed = cursor
        .split_once(':')
        .and_then(|(given, n)| Some((given, n.parse::<i64>().ok()?)));
    match parsed {
        Some((given, n)) if given == order.as_str() => Ok(n),
        Some((given @ ("asc" | "desc"), _)) => Err(rpc_error(
            ErrorKind::InvalidParams,
            format!(
                "cursor {cursor:?} is for order {given:?}, not {:?}: page with the order it came with, or start again without a cursor",
                order.as_str()
            ),
        )),
        _ => Err(rpc_error(
            ErrorKind::InvalidParams,
            format!("cursor {cursor:?} is not one this daemon gave out"),
        )),
    }
}

#[async_trait]
impl AgentRpcServer for RpcHandler {
    async fn initialize(
        &self,
        client_name: Option<String>,
        client_version: Option<String>,
        protocol_version: Option<u32>,
    ) -> RpcResult<InitializeResult> {
        tracing::info!(
            ?client_name,
            ?client_version,
            ?protocol_version,
            "client initialized"
        );
        if let Some(v) = protocol_version
            && v > PROTOCOL_VERSION
        {
            return Err(rpc_error(
                ErrorKind::NotSupported,
                format!(
                    "protocol version {v} is newer than this daemon's ({PROTOCOL_VERSION}); upgrade agentd"
                ),
            ));
        }
        let methods = self.method_names.get().cloned().unwrap_or_default();
        Ok(InitializeResult {
            server_version: env!("CARGO_PKG_VERSION").to_owned(),
            protocol_version: PROTOCOL_VERSION,
            capabilities: Capabilities {
                methods,
                events: agent_proto::EVENT_TYPES
                    .iter()
                    .map(|s| (*s).to_owned())
                    .collect(),
                modes: vec![AgentMode::Chat, AgentMode::Agent, AgentMode::Acp],
                max_frame_bytes: MAX_FRAME_BYTES,
                max_user_text_chars: MAX_USER_TEXT_CHARS,
                replay_window: self.replay_window,
                sandbox: self.sessions.tools().sandbox_info(),
            },
        })
    }

    async fn create_agent(
        &self,
        title: Option<String>,
        mode: Option<AgentMode>,
        provider: Option<String>,
        model: Option<String>,
        system_prompt: Option<String>,
        workspace: Option<String>,
        profile: Option<String>,
        settings: Option<Value>,
        acp: Option<agent_proto::AcpBackend>,
    ) -> RpcResult<Agent> {
        let spec = AgentSpec {
            title,
            acp,
            mode,
            provider,
            model,
            system_prompt,
            workspace,
            profile,
            settings,
        };
        Ok(self.agents.create_agent(spec).await?)
    }

    async fn get_agent(&self, agent_id: String) -> RpcResult<Agent> {
        Ok(self.agents.get_agent(&agent_id).await?)
    }

    async fn list_agents(
        &self,
        cursor: Option<String>,
        limit: Option<u32>,
        search: Option<String>,
        pinned: Option<bool>,
        archived: Option<bool>,
    ) -> RpcResult<AgentList> {
        let filter = AgentFilter {
            cursor,
            limit: page_limit(limit)?,
            search: search.filter(|s| !s.is_empty()),
            pinned,
            archived: archived.unwrap_or(false),
        };
        let (agents, next_cursor) = self.agents.list_agents(&filter).await?;
        Ok(AgentList {
            agents,
            next_cursor,
        })
    }

    async fn update_agent(
        &self,
        agent_id: String,
        title: Option<String>,
        pinned: Option<bool>,
        archived: Option<bool>,
        provider: Option<String>,
        model: Option<String>,
        system_prompt: Option<String>,
        settings: Option<Value>,
        profile: Option<String>,
    ) -> RpcResult<Agent> {
        let update = AgentUpdate {
            title,
            pinned,
            archived,
            provider,
            model,
            system_prompt,
            profile,
            settings,
        };
        Ok(self.agents.update_agent(&agent_id, update).await?)
    }

    async fn set_agent_mode(&self, agent_id: String, mode: AgentMode) -> RpcResult<Agent> {
        Ok(self.agents.set_mode(&agent_id, mode).await?)
    }

    async fn delete_agent(&self, agent_id: String) -> RpcResult<DeleteAgentResult> {
        self.agents.delete_agent(&agent_id).await?;
        Ok(DeleteAgentResult {})
    }

    async fn fork_agent(&self, agent_id: String, message_id: Option<String>) -> RpcResult<Agent> {
        Ok(self
            .agents
            .fork_agent(&agent_id, message_id.as_deref())
            .await?)
    }

    async fn export_agent(
        &self,
        agent_id: String,
        format: ExportFormat,
    ) -> RpcResult<ExportResult> {
        Ok(self.agents.export_agent(&agent_id, format).await?)
    }

    async fn import_agent(
        &self,
        data: Value,
        workspace: Option<String>,
        keep_workspace: Option<bool>,
    ) -> RpcResult<Agent> {
        Ok(self
            .agents
            .import_agent(data, workspace, keep_workspace.unwrap_or(false))
            .await?)
    }

    async fn list_messages(
        &self,
        agent_id: String,
        cursor: Option<String>,
        limit: Option<u32>,
        order: Option<ListOrder>,
    ) -> RpcResult<MessageList> {
        let limit = page_limit(limit)?;
        let order = order.unwrap_or_default();
        let cursor = cursor.map(|c| message_cursor(&c, order)).transpose()?;
        let page = self
            .agents
            .list_messages(&agent_id, cursor, limit, order)
            .await?;
        Ok(MessageList {
            messages: page.messages,
            next_cursor: page.next_cursor.map(|n| format!("{}:{n}", order.as_str())),
        })
    }

    async fn get_usage(&self, agent_id: Option<String>) -> RpcResult<UsageReport> {
        Ok(self.agents.usage(agent_id.as_deref()).await?)
    }

    async fn search_messages(
        &self,
        query: String,
        agent_id: Option<String>,
        limit: Option<u32>,
    ) -> RpcResult<MessageSearch> {
        let limit = page_limit(limit)?;
        if query.trim().is_empty() {
            return Err(rpc_error(
                ErrorKind::InvalidParams,
                "query must have a character that is not whitespace",
            ));
        }
        let hits = self
            .agents
            .search_messages(&query, agent_id.as_deref(), limit as usize)
            .await?;
        Ok(MessageSearch { hits })
    }

    async fn send_message(
        &self,
        agent_id: String,
        content: MessageContent,
        client_request_id: Option<String>,
        when_busy: Option<WhenBusy>,
        provider: Option<String>,
        model: Option<String>,
        reasoning_effort: Option<agent_proto::ReasoningEffort>,
        output_schema: Option<serde_json::Value>,
    ) -> RpcResult<SendMessageResult> {
        let turn = agent_proto::TurnOptions {
            provider,
            model,
            reasoning_effort,
            output_schema,
        };
        Ok(self
            .sessions
            .send_message_with(
                &agent_id,
                content,
                client_request_id,
                when_busy.unwrap_or_default(),
                turn,
            )
            .await?)
    }

    async fn cancel_queued_message(
        &self,
        agent_id: String,
        user_message_id: Option<String>,
    ) -> RpcResult<CancelQueuedResult> {
        let cancelled = self
            .sessions
            .cancel_queued(&agent_id, user_message_id.as_deref())
            .await?;
        Ok(CancelQueuedResult { cancelled })
    }

    async fn compact_context(
        &self,
        agent_id: String,
        keep_rounds: Option<u32>,
    ) -> RpcResult<CompactContextResult> {
        Ok(self.sessions.compact(&agent_id, keep_rounds).await?)
    }

    async fn cancel_loop(&self, agent_id: String) -> RpcResult<CancelLoopResult> {
        let cancelled = self.sessions.cancel(&agent_id).await?;
        Ok(CancelLoopResult { cancelled })
    }

    async fn continue_loop(&self, agent_id: String) -> RpcResult<ContinueLoopResult> {
        let assistant_message_id = self.sessions.continue_loop(&agent_id).await?;
        Ok(ContinueLoopResult {
            assistant_message_id,
        })
    }

    async fn handle_permission_response(
        &self,
        message_id: String,
        tool_call_id: String,
        granted: bool,
        permission_type: Option<PermissionLevel>,
        remember: Option<Remember>,
    ) -> RpcResult<PermissionResponseResult> {
        self.sessions
            .answer_permission(
                &message_id,
                &tool_call_id,
                granted,
                permission_type,
                remember.unwrap_or_default(),
            )
            .await?;
        Ok(PermissionResponseResult {})
    }

    async fn answer_question(
        &self,
        message_id: String,
        tool_call_id: String,
        answers: Option<Vec<QuestionAnswer>>,
        declined: Option<bool>,
    ) -> RpcResult<AnswerQuestionResult> {
        self.sessions
            .answer_question(
                &message_id,
                &tool_call_id,
                answers.unwrap_or_default(),
                declined.unwrap_or(false),
            )
            .await?;
        Ok(AnswerQuestionResult {})
    }

    async fn get_plan(&self, agent_id: String) -> RpcResult<Plan> {
        Ok(self.agents.plan(&agent_id).await?)
    }

    async fn pause_session(&self, agent_id: String) -> RpcResult<SessionStatusResult> {
        let status = self.sessions.pause(&agent_id).await?;
        Ok(SessionStatusResult { status })
    }

    async fn resume_session(&self, agent_id: String) -> RpcResult<SessionStatusResult> {
        let status = self.sessions.resume(&agent_id).await?;
        Ok(SessionStatusResult { status })
    }

    async fn list_tools(&self, agent_id: Option<String>) -> RpcResult<ToolList> {
        let tools = self.agents.list_tools(agent_id.as_deref()).await?;
        Ok(ToolList { tools })
    }

    async fn get_message_request_preview(
        &self,
        agent_id: String,
        message_id: Option<String>,
    ) -> RpcResult<RequestPreview> {
        Ok(self
            .sessions
            .request_preview(&agent_id, message_id.as_deref())
            .await?)
    }

    async fn set_context_edge(
        &self,
        agent_id: String,
        message_id: Option<String>,
    ) -> RpcResult<Agent> {
        Ok(self
            .sessions
            .set_context_edge(&agent_id, message_id.as_deref())
            .await?)
    }

    async fn regenerate(
        &self,
        agent_id: String,
        message_id: String,
    ) -> RpcResult<RegenerateResult> {
        Ok(self.sessions.regenerate(&agent_id, &message_id).await?)
    }

    async fn get_turn_diff(
        &self,
        agent_id: String,
        message_id: String,
    ) -> RpcResult<agent_proto::TurnDiff> {
        Ok(self.sessions.turn_diff(&agent_id, &message_id).await?)
    }

    async fn revert_to(
        &self,
        agent_id: String,
        message_id: String,
        files: Option<bool>,
        conversation: Option<bool>,
    ) -> RpcResult<agent_proto::RevertResult> {
        Ok(self
            .sessions
            .revert_to(
                &agent_id,
                &message_id,
                files.unwrap_or(true),
                conversation.unwrap_or(true),
            )
            .await?)
    }

    async fn list_mcp_servers(&self) -> RpcResult<McpServerList> {
        Ok(McpServerList {
            servers: self.mcp.list(),
        })
    }

    async fn add_mcp_server(&self, spec: McpServerSpec) -> RpcResult<McpServerInfo> {
        Ok(self.mcp.add(spec).await?)
    }

    async fn update_mcp_server(&self, name: String, changes: Value) -> RpcResult<McpServerInfo> {
        Ok(self.mcp.update(&name, changes).await?)
    }

    async fn remove_mcp_server(&self, name: String) -> RpcResult<RemovedResult> {
        self.mcp.remove(&name).await?;
        Ok(RemovedResult {})
    }

    async fn restart_mcp_server(&self, name: String) -> RpcResult<McpServerInfo> {
        Ok(self.mcp.restart(&name)?)
    }

    async fn get_session(&self, agent_id: String) -> RpcResult<SessionInfo> {
        Ok(self.sessions.session_info(&agent_id).await?)
    }

    async fn list_profiles(&self) -> RpcResult<ProfileList> {
        Ok(ProfileList {
            profiles: self.agents.list_profiles(),
        })
    }

    async fn list_skills(&self, agent_id: String) -> RpcResult<agent_proto::SkillList> {
        Ok(self.agents.list_skills(&agent_id).await?)
    }

    async fn list_providers(&self) -> RpcResult<ProviderList> {
        Ok(ProviderList {
            providers: self.providers.list_providers(),
        })
    }

    async fn list_models(
        &self,
        provider: Option<String>,
        served: Option<bool>,
    ) -> RpcResult<ModelList> {
        let unknown = || {
            rpc_error(
                ErrorKind::ProviderNotConfigured,
                format!(
                    "provider {:?} is not configured; see listProviders",
                    provider.clone().unwrap_or_default()
                ),
            )
        };
        if served == Some(true) {
            let (models, errors) = self
                .providers
                .served_models(provider.as_deref())
                .await
                .ok_or_else(unknown)?;
            return Ok(ModelList { models, errors });
        }
        let models = self
            .providers
            .list_models(provider.as_deref())
            .ok_or_else(unknown)?;
        Ok(ModelList {
            models,
            errors: Vec::new(),
        })
    }

    async fn test_provider(
        &self,
        provider: Option<String>,
        model: Option<String>,
    ) -> RpcResult<TestProviderResult> {
        let providers = &self.providers;
        let provider = provider.unwrap_or_else(|| providers.default_provider());
        let model = match model {
            Some(m) => m,
            None => providers.default_model_for(&provider).unwrap_or_default(),
        };
        providers.test(&provider, &model).await.ok_or_else(|| {
            rpc_error(
                ErrorKind::ProviderNotConfigured,
                format!("provider {provider:?} is not configured; see listProviders"),
            )
        })
    }

    async fn complete(
        &self,
        provider: Option<String>,
        model: Option<String>,
        messages: Option<Vec<agent_proto::CompleteMessage>>,
        prompt: Option<String>,
        system: Option<String>,
        max_tokens: Option<u32>,
        temperature: Option<f64>,
        stream: Option<bool>,
    ) -> RpcResult<agent_proto::CompleteResult> {
        use crate::provider::oneshot::{self, OneShot, OneShotError};
        // Streamed pieces go to the calling connection only, as `completionDelta`
        // notifications before the response.
        let caller = match stream {
            Some(true) => Some(dispatch::CALLER.try_with(Clone::clone).map_err(|_| {
                rpc_error(
                    ErrorKind::NotSupported,
                    "streaming needs a connection of this daemon's socket",
                )
            })?),
            _ => None,
        };
        let call = OneShot {
            provider,
            model,
            messages,
            prompt,
            system,
            max_tokens,
            temperature,
        };
        let on_delta = |delta: &str| {
            if let Some(caller) = &caller {
                caller.notify(
                    "completionDelta",
                    serde_json::json!({"requestId": caller.id(), "delta": delta}),
                );
            }
        };
        oneshot::complete(&self.providers, call, on_delta)
            .await
            .map_err(|e| match e {
                OneShotError::Invalid(m) => rpc_error(ErrorKind::InvalidParams, m),
                OneShotError::NotConfigured(m) => rpc_error(ErrorKind::ProviderNotConfigured, m),
                OneShotError::Failed(m) => rpc_error(ErrorKind::ProviderFailed, m),
            })
    }

    /// Never reached: `dispatch` serves `subscribe` and `unsubscribe` itself (one
    /// serialization of each event for all subscribers, no task between the event log
    /// and the connection's writer). The method stays in the table, so `initialize`
    /// lists it.
    async fn subscribe_events(
        &self,
        pending: PendingSubscriptionSink,
        _agent_id: Option<String>,
        _since_seq: Option<u64>,
        _snapshot: Option<bool>,
    ) -> SubscriptionResult {
        pending
            .reject(rpc_error(
                ErrorKind::Internal,
                "subscribe is served by the connection, not the method table",
            ))
            .await;
        Ok(())
    }
}

/// Subscriptions come from the session layer.
impl dispatch::EventSource for SessionManager {
    fn subscribe(
        &self,
        agent_id: Option<String>,
        since: Option<u64>,
        snapshot: bool,
    ) -> futures::future::BoxFuture<
        '_,
        Result<crate::session::events::PendingSubscription, jsonrpsee::types::ErrorObjectOwned>,
    > {
        Box::pin(async move {
            SessionManager::subscribe(self, agent_id.as_deref(), since, snapshot)
                .await
                .map_err(Into::into)
        })
    }
}
