//! A client that reconnects with sinceSeq gets exactly the events it missed.

use agentd_testkit::send::SendByName;
use std::time::Duration;

use agent_proto::Event;
use agent_proto::rpc::AgentRpcClient;
use agentd_testkit::events::{collect_run, text_of};
use agentd_testkit::mock_model::Reply;

use crate::common::{new_agent, start};

#[tokio::test]
async fn reconnect_with_since_seq_replays_exactly_the_missed_events() {
    let (mock, daemon) = start().await;
    let watcher = daemon.client().await;
    let agent = new_agent(&watcher, "replay").await;
    // A subscriber that stays connected the whole time: the reference transcript.
    let mut reference = watcher
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();

    let flaky = daemon.client().await;
    let mut sub = flaky
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    mock.push(Reply::openai_text(&["first"]));
    watcher
        .send_plain(agent.id.clone(), "one".into())
        .await
        .unwrap();
    let before: Vec<Event> = collect_run(&mut sub, Duration::from_secs(10)).await;
    let last_seen = before.last().unwrap().seq;
    let mut expected: Vec<Event> = collect_run(&mut reference, Duration::from_secs(10)).await;
    assert_eq!(expected, before);
    drop(sub);
    drop(flaky);

    // Two runs happen while the flaky client is away.
    for text in ["second", "third"] {
        mock.push(Reply::openai_text(&[text]));
        watcher
            .send_plain(agent.id.clone(), text.into())
            .await
            .unwrap();
        expected = collect_run(&mut reference, Duration::from_secs(10)).await;
        assert_eq!(text_of(&expected), text);
    }
    let missed_until = expected.last().unwrap().seq;

    let back = daemon.client().await;
    let mut sub = back
        .subscribe_events(Some(agent.id.clone()), Some(last_seen), None)
        .await
        .unwrap();
    let mut replayed = Vec::new();
    while replayed.last().is_none_or(|e: &Event| e.seq < missed_until) {
        let next =
            tokio::time::timeout(Duration::from_secs(10), futures::StreamExt::next(&mut sub))
                .await
                .expect("replayed events within 10 s")
                .unwrap()
                .unwrap();
        replayed.push(next);
    }
    let seqs: Vec<u64> = replayed.iter().map(|e| e.seq).collect();
    let want: Vec<u64> = (last_seen + 1..=missed_until).collect();
    assert_eq!(seqs, want, "exactly the missed events, in order");
    assert_eq!(text_of(&replayed), "secondthird");

    // And then live events continue on the same subscription.
    mock.push(Reply::openai_text(&["live"]));
    watcher
        .send_plain(agent.id.clone(), "four".into())
        .await
        .unwrap();
    let live = collect_run(&mut sub, Duration::from_secs(10)).await;
    assert_eq!(live.first().unwrap().seq, missed_until + 1);
    assert_eq!(text_of(&live), "live");
}

#[tokio::test]
async fn subscription_to_all_agents_sees_each() {
    let (mock, daemon) = start().await;
    let client = daemon.client().await;
    let mut all = client.subscribe_events(None, None, None).await.unwrap();
    let a = new_agent(&client, "a").await;
    let b = new_agent(&client, "b").await;
    // New agents announce themselves to subscribers of all agents.
    let mut created = Vec::new();
    while created.len() < 2 {
        let event =
            tokio::time::timeout(Duration::from_secs(10), futures::StreamExt::next(&mut all))
                .await
                .unwrap()
                .unwrap()
                .unwrap();
        match event.kind {
            agent_proto::EventKind::AgentCreated { agent } => {
                assert_eq!(event.seq, 1);
                created.push(agent.id);
            }
            other => panic!("expected agentCreated, got {other:?}"),
        }
    }
    assert_eq!(created, [a.id.clone(), b.id.clone()]);
    for (agent, text) in [(&a, "for a"), (&b, "for b")] {
        mock.push(Reply::openai_text(&[text]));
        client
            .send_plain(agent.id.clone(), "x".into())
            .await
            .unwrap();
        let events = collect_run(&mut all, Duration::from_secs(10)).await;
        assert!(events.iter().all(|e| e.agent_id == agent.id));
        assert_eq!(text_of(&events), text);
    }
}
