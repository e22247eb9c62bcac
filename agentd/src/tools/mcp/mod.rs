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
//! server under the name the model sees. `call.rs`: a tool call. `tap.rs`: progress
//! handed to its call as the transport reads it. `convert.rs`: MCP shapes to ours.
//! `redact.rs`: credentials in URLs.

mod call;
mod catalog;
pub mod convert;
mod http;
mod list;
mod process;
pub mod redact;
mod spec;
mod supervisor;
mod tap;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock, Weak};
use std::time::Duration;

use agent_proto::{EventKind, McpServerSpec, McpServerStatus, McpSource};
use rmcp::{Peer, RoleClient};
use tokio::sync::{Notify, broadcast, mpsc};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::process::ProcessLauncher;
use crate::store::Store;
pub use catalog::{Catalog, CatalogTool};
use convert::ToolDef;
pub use spec::McpReload;
pub use supervisor::Unlisted;

/// Default seconds to start a server and list its tools.
pub const STARTUP_TIMEOUT: Duration = Duration::from_secs(10);
/// Default seconds one call may take.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(120);
/// Lines of a server's stderr kept for `listMcpServers`.
const STDERR_LINES: usize = 20;

/// How much the daemon takes from servers and how it treats misbehaving ones (from the
/// config's `[mcp]` section).
#[derive(Debug, Clone)]
pub struct McpLimits {
    /// Tools one model request carries, builtins included (applied by the tool center).
    pub max_tools_per_request: usize,
    pub max_list_pages: usize,
    pub max_tools_per_server: usize,
    pub max_schema_bytes: usize,
    pub list_changed_debounce: Duration,
    pub backoff_first: Duration,
    pub backoff_max: Duration,
    pub stable_after: Duration,
    pub timeouts_before_restart: u32,
    /// How long a run's first request waits for servers still starting with no tools.
    pub wait_for_tools: Duration,
}

impl From<&crate::config::McpConfig> for McpLimits {
    fn from(c: &crate::config::McpConfig) -> McpLimits {
        McpLimits {
            max_tools_per_request: c.max_tools_per_request,
            max_list_pages: c.max_list_pages,
            max_tools_per_server: c.max_tools_per_server,
            max_schema_bytes: c.max_schema_bytes,
            list_changed_debounce: Duration::from_millis(c.list_changed_debounce_ms),
            backoff_first: Duration::from_millis(c.restart_backoff_first_ms),
            backoff_max: Duration::from_secs(c.restart_backoff_max_secs)
                .max(Duration::from_millis(c.restart_backoff_first_ms)),
            stable_after: Duration::from_secs(c.stable_after_secs),
            timeouts_before_restart: c.timeouts_before_restart,
            wait_for_tools: Duration::from_millis(c.wait_for_tools_ms),
        }
    }
}

impl Default for McpLimits {
    fn default() -> McpLimits {
        McpLimits::from(&crate::config::McpConfig::default())
    }
}

/// The daemon's log filter with rmcp's own logging held at `warn`, unless the user's
/// filter names rmcp: rmcp logs every notification a server sends at `info`, whole (a
/// server's chatter, however large, would fill the log). The daemon logs notifications
/// itself, at `debug` and cut short.
pub fn log_filter(user: &str) -> String {
    if user.contains("rmcp") {
        user.to_owned()
    } else if user.trim().is_empty() {
        "rmcp=warn".to_owned()
    } else {
        format!("{user},rmcp=warn")
    }
}

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

/// Progress of a call: from an MCP server's notifications, or a running command's output
/// (`output`, from the `bash` tool).
#[derive(Debug, Clone, PartialEq)]
pub struct Progress {
    pub progress: f64,
    pub total: Option<f64>,
    pub message: Option<String>,
    pub output: Option<agent_proto::LiveOutput>,
}

/// How many progress notifications for no listening call are kept for a call that
/// registers just after (its request is sent before its token can be registered).
const EARLY_PROGRESS: usize = 256;

/// Where a server's progress notifications go: the calls listening, by progress token,
/// and what came for a token before its call listened. One lock for both, so a
/// notification and a call registering never miss each other.
#[derive(Debug, Default)]
struct ProgressRoutes {
    listening: HashMap<String, mpsc::Sender<Progress>>,
    early: VecDeque<(String, Progress)>,
}

