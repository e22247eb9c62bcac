//! Server specs and their life cycle over RPC and the config file: checking a spec,
//! loading the configured and stored servers with their cached tools, adding, updating,
//! removing and restarting them, and what `listMcpServers` shows of each.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use agent_proto::{
    McpServerInfo, McpServerSpec, McpServerStatus, McpSkippedTool, McpSource, McpToolName,
    McpTransport,
};
use serde_json::Value;
use tokio::sync::{Notify, broadcast};
use tokio_util::sync::CancellationToken;

use super::convert::ToolDef;
use super::{McpError, McpManager, Server, ServerState, redact};
use crate::store::now_ms;

/// How long removing or updating a server waits for its process to stop.
const STOP_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

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
            oversized: broadcast::channel(16).0,
            finished: CancellationToken::new(),
        });
        self.servers()
            .insert(server.spec.name.clone(), server.clone());
        server
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
                    // Not in the catalog (a disabled server): its own name.
                    exposed_name: catalog
                        .exposed_of(&server.spec.name, &t.name)
                        .map_or_else(|| t.name.clone(), str::to_owned),
                })
                .collect(),
            skipped_tools: st
                .skipped
                .iter()
                .map(|s| McpSkippedTool {
                    name: s.name.clone(),
                    reason: s.reason.clone(),
                })
                .collect(),
            restarts: st.restarts,
            retry_delay_ms: st
                .retry_delay
                .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
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
        stop_and_wait(&old).await;
        let tools = old.lock().tools.clone();
        let server = self.insert(spec, McpSource::Rpc, tools);
        if server.spec.enabled {
            self.supervise(&server);
        }
        self.rebuild_catalog();
        Ok(self.info(&server))
    }

    /// Stops and forgets a server added over RPC; returns once its process is gone.
    pub async fn remove(&self, name: &str) -> Result<(), McpError> {
        let server = self.get(name)?;
        if server.source == McpSource::Config {
            return Err(McpError::ReadOnly(format!(
                "MCP server {name:?} comes from the config file; remove it there"
            )));
        }
        self.store.delete_mcp_server(name).await?;
        stop_and_wait(&server).await;
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
}

/// What a reload of the config file's servers changed, by server name.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct McpReload {
    pub added: Vec<String>,
    pub changed: Vec<String>,
    pub removed: Vec<String>,
}

impl McpManager {
    /// Checks the config file's servers as read again, before anything changes (an error
    /// leaves every server as it is).
    pub fn check_config_servers(from_config: &[McpServerSpec]) -> Result<(), McpError> {
        for (i, spec) in from_config.iter().enumerate() {
            check_spec(spec)?;
            if from_config[..i].iter().any(|s| s.name == spec.name) {
                return Err(McpError::Invalid(format!(
                    "two MCP servers named {:?} in the config file",
                    spec.name
                )));
            }
        }
        Ok(())
    }

    /// Takes the config file's servers as read again ([`McpManager::check_config_servers`]
    /// first): servers no longer there stop, changed ones restart with their new spec,
    /// new ones are added (started when they start with the daemon). Servers added over
    /// RPC stay, unless the config now names one: the config file's wins, as at start.
    /// Calls in flight to a server that stops fail as its other calls would.
    pub async fn reload_config(
        &self,
        from_config: &[McpServerSpec],
    ) -> Result<McpReload, McpError> {
        Self::check_config_servers(from_config)?;
        let mut reload = McpReload::default();
        let current: Vec<Arc<Server>> = self.servers().values().cloned().collect();
        let mut stopping = Vec::new();
        for server in &current {
            let next = from_config.iter().find(|s| s.name == server.spec.name);
            match (server.source, next) {
                (McpSource::Config, None) => reload.removed.push(server.spec.name.clone()),
                (McpSource::Config, Some(next)) if *next != server.spec => {
                    reload.changed.push(server.spec.name.clone());
                }
                (McpSource::Config, Some(_)) | (McpSource::Rpc, None) => continue,
                (McpSource::Rpc, Some(_)) => {
                    tracing::warn!(
                        server = server.spec.name,
                        "the config file now names an MCP server added over RPC; the config \
                         file's wins"
                    );
                    reload.changed.push(server.spec.name.clone());
                }
            }
            stopping.push(server.clone());
        }
        for server in &stopping {
            stop_and_wait(server).await;
            self.servers().remove(&server.spec.name);
        }
        let caches: HashMap<String, String> =
            self.store.mcp_tool_caches().await?.into_iter().collect();
        for spec in from_config {
            if self.servers().contains_key(&spec.name) {
                continue; // unchanged
            }
            if !reload.changed.contains(&spec.name) {
                reload.added.push(spec.name.clone());
            }
            let tools = caches
                .get(&spec.name)
                .and_then(|json| serde_json::from_str::<Vec<ToolDef>>(json).ok())
                .unwrap_or_default();
            let server = self.insert(spec.clone(), McpSource::Config, tools);
            if server.spec.enabled && server.spec.auto_start {
                self.supervise(&server);
            }
        }
        self.rebuild_catalog();
        Ok(reload)
    }
}

/// Stops a server's supervisor for good and waits until it has ended (its process
/// stopped): the supervisor never waits on the server when told to stop, so this is
/// short (the process gets 2 s after SIGTERM).
async fn stop_and_wait(server: &Server) {
    server.stop.cancel();
    // After `stop`, no supervisor starts; one that runs cancels `finished` at its end.
    if !server.lock().supervised {
        return;
    }
    if tokio::time::timeout(STOP_WAIT, server.finished.cancelled())
        .await
        .is_err()
    {
        tracing::warn!(
            server = server.spec.name,
            "the MCP server did not stop within {} s",
            STOP_WAIT.as_secs()
        );
    }
}
