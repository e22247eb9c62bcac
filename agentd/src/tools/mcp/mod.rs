//! MCP servers: configured in the config file or over RPC, each supervised by a task of
//! its own (start, list tools, watch, restart with backoff 1 s doubling to 60 s), with the
//! tool lists cached in memory and in the store so tools stay listed while a server is
//! down. The tool center routes calls here; this module never decides permissions.
//! Whatever it shows or logs of a server (its spec, errors) has the credentials in URLs
//! masked (`redact.rs`); stdio servers are started by `tools::process` with the
//! environment `tools::env` allows them.

pub mod convert;
pub mod redact;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock, Weak};
use std::time::Duration;

use agent_proto::{
    EventKind, McpServerInfo, McpServerSpec, McpServerStatus, McpSource, McpToolName, McpTransport,
};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotificationParam, ClientCapabilities,
    ClientConfig, ClientRequest, Implementation, ProgressNotificationParam, ProtocolVersion,
    ServerResult,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RunningService};
use rmcp::{ClientHandler, Peer, RoleClient, ServiceExt};
use serde_json::Value;
use tokio::io::AsyncBufReadExt;
use tokio::sync::{Notify, broadcast, mpsc};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::store::{Store, now_ms};
use crate::tools::process::{ProcessGroup, ProcessLauncher};
use convert::ToolDef;

/// Default seconds to start a server and list its tools.
pub const STARTUP_TIMEOUT: Duration = Duration::from_secs(10);
/// Default seconds one call may take.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(120);
const BACKOFF_FIRST: Duration = Duration::from_secs(1);
const BACKOFF_MAX: Duration = Duration::from_secs(60);
/// Lines of a server's stderr kept for `listMcpServers`.
const STDERR_LINES: usize = 20;

/// Why an MCP operation was refused.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    #[error("{0}")]
    Invalid(String),
    #[error("no MCP server named {0:?}")]
    NotFound(String),
    #[error("{0}")]
    ReadOnly(String),
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
}

/// Progress of a call, from the server's notifications.
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    pub progress: f64,
    pub total: Option<f64>,
    pub message: Option<String>,
}

/// One tool of the catalog: what agents can be offered.
#[derive(Debug, Clone)]
pub struct CatalogTool {
    pub server: String,
    pub def: ToolDef,
    /// The name the model sees.
    pub exposed: String,
    pub validator: Option<Arc<jsonschema::Validator>>,
    /// Runs without a prompt (the server's `autoApprove`).
    pub auto_approved: bool,
}

/// Every MCP tool there is, with exposed names worked out across servers.
#[derive(Debug, Default)]
pub struct Catalog {
    pub tools: Vec<CatalogTool>,
}

impl Catalog {
    pub fn get(&self, exposed: &str) -> Option<&CatalogTool> {
        self.tools.iter().find(|t| t.exposed == exposed)
    }
}

#[derive(Debug, Default)]
struct ServerState {
    status: Option<McpServerStatus>,
    last_error: Option<String>,
    stderr: VecDeque<String>,
    tools: Vec<ToolDef>,
    peer: Option<Peer<RoleClient>>,
    /// The process group of a running stdio server.
    pgid: Option<i32>,
    /// Starts after the first.
    restarts: u32,
    /// The supervisor task runs.
    supervised: bool,
}

#[derive(Debug)]
struct Server {
    spec: McpServerSpec,
    source: McpSource,
    state: Mutex<ServerState>,
    /// Stops the supervisor for good (removed, disabled, shutdown).
    stop: CancellationToken,
    /// Restart now (skipping a backoff).
    restart: Notify,
    /// The server said its tool list changed.
    refresh: Notify,
    /// Calls waiting for progress, by progress token.
    progress: Mutex<HashMap<String, mpsc::Sender<Progress>>>,
}

