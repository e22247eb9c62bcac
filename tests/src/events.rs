//! Helpers over event subscriptions of the typed client: collect a run's events with a
//! deadline, and read a transcript (text, types, seq contiguity).
//!
//! They only read; they never call the daemon. A wait that fails panics listing every event
//! seen so far as `seq:type`, which is usually enough to see what went wrong.

use std::collections::HashMap;
use std::time::Duration;

use agent_proto::client::Subscription;
use agent_proto::{Event, EventKind, LoopFinishReason};

/// Collects events until one satisfies `done` (included) and returns them all. Panics after
/// `timeout` (for the whole collection), when an event does not decode, or when the
/// subscription ends.
pub async fn collect_until(
    sub: &mut Subscription<Event>,
    timeout: Duration,
    mut done: impl FnMut(&Event) -> bool,
) -> Vec<Event> {
    let deadline = tokio::time::Instant::now() + timeout;
    let mut events = Vec::new();
    loop {
        let event = match tokio::time::timeout_at(deadline, sub.next()).await {
            Ok(Some(Ok(event))) => event,
            Ok(Some(Err(e))) => panic!(
                "an event that does not decode ({e}); events so far: {}",
                summary(&events)
            ),
            Ok(None) => panic!(
                "the subscription ended before the awaited event; events so far: {}",
                summary(&events)
            ),
            Err(_) => panic!(
                "waited {timeout:?} for the awaited event; events so far: {}",
                summary(&events)
            ),
        };
        let finished = done(&event);
        events.push(event);
        if finished {
            return events;
        }
    }
}

/// Collects the events of one run: until `loopFinished` (included).
pub async fn collect_run(sub: &mut Subscription<Event>, timeout: Duration) -> Vec<Event> {
    collect_until(sub, timeout, |e| {
        matches!(e.kind, EventKind::LoopFinished { .. })
    })
    .await
}

/// Collects events until the text of their `textDelta`s contains `needle` (the deltas may
/// split or join the model's pieces any way, so a test waits for text, not for one delta).
pub async fn collect_until_text(
    sub: &mut Subscription<Event>,
    timeout: Duration,
    needle: &str,
) -> Vec<Event> {
    let mut text = String::new();
    collect_until(sub, timeout, move |e| {
        if let EventKind::TextDelta { delta, .. } = &e.kind {
            text.push_str(delta);
        }
        text.contains(needle)
    })
    .await
}

/// How a run ended: the reason and error of its `loopFinished`, which must be the last
/// event (as [`collect_run`] leaves it); panics, listing the events, when it is not.
pub fn finished(events: &[Event]) -> (LoopFinishReason, Option<String>) {
    match events.last().map(|e| &e.kind) {
        Some(EventKind::LoopFinished { reason, error, .. }) => (*reason, error.clone()),
        last => panic!(
            "the run did not end with loopFinished but {last:?}; events: {}",
            summary(events)
        ),
    }
}

/// How a run ended, its reason alone: [`finished`]`(events).0`.
pub fn finish_reason(events: &[Event]) -> LoopFinishReason {
    finished(events).0
}

/// `(input, output)` tokens of each `usage` event, in order.
pub fn usage_of(events: &[Event]) -> Vec<(u64, u64)> {
    events
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::Usage {
                input_tokens,
                output_tokens,
                ..
            } => Some((input_tokens, output_tokens)),
            _ => None,
        })
        .collect()
}

/// The concatenated `textDelta` deltas.
pub fn text_of(events: &[Event]) -> String {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::TextDelta { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect()
}

/// The wire type of each event, e.g. `["userMessage", "statusChanged", ...]`.
pub fn type_names(events: &[Event]) -> Vec<&'static str> {
    events.iter().map(|e| e.kind.type_name()).collect()
}

/// [`type_names`] with each run of deltas of one kind (`textDelta`, `reasoningDelta`,
/// `toolCallArgsDelta`) shown once: the daemon may split or join a model's pieces any way
/// (deltas already waiting are sent as one), so tests compare this, never delta counts.
pub fn type_names_joined(events: &[Event]) -> Vec<&'static str> {
    let mut names = type_names(events);
    names.dedup_by(|b, a| a == b && a.ends_with("Delta"));
    names
}

/// Asserts that, per agent, each seq is exactly one above the previous one. A
/// `resyncRequired` repeats the latest seq, so it fails this check, as it should: events
/// were lost.
pub fn assert_seq_contiguous(events: &[Event]) {
    let mut last: HashMap<&str, u64> = HashMap::new();
    for event in events {
        if let Some(prev) = last.insert(&event.agent_id, event.seq) {
            assert!(
                event.seq == prev + 1,
                "agent {:?}: seq {} follows {prev}; events: {}",
                event.agent_id,
                event.seq,
                summary(events)
            );
        }
    }
}

/// `seq:type` of each event, space-separated (with the agent when events of several agents
/// are mixed).
pub fn summary(events: &[Event]) -> String {
    let mixed = events.windows(2).any(|w| w[0].agent_id != w[1].agent_id);
    let items: Vec<String> = events
        .iter()
        .map(|e| {
            if mixed {
                format!("{}/{}:{}", e.agent_id, e.seq, e.kind.type_name())
            } else {
                format!("{}:{}", e.seq, e.kind.type_name())
            }
        })
        .collect();
    format!("[{}] ({} event(s))", items.join(" "), events.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn delta(agent: &str, seq: u64, text: &str) -> Event {
        serde_json::from_value(json!({
            "seq": seq, "agentId": agent, "at": 0,
            "type": "textDelta", "messageId": "m", "delta": text
        }))
        .unwrap()
    }

    #[test]
    fn text_types_and_contiguity() {
        let events = [
            delta("a", 4, "Hel"),
            delta("b", 1, "--"),
            delta("a", 5, "lo"),
        ];
        assert_eq!(text_of(&events), "Hel--lo");
        assert_eq!(type_names(&events), ["textDelta"; 3]);
        assert_eq!(type_names_joined(&events), ["textDelta"]);
        assert_seq_contiguous(&events);
    }

    #[test]
    fn finished_reads_the_last_loop_finished() {
        let end: Event = serde_json::from_value(json!({
            "seq": 6, "agentId": "a", "at": 0, "type": "loopFinished",
            "messageId": "m", "reason": "error", "error": "boom"
        }))
        .unwrap();
        let events = [delta("a", 5, "x"), end];
        assert_eq!(
            finished(&events),
            (LoopFinishReason::Error, Some("boom".into()))
        );
    }

    #[test]
    #[should_panic(expected = "the run did not end with loopFinished but Some(TextDelta")]
    fn finished_fails_on_a_run_that_did_not_end() {
        finished(&[delta("a", 4, "x")]);
    }

    #[test]
    #[should_panic(expected = "agent \"a\": seq 6 follows 4")]
    fn a_gap_fails() {
        assert_seq_contiguous(&[delta("a", 4, ""), delta("b", 1, ""), delta("a", 6, "")]);
    }
}
