//! From frames to method calls: JSON-RPC envelope checks, batches, client notifications,
//! and the tower stack (tracing span, in-flight limit that answers `overloaded`, timeout)
//! around jsonrpsee's method table.
//!
//! Per-connection limits live here too: a batch is split into its entries without building
//! them and refused past `max_batch` entries (so a huge batch costs no more memory than its
//! frame); a connection holds at most `max_subscriptions` live subscriptions. Ids are checked
//! before anything runs: strings, integers and null are echoed exactly, any other number is
//! an invalid request answered with `id: null`.
//!
//! jsonrpsee serves HTTP and WebSocket itself; on our Unix socket we drive its `Methods`
//! directly (`raw_json_request`). `subscribe` and `unsubscribe` are served here instead:
//! jsonrpsee's subscription sink would serialize every event again for every subscriber
//! and move it through two more tasks. A subscription here is a slot in the agent's event
//! log that hands the event's JSON, serialized once, to the connection's writer, which
//! wraps it in the notification envelope of [`NewSubscription::head`].
//!
//! With a [`Router`] (several daemons on one database), a request about an agent whose home
//! is another daemon is forwarded there after the checks above and answered with the home's
//! answer; the home runs it with [`Dispatcher::execute_forwarded`]. See [`route`].

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use agent_proto::ErrorKind;
use futures::future::BoxFuture;
use jsonrpsee::Methods;
use jsonrpsee::types::ErrorObjectOwned;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use tokio::sync::mpsc;
use tower::util::BoxCloneSyncService;
use tower::{BoxError, Service, ServiceBuilder, ServiceExt};
use tracing::Instrument;

use super::error::{
    error_kind_of, error_object_response, error_response, result_response, service_error,
    with_error_kind,
};
use super::params::ParamsCheck;
use super::route::{self, Route, Router};
use crate::metrics::Metrics;
use crate::session::events::{Outbox, PendingSubscription, Subscription};

/// Notifications jsonrpsee may buffer for a subscription of its own (none are served
/// through it; see the module doc).
const SUBSCRIPTION_BUFFER: usize = 16;

/// What every event notification ends with, after the event.
pub const NOTIFICATION_TAIL: &str = "}}";

/// Where subscriptions come from: the session layer (a stand-in in tests).
pub trait EventSource: Send + Sync {
    /// Checks a subscription (the agent exists, the params agree); attached later.
    fn subscribe(
        &self,
        agent_id: Option<String>,
        since: Option<u64>,
        snapshot: bool,
    ) -> BoxFuture<'_, Result<PendingSubscription, ErrorObjectOwned>>;
}

/// A call ready for the method table.
#[derive(Debug)]
pub struct Call {
    pub method: String,
    /// The whole request, re-serialized after normalization.
    pub body: String,
}

/// What the method table answers: the response frame and, for a subscription, its
/// stream of notification frames.
pub type Answer = (Box<RawValue>, mpsc::Receiver<Box<RawValue>>);

/// The method table behind the tower stack; cheap to clone (one per connection).
#[derive(Clone)]
pub struct Dispatcher {
    service: BoxCloneSyncService<Call, Answer, BoxError>,
    /// Named params checked against the schema before a call.
    params: Arc<ParamsCheck>,
    events: Arc<dyn EventSource>,
    max_batch: usize,
    max_subscriptions: usize,
    /// Where every error response is counted by its kind.
    metrics: Metrics,
    /// Who answers a request about an agent, when several daemons share the database;
    /// none: this daemon answers everything.
    router: Option<Arc<dyn Router>>,
}

/// Limits of the dispatcher, used as given: the config checked them at load (each at
/// least 1).
#[derive(Debug, Clone, Copy)]
pub struct DispatchLimits {
    /// Requests handled at once across all connections; more answer `overloaded`.
    pub max_in_flight: usize,
    pub request_timeout: Duration,
    /// Entries in one batch; a longer batch is an invalid request.
    pub max_batch: usize,
    /// Live subscriptions on one connection; one more answers `tooManySubscriptions`.
    pub max_subscriptions: usize,
}