impl Server {
    fn lock(&self) -> MutexGuard<'_, ServerState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The MCP client side of the daemon.
#[derive(Debug)]
pub struct McpManager {
    servers: Mutex<BTreeMap<String, Arc<Server>>>,
    catalog: RwLock<Arc<Catalog>>,
    store: Store,
    http: reqwest::Client,
    events: broadcast::Sender<EventKind>,
    tasks: TaskTracker,
    /// Starts stdio servers (environment, process group, the guard).
    processes: Arc<ProcessLauncher>,
    /// A weak handle to itself, for the supervisors.
    me: Weak<McpManager>,
}

fn check_spec(spec: &McpServerSpec) -> Result<(), McpError> {
    let name_ok = !spec.name.is_empty()
        && spec.name.len() <= 64
        && spec
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !name_ok {
        return Err(McpError::Invalid(format!(
            "MCP server name {:?}: use 1 to 64 letters, digits, '-' or '_'",
            spec.name
        )));
    }
    match spec.transport {
        McpTransport::Stdio if spec.command.as_deref().is_none_or(str::is_empty) => {
            Err(McpError::Invalid(format!(
                "MCP server {:?}: a stdio server needs a command",
                spec.name
            )))
        }
        McpTransport::Http => {
            let url = spec.url.as_deref().unwrap_or_default();
            if url.starts_with("http://") || url.starts_with("https://") {
                Ok(())
            } else {
                Err(McpError::Invalid(format!(
                    "MCP server {:?}: an http server needs an http(s) url, got {:?}",
                    spec.name,
                    redact::mask_url(url)
                )))
            }
        }
        McpTransport::Stdio => Ok(()),
    }
}

impl McpManager {
    pub fn new(
        store: Store,
        http: reqwest::Client,
        processes: Arc<ProcessLauncher>,
    ) -> Arc<McpManager> {
        Arc::new_cyclic(|me| McpManager {
            servers: Mutex::default(),
            catalog: RwLock::default(),
            store,
            http,
            events: broadcast::channel(256).0,
            tasks: TaskTracker::new(),
            processes,
            me: me.clone(),
        })
    }

    /// Status changes as `mcpServerStatus` events.
    pub fn events(&self) -> broadcast::Receiver<EventKind> {
        self.events.subscribe()
    }

    fn servers(&self) -> MutexGuard<'_, BTreeMap<String, Arc<Server>>> {
        self.servers.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Loads the config file's servers and the stored ones, with their cached tools, and
    /// starts those that start with the daemon.
    pub async fn load(&self, from_config: &[McpServerSpec]) -> Result<(), McpError> {
        let mut specs: Vec<(McpServerSpec, McpSource)> = Vec::new();
        for spec in from_config {
            check_spec(spec)?;
            if specs.iter().any(|(s, _)| s.name == spec.name) {
                return Err(McpError::Invalid(format!(
                    "two MCP servers named {:?} in the config file",
                    spec.name
                )));
            }
            specs.push((spec.clone(), McpSource::Config));
        }
        for spec in self.store.mcp_servers().await? {
            if specs.iter().any(|(s, _)| s.name == spec.name) {
                tracing::warn!(
                    server = spec.name,
                    "an MCP server added over RPC has the name of one in the config file; the config file's wins"
                );
                continue;
            }
            specs.push((spec, McpSource::Rpc));
        }
        let caches: HashMap<String, String> =
            self.store.mcp_tool_caches().await?.into_iter().collect();
        for (spec, source) in specs {
            let tools = caches
                .get(&spec.name)
                .and_then(|json| serde_json::from_str::<Vec<ToolDef>>(json).ok())
                .unwrap_or_default();
            self.insert(spec, source, tools);
        }
        self.rebuild_catalog();
        let auto: Vec<Arc<Server>> = self
            .servers()
            .values()
            .filter(|s| s.spec.enabled && s.spec.auto_start)
            .cloned()
            .collect();
        for server in auto {
            self.supervise(&server);
        }
        Ok(())
    }

    fn insert(&self, spec: McpServerSpec, source: McpSource, tools: Vec<ToolDef>) -> Arc<Server> {
        let server = Arc::new(Server {
            spec,
            source,
            state: Mutex::new(ServerState {
                tools,
                ..ServerState::default()
            }),
            stop: CancellationToken::new(),
            restart: Notify::new(),
            refresh: Notify::new(),
            progress: Mutex::default(),
        });
        self.servers()
            .insert(server.spec.name.clone(), server.clone());
        server
    }

