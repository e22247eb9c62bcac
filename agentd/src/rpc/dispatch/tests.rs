use super::*;
use crate::rpc::route;
use jsonrpsee::RpcModule;
use serde_json::json;

fn dispatcher() -> Dispatcher {
    dispatcher_with(1000, 1000)
}

/// Subscriptions of all agents of a hub nobody emits on; an agent id is not found.
struct Hub(Arc<crate::session::events::EventHub>);

impl EventSource for Hub {
    fn subscribe(
        &self,
        agent_id: Option<String>,
        _since: Option<u64>,
        _snapshot: bool,
    ) -> BoxFuture<'_, Result<PendingSubscription, ErrorObjectOwned>> {
        Box::pin(async move {
            match agent_id {
                None => Ok(self.0.subscribe_all()),
                Some(id) => Err(crate::session::SessionError::AgentNotFound(id).into()),
            }
        })
    }
}

/// An outbox that takes everything and keeps nothing.
struct Nowhere;

impl Outbox for Nowhere {
    fn deliver(&self, _: u64, _: &Arc<crate::session::events::EmittedEvent>) -> bool {
        true
    }
    fn behind(&self, _: u64) {}
    fn ended(&self, _: u64) {}
    fn notify(&self, _: String) {}
}

trait Connect {
    fn connect(&self) -> ConnectionRpc;
}

impl Connect for Dispatcher {
    fn connect(&self) -> ConnectionRpc {
        self.connection(Arc::new(Nowhere))
    }
}

/// `echo` returns its params; `subscribe` is the dispatcher's own.
fn dispatcher_with(max_batch: usize, max_subscriptions: usize) -> Dispatcher {
    let mut module = RpcModule::new(());
    module
        .register_method("echo", |params, _, _| params.parse::<Value>())
        .unwrap();
    Dispatcher::new(
        module.into(),
        Arc::new(Hub(Arc::new(crate::session::events::EventHub::new()))),
        DispatchLimits {
            max_in_flight: 4,
            request_timeout: Duration::from_secs(5),
            max_batch,
            max_subscriptions,
        },
        crate::metrics::Metrics::new(),
    )
}

async fn reply(frame: &str) -> Option<Value> {
    let mut conn = dispatcher().connect();
    conn.handle_frame(frame.as_bytes())
        .await
        .response
        .map(|r| serde_json::from_str(&r).unwrap())
}

#[tokio::test]
async fn envelopes() {
    let cases: &[(&str, Option<Value>)] = &[
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"echo","params":{"a":1}}"#,
            Some(json!({"jsonrpc":"2.0","id":1,"result":{"a":1}})),
        ),
        // omitted params mean {}
        (
            r#"{"jsonrpc":"2.0","id":"x","method":"echo"}"#,
            Some(json!({"jsonrpc":"2.0","id":"x","result":{}})),
        ),
        // notifications get no answer
        (r#"{"jsonrpc":"2.0","method":"echo"}"#, None),
        (
            r#"{"jsonrpc":"2.0","id":2,"method":"nope"}"#,
            Some(
                json!({"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"method \"nope\" not found; initialize lists the methods","data":{"kind":"methodNotFound"}}}),
            ),
        ),
    ];
    for (frame, expected) in cases {
        assert_eq!(&reply(frame).await, expected, "{frame}");
    }
}

#[tokio::test]
async fn invalid_requests_have_kinds() {
    let cases: &[(&str, i64, &str)] = &[
        ("{not json", -32700, "parseError"),
        ("[]", -32600, "invalidRequest"),
        ("42", -32600, "invalidRequest"),
        (r#"{"id":1,"method":"echo"}"#, -32600, "invalidRequest"),
        (
            r#"{"jsonrpc":"2.0","id":{},"method":"echo"}"#,
            -32600,
            "invalidRequest",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":7}"#,
            -32600,
            "invalidRequest",
        ),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"echo","params":"x"}"#,
            -32602,
            "invalidParams",
        ),
    ];
    for (frame, code, kind) in cases {
        let r = reply(frame).await.unwrap();
        assert_eq!(r["error"]["code"], json!(code), "{frame}: {r}");
        assert_eq!(r["error"]["data"]["kind"], json!(kind), "{frame}: {r}");
        assert!(r["error"]["message"].as_str().unwrap().len() > 5);
    }
}