impl Dispatcher {
    pub fn new(
        methods: Methods,
        events: Arc<dyn EventSource>,
        limits: DispatchLimits,
        metrics: Metrics,
    ) -> Dispatcher {
        let service = ServiceBuilder::new()
            .load_shed()
            .concurrency_limit(limits.max_in_flight)
            .timeout(limits.request_timeout)
            .service(MethodTable { methods });
        Dispatcher {
            service: BoxCloneSyncService::new(service),
            params: Arc::new(ParamsCheck::from_schema()),
            events,
            max_batch: limits.max_batch,
            max_subscriptions: limits.max_subscriptions,
            metrics,
            router: None,
        }
    }

    /// This dispatcher with requests about agents routed by `router` (see [`route`]).
    pub fn with_router(mut self, router: Arc<dyn Router>) -> Dispatcher {
        self.router = Some(router);
        self
    }

    /// The metrics this dispatcher counts errors in (the daemon's).
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// Runs a request a client sent to another daemon, which forwarded it here, the
    /// agent's home: the same envelope and params checks and method table as a client's
    /// request, but never routed again (two daemons never pass a request back and forth),
    /// and only what is forwarded (see [`route`]): `subscribe`, `unsubscribe` and the
    /// methods about no agent are refused. Errors are not counted here: the forwarder
    /// counts the answer it gives its client.
    pub async fn execute_forwarded(&self, request: &str) -> String {
        let value = match serde_json::from_str::<Value>(request) {
            Ok(value) => value,
            Err(e) => return parse_error(&e),
        };
        let Request { id, method, obj } = match check_envelope(value, &self.params) {
            Ok(Some(request)) => request,
            Ok(None) => {
                return error_response(
                    Value::Null,
                    ErrorKind::InvalidRequest,
                    "a forwarded request must have an id; notifications are not forwarded",
                );
            }
            Err(response) => return response,
        };
        if route::addressed(&method, obj.get("params")).is_none() {
            return error_response(
                id,
                ErrorKind::InvalidRequest,
                format!(
                    "{method} is not forwarded between daemons: the daemon a client asks \
                     answers it"
                ),
            );
        }
        self.call(id, method, obj, None).await.0
    }

    /// Runs a checked request through the tower stack and the method table: the response,
    /// with the client's `id`, and its error kind when it is an error.
    async fn call(
        &self,
        id: Value,
        method: String,
        mut obj: Map<String, Value>,
        caller: Option<Caller>,
    ) -> (String, Option<ErrorKind>) {
        // jsonrpsee reads only unsigned integer ids: a negative one travels as 0 and is put
        // back into the answer.
        let stand_in = id.as_i64().is_some_and(|n| n < 0);
        if stand_in {
            obj.insert("id".into(), Value::from(0));
        }
        let call = Call {
            method,
            body: Value::Object(obj).to_string(),
        };
        let method = call.method.clone();
        let service = self.service.clone();
        let answer = match caller {
            Some(caller) => CALLER.scope(caller, service.oneshot(call)).await,
            None => service.oneshot(call).await,
        };
        match answer {
            Ok((response, _)) => {
                let (response, kind) = with_error_kind(response.get(), &method);
                let response = if stand_in {
                    with_id(&response, id)
                } else {
                    response
                };
                (response, kind)
            }
            Err(e) => {
                let response = service_error(id, &method, &e);
                let kind = error_kind_of(&response);
                (response, kind)
            }
        }
    }

    /// A per-connection handle that remembers the connection's subscriptions, whose
    /// events go to `outbox`.
    pub fn connection(&self, outbox: Arc<dyn Outbox>) -> ConnectionRpc {
        ConnectionRpc {
            dispatcher: self.clone(),
            outbox,
            subscriptions: HashMap::new(),
        }
    }
}

