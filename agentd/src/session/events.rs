//! The event bus: per-agent sequence numbers, the replay ring, and fan-out to subscribers.
//!
//! Each agent has an [`EventLog`]. Emitting assigns the next `seq`, serializes the event
//! once (every subscriber gets the same bytes), keeps it in the agent's replay ring
//! (`ring`: compact, bounded per agent and by a byte budget across agents) and hands it
//! to every subscription's outbox (`fanout`). Nothing on this path waits for a client: an
//! outbox that is full refuses the event, and that subscriber later catches up from the
//! ring or, if even that is too old, gets one `resyncRequired`.
//!
//! Seqs survive restarts through a reservation in the store: before handing out seq `n`
//! the log makes sure the agent's stored mark is at least `n` (raising it a block at a
//! time), so after a crash the next daemon starts above every seq that may have been seen.
//! A clean shutdown (and the eviction of an idle session) stores the exact last seq, so
//! seqs then continue with no jump.
//!
//! With several daemons on one database, an agent's events are numbered by its home
//! daemon only; the others feed them into their own log of it (`relay`), with the home's
//! seqs and JSON.

mod fanout;
mod relay;
mod ring;

use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use agent_proto::{Event, EventKind, Message, SessionStatus};

use fanout::Slot;
pub use fanout::{After, EventHub, Outbox, PendingSubscription, Resumed, Subscription};
pub use relay::Relayed;
use ring::{AsRing, Replay, Ring, Trimmable};
pub use ring::{ReplayBudget, ReplayLimits};

use super::mirror::Mirror;
use crate::store::{Store, StoreError, now_ms};

/// Seqs reserved in the store at a time: one write per this many events.
const SEQ_BLOCK: u64 = 1000;

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

#[derive(Debug)]
struct LogState {
    last_seq: u64,
    reserved: u64,
    ring: Ring,
    slots: Vec<Slot>,
    closed: bool,
    /// The latest message as the events up to `last_seq` build it (for snapshots).
    mirror: Mirror,
    /// When the last event was emitted (unix ms).
    last_at: i64,
    /// A relaying log that does not know where its home's seqs are (none was published
    /// yet when it was made): the first relayed event sets them.
    floating: bool,
}

impl AsRing for LogState {
    fn ring(&mut self) -> &mut Ring {
        &mut self.ring
    }
}

/// The event stream of one agent.
#[derive(Debug)]
pub struct EventLog {
    agent_id: Arc<str>,
    state: Arc<Mutex<LogState>>,
    store: Store,
    hub: Arc<EventHub>,
    budget: Arc<ReplayBudget>,
}

/// Where a new log gets its limits and sends events.
#[derive(Debug, Clone)]
pub struct LogContext {
    pub store: Store,
    pub hub: Arc<EventHub>,
    pub limits: ReplayLimits,
    pub budget: Arc<ReplayBudget>,
}

