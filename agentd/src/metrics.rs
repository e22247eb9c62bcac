//! The daemon's metrics, in the Prometheus/OpenMetrics text format the web listener serves
//! at `GET /metrics` (docs/metrics.md lists every series).
//!
//! One [`Metrics`] value is built at start-up (`daemon`) and handed to the parts that
//! count: the session (runs started and ended), the loop (tokens, tool calls), the HTTP
//! provider engine (model latency), the dispatcher (RPC errors) and the transports
//! (connections). It is cheap to clone: every clone counts into the same registry.
//! Counting is an atomic add on a handle made once; the label sets that are known in
//! advance (outcomes, error kinds, transports, statuses) are made at construction, so those
//! series show 0 before the first event and no count takes a lock. The agents by status
//! are not counted as they change but asked at scrape time ([`Metrics::count_agents_with`]).
//!
//! This module is a leaf: it names nothing of the daemon's, only the wire's enums
//! (`agent_proto`); callers turn their own values into its labels. It decides nothing and
//! does no I/O.

use std::sync::{Arc, OnceLock};
use std::time::Instant;

use agent_proto::{ErrorKind, LoopFinishReason, SessionStatus, ToolCallStatus};
use futures::future::BoxFuture;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::TypedMetric;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

#[cfg(test)]
mod tests;

/// Every way a run ends, in the order of the `outcome` label's handles.
const OUTCOMES: [LoopFinishReason; 9] = [
    LoopFinishReason::Completed,
    LoopFinishReason::Cancelled,
    LoopFinishReason::MaxSteps,
    LoopFinishReason::MaxTokens,
    LoopFinishReason::WaitingPermission,
    LoopFinishReason::WaitingQuestion,
    LoopFinishReason::Paused,
    LoopFinishReason::Refused,
    LoopFinishReason::Error,
];

/// Every session status, in the order of the `status` label's handles.
const STATUSES: [SessionStatus; 6] = [
    SessionStatus::Idle,
    SessionStatus::Generating,
    SessionStatus::WaitingPermission,
    SessionStatus::WaitingQuestion,
    SessionStatus::Paused,
    SessionStatus::Error,
];

/// Seconds from a model request to the first event of its answer: most answers start
/// within a few seconds; a long prompt, a reasoning model or retries take tens.
const FIRST_TOKEN_BUCKETS: [f64; 12] = [
    0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0, 120.0,
];

/// Seconds of a whole model request: a short answer takes a second, a long one minutes.
const REQUEST_BUCKETS: [f64; 13] = [
    0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 40.0, 80.0, 160.0, 320.0, 640.0,
];

/// The wire name of a run's end (`loopFinished.reason`).
fn outcome_name(reason: LoopFinishReason) -> &'static str {
    match reason {
        LoopFinishReason::Completed => "completed",
        LoopFinishReason::Cancelled => "cancelled",
        LoopFinishReason::MaxSteps => "maxSteps",
        LoopFinishReason::MaxTokens => "maxTokens",
        LoopFinishReason::WaitingPermission => "waitingPermission",
        LoopFinishReason::WaitingQuestion => "waitingQuestion",
        LoopFinishReason::Paused => "paused",
        LoopFinishReason::Refused => "refused",
        LoopFinishReason::Error => "error",
    }
}

/// The `result` label of a finished tool call; `None` for a call not finished.
fn tool_result(status: ToolCallStatus) -> Option<&'static str> {
    match status {
        ToolCallStatus::Success => Some("ok"),
        ToolCallStatus::Error => Some("error"),
        ToolCallStatus::Denied => Some("denied"),
        ToolCallStatus::Cancelled => Some("cancelled"),
        ToolCallStatus::Interrupted => Some("interrupted"),
        ToolCallStatus::Streaming
        | ToolCallStatus::Ready
        | ToolCallStatus::WaitingPermission
        | ToolCallStatus::WaitingAnswer
        | ToolCallStatus::Approved
        | ToolCallStatus::Running => None,
    }
}

/// How a client is connected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    Unix,
    WebSocket,
}

impl Transport {
    const ALL: [Transport; 2] = [Transport::Unix, Transport::WebSocket];

