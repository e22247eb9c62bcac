//! The ACP agent side: `initialize`, `session/new`, `session/load`, `session/prompt`,
//! `session/cancel`, `session/set_mode` and `session/set_config_option`, each answered
//! with calls to the daemon. A session is an agentd agent (its id is the session id).
//!
//! Handlers hold the connection's dispatch loop while they run, so anything that waits
//! for more than a daemon call (a prompt turn, a permission question) runs in a task of
//! the connection (`ConnectionTo::spawn`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    AgentCapabilities, CancelNotification, Implementation, InitializeRequest, InitializeResponse,
    LoadSessionRequest, LoadSessionResponse, McpCapabilities, McpServer, NewSessionRequest,
    NewSessionResponse, PromptCapabilities, SessionConfigOption, SessionConfigOptionCategory,
    SessionConfigSelectOption, SessionMode, SessionModeState, SessionUpdate,
    SetSessionConfigOptionRequest, SetSessionConfigOptionResponse, SetSessionModeRequest,
    SetSessionModeResponse,
};
use agent_client_protocol::{Client, ConnectTo, Error};
use agent_proto::client::Client as DaemonClient;
use agent_proto::rpc::AgentRpcClient;
use agent_proto::{Agent, AgentMode, McpServerSpec, McpTransport, Message, ProfileInfo};

use crate::convert;
use crate::session::Session;

/// The editor's connection: the daemon client and the sessions opened on it.
pub(crate) struct Bridge {
    daemon: Arc<DaemonClient>,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    /// MCP servers this connection added for its sessions: removed when it ends.
    mcp_servers: Mutex<Vec<String>>,
}

