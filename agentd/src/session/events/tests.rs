//! Event log tests: seq continuity, replay (exact, from compact deltas), lag recovery, the
//! byte budget across agents, and reservations.

use std::sync::{Arc, Mutex};

use agent_proto::{Event, EventKind, LoopFinishReason, MessageStatus, SessionStatus};

use super::*;
use crate::store::tests::new_agent;

/// A connection's queue as the tests see it: it refuses events past `cap` (until drained),
/// and [`Collector::drain`] plays the writer (queued events, then catch-ups).
#[derive(Default)]
pub(super) struct Collector {
    state: Mutex<Queued>,
}

#[derive(Default)]
struct Queued {
    cap: Option<usize>,
    events: Vec<(u64, Arc<EmittedEvent>)>,
    behind: Vec<u64>,
    ended: Vec<u64>,
}

impl Outbox for Collector {
    fn deliver(&self, key: u64, event: &Arc<EmittedEvent>) -> bool {
        let mut st = self.state.lock().unwrap();
        if st.cap.is_some_and(|cap| st.events.len() >= cap) {
            st.behind.push(key);
            return false;
        }
        st.events.push((key, event.clone()));
        true
    }

    fn behind(&self, key: u64) {
        self.state.lock().unwrap().behind.push(key);
    }

    fn ended(&self, key: u64) {
        self.state.lock().unwrap().ended.push(key);
    }

    fn notify(&self, _: String) {}
}

impl Collector {
    pub(super) fn with_cap(cap: usize) -> Arc<Collector> {
        let collector = Collector::default();
        collector.state.lock().unwrap().cap = Some(cap);
        Arc::new(collector)
    }

    /// Everything `sub` (key `key`) has to send now, as the writer would send it.
    pub(super) fn drain(&self, key: u64, sub: &Subscription) -> Vec<Event> {
        self.drain_sent(key, sub).iter().map(|e| parse(e)).collect()
    }

    /// [`Collector::drain`], as sent.
    pub(super) fn drain_sent(&self, key: u64, sub: &Subscription) -> Vec<Arc<EmittedEvent>> {
        let mut out = Vec::new();
        loop {
            let (events, behind) = {
                let mut st = self.state.lock().unwrap();
                let events = std::mem::take(&mut st.events);
                let behind = std::mem::take(&mut st.behind);
                (events, behind)
            };
            for (k, event) in events {
                assert_eq!(k, key);
                out.push(event);
            }
            if behind.is_empty() {
                return out;
            }
            loop {
                let resumed = sub.resume(7);
                out.extend(resumed.events);
                if resumed.state != After::Behind {
                    break;
                }
            }
        }
    }

    pub(super) fn ended(&self) -> Vec<u64> {
        self.state.lock().unwrap().ended.clone()
    }
}

pub(super) fn parse(event: &EmittedEvent) -> Event {
    serde_json::from_str(&event.json).unwrap()
}

pub(super) struct Setup {
    _dir: tempfile::TempDir,
    pub(super) store: Store,
    pub(super) cx: LogContext,
}

pub(super) async fn setup(limits: ReplayLimits, budget: usize) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("agentd.db")).await.unwrap();
    for id in ["a", "b"] {
        store.insert_agent(&new_agent(id, "A", 1)).await.unwrap();
    }
    let cx = LogContext {
        store: store.clone(),
        hub: Arc::new(EventHub::new()),
        limits,
        budget: ReplayBudget::new(budget),
    };
    Setup {
        _dir: dir,
        store,
        cx,
    }
}

pub(super) fn log(s: &Setup, agent: &str) -> Arc<EventLog> {
    Arc::new(EventLog::new(agent, 0, 0, &s.cx))
}

/// A subscription of `outbox` under key 1, attached.
pub(super) fn subscribe(
    log: &Arc<EventLog>,
    since: Option<u64>,
    outbox: &Arc<Collector>,
) -> Subscription {
    let sub = log.subscribe(since).bind(outbox.clone(), 1);
    sub.attach();
    sub
}

