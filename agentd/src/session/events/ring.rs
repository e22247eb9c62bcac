//! The replay ring of one agent, kept compact, and the byte budget every ring draws on.
//!
//! A ring holds an agent's recent events for `sinceSeq` replay and for subscribers that fell
//! behind. Most events of a run are deltas, and a delta kept as a whole event (its JSON,
//! with the agent and message ids, in two allocations) costs ~250 bytes for a few bytes of
//! text. So consecutive deltas of one stream (the text, the reasoning, one tool call's
//! arguments of one message, or one stream of a running command's live output, whose
//! `progress` is the text sent before plus its own) are kept as one [`DeltaRun`]: their
//! joined text and, per delta, where it ends and when it was sent. The small events every turn has besides its
//! deltas (status changes, a message's start, usage, completion, the run's end) are kept as
//! their fields ([`Brief`]), their message id shared with the turn's other entries, not as
//! JSON of ~200 bytes each. Replaying rebuilds each event exactly (same seq, same `at`,
//! same JSON), so a replay is the stream that was sent.
//!
//! Rings are bounded three ways: events and bytes per agent (`limits.replay_events`,
//! `limits.replay_bytes`) and bytes across all agents ([`ReplayBudget`],
//! `limits.replay_budget_bytes`): when all rings together hold more than the budget, the
//! oldest entries of any agent go first. A replay that needs what is gone is answered with
//! `resyncRequired`, never with a gap.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use agent_proto::{
    Event, EventKind, LiveOutput, LoopFinishReason, MessageStatus, OutputStream, SessionStatus,
};

use super::EmittedEvent;

/// What an entry costs besides its text: the allocations and the slot (an estimate of the
/// heap it holds, so the budget follows real memory).
const EVENT_OVERHEAD: usize = 96;
const RUN_OVERHEAD: usize = 128;
/// A [`BriefEvent`]: its allocation and its slot, besides its message id.
const BRIEF_OVERHEAD: usize = 88;
/// Per delta of a run: where it ends and its time.
const MARK_BYTES: usize = 8;

/// Which stream a delta continues.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Stream {
    Text,
    Reasoning,
    ToolArgs(Box<str>),
    /// A running command's output (`toolProgress` with `output`) of one call and stream.
    Output(Box<str>, OutputStream),
}

/// Consecutive deltas of one stream of one message, with consecutive seqs.
#[derive(Debug)]
pub(super) struct DeltaRun {
    first_seq: u64,
    stream: Stream,
    message_id: Arc<str>,
    first_at: i64,
    text: String,
    /// Per delta: the end of its text in `text`, and its `at` minus `first_at`.
    marks: Vec<(u32, u32)>,
    /// Of live output: the `progress` before the run's first delta (each delta's is this
    /// plus the end of its text); 0 for the other streams.
    progress_base: f64,
}

impl DeltaRun {
    fn last_seq(&self) -> u64 {
        self.first_seq + self.marks.len() as u64 - 1
    }

    fn cost(&self) -> usize {
        RUN_OVERHEAD
            + self.message_id.len()
            + self.text.len()
            + self.marks.len() * MARK_BYTES
            + match &self.stream {
                Stream::ToolArgs(id) | Stream::Output(id, _) => id.len(),
                _ => 0,
            }
    }

    /// Appends a delta if it continues this run; false if it does not (another stream, a
    /// seq that does not follow, a `progress` that is not the run's, or offsets that would
    /// not fit).
    fn extend(&mut self, seq: u64, at: i64, part: &DeltaParts<'_>) -> bool {
        let DeltaParts {
            stream,
            message_id,
            delta,
            progress,
        } = part;
        if seq != self.last_seq() + 1 || *stream != self.stream || **message_id != *self.message_id
        {
            return false;
        }
        if let Some(progress) = progress
            && *progress != self.progress_base + (self.text.len() + delta.len()) as f64
        {
            return false;
        }
        let (Ok(end), Ok(offset)) = (
            u32::try_from(self.text.len() + delta.len()),
            u32::try_from(at - self.first_at),
        ) else {
            return false;
        };
        self.text.push_str(delta);
        self.marks.push((end, offset));
        true
    }

