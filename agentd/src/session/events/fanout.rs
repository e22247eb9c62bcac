//! Fan-out: how an emitted event reaches the connections subscribed to it.
//!
//! Each subscription is a [`Slot`] in its agent's log (or in the hub, for all agents) that
//! names an [`Outbox`]: the queue of one connection, drained by that connection's single
//! writer. Emitting hands the event (serialized once, shared) to every slot's outbox under
//! the log's lock, so each subscription sees its agent's events in seq order, and never
//! waits: an outbox that is full refuses it, and the slot then waits until the writer
//! asks for what it missed ([`Subscription::resume`]), which comes from the replay ring
//! (or is one `resyncRequired` when the ring no longer has it).
//!
//! Lock order: a log's state, then the hub's slots, then an outbox's queue.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use agent_proto::{Event, EventKind};

use super::{EmittedEvent, EventLog};
use crate::store::now_ms;

/// Where a subscription's events go: one connection's queue. Implemented by the transport.
pub trait Outbox: Send + Sync {
    /// Queues `event` for subscription `key`. False when the queue is full: nothing was
    /// queued, and the outbox must call [`Subscription::resume`] for `key` once it has
    /// room (the subscription gets nothing more until then).
    fn deliver(&self, key: u64, event: &Arc<EmittedEvent>) -> bool;
    /// Subscription `key` has events to catch up on before it is live: call
    /// [`Subscription::resume`] for it.
    fn behind(&self, key: u64);
    /// Subscription `key` has ended (its agent was deleted), after the events queued so
    /// far.
    fn ended(&self, key: u64);
    /// Queues a notification frame for this connection only (e.g. `completionDelta` of a
    /// call it made), in order with everything else queued.
    fn notify(&self, frame: String);
}

/// Ids of slots, unique in the daemon.
static NEXT_SLOT: AtomicU64 = AtomicU64::new(1);

/// One subscription in a log or in the hub.
pub(super) struct Slot {
    pub(super) id: u64,
    key: u64,
    outbox: Arc<dyn Outbox>,
    /// The highest seq given to the outbox (or covered by a resync).
    pub(super) delivered: u64,
    /// Waiting for [`Subscription::resume`]: it fell behind, or has a backlog to replay.
    pub(super) waiting: bool,
    /// Events it did not get while waiting (subscriptions of all agents).
    missed: u64,
    /// A `resyncRequired` reason to send first (a `sinceSeq` ahead of the log).
    pub(super) resync: Option<String>,
    /// A `snapshot` to send first (`subscribe` with `snapshot: true`).
    pub(super) snapshot: bool,
}

impl std::fmt::Debug for Slot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Slot")
            .field("id", &self.id)
            .field("delivered", &self.delivered)
            .field("waiting", &self.waiting)
            .finish_non_exhaustive()
    }
}

impl Slot {
    pub(super) fn new(key: u64, outbox: Arc<dyn Outbox>, delivered: u64) -> Slot {
        Slot {
            id: NEXT_SLOT.fetch_add(1, Ordering::Relaxed),
            key,
            outbox,
            delivered,
            waiting: false,
            missed: 0,
            resync: None,
            snapshot: false,
        }
    }

    /// Asks the outbox to resume this slot (it has a backlog).
    pub(super) fn wait(&mut self) {
        self.waiting = true;
        self.outbox.behind(self.key);
    }

    pub(super) fn end(&self) {
        self.outbox.ended(self.key);
    }
}

/// Hands `event` to every slot that is live.
pub(super) fn deliver(slots: &mut [Slot], event: &Arc<EmittedEvent>) {
    for slot in slots {
        if slot.waiting {
            slot.missed += 1;
        } else if slot.outbox.deliver(slot.key, event) {
            slot.delivered = event.seq;
        } else {
            slot.waiting = true;
            slot.missed = 1;
        }
    }
}

/// Tells every slot of an agent that the events up to `last_seq` it has not had are lost
/// (`reason` says why), before the agent's next event: a live slot gets the
/// `resyncRequired` at once; one waiting (behind, or with a replay or a snapshot still to
/// send) gets it instead of what it waited for, at its next resume.
pub(super) fn resync_all(slots: &mut [Slot], agent_id: &Arc<str>, last_seq: u64, reason: &str) {
    for slot in slots {
        // A snapshot not sent yet would be folded from events that are missing.
        slot.snapshot = false;
        if !slot.waiting {
            if slot
                .outbox
                .deliver(slot.key, &resync(agent_id, last_seq, reason.to_owned()))
            {
                slot.delivered = last_seq;
                continue;
            }
            // Refused: the outbox resumes the slot once it has room.
            slot.waiting = true;
        }
        slot.resync = Some(reason.to_owned());
    }
}

/// What [`Subscription::resume`] gives the writer.
#[derive(Debug)]
pub struct Resumed {
    /// Events to send now, in order.
    pub events: Vec<Arc<EmittedEvent>>,
    pub state: After,
}

/// Where a subscription stands after [`Subscription::resume`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum After {
    /// Caught up: its next events come through the outbox.
    Live,
    /// More to catch up on: call `resume` again.
    Behind,
    /// The stream is over (the agent was deleted): drop the subscription.
    Ended,
}

impl Resumed {
    fn ended() -> Resumed {
        Resumed {
            events: Vec::new(),
            state: After::Ended,
        }
    }
}

/// Fan-out to subscribers of all agents: every agent's events, and daemon events.
#[derive(Debug, Default)]
pub struct EventHub {
    slots: Mutex<Vec<Slot>>,
    /// Number of slots, read without the lock on every emit.
    count: AtomicU64,
}