pub(super) fn delta(i: usize) -> EventKind {
    EventKind::TextDelta {
        message_id: "m".into(),
        delta: i.to_string(),
    }
}

pub(super) fn seqs(events: &[Event]) -> Vec<u64> {
    events.iter().map(|e| e.seq).collect()
}

pub(super) const BIG: ReplayLimits = ReplayLimits {
    events: 10_000,
    bytes: 1 << 24,
};
pub(super) const BUDGET: usize = 64 << 20;

#[tokio::test]
async fn seqs_are_contiguous_and_reserved_ahead() {
    let s = setup(BIG, BUDGET).await;
    let log = log(&s, "a");
    let out = Arc::new(Collector::default());
    let sub = subscribe(&log, None, &out);
    for i in 0..1500 {
        log.emit(delta(i)).await.unwrap();
    }
    assert_eq!(seqs(&out.drain(1, &sub)), (1..=1500).collect::<Vec<u64>>());
    let mark = s.store.agent_last_seq("a").await.unwrap().unwrap();
    assert!(
        mark >= 1500,
        "the stored mark {mark} covers every seq handed out"
    );
    log.persist_last_seq().await.unwrap();
    assert_eq!(s.store.agent_last_seq("a").await.unwrap(), Some(1500));
}

#[tokio::test]
async fn replay_after_since_then_live() {
    let s = setup(BIG, BUDGET).await;
    let log = log(&s, "a");
    for i in 0..10 {
        log.emit(delta(i)).await.unwrap();
    }
    let out = Arc::new(Collector::default());
    let sub = subscribe(&log, Some(7), &out);
    log.emit(delta(10)).await.unwrap();
    assert_eq!(seqs(&out.drain(1, &sub)), [8, 9, 10, 11]);
    log.emit(delta(11)).await.unwrap();
    assert_eq!(seqs(&out.drain(1, &sub)), [12], "then live");
    // Nothing missed: no replay.
    let current = Arc::new(Collector::default());
    let sub = subscribe(&log, Some(12), &current);
    log.emit(delta(12)).await.unwrap();
    assert_eq!(seqs(&current.drain(1, &sub)), [13]);
}

/// Emits `kinds` to a subscriber, then replays from every seq: each replay is the JSON
/// that was sent, byte for byte.
pub(super) async fn assert_replays_are_what_was_sent(log: &Arc<EventLog>, kinds: Vec<EventKind>) {
    let live = Arc::new(Collector::default());
    let sub = subscribe(log, None, &live);
    for kind in kinds {
        log.emit(kind).await.unwrap();
    }
    let sent: Vec<String> = live
        .drain_sent(1, &sub)
        .iter()
        .map(|e| e.json.to_string())
        .collect();
    drop(sub);
    for since in 0..sent.len() {
        let again = Arc::new(Collector::default());
        let sub = subscribe(log, Some(since as u64), &again);
        let replayed: Vec<String> = again
            .drain_sent(1, &sub)
            .iter()
            .map(|e| e.json.to_string())
            .collect();
        assert_eq!(replayed, sent[since..], "since {since}");
    }
}

/// A replay rebuilds compact deltas as the very events that were sent: same seq, `at`,
/// ids and text, byte for byte; other events sit between them unchanged.
#[tokio::test]
async fn replayed_deltas_are_the_events_that_were_sent() {
    let s = setup(BIG, BUDGET).await;
    let log = log(&s, "a");
    let kinds = vec![
        EventKind::MessageStarted {
            message_id: "m".into(),
            message: None,
        },
        EventKind::ReasoningDelta {
            message_id: "m".into(),
            delta: "hmm ".into(),
        },
        EventKind::TextDelta {
            message_id: "m".into(),
            delta: "Hel".into(),
        },
        EventKind::TextDelta {
            message_id: "m".into(),
            delta: "lo \"é\"\n".into(),
        },
        EventKind::ToolCallArgsDelta {
            message_id: "m".into(),
            tool_call_id: "c1".into(),
            delta: "{\"a\":".into(),
        },
        EventKind::ToolCallArgsDelta {
            message_id: "m".into(),
            tool_call_id: "c2".into(),
            delta: "{}".into(),
        },
        EventKind::ToolCallArgsDelta {
            message_id: "m".into(),
            tool_call_id: "c1".into(),
            delta: "1}".into(),
        },
        EventKind::TextDelta {
            message_id: "n".into(),
            delta: "other message".into(),
        },
        EventKind::TextDelta {
            message_id: "n".into(),
            delta: "".into(),
        },
    ];
    assert_replays_are_what_was_sent(&log, kinds).await;
    // The deltas take a few entries, not one each.
    assert!(log.lock().ring.entries() <= 8, "{:?}", log.lock().ring);
}

