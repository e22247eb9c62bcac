//! Hostile input: thousands of random, truncated and wrong frames (random bytes, broken
//! JSON, wrong types, deep nesting, giant strings, unknown ids, batches, interleaved
//! cancels) from several connections at once; afterwards the daemon still answers, every
//! stored message is intact, and the database passes `PRAGMA integrity_check`.

use std::time::{Duration, Instant};

use agent_proto::rpc::AgentRpcClient;
use agentd_testkit::mock_model::Reply;
use agentd_testkit::raw::{Framing, RawConn};
use agentd_testkit::rng::Rng;
use serde_json::{Value, json};

use crate::common::{messages, new_agent, send_and_collect, start};

/// One hostile frame (one NDJSON line, without its newline) and whether the daemon must
/// answer it (requests with an id; notifications and garbage that parses as a
/// notification get no answer).
fn hostile_frame(rng: &mut Rng, agent_id: &str) -> Vec<u8> {
    let id = rng.below(1_000_000);
    let value = match rng.below(12) {
        // random bytes (no newline)
        0 => {
            return (0..rng.below(200))
                .map(|_| match rng.next_u64() as u8 {
                    b'\n' => b' ',
                    b => b,
                })
                .collect();
        }
        // a valid request cut short
        1 => {
            let text =
                json!({"jsonrpc": "2.0", "id": id, "method": "listAgents", "params": {"limit": 3}})
                    .to_string();
            let cut = rng.below(text.len());
            return text.as_bytes()[..cut].to_vec();
        }
        // wrong types
        2 => {
            json!({"jsonrpc": "2.0", "id": id, "method": "getAgent", "params": {"agentId": rng.next_u64() % 100}})
        }
        3 => {
            json!({"jsonrpc": "2.0", "id": id, "method": "sendMessage", "params": {"agentId": agent_id, "content": {"x": [1, 2]}}})
        }
        4 => json!({"jsonrpc": 2, "id": [id], "method": 5}),
        // deep nesting
        5 => {
            let depth = 200 + rng.below(5000);
            let mut text = "[".repeat(depth);
            text.push_str(&"]".repeat(depth));
            return format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"listAgents","params":{text}}}"#
            )
            .into_bytes();
        }
        // a giant string where a short one belongs
        6 => {
            json!({"jsonrpc": "2.0", "id": id, "method": "getAgent", "params": {"agentId": "x".repeat(100_000 + rng.below(400_000))}})
        }
        // unknown ids
        7 => {
            json!({"jsonrpc": "2.0", "id": id, "method": "listMessages", "params": {"agentId": format!("{:x}", rng.next_u64())}})
        }
        8 => {
            json!({"jsonrpc": "2.0", "id": id, "method": "handlePermissionResponse", "params": {"messageId": "nope", "toolCallId": "nope", "granted": true}})
        }
        // interleaved cancels of the real agent
        9 => {
            json!({"jsonrpc": "2.0", "id": id, "method": "cancelLoop", "params": {"agentId": agent_id}})
        }
        // batches, with an empty one now and then
        10 => {
            let n = rng.below(5);
            Value::Array(
                (0..n)
                    .map(|i| json!({"jsonrpc": "2.0", "id": i, "method": if i % 2 == 0 { "getSession" } else { "bogus" }, "params": {"agentId": agent_id}}))
                    .collect(),
            )
        }
        // unknown method, or an unsubscribe of someone else's subscription
        _ => {
            json!({"jsonrpc": "2.0", "id": id, "method": if rng.below(2) == 0 { "rm -rf /" } else { "unsubscribe" }, "params": {"subscription": "999"}})
        }
    };
    value.to_string().into_bytes()
}

#[tokio::test]
async fn thousands_of_hostile_frames_lose_nothing_and_the_daemon_still_answers() {
    let (mock, mut daemon) = start().await;
    let client = daemon.client().await;
    let agent = new_agent(&client, "precious").await;
    for turn in 0..3 {
        mock.push(Reply::openai_text(&[&format!("answer {turn}")]));
        send_and_collect(&client, &agent.id, &format!("question {turn}")).await;
    }
    let before = messages(&client, &agent.id).await;
    assert_eq!(before.len(), 6);

    let started = Instant::now();
    let mut tasks = Vec::new();
    for conn_no in 0..4u64 {
        let socket = daemon.socket().to_owned();
        let agent_id = agent.id.clone();
        tasks.push(tokio::spawn(async move {
            let mut rng = Rng(0xA5A5_5A5A_1234_5678 ^ (conn_no + 1).wrapping_mul(0x9E37_79B9));
            let mut conn = RawConn::connect(&socket, Framing::Ndjson).await;
            let mut sent = 0;
            for _ in 0..750 {
                let mut frame = hostile_frame(&mut rng, &agent_id);
                frame.push(b'\n');
                if conn.try_send_raw(&frame).await.is_err() {
                    break; // the daemon may drop a connection that sends garbage; fine
                }
                sent += 1;
                // drain what has come back so far, without waiting
                while conn.try_recv(Duration::from_millis(0)).await.is_some() {}
            }
            // Frames are handled in order per connection: once the answer to this one
            // arrives, every frame before it (cancels included) has been handled.
            let end = json!({"jsonrpc": "2.0", "id": "end", "method": "initialize"});
            if conn
                .try_send_raw(format!("{end}\n").as_bytes())
                .await
                .is_ok()
            {
                loop {
                    let frame = conn
                        .try_recv(Duration::from_secs(60))
                        .await
                        .expect("the daemon answers the last frame");
                    if frame["id"] == "end" {
                        break;
                    }
                }
            }
            sent
        }));
    }
    let mut total = 0;
    for task in tasks {
        total += task.await.unwrap();
    }
    eprintln!(
        "sent {total} hostile frames on 4 connections in {:?}",
        started.elapsed()
    );
    assert!(total >= 1000, "only {total} frames went out");

    // a fresh connection is served, and nothing stored changed
    let mut fresh = RawConn::connect(daemon.socket(), Framing::ContentLength).await;
    let reply = fresh
        .call("initialize", json!({"clientName": "after"}))
        .await;
    assert!(reply["result"]["serverVersion"].is_string(), "{reply}");
    let client = daemon.client().await;
    let after = messages(&client, &agent.id).await;
    for (a, b) in before.iter().zip(&after) {
        assert_eq!(a, b, "a stored message changed");
    }
    assert_eq!(after.len(), before.len());
    mock.push(Reply::openai_text(&["still here"]));
    let (_, events) = send_and_collect(&client, &agent.id, "are you ok?").await;
    assert_eq!(agentd_testkit::events::text_of(&events), "still here");
    let agents = client
        .list_agents(None, Some(100), None, None, None)
        .await
        .unwrap()
        .agents;
    assert!(agents.iter().any(|a| a.id == agent.id));

    // the database is sound
    drop(client);
    daemon.terminate().await;
    assert_eq!(crate::common::integrity_check(&daemon).await, "ok");
}
