//! Events numbered by another daemon: the agent's home (several daemons on one database,
//! docs/scale-out.md) numbers its events, and every other daemon with subscribers of the
//! agent feeds them into its own log of it with [`EventLog::relay`], so those subscribers
//! get the stream the home's get: the same seqs and the same JSON, replays included.
//!
//! A relayed event is applied as an emitted one is after it got its seq (mirror, ring,
//! subscribers, the all-agents hub), with no reservation in the store: the home reserved
//! it. The reservation mark is only raised in memory, so if this daemon becomes the home
//! its first own seq is above every relayed one. Events come in order or not at all: a
//! seq already applied is dropped, and a seq past the next one means notices were lost,
//! which every subscriber is told (`resyncRequired`) before the event; the ring and the
//! mirror start again after the gap, so no replay or snapshot pretends to know the
//! missing events.
//!
//! It owns no I/O: the caller (the cluster's listener) hands over events already parsed.

use std::ops::Range;
use std::sync::Arc;

use agent_proto::{Event, EventKind};

use super::{EmittedEvent, EventLog, LogState, fanout};
use crate::session::mirror::Mirror;
use crate::store::now_ms;

/// What [`EventLog::relay`] did with an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Relayed {
    /// It was the next seq: applied.
    Applied,
    /// Its seq was applied already (a notice heard twice, or read back after a loss):
    /// dropped.
    Duplicate,
    /// Applied, after the seqs `missed` that never came: every subscriber got one
    /// `resyncRequired` first.
    Gap { missed: Range<u64> },
    /// The agent is deleted (its log is closed): dropped.
    Closed,
    /// The event is about another agent: dropped (the caller routed it wrong).
    OtherAgent,
}

impl EmittedEvent {
    /// An event as another daemon serialized it, sent on as is.
    pub(super) fn relayed(seq: u64, agent_id: Arc<str>, json: Box<str>) -> Arc<EmittedEvent> {
        Arc::new(EmittedEvent {
            seq,
            agent_id,
            json,
        })
    }
}

impl EventLog {
    /// Applies an event the agent's home numbered; `json` is the event as the home
    /// serialized it (sent to subscribers byte for byte). An `agentDeleted` closes the log
    /// as a local deletion does (the caller drops the session).
    pub fn relay(&self, event: Event, json: Box<str>) -> Relayed {
        if *event.agent_id != *self.agent_id {
            return Relayed::OtherAgent;
        }
        let mut st = self.lock();
        if st.closed {
            return Relayed::Closed;
        }
        if st.floating {
            // The home's first event this log hears: its seqs go on from there.
            st.floating = false;
            st.last_seq = event.seq - 1;
            st.reserved = st.reserved.max(st.last_seq);
        }
        if event.seq <= st.last_seq {
            return Relayed::Duplicate;
        }
        let missed = st.last_seq + 1..event.seq;
        if !missed.is_empty() {
            self.skip(&mut st, &missed);
        }
        // If this daemon becomes the home, it reserves above every seq it relayed.
        st.reserved = st.reserved.max(event.seq);
        let emitted = EmittedEvent::relayed(event.seq, self.agent_id.clone(), json);
        let added = self.record(&mut st, &event, &emitted, now_ms());
        if matches!(event.kind, EventKind::AgentDeleted {}) {
            // Its last event: closed under the same lock, so nothing relayed follows it.
            Self::end(&mut st);
        }
        drop(st);
        self.tell_budget(added);
        if missed.is_empty() {
            Relayed::Applied
        } else {
            Relayed::Gap { missed }
        }
    }

    /// A log of another daemon's agent that does not know where the home's seqs are: the
    /// first event relayed into it sets them (no gap is told for the seqs before it).
    pub fn float(&self) {
        self.lock().floating = true;
    }

    /// This daemon became the agent's home: its seqs go on above `mark`, the store's (the
    /// last home stored its exact last seq, or had reserved up to it if it died). Seqs up
    /// to `mark` never relayed here are a gap, told to the subscribers as one; the next
    /// local emit reserves a new block above.
    pub fn take_over(&self, mark: u64) {
        let mut st = self.lock();
        if st.closed {
            return;
        }
        st.floating = false;
        if mark > st.last_seq {
            let missed = st.last_seq + 1..mark + 1;
            self.skip(&mut st, &missed);
        }
        st.reserved = st.last_seq;
    }

    /// The seqs `missed` will never be applied: the log goes on after them, every
    /// subscriber is told, and what the ring and the mirror hold (built from the events
    /// before them) is dropped. A replay from before the gap would cross it, so the ring
    /// starts again at the next event; the mirror is seeded from the store again for the
    /// next snapshot.
    fn skip(&self, st: &mut LogState, missed: &Range<u64>) {
        let last = missed.end - 1;
        let reason = format!(
            "events {}..={last} of this agent were lost on their way from its home daemon; reload with getAgent and listMessages",
            missed.start
        );
        st.last_seq = last;
        st.ring.clear();
        st.mirror = Mirror::default();
        fanout::resync_all(&mut st.slots, &self.agent_id, last, &reason);
    }
}

#[cfg(test)]
mod tests;