#[tokio::test]
async fn too_old_since_gets_resync() {
    let limits = ReplayLimits {
        events: 5,
        bytes: 1 << 20,
    };
    let s = setup(limits, BUDGET).await;
    let log = log(&s, "a");
    for i in 0..20 {
        // Non-delta events, one entry each, so the event limit is exact.
        log.emit(EventKind::MessageStarted {
            message_id: i.to_string(),
            message: None,
        })
        .await
        .unwrap();
    }
    let out = Arc::new(Collector::default());
    let sub = subscribe(&log, Some(3), &out);
    let got = out.drain(1, &sub);
    assert!(
        matches!(got[0].kind, EventKind::ResyncRequired { .. }),
        "{got:?}"
    );
    assert_eq!(seqs(&got), [20]);
    log.emit(delta(20)).await.unwrap();
    assert_eq!(seqs(&out.drain(1, &sub)), [21]);
    // Within the ring: exact replay.
    let out = Arc::new(Collector::default());
    let sub = subscribe(&log, Some(16), &out);
    assert_eq!(seqs(&out.drain(1, &sub)), [17, 18, 19, 20, 21]);
    // Ahead of the log (a client of another store): told to resync.
    let out = Arc::new(Collector::default());
    let sub = subscribe(&log, Some(500), &out);
    let first = &out.drain(1, &sub)[0];
    assert!(
        matches!(&first.kind, EventKind::ResyncRequired { reason } if reason.contains("ahead")),
        "{first:?}"
    );
}

#[tokio::test]
async fn a_lagging_subscriber_catches_up_from_the_ring() {
    let s = setup(BIG, BUDGET).await;
    let log = log(&s, "a");
    let out = Collector::with_cap(10);
    let sub = subscribe(&log, None, &out);
    // Far more than the queue holds, while nobody drains it.
    for i in 0..3000 {
        log.emit(delta(i)).await.unwrap();
        if i == 1000 {
            // Some other events between the deltas.
            log.emit(EventKind::MessageStarted {
                message_id: "x".into(),
                message: None,
            })
            .await
            .unwrap();
        }
    }
    let got = out.drain(1, &sub);
    assert_eq!(
        seqs(&got),
        (1..=3001).collect::<Vec<u64>>(),
        "no gap, no resync"
    );
    log.emit(delta(0)).await.unwrap();
    assert_eq!(seqs(&out.drain(1, &sub)), [3002], "live again");
}

#[tokio::test]
async fn hub_sees_every_agent_and_close_ends_agent_streams() {
    let s = setup(BIG, BUDGET).await;
    let log = log(&s, "a");
    let all_out = Arc::new(Collector::default());
    let all = s.cx.hub.subscribe_all().bind(all_out.clone(), 1);
    all.attach();
    let out = Arc::new(Collector::default());
    let one = subscribe(&log, None, &out);
    log.emit(delta(0)).await.unwrap();
    assert_eq!(all_out.drain(1, &all)[0].agent_id, "a");
    assert_eq!(seqs(&out.drain(1, &one)), [1]);
    log.close();
    assert_eq!(out.ended(), [1]);
    let late = Arc::new(Collector::default());
    let _sub = subscribe(&log, None, &late);
    assert_eq!(
        late.ended(),
        [1],
        "a closed log ends a new subscription at once"
    );
    // An all-agents subscriber that falls behind is told so once, then goes on.
    let slow = Collector::with_cap(2);
    let behind = s.cx.hub.subscribe_all().bind(slow.clone(), 1);
    behind.attach();
    let other = self::log(&s, "b");
    for i in 0..5 {
        other.emit(delta(i)).await.unwrap();
    }
    let got = slow.drain(1, &behind);
    assert_eq!(got.len(), 3, "{got:?}");
    assert!(
        matches!(&got[2].kind, EventKind::ResyncRequired { reason } if reason.contains("3 events behind")),
        "{got:?}"
    );
    other.emit(delta(5)).await.unwrap();
    assert_eq!(seqs(&slow.drain(1, &behind)), [6]);
}