    /// The current catalog.
    pub fn catalog(&self) -> Arc<Catalog> {
        self.catalog
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn rebuild_catalog(&self) {
        let servers: Vec<Arc<Server>> = self
            .servers()
            .values()
            .filter(|s| s.spec.enabled)
            .cloned()
            .collect();
        let mut entries: Vec<(String, ToolDef, bool)> = Vec::new();
        for server in &servers {
            let approve = &server.spec.auto_approve;
            for def in server.lock().tools.clone() {
                let approved = approve.iter().any(|a| a == "*" || *a == def.name);
                entries.push((server.spec.name.clone(), def, approved));
            }
        }
        let pairs: Vec<(String, String)> = entries
            .iter()
            .map(|(s, d, _)| (s.clone(), d.name.clone()))
            .collect();
        let exposed = convert::exposed_names(&pairs);
        let tools = entries
            .into_iter()
            .zip(exposed)
            .map(|((server, def, auto_approved), exposed)| {
                let validator = jsonschema::validator_for(&def.schema)
                    .map_err(|e| {
                        tracing::warn!(
                            server,
                            tool = def.name,
                            "the tool's input schema is not usable, arguments go unchecked: {e}"
                        );
                    })
                    .ok()
                    .map(Arc::new);
                CatalogTool {
                    server,
                    def,
                    exposed,
                    validator,
                    auto_approved,
                }
            })
            .collect();
        *self.catalog.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(Catalog { tools });
    }

    /// Starts the servers that wait to be needed (no `autoStart`).
    pub fn ensure_started(&self) {
        let lazy: Vec<Arc<Server>> = self
            .servers()
            .values()
            .filter(|s| s.spec.enabled && !s.lock().supervised)
            .cloned()
            .collect();
        for server in lazy {
            self.supervise(&server);
        }
    }

    fn supervise(&self, server: &Arc<Server>) {
        {
            let mut st = server.lock();
            if st.supervised || server.stop.is_cancelled() {
                return;
            }
            st.supervised = true;
        }
        let Some(me) = self.me.upgrade() else {
            return;
        };
        let server = server.clone();
        self.tasks.spawn(async move { me.run_server(server).await });
    }

    fn set_status(&self, server: &Server, status: McpServerStatus, error: Option<String>) {
        // Errors quote URLs (reqwest's do, with the query): never show their credentials.
        let error = error.map(|e| redact::mask_urls_in(&e));
        {
            let mut st = server.lock();
            st.status = Some(status);
            if error.is_some() {
                st.last_error = error.clone();
            }
        }
        tracing::info!(
            server = server.spec.name,
            status = status.as_str(),
            error,
            "MCP server status"
        );
        let _ = self.events.send(EventKind::McpServerStatus {
            server: server.spec.name.clone(),
            status,
            error,
        });
    }

    /// The supervisor of one server: start, serve, and restart with backoff, until stopped.
    async fn run_server(&self, server: Arc<Server>) {
        let mut backoff = BACKOFF_FIRST;
        let mut first = true;
        loop {
            if server.stop.is_cancelled() {
                break;
            }
            if !first {
                server.lock().restarts += 1;
            }
            first = false;
            self.set_status(&server, McpServerStatus::Starting, None);
            let started = self.start(&server).await;
            match started {
                Ok((running, child)) => {
                    backoff = BACKOFF_FIRST;
                    server.lock().pgid = child.as_ref().map(|c| c.group.id());
                    let ended = self.serve(&server, running).await;
                    if let Some(child) = child {
                        child.stop().await;
                    }
                    server.lock().pgid = None;
                    server.lock().peer = None;
                    match ended {
                        Ended::Stopped => break,
                        Ended::Restart => continue,
                        Ended::Closed(why) => {
                            self.set_status(&server, McpServerStatus::Failed, Some(why));
                        }
                    }
                }
                Err((why, child)) => {
                    if let Some(child) = child {
                        child.stop().await;
                    }
                    self.set_status(&server, McpServerStatus::Failed, Some(why));
                }
            }
            tokio::select! {
                _ = server.stop.cancelled() => break,
                _ = server.restart.notified() => backoff = BACKOFF_FIRST,
                _ = tokio::time::sleep(backoff) => backoff = (backoff * 2).min(BACKOFF_MAX),
            }
        }
        server.lock().supervised = false;
        self.set_status(&server, McpServerStatus::Stopped, None);
    }

    /// Connects and lists the tools, within the start-up timeout.
    async fn start(
        &self,
        server: &Arc<Server>,
    ) -> Result<(RunningService<RoleClient, Handler>, Option<Child>), (String, Option<Child>)> {
        let spec = &server.spec;
        let limit = spec
            .startup_timeout_secs
            .map_or(STARTUP_TIMEOUT, Duration::from_secs);
        let handler = Handler {
            server: Arc::downgrade(server),
        };
        let mut child = None;
        let connecting = async {
            let running = match spec.transport {
                McpTransport::Stdio => {
                    let (transport, spawned) = spawn_stdio(server, &self.processes)?;
                    child = Some(spawned);
                    handler.serve(transport).await.map_err(|e| {
                        format!("the server did not complete the MCP handshake: {e}")
                    })?
                }
                McpTransport::Http => {
                    use rmcp::transport::StreamableHttpClientTransport;
                    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
                    let mut config = StreamableHttpClientTransportConfig::with_uri(
                        spec.url.clone().unwrap_or_default(),
                    );
                    for (name, value) in &spec.headers {
                        let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
                            .map_err(|e| format!("header name {name:?}: {e}"))?;
                        let value = reqwest::header::HeaderValue::from_str(value)
                            .map_err(|e| format!("header {name}: {e}"))?;
                        config.custom_headers.insert(name, value);
                    }
                    let transport =
                        StreamableHttpClientTransport::with_client(self.http.clone(), config);
                    handler.serve(transport).await.map_err(|e| {
                        format!(
                            "cannot connect to {}: {e}",
                            spec.url.as_deref().unwrap_or_default()
                        )
                    })?
                }
            };
            let tools = running
                .peer()
                .list_all_tools()
                .await
                .map_err(|e| format!("tools/list failed: {e}"))?;
            Ok::<_, String>((running, tools))
        };
        let outcome = tokio::select! {
            _ = server.stop.cancelled() => Err("stopped".to_owned()),
            r = tokio::time::timeout(limit, connecting) => match r {
                Ok(r) => r,
                Err(_) => Err(format!("the server did not start within {} s", limit.as_secs())),
            },
        };
        let (running, tools) = match outcome {
            Ok(ok) => ok,
            Err(why) => {
                let tail = server.lock().stderr.iter().last().cloned();
                let why = match tail {
                    Some(line) => format!("{why} (stderr: {line})"),
                    None => why,
                };
                return Err((why, child));
            }
        };
        self.set_tools(server, &tools).await;
        server.lock().peer = Some(running.peer().clone());
        self.set_status(server, McpServerStatus::Ready, None);
        Ok((running, child))
    }

    async fn set_tools(&self, server: &Server, tools: &[rmcp::model::Tool]) {
        let defs: Vec<ToolDef> = tools
            .iter()
            .filter_map(|t| serde_json::to_value(t).ok())
            .filter_map(|v| convert::tool_def(&v))
            .collect();
        if let Ok(json) = serde_json::to_string(&defs)
            && let Err(e) = self
                .store
                .put_mcp_tool_cache(&server.spec.name, &json, now_ms())
                .await
        {
            tracing::warn!(server = server.spec.name, "cannot cache the tool list: {e}");
        }
        server.lock().tools = defs;
        self.rebuild_catalog();
    }

    /// Serves a connected server until it closes, is stopped or restarted; refreshes the
    /// tool list when it changes.
    async fn serve(
        &self,
        server: &Arc<Server>,
        running: RunningService<RoleClient, Handler>,
    ) -> Ended {
        let cancel = running.cancellation_token();
        let peer = running.peer().clone();
        let waiting = running.waiting();
        tokio::pin!(waiting);
        loop {
            tokio::select! {
                quit = &mut waiting => {
                    let why = match quit {
                        Ok(rmcp::service::QuitReason::JoinError(e)) => format!("the connection task failed: {e}"),
                        Err(e) => format!("the connection task failed: {e}"),
                        Ok(_) => {
                            let tail = server.lock().stderr.iter().last().cloned();
                            match tail {
                                Some(line) => format!("the server closed the connection (stderr: {line})"),
                                None => "the server closed the connection".to_owned(),
                            }
                        }
                    };
                    return Ended::Closed(why);
                }
                _ = server.stop.cancelled() => {
                    cancel.cancel();
                    let _ = tokio::time::timeout(Duration::from_secs(2), &mut waiting).await;
                    return Ended::Stopped;
                }
                _ = server.restart.notified() => {
                    cancel.cancel();
                    let _ = tokio::time::timeout(Duration::from_secs(2), &mut waiting).await;
                    return Ended::Restart;
                }
                _ = server.refresh.notified() => {
                    match peer.list_all_tools().await {
                        Ok(tools) => self.set_tools(server, &tools).await,
                        Err(e) => tracing::warn!(server = server.spec.name, "cannot list the changed tools: {}", redact::mask_urls_in(&e.to_string())),
                    }
                }
            }
        }
    }

    fn get(&self, name: &str) -> Result<Arc<Server>, McpError> {
        self.servers()
            .get(name)
            .cloned()
            .ok_or_else(|| McpError::NotFound(name.to_owned()))
    }

    fn info(&self, server: &Server) -> McpServerInfo {
        let catalog = self.catalog();
        let st = server.lock();
        let mut spec = server.spec.redacted();
        spec.url = spec.url.map(|url| redact::mask_url(&url));
        McpServerInfo {
            spec,
            source: server.source,
            status: st.status.unwrap_or(McpServerStatus::Stopped),
            last_error: st.last_error.clone(),
            stderr_tail: st.stderr.iter().cloned().collect(),
            tools: st
                .tools
                .iter()
                .map(|t| McpToolName {
                    name: t.name.clone(),
                    exposed_name: catalog
                        .tools
                        .iter()
                        .find(|c| c.server == server.spec.name && c.def.name == t.name)
                        .map_or_else(|| t.name.clone(), |c| c.exposed.clone()),
                })
                .collect(),
            restarts: st.restarts,
        }
    }

    pub fn list(&self) -> Vec<McpServerInfo> {
        let servers: Vec<Arc<Server>> = self.servers().values().cloned().collect();
        servers.iter().map(|s| self.info(s)).collect()
    }

    /// Adds a server (stored) and starts it when enabled.
    pub async fn add(&self, spec: McpServerSpec) -> Result<McpServerInfo, McpError> {
        check_spec(&spec)?;
        if self.servers().contains_key(&spec.name) {
            return Err(McpError::Invalid(format!(
                "an MCP server named {:?} exists already (updateMcpServer changes it)",
                spec.name
            )));
        }
        self.store.put_mcp_server(&spec, now_ms()).await?;
        let server = self.insert(spec, McpSource::Rpc, Vec::new());
        if server.spec.enabled {
            self.supervise(&server);
        }
        self.rebuild_catalog();
        Ok(self.info(&server))
    }

    /// Changes a server added over RPC: the old one stops, the new one starts.
    pub async fn update(&self, name: &str, changes: Value) -> Result<McpServerInfo, McpError> {
        let old = self.get(name)?;
        if old.source == McpSource::Config {
            return Err(McpError::ReadOnly(format!(
                "MCP server {name:?} comes from the config file; change it there"
            )));
        }
        let Value::Object(changes) = changes else {
            return Err(McpError::Invalid("changes must be an object".into()));
        };
        if changes.contains_key("name") {
            return Err(McpError::Invalid(
                "a server cannot be renamed: remove it and add it again".into(),
            ));
        }
        let mut merged =
            serde_json::to_value(&old.spec).map_err(|e| McpError::Invalid(e.to_string()))?;
        for (k, v) in changes {
            merged[k] = v;
        }
        let spec: McpServerSpec = serde_json::from_value(merged)
            .map_err(|e| McpError::Invalid(format!("invalid changes: {e}")))?;
        check_spec(&spec)?;
        self.store.put_mcp_server(&spec, now_ms()).await?;
        old.stop.cancel();
        let tools = old.lock().tools.clone();
        let server = self.insert(spec, McpSource::Rpc, tools);
        if server.spec.enabled {
            self.supervise(&server);
        }
        self.rebuild_catalog();
        Ok(self.info(&server))
    }

    /// Stops and forgets a server added over RPC.
    pub async fn remove(&self, name: &str) -> Result<(), McpError> {
        let server = self.get(name)?;
        if server.source == McpSource::Config {
            return Err(McpError::ReadOnly(format!(
                "MCP server {name:?} comes from the config file; remove it there"
            )));
        }
        self.store.delete_mcp_server(name).await?;
        server.stop.cancel();
        self.servers().remove(name);
        self.rebuild_catalog();
        Ok(())
    }

    /// Restarts a server now.
    pub fn restart(&self, name: &str) -> Result<McpServerInfo, McpError> {
        let server = self.get(name)?;
        if !server.spec.enabled {
            return Err(McpError::Invalid(format!(
                "MCP server {name:?} is disabled"
            )));
        }
        if server.lock().supervised {
            server.restart.notify_one();
        } else {
            self.supervise(&server);
        }
        Ok(self.info(&server))
    }

    /// Calls a tool. `Err` is a result text for the model (the server is down, the call
    /// failed); cancelling `cancel` sends the MCP cancellation and returns at once.
    pub async fn call(
        &self,
        server_name: &str,
        tool: &str,
        args: Value,
        cancel: &CancellationToken,
        progress: Option<mpsc::Sender<Progress>>,
        save_dir: &Path,
    ) -> Result<(String, bool), String> {
        let server = self.get(server_name).map_err(|e| e.to_string())?;
        let (peer, status) = {
            let st = server.lock();
            (
                st.peer.clone(),
                st.status.unwrap_or(McpServerStatus::Stopped),
            )
        };
        let Some(peer) = peer.filter(|_| status == McpServerStatus::Ready) else {
            if server.spec.enabled && !server.lock().supervised {
                self.supervise(&server);
            }
            let why = server.lock().last_error.clone();
            return Err(match why {
                Some(why) => format!(
                    "the MCP server {server_name:?} is {} ({why}); try again later",
                    status.as_str()
                ),
                None => format!(
                    "the MCP server {server_name:?} is {}; try again later",
                    status.as_str()
                ),
            });
        };
        let arguments = match args {
            Value::Object(map) => map,
            Value::Null => serde_json::Map::new(),
            other => return Err(format!("arguments must be an object, got {other}")),
        };
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let handle = peer
            .send_cancellable_request(request, PeerRequestOptions::no_options())
            .await
            .map_err(|e| {
                redact::mask_urls_in(&format!(
                    "the MCP server {server_name:?} failed the call: {e}"
                ))
            })?;
        // rmcp puts its own progress token on every request: progress is routed by it.
        let token = token_key(&handle.progress_token.0);
        if let Some(tx) = progress {
            server
                .progress
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(token.clone(), tx);
        }
        let request_id = handle.id.clone();
        let limit = server
            .spec
            .call_timeout_secs
            .map_or(CALL_TIMEOUT, Duration::from_secs);
        let outcome = tokio::select! {
            _ = cancel.cancelled() => {
                let note = CancelledNotificationParam::new(
                    Some(request_id),
                    Some("cancelled by the user".into()),
                );
                if let Err(e) = peer.notify_cancelled(note).await {
                    tracing::debug!(server = server_name, "cannot send the cancellation: {e}");
                }
                Err("cancelled".to_owned())
            }
            r = tokio::time::timeout(limit, handle.await_response()) => match r {
                Ok(Ok(ServerResult::CallToolResult(result))) => Ok(result),
                Ok(Ok(other)) => Err(format!(
                    "the MCP server {server_name:?} answered the call with something else: {}",
                    crate::provider::excerpt(&serde_json::to_string(&other).unwrap_or_default(), 300)
                )),
                Ok(Err(e)) => Err(redact::mask_urls_in(&format!("the MCP server {server_name:?} failed the call: {e}"))),
                Err(_) => Err(format!("{tool} timed out after {} s", limit.as_secs())),
            },
        };
        server
            .progress
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&token);
        let result = outcome?;
        let json = serde_json::to_value(&result).unwrap_or(Value::Null);
        let mut n = 0;
        Ok(convert::result_text(&json, |mime, bytes| {
            n += 1;
            let ext = mime.rsplit('/').next().unwrap_or("bin");
            let ext: String = ext.chars().filter(char::is_ascii_alphanumeric).collect();
            let path: PathBuf = save_dir.join(format!("mcp_{}_{n}.{ext}", uuid::Uuid::now_v7()));
            std::fs::create_dir_all(save_dir)
                .and_then(|()| std::fs::write(&path, bytes))
                .map_err(|e| e.to_string())?;
            Ok(path.display().to_string())
        }))
    }