impl ProgressRoutes {
    /// Hands `progress` to its call, or keeps it for a call about to listen. False when a
    /// listening call's channel is full (it is dropped).
    fn route(&mut self, token: String, progress: Progress) -> bool {
        match self.listening.get(&token) {
            Some(tx) => tx.try_send(progress).is_ok(),
            None => {
                if self.early.len() == EARLY_PROGRESS {
                    self.early.pop_front();
                }
                self.early.push_back((token, progress));
                true
            }
        }
    }

    /// A call listens for `token`: what came for it already is sent first.
    fn listen(&mut self, token: &str, tx: mpsc::Sender<Progress>) {
        self.early.retain(|(t, progress)| {
            let came = t == token;
            if came {
                let _ = tx.try_send(progress.clone());
            }
            !came
        });
        self.listening.insert(token.to_owned(), tx);
    }
}

#[derive(Debug, Default)]
struct ServerState {
    status: Option<McpServerStatus>,
    last_error: Option<String>,
    stderr: VecDeque<String>,
    tools: Vec<ToolDef>,
    /// Tools of the last listing left out, and why.
    skipped: Vec<convert::Skipped>,
    peer: Option<Peer<RoleClient>>,
    /// The process group of a running stdio server.
    pgid: Option<i32>,
    /// Starts after the first.
    restarts: u32,
    /// The supervisor task runs.
    supervised: bool,
    /// While failed: the wait before the next start.
    retry_delay: Option<Duration>,
    /// Calls that timed out since the last one that did not.
    timeouts_in_a_row: u32,
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
    /// Calls waiting for progress, by progress token (and progress that came first).
    progress: Mutex<ProgressRoutes>,
    /// Messages the transport dropped for their size (stdio), for the calls waiting.
    oversized: broadcast::Sender<process::Oversized>,
    /// Cancelled when the supervisor task has ended (its process is gone).
    finished: CancellationToken,
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
    limits: McpLimits,
    /// Names of the builtin tools, which MCP tools do not take by accident.
    reserved: Vec<&'static str>,
}

impl McpManager {
    pub fn new(
        store: Store,
        http: reqwest::Client,
        processes: Arc<ProcessLauncher>,
        limits: McpLimits,
    ) -> Arc<McpManager> {
        let reserved = crate::tools::builtin::all()
            .iter()
            .map(|t| t.name())
            .collect();
        Arc::new_cyclic(|me| McpManager {
            servers: Mutex::default(),
            catalog: RwLock::default(),
            store,
            http,
            events: broadcast::channel(256).0,
            tasks: TaskTracker::new(),
            processes,
            me: me.clone(),
            limits,
            reserved,
        })
    }

    pub fn limits(&self) -> &McpLimits {
        &self.limits
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

    /// Kills every stdio server and what it started at once, without waiting: for a
    /// second signal that cuts the shutdown short.
    pub fn kill_all_now(&self) {
        for server in self.servers().values() {
            if let Some(pgid) = server.lock().pgid {
                crate::process::end_now(pgid);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rmcp_logs_only_warnings_unless_asked() {
        let cases = [
            ("info", "info,rmcp=warn"),
            ("debug", "debug,rmcp=warn"),
            ("agentd=debug", "agentd=debug,rmcp=warn"),
            ("", "rmcp=warn"),
            ("info,rmcp=debug", "info,rmcp=debug"),
        ];
        for (user, expected) in cases {
            assert_eq!(log_filter(user), expected);
            assert!(tracing_subscriber::EnvFilter::try_new(log_filter(user)).is_ok());
        }
    }
}

#[cfg(test)]
mod progress_tests {
    use super::*;

    fn step(n: f64) -> Progress {
        Progress {
            progress: n,
            total: None,
            message: None,
            output: None,
        }
    }

    #[test]
    fn progress_that_comes_before_its_call_listens_is_kept_for_it() {
        let mut routes = ProgressRoutes::default();
        assert!(routes.route("7".into(), step(1.0)));
        assert!(routes.route("8".into(), step(9.0)));
        assert!(routes.route("7".into(), step(2.0)));
        let (tx, mut rx) = mpsc::channel(16);
        routes.listen("7", tx);
        assert!(routes.route("7".into(), step(3.0)));
        let got: Vec<f64> = std::iter::from_fn(|| rx.try_recv().ok())
            .map(|p| p.progress)
            .collect();
        assert_eq!(got, [1.0, 2.0, 3.0]);
        // Another token's stays, and what is kept is bounded.
        assert_eq!(routes.early.len(), 1);
        for n in 0..EARLY_PROGRESS + 10 {
            routes.route(format!("x{n}"), step(0.0));
        }
        assert_eq!(routes.early.len(), EARLY_PROGRESS);
    }
}
