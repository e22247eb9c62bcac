//! MCP servers: configured in the config file or over RPC, each supervised by a task of
//! its own (start, list tools, watch, restart with backoff 1 s doubling to 60 s), with the
//! tool lists cached in memory and in the store so tools stay listed while a server is
//! down. The tool center routes calls here; this module never decides permissions.
//! Whatever it shows or logs of a server (its spec, errors) has the credentials in URLs
//! masked (`redact.rs`); stdio servers are started by `tools::process` with the
//! environment `tools::env` allows them.
//!
//! Here: the manager and a server's shared state. `spec.rs`: specs, loading, add, update,
//! remove, restart, `listMcpServers`. `supervisor.rs`: the task per server (start, serve,
//! re-list, restart with backoff) and the rmcp handler of its notifications.
//! `process.rs`: a stdio server's process and stderr. `catalog.rs`: every tool of every
//! server under the name the model sees. `call.rs`: a tool call. `convert.rs`: MCP shapes
//! to ours. `redact.rs`: credentials in URLs.

mod call;
mod catalog;
pub mod convert;
mod process;
pub mod redact;
mod spec;
mod supervisor;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock, Weak};
use std::time::Duration;

use agent_proto::{EventKind, McpServerSpec, McpServerStatus, McpSource};
use rmcp::{Peer, RoleClient};
use tokio::sync::{Notify, broadcast, mpsc};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::store::Store;
use crate::tools::process::ProcessLauncher;
pub use catalog::{Catalog, CatalogTool};
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

    fn get(&self, name: &str) -> Result<Arc<Server>, McpError> {
        self.servers()
            .get(name)
            .cloned()
            .ok_or_else(|| McpError::NotFound(name.to_owned()))
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
