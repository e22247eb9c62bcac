use super::*;
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
