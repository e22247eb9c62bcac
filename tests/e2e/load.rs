//! Many clients and limits: 50 clients on 20 agents streaming at once each get every
//! event of their agents in seq order; a client that stops reading harms nobody and can
//! catch up with `sinceSeq`; connection and in-flight limits answer `overloaded`; a limit
//! the daemon cannot work with stops it at start.

use agentd_testkit::send::SendByName;
use std::collections::HashMap;
use std::time::Duration;

use agent_proto::rpc::AgentRpcClient;
use agent_proto::{Event, EventKind};
use agentd_testkit::daemon::{DaemonOptions, TestDaemon, openai_config_with};
use agentd_testkit::events::{assert_seq_contiguous, collect_run};
use agentd_testkit::mock_model::{MockModel, Reply};
use agentd_testkit::raw::{Framing, RawConn};
use serde_json::json;

use crate::common::{bin, new_agent};

const AGENTS: usize = 20;
const CLIENTS: usize = 50;
const CHUNKS: usize = 300;

#[tokio::test]
async fn fifty_clients_on_twenty_agents_get_every_event_and_a_stuck_client_harms_nobody() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start(bin(), &openai_config_with(&mock.url(), "")).await;
    let client = daemon.client().await;
    let mut agents = Vec::new();
    for i in 0..AGENTS {
        agents.push(new_agent(&client, &format!("load {i}")).await.id);
    }
    let parts: Vec<String> = (0..CHUNKS).map(|i| format!("t{i} ")).collect();
    let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
    let expected_text: String = parts.concat();

    // A client that subscribes to everything and then never reads.
    let mut stuck = RawConn::connect(daemon.socket(), Framing::Ndjson).await;
    let reply = stuck.call("subscribe", json!({})).await;
    assert!(!reply["result"].is_null(), "{reply}");

    // 50 clients, each on 4 agents (so every agent has 10 subscribers).
    let mut readers = Vec::new();
    for c in 0..CLIENTS {
        let conn = daemon.client().await;
        let mine: Vec<String> = (0..4)
            .map(|k| agents[(c + k * 5) % AGENTS].clone())
            .collect();
        let mut subs = Vec::new();
        for agent in &mine {
            subs.push(
                conn.subscribe_events(Some(agent.clone()), None, None)
                    .await
                    .unwrap(),
            );
        }
        readers.push(tokio::spawn(async move {
            let mut got: HashMap<String, Vec<Event>> = HashMap::new();
            for (agent, mut sub) in mine.into_iter().zip(subs) {
                got.insert(agent, collect_run(&mut sub, Duration::from_secs(120)).await);
            }
            drop(conn);
            got
        }));
    }
    for _ in 0..AGENTS {
        mock.push(Reply::openai_text(&parts));
    }
    for agent in &agents {
        client.send_plain(agent.clone(), "go".into()).await.unwrap();
    }
    for reader in readers {
        for (agent, events) in reader.await.unwrap() {
            assert_seq_contiguous(&events);
            assert_eq!(
                agentd_testkit::events::text_of(&events),
                expected_text,
                "agent {agent}"
            );
        }
    }

    // The stuck client now reads: what it gets is in order per agent, and it either has
    // everything or was told to resync (or was cut off); with sinceSeq it catches up.
    let mut last_seq: HashMap<String, u64> = HashMap::new();
    let mut told_to_resync = false;
    let cut_off = stuck.is_closed(Duration::from_secs(3)).await;
    for frame in stuck.take_pending() {
        let event: Event = match serde_json::from_value(frame["params"]["result"].clone()) {
            Ok(e) => e,
            Err(_) => continue,
        };
        if matches!(event.kind, EventKind::ResyncRequired { .. }) {
            told_to_resync = true;
            continue;
        }
        let last = last_seq
            .entry(event.agent_id.clone())
            .or_insert(event.seq - 1);
        assert_eq!(
            event.seq,
            *last + 1,
            "a gap for the stuck client on {}",
            event.agent_id
        );
        *last = event.seq;
    }
    eprintln!(
        "stuck client: cut off={cut_off}, resyncRequired={told_to_resync}, saw events of {} agents",
        last_seq.len()
    );
    if !cut_off && !told_to_resync {
        for agent in &agents {
            let last = client.get_session(agent.clone()).await.unwrap().last_seq;
            assert_eq!(
                last_seq.get(agent),
                Some(&last),
                "the stuck client got it all"
            );
        }
    }
    let catch_up = daemon.client().await;
    for agent in &agents {
        let since = last_seq.get(agent).copied().unwrap_or(0);
        let mut sub = catch_up
            .subscribe_events(Some(agent.clone()), Some(since), None)
            .await
            .unwrap();
        let mut sub_events = Vec::new();
        if since < client.get_session(agent.clone()).await.unwrap().last_seq {
            sub_events = collect_run(&mut sub, Duration::from_secs(30)).await;
        }
        if let Some(first) = sub_events.first() {
            assert_eq!(first.seq, since + 1, "replay starts right after sinceSeq");
            assert_seq_contiguous(&sub_events);
        }
    }
}