tokio::task_local! {
    /// The connection a call came on, while the call runs: for a method that sends that
    /// connection notifications of its own (`complete` with `stream: true`).
    pub static CALLER: Caller;
}

/// A call's connection and id, as [`CALLER`] holds it.
#[derive(Clone)]
pub struct Caller {
    id: Value,
    outbox: Arc<dyn Outbox>,
}

impl Caller {
    /// The call's JSON-RPC id.
    pub fn id(&self) -> &Value {
        &self.id
    }

    /// Sends `method` with `params` as a notification to the calling connection (before the
    /// call's response, which comes after everything it sent).
    pub fn notify(&self, method: &str, params: Value) {
        let frame = serde_json::json!({"jsonrpc": "2.0", "method": method, "params": params});
        self.outbox.notify(frame.to_string());
    }
}

/// The innermost service: one call into jsonrpsee.
#[derive(Clone)]
struct MethodTable {
    methods: Methods,
}

impl Service<Call> for MethodTable {
    type Response = Answer;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<Answer, BoxError>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, call: Call) -> Self::Future {
        let methods = self.methods.clone();
        let span = tracing::debug_span!("request", method = call.method);
        Box::pin(
            async move {
                let answer = methods
                    .raw_json_request(&call.body, SUBSCRIPTION_BUFFER)
                    .await?;
                tracing::trace!(response = answer.0.get(), "answered");
                Ok(answer)
            }
            .instrument(span),
        )
    }
}

/// The result of one frame, for the connection's writer, in this order: forget the
/// subscriptions in `unsubscribed` (already stopped), write `response`, then take on
/// `subscriptions` and [`Subscription::attach`] each, so the answer to a `subscribe`
/// precedes its events.
#[derive(Debug, Default)]
pub struct FrameReply {
    pub response: Option<String>,
    pub unsubscribed: Vec<u64>,
    pub subscriptions: Vec<NewSubscription>,
}

/// A subscription made by this frame. It counts against its connection's limit for as
/// long as `live` is held.
#[derive(Debug)]
pub struct NewSubscription {
    /// The id the client was given, which the events of the outbox carry.
    pub key: u64,
    /// What each notification of it starts with, up to the event's JSON; it ends with
    /// [`NOTIFICATION_TAIL`].
    pub head: Box<str>,
    pub subscription: Arc<Subscription>,
    pub live: Arc<()>,
}

/// The JSON-RPC side of one connection.
pub struct ConnectionRpc {
    dispatcher: Dispatcher,
    /// Where this connection's subscriptions deliver.
    outbox: Arc<dyn Outbox>,
    /// Subscriptions created on this connection: only these may be unsubscribed here. An
    /// entry whose stream has ended (its `live` dropped) no longer counts.
    subscriptions: HashMap<u64, (Weak<()>, Arc<Subscription>)>,
}

