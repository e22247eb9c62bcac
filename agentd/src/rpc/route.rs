//! Which daemon answers a request: the seam that lets several daemons share one database
//! (issue 37, the "home daemon" model). Each agent has at most one home daemon at a time;
//! a request about an agent that arrives at another daemon is forwarded to the home and
//! answered with exactly the home's answer (the client's id put back).
//!
//! This module owns what a request is about ([`addressed`]), the decision's shape
//! ([`Route`]), and turning a forward into the client's answer. It does not decide who is
//! home nor carry requests between daemons: the [`Router`] does both, implemented by the
//! daemon over the cluster (the rpc layer may not name the layers that know it). Without a
//! router (one daemon) nothing is routed and nothing is spent but an `Option` check.
//!
//! What a request is about is read from the method table (`agent_proto::rpc::METHODS`), not
//! from a list kept by hand, so a new method is routed by its params as soon as it is
//! declared: a call that takes `agentId` is about that agent, else one that takes
//! `messageId` is about that message (the router maps it to its agent). A test checks the
//! lists below against the table, and that every other `…Id` param is one known not to name
//! an agent, so a method naming an agent some new way cannot slip through unrouted.
//!
//! - **By agent**: answered by the agent's home, since it holds the agent's session (its
//!   run, pending prompts, event numbering) and caches: `getAgent`, `updateAgent`,
//!   `setAgentMode`, `deleteAgent`, `forkAgent`, `exportAgent`, `listMessages`,
//!   `sendMessage`, `cancelLoop`, `cancelQueuedMessage`, `compactContext`, `continueLoop`,
//!   `getPlan`, `pauseSession`, `resumeSession`, `getMessageRequestPreview`,
//!   `setContextEdge`, `regenerate`, `getTurnDiff`, `revertTo`, `getSession`, `listSkills`.
//!   `forkAgent` runs on the source's home (it copies the source as that home sees it).
//! - **By agent when named**: `agentId` is optional; with it the request is the home's
//!   like the above (one rule, no exceptions to remember; `listTools` depends on the
//!   agent's workspace, which is on its home's host); without it the request is about
//!   every agent and answered where it was asked, from the shared store: `getUsage`,
//!   `searchMessages`, `listTools`.
//! - **By message**: `messageId` without `agentId`; answered by the home of the message's
//!   agent, where the prompt it answers waits: `handlePermissionResponse`,
//!   `answerQuestion`.
//! - **Never forwarded**: about no agent, answered by the daemon asked: `initialize`,
//!   `listAgents` (the shared store), `createAgent` and `importAgent` (a new agent; its
//!   home is where it is made or first used), the daemon's own MCP servers
//!   (`listMcpServers`, `addMcpServer`, `updateMcpServer`, `removeMcpServer`,
//!   `restartMcpServer`), its config (`listProfiles`, `listProviders`, `listModels`,
//!   `testProvider`), `complete` (no agent; it streams to the asking connection).
//!   `subscribe` and `unsubscribe` are served by the asking daemon by design: events are
//!   relayed to every daemon, and a subscription is a slot of the connection it lives on.
//!
//! A request whose address cannot be read (`agentId` not a string, positional params too
//! short) is not routed: the method table refuses it where it was asked, as it would
//! anywhere. A forwarded request is run on the home by
//! [`super::dispatch::Dispatcher::execute_forwarded`], which never routes again (two
//! daemons never pass a request back and forth) and refuses what is never forwarded.

use std::collections::HashMap;
use std::sync::LazyLock;
use std::time::Duration;

use agent_proto::ErrorKind;
use agent_proto::rpc::{METHODS, MethodDescriptor, MethodKind};
use futures::future::BoxFuture;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::error::error_response;

/// The id a forwarded request carries between daemons: the forwarder's own, the same for
/// every forward (the transport pairs answers with requests; the client's id never leaves
/// the daemon it was sent to, so any id it chose, a negative one included, comes back
/// exactly).
pub const FORWARDED_ID: u64 = 0;

/// What a request is about.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Address {
    /// An agent, by its id (`agentId`).
    Agent(String),
    /// A message, by its id (`messageId`): the router finds its agent.
    Message(String),
}

/// Where a request about an [`Address`] is answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// Here: the agent's home is this daemon (or just became it).
    Local,
    /// At the daemon of this id, the agent's home.
    Forward(String),
    /// Nowhere: answered with this error (e.g. no live daemon on the agent's host).
    Refuse(ErrorKind, String),
}