    /// Delta number `i` as the event that was sent.
    fn event(&self, agent_id: &Arc<str>, i: usize) -> Arc<EmittedEvent> {
        let start = if i == 0 {
            0
        } else {
            self.marks[i - 1].0 as usize
        };
        let (end, offset) = self.marks[i];
        let delta = self.text[start..end as usize].to_owned();
        let message_id = self.message_id.to_string();
        let kind = match &self.stream {
            Stream::Text => EventKind::TextDelta { message_id, delta },
            Stream::Reasoning => EventKind::ReasoningDelta { message_id, delta },
            Stream::ToolArgs(id) => EventKind::ToolCallArgsDelta {
                message_id,
                tool_call_id: id.to_string(),
                delta,
            },
            Stream::Output(id, stream) => EventKind::ToolProgress {
                message_id,
                tool_call_id: id.to_string(),
                progress: self.progress_base + f64::from(end),
                total: None,
                message: None,
                output: Some(LiveOutput {
                    stream: *stream,
                    text: delta,
                }),
            },
        };
        let seq = self.first_seq + i as u64;
        sent_again(agent_id, seq, self.first_at + i64::from(offset), kind)
    }
}

/// A small event kept as its fields: a turn has several besides its deltas, and their JSON
/// (with the agent id, the message id, the type and the time) is ~200 bytes each.
#[derive(Debug)]
pub(super) struct BriefEvent {
    seq: u64,
    at: i64,
    brief: Brief,
}

#[derive(Debug)]
enum Brief {
    Status(SessionStatus),
    Started(Arc<str>),
    Usage {
        message_id: Arc<str>,
        input_tokens: u64,
        output_tokens: u64,
    },
    Completed(Arc<str>, MessageStatus),
    Finished(Arc<str>, LoopFinishReason),
}

impl Brief {
    /// The brief form of `kind`, if it has one; `id` gives the shared copy of a message id.
    fn of(kind: &EventKind, id: impl FnOnce(&str) -> Arc<str>) -> Option<Brief> {
        Some(match kind {
            EventKind::StatusChanged { status } => Brief::Status(*status),
            EventKind::MessageStarted {
                message_id,
                message: None,
            } => Brief::Started(id(message_id)),
            EventKind::Usage {
                message_id,
                input_tokens,
                output_tokens,
            } => Brief::Usage {
                message_id: id(message_id),
                input_tokens: *input_tokens,
                output_tokens: *output_tokens,
            },
            EventKind::MessageCompleted {
                message_id,
                status,
                structured_output: None,
            } => Brief::Completed(id(message_id), *status),
            EventKind::LoopFinished {
                message_id,
                reason,
                error: None,
            } => Brief::Finished(id(message_id), *reason),
            _ => return None,
        })
    }

    fn kind(&self) -> EventKind {
        match self {
            Brief::Status(status) => EventKind::StatusChanged { status: *status },
            Brief::Started(id) => EventKind::MessageStarted {
                message_id: id.to_string(),
                message: None,
            },
            Brief::Usage {
                message_id,
                input_tokens,
                output_tokens,
            } => EventKind::Usage {
                message_id: message_id.to_string(),
                input_tokens: *input_tokens,
                output_tokens: *output_tokens,
            },
            Brief::Completed(id, status) => EventKind::MessageCompleted {
                message_id: id.to_string(),
                status: *status,
                structured_output: None,
            },
            Brief::Finished(id, reason) => EventKind::LoopFinished {
                message_id: id.to_string(),
                reason: *reason,
                error: None,
            },
        }
    }
}

impl BriefEvent {
    /// Its message id counts in full even when shared with the entries around it: the
    /// entry that allocated it may go first.
    fn cost(&self) -> usize {
        BRIEF_OVERHEAD
            + match &self.brief {
                Brief::Status(_) => 0,
                Brief::Started(id)
                | Brief::Usage { message_id: id, .. }
                | Brief::Completed(id, _)
                | Brief::Finished(id, _) => id.len(),
            }
    }

    /// The event as it was sent.
    fn event(&self, agent_id: &Arc<str>) -> Arc<EmittedEvent> {
        sent_again(agent_id, self.seq, self.at, self.brief.kind())
    }
}

/// An event rebuilt from what a ring kept: serialized as it was when sent.
fn sent_again(agent_id: &Arc<str>, seq: u64, at: i64, kind: EventKind) -> Arc<EmittedEvent> {
    let event = Event {
        seq,
        agent_id: agent_id.to_string(),
        at,
        kind,
    };
    EmittedEvent::new(&event, agent_id.clone())
}

