//! What daemons of one database say to each other, as notice payloads (JSON, under
//! PostgreSQL's 8000 bytes: `store::cluster::MAX_NOTICE_BYTES`).
//!
//! - Events: a home's batch of events, inline when the batch fits, else the ranges of
//!   seqs the receivers read from the events table (where every event is stored anyway).
//! - Commands: a request forwarded to an agent's home, and its answer; a body too large
//!   for a notice is stored (`cluster_bodies`) and the notice names it.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::store::cluster::MAX_NOTICE_BYTES;

/// A batch of events from the daemon `from`.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EventsNotice<'a> {
    #[serde(borrow)]
    pub from: &'a str,
    /// The events themselves, in order; empty when `ranges` says where they are.
    #[serde(default, borrow, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<InlineEvent<'a>>,
    #[serde(default, borrow, skip_serializing_if = "Vec::is_empty")]
    pub ranges: Vec<Range<'a>>,
}

/// One event of a batch: its agent, seq and JSON as sent to clients.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InlineEvent<'a> {
    #[serde(borrow)]
    pub agent_id: &'a str,
    pub seq: u64,
    #[serde(borrow)]
    pub event: &'a RawValue,
}

/// Seqs `first..=last` of an agent, stored in the events table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Range<'a> {
    #[serde(borrow)]
    pub agent_id: &'a str,
    pub first: u64,
    pub last: u64,
}

/// The notice of a batch of events (agent, seq, JSON), in the order given: inline if it
/// fits in a notice, else as ranges of seqs per agent (consecutive seqs of one agent
/// merged). The ranges of any batch fit: a batch is cut to at most [`MAX_BATCH`] events.
pub fn events_notice(from: &str, batch: &[(&str, u64, &str)]) -> String {
    let inline: Option<Vec<InlineEvent>> = batch
        .iter()
        .map(|(agent_id, seq, json)| {
            Some(InlineEvent {
                agent_id,
                seq: *seq,
                event: serde_json::from_str(json).ok()?,
            })
        })
        .collect();
    if let Some(events) = inline {
        let notice = EventsNotice {
            from,
            events,
            ranges: Vec::new(),
        };
        let text = serde_json::to_string(&notice).unwrap_or_default();
        if !text.is_empty() && text.len() <= MAX_NOTICE_BYTES {
            return text;
        }
    }
    let mut ranges: Vec<Range> = Vec::new();
    for (agent_id, seq, _) in batch {
        match ranges.last_mut() {
            Some(r) if r.agent_id == *agent_id && r.last + 1 == *seq => r.last = *seq,
            _ => ranges.push(Range {
                agent_id,
                first: *seq,
                last: *seq,
            }),
        }
    }
    let notice = EventsNotice {
        from,
        events: Vec::new(),
        ranges,
    };
    serde_json::to_string(&notice).unwrap_or_default()
}

/// Events published in one notice at most: their ranges always fit (each range is at
/// most ~90 bytes with a UUID agent id).
pub const MAX_BATCH: usize = 64;

/// A request forwarded to the daemon `to`, or an answer to one.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CommandNotice<'a> {
    /// The daemon that is to act on it.
    #[serde(borrow)]
    pub to: &'a str,
    /// The daemon the answer goes back to.
    #[serde(borrow)]
    pub from: &'a str,
    /// The request's id (an answer carries its request's).
    #[serde(borrow)]
    pub id: &'a str,
    /// A request (else an answer).
    #[serde(default)]
    pub request: bool,
    /// The JSON-RPC request or response; `None` when too large: stored under `id`
    /// (`store::cluster::Member::put_body`).
    #[serde(default, borrow)]
    pub body: Option<Cow<'a, str>>,
}

/// The notice carrying `body` (with [`CommandNotice::body`]), or `None` when it would not
/// fit: then the body is stored and [`command_notice_stored`] names it.
pub fn command_notice(to: &str, from: &str, id: &str, request: bool, body: &str) -> Option<String> {
    let text = serde_json::to_string(&CommandNotice {
        to,
        from,
        id,
        request,
        body: Some(Cow::Borrowed(body)),
    })
    .ok()?;
    (text.len() <= MAX_NOTICE_BYTES).then_some(text)
}

/// The notice of a body stored under `id`.
pub fn command_notice_stored(to: &str, from: &str, id: &str, request: bool) -> String {
    serde_json::to_string(&CommandNotice {
        to,
        from,
        id,
        request,
        body: None,
    })
    .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    const AGENT: &str = "01a226b6-2d64-728e-b014-fa30e7c3455a";
    const OTHER: &str = "01a226b6-2d69-7597-ab9d-1197f67a001d";

    #[test]
    fn a_small_batch_goes_inline_with_its_events_as_sent() {
        let batch = [
            (AGENT, 7, r#"{"seq":7,"type":"textDelta","text":"a\"b"}"#),
            (AGENT, 8, r#"{"seq":8}"#),
        ];
        let text = events_notice("d1", &batch);
        let notice: EventsNotice = serde_json::from_str(&text).unwrap();
        assert_eq!(notice.from, "d1");
        assert!(notice.ranges.is_empty());
        let got: Vec<(&str, u64, &str)> = notice
            .events
            .iter()
            .map(|e| (e.agent_id, e.seq, e.event.get()))
            .collect();
        assert_eq!(got, batch);
    }

    #[test]
    fn a_large_batch_names_its_ranges_and_every_batch_fits() {
        let big = format!(r#"{{"text":"{}"}}"#, "x".repeat(MAX_NOTICE_BYTES));
        let batch = [
            (AGENT, 1, big.as_str()),
            (AGENT, 2, "{}"),
            (OTHER, 5, "{}"),
            (AGENT, 4, "{}"),
        ];
        let text = events_notice("d1", &batch);
        assert!(text.len() <= MAX_NOTICE_BYTES);
        let notice: EventsNotice = serde_json::from_str(&text).unwrap();
        assert!(notice.events.is_empty());
        assert_eq!(
            notice.ranges,
            [
                Range {
                    agent_id: AGENT,
                    first: 1,
                    last: 2
                },
                Range {
                    agent_id: OTHER,
                    first: 5,
                    last: 5
                },
                Range {
                    agent_id: AGENT,
                    first: 4,
                    last: 4
                },
            ]
        );
        // The worst batch: every event of another agent, each its own range.
        let agents: Vec<String> = (0..MAX_BATCH)
            .map(|i| format!("01a226b6-2d64-728e-b014-{i:012}"))
            .collect();
        let worst: Vec<(&str, u64, &str)> = agents
            .iter()
            .map(|a| (a.as_str(), u64::MAX, big.as_str()))
            .collect();
        assert!(
            events_notice("01a226b6-2d64-728e-b014-fa30e7c3455a", &worst).len() <= MAX_NOTICE_BYTES
        );
    }

    #[test]
    fn a_command_carries_its_body_until_it_does_not_fit() {
        let text = command_notice("d2", "d1", "c1", true, r#"{"method":"x"}"#).unwrap();
        let notice: CommandNotice = serde_json::from_str(&text).unwrap();
        assert_eq!((notice.to, notice.from, notice.id), ("d2", "d1", "c1"));
        assert!(notice.request);
        assert_eq!(notice.body.as_deref(), Some(r#"{"method":"x"}"#));
        let large = "z".repeat(MAX_NOTICE_BYTES);
        assert_eq!(command_notice("d2", "d1", "c1", false, &large), None);
        let stored = command_notice_stored("d2", "d1", "c1", false);
        let stored: CommandNotice = serde_json::from_str(&stored).unwrap();
        assert_eq!(stored.body, None);
        assert!(!stored.request);
    }
}