impl EventLog {
    /// A log continuing after `last_seq`, with seqs reserved in the store up to `reserved`
    /// (the agent's stored mark, at least `last_seq`).
    pub fn new(agent_id: &str, last_seq: u64, reserved: u64, cx: &LogContext) -> EventLog {
        EventLog {
            agent_id: Arc::from(agent_id),
            state: Arc::new(Mutex::new(LogState {
                last_seq,
                reserved: reserved.max(last_seq),
                ring: Ring::new(cx.limits, cx.budget.clone()),
                slots: Vec::new(),
                closed: false,
                mirror: Mirror::default(),
                last_at: 0,
                floating: false,
            })),
            store: cx.store.clone(),
            hub: cx.hub.clone(),
            budget: cx.budget.clone(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, LogState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn last_seq(&self) -> u64 {
        self.lock().last_seq
    }

    /// The exact last seq, whether anyone subscribes, and when the last event was
    /// emitted (for eviction).
    pub(super) fn idle_state(&self) -> (u64, bool, i64) {
        let st = self.lock();
        (st.last_seq, !st.slots.is_empty(), st.last_at)
    }

    /// Emits an event: the next seq, into the ring, out to every subscriber. Waits for the
    /// store only when a new block of seqs must be reserved.
    pub async fn emit(&self, kind: EventKind) -> Result<Arc<EmittedEvent>, StoreError> {
        loop {
            let target = {
                let mut st = self.lock();
                let seq = st.last_seq + 1;
                if seq <= st.reserved {
                    let (emitted, added) = self.publish(&mut st, seq, kind);
                    drop(st);
                    self.tell_budget(added);
                    return Ok(emitted);
                }
                seq + SEQ_BLOCK - 1
            };
            self.store.reserve_seq(&self.agent_id, target).await?;
            let mut st = self.lock();
            st.reserved = st.reserved.max(target);
        }
    }

    fn publish(
        &self,
        st: &mut LogState,
        seq: u64,
        kind: EventKind,
    ) -> (Arc<EmittedEvent>, Option<u64>) {
        let at = now_ms();
        let event = Event {
            seq,
            agent_id: self.agent_id.to_string(),
            at,
            kind,
        };
        let emitted = EmittedEvent::new(&event, self.agent_id.clone());
        if st.closed {
            // The agent is deleted: `agentDeleted` was its last event; this one goes
            // nowhere and takes no seq.
            return (emitted, None);
        }
        let added = self.record(st, &event, &emitted, at);
        (emitted, added)
    }

    /// Applies a numbered event (emitted here or relayed from the agent's home): its seq
    /// becomes the last, the mirror folds it in, the ring keeps it, every subscriber gets
    /// it. `local_at` is when it happened by this daemon's clock (for eviction). Returns
    /// the id of a new ring entry, for [`EventLog::tell_budget`].
    fn record(
        &self,
        st: &mut LogState,
        event: &Event,
        emitted: &Arc<EmittedEvent>,
        local_at: i64,
    ) -> Option<u64> {
        st.last_seq = event.seq;
        st.mirror.apply(event);
        st.last_at = local_at;
        let added = st.ring.push(emitted, event.at, &event.kind);
        fanout::deliver(&mut st.slots, emitted);
        self.hub.publish(emitted);
        added
    }

    /// Tells the budget of a new ring entry (call without holding the state's lock).
    fn tell_budget(&self, added: Option<u64>) {
        if added.is_some() || self.budget.over() {
            let ring: Weak<dyn Trimmable> = Arc::downgrade(&self.state) as Weak<_>;
            self.budget.added(ring, added);
        }
    }

    /// A subscription to this agent's events; with `since`, the events after it are
    /// replayed first (or a `resyncRequired` when the ring no longer holds them).
    pub fn subscribe(self: &Arc<Self>, since: Option<u64>) -> PendingSubscription {
        PendingSubscription::agent(self.clone(), since, false)
    }

    /// A subscription whose first event is a `snapshot` as of the seq it is attached at,
    /// then the events after it. Call [`EventLog::seed_mirror`] first.
    pub fn subscribe_snapshot(self: &Arc<Self>) -> PendingSubscription {
        PendingSubscription::agent(self.clone(), None, true)
    }

    /// Up to `max` events a waiting slot missed, from the ring.
    fn resume(&self, id: u64, max: usize) -> Resumed {
        let mut guard = self.lock();
        let st = &mut *guard;
        let Some(at) = st.slots.iter().position(|s| s.id == id) else {
            return Resumed {
                events: Vec::new(),
                state: After::Ended,
            };
        };
        if !st.slots[at].waiting {
            return Resumed {
                events: Vec::new(),
                state: After::Live,
            };
        }
        // A snapshot is taken as it is sent: the state as of the last seq, and the slot
        // goes on from there (its first resume, under the same lock as every emit).
        let snapshot = st.slots[at].snapshot.then(|| self.snapshot(st));
        let slot = &mut st.slots[at];
        let mut events = Vec::new();
        if let Some(snapshot) = snapshot {
            slot.snapshot = false;
            events.push(snapshot);
            slot.delivered = st.last_seq;
        } else if let Some(reason) = slot.resync.take() {
            events.push(fanout::resync(&self.agent_id, st.last_seq, reason));
            slot.delivered = st.last_seq;
        } else if slot.delivered < st.last_seq {
            match st.ring.after(&self.agent_id, slot.delivered, max) {
                Replay::Events(replayed) => {
                    if let Some(last) = replayed.last() {
                        slot.delivered = last.seq;
                    }
                    events = replayed;
                }
                Replay::Gone { oldest } => {
                    let oldest = oldest.unwrap_or(st.last_seq + 1);
                    let reason = format!(
                        "events after seq {} are no longer kept (oldest kept: {oldest}); reload with getAgent and listMessages",
                        slot.delivered
                    );
                    events.push(fanout::resync(&self.agent_id, st.last_seq, reason));
                    slot.delivered = st.last_seq;
                }
            }
        }
        let state = if slot.delivered < st.last_seq {
            After::Behind
        } else if st.closed {
            st.slots.remove(at);
            After::Ended
        } else {
            slot.waiting = false;
            After::Live
        };
        Resumed { events, state }
    }

    /// The history was cut (`revertTo`): the next snapshot reads the agent's latest
    /// message from the store again.
    pub fn forget_message(&self) {
        self.lock().mirror.forget_message();
    }

    /// A run starts writing `message` (as stored): snapshots fold its events into it.
    pub fn begin_message(&self, message: &Message) {
        self.lock().mirror.begin(message);
    }

    /// Makes sure the mirror knows the agent's latest message, for a snapshot. An agent
    /// that ran nothing since its log was made has it read from the store (and its
    /// status taken from `status`), kept only if no event came meanwhile.
    pub(super) async fn seed_mirror(
        &self,
        status: impl Fn() -> SessionStatus,
    ) -> Result<(), super::SessionError> {
        for _ in 0..8 {
            let unseeded_at = {
                let st = self.lock();
                if st.mirror.is_known() {
                    return Ok(());
                }
                st.last_seq
            };
            let now = status();
            let stored = self.store.last_assistant_message(&self.agent_id).await?;
            let mut st = self.lock();
            if st.mirror.is_known() {
                return Ok(());
            }
            if unseeded_at == st.last_seq {
                st.mirror.seed(now, stored);
                return Ok(());
            }
            // an event came while the store was read: read again
        }
        Err(super::SessionError::Internal(
            "the agent's events kept coming while its snapshot was read; subscribe again".into(),
        ))
    }

    /// The `snapshot` event as of the last seq (the mirror must be seeded).
    fn snapshot(&self, st: &LogState) -> Arc<EmittedEvent> {
        let event = Event {
            seq: st.last_seq,
            agent_id: self.agent_id.to_string(),
            at: now_ms(),
            kind: st.mirror.snapshot(),
        };
        EmittedEvent::new(&event, self.agent_id.clone())
    }

    /// Ends every subscription of this agent (after the events already sent to them; one
    /// still catching up ends when it has caught up).
    pub fn close(&self) {
        Self::end(&mut self.lock());
    }

    /// [`EventLog::close`], under the state's lock.
    fn end(st: &mut LogState) {
        st.closed = true;
        st.slots.retain(|slot| {
            if slot.waiting {
                return true;
            }
            slot.end();
            false
        });
    }

    /// Stores the exact last seq (clean shutdown).
    pub async fn persist_last_seq(&self) -> Result<(), StoreError> {
        let seq = self.last_seq();
        self.store.set_last_seq(&self.agent_id, seq).await
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