/// What a delta event is made of.
struct DeltaParts<'a> {
    stream: Stream,
    message_id: &'a str,
    delta: &'a str,
    /// The event's `progress` (live output only).
    progress: Option<f64>,
}

/// The parts of a delta event; `None` for other events. A `toolProgress` is one when it
/// carries live output alone, with a `progress` that a run can rebuild exactly.
fn delta_parts(kind: &EventKind) -> Option<DeltaParts<'_>> {
    let (stream, message_id, delta) = match kind {
        EventKind::TextDelta { message_id, delta } => (Stream::Text, message_id, delta),
        EventKind::ReasoningDelta { message_id, delta } => (Stream::Reasoning, message_id, delta),
        EventKind::ToolCallArgsDelta {
            message_id,
            tool_call_id,
            delta,
        } => (
            Stream::ToolArgs(tool_call_id.as_str().into()),
            message_id,
            delta,
        ),
        EventKind::ToolProgress {
            message_id,
            tool_call_id,
            progress,
            total: None,
            message: None,
            output: Some(output),
        } if progress.fract() == 0.0 && *progress >= output.text.len() as f64 => {
            return Some(DeltaParts {
                stream: Stream::Output(tool_call_id.as_str().into(), output.stream),
                message_id,
                delta: &output.text,
                progress: Some(*progress),
            });
        }
        _ => return None,
    };
    Some(DeltaParts {
        stream,
        message_id,
        delta,
        progress: None,
    })
}

/// Boxed runs keep a ring's slots small (a slot is 24 bytes), since a long ring has
/// thousands of them.
#[derive(Debug)]
enum Entry {
    /// One event as sent.
    Event(Arc<EmittedEvent>),
    Brief(Box<BriefEvent>),
    Deltas(Box<DeltaRun>),
}

impl Entry {
    fn first_seq(&self) -> u64 {
        match self {
            Entry::Event(e) => e.seq,
            Entry::Brief(b) => b.seq,
            Entry::Deltas(run) => run.first_seq,
        }
    }

    fn last_seq(&self) -> u64 {
        match self {
            Entry::Event(e) => e.seq,
            Entry::Brief(b) => b.seq,
            Entry::Deltas(run) => run.last_seq(),
        }
    }

    fn events(&self) -> usize {
        match self {
            Entry::Event(_) | Entry::Brief(_) => 1,
            Entry::Deltas(run) => run.marks.len(),
        }
    }

    fn cost(&self) -> usize {
        match self {
            Entry::Event(e) => EVENT_OVERHEAD + e.json.len(),
            Entry::Brief(b) => b.cost(),
            Entry::Deltas(run) => run.cost(),
        }
    }
}

/// How much one agent's ring may hold.
#[derive(Debug, Clone, Copy)]
pub struct ReplayLimits {
    pub events: usize,
    pub bytes: usize,
}

/// The events an agent keeps for replay, oldest first.
#[derive(Debug)]
pub(super) struct Ring {
    /// Each entry with its id (increasing; see [`ReplayBudget`]).
    entries: VecDeque<(u64, Entry)>,
    events: usize,
    bytes: usize,
    limits: ReplayLimits,
    budget: Arc<ReplayBudget>,
    /// The message id of the latest entry that has one, shared by the entries after it
    /// that name the same message (a turn names one message many times).
    message_id: Option<Arc<str>>,
}

/// What [`Ring::after`] found.
#[derive(Debug)]
pub(super) enum Replay {
    /// The events after the asked seq (at most the number asked), oldest first.
    Events(Vec<Arc<EmittedEvent>>),
    /// Some of them are gone; the oldest kept seq, if any.
    Gone { oldest: Option<u64> },
}

impl Ring {
    pub(super) fn new(limits: ReplayLimits, budget: Arc<ReplayBudget>) -> Ring {
        Ring {
            entries: VecDeque::new(),
            events: 0,
            bytes: 0,
            limits,
            budget,
            message_id: None,
        }
    }

    /// A shared copy of `id`: the latest one when it is the same message.
    fn shared_id(latest: &mut Option<Arc<str>>, id: &str) -> Arc<str> {
        match latest {
            Some(latest) if **latest == *id => latest.clone(),
            _ => latest.insert(Arc::from(id)).clone(),
        }
    }

