//! What one client can make the daemon hold is bounded: unfinished frames share one budget,
//! batches and subscriptions per connection are capped, and ids the method table cannot
//! carry are refused as invalid requests. Each limit answers an error and the daemon keeps
//! serving everyone else. (Memory itself is measured by hand, never asserted: see
//! docs/security.md section 4.)

use agent_proto::MAX_FRAME_BYTES;
use agentd_testkit::raw::{Framing, RawConn};
use serde_json::{Value, json};

use crate::common::{start, start_with};

fn code_and_kind(reply: &Value) -> (i64, &str) {
    (
        reply["error"]["code"]
            .as_i64()
            .unwrap_or_else(|| panic!("not an error: {reply}")),
        reply["error"]["data"]["kind"].as_str().unwrap_or_default(),
    )
}

/// Two connections each send most of a 3 MiB line and stop; with a 4 MiB budget only one
/// of them can be held. The other gets `overloaded` and its frame is skipped; small requests
/// keep working everywhere, and both connections stay usable.
#[tokio::test]
async fn unfinished_frames_share_one_budget_and_others_keep_working() {
    let (_mock, daemon) = start_with("[limits]\nmax_buffered_input_bytes = 4194304\n").await;
    let mut a = RawConn::connect(daemon.socket(), Framing::Ndjson).await;
    let mut b = RawConn::connect(daemon.socket(), Framing::Ndjson).await;
    let head = |id: u32| {
        let mut line =
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"listAgents","params":{{"search":""#)
                .into_bytes();
        line.extend(std::iter::repeat_n(b'x', 3 << 20));
        line
    };
    a.send_raw(&head(1)).await;
    b.send_raw(&head(2)).await;

    // Exactly one of them is refused: the first frame either gets.
    let (refused, held) = tokio::select! {
        reply = a.recv() => (reply, "b"),
        reply = b.recv() => (reply, "a"),
    };
    assert_eq!(code_and_kind(&refused), (-32007, "overloaded"), "{refused}");
    assert_eq!(refused["id"], Value::Null);
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("4 MiB") && message.contains("skipped"),
        "{message}"
    );
    let (refused_conn, held_conn) = if held == "a" {
        (&mut b, &mut a)
    } else {
        (&mut a, &mut b)
    };

    // Everyone else is served meanwhile.
    let mut c = RawConn::connect(daemon.socket(), Framing::Ndjson).await;
    let reply = c.call("listAgents", json!({})).await;
    assert!(reply["result"]["agents"].is_array(), "{reply}");

    // The refused connection skips the rest of its line, then works.
    refused_conn.send_raw(b"xxx\"}}\n").await;
    let reply = refused_conn.call("listAgents", json!({})).await;
    assert!(reply["result"]["agents"].is_array(), "{reply}");

    // The held frame completes and is answered.
    held_conn.send_raw(b"\"}}\n").await;
    let reply = held_conn.recv().await;
    assert!(reply["result"]["agents"].is_array(), "{reply}");
}

/// A batch over 1,000 entries (the default cap) is refused whole, without running any of
/// it; the issue's 16 MiB batch of notifications gets the same answer.
#[tokio::test]
async fn batches_over_the_cap_are_refused_and_none_of_it_runs() {
    let (_mock, daemon) = start().await;
    let mut conn = RawConn::connect(daemon.socket(), Framing::Ndjson).await;
    let batch = |entry: &str, n: usize| format!("[{}]\n", vec![entry; n].join(",")).into_bytes();

    let create = r#"{"jsonrpc":"2.0","id":1,"method":"createAgent","params":{"title":"x"}}"#;
    conn.send_raw(&batch(create, 1001)).await;
    let reply = conn.recv().await;
    assert_eq!(code_and_kind(&reply), (-32600, "invalidRequest"), "{reply}");
    assert_eq!(reply["id"], Value::Null);
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("more than 1000 requests"),
        "{reply}"
    );
    let agents = conn.call("listAgents", json!({})).await;
    assert_eq!(agents["result"]["agents"], json!([]), "none of it ran");

    // 1,000 is fine.
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"listAgents","params":{"limit":1}}"#;
    conn.send_raw(&batch(list, 1000)).await;
    let reply = conn.recv().await;
    assert_eq!(reply.as_array().map(Vec::len), Some(1000));

    // Notifications up to the frame limit: refused, and the daemon still answers.
    let note = r#"{"jsonrpc":"2.0","method":"listAgents"}"#;
    let n = (MAX_FRAME_BYTES - 16) / (note.len() + 1);
    conn.send_raw(&batch(note, n)).await;
    let reply = conn.recv().await;
    assert_eq!(code_and_kind(&reply), (-32600, "invalidRequest"), "{reply}");
    let reply = conn.call("listAgents", json!({})).await;
    assert!(reply["result"]["agents"].is_array(), "{reply}");
}