impl EventHub {
    pub fn new() -> EventHub {
        EventHub::default()
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Slot>> {
        self.slots.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Hands an event to the subscribers of all agents.
    pub(super) fn publish(&self, event: &Arc<EmittedEvent>) {
        if self.count.load(Ordering::Relaxed) == 0 {
            return;
        }
        deliver(&mut self.lock(), event);
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
        self.publish(&EmittedEvent::new(&event, Arc::from("")));
    }

    /// A subscription to every agent's events, from now on.
    pub fn subscribe_all(self: &Arc<Self>) -> PendingSubscription {
        PendingSubscription {
            source: Source::All(self.clone()),
            since: None,
            snapshot: false,
        }
    }

    fn attach(&self, slot: Slot) {
        let mut slots = self.lock();
        slots.push(slot);
        self.count.store(slots.len() as u64, Ordering::Relaxed);
    }

    fn detach(&self, id: u64) {
        let mut slots = self.lock();
        slots.retain(|s| s.id != id);
        self.count.store(slots.len() as u64, Ordering::Relaxed);
    }

    fn resume(&self, id: u64) -> Resumed {
        let mut slots = self.lock();
        let Some(slot) = slots.iter_mut().find(|s| s.id == id) else {
            return Resumed::ended();
        };
        let missed = std::mem::take(&mut slot.missed);
        slot.waiting = false;
        let mut events = Vec::new();
        if missed > 0 {
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
            events.push(EmittedEvent::new(&event, Arc::from("")));
        }
        Resumed {
            events,
            state: After::Live,
        }
    }
}

#[derive(Debug, Clone)]
enum Source {
    Agent(Arc<EventLog>),
    All(Arc<EventHub>),
}

/// A subscription that is checked (its agent exists) but not attached yet: attach it once
/// the `subscribe` answer is queued, so the answer precedes every event.
#[derive(Debug)]
pub struct PendingSubscription {
    source: Source,
    since: Option<u64>,
    snapshot: bool,
}

impl PendingSubscription {
    pub(super) fn agent(
        log: Arc<EventLog>,
        since: Option<u64>,
        snapshot: bool,
    ) -> PendingSubscription {
        PendingSubscription {
            source: Source::Agent(log),
            since,
            snapshot,
        }
    }

    /// The subscription, as `key` of `outbox`; it gets nothing until
    /// [`Subscription::attach`].
    pub fn bind(self, outbox: Arc<dyn Outbox>, key: u64) -> Subscription {
        let mut slot = Slot::new(key, outbox, 0);
        slot.snapshot = self.snapshot;
        Subscription {
            source: self.source,
            since: self.since,
            slot: Mutex::new(Some(slot)),
            id: AtomicU64::new(0),
        }
    }
}

/// A live subscription. Dropping it (or [`Subscription::detach`]) stops its events.
#[derive(Debug)]
pub struct Subscription {
    source: Source,
    since: Option<u64>,
    /// The slot before it is attached.
    slot: Mutex<Option<Slot>>,
    /// The attached slot's id (0 before).
    id: AtomicU64,
}

impl Subscription {
    /// Starts the events: from now on, or first the backlog after `sinceSeq`.
    pub fn attach(&self) {
        let Some(mut slot) = self
            .slot
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        else {
            return;
        };
        self.id.store(slot.id, Ordering::Relaxed);
        match &self.source {
            Source::All(hub) => hub.attach(slot),
            Source::Agent(log) => {
                let mut st = log.lock();
                if st.closed {
                    slot.end();
                    return;
                }
                slot.delivered = st.last_seq;
                if slot.snapshot {
                    slot.wait();
                }
                match self.since {
                    Some(since) if since < st.last_seq => {
                        slot.delivered = since;
                        slot.wait();
                    }
                    Some(since) if since > st.last_seq => {
                        slot.resync = Some(format!(
                            "sinceSeq {since} is ahead of this agent's last seq {}; reload with getAgent and listMessages",
                            st.last_seq
                        ));
                        slot.wait();
                    }
                    _ => {}
                }
                st.slots.push(slot);
            }
        }
    }

    /// After the outbox refused an event (or for a backlog): up to `max` events to send
    /// now, and whether the subscription is live again.
    pub fn resume(&self, max: usize) -> Resumed {
        let id = self.id.load(Ordering::Relaxed);
        match &self.source {
            Source::All(hub) => hub.resume(id),
            Source::Agent(log) => log.resume(id, max),
        }
    }

    /// Whether [`Subscription::detach`] was called (or it ended before it was attached).
    pub fn is_detached(&self) -> bool {
        self.id.load(Ordering::Relaxed) == 0
            && self
                .slot
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .is_none()
    }

    /// Stops the events (unsubscribe). Idempotent.
    pub fn detach(&self) {
        self.slot
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let id = self.id.swap(0, Ordering::Relaxed);
        if id == 0 {
            return;
        }
        match &self.source {
            Source::All(hub) => hub.detach(id),
            Source::Agent(log) => log.lock().slots.retain(|s| s.id != id),
        }
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.detach();
    }
}

/// A `resyncRequired` for one subscriber, at the agent's latest seq.
pub(super) fn resync(agent_id: &Arc<str>, last_seq: u64, reason: String) -> Arc<EmittedEvent> {
    let event = Event {
        seq: last_seq,
        agent_id: agent_id.to_string(),
        at: now_ms(),
        kind: EventKind::ResyncRequired { reason },
    };
    EmittedEvent::new(&event, agent_id.clone())
}