    /// The `transport` label.
    pub fn as_str(self) -> &'static str {
        match self {
            Transport::Unix => "unix",
            Transport::WebSocket => "websocket",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// One label, known at construction.
type Label = [(&'static str, &'static str); 1];

/// A tool call's labels: the tool (a builtin's name, `mcp`, or `unknown`; the caller
/// keeps it bounded) and its result.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ToolLabels {
    tool: String,
    result: &'static str,
}

/// A model request's provider (a configured provider's id: as bounded as the config).
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct ProviderLabels {
    provider: String,
}

/// A finished model request's provider and whether it ended well.
#[derive(Debug, Clone, PartialEq, Eq, Hash, EncodeLabelSet)]
struct RequestLabels {
    provider: String,
    outcome: &'static str,
}

type Histograms<S> = Family<S, Histogram, fn() -> Histogram>;

/// Asks, at scrape time, how many agents are in each status (the daemon's sessions and
/// store answer it); `Err` says why it cannot tell.
pub type AgentStatuses =
    Arc<dyn Fn() -> BoxFuture<'static, Result<Vec<(SessionStatus, u64)>, String>> + Send + Sync>;

/// The daemon's metrics; clones count into the same registry.
#[derive(Clone)]
pub struct Metrics {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

struct Inner {
    registry: Registry,
    runs_started: Counter,
    /// By [`OUTCOMES`] index.
    runs_ended: Vec<Counter>,
    tokens_input: Counter,
    tokens_output: Counter,
    tool_calls: Family<ToolLabels, Counter>,
    /// By [`ErrorKind::ALL`] index.
    rpc_errors: Vec<Counter>,
    /// By [`Transport::index`].
    connections_accepted: Vec<Counter>,
    connections_open: Vec<Gauge>,
    first_token: Histograms<ProviderLabels>,
    request: Histograms<RequestLabels>,
    /// By [`STATUSES`] index, set at each scrape.
    agents: Vec<Gauge>,
    statuses: OnceLock<AgentStatuses>,
}

/// A family of one label with a handle made for each of `values`, in their order.
fn labelled<M>(
    registry: &mut Registry,
    name: &str,
    help: &str,
    label: &'static str,
    values: impl IntoIterator<Item = &'static str>,
) -> Vec<M>
where
    M: Clone + Default + prometheus_client::registry::Metric + TypedMetric,
{
    let family = Family::<Label, M>::default();
    let handles = values
        .into_iter()
        .map(|value| family.get_or_create_owned(&[(label, value)]))
        .collect();
    registry.register(name, help, family);
    handles
}

impl Metrics {
    /// A registry with every series of the daemon, all at zero.
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("agentd");
        let r = &mut registry;
        let runs_started = Counter::default();
        r.register("runs_started", "Runs started", runs_started.clone());
        let runs_ended = labelled(
            r,
            "runs_ended",
            "Runs ended, by how they ended (loopFinished.reason)",
            "outcome",
            OUTCOMES.map(outcome_name),
        );
        let mut tokens: Vec<Counter> = labelled(
            r,
            "tokens",
            "Tokens of runs' model calls as the provider reported them",
            "direction",
            ["input", "output"],
        );
        let tokens_output = tokens.pop().unwrap_or_default();
        let tokens_input = tokens.pop().unwrap_or_default();
        let tool_calls = Family::<ToolLabels, Counter>::default();
        r.register(
            "tool_calls",
            "Tool calls settled, by tool (a builtin's name, mcp, unknown) and result",
            tool_calls.clone(),
        );
        let rpc_errors = labelled(
            r,
            "rpc_errors",
            "JSON-RPC error responses, by data.kind",
            "kind",
            ErrorKind::ALL.map(ErrorKind::as_str),
        );
        let transports = Transport::ALL.map(Transport::as_str);
        let connections_accepted = labelled(
            r,
            "connections_accepted",
            "Client connections accepted, by transport",
            "transport",
            transports,
        );
        let connections_open = labelled(
            r,
            "connections_open",
            "Client connections open, by transport",
            "transport",
            transports,
        );
        let (first_token, request) = model_histograms(r);
        let agents = labelled(
            r,
            "agents",
            "Agents by session status, at the time of the scrape",
            "status",
            STATUSES.map(SessionStatus::as_str),
        );
        Metrics {
            inner: Arc::new(Inner {
                registry,
                runs_started,
                runs_ended,
                tokens_input,
                tokens_output,
                tool_calls,
                rpc_errors,
                connections_accepted,
                connections_open,
                first_token,
                request,
                agents,
                statuses: OnceLock::new(),
            }),
        }
    }

    /// A run started (its `messageStarted`).
    pub fn run_started(&self) {
        self.inner.runs_started.inc();
    }

    /// A run ended (its `loopFinished`), for `reason`.
    pub fn run_ended(&self, reason: LoopFinishReason) {
        if let Some(i) = OUTCOMES.iter().position(|o| *o == reason) {
            self.inner.runs_ended[i].inc();
        }
    }

    /// Usage a provider reported for one of a run's model calls.
    pub fn tokens(&self, input: u64, output: u64) {
        self.inner.tokens_input.inc_by(input);
        self.inner.tokens_output.inc_by(output);
    }

    /// A tool call got its result. `tool` must come from a bounded set (the caller maps
    /// MCP and unknown names to `mcp` and `unknown`); a status that is not a result counts
    /// nothing.
    pub fn tool_call(&self, tool: &str, status: ToolCallStatus) {
        let Some(result) = tool_result(status) else {
            return;
        };
        let labels = ToolLabels {
            tool: tool.to_owned(),
            result,
        };
        self.inner.tool_calls.get_or_create(&labels).inc();
    }