#[tokio::test]
async fn batches_answer_in_one_array_without_notifications() {
    let r = reply(
        r#"[{"jsonrpc":"2.0","id":1,"method":"echo","params":{"n":1}},
            {"jsonrpc":"2.0","method":"echo"},
            {"bad":true},
            {"jsonrpc":"2.0","id":2,"method":"echo","params":{"n":2}}]"#,
    )
    .await
    .unwrap();
    let items = r.as_array().unwrap();
    assert_eq!(items.len(), 3);
    assert_eq!(items[0]["result"], json!({"n": 1}));
    assert_eq!(items[1]["error"]["code"], json!(-32600));
    assert_eq!(items[2]["result"], json!({"n": 2}));
    assert_eq!(reply(r#"[{"jsonrpc":"2.0","method":"echo"}]"#).await, None);
}

#[tokio::test]
async fn foreign_subscriptions_cannot_be_unsubscribed() {
    let r =
        reply(r#"{"jsonrpc":"2.0","id":1,"method":"unsubscribe","params":{"subscription":123}}"#)
            .await
            .unwrap();
    assert_eq!(r, json!({"jsonrpc":"2.0","id":1,"result":false}));
}

/// Every id is echoed exactly or refused as an invalid request with `id: null`; none
/// reaches the method table in a form it cannot answer (which used to be `internal`).
#[tokio::test]
async fn ids_are_echoed_exactly_or_refused() {
    // (id as sent, Some(id echoed) or None for -32600 with id null)
    let cases: &[(&str, Option<&str>)] = &[
        ("1", Some("1")),
        ("0", Some("0")),
        ("18446744073709551615", Some("18446744073709551615")),
        ("-1", Some("-1")),
        ("-9223372036854775808", Some("-9223372036854775808")),
        ("\"1.5\"", Some("\"1.5\"")),
        ("null", Some("null")),
        ("1.5", None),
        ("1e29", None),
        ("1E2", None),
        ("-0", None),
        ("1.0", None),
        ("-0.0", None),
        ("18446744073709551616", None),
        ("-9223372036854775809", None),
        ("123456789012345678901234567890", None),
    ];
    for (id, echoed) in cases {
        let frame = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"echo","params":{{"a":1}}}}"#);
        let r = reply(&frame).await.unwrap();
        match echoed {
            Some(echoed) => {
                let expected: Value = serde_json::from_str(echoed).unwrap();
                assert_eq!(r["id"], expected, "{id}: {r}");
                assert_eq!(r["result"], json!({"a": 1}), "{id}: {r}");
                // Exactly: the digits come back as sent.
                let raw = dispatcher()
                    .connect()
                    .handle_frame(frame.as_bytes())
                    .await
                    .response
                    .unwrap();
                assert!(raw.contains(&format!("\"id\":{echoed}")), "{id}: {raw}");
            }
            None => {
                assert_eq!(r["id"], Value::Null, "{id}: {r}");
                assert_eq!(r["error"]["code"], json!(-32600), "{id}: {r}");
                assert_eq!(r["error"]["data"]["kind"], json!("invalidRequest"), "{r}");
            }
        }
    }
    // A number past f64 is not JSON this parser reads: a parse error, not internal.
    let r = reply(r#"{"jsonrpc":"2.0","id":1e400,"method":"echo"}"#)
        .await
        .unwrap();
    assert_eq!(r["error"]["code"], json!(-32700), "{r}");
    // In a batch, each entry on its own.
    let r = reply(
        r#"[{"jsonrpc":"2.0","id":2.5,"method":"echo"},{"jsonrpc":"2.0","id":-7,"method":"echo"},{"jsonrpc":"2.0","id":-3,"method":"nope"}]"#,
    )
    .await
    .unwrap();
    assert_eq!(r[0]["error"]["code"], json!(-32600), "{r}");
    assert_eq!(r[0]["id"], Value::Null, "{r}");
    assert_eq!(
        (r[1]["id"].clone(), r[1]["result"].clone()),
        (json!(-7), json!({}))
    );
    assert_eq!(
        (r[2]["id"].clone(), r[2]["error"]["code"].clone()),
        (json!(-3), json!(-32601))
    );
}

#[tokio::test]
async fn batches_over_the_cap_are_refused_whole() {
    let batch = |n: usize| {
        let entry = r#"{"jsonrpc":"2.0","id":1,"method":"echo"}"#;
        format!("[{}]", vec![entry; n].join(","))
    };
    let mut conn = dispatcher_with(3, 10).connect();
    let r = conn
        .handle_frame(batch(3).as_bytes())
        .await
        .response
        .unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&r)
            .unwrap()
            .as_array()
            .unwrap()
            .len(),
        3
    );
    for frame in [
        batch(4),
        batch(100_000),
        format!("{} ,,, not json", &batch(5)[..200]),
    ] {
        let r = conn.handle_frame(frame.as_bytes()).await.response.unwrap();
        let r: Value = serde_json::from_str(&r).unwrap();
        assert_eq!(r["error"]["code"], json!(-32600), "{r}");
        assert_eq!(r["id"], Value::Null);
        let message = r["error"]["message"].as_str().unwrap();
        assert!(message.contains("more than 3 requests"), "{message}");
    }
    // Broken JSON within the cap is still a parse error; a deeply nested entry is one
    // entry's parse error.
    let r = reply(r#"[{"jsonrpc":"2.0","id":1,"method":"echo"}, {"#)
        .await
        .unwrap();
    assert_eq!(r["error"]["code"], json!(-32700), "{r}");
    let deep = format!(
        r#"[{}, {{"jsonrpc":"2.0","id":2,"method":"echo"}}]"#,
        "[".repeat(1000) + &"]".repeat(1000)
    );
    let r = reply(&deep).await.unwrap();
    assert_eq!(r[0]["error"]["code"], json!(-32700), "{r}");
    assert_eq!(r[1]["id"], json!(2), "{r}");
}

