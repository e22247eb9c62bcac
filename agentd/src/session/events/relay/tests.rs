//! Relayed events: the home's seqs and JSON reach this daemon's subscribers, replays and
//! snapshots as a local emit gives them; duplicates are dropped, gaps are told, and a
//! local emit afterwards continues above every relayed seq.

use std::sync::Arc;

use agent_proto::{Event, EventKind, MessageStatus, SessionStatus};

use super::super::tests::{
    BIG, BUDGET, Collector, Setup, delta, log, parse, seqs, setup, subscribe, turn,
};
use super::*;
use crate::session::events::{EventHub, LogContext, ReplayBudget, Subscription};

/// The agent's log on another daemon: its own hub and budget, the same database.
fn relay_log(s: &Setup, agent: &str) -> Arc<EventLog> {
    let cx = LogContext {
        store: s.store.clone(),
        hub: Arc::new(EventHub::new()),
        limits: s.cx.limits,
        budget: ReplayBudget::new(BUDGET),
    };
    Arc::new(EventLog::new(agent, 0, 0, &cx))
}

/// Emits `kinds` on the home and relays each, as sent, to the other daemon's log.
async fn emit_and_relay(home: &EventLog, other: &EventLog, kinds: Vec<EventKind>) {
    for kind in kinds {
        let sent = home.emit(kind).await.unwrap();
        let relayed = other.relay(parse(&sent), sent.json.clone());
        assert_eq!(relayed, Relayed::Applied, "seq {}", sent.seq);
    }
}

/// Event `seq` of agent "a" as a home would have sent it.
fn sent(seq: u64, kind: EventKind) -> (Event, Box<str>) {
    let event = Event {
        seq,
        agent_id: "a".into(),
        at: 1_000 + i64::try_from(seq).unwrap(),
        kind,
    };
    let json = serde_json::to_string(&event).unwrap().into_boxed_str();
    (event, json)
}

fn relay(log: &EventLog, seq: u64, kind: EventKind) -> Relayed {
    let (event, json) = sent(seq, kind);
    log.relay(event, json)
}

fn jsons(out: &Collector, sub: &Subscription) -> Vec<String> {
    out.drain_sent(1, sub)
        .iter()
        .map(|e| e.json.to_string())
        .collect()
}

fn is_resync(event: &Event) -> bool {
    matches!(event.kind, EventKind::ResyncRequired { .. })
}

#[tokio::test]
async fn subscribers_get_the_homes_seqs_and_json() {
    let s = setup(BIG, BUDGET).await;
    let home = log(&s, "a");
    let other = relay_log(&s, "a");
    let at_home = Arc::new(Collector::default());
    let home_sub = subscribe(&home, None, &at_home);
    let here = Arc::new(Collector::default());
    let sub = subscribe(&other, None, &here);
    let all_here = Arc::new(Collector::default());
    let all = other.hub.subscribe_all().bind(all_here.clone(), 1);
    all.attach();
    emit_and_relay(&home, &other, turn("m")).await;
    let sent = jsons(&at_home, &home_sub);
    assert_eq!(sent.len(), turn("m").len());
    assert_eq!(jsons(&here, &sub), sent, "the same seqs and bytes");
    assert_eq!(jsons(&all_here, &all), sent, "all-agents subscribers too");
    assert_eq!(other.last_seq(), home.last_seq());
}

#[tokio::test]
async fn a_duplicate_is_dropped() {
    let s = setup(BIG, BUDGET).await;
    let other = relay_log(&s, "a");
    let out = Arc::new(Collector::default());
    let sub = subscribe(&other, None, &out);
    for seq in 1..=3 {
        assert_eq!(relay(&other, seq, delta(1)), Relayed::Applied);
    }
    assert_eq!(relay(&other, 2, delta(2)), Relayed::Duplicate);
    assert_eq!(relay(&other, 3, delta(3)), Relayed::Duplicate);
    assert_eq!(relay(&other, 4, delta(4)), Relayed::Applied);
    let got = out.drain(1, &sub);
    assert_eq!(seqs(&got), [1, 2, 3, 4]);
    assert!(
        matches!(&got[3].kind, EventKind::TextDelta { delta, .. } if delta == "4"),
        "{got:?}"
    );
}