/// All rings together stay within the budget: the oldest entries of any agent go first,
/// and a replay that needs them gets `resyncRequired`, never a gap.
#[tokio::test]
async fn the_budget_bounds_all_rings_oldest_first() {
    let s = setup(BIG, 64 * 1024).await;
    let a = log(&s, "a");
    let b = log(&s, "b");
    let text = "x".repeat(500);
    for i in 0..200 {
        for log in [&a, &b] {
            log.emit(EventKind::MessageStarted {
                message_id: format!("{i}{text}"),
                message: None,
            })
            .await
            .unwrap();
        }
        assert!(s.cx.budget.used() <= 64 * 1024, "{}", s.cx.budget.used());
    }
    let held = |log: &EventLog| log.lock().ring.bytes();
    assert_eq!(s.cx.budget.used(), held(&a) + held(&b));
    assert!(
        held(&a) > 20 * 1024 && held(&b) > 20 * 1024,
        "both keep their newest"
    );
    // The newest events replay; the oldest are gone.
    {
        let out = Arc::new(Collector::default());
        let sub = subscribe(&a, Some(190), &out);
        assert_eq!(seqs(&out.drain(1, &sub)), (191..=200).collect::<Vec<u64>>());
        let out = Arc::new(Collector::default());
        let sub = subscribe(&a, Some(1), &out);
        assert!(matches!(
            out.drain(1, &sub)[0].kind,
            EventKind::ResyncRequired { .. }
        ));
    }
    // A log that goes away gives its bytes back, and the order forgets it in time.
    drop(a);
    assert_eq!(s.cx.budget.used(), held(&b));
    for i in 0..5000 {
        b.emit(EventKind::MessageStarted {
            message_id: i.to_string(),
            message: None,
        })
        .await
        .unwrap();
    }
    assert!(s.cx.budget.hints() <= 2 * b.lock().ring.entries() + 1024 + 1);
}

/// A running command's live output is kept like deltas, per call and stream, and replayed
/// as the very events that were sent; an output event whose `progress` does not continue
/// its run, or one with a `message`, begins a new entry or stays whole.
#[tokio::test]
async fn replayed_live_output_is_the_events_that_were_sent() {
    let s = setup(BIG, BUDGET).await;
    let log = log(&s, "a");
    let out = |call: &str, stream, progress: f64, text: &str| EventKind::ToolProgress {
        message_id: "m".into(),
        tool_call_id: call.into(),
        progress,
        total: None,
        message: None,
        output: Some(agent_proto::LiveOutput {
            stream,
            text: text.into(),
        }),
    };
    use agent_proto::OutputStream::{Stderr, Stdout};
    let mut kinds = vec![
        out("c1", Stdout, 6.0, "line1\n"),
        out("c1", Stdout, 12.0, "line2\n"),
        out("c1", Stderr, 17.0, "oops\n"),
        out("c1", Stdout, 20.0, "\u{e9}!"),
        // Not a continuation: a jump in progress.
        out("c1", Stdout, 40.0, "x"),
        out("c2", Stdout, 1.0, "y"),
        EventKind::ToolProgress {
            message_id: "m".into(),
            tool_call_id: "c1".into(),
            progress: 40.0,
            total: None,
            message: Some("live output stops here".into()),
            output: None,
        },
        out("c1", Stdout, 41.5, "z"),
    ];
    let many: Vec<EventKind> = (1..=100)
        .map(|i| out("c3", Stdout, f64::from(i) * 4.0, "tok "))
        .collect();
    kinds.extend(many);
    assert_replays_are_what_was_sent(&log, kinds).await;
    assert!(log.lock().ring.entries() <= 9, "{:?}", log.lock().ring);
}