/// Why a forwarded request got no answer; the client gets `internal` with
/// [`ForwardError::message`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ForwardError {
    /// The request never reached the home: nothing ran there. The transport's reason.
    NotSent(String),
    /// The home took the request but did not answer within this long: it may have run, or
    /// may still.
    NoAnswer(Duration),
    /// The home stopped (or lost the database) before it answered: the request may have
    /// run.
    HomeGone,
}

impl ForwardError {
    /// The error message for the client, naming the home daemon.
    pub fn message(&self, daemon: &str) -> String {
        match self {
            ForwardError::NotSent(why) => format!(
                "the agent's home daemon {daemon} could not be reached ({why}); the request \
                 did not run, retry it"
            ),
            ForwardError::NoAnswer(after) => format!(
                "the agent's home daemon {daemon} did not answer within {} s; the request \
                 may still complete there",
                after.as_secs()
            ),
            ForwardError::HomeGone => format!(
                "the agent's home daemon {daemon} stopped before it answered; the request \
                 may have run there (another daemon takes the agent over)"
            ),
        }
    }
}

/// Who is home and how to reach it; the daemon implements it over the cluster.
pub trait Router: Send + Sync {
    /// Where a request of `method` about `address` is answered (a method that only reads
    /// the shared store may be answered anywhere).
    fn route<'a>(&'a self, method: &'a str, address: &'a Address) -> BoxFuture<'a, Route>;

    /// Sends `request` (one JSON-RPC request, id [`FORWARDED_ID`]) to the daemon `to`,
    /// which runs it with `execute_forwarded`, and returns its response as it was written.
    fn forward<'a>(
        &'a self,
        to: &'a str,
        request: String,
    ) -> BoxFuture<'a, Result<String, ForwardError>>;
}

/// How a method names what it is about: the param and its place among positional params.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Addressing {
    Agent(usize),
    Message(usize),
}

/// Every method's addressing, read once from the method table.
static ADDRESSING: LazyLock<HashMap<&'static str, Addressing>> = LazyLock::new(|| {
    METHODS
        .iter()
        .filter_map(|m| Some((m.name, addressing_of(m)?)))
        .collect()
});

/// `agentId` addresses an agent; else `messageId` a message. Subscriptions are never
/// addressed (see the module doc).
fn addressing_of(method: &MethodDescriptor) -> Option<Addressing> {
    if method.kind != MethodKind::Call {
        return None;
    }
    let at = |name: &str| method.params.iter().position(|p| p.name == name);
    at("agentId")
        .map(Addressing::Agent)
        .or_else(|| at("messageId").map(Addressing::Message))
}

/// What a request of `method` with `params` is about; `None`: it is answered where it was
/// asked (a method about no agent, an optional `agentId` left out, or an address that is
/// not a string, which the method table then refuses).
pub fn addressed(method: &str, params: Option<&Value>) -> Option<Address> {
    let addressing = *ADDRESSING.get(method)?;
    let (name, index) = match addressing {
        Addressing::Agent(i) => ("agentId", i),
        Addressing::Message(i) => ("messageId", i),
    };
    let id = match params? {
        Value::Object(map) => map.get(name)?,
        Value::Array(items) => items.get(index)?,
        _ => return None,
    };
    let id = id.as_str()?.to_owned();
    Some(match addressing {
        Addressing::Agent(_) => Address::Agent(id),
        Addressing::Message(_) => Address::Message(id),
    })
}

/// Where a request is answered: [`Route::Local`] for one about no agent (the router is not
/// asked).
pub(super) async fn route(router: &dyn Router, method: &str, params: Option<&Value>) -> Route {
    match addressed(method, params) {
        Some(address) => router.route(method, &address).await,
        None => Route::Local,
    }
}

/// Forwards a checked request (`request`, the client's `id` taken out) to `daemon` and
/// answers the client: the home's response with `id` put back, or `internal` saying why
/// there is none.
pub(super) async fn forward(
    router: &dyn Router,
    daemon: &str,
    id: Value,
    mut request: Map<String, Value>,
) -> String {
    request.insert("id".into(), Value::from(FORWARDED_ID));
    let method = request.get("method").and_then(Value::as_str).unwrap_or("");
    tracing::debug!(method, daemon, "forwarding to the agent's home");
    let body = Value::Object(request).to_string();
    match router.forward(daemon, body).await {
        Ok(response) => with_client_id(&response, id, daemon),
        Err(e) => error_response(id, ErrorKind::Internal, e.message(daemon)),
    }
}

