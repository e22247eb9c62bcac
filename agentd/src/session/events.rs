//! The event bus: per-agent sequence numbers, the replay ring, and fan-out to subscribers.
//!
//! Each agent has an [`EventLog`]. Emitting assigns the next `seq`, serializes the event
//! once, keeps it in a bounded ring (for `sinceSeq` replay) and broadcasts it to the agent's
//! subscribers and to the [`EventHub`] (subscribers of all agents). Broadcast channels are
//! bounded and never block the emitter: a subscriber that falls behind first catches up
//! from the ring and, if even that is too old, gets one `resyncRequired`.
//!
//! Seqs survive restarts through a reservation in the store: before handing out seq `n`
//! the log makes sure the agent's stored mark is at least `n` (raising it a block at a
//! time), so after a crash the next daemon starts above every seq that may have been seen.
//! A clean shutdown stores the exact last seq, so seqs then continue with no jump.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use agent_proto::{Event, EventKind, Message, SessionStatus};
use tokio::sync::broadcast;

use super::mirror::Mirror;
use crate::store::{Store, StoreError, now_ms};

/// Seqs reserved in the store at a time: one write per this many events.
const SEQ_BLOCK: u64 = 1000;
/// Events buffered per agent channel before a slow subscriber lags (and reads the ring).
const AGENT_CHANNEL: usize = 1024;

/// An event as sent: its seq and agent for routing, and its JSON, serialized once.
#[derive(Debug)]
pub struct EmittedEvent {
    pub seq: u64,
    pub agent_id: Arc<str>,
    pub json: Box<str>,
}

impl EmittedEvent {
    fn new(event: &Event, agent_id: Arc<str>) -> Arc<EmittedEvent> {
        // Serializing our own types cannot fail (no maps with non-string keys, no floats
        // that are NaN in events); fall back to an empty object rather than panic.
        let json = serde_json::to_string(event).unwrap_or_else(|_| "{}".into());
        Arc::new(EmittedEvent {
            seq: event.seq,
            agent_id,
            json: json.into_boxed_str(),
        })
    }
}

/// How much history each agent's ring keeps.
#[derive(Debug, Clone, Copy)]
pub struct ReplayLimits {
    pub events: usize,
    pub bytes: usize,
}

/// Fan-out to subscribers of all agents.
#[derive(Debug)]
pub struct EventHub {
    tx: broadcast::Sender<Arc<EmittedEvent>>,
}

impl EventHub {
    pub fn new(capacity: usize) -> EventHub {
        let (tx, _) = broadcast::channel(capacity.max(16));
        EventHub { tx }
    }

    /// A daemon-level event (not about one agent): `agentId` "", `seq` 0, not replayed;
    /// only subscribers of all agents get it.
    pub fn publish_daemon(&self, kind: EventKind) {
        let event = Event {
            seq: 0,
            agent_id: String::new(),
            at: now_ms(),
            kind,
        };
        let _ = self.tx.send(EmittedEvent::new(&event, Arc::from("")));
    }

    pub fn subscribe_all(&self) -> Subscriber {
        Subscriber::All {
            rx: self.tx.subscribe(),
        }
    }
}

#[derive(Debug)]
struct LogState {
    last_seq: u64,
    reserved: u64,
    ring: VecDeque<Arc<EmittedEvent>>,
    ring_bytes: usize,
    /// Created when someone subscribes; dropped when nobody listens any more.
    tx: Option<broadcast::Sender<Arc<EmittedEvent>>>,
    closed: bool,
    /// The latest message as the events up to `last_seq` build it (for snapshots).
    mirror: Mirror,
}

/// The event stream of one agent.
#[derive(Debug)]
pub struct EventLog {
    agent_id: Arc<str>,
    state: Mutex<LogState>,
    store: Store,
    hub: Arc<EventHub>,
    limits: ReplayLimits,
}

impl EventLog {
    /// A log continuing after `last_seq` (the agent's stored mark).
    pub fn new(
        agent_id: &str,
        last_seq: u64,
        store: Store,
        hub: Arc<EventHub>,
        limits: ReplayLimits,
    ) -> EventLog {
        EventLog {
            agent_id: Arc::from(agent_id),
            state: Mutex::new(LogState {
                last_seq,
                reserved: last_seq,
                ring: VecDeque::new(),
                ring_bytes: 0,
                tx: None,
                closed: false,
                mirror: Mirror::default(),
            }),
            store,
            hub,
            limits,
        }
    }