impl ConnectionRpc {
    /// Handles one frame (a request, a notification or a batch).
    pub async fn handle_frame(&mut self, frame: &[u8]) -> FrameReply {
        let mut reply = FrameReply::default();
        let is_batch = frame.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[');
        if !is_batch {
            reply.response = match serde_json::from_slice::<Value>(frame) {
                Ok(value) => self.handle_one(value, &mut reply).await,
                Err(e) => Some(self.counted(parse_error(&e))),
            };
            return reply;
        }
        let items = match split_batch(frame, self.dispatcher.max_batch) {
            Ok(items) => items,
            Err(response) => {
                reply.response = Some(self.counted(response));
                return reply;
            }
        };
        let mut responses = Vec::new();
        for item in items {
            // Each entry is built only when its turn comes.
            let response = match serde_json::from_str::<Value>(item.get()) {
                Ok(value) => self.handle_one(value, &mut reply).await,
                Err(e) => Some(self.counted(parse_error(&e))),
            };
            responses.extend(response);
        }
        if !responses.is_empty() {
            reply.response = Some(format!("[{}]", responses.join(",")));
        }
        reply
    }

    async fn handle_one(&mut self, value: Value, reply: &mut FrameReply) -> Option<String> {
        let request = match check_envelope(value, &self.dispatcher.params) {
            Ok(Some(request)) => request,
            Ok(None) => return None, // a notification: nothing to answer
            Err(response) => return Some(self.counted(response)),
        };
        let Request { id, method, obj } = request;
        match method.as_str() {
            "subscribe" => {
                let response = self.subscribe(id, obj.get("params"), reply).await;
                return Some(self.counted(response));
            }
            "unsubscribe" => return Some(self.unsubscribe(id, obj.get("params"), reply)),
            _ => {}
        }

        if let Some(router) = &self.dispatcher.router {
            match route::route(&**router, &method, obj.get("params")).await {
                Route::Local => {}
                Route::Forward(daemon) => {
                    let response = route::forward(&**router, &daemon, id, obj).await;
                    return Some(self.counted(response));
                }
                Route::Refuse(kind, message) => {
                    return Some(self.counted(error_response(id, kind, message)));
                }
            }
        }
        // Only `complete` sends its caller notifications of its own; other calls skip it.
        let caller = (method == "complete").then(|| Caller {
            id: id.clone(),
            outbox: self.outbox.clone(),
        });
        let (response, kind) = self.dispatcher.call(id, method, obj, caller).await;
        if let Some(kind) = kind {
            self.dispatcher.metrics.rpc_error(kind);
        }
        Some(response)
    }

    /// A response of this module's own (small: an error, or a subscription's id), counted
    /// when it is an error; the method table's are counted as `with_error_kind` reads them.
    fn counted(&self, response: String) -> String {
        if let Some(kind) = error_kind_of(&response) {
            self.dispatcher.metrics.rpc_error(kind);
        }
        response
    }

    /// An error response for a frame the transport could not hand over (too large, over
    /// the input budget, an unreadable header), counted like every other.
    pub fn error_response(&self, kind: ErrorKind, message: impl Into<String>) -> String {
        self.dispatcher.metrics.rpc_error(kind);
        error_response(Value::Null, kind, message)
    }

    /// `subscribe`: checks the params and the agent, gives the subscription an id, and
    /// leaves it in `reply` for the writer to attach after the answer.
    async fn subscribe(
        &mut self,
        id: Value,
        params: Option<&Value>,
        reply: &mut FrameReply,
    ) -> String {
        let (agent_id, since, snapshot) = match subscribe_params(params) {
            Ok(parsed) => parsed,
            Err(message) => return error_response(id, ErrorKind::InvalidParams, message),
        };
        self.subscriptions
            .retain(|_, (live, _)| live.strong_count() > 0);
        let max = self.dispatcher.max_subscriptions;
        if self.subscriptions.len() >= max {
            return error_response(
                id,
                ErrorKind::TooManySubscriptions,
                format!(
                    "this connection already has {max} subscriptions, the most one \
                     connection may hold; unsubscribe from some (or subscribe with no \
                     agentId to get every agent's events on one)"
                ),
            );
        }
        let pending = match self
            .dispatcher
            .events
            .subscribe(agent_id, since, snapshot)
            .await
        {
            Ok(pending) => pending,
            Err(error) => return error_object_response(id, &error),
        };
        let key = loop {
            // Ids are opaque to clients; random ones (as jsonrpsee gives) cannot be
            // guessed across connections, and stay exact in a JSON number.
            let key = uuid::Uuid::new_v4().as_u64_pair().0 & ((1 << 53) - 1);
            if key != 0 && !self.subscriptions.contains_key(&key) {
                break key;
            }
        };
        let subscription = Arc::new(pending.bind(self.outbox.clone(), key));
        let live = Arc::new(());
        self.subscriptions
            .insert(key, (Arc::downgrade(&live), subscription.clone()));
        reply.subscriptions.push(NewSubscription {
            key,
            head: format!(
                r#"{{"jsonrpc":"2.0","method":"{}","params":{{"subscription":{key},"result":"#,
                agent_proto::EVENT_NOTIFICATION
            )
            .into_boxed_str(),
            subscription,
            live,
        });
        result_response(id, Value::from(key))
    }

    /// `unsubscribe`: stops a subscription of this connection at once (nothing of it is
    /// written after this answer); `false` for any other id.
    fn unsubscribe(&mut self, id: Value, params: Option<&Value>, reply: &mut FrameReply) -> String {
        let owned = subscription_key(params)
            .and_then(|key| self.subscriptions.remove(&key).map(|entry| (key, entry)));
        let Some((key, (live, subscription))) = owned else {
            return result_response(id, Value::Bool(false));
        };
        subscription.detach();
        reply.unsubscribed.push(key);
        // An entry whose stream had ended was no longer active.
        result_response(id, Value::Bool(live.strong_count() > 0))
    }
}

/// `subscribe` params: `{"agentId"?, "sinceSeq"?, "snapshot"?}` or `[agentId, sinceSeq,
/// snapshot]`, each may be null. (Named params were checked against the schema already.)
type SubscribeParams = (Option<String>, Option<u64>, bool);

fn subscribe_params(params: Option<&Value>) -> Result<SubscribeParams, String> {
    let (agent, since, snapshot) = match params {
        None | Some(Value::Null) => (None, None, None),
        Some(Value::Object(map)) => (map.get("agentId"), map.get("sinceSeq"), map.get("snapshot")),
        Some(Value::Array(items)) if items.len() <= 3 => {
            (items.first(), items.get(1), items.get(2))
        }
        Some(_) => {
            return Err(
                "invalid params: expected {\"agentId\", \"sinceSeq\", \"snapshot\"}".into(),
            );
        }
    };
    let agent = match agent {
        None | Some(Value::Null) => None,
        Some(Value::String(id)) => Some(id.clone()),
        Some(other) => {
            return Err(format!(
                "invalid params: agentId must be a string, got {other}"
            ));
        }
    };
    let since = match since {
        None | Some(Value::Null) => None,
        Some(value) => Some(value.as_u64().ok_or_else(|| {
            format!("invalid params: sinceSeq must be a non-negative integer, got {value}")
        })?),
    };
    let snapshot = match snapshot {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(other) => {
            return Err(format!(
                "invalid params: snapshot must be a boolean, got {other}"
            ));
        }
    };
    Ok((agent, since, snapshot))
}

fn parse_error(e: &serde_json::Error) -> String {
    error_response(
        Value::Null,
        ErrorKind::ParseError,
        format!("parse error: the frame is not valid JSON ({e})"),
    )
}

/// The entries of a batch frame, unparsed; reading stops at the first entry over `max`.
/// `Err` is the response for a batch that is empty, too long or not JSON.
fn split_batch(frame: &[u8], max: usize) -> Result<Vec<&RawValue>, String> {
    use serde::de::{DeserializeSeed, Error as _, SeqAccess, Visitor};

    struct Capped<'a> {
        max: usize,
        over: &'a Cell<bool>,
    }
    impl<'de> Visitor<'de> for Capped<'_> {
        type Value = Vec<&'de RawValue>;

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a batch (an array) of requests")
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut items = Vec::new();
            while let Some(item) = seq.next_element::<&'de RawValue>()? {
                if items.len() == self.max {
                    self.over.set(true);
                    return Err(A::Error::custom("too many entries"));
                }
                items.push(item);
            }
            Ok(items)
        }
    }
    impl<'de> DeserializeSeed<'de> for Capped<'_> {
        type Value = Vec<&'de RawValue>;

        fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_seq(self)
        }
    }

    let over = Cell::new(false);
    let mut de = serde_json::Deserializer::from_slice(frame);
    let parsed = Capped { max, over: &over }
        .deserialize(&mut de)
        .and_then(|items| de.end().map(|()| items));
    match parsed {
        Ok(items) if items.is_empty() => Err(error_response(
            Value::Null,
            ErrorKind::InvalidRequest,
            "an empty batch is not a request",
        )),
        Ok(items) => Ok(items),
        Err(_) if over.get() => Err(error_response(
            Value::Null,
            ErrorKind::InvalidRequest,
            format!(
                "a batch of more than {max} requests; send at most {max} per batch \
                 (none of this one was run)"
            ),
        )),
        Err(e) => Err(parse_error(&e)),
    }
}