    /// Kills every stdio server's process group at once (SIGKILL), without waiting: for a
    /// second signal that cuts the shutdown short.
    pub fn kill_all_now(&self) {
        for server in self.servers().values() {
            if let Some(pgid) = server.lock().pgid {
                let _ = nix::sys::signal::killpg(
                    nix::unistd::Pid::from_raw(pgid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
        }
    }

    /// Stops every server (their processes too) and waits for the supervisors.
    pub async fn shutdown(&self) {
        let servers: Vec<Arc<Server>> = self.servers().values().cloned().collect();
        for server in &servers {
            server.stop.cancel();
        }
        self.tasks.close();
        if tokio::time::timeout(Duration::from_secs(5), self.tasks.wait())
            .await
            .is_err()
        {
            tracing::warn!("some MCP servers did not stop within 5 s");
        }
    }
}

/// How serving a connected server ended.
enum Ended {
    Stopped,
    Restart,
    Closed(String),
}

/// A stdio server's process (in its own process group, so its children go with it; the
/// group dies when this is dropped).
struct Child {
    group: ProcessGroup,
}

impl Child {
    /// SIGTERM to the group, SIGKILL after 2 s.
    async fn stop(self) {
        use nix::sys::signal::Signal;
        if !self.group.signal(Signal::SIGTERM) {
            return; // gone already
        }
        for _ in 0..20 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            if !self.group.alive() {
                return;
            }
        }
        // Dropping the group kills what is left of it.
    }
}

fn spawn_stdio(
    server: &Arc<Server>,
    processes: &ProcessLauncher,
) -> Result<(rmcp::transport::TokioChildProcess, Child), String> {
    let spec = &server.spec;
    let program = spec.command.clone().unwrap_or_default();
    let command = processes.mcp_command(
        &program,
        &spec.args,
        &spec.env,
        spec.cwd.as_deref().map(Path::new),
    )?;
    let (transport, stderr) = rmcp::transport::TokioChildProcess::builder(command)
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {program:?}: {e}"))?;
    let pid = transport
        .id()
        .ok_or_else(|| format!("{program:?} exited at once"))?;
    let group = processes.track(pid);
    if let Some(stderr) = stderr {
        let weak = Arc::downgrade(server);
        tokio::spawn(async move {
            let mut lines = tokio::io::BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let Some(server) = weak.upgrade() else {
                    return;
                };
                tracing::debug!(server = server.spec.name, "stderr: {line}");
                let mut st = server.lock();
                if st.stderr.len() == STDERR_LINES {
                    st.stderr.pop_front();
                }
                st.stderr.push_back(line.chars().take(500).collect());
            }
        });
    }
    Ok((transport, Child { group }))
}

/// A progress token as a map key.
fn token_key(token: &rmcp::model::NumberOrString) -> String {
    match token {
        rmcp::model::NumberOrString::String(s) => s.to_string(),
        rmcp::model::NumberOrString::Number(n) => n.to_string(),
    }
}

/// Receives the server's notifications.
#[derive(Debug, Clone)]
struct Handler {
    server: Weak<Server>,
}

impl ClientHandler for Handler {
    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        if let Some(server) = self.server.upgrade() {
            server.refresh.notify_one();
        }
        std::future::ready(())
    }

    fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        if let Some(server) = self.server.upgrade() {
            let token = token_key(&params.progress_token.0);
            let tx = server
                .progress
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get(&token)
                .cloned();
            if let Some(tx) = tx {
                let _ = tx.try_send(Progress {
                    progress: params.progress,
                    total: params.total,
                    message: params.message.clone(),
                });
            }
        }
        std::future::ready(())
    }

    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("agentd", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::V_2025_06_18)
    }
}