    fn lock(&self) -> MutexGuard<'_, LogState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn last_seq(&self) -> u64 {
        self.lock().last_seq
    }

    /// Emits an event: the next seq, into the ring, out to every subscriber. Waits for the
    /// store only when a new block of seqs must be reserved.
    pub async fn emit(&self, kind: EventKind) -> Result<Arc<EmittedEvent>, StoreError> {
        loop {
            let target = {
                let mut st = self.lock();
                let seq = st.last_seq + 1;
                if seq <= st.reserved {
                    return Ok(self.publish(&mut st, seq, kind));
                }
                seq + SEQ_BLOCK - 1
            };
            self.store.reserve_seq(&self.agent_id, target).await?;
            let mut st = self.lock();
            st.reserved = st.reserved.max(target);
        }
    }

    fn publish(&self, st: &mut LogState, seq: u64, kind: EventKind) -> Arc<EmittedEvent> {
        st.last_seq = seq;
        let event = Event {
            seq,
            agent_id: self.agent_id.to_string(),
            at: now_ms(),
            kind,
        };
        st.mirror.apply(&event);
        let emitted = EmittedEvent::new(&event, self.agent_id.clone());
        if st.closed {
            // The agent is deleted: `agentDeleted` was its last event.
            return emitted;
        }
        st.ring_bytes += emitted.json.len();
        st.ring.push_back(emitted.clone());
        while st.ring.len() > self.limits.events || st.ring_bytes > self.limits.bytes {
            match st.ring.pop_front() {
                Some(old) => st.ring_bytes -= old.json.len(),
                None => break,
            }
        }
        if let Some(tx) = &st.tx
            && tx.send(emitted.clone()).is_err()
        {
            st.tx = None; // nobody listens any more
        }
        // No receivers is fine: nobody subscribed to all agents.
        let _ = self.hub.tx.send(emitted.clone());
        emitted
    }

    /// Subscribes to this agent's events. With `since`, the events after it are replayed
    /// first (or a `resyncRequired` when the ring no longer holds them).
    pub fn subscribe(self: &Arc<Self>, since: Option<u64>) -> Subscriber {
        let mut st = self.lock();
        let rx = if st.closed {
            None
        } else {
            Some(
                st.tx
                    .get_or_insert_with(|| broadcast::channel(AGENT_CHANNEL).0)
                    .subscribe(),
            )
        };
        let backlog = match since {
            Some(since) if since < st.last_seq => self.catch_up(&st, since),
            // Ahead of us: the client saw another store (or a future we never had).
            Some(since) if since > st.last_seq => VecDeque::from([self.resync(
                &st,
                format!(
                    "sinceSeq {since} is ahead of this agent's last seq {}; reload with getAgent and listMessages",
                    st.last_seq
                ),
            )]),
            _ => VecDeque::new(),
        };
        Subscriber::Agent {
            log: self.clone(),
            rx,
            backlog,
            delivered: st.last_seq,
        }
    }

    /// A run starts writing `message` (as stored): snapshots fold its events into it.
    pub fn begin_message(&self, message: &Message) {
        self.lock().mirror.begin(message);
    }

    /// Subscribes with a `snapshot` first: the agent's latest message as of the last seq
    /// (`status` when no `statusChanged` was numbered since the log was made), then the
    /// events after it. An agent that ran nothing since it was loaded has its latest
    /// message read from the store, taken only if no event came meanwhile.
    pub async fn subscribe_snapshot(
        self: &Arc<Self>,
        status: SessionStatus,
    ) -> Result<Subscriber, super::SessionError> {
        for _ in 0..8 {
            let unseeded_at = {
                let st = self.lock();
                (!st.mirror.is_known()).then_some(st.last_seq)
            };
            let stored = match unseeded_at {
                Some(_) => self.store.last_assistant_message(&self.agent_id).await?,
                None => None,
            };
            let mut st = self.lock();
            if !st.mirror.is_known() {
                if unseeded_at != Some(st.last_seq) {
                    continue; // an event came while the store was read: read again
                }
                st.mirror.seed(stored);
            }
            let event = Event {
                seq: st.last_seq,
                agent_id: self.agent_id.to_string(),
                at: now_ms(),
                kind: st.mirror.snapshot(status),
            };
            let snapshot = EmittedEvent::new(&event, self.agent_id.clone());
            let rx = if st.closed {
                None
            } else {
                Some(
                    st.tx
                        .get_or_insert_with(|| broadcast::channel(AGENT_CHANNEL).0)
                        .subscribe(),
                )
            };
            return Ok(Subscriber::Agent {
                log: self.clone(),
                rx,
                backlog: VecDeque::from([snapshot]),
                delivered: st.last_seq,
            });
        }
        Err(super::SessionError::Internal(
            "the agent's events kept coming while its snapshot was read; subscribe again".into(),
        ))
    }

    /// The events after `since` from the ring, or one `resyncRequired` if some are gone.
    fn catch_up(&self, st: &LogState, since: u64) -> VecDeque<Arc<EmittedEvent>> {
        let oldest = st.ring.front().map_or(u64::MAX, |e| e.seq);
        if oldest <= since + 1 {
            st.ring.iter().filter(|e| e.seq > since).cloned().collect()
        } else {
            let oldest = if oldest == u64::MAX {
                st.last_seq + 1
            } else {
                oldest
            };
            VecDeque::from([self.resync(
                st,
                format!(
                    "events after seq {since} are no longer kept (oldest kept: {oldest}); reload with getAgent and listMessages"
                ),
            )])
        }
    }

    /// A `resyncRequired` for one subscriber, at the agent's latest seq.
    fn resync(&self, st: &LogState, reason: String) -> Arc<EmittedEvent> {
        let event = Event {
            seq: st.last_seq,
            agent_id: self.agent_id.to_string(),
            at: now_ms(),
            kind: EventKind::ResyncRequired { reason },
        };
        EmittedEvent::new(&event, self.agent_id.clone())
    }

    /// Ends every subscription of this agent (after the events already sent to them).
    pub fn close(&self) {
        let mut st = self.lock();
        st.closed = true;
        st.tx = None;
    }

    /// Stores the exact last seq (clean shutdown).
    pub async fn persist_last_seq(&self) -> Result<(), StoreError> {
        let seq = self.last_seq();
        self.store.set_last_seq(&self.agent_id, seq).await
    }
}