#[tokio::test]
async fn subscriptions_per_connection_are_capped_while_they_live() {
    let subscribe = r#"{"jsonrpc":"2.0","id":1,"method":"subscribe"}"#;
    let dispatcher = dispatcher_with(1000, 2);
    let mut conn = dispatcher.connect();
    let mut live = Vec::new();
    for _ in 0..2 {
        let reply = conn.handle_frame(subscribe.as_bytes()).await;
        assert_eq!(reply.subscriptions.len(), 1, "{:?}", reply.response);
        live.extend(reply.subscriptions);
    }
    let refused = conn.handle_frame(subscribe.as_bytes()).await;
    assert!(refused.subscriptions.is_empty());
    let r: Value = serde_json::from_str(&refused.response.unwrap()).unwrap();
    assert_eq!(r["error"]["code"], json!(-32012), "{r}");
    assert_eq!(
        r["error"]["data"]["kind"],
        json!("tooManySubscriptions"),
        "{r}"
    );
    assert_eq!(r["id"], json!(1));
    // Another connection has its own count.
    let other = dispatcher
        .connect()
        .handle_frame(subscribe.as_bytes())
        .await;
    assert_eq!(other.subscriptions.len(), 1);
    // A subscription whose stream ended no longer counts...
    drop(live.pop());
    let reply = conn.handle_frame(subscribe.as_bytes()).await;
    assert_eq!(reply.subscriptions.len(), 1, "{:?}", reply.response);
    live.extend(reply.subscriptions);
    // ...nor does one the client unsubscribed.
    let full = conn
        .handle_frame(subscribe.as_bytes())
        .await
        .response
        .unwrap();
    assert!(full.contains("-32012"), "{full}");
    let ids: Vec<u64> = conn.subscriptions.keys().copied().collect();
    let frame = format!(
        r#"{{"jsonrpc":"2.0","id":5,"method":"unsubscribe","params":{{"subscription":{}}}}}"#,
        ids[0]
    );
    let r = conn.handle_frame(frame.as_bytes()).await.response.unwrap();
    assert!(r.contains("\"result\":true"), "{r}");
    let reply = conn.handle_frame(subscribe.as_bytes()).await;
    assert_eq!(reply.subscriptions.len(), 1, "{:?}", reply.response);
}

/// Every error response is counted by its `data.kind`, wherever it was built: the
/// envelope check, the parser, jsonrpsee's own answers, a method's error, `subscribe`;
/// results count nothing.
#[tokio::test]
async fn error_responses_are_counted_by_kind() {
    let dispatcher = dispatcher();
    let mut conn = dispatcher.connect();
    for frame in [
        r#"{"jsonrpc":"2.0","id":1,"method":"echo","params":{"a":1}}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"nope"}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"nope"}"#,
        r#"{"jsonrpc":"2.0","id":4}"#,
        "{not json",
        r#"{"jsonrpc":"2.0","id":5,"method":"subscribe","params":{"agentId":"gone"}}"#,
        r#"{"jsonrpc":"2.0","id":6,"method":"subscribe","params":{}}"#,
        r#"[{"jsonrpc":"2.0","id":7,"method":"nope"},{"jsonrpc":"2.0","id":8,"method":"echo"}]"#,
    ] {
        conn.handle_frame(frame.as_bytes()).await;
    }
    let text = dispatcher.metrics().render().await;
    let count = |kind: &str| {
        crate::metrics::value_of(
            &text,
            &format!("agentd_rpc_errors_total{{kind=\"{kind}\"}}"),
        )
    };
    assert_eq!(count("methodNotFound"), Some(3.0), "{text}");
    assert_eq!(count("invalidRequest"), Some(1.0), "{text}");
    assert_eq!(count("parseError"), Some(1.0), "{text}");
    assert_eq!(count("agentNotFound"), Some(1.0), "{text}");
    assert_eq!(count("invalidParams"), Some(0.0), "{text}");
}