    /// An error response of `kind` was sent to a client.
    pub fn rpc_error(&self, kind: ErrorKind) {
        if let Some(i) = ErrorKind::ALL.iter().position(|k| *k == kind) {
            self.inner.rpc_errors[i].inc();
        }
    }

    /// A connection was accepted on `transport`: counted, and open until the returned
    /// value is dropped.
    pub fn connection_opened(&self, transport: Transport) -> OpenConnection {
        let i = transport.index();
        self.inner.connections_accepted[i].inc();
        let open = self.inner.connections_open[i].clone();
        open.inc();
        OpenConnection { open }
    }

    /// The timer of one model request to `provider`, started now.
    pub fn model_request(&self, provider: &str) -> ModelRequest {
        ModelRequest {
            metrics: self.clone(),
            provider: provider.to_owned(),
            started: Instant::now(),
            first_seen: false,
        }
    }

    /// Where [`Metrics::render`] asks for the agents by status; set once at start-up (a
    /// second call is ignored).
    pub fn count_agents_with(&self, source: AgentStatuses) {
        let _ = self.inner.statuses.set(source);
    }

    /// Every series in the OpenMetrics text format (served as
    /// `application/openmetrics-text; version=1.0.0; charset=utf-8`), the agents by status
    /// asked for first. When they cannot be told, their gauges keep the last values and a
    /// warning is logged.
    pub async fn render(&self) -> String {
        if let Some(source) = self.inner.statuses.get() {
            match source().await {
                Ok(counts) => self.set_agents(&counts),
                Err(e) => tracing::warn!("metrics: cannot count the agents by status: {e}"),
            }
        }
        self.encode()
    }

    /// The agents by status: each status's count, 0 for those not named.
    fn set_agents(&self, counts: &[(SessionStatus, u64)]) {
        for (status, gauge) in STATUSES.iter().zip(&self.inner.agents) {
            let n: u64 = counts
                .iter()
                .filter(|(s, _)| s == status)
                .map(|(_, n)| n)
                .sum();
            gauge.set(i64::try_from(n).unwrap_or(i64::MAX));
        }
    }

    /// The text of every series as they stand.
    fn encode(&self) -> String {
        let mut text = String::new();
        if let Err(e) = prometheus_client::encoding::text::encode(&mut text, &self.inner.registry) {
            tracing::error!("metrics: cannot encode: {e}");
        }
        text
    }
}

/// The two model latency families, registered.
fn model_histograms(r: &mut Registry) -> (Histograms<ProviderLabels>, Histograms<RequestLabels>) {
    let first_token: Histograms<ProviderLabels> =
        Family::new_with_constructor(|| Histogram::new(FIRST_TOKEN_BUCKETS));
    r.register(
        "model_first_token_seconds",
        "Seconds from a model request (retries included) to the first event of its answer",
        first_token.clone(),
    );
    let request: Histograms<RequestLabels> =
        Family::new_with_constructor(|| Histogram::new(REQUEST_BUCKETS));
    r.register(
        "model_request_seconds",
        "Seconds of a whole model request, to the end of its answer or its failure",
        request.clone(),
    );
    (first_token, request)
}

/// An open connection, counted in `agentd_connections_open` until dropped.
#[derive(Debug)]
pub struct OpenConnection {
    open: Gauge,
}

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.open.dec();
    }
}

/// One model request being timed. [`ModelRequest::first_event`] at each event of the
/// answer (only the first is observed), [`ModelRequest::ended`] once at its end; a request
/// dropped before its end (the run stopped) observes no duration.
#[derive(Debug)]
pub struct ModelRequest {
    metrics: Metrics,
    provider: String,
    started: Instant,
    first_seen: bool,
}

impl ModelRequest {
    /// An event of the answer arrived; the first one is observed.
    pub fn first_event(&mut self) {
        if self.first_seen {
            return;
        }
        self.first_seen = true;
        let labels = ProviderLabels {
            provider: self.provider.clone(),
        };
        let seconds = self.started.elapsed().as_secs_f64();
        self.metrics
            .inner
            .first_token
            .get_or_create(&labels)
            .observe(seconds);
    }

    /// The request ended: its answer complete (`ok`) or failed.
    pub fn ended(self, ok: bool) {
        let labels = RequestLabels {
            provider: self.provider,
            outcome: if ok { "ok" } else { "error" },
        };
        let seconds = self.started.elapsed().as_secs_f64();
        self.metrics
            .inner
            .request
            .get_or_create(&labels)
            .observe(seconds);
    }
}

/// The value of one series in a rendered text, e.g.
/// `value_of(&text, r#"agentd_runs_ended_total{outcome="completed"}"#)`; for tests and
/// tools that check counts (a histogram's `_count` and `_sum` are series too).
pub fn value_of(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|line| {
        let rest = line.strip_prefix(series)?;
        rest.strip_prefix(' ')?.split(' ').next()?.parse().ok()
    })
}