/// A stream of events for one subscription.
#[derive(Debug)]
pub enum Subscriber {
    Agent {
        log: Arc<EventLog>,
        rx: Option<broadcast::Receiver<Arc<EmittedEvent>>>,
        backlog: VecDeque<Arc<EmittedEvent>>,
        /// Highest seq handed out (or skipped by a resync) so far.
        delivered: u64,
    },
    All {
        rx: broadcast::Receiver<Arc<EmittedEvent>>,
    },
}

impl Subscriber {
    /// The next event; `None` when the stream has ended (the agent was deleted).
    pub async fn next(&mut self) -> Option<Arc<EmittedEvent>> {
        match self {
            Subscriber::Agent {
                log,
                rx,
                backlog,
                delivered,
            } => loop {
                if let Some(event) = backlog.pop_front() {
                    return Some(event);
                }
                let receiver = rx.as_mut()?;
                match receiver.recv().await {
                    Ok(event) if event.seq <= *delivered => continue,
                    Ok(event) => {
                        *delivered = event.seq;
                        return Some(event);
                    }
                    Err(broadcast::error::RecvError::Closed) => return None,
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        // Start over from the ring: fresh receiver, then what we missed.
                        let st = log.lock();
                        *rx = st.tx.as_ref().map(broadcast::Sender::subscribe);
                        *backlog = log.catch_up(&st, *delivered);
                        *delivered = st.last_seq;
                    }
                }
            },
            Subscriber::All { rx } => match rx.recv().await {
                Ok(event) => Some(event),
                Err(broadcast::error::RecvError::Closed) => None,
                Err(broadcast::error::RecvError::Lagged(missed)) => {
                    let event = Event {
                        seq: 0,
                        agent_id: String::new(),
                        at: now_ms(),
                        kind: EventKind::ResyncRequired {
                            reason: format!(
                                "this subscriber fell {missed} events behind; reload with listAgents and listMessages, or subscribe per agent with sinceSeq"
                            ),
                        },
                    };
                    Some(EmittedEvent::new(&event, Arc::from("")))
                }
            },
        }
    }
}

impl crate::agent_loop::EventSink for EventLog {
    fn emit(&self, kind: EventKind) -> futures::future::BoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            EventLog::emit(self, kind)
                .await
                .map(drop)
                .map_err(|e| e.to_string())
        })
    }
}

#[cfg(test)]
mod tests;