    /// Keeps an event just sent. Returns the id of a new entry the budget must learn of
    /// (none when the event joined the last entry).
    pub(super) fn push(
        &mut self,
        emitted: &Arc<EmittedEvent>,
        at: i64,
        kind: &EventKind,
    ) -> Option<u64> {
        let seq = emitted.seq;
        let mut added = None;
        let before = self.bytes;
        match delta_parts(kind) {
            Some(part) => {
                let extended = match self.entries.back_mut() {
                    Some((_, Entry::Deltas(run))) => {
                        let cost = run.cost();
                        let extended = run.extend(seq, at, &part);
                        if extended {
                            self.bytes += run.cost() - cost;
                        }
                        extended
                    }
                    _ => false,
                };
                if !extended {
                    let DeltaParts {
                        stream,
                        message_id,
                        delta,
                        progress,
                    } = part;
                    let run = DeltaRun {
                        first_seq: seq,
                        stream,
                        message_id: Self::shared_id(&mut self.message_id, message_id),
                        first_at: at,
                        text: delta.to_owned(),
                        marks: vec![(u32::try_from(delta.len()).unwrap_or(u32::MAX), 0)],
                        progress_base: progress.map_or(0.0, |p| p - delta.len() as f64),
                    };
                    added = Some(self.add(Entry::Deltas(Box::new(run))));
                }
            }
            None => {
                let entry = match Brief::of(kind, |id| Self::shared_id(&mut self.message_id, id)) {
                    Some(brief) => Entry::Brief(Box::new(BriefEvent { seq, at, brief })),
                    None => Entry::Event(emitted.clone()),
                };
                added = Some(self.add(entry));
            }
        }
        self.events += 1;
        self.budget.grow(self.bytes - before);
        self.trim_to_limits();
        added
    }

    fn add(&mut self, entry: Entry) -> u64 {
        // The run before is complete: give back what its buffers grew ahead.
        if let Some((_, Entry::Deltas(run))) = self.entries.back_mut() {
            run.text.shrink_to_fit();
            run.marks.shrink_to_fit();
        }
        let id = self.budget.next_id();
        self.bytes += entry.cost();
        self.entries.push_back((id, entry));
        self.budget.entries.fetch_add(1, Ordering::Relaxed);
        id
    }

    /// Drops the oldest entries while the agent's own limits are exceeded (never the
    /// newest entry).
    fn trim_to_limits(&mut self) {
        while self.entries.len() > 1
            && (self.events > self.limits.events || self.bytes > self.limits.bytes)
        {
            self.pop_front();
        }
    }

    fn pop_front(&mut self) -> usize {
        let Some((_, entry)) = self.entries.pop_front() else {
            return 0;
        };
        let cost = entry.cost();
        self.events -= entry.events();
        self.bytes -= cost;
        self.budget.shrink(cost, 1);
        cost
    }

    /// Drops every entry: the events after them are not all known (relayed events came
    /// with a gap), so no replay may start in or before them.
    pub(super) fn clear(&mut self) {
        while !self.entries.is_empty() {
            self.pop_front();
        }
    }

    /// Drops the entries up to entry `id` (the budget's oldest); the bytes freed.
    fn drop_through(&mut self, id: u64) -> usize {
        let mut freed = 0;
        while self.entries.front().is_some_and(|(first, _)| *first <= id) {
            freed += self.pop_front();
        }
        freed
    }

    /// Whether entry `id` is still kept.
    fn holds(&self, id: u64) -> bool {
        self.entries.front().is_some_and(|(first, _)| *first <= id)
    }

    pub(super) fn oldest_seq(&self) -> Option<u64> {
        self.entries.front().map(|(_, e)| e.first_seq())
    }

    /// Up to `max` events after seq `since` (through the newest kept), or [`Replay::Gone`]
    /// when the first of them is no longer kept.
    pub(super) fn after(&self, agent_id: &Arc<str>, since: u64, max: usize) -> Replay {
        let oldest = self.oldest_seq();
        if oldest.is_none_or(|oldest| oldest > since + 1) {
            return Replay::Gone { oldest };
        }
        // The first entry holding a seq above `since`.
        let start = self.entries.partition_point(|(_, e)| e.last_seq() <= since);
        let mut out = Vec::new();
        for (_, entry) in self.entries.range(start..) {
            if out.len() >= max {
                break;
            }
            match entry {
                Entry::Event(e) => out.push(e.clone()),
                Entry::Brief(b) => out.push(b.event(agent_id)),
                Entry::Deltas(run) => {
                    // Deltas of the run at or before `since` were sent already.
                    let skip = usize::try_from((since + 1).saturating_sub(run.first_seq))
                        .unwrap_or(usize::MAX);
                    for i in skip.min(run.marks.len())..run.marks.len() {
                        if out.len() >= max {
                            break;
                        }
                        out.push(run.event(agent_id, i));
                    }
                }
            }
        }
        if out.is_empty() {
            // Nothing after `since` is kept (the caller knows of later events).
            return Replay::Gone { oldest };
        }
        Replay::Events(out)
    }