/// A router that says where each agent or message lives, answers every forward with
/// `home_answer` (or `failure` for daemon `d3`), and records what it was asked.
#[derive(Default)]
struct FakeRouter {
    routes: HashMap<&'static str, Route>,
    asked: std::sync::Mutex<Vec<route::Address>>,
    forwarded: std::sync::Mutex<Vec<(String, Value)>>,
}

const HOME_ANSWER: &str = r#"{"jsonrpc":"2.0","id":0,"result":{"answeredBy":"d2","n":[1,2.50]}}"#;

impl FakeRouter {
    fn new() -> Arc<FakeRouter> {
        let routes = HashMap::from([
            ("here", Route::Local),
            ("there", Route::Forward("d2".into())),
            ("m-there", Route::Forward("d2".into())),
            ("silent", Route::Forward("d3".into())),
            (
                "nowhere",
                Route::Refuse(ErrorKind::NotSupported, "no live daemon on host h".into()),
            ),
        ]);
        Arc::new(FakeRouter {
            routes,
            ..FakeRouter::default()
        })
    }

    fn asked(&self) -> Vec<route::Address> {
        self.asked.lock().unwrap().clone()
    }

    fn forwarded(&self) -> Vec<(String, Value)> {
        self.forwarded.lock().unwrap().clone()
    }
}

impl Router for FakeRouter {
    fn route<'a>(&'a self, _: &'a str, address: &'a route::Address) -> BoxFuture<'a, Route> {
        self.asked.lock().unwrap().push(address.clone());
        let (route::Address::Agent(id) | route::Address::Message(id)) = address;
        let route = self
            .routes
            .get(id.as_str())
            .cloned()
            .unwrap_or(Route::Local);
        Box::pin(async move { route })
    }

    fn forward<'a>(
        &'a self,
        to: &'a str,
        request: String,
    ) -> BoxFuture<'a, Result<String, route::ForwardError>> {
        let body: Value = serde_json::from_str(&request).unwrap();
        self.forwarded.lock().unwrap().push((to.to_owned(), body));
        Box::pin(async move {
            match to {
                "d3" => Err(route::ForwardError::NoAnswer(Duration::from_secs(30))),
                _ => Ok(HOME_ANSWER.to_owned()),
            }
        })
    }
}

/// The stand-in table with methods of the protocol's names (each echoes its params), and
/// `router`.
fn routed(router: &Arc<FakeRouter>) -> Dispatcher {
    let mut module = RpcModule::new(());
    for name in [
        "getAgent",
        "getUsage",
        "listAgents",
        "handlePermissionResponse",
    ] {
        module
            .register_method(name, |params, _, _| params.parse::<Value>())
            .unwrap();
    }
    Dispatcher::new(
        module.into(),
        Arc::new(Hub(Arc::new(crate::session::events::EventHub::new()))),
        DispatchLimits {
            max_in_flight: 4,
            request_timeout: Duration::from_secs(5),
            max_batch: 100,
            max_subscriptions: 10,
        },
        crate::metrics::Metrics::new(),
    )
    .with_router(router.clone())
}

async fn ask(dispatcher: &Dispatcher, frame: &str) -> String {
    dispatcher
        .connect()
        .handle_frame(frame.as_bytes())
        .await
        .response
        .unwrap()
}

fn get_agent(id: &str, agent: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"getAgent","params":{{"agentId":"{agent}"}}}}"#)
}

#[tokio::test]
async fn a_request_about_a_local_agent_runs_here() {
    let router = FakeRouter::new();
    let r = ask(&routed(&router), &get_agent("1", "here")).await;
    let r: Value = serde_json::from_str(&r).unwrap();
    assert_eq!(
        r,
        json!({"jsonrpc":"2.0","id":1,"result":{"agentId":"here"}})
    );
    assert_eq!(router.asked(), [route::Address::Agent("here".into())]);
    assert!(router.forwarded().is_empty());
}