#[tokio::test]
async fn connection_and_in_flight_limits_answer_overloaded() {
    let mock = MockModel::start().await;
    let extra = "[limits]\nmax_connections = 3\nmax_in_flight_requests = 2\n";
    let daemon = TestDaemon::start(bin(), &openai_config_with(&mock.url(), extra)).await;
    // Take the three slots (a connection the harness used to see the daemon ready may
    // still be closing: retry until it is gone).
    let mut held = Vec::new();
    let mut attempts = 0;
    while held.len() < 3 {
        attempts += 1;
        assert!(attempts < 100, "cannot hold three connections");
        let mut conn = RawConn::connect(daemon.socket(), Framing::Ndjson).await;
        conn.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize"}))
            .await;
        let reply = conn.recv().await;
        if reply["error"]["data"]["kind"] == "overloaded" {
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        }
        assert!(reply["result"].is_object(), "{reply}");
        held.push(conn);
    }
    let mut extra_conn = RawConn::connect(daemon.socket(), Framing::Ndjson).await;
    let reply = extra_conn.recv().await;
    assert_eq!(reply["error"]["data"]["kind"], "overloaded", "{reply}");
    assert!(extra_conn.is_closed(Duration::from_secs(5)).await);

    // two slow requests in flight (the model takes 2 s to answer testProvider), a third
    // is refused at once
    for _ in 0..2 {
        mock.push(Reply::openai_text(&["ok"]).first_byte_delay(Duration::from_secs(2)));
    }
    for conn in held.iter_mut().take(2) {
        conn.send(&json!({"jsonrpc": "2.0", "id": 77, "method": "testProvider", "params": {}}))
            .await;
    }
    mock.wait_requests(2, Duration::from_secs(10)).await;
    let third = held[2].call("listAgents", json!({})).await;
    assert_eq!(third["error"]["data"]["kind"], "overloaded", "{third}");
    for conn in held.iter_mut().take(2) {
        let reply = conn.recv().await;
        assert_eq!(reply["id"], 77);
        assert_eq!(reply["result"]["ok"], true, "{reply}");
    }
    // and once they are done, requests are served again
    let again = held[2].call("listAgents", json!({})).await;
    assert!(again["result"]["agents"].is_array(), "{again}");
}

#[tokio::test]
async fn a_limit_the_daemon_cannot_work_with_stops_it_at_start_naming_the_field() {
    let mock = MockModel::start().await;
    let options = DaemonOptions {
        config_toml: openai_config_with(&mock.url(), "[limits]\nmax_connections = 0\n"),
        env: Vec::new(),
    };
    let Err(failure) = TestDaemon::try_start_with(bin(), options).await else {
        panic!("the daemon started with limits.max_connections = 0");
    };
    assert!(!failure.status.success(), "{}", failure.log);
    assert!(
        failure
            .log
            .contains("invalid config: limits.max_connections must be at least 1, got 0"),
        "{}",
        failure.log
    );
}