    #[cfg(test)]
    pub(super) fn bytes(&self) -> usize {
        self.bytes
    }

    #[cfg(test)]
    pub(super) fn entries(&self) -> usize {
        self.entries.len()
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        self.budget.shrink(self.bytes, self.entries.len());
    }
}

/// A ring the budget can trim: a log's state, which owns its ring.
pub(super) trait Trimmable: Send + Sync {
    /// Drops the ring's entries up to entry `id`; the bytes freed.
    fn drop_through(&self, id: u64) -> usize;
    /// Whether entry `id` is still kept.
    fn holds(&self, id: u64) -> bool;
}

impl<T: AsRing + Send> Trimmable for Mutex<T> {
    fn drop_through(&self, id: u64) -> usize {
        self.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .ring()
            .drop_through(id)
    }

    fn holds(&self, id: u64) -> bool {
        self.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .ring()
            .holds(id)
    }
}

/// Reaches the ring inside a log's state.
pub(super) trait AsRing {
    fn ring(&mut self) -> &mut Ring;
}

/// The bytes all rings may hold together, and the order their entries were added in, so
/// the oldest go first when the total is over.
///
/// Lock order: the budget's order, then a log's state. A log never calls into the budget's
/// order while it holds its own state: it adds entries under its lock ([`Ring::push`]
/// counts them) and tells the budget afterwards ([`ReplayBudget::added`]).
#[derive(Debug)]
pub struct ReplayBudget {
    limit: usize,
    used: AtomicUsize,
    /// Entries in all rings.
    entries: AtomicUsize,
    next_id: AtomicU64,
    order: Mutex<VecDeque<Hint>>,
}

/// An entry of some ring, in the order entries were added.
struct Hint {
    ring: Weak<dyn Trimmable>,
    entry: u64,
}

impl std::fmt::Debug for Hint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Hint({})", self.entry)
    }
}

impl ReplayBudget {
    pub fn new(limit: usize) -> Arc<ReplayBudget> {
        Arc::new(ReplayBudget {
            limit,
            used: AtomicUsize::new(0),
            entries: AtomicUsize::new(0),
            next_id: AtomicU64::new(1),
            order: Mutex::new(VecDeque::new()),
        })
    }

    /// Bytes held by all rings now.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Whether all rings together hold more than the budget.
    pub(super) fn over(&self) -> bool {
        self.used() > self.limit
    }

    fn grow(&self, bytes: usize) {
        self.used.fetch_add(bytes, Ordering::Relaxed);
    }

    fn shrink(&self, bytes: usize, entries: usize) {
        self.used.fetch_sub(bytes, Ordering::Relaxed);
        self.entries.fetch_sub(entries, Ordering::Relaxed);
    }

    /// A ring added entry `entry` (call without holding the ring's lock); trims the oldest
    /// entries of all rings while the total is over the budget.
    pub(super) fn added(&self, ring: Weak<dyn Trimmable>, entry: Option<u64>) {
        if entry.is_none() && !self.over() {
            return;
        }
        let mut order = self.order.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(entry) = entry {
            order.push_back(Hint { ring, entry });
        }
        while self.used() > self.limit {
            let Some(hint) = order.pop_front() else { break };
            if let Some(ring) = hint.ring.upgrade() {
                ring.drop_through(hint.entry);
            }
        }
        // Hints of entries a ring dropped itself (its own limits, a deleted agent) pile up
        // while the total stays under the budget: sweep them now and then.
        let live = self.entries.load(Ordering::Relaxed);
        if order.len() > 2 * live + 1024 {
            order.retain(|hint| {
                hint.ring
                    .upgrade()
                    .is_some_and(|ring| ring.holds(hint.entry))
            });
        }
    }

    #[cfg(test)]
    pub(super) fn hints(&self) -> usize {
        self.order
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}
