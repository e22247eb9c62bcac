//! One supervisor task per server: start it (stdio or streamable HTTP), list its tools,
//! serve it while it runs, and restart it with backoff until it is stopped; the status it
//! reports as `mcpServerStatus` events. Also the rmcp client handler that receives the
//! server's notifications.
//!
//! Everything a server may leave unanswered (the handshake, a listing) is awaited in the
//! same `select!` as stop and restart, so removing or restarting a server never waits on
//! the server. `tools/list_changed` is debounced: announcements within the debounce are
//! one listing, and a listing that finds what was there already changes nothing. The
//! backoff starts over only after a server stayed up for `stable_after`, so a server that
//! dies right after its handshake is restarted ever more slowly, not every second.
//! Progress does not go through the handler: the transport hands it to its call as it is
//! read (`tap.rs`), in order with the call's result.

use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::time::Duration;

use agent_proto::{EventKind, McpServerStatus, McpTransport};
use rmcp::model::{
    ClientCapabilities, ClientConfig, CustomNotification, Implementation, ProtocolVersion,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use tokio::sync::broadcast::error::RecvError;
use tokio::time::Instant;

use super::http::WatchedHttp;
use super::list::{self, Listing};
use super::process::{Child, spawn_stdio};
use super::tap::ProgressTap;
use super::{McpLimits, McpManager, STARTUP_TIMEOUT, Server, redact};
use crate::store::now_ms;

/// Characters of a server notification that go to the debug log.
const NOTIFICATION_LOG_CHARS: usize = 300;

/// The wait before restarting a server that went down: doubling from `first` to `max`
/// while the server keeps failing, from `first` again once it stayed up `stable_after`.
#[derive(Debug, Clone)]
pub(super) struct Backoff {
    first: Duration,
    max: Duration,
    stable_after: Duration,
    next: Duration,
}

impl Backoff {
    pub(super) fn new(limits: &McpLimits) -> Backoff {
        Backoff {
            first: limits.backoff_first,
            max: limits.backoff_max,
            stable_after: limits.stable_after,
            next: limits.backoff_first,
        }
    }

    /// The wait after a server that was up for `up` (`None`: it did not start) went down.
    pub(super) fn after(&mut self, up: Option<Duration>) -> Duration {
        if up.is_some_and(|up| up >= self.stable_after) {
            self.next = self.first;
        }
        let wait = self.next;
        self.next = (self.next * 2).min(self.max);
        wait
    }

    /// Starts over (a restart asked for).
    pub(super) fn reset(&mut self) {
        self.next = self.first;
    }
}

/// A listing under way (bounded by the start-up timeout).
type Relisting = Pin<Box<dyn Future<Output = Result<Listing, String>> + Send>>;

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

    /// Waits up to `limit` for the servers `wanted` picks (enabled ones) that are still
    /// starting with no tools to offer, neither listed nor cached (a fresh start, a slow
    /// `tools/list`); returns those of them still without tools then, and why. A server
    /// with cached tools is never waited for: its cached list serves. Wakes on every
    /// status change, so it returns as soon as they are listed.
    pub async fn wait_for_tools(
        &self,
        wanted: impl Fn(&agent_proto::McpServerSpec) -> bool,
        limit: Duration,
    ) -> Vec<Unlisted> {
        let deadline = Instant::now() + limit;
        // Subscribed before looking, so a change in between is not missed.
        let mut changes = self.events.subscribe();
        let look = || -> Vec<Unlisted> {
            self.servers()
                .values()
                .filter(|s| s.spec.enabled && wanted(&s.spec))
                .filter_map(|s| unlisted(s))
                .collect()
        };
        let waited: Vec<String> = look()
            .into_iter()
            .filter(|u| u.starting)
            .map(|u| u.server)
            .collect();
        if waited.is_empty() {
            return Vec::new();
        }
        loop {
            let left: Vec<Unlisted> = look()
                .into_iter()
                .filter(|u| waited.contains(&u.server))
                .collect();
            if left.iter().all(|u| !u.starting) || Instant::now() >= deadline {
                return left;
            }
            match tokio::time::timeout_at(deadline, changes.recv()).await {
                Ok(Ok(_) | Err(RecvError::Lagged(_))) | Err(_) => {}
                Ok(Err(RecvError::Closed)) => return left,
            }
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
        let mut backoff = Backoff::new(&self.limits);
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
            let (up, why, child) = match started {
                Ok((running, child)) => {
                    let since = Instant::now();
                    server.lock().pgid = child.as_ref().map(|c| c.group.id());
                    let ended = self.serve(&server, running).await;
                    server.lock().peer = None;
                    match ended {
                        Ended::Closed(why) => (Some(since.elapsed()), why, child),
                        Ended::Stopped | Ended::Restart => {
                            if let Some(child) = child {
                                child.stop().await;
                            }
                            server.lock().pgid = None;
                            if matches!(ended, Ended::Stopped) {
                                break;
                            }
                            backoff.reset();
                            continue;
                        }
                    }
                }
                Err((why, child)) => (None, why, child),
            };
            // Said at once: calls fail fast while what is left of the process is stopped.
            let wait = backoff.after(up);
            server.lock().retry_delay = Some(wait);
            self.set_status(&server, McpServerStatus::Failed, Some(why));
            if let Some(child) = child {
                child.stop().await;
            }
            server.lock().pgid = None;
            tokio::select! {
                _ = server.stop.cancelled() => break,
                _ = server.restart.notified() => backoff.reset(),
                _ = tokio::time::sleep(wait) => {}
            }
            server.lock().retry_delay = None;
        }
        {
            let mut st = server.lock();
            st.supervised = false;
            st.retry_delay = None;
        }
        self.set_status(&server, McpServerStatus::Stopped, None);
        server.finished.cancel();
    }

    /// Connects and lists the tools, within the start-up timeout.
    async fn start(
        &self,
        server: &Arc<Server>,
    ) -> Result<(RunningService<RoleClient, Handler>, Option<Child>), (String, Option<Child>)> {
        let spec = &server.spec;
        let limit = startup_timeout(server);
        let handler = Handler {
            server: Arc::downgrade(server),
        };
        let mut child = None;
        let connecting = async {
            let running = match spec.transport {
                McpTransport::Stdio => {
                    let (transport, spawned) = spawn_stdio(server, &self.processes)?;
                    child = Some(spawned);
                    let transport = ProgressTap::new(transport, Arc::downgrade(server));
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
                    let client = WatchedHttp::new(self.http.clone(), server.oversized.clone());
                    let transport = StreamableHttpClientTransport::with_client(client, config);
                    let transport = ProgressTap::new(transport, Arc::downgrade(server));
                    handler.serve(transport).await.map_err(|e| {
                        format!(
                            "cannot connect to {}: {e}",
                            spec.url.as_deref().unwrap_or_default()
                        )
                    })?
                }
            };
            let listing =
                list::list_tools(running.peer(), &self.limits, &server.oversized, limit).await?;
            Ok::<_, String>((running, listing))
        };
        let outcome = tokio::select! {
            _ = server.stop.cancelled() => Err("stopped".to_owned()),
            r = tokio::time::timeout(limit, connecting) => match r {
                Ok(r) => r,
                Err(_) => Err(format!("the server did not start within {} s", limit.as_secs())),
            },
        };
        let (running, listing) = match outcome {
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
        self.set_tools(server, listing).await;
        server.lock().peer = Some(running.peer().clone());
        self.set_status(server, McpServerStatus::Ready, None);
        Ok((running, child))
    }

    /// Takes a listing: the cache (memory, store) and the catalog change only when the
    /// tools did.
    async fn set_tools(&self, server: &Server, listing: Listing) {
        let name = &server.spec.name;
        let (changed, skipped_changed) = {
            let mut st = server.lock();
            let changed = st.tools != listing.tools;
            let skipped_changed = st.skipped != listing.skipped;
            if changed {
                st.tools = listing.tools.clone();
            }
            st.skipped = listing.skipped.clone();
            (changed, skipped_changed)
        };
        if skipped_changed {
            for skip in &listing.skipped {
                tracing::warn!(
                    server = name,
                    tool = skip.name,
                    "an MCP tool is left out: {}",
                    skip.reason
                );
            }
        }
        if !changed {
            tracing::debug!(server = name, "the tool list is unchanged");
            return;
        }
        if let Ok(json) = serde_json::to_string(&listing.tools)
            && let Err(e) = self.store.put_mcp_tool_cache(name, &json, now_ms()).await
        {
            tracing::warn!(server = name, "cannot cache the tool list: {e}");
        }
        self.rebuild_catalog();
    }

    /// Serves a connected server until it closes, is stopped or restarted; lists its tools
    /// again (debounced) when it says they changed.
    async fn serve(
        &self,
        server: &Arc<Server>,
        running: RunningService<RoleClient, Handler>,
    ) -> Ended {
        let cancel = running.cancellation_token();
        let peer = running.peer().clone();
        let waiting = running.waiting();
        tokio::pin!(waiting);
        let debounce = self.limits.list_changed_debounce;
        let mut due: Option<Instant> = None;
        let mut relisting: Option<Relisting> = None;
        let mut again = false;
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
                    if relisting.is_some() {
                        again = true;
                    } else if due.is_none() {
                        due = Some(Instant::now() + debounce);
                    }
                }
                _ = sleep_until(due), if due.is_some() && relisting.is_none() => {
                    due = None;
                    relisting = Some(self.relist(server, peer.clone()));
                }
                outcome = poll_relisting(&mut relisting), if relisting.is_some() => {
                    relisting = None;
                    match outcome {
                        Ok(listing) => self.set_tools(server, listing).await,
                        Err(e) => {
                            let e = redact::mask_urls_in(&e);
                            tracing::warn!(server = server.spec.name, "cannot list the changed tools (keeping the ones it had): {e}");
                            server.lock().last_error = Some(format!("listing the changed tools: {e}"));
                        }
                    }
                    if std::mem::take(&mut again) {
                        due = Some(Instant::now() + debounce);
                    }
                }
            }
        }
    }

    /// Lists a running server's tools again, within the start-up timeout.
    fn relist(&self, server: &Arc<Server>, peer: rmcp::Peer<RoleClient>) -> Relisting {
        let limits = self.limits.clone();
        let oversized = server.oversized.clone();
        let limit = startup_timeout(server);
        Box::pin(async move { list::list_tools(&peer, &limits, &oversized, limit).await })
    }
}