/// The client gets exactly the home's answer with its own id, whatever the id; the home
/// gets the method and params as sent, with the forwarder's id.
#[tokio::test]
async fn a_forwarded_request_is_answered_by_the_home_with_the_callers_id() {
    let router = FakeRouter::new();
    let dispatcher = routed(&router);
    for id in ["7", "\"s-1\"", "-5", "null", "18446744073709551615"] {
        let raw = ask(&dispatcher, &get_agent(id, "there")).await;
        assert!(raw.contains(&format!("\"id\":{id}")), "{id}: {raw}");
        let mut expected: Value = serde_json::from_str(HOME_ANSWER).unwrap();
        expected["id"] = serde_json::from_str(id).unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&raw).unwrap(),
            expected,
            "{id}"
        );
        // The result as the home wrote it, byte for byte.
        assert!(
            raw.contains(r#""result":{"answeredBy":"d2","n":[1,2.50]}"#),
            "{raw}"
        );
    }
    let forwarded = router.forwarded();
    assert_eq!(forwarded.len(), 5);
    for (to, body) in forwarded {
        assert_eq!(to, "d2");
        assert_eq!(
            body,
            json!({"jsonrpc":"2.0","id":0,"method":"getAgent","params":{"agentId":"there"}})
        );
    }
    // Params with more in them travel unchanged.
    let frame = r#"{"jsonrpc":"2.0","id":3,"method":"getUsage","params":{"agentId":"there"}}"#;
    ask(&dispatcher, frame).await;
    let (_, body) = router.forwarded().pop().unwrap();
    assert_eq!(body["method"], json!("getUsage"));
    assert_eq!(body["params"], json!({"agentId":"there"}));
}

#[tokio::test]
async fn a_refused_route_or_a_failed_forward_answers_an_error() {
    let router = FakeRouter::new();
    let dispatcher = routed(&router);
    let r: Value =
        serde_json::from_str(&ask(&dispatcher, &get_agent("1", "nowhere")).await).unwrap();
    assert_eq!(r["id"], json!(1));
    assert_eq!(r["error"]["data"]["kind"], json!("notSupported"), "{r}");
    assert_eq!(r["error"]["message"], json!("no live daemon on host h"));
    let r: Value =
        serde_json::from_str(&ask(&dispatcher, &get_agent("-2", "silent")).await).unwrap();
    assert_eq!(r["id"], json!(-2));
    assert_eq!(r["error"]["data"]["kind"], json!("internal"), "{r}");
    let message = r["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("home daemon d3 did not answer within 30 s"),
        "{message}"
    );
    assert!(router.forwarded().iter().all(|(to, _)| to == "d3"));
    let text = dispatcher.metrics().render().await;
    let count = |kind: &str| {
        crate::metrics::value_of(
            &text,
            &format!("agentd_rpc_errors_total{{kind=\"{kind}\"}}"),
        )
    };
    assert_eq!(count("notSupported"), Some(1.0), "{text}");
    assert_eq!(count("internal"), Some(1.0), "{text}");
}

/// Requests about no agent never reach the router, nor do subscriptions (served here).
#[tokio::test]
async fn requests_about_no_agent_are_never_routed() {
    let router = FakeRouter::new();
    let dispatcher = routed(&router);
    let mut conn = dispatcher.connect();
    for frame in [
        r#"{"jsonrpc":"2.0","id":1,"method":"listAgents","params":{}}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"getUsage"}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"getUsage","params":{"agentId":null}}"#,
        r#"{"jsonrpc":"2.0","id":4,"method":"subscribe","params":{"agentId":"there"}}"#,
        r#"{"jsonrpc":"2.0","id":5,"method":"subscribe"}"#,
        r#"{"jsonrpc":"2.0","id":6,"method":"unsubscribe","params":{"subscription":1}}"#,
        r#"{"jsonrpc":"2.0","id":7,"method":"initialize"}"#,
        // A notification is dropped before routing, an invalid request refused.
        r#"{"jsonrpc":"2.0","method":"getAgent","params":{"agentId":"there"}}"#,
        r#"{"jsonrpc":"2.0","id":8,"method":"getAgent","params":{"agentId":5}}"#,
    ] {
        conn.handle_frame(frame.as_bytes()).await;
    }
    assert_eq!(router.asked(), []);
    assert!(router.forwarded().is_empty());
}