/// Serves ACP on `transport` until the editor closes it or `shutdown` resolves (a
/// signal); either way the MCP servers added for this connection are removed.
pub(crate) async fn serve(
    daemon: DaemonClient,
    transport: impl ConnectTo<agent_client_protocol::Agent> + 'static,
    shutdown: impl std::future::Future<Output = ()>,
) -> Result<(), Error> {
    let bridge = Arc::new(Bridge {
        daemon: Arc::new(daemon),
        sessions: Mutex::new(HashMap::new()),
        mcp_servers: Mutex::new(Vec::new()),
    });
    let (b1, b2, b3, b4, b5, b6, b7) = (
        bridge.clone(),
        bridge.clone(),
        bridge.clone(),
        bridge.clone(),
        bridge.clone(),
        bridge.clone(),
        bridge.clone(),
    );
    let connection = agent_client_protocol::Agent
        .v1()
        .name("agentd")
        .on_receive_request(
            async move |request: InitializeRequest, responder, _cx| {
                responder.respond(b1.initialize(request))
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: NewSessionRequest, responder, cx| {
                responder.respond_with_result(b2.new_session(request, cx).await)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: LoadSessionRequest, responder, cx| {
                responder.respond_with_result(b3.load_session(request, cx).await)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: agent_client_protocol::v1::schema::PromptRequest,
                        responder,
                        cx: ConnectionTo<Client>| {
                let session = b4.session(&request.session_id.to_string());
                let daemon = b4.daemon.clone();
                cx.spawn(async move {
                    let answer = match session {
                        Ok(session) => session.prompt(request, &daemon).await,
                        Err(e) => Err(e),
                    };
                    responder.respond_with_result(answer)
                })
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_notification(
            async move |cancel: CancelNotification, cx: ConnectionTo<Client>| {
                if let Ok(session) = b5.session(&cancel.session_id.to_string()) {
                    let daemon = b5.daemon.clone();
                    cx.spawn(async move {
                        session.cancel(&daemon).await;
                        Ok(())
                    })?;
                }
                Ok(())
            },
            agent_client_protocol::on_receive_notification!(),
        )
        .on_receive_request(
            async move |request: SetSessionModeRequest, responder, _cx| {
                responder.respond_with_result(b6.set_mode(request).await)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionConfigOptionRequest, responder, _cx| {
                responder.respond_with_result(b7.set_config_option(request).await)
            },
            agent_client_protocol::on_receive_request!(),
        )
        .connect_to(transport);
    let served = tokio::select! {
        served = connection => served,
        () = shutdown => Ok(()),
    };
    bridge.close().await;
    served
}

/// The modes an agentd agent can switch between: chat, agent, and agent with each profile
/// (`profile:<name>`).
fn modes(agent: &Agent, profiles: &[ProfileInfo]) -> SessionModeState {
    let mut available = vec![
        SessionMode::new("chat", "Chat").description("Answers only: no tools".to_owned()),
        SessionMode::new("agent", "Agent").description(
            "Works in the workspace with tools, asking before it writes or runs commands"
                .to_owned(),
        ),
    ];
    available.extend(profiles.iter().map(|p| {
        SessionMode::new(
            convert::mode_id(AgentMode::Agent, Some(&p.name)),
            format!("Agent: {}", p.name),
        )
        .description(p.description.clone())
    }));
    SessionModeState::new(
        convert::mode_id(agent.mode, agent.profile.as_deref()),
        available,
    )
}

impl Bridge {
    fn initialize(&self, request: InitializeRequest) -> InitializeResponse {
        let _ = request;
        InitializeResponse::new(agent_client_protocol::schema::ProtocolVersion::V1)
            .agent_capabilities(
                AgentCapabilities::new()
                    .load_session(true)
                    .prompt_capabilities(
                        PromptCapabilities::new().image(true).embedded_context(true),
                    )
                    .mcp_capabilities(McpCapabilities::new().http(true)),
            )
            .agent_info(
                Implementation::new("agentd", env!("CARGO_PKG_VERSION")).title("agentd".to_owned()),
            )
    }

    fn session(&self, id: &str) -> Result<Arc<Session>, Error> {
        self.sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(id)
            .cloned()
            .ok_or_else(|| {
                agent_client_protocol::v1::schema::Error::session_not_found(id.to_owned()).into()
            })
    }

    fn rpc(&self, id: Option<&str>) -> impl Fn(agent_proto::client::Error) -> Error + '_ {
        let id = id.map(str::to_owned);
        move |e| convert::rpc_error(&e, id.as_deref())
    }

    /// `session/new`: an agent in agent mode working in `cwd`, with the editor's MCP
    /// servers added for it alone.
    async fn new_session(
        &self,
        request: NewSessionRequest,
        cx: ConnectionTo<Client>,
    ) -> Result<NewSessionResponse, Error> {
        let cwd = workspace_of(&request.cwd)?;
        let agent = self
            .daemon
            .create_agent(
                None,
                Some(AgentMode::Agent),
                None,
                None,
                None,
                Some(cwd.display().to_string()),
                None,
                None,
                None,
            )
            .await
            .map_err(self.rpc(None))?;
        if let Err(e) = self.add_mcp_servers(&agent, &request.mcp_servers).await {
            let _ = self.daemon.delete_agent(agent.id.clone()).await;
            return Err(e);
        }
        let events = self
            .daemon
            .subscribe_events(Some(agent.id.clone()), None, None)
            .await
            .map_err(self.rpc(Some(&agent.id)))?;
        self.open(
            &agent,
            events,
            convert::ToolCalls::default(),
            Vec::new(),
            &cx,
        )?;
        let config = self.config_options(&agent).await?;
        Ok(NewSessionResponse::new(agent.id.clone())
            .modes(modes(&agent, &self.profiles().await?))
            .config_options(config))
    }

    /// `session/load`: attaches to an existing agent and replays its history.
    async fn load_session(
        &self,
        request: LoadSessionRequest,
        cx: ConnectionTo<Client>,
    ) -> Result<LoadSessionResponse, Error> {
        let id = request.session_id.to_string();
        let agent = self
            .daemon
            .get_agent(id.clone())
            .await
            .map_err(self.rpc(Some(&id)))?;
        let info = self
            .daemon
            .get_session(id.clone())
            .await
            .map_err(self.rpc(Some(&id)))?;
        // Subscribed first: what happens while the history is read is replayed after it.
        let events = self
            .daemon
            .subscribe_events(Some(id.clone()), Some(info.last_seq), None)
            .await
            .map_err(self.rpc(Some(&id)))?;
        let history = self.history(&id).await?;
        let plan = self
            .daemon
            .get_plan(id.clone())
            .await
            .map_err(self.rpc(Some(&id)))?;
        self.add_mcp_servers(&agent, &request.mcp_servers).await?;
        let workspace = agent.workspace.as_deref().map(Path::new);
        let mut replay = convert::history_updates(&history, workspace);
        if !plan.items.is_empty() {
            replay.push(SessionUpdate::Plan(convert::plan(&plan.items)));
        }
        let calls = convert::ToolCalls::announced(convert::history_call_ids(&history));
        let session = self.open(&agent, events, calls, replay, &cx)?;
        // Prompts waiting in the daemon are put to this editor too (their events were
        // before the subscription's start, so they come only this way).
        session.ask_pending(
            info.pending_permissions,
            info.pending_questions,
            &cx,
            &self.daemon,
        )?;
        let config = self.config_options(&agent).await?;
        Ok(LoadSessionResponse::new()
            .modes(modes(&agent, &self.profiles().await?))
            .config_options(config))
    }

    /// Registers a session for `agent`, sends `replay` (its history), then starts its pump
    /// (replacing one of the same agent opened before on this connection).
    fn open(
        &self,
        agent: &Agent,
        events: agent_proto::client::Subscription<agent_proto::Event>,
        calls: convert::ToolCalls,
        replay: Vec<SessionUpdate>,
        cx: &ConnectionTo<Client>,
    ) -> Result<Arc<Session>, Error> {
        let session = Arc::new(Session::new(
            agent.id.clone(),
            agent.workspace.as_ref().map(PathBuf::from),
            convert::mode_id(agent.mode, agent.profile.as_deref()),
        ));
        let old = self
            .sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(agent.id.clone(), session.clone());
        if let Some(old) = old {
            old.stop.cancel();
        }
        session.replay(cx, replay)?;
        cx.spawn(
            session
                .clone()
                .pump(events, calls, cx.clone(), self.daemon.clone()),
        )?;
        Ok(session)
    }

    /// Every message of an agent, oldest first.
    async fn history(&self, id: &str) -> Result<Vec<Message>, Error> {
        let mut messages = Vec::new();
        let mut cursor = None;
        loop {
            let page = self
                .daemon
                .list_messages(id.to_owned(), cursor, Some(500), None)
                .await
                .map_err(self.rpc(Some(id)))?;
            messages.extend(page.messages);
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => return Ok(messages),
            }
        }
    }

    /// The selectors an editor shows: the mode and the model (every model `listModels`
    /// knows, as `provider/model`).
    async fn config_options(&self, agent: &Agent) -> Result<Vec<SessionConfigOption>, Error> {
        let models = self
            .daemon
            .list_models(None, None)
            .await
            .map_err(self.rpc(None))?
            .models;
        let current = convert::model_value(&agent.provider, &agent.model);
        let mut choices: Vec<SessionConfigSelectOption> = models
            .iter()
            .map(|m| {
                let value = convert::model_value(&m.provider, &m.id);
                SessionConfigSelectOption::new(value.clone(), value)
            })
            .collect();
        if !models
            .iter()
            .any(|m| convert::model_value(&m.provider, &m.id) == current)
        {
            choices.insert(
                0,
                SessionConfigSelectOption::new(current.clone(), current.clone()),
            );
        }
        let modes = modes(agent, &self.profiles().await?);
        let mode = SessionConfigOption::select(
            "mode",
            "Mode",
            modes.current_mode_id.to_string(),
            modes
                .available_modes
                .iter()
                .map(|m| SessionConfigSelectOption::new(m.id.to_string(), m.name.clone()))
                .collect::<Vec<_>>(),
        )
        .category(SessionConfigOptionCategory::Mode);
        let model = SessionConfigOption::select("model", "Model", current, choices)
            .category(SessionConfigOptionCategory::Model);
        Ok(vec![mode, model])
    }

    async fn set_mode(
        &self,
        request: SetSessionModeRequest,
    ) -> Result<SetSessionModeResponse, Error> {
        let id = request.session_id.to_string();
        self.session(&id)?;
        self.switch_mode(&id, &request.mode_id.to_string()).await?;
        Ok(SetSessionModeResponse::new())
    }

    /// Puts the agent in the mode a mode id names: `chat`; `agent` (without a profile);
    /// `profile:<name>` (agent mode with that profile).
    async fn switch_mode(&self, id: &str, mode: &str) -> Result<Agent, Error> {
        let Some(choice) = convert::parse_mode_id(mode) else {
            return Err(Error::invalid_params().data(format!(
                "unknown mode {mode:?}: chat, agent or profile:<name>"
            )));
        };
        let (mode, profile) = match choice {
            convert::ModeChoice::Chat => (AgentMode::Chat, None),
            // "" removes the profile (updateAgent).
            convert::ModeChoice::Agent => (AgentMode::Agent, Some(String::new())),
            convert::ModeChoice::Profile(p) => (AgentMode::Agent, Some(p)),
        };
        let agent = self
            .daemon
            .get_agent(id.to_owned())
            .await
            .map_err(self.rpc(Some(id)))?;
        // The profile first: an unknown one is refused before the mode changes.
        let agent = match profile {
            Some(p) if agent.profile.clone().unwrap_or_default() != p => self
                .daemon
                .update_agent(
                    id.to_owned(),
                    None,
                    None,
                    None,
                    None,
                    None,
                    None,
                    None,
                    Some(p),
                )
                .await
                .map_err(self.rpc(Some(id)))?,
            _ => agent,
        };
        if agent.mode == mode {
            return Ok(agent);
        }
        self.daemon
            .set_agent_mode(id.to_owned(), mode)
            .await
            .map_err(self.rpc(Some(id)))
    }

    /// The profiles agents can have (`listProfiles`).
    async fn profiles(&self) -> Result<Vec<ProfileInfo>, Error> {
        Ok(self
            .daemon
            .list_profiles()
            .await
            .map_err(self.rpc(None))?
            .profiles)
    }

    async fn set_config_option(
        &self,
        request: SetSessionConfigOptionRequest,
    ) -> Result<SetSessionConfigOptionResponse, Error> {
        let id = request.session_id.to_string();
        self.session(&id)?;
        let Some(value) = request.value.as_value_id().map(ToString::to_string) else {
            return Err(Error::invalid_params().data("expected a value id"));
        };
        let agent = match request.config_id.to_string().as_str() {
            "mode" => self.switch_mode(&id, &value).await?,
            "model" => {
                let Some((provider, model)) = convert::parse_model_value(&value) else {
                    return Err(Error::invalid_params()
                        .data(format!("unknown model {value:?}: expected provider/model")));
                };
                self.daemon
                    .update_agent(
                        id.clone(),
                        None,
                        None,
                        None,
                        Some(provider.to_owned()),
                        Some(model.to_owned()),
                        None,
                        None,
                        None,
                    )
                    .await
                    .map_err(self.rpc(Some(&id)))?
            }
            other => {
                return Err(Error::invalid_params().data(format!("unknown option {other:?}")));
            }
        };
        Ok(SetSessionConfigOptionResponse::new(
            self.config_options(&agent).await?,
        ))
    }

    /// Adds the editor's MCP servers for `agent` alone (a server's `agents` scope), under
    /// names made unique per agent. Servers left from an earlier connection of the same
    /// agent are replaced.
    async fn add_mcp_servers(&self, agent: &Agent, servers: &[McpServer]) -> Result<(), Error> {
        if servers.is_empty() {
            return Ok(());
        }
        let specs = servers
            .iter()
            .map(|s| mcp_spec(&agent.id, s))
            .collect::<Result<Vec<_>, _>>()?;
        for spec in specs {
            let name = spec.name.clone();
            let _ = self.daemon.remove_mcp_server(name.clone()).await;
            self.daemon
                .add_mcp_server(spec)
                .await
                .map_err(self.rpc(Some(&agent.id)))?;
            self.mcp_servers
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(name);
        }
        Ok(())
    }

    /// The connection ended: stop the pumps, remove the MCP servers added for it.
    async fn close(&self) {
        let sessions: Vec<Arc<Session>> = self
            .sessions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain()
            .map(|(_, s)| s)
            .collect();
        for session in sessions {
            session.stop.cancel();
        }
        let servers: Vec<String> =
            std::mem::take(&mut *self.mcp_servers.lock().unwrap_or_else(|p| p.into_inner()));
        for name in servers {
            if let Err(e) = self.daemon.remove_mcp_server(name.clone()).await {
                eprintln!("agentd acp: cannot remove MCP server {name}: {e}");
            }
        }
    }
}

/// The workspace for `cwd`: an existing absolute folder.
fn workspace_of(cwd: &Path) -> Result<PathBuf, Error> {
    if !cwd.is_absolute() {
        return Err(Error::invalid_params().data(format!("cwd {} is not absolute", cwd.display())));
    }
    std::fs::canonicalize(cwd)
        .map_err(|e| Error::invalid_params().data(format!("cwd {}: {e}", cwd.display())))
}

/// The daemon's spec of an editor's MCP server: named `acp-<agent>-<name>` (letters,
/// digits, `-`, `_`; at most 64), usable by that agent only. SSE servers are refused (the
/// agent does not announce them).
pub(crate) fn mcp_spec(agent_id: &str, server: &McpServer) -> Result<McpServerSpec, Error> {
    let short: String = agent_id
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .rev()
        .take(12)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    let name = |n: &str| {
        let clean: String = n
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .take(40)
            .collect();
        format!("acp-{short}-{clean}")
    };
    let base = |n: &str| McpServerSpec {
        name: name(n),
        transport: McpTransport::Stdio,
        command: None,
        args: Vec::new(),
        env: Default::default(),
        cwd: None,
        url: None,
        headers: Default::default(),
        enabled: true,
        auto_start: true,
        auto_approve: Vec::new(),
        startup_timeout_secs: None,
        call_timeout_secs: None,
        agents: vec![agent_id.to_owned()],
    };
    match server {
        McpServer::Stdio(s) => Ok(McpServerSpec {
            command: Some(s.command.display().to_string()),
            args: s.args.clone(),
            env: s
                .env
                .iter()
                .map(|v| (v.name.clone(), v.value.clone()))
                .collect(),
            ..base(&s.name)
        }),
        McpServer::Http(s) => Ok(McpServerSpec {
            transport: McpTransport::Http,
            url: Some(s.url.clone()),
            headers: s
                .headers
                .iter()
                .map(|h| (h.name.clone(), h.value.clone()))
                .collect(),
            ..base(&s.name)
        }),
        McpServer::Sse(s) => Err(Error::invalid_params().data(format!(
            "MCP server {}: SSE is not supported, use streamable HTTP or stdio",
            s.name
        ))),
        _ => Err(Error::invalid_params().data("an MCP server of an unknown kind")),
    }
}
