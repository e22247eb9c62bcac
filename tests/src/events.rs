//! Helpers over event subscriptions.

use std::collections::HashMap;
use std::time::Duration;

use agent_proto::client::Subscription;
use agent_proto::{Event, EventKind};

/// Collects events until one satisfies `done` (included). Panics on timeout or when the
/// subscription ends, listing what arrived.
pub async fn collect_until(
    sub: &mut Subscription<Event>,
    timeout: Duration,
    done: impl Fn(&Event) -> bool,
) -> Vec<Event> {
    let deadline = tokio::time::Instant::now() + timeout;
    let mut events = Vec::new();
    loop {
        let next = tokio::time::timeout_at(deadline, sub.next()).await;
        let event = match next {
            Ok(Some(Ok(event))) => event,
            Ok(Some(Err(e))) => panic!(
                "an event that does not decode: {e}; so far: {}",
                summary(&events)
            ),
            Ok(None) => panic!("the subscription ended; so far: {}", summary(&events)),
            Err(_) => panic!("waited {timeout:?}; so far: {}", summary(&events)),
        };
        let finished = done(&event);
        events.push(event);
        if finished {
            return events;
        }
    }
}

/// Collects the events of one run: until `loopFinished`.
pub async fn collect_run(sub: &mut Subscription<Event>, timeout: Duration) -> Vec<Event> {
    collect_until(sub, timeout, |e| {
        matches!(e.kind, EventKind::LoopFinished { .. })
    })
    .await
}

/// The concatenated `textDelta`s.
pub fn text_of(events: &[Event]) -> String {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::TextDelta { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect()
}

/// Asserts that, per agent, each seq is exactly one above the previous one.
pub fn assert_seq_contiguous(events: &[Event]) {
    let mut last: HashMap<&str, u64> = HashMap::new();
    for event in events {
        if let Some(prev) = last.insert(&event.agent_id, event.seq) {
            assert_eq!(
                event.seq,
                prev + 1,
                "seq gap for agent {} in: {}",
                event.agent_id,
                summary(events)
            );
        }
    }
}

fn summary(events: &[Event]) -> String {
    events
        .iter()
        .map(|e| format!("{}:{}", e.seq, e.kind.type_name()))
        .collect::<Vec<_>>()
        .join(" ")
}