/// `response` with its `id` replaced.
fn with_id(response: &str, id: Value) -> String {
    match serde_json::from_str::<Value>(response) {
        Ok(mut value) => {
            value["id"] = id;
            value.to_string()
        }
        Err(_) => response.to_owned(),
    }
}

struct Request {
    id: Value,
    method: String,
    obj: Map<String, Value>,
}

/// Validates the JSON-RPC envelope and the params (against the schema), and normalizes
/// params. `Ok(None)` for a notification, `Err(response)` for an invalid request.
fn check_envelope(value: Value, check: &ParamsCheck) -> Result<Option<Request>, String> {
    let Value::Object(mut obj) = value else {
        return Err(error_response(
            Value::Null,
            ErrorKind::InvalidRequest,
            "a request must be a JSON object",
        ));
    };
    let id = match obj.get("id") {
        None => None,
        Some(id @ (Value::Null | Value::String(_))) => Some(id.clone()),
        // Integers are echoed exactly; any other number could not be (1.5, 1e29, -0 and
        // integers past 64 bits are floats to the parser).
        Some(Value::Number(n)) if n.is_u64() || n.is_i64() => Some(Value::Number(n.clone())),
        Some(Value::Number(n)) => {
            return Err(error_response(
                Value::Null,
                ErrorKind::InvalidRequest,
                format!("id {n} is not an integer; use a string or an integer id"),
            ));
        }
        Some(_) => {
            return Err(error_response(
                Value::Null,
                ErrorKind::InvalidRequest,
                "id must be a string, an integer or null",
            ));
        }
    };
    let reply_id = id.clone().unwrap_or(Value::Null);
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(error_response(
            reply_id,
            ErrorKind::InvalidRequest,
            "jsonrpc must be \"2.0\"",
        ));
    }
    let Some(method) = obj.get("method").and_then(Value::as_str).map(str::to_owned) else {
        return Err(error_response(
            reply_id,
            ErrorKind::InvalidRequest,
            "method must be a string",
        ));
    };
    let Some(id) = id else {
        tracing::debug!(method, "ignoring a client notification");
        return Ok(None);
    };
    match obj.get("params") {
        None | Some(Value::Null) => {
            obj.insert("params".into(), Value::Object(Map::new()));
        }
        Some(Value::Object(_) | Value::Array(_)) => {}
        Some(_) => {
            return Err(error_response(
                id,
                ErrorKind::InvalidParams,
                "params must be an object (by name)",
            ));
        }
    }
    if let Some(params) = obj.get("params")
        && let Err(message) = check.check(&method, params)
    {
        return Err(error_response(id, ErrorKind::InvalidParams, message));
    }
    if method == "unsubscribe" {
        // jsonrpsee reads the id positionally; accept {"subscription": id} too.
        if let Some(Value::Object(params)) = obj.get("params") {
            let sub = params.get("subscription").cloned().unwrap_or(Value::Null);
            obj.insert("params".into(), Value::Array(vec![sub]));
        }
    }
    Ok(Some(Request { id, method, obj }))
}

/// The subscription id named by unsubscribe params (already normalized to `[id]`).
fn subscription_key(params: Option<&Value>) -> Option<u64> {
    match params? {
        Value::Array(items) => items.first().and_then(Value::as_u64),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