#[tokio::test]
async fn a_request_by_message_is_routed_by_its_message() {
    let router = FakeRouter::new();
    let frame = r#"{"jsonrpc":"2.0","id":"p","method":"handlePermissionResponse","params":{"messageId":"m-there","toolCallId":"t1","granted":true}}"#;
    let r: Value = serde_json::from_str(&ask(&routed(&router), frame).await).unwrap();
    assert_eq!(r["id"], json!("p"));
    assert_eq!(r["result"]["answeredBy"], json!("d2"), "{r}");
    assert_eq!(router.asked(), [route::Address::Message("m-there".into())]);
    let (_, body) = router.forwarded().pop().unwrap();
    assert_eq!(body["method"], json!("handlePermissionResponse"));
    assert_eq!(
        body["params"],
        json!({"messageId":"m-there","toolCallId":"t1","granted":true})
    );
}

#[tokio::test]
async fn each_entry_of_a_batch_is_routed_on_its_own() {
    let router = FakeRouter::new();
    let batch = format!(
        "[{},{},{},{}]",
        get_agent("1", "here"),
        get_agent("2", "there"),
        r#"{"jsonrpc":"2.0","id":3,"method":"listAgents"}"#,
        get_agent("4", "nowhere"),
    );
    let r: Value = serde_json::from_str(&ask(&routed(&router), &batch).await).unwrap();
    assert_eq!(
        r[0],
        json!({"jsonrpc":"2.0","id":1,"result":{"agentId":"here"}})
    );
    assert_eq!(r[1]["id"], json!(2));
    assert_eq!(r[1]["result"]["answeredBy"], json!("d2"), "{r}");
    assert_eq!(r[2]["result"], json!({}), "{r}");
    assert_eq!(r[3]["error"]["data"]["kind"], json!("notSupported"), "{r}");
    let agent = |id: &str| route::Address::Agent(id.into());
    assert_eq!(
        router.asked(),
        [agent("here"), agent("there"), agent("nowhere")]
    );
    assert_eq!(router.forwarded().len(), 1);
}

/// The home runs a forwarded request as a client's (same checks, same table) without
/// asking the router again, and refuses what is never forwarded.
#[tokio::test]
async fn a_forwarded_request_runs_here_without_routing_again() {
    let router = FakeRouter::new();
    let dispatcher = routed(&router);
    // The router would send "there" on to d2: the home does not ask.
    let r = dispatcher.execute_forwarded(&get_agent("0", "there")).await;
    let r: Value = serde_json::from_str(&r).unwrap();
    assert_eq!(
        r,
        json!({"jsonrpc":"2.0","id":0,"result":{"agentId":"there"}})
    );
    let r = dispatcher.execute_forwarded(&get_agent("-3", "x")).await;
    assert!(r.contains(r#""id":-3"#), "{r}");
    let refused: &[(&str, &str)] = &[
        (
            r#"{"jsonrpc":"2.0","id":0,"method":"subscribe","params":{"agentId":"there"}}"#,
            "invalidRequest",
        ),
        (
            r#"{"jsonrpc":"2.0","id":0,"method":"unsubscribe","params":{"subscription":1}}"#,
            "invalidRequest",
        ),
        (
            r#"{"jsonrpc":"2.0","id":0,"method":"listAgents"}"#,
            "invalidRequest",
        ),
        (
            r#"{"jsonrpc":"2.0","method":"getAgent","params":{"agentId":"a"}}"#,
            "invalidRequest",
        ),
        (
            r#"[{"jsonrpc":"2.0","id":0,"method":"getAgent","params":{"agentId":"a"}}]"#,
            "invalidRequest",
        ),
        (
            r#"{"jsonrpc":"2.0","id":0,"method":"getAgent","params":{"agentId":"a","x":1}}"#,
            "invalidParams",
        ),
        ("{", "parseError"),
    ];
    for (request, kind) in refused {
        let r: Value = serde_json::from_str(&dispatcher.execute_forwarded(request).await).unwrap();
        assert_eq!(r["error"]["data"]["kind"], json!(kind), "{request}: {r}");
    }
    let r = dispatcher
        .execute_forwarded(r#"{"jsonrpc":"2.0","id":0,"method":"subscribe"}"#)
        .await;
    assert!(r.contains("not forwarded"), "{r}");
    assert_eq!(router.asked(), []);
    assert!(router.forwarded().is_empty());
}