/// Every subscriber hears of a gap once, before the event after it: a live one at once,
/// one that is behind and one whose snapshot is not sent yet instead of what they waited
/// for. Then the stream goes on.
#[tokio::test]
async fn a_gap_gives_each_subscriber_one_resync_then_goes_on() {
    let s = setup(BIG, BUDGET).await;
    let other = relay_log(&s, "a");
    let live = Arc::new(Collector::default());
    let live_sub = subscribe(&other, None, &live);
    let slow = Collector::with_cap(1);
    let slow_sub = subscribe(&other, None, &slow);
    for seq in 1..=2 {
        relay(&other, seq, delta(seq as usize));
    }
    other.seed_mirror(|| SessionStatus::Idle).await.unwrap();
    let snap = Arc::new(Collector::default());
    let snap_sub = other.subscribe_snapshot().bind(snap.clone(), 1);
    snap_sub.attach();
    assert_eq!(
        relay(&other, 5, delta(5)),
        Relayed::Gap { missed: 3..5 },
        "seqs 3 and 4 never came"
    );
    assert_eq!(relay(&other, 6, delta(6)), Relayed::Applied);

    let got = live.drain(1, &live_sub);
    assert_eq!(seqs(&got), [1, 2, 4, 5, 6]);
    assert!(is_resync(&got[2]), "{got:?}");
    assert!(
        matches!(&got[2].kind, EventKind::ResyncRequired { reason } if reason.contains("3..=4")),
        "{got:?}"
    );
    assert_eq!(got.iter().filter(|e| is_resync(e)).count(), 1);

    let got = slow.drain(1, &slow_sub);
    assert_eq!(seqs(&got), [1, 6], "{got:?}");
    assert!(is_resync(&got[1]), "{got:?}");

    let got = snap.drain(1, &snap_sub);
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(
        is_resync(&got[0]),
        "no snapshot of a fold that missed events"
    );

    relay(&other, 7, delta(7));
    for (out, sub) in [(&live, &live_sub), (&slow, &slow_sub), (&snap, &snap_sub)] {
        assert_eq!(seqs(&out.drain(1, sub)), [7], "live again");
    }
}

/// The ring does not hold the missing seqs: a replay that would cross them is a
/// `resyncRequired`, one after them is exact.
#[tokio::test]
async fn since_inside_or_before_a_gap_gets_resync() {
    let s = setup(BIG, BUDGET).await;
    let other = relay_log(&s, "a");
    for seq in (1..=3).chain(7..=8) {
        relay(&other, seq, delta(seq as usize));
    }
    for since in 0..=5 {
        let out = Arc::new(Collector::default());
        let sub = subscribe(&other, Some(since), &out);
        let got = out.drain(1, &sub);
        assert_eq!(got.len(), 1, "since {since}: {got:?}");
        assert!(is_resync(&got[0]), "since {since}: {got:?}");
        assert_eq!(got[0].seq, 8);
    }
    for (since, want) in [(6, vec![7, 8]), (7, vec![8]), (8, vec![])] {
        let out = Arc::new(Collector::default());
        let sub = subscribe(&other, Some(since), &out);
        assert_eq!(seqs(&out.drain(1, &sub)), want, "since {since}");
    }
}

/// What the ring keeps of relayed events (deltas joined in runs, small events as their
/// fields) replays from any seq as the home's ring replays it: the JSON the home sent.
#[tokio::test]
async fn relayed_events_replay_like_local_ones() {
    let s = setup(BIG, BUDGET).await;
    let home = log(&s, "a");
    let other = relay_log(&s, "a");
    let mut kinds = turn("m");
    kinds.extend((0..20).map(delta));
    kinds.push(EventKind::ReasoningDelta {
        message_id: "m".into(),
        delta: "hmm \"é\"\n".into(),
    });
    kinds.extend(turn("n"));
    let at_home = Arc::new(Collector::default());
    let home_sub = subscribe(&home, None, &at_home);
    emit_and_relay(&home, &other, kinds).await;
    let sent = jsons(&at_home, &home_sub);
    for since in 0..=sent.len() as u64 {
        let replay = |log: &Arc<EventLog>| {
            let out = Arc::new(Collector::default());
            let sub = subscribe(log, Some(since), &out);
            jsons(&out, &sub)
        };
        let here = replay(&other);
        assert_eq!(here, replay(&home), "since {since}");
        assert_eq!(here, sent[since as usize..], "since {since}");
    }
    assert_eq!(
        other.lock().ring.entries(),
        home.lock().ring.entries(),
        "kept as compactly"
    );
    assert_eq!(other.lock().ring.bytes(), home.lock().ring.bytes());
}

