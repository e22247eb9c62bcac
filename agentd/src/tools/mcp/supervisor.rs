//! One supervisor task per server: start it (stdio or streamable HTTP), list its tools,
//! serve it while it runs (following `tools/list_changed`), and restart it with backoff
//! until it is stopped; the status it reports as `mcpServerStatus` events. Also the
//! rmcp client handler that receives the server's notifications.

use std::sync::{Arc, PoisonError, Weak};
use std::time::Duration;

use agent_proto::{EventKind, McpServerStatus, McpTransport};
use rmcp::model::{
    ClientCapabilities, ClientConfig, Implementation, ProgressNotificationParam, ProtocolVersion,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::{ClientHandler, RoleClient, ServiceExt};

use super::call::token_key;
use super::convert::{self, ToolDef};
use super::process::{Child, spawn_stdio};
use super::{BACKOFF_FIRST, BACKOFF_MAX, McpManager, Progress, STARTUP_TIMEOUT, Server, redact};
use crate::store::now_ms;

impl McpManager {
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

    pub(super) fn supervise(&self, server: &Arc<Server>) {
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
}

/// How serving a connected server ended.
pub(super) enum Ended {
    Stopped,
    Restart,
    Closed(String),
}

/// Receives the server's notifications.
#[derive(Debug, Clone)]
pub(super) struct Handler {
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