/// A connection holds at most `limits.max_subscriptions_per_connection` subscriptions (1,000
/// by default); one more answers `tooManySubscriptions`, other connections are not affected,
/// and an unsubscribe makes room.
#[tokio::test]
async fn subscriptions_per_connection_are_capped() {
    let (_mock, daemon) = start().await;
    let mut conn = RawConn::connect(daemon.socket(), Framing::Ndjson).await;
    let mut ids = Vec::new();
    for _ in 0..1000 {
        let reply = conn.call("subscribe", json!({})).await;
        ids.push(
            reply
                .get("result")
                .cloned()
                .unwrap_or_else(|| panic!("subscription {} refused: {reply}", ids.len() + 1)),
        );
    }
    let reply = conn.call("subscribe", json!({})).await;
    assert_eq!(
        code_and_kind(&reply),
        (-32012, "tooManySubscriptions"),
        "{reply}"
    );
    let message = reply["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("1000") && message.contains("unsubscribe"),
        "{message}"
    );

    let mut other = RawConn::connect(daemon.socket(), Framing::Ndjson).await;
    let reply = other.call("subscribe", json!({})).await;
    assert!(reply.get("result").is_some(), "{reply}");

    let reply = conn
        .call("unsubscribe", json!({"subscription": ids[0]}))
        .await;
    assert_eq!(reply["result"], json!(true), "{reply}");
    let reply = conn.call("subscribe", json!({})).await;
    assert!(reply.get("result").is_some(), "{reply}");
}

/// Ids that are numbers but not integers (or past 64 bits) are invalid requests answered
/// with `id: null`; integer ids, negative ones too, are echoed exactly. Never `internal`.
#[tokio::test]
async fn non_integer_ids_are_refused_and_integers_echoed() {
    let (_mock, daemon) = start().await;
    let mut conn = RawConn::connect(daemon.socket(), Framing::Ndjson).await;
    let cases: &[(&str, Option<&str>)] = &[
        ("1.5", None),
        ("1e29", None),
        ("-0", None),
        ("2.0", None),
        ("123456789012345678901234567890", None),
        ("-5", Some("-5")),
        ("18446744073709551615", Some("18446744073709551615")),
        ("\"7\"", Some("\"7\"")),
    ];
    for (id, echoed) in cases {
        let frame = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"listAgents"}}"#);
        conn.send_raw(format!("{frame}\n").as_bytes()).await;
        let reply = conn.recv().await;
        match echoed {
            Some(echoed) => {
                assert_eq!(reply["id"], serde_json::from_str::<Value>(echoed).unwrap());
                assert!(reply["result"]["agents"].is_array(), "{id}: {reply}");
            }
            None => {
                assert_eq!(
                    code_and_kind(&reply),
                    (-32600, "invalidRequest"),
                    "{id}: {reply}"
                );
                assert_eq!(reply["id"], Value::Null, "{id}");
            }
        }
    }
    // Content-Length framing and a batch: the same per entry.
    let mut cl = RawConn::connect(daemon.socket(), Framing::ContentLength).await;
    let body = r#"[{"jsonrpc":"2.0","id":1e29,"method":"listAgents"},{"jsonrpc":"2.0","id":-1,"method":"listAgents"}]"#;
    cl.send_raw(format!("Content-Length: {}\r\n\r\n{body}", body.len()).as_bytes())
        .await;
    let reply = cl.recv().await;
    assert_eq!(
        code_and_kind(&reply[0]),
        (-32600, "invalidRequest"),
        "{reply}"
    );
    assert_eq!(reply[0]["id"], Value::Null);
    assert_eq!(reply[1]["id"], json!(-1), "{reply}");
    assert!(reply[1]["result"]["agents"].is_array(), "{reply}");
}