/// An enabled server with no tools to offer (none listed, none cached).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unlisted {
    pub server: String,
    /// It is still starting (its tools may come).
    pub starting: bool,
    /// What it is: `is still starting (…)`, `failed: <why>`, `is stopped`.
    pub why: String,
}

fn unlisted(server: &Server) -> Option<Unlisted> {
    let st = server.lock();
    if !st.tools.is_empty() || st.status == Some(McpServerStatus::Ready) {
        return None;
    }
    let starting = st.supervised && st.status != Some(McpServerStatus::Failed);
    let why = match (st.status, &st.last_error) {
        _ if starting => "is still starting (its tools are not listed yet)".to_owned(),
        (Some(McpServerStatus::Failed), Some(e)) => format!("failed: {e}"),
        (status, _) => format!("is {}", status.unwrap_or(McpServerStatus::Stopped).as_str()),
    };
    Some(Unlisted {
        server: server.spec.name.clone(),
        starting,
        why,
    })
}

fn startup_timeout(server: &Server) -> Duration {
    server
        .spec
        .startup_timeout_secs
        .map_or(STARTUP_TIMEOUT, Duration::from_secs)
}

async fn sleep_until(due: Option<Instant>) {
    match due {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

async fn poll_relisting(relisting: &mut Option<Relisting>) -> Result<Listing, String> {
    match relisting.as_mut() {
        Some(listing) => listing.await,
        None => std::future::pending().await,
    }
}

/// How serving a connected server ended.
pub(super) enum Ended {
    Stopped,
    Restart,
    Closed(String),
}

/// Receives the server's notifications (but progress: `tap.rs`).
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
            tracing::debug!(
                server = server.spec.name,
                "notification: tools/list_changed"
            );
            server.refresh.notify_one();
        }
        std::future::ready(())
    }

    fn on_custom_notification(
        &self,
        notification: CustomNotification,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        if let Some(server) = self.server.upgrade() {
            let params = notification
                .params
                .as_ref()
                .map(|p| crate::provider::excerpt(&p.to_string(), NOTIFICATION_LOG_CHARS));
            tracing::debug!(
                server = server.spec.name,
                params,
                "notification: {}",
                crate::provider::excerpt(&notification.method, 100)
            );
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backoff_starts_over_only_after_a_stable_run() {
        let secs = Duration::from_secs;
        let mut backoff = Backoff::new(&McpLimits {
            backoff_first: secs(1),
            backoff_max: secs(8),
            stable_after: secs(30),
            ..McpLimits::default()
        });
        // (how long the server was up, or None when it did not start; the wait)
        let cases = [
            (None, 1),
            (None, 2),
            (Some(secs(1)), 4),
            (Some(Duration::ZERO), 8),
            (Some(secs(2)), 8),
            (Some(secs(40)), 1),
            (Some(secs(0)), 2),
            (Some(secs(29)), 4),
        ];
        for (i, (up, wait)) in cases.into_iter().enumerate() {
            assert_eq!(backoff.after(up), secs(wait), "step {i}: up {up:?}");
        }
        backoff.reset();
        assert_eq!(backoff.after(None), secs(1));
    }
}