/// The home's `response` with the client's `id`; its result or error is copied as written
/// (not parsed into a tree). What is not a JSON-RPC response is refused, never passed on.
fn with_client_id(response: &str, id: Value, daemon: &str) -> String {
    #[derive(serde::Deserialize)]
    struct Response<'a> {
        jsonrpc: &'a str,
        #[serde(borrow, default, deserialize_with = "present")]
        result: Option<&'a RawValue>,
        #[serde(borrow, default, deserialize_with = "present")]
        error: Option<&'a RawValue>,
    }
    /// A member that is there, `null` included (`"result": null` is a result).
    fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<&'de RawValue>, D::Error> {
        serde::Deserialize::deserialize(d).map(Some)
    }
    let (member, value) = match serde_json::from_str::<Response>(response) {
        Ok(Response {
            jsonrpc: "2.0",
            result: Some(result),
            error: None,
        }) => ("result", result),
        Ok(Response {
            jsonrpc: "2.0",
            result: None,
            error: Some(error),
        }) => ("error", error),
        _ => {
            tracing::error!(daemon, response, "a home daemon's answer is not a response");
            return error_response(
                id,
                ErrorKind::Internal,
                format!(
                    "the agent's home daemon {daemon} answered something that is not a \
                     JSON-RPC response; the request may have run there"
                ),
            );
        }
    };
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"{member}":{}}}"#,
        value.get()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    /// `…Id` params that name no agent and no message of their own: each sits beside the
    /// `agentId` or `messageId` that addresses its method.
    const NOT_ADDRESSES: [&str; 3] = ["clientRequestId", "toolCallId", "userMessageId"];

    fn methods_where(pick: impl Fn(&MethodDescriptor) -> bool) -> BTreeSet<&'static str> {
        METHODS.iter().filter(|m| pick(m)).map(|m| m.name).collect()
    }

    /// The method names the module doc lists after `**label**`, up to the next item.
    fn documented(label: &str) -> BTreeSet<&'static str> {
        let doc: String = include_str!("route.rs")
            .lines()
            .take_while(|l| l.starts_with("//!"))
            .map(|l| l.trim_start_matches("//!"))
            .map(|l| format!("{}\n", l.strip_prefix(' ').unwrap_or(l)))
            .collect();
        let start = doc
            .find(&format!("- **{label}**:"))
            .unwrap_or_else(|| panic!("the module doc has no item {label}"));
        let item = &doc[start + 2..];
        let item = &item[..item
            .find("\n- ")
            .or(item.find("\n\n"))
            .unwrap_or(item.len())];
        item.split('`')
            .skip(1)
            .step_by(2)
            .filter_map(|name| METHODS.iter().find(|m| m.name == name).map(|m| m.name))
            .collect()
    }

    fn takes(m: &MethodDescriptor, name: &str) -> Option<agent_proto::rpc::Presence> {
        m.param(name).map(|p| p.presence)
    }

    /// The module doc's lists are what the table makes of the methods: none is missing,
    /// none is listed twice, a new method is listed (and so decided) or this fails.
    #[test]
    fn the_documented_lists_are_the_tables() {
        use agent_proto::rpc::Presence::Required;
        let call = |m: &MethodDescriptor| m.kind == MethodKind::Call;
        let by_agent = methods_where(|m| call(m) && takes(m, "agentId") == Some(Required));
        let when_named =
            methods_where(|m| call(m) && takes(m, "agentId").is_some_and(|p| p != Required));
        let by_message = methods_where(|m| {
            call(m) && takes(m, "agentId").is_none() && m.param("messageId").is_some()
        });
        let never = methods_where(|m| addressing_of(m).is_none());
        assert_eq!(documented("By agent"), by_agent);
        assert_eq!(documented("By agent when named"), when_named);
        assert_eq!(documented("By message"), by_message);
        assert_eq!(documented("Never forwarded"), never);
        let all: BTreeSet<_> = METHODS.iter().map(|m| m.name).collect();
        let listed = by_agent.len() + when_named.len() + by_message.len() + never.len();
        assert_eq!(listed, all.len(), "a method is in two lists or none");
        assert!(never.contains("subscribe") && never.contains("unsubscribe"));
        assert!(never.contains("createAgent") && never.contains("listAgents"));
    }

    /// A param that might name an agent some other way (`runId`, `sessionId`) makes the
    /// method's author decide here whether it addresses the request.
    #[test]
    fn every_other_id_param_is_known_not_to_address() {
        for method in METHODS {
            for param in method.params {
                let name = param.name;
                if !name.ends_with("Id") || name == "agentId" || name == "messageId" {
                    continue;
                }
                assert!(
                    NOT_ADDRESSES.contains(&name),
                    "{}'s param {name} may name what the request is about: route it in \
                     route.rs (addressing_of) or add it to NOT_ADDRESSES",
                    method.name
                );
                assert!(
                    addressing_of(method).is_some(),
                    "{} takes {name} but is not addressed",
                    method.name
                );
            }
        }
    }

    #[test]
    fn requests_are_addressed_by_their_params() {
        use serde_json::json;
        let agent = |id: &str| Some(Address::Agent(id.into()));
        let message = |id: &str| Some(Address::Message(id.into()));
        let cases: &[(&str, Option<Value>, Option<Address>)] = &[
            ("getAgent", Some(json!({"agentId": "a1"})), agent("a1")),
            ("getAgent", Some(json!(["a1"])), agent("a1")),
            (
                "regenerate",
                Some(json!({"agentId": "a1", "messageId": "m1"})),
                agent("a1"),
            ),
            (
                "handlePermissionResponse",
                Some(json!({"messageId": "m1", "toolCallId": "t", "granted": true})),
                message("m1"),
            ),
            ("answerQuestion", Some(json!(["m2", "t"])), message("m2")),
            ("getUsage", Some(json!({"agentId": "a2"})), agent("a2")),
            ("getUsage", Some(json!({})), None),
            ("getUsage", Some(json!({"agentId": null})), None),
            ("searchMessages", Some(json!(["x", "a3"])), agent("a3")),
            ("getAgent", Some(json!({"agentId": 5})), None),
            ("getAgent", Some(json!([])), None),
            ("getAgent", None, None),
            ("subscribe", Some(json!({"agentId": "a1"})), None),
            ("unsubscribe", Some(json!([1])), None),
            ("createAgent", Some(json!({})), None),
            ("listAgents", Some(json!({})), None),
            ("initialize", Some(json!({})), None),
            ("nope", Some(json!({"agentId": "a1"})), None),
        ];
        for (method, params, expected) in cases {
            assert_eq!(
                &addressed(method, params.as_ref()),
                expected,
                "{method} {params:?}"
            );
        }
    }

    #[test]
    fn the_homes_answer_gets_the_clients_id_or_is_refused() {
        use serde_json::json;
        let result = r#"{"jsonrpc":"2.0","id":0,"result":{"b":[1,2.50],"a":"x"}}"#;
        assert_eq!(
            with_client_id(result, json!(-7), "d2"),
            r#"{"jsonrpc":"2.0","id":-7,"result":{"b":[1,2.50],"a":"x"}}"#
        );
        assert_eq!(
            with_client_id(r#"{"jsonrpc":"2.0","id":0,"result":null}"#, json!(1), "d2"),
            r#"{"jsonrpc":"2.0","id":1,"result":null}"#
        );
        let error = r#"{"error":{"code":-32001,"message":"gone","data":{"kind":"agentNotFound"}},"id":0,"jsonrpc":"2.0"}"#;
        let got: Value = serde_json::from_str(&with_client_id(error, json!("s"), "d2")).unwrap();
        let mut expected: Value = serde_json::from_str(error).unwrap();
        expected["id"] = json!("s");
        assert_eq!(got, expected);
        for bad in [
            "",
            "not json",
            r#"{"jsonrpc":"2.0","id":0}"#,
            r#"{"jsonrpc":"1.0","id":0,"result":1}"#,
            r#"{"jsonrpc":"2.0","id":0,"result":1,"error":{}}"#,
        ] {
            let got: Value = serde_json::from_str(&with_client_id(bad, json!(3), "d2")).unwrap();
            assert_eq!(got["id"], json!(3), "{bad}");
            assert_eq!(got["error"]["data"]["kind"], json!("internal"), "{bad}");
            let message = got["error"]["message"].as_str().unwrap();
            assert!(message.contains("home daemon d2"), "{message}");
        }
    }
}