/// Deltas cost a few bytes each in the ring, not an event's JSON.
#[tokio::test]
async fn deltas_are_kept_compact() {
    let s = setup(BIG, BUDGET).await;
    let log = log(&s, "a");
    for _ in 0..1000 {
        log.emit(EventKind::TextDelta {
            message_id: "01234567-89ab-cdef-0123-456789abcdef".into(),
            delta: "tok ".into(),
        })
        .await
        .unwrap();
    }
    let bytes = log.lock().ring.bytes();
    assert!(bytes < 1000 * 16, "{bytes} bytes for 1000 deltas");
    assert_eq!(s.cx.budget.used(), bytes);
}

/// The events of a turn as the loop emits them, for message `id`.
pub(super) fn turn(id: &str) -> Vec<EventKind> {
    let message_id = || id.to_string();
    let mut kinds = vec![
        EventKind::StatusChanged {
            status: SessionStatus::Generating,
        },
        EventKind::MessageStarted {
            message_id: message_id(),
            message: None,
        },
    ];
    kinds.extend((0..5).map(|_| EventKind::TextDelta {
        message_id: message_id(),
        delta: "tok tok ".into(),
    }));
    kinds.extend([
        EventKind::Usage {
            message_id: message_id(),
            input_tokens: 1200,
            output_tokens: 50,
        },
        EventKind::MessageCompleted {
            message_id: message_id(),
            status: MessageStatus::Done,
            structured_output: None,
        },
        EventKind::LoopFinished {
            message_id: message_id(),
            reason: LoopFinishReason::Completed,
            error: None,
        },
        EventKind::StatusChanged {
            status: SessionStatus::Idle,
        },
    ]);
    kinds
}

/// A turn's small events, kept as their fields, replay as the very JSON that was sent,
/// byte for byte, from any seq; the forms kept as JSON sit between them unchanged.
#[tokio::test]
async fn replayed_small_events_are_the_json_that_was_sent() {
    let s = setup(BIG, BUDGET).await;
    let log = log(&s, "a");
    let mut kinds = turn("m");
    kinds.extend([
        EventKind::MessageStarted {
            message_id: "n".into(),
            message: Some(Box::new(Message {
                id: "n".into(),
                agent_id: "a".into(),
                role: agent_proto::Role::Assistant,
                blocks: vec![agent_proto::Block::Text {
                    text: "earlier".into(),
                }],
                status: MessageStatus::Streaming,
                created_at: 1,
                updated_at: 2,
                usage: None,
                variant_of: Some("m".into()),
                superseded: false,
                turn: None,
                structured_output: None,
            })),
        },
        EventKind::Usage {
            message_id: "n".into(),
            input_tokens: 0,
            output_tokens: u64::MAX,
        },
        // Back to the first message: its id is no longer the latest one.
        EventKind::MessageCompleted {
            message_id: "m".into(),
            status: MessageStatus::Error,
            structured_output: None,
        },
        EventKind::LoopFinished {
            message_id: "n".into(),
            reason: LoopFinishReason::Error,
            error: Some("the provider said \"no\"".into()),
        },
        EventKind::StatusChanged {
            status: SessionStatus::WaitingPermission,
        },
    ]);
    kinds.extend(turn("0123456789abcdef"));
    assert_replays_are_what_was_sent(&log, kinds).await;
}

/// A turn's events cost a few hundred bytes in the ring, not ~200 bytes of JSON each.
#[tokio::test]
async fn a_turns_small_events_are_kept_compact() {
    let s = setup(BIG, BUDGET).await;
    let log = log(&s, "a");
    for i in 0..100 {
        for kind in turn(&format!("01234567-89ab-cdef-0123-{i:012}")) {
            log.emit(kind).await.unwrap();
        }
    }
    let bytes = log.lock().ring.bytes();
    assert!(bytes < 100 * 1000, "{bytes} bytes for 100 turns");
    assert_eq!(s.cx.budget.used(), bytes);
}
