//! Event log tests: seq continuity, replay, lag recovery and reservations.

use std::sync::Arc;
use std::time::Duration;

use agent_proto::{Event, EventKind};

use super::*;
use crate::store::tests::new_agent;

async fn setup(limits: ReplayLimits) -> (tempfile::TempDir, Store, Arc<EventHub>, Arc<EventLog>) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("agentd.db")).await.unwrap();
    store.insert_agent(&new_agent("a", "A", 1)).await.unwrap();
    let hub = Arc::new(EventHub::new(64));
    let log = Arc::new(EventLog::new("a", 0, store.clone(), hub.clone(), limits));
    (dir, store, hub, log)
}

fn delta(i: usize) -> EventKind {
    EventKind::TextDelta {
        message_id: "m".into(),
        delta: i.to_string(),
    }
}

async fn next(sub: &mut Subscriber) -> Event {
    let event = tokio::time::timeout(Duration::from_secs(5), sub.next())
        .await
        .expect("an event within 5 s")
        .expect("the stream is open");
    serde_json::from_str(&event.json).unwrap()
}

const BIG: ReplayLimits = ReplayLimits {
    events: 10_000,
    bytes: 1 << 24,
};

#[tokio::test]
async fn seqs_are_contiguous_and_reserved_ahead() {
    let (_dir, store, _hub, log) = setup(BIG).await;
    let mut sub = log.subscribe(None);
    for i in 0..1500 {
        log.emit(delta(i)).await.unwrap();
    }
    for want in 1..=1500u64 {
        assert_eq!(next(&mut sub).await.seq, want);
    }
    let mark = store.agent_last_seq("a").await.unwrap().unwrap();
    assert!(
        mark >= 1500,
        "the stored mark {mark} covers every seq handed out"
    );
    log.persist_last_seq().await.unwrap();
    assert_eq!(store.agent_last_seq("a").await.unwrap(), Some(1500));
}

#[tokio::test]
async fn replay_after_since_then_live() {
    let (_dir, _store, _hub, log) = setup(BIG).await;
    for i in 0..10 {
        log.emit(delta(i)).await.unwrap();
    }
    let mut sub = log.subscribe(Some(7));
    log.emit(delta(10)).await.unwrap();
    let seqs: Vec<u64> = [
        next(&mut sub).await,
        next(&mut sub).await,
        next(&mut sub).await,
        next(&mut sub).await,
    ]
    .iter()
    .map(|e| e.seq)
    .collect();
    assert_eq!(seqs, [8, 9, 10, 11]);
    // Nothing missed: no replay.
    let mut current = log.subscribe(Some(11));
    log.emit(delta(11)).await.unwrap();
    assert_eq!(next(&mut current).await.seq, 12);
}

#[tokio::test]
async fn too_old_since_gets_resync() {
    let limits = ReplayLimits {
        events: 5,
        bytes: 1 << 20,
    };
    let (_dir, _store, _hub, log) = setup(limits).await;
    for i in 0..20 {
        log.emit(delta(i)).await.unwrap();
    }
    let mut sub = log.subscribe(Some(3));
    let first = next(&mut sub).await;
    assert!(
        matches!(first.kind, EventKind::ResyncRequired { .. }),
        "{first:?}"
    );
    assert_eq!(first.seq, 20);
    log.emit(delta(20)).await.unwrap();
    assert_eq!(next(&mut sub).await.seq, 21);
    // Within the ring: exact replay.
    let mut sub = log.subscribe(Some(16));
    assert_eq!(next(&mut sub).await.seq, 17);
    // Ahead of the log (a client of another store): told to resync.
    let mut sub = log.subscribe(Some(500));
    let first = next(&mut sub).await;
    assert!(
        matches!(&first.kind, EventKind::ResyncRequired { reason } if reason.contains("ahead")),
        "{first:?}"
    );
}

#[tokio::test]
async fn a_lagging_subscriber_catches_up_from_the_ring() {
    let (_dir, _store, _hub, log) = setup(BIG).await;
    let mut sub = log.subscribe(None);
    // Far more than the agent channel holds, while the subscriber reads nothing.
    for i in 0..(AGENT_CHANNEL * 3) {
        log.emit(delta(i)).await.unwrap();
    }
    for want in 1..=(AGENT_CHANNEL * 3) as u64 {
        let event = next(&mut sub).await;
        assert_eq!(event.seq, want, "no gap, no resync");
    }
}

#[tokio::test]
async fn hub_sees_every_agent_and_close_ends_agent_streams() {
    let (_dir, _store, hub, log) = setup(BIG).await;
    let mut all = hub.subscribe_all();
    let mut one = log.subscribe(None);
    log.emit(delta(0)).await.unwrap();
    assert_eq!(next(&mut all).await.agent_id, "a");
    assert_eq!(next(&mut one).await.seq, 1);
    log.close();
    assert!(one.next().await.is_none());
    assert!(log.subscribe(None).next().await.is_none());
}