/// If this daemon becomes the agent's home, its own seqs go on above every relayed one,
/// and its reservation in the store covers them, also past the mark it loaded.
#[tokio::test]
async fn a_local_emit_continues_above_relayed_seqs() {
    let s = setup(BIG, BUDGET).await;
    let other = relay_log(&s, "a");
    for seq in 1..=5 {
        relay(&other, seq, delta(seq as usize));
    }
    assert_eq!(other.emit(delta(6)).await.unwrap().seq, 6);
    let mark = s.store.agent_last_seq("a").await.unwrap().unwrap();
    assert!(mark >= 6, "reserved {mark}");

    // Loaded with the home's mark at 1000, then relayed past it.
    let cx = LogContext {
        store: s.store.clone(),
        hub: Arc::new(EventHub::new()),
        limits: BIG,
        budget: ReplayBudget::new(BUDGET),
    };
    let b = EventLog::new("b", 0, 1000, &cx);
    for seq in 1..=1200 {
        let (mut event, _) = sent(seq, delta(0));
        event.agent_id = "b".into();
        let json = serde_json::to_string(&event).unwrap().into_boxed_str();
        b.relay(event, json);
    }
    assert_eq!(b.emit(delta(0)).await.unwrap().seq, 1201);
    let mark = s.store.agent_last_seq("b").await.unwrap().unwrap();
    assert!(mark >= 1201, "reserved {mark}");
}

#[tokio::test]
async fn a_snapshot_folds_relayed_events() {
    let s = setup(BIG, BUDGET).await;
    let other = relay_log(&s, "a");
    relay(
        &other,
        1,
        EventKind::StatusChanged {
            status: SessionStatus::Generating,
        },
    );
    relay(
        &other,
        2,
        EventKind::MessageStarted {
            message_id: "m".into(),
            message: None,
        },
    );
    for (seq, text) in [(3, "Hel"), (4, "lo")] {
        relay(
            &other,
            seq,
            EventKind::TextDelta {
                message_id: "m".into(),
                delta: text.into(),
            },
        );
    }
    other.seed_mirror(|| SessionStatus::Idle).await.unwrap();
    let out = Arc::new(Collector::default());
    let sub = other.subscribe_snapshot().bind(out.clone(), 1);
    sub.attach();
    let got = out.drain(1, &sub);
    assert_eq!(seqs(&got), [4]);
    let EventKind::Snapshot {
        status, message, ..
    } = &got[0].kind
    else {
        panic!("{got:?}");
    };
    assert_eq!(*status, SessionStatus::Generating);
    let message = message.as_ref().unwrap();
    assert_eq!((message.id.as_str(), message.text()), ("m", "Hello".into()));
    assert_eq!(message.status, MessageStatus::Streaming);
    relay(&other, 5, delta(5));
    assert_eq!(seqs(&out.drain(1, &sub)), [5], "then the events after it");

    // After a gap the fold is not trusted: the next snapshot is seeded from the store
    // (where this agent has no answer yet) and the status the session has.
    relay(&other, 9, delta(9));
    other.seed_mirror(|| SessionStatus::Idle).await.unwrap();
    let out = Arc::new(Collector::default());
    let sub = other.subscribe_snapshot().bind(out.clone(), 1);
    sub.attach();
    let got = out.drain(1, &sub);
    assert!(
        matches!(
            &got[0].kind,
            EventKind::Snapshot {
                status: SessionStatus::Idle,
                message: None,
                ..
            }
        ),
        "{got:?}"
    );
}

#[tokio::test]
async fn a_relayed_deletion_closes_the_log() {
    let s = setup(BIG, BUDGET).await;
    let other = relay_log(&s, "a");
    let out = Arc::new(Collector::default());
    let sub = subscribe(&other, None, &out);
    assert_eq!(
        relay(&other, 1, EventKind::AgentDeleted {}),
        Relayed::Applied
    );
    assert_eq!(seqs(&out.drain(1, &sub)), [1]);
    assert_eq!(out.ended(), [1]);
    assert_eq!(relay(&other, 2, delta(2)), Relayed::Closed);
    assert_eq!(other.last_seq(), 1);
}

#[tokio::test]
async fn an_event_of_another_agent_is_dropped() {
    let s = setup(BIG, BUDGET).await;
    let other = relay_log(&s, "b");
    assert_eq!(relay(&other, 1, delta(1)), Relayed::OtherAgent);
    assert_eq!(other.last_seq(), 0);
}
