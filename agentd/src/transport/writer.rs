//! The writing side of one connection: a [`Mailbox`] (the queue everything to write goes
//! through: replies, and the events of every subscription of the connection) and the
//! single task that drains it.
//!
//! Event logs hand events straight to the mailbox ([`Outbox::deliver`]): no task between
//! the run that emits and the writer. The writer takes everything queued at each wake-up,
//! frames it into one buffer (each event's JSON, serialized once for all subscribers, inside
//! its subscription's envelope) and writes the buffer with one call. So a burst of events
//! costs one wake-up and one write, not one per event.
//!
//! Bounded: at most [`MAX_QUEUED_EVENTS`] events wait per connection; past that a
//! subscription's events are refused and it catches up from its agent's replay ring when
//! the client reads again ([`Subscription::resume`]). Replies are bounded too: the reader
//! waits for room, so a client that sends without reading stops being read.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};

use tokio::io::AsyncWriteExt;
use tokio::net::unix::OwnedWriteHalf;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::framing::Framing;
use crate::rpc::dispatch::{FrameReply, NOTIFICATION_TAIL, NewSubscription};
use crate::session::events::{After, EmittedEvent, Outbox, Subscription};

/// Events queued for one connection before its subscriptions have to catch up later.
pub(super) const MAX_QUEUED_EVENTS: usize = 4096;
/// Replies queued before the reader waits.
const MAX_QUEUED_REPLIES: usize = 1024;
/// Events one catch-up step takes from a ring (then the writer writes and goes on).
const RESUME_STEP: usize = 512;
/// Bytes gathered before they are written even if more is queued.
const WRITE_CHUNK: usize = 256 * 1024;

enum Item {
    Reply(String),
    Event(u64, Arc<EmittedEvent>),
    Subscribed(NewSubscription),
    Unsubscribed(u64),
    Ended(u64),
}

#[derive(Default)]
struct Queue {
    items: VecDeque<Item>,
    events: usize,
    replies: usize,
    /// Subscriptions to resume (they were refused an event, or have a backlog).
    behind: Vec<u64>,
    /// The connection is closing: nothing more is queued.
    closed: bool,
}

/// Everything one connection has to write.
#[derive(Default)]
pub(super) struct Mailbox {
    queue: Mutex<Queue>,
    /// Something was queued.
    wake: Notify,
    /// Replies were taken: the reader may queue more.
    room: Notify,
}

impl std::fmt::Debug for Mailbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Mailbox")
    }
}

impl Mailbox {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues `item`, waking the writer if the queue was empty.
    fn push(&self, item: Item) {
        let mut queue = self.lock();
        if queue.closed {
            return;
        }
        let was_empty = queue.items.is_empty() && queue.behind.is_empty();
        queue.items.push_back(item);
        drop(queue);
        if was_empty {
            self.wake.notify_one();
        }
    }

    /// Queues a reply, waiting while too many are queued (the client is not reading).
    pub(super) async fn reply(&self, text: String) {
        loop {
            let room = self.room.notified();
            {
                let mut queue = self.lock();
                if queue.closed || queue.replies < MAX_QUEUED_REPLIES {
                    queue.replies += 1;
                    drop(queue);
                    self.push(Item::Reply(text));
                    return;
                }
            }
            room.await;
        }
    }

    /// Queues what a frame produced, in the order the writer must see it: forgotten
    /// subscriptions, the response, new subscriptions (then attached: their events can
    /// only come after).
    pub(super) async fn frame_reply(&self, reply: FrameReply) {
        for key in reply.unsubscribed {
            self.push(Item::Unsubscribed(key));
        }
        if let Some(response) = reply.response {
            self.reply(response).await;
        }
        for new in reply.subscriptions {
            let subscription = new.subscription.clone();
            self.push(Item::Subscribed(new));
            subscription.attach();
        }
    }

    /// Stops taking anything and wakes the writer to finish what is queued.
    pub(super) fn close(&self) {
        self.lock().closed = true;
        self.wake.notify_one();
        self.room.notify_one();
    }

    /// Drops whatever is still queued (the writer is gone).
    fn discard(&self) {
        let items = {
            let mut queue = self.lock();
            queue.closed = true;
            queue.behind.clear();
            std::mem::take(&mut queue.items)
        };
        drop(items);
        self.room.notify_one();
    }
}

impl Outbox for Mailbox {
    fn deliver(&self, key: u64, event: &Arc<EmittedEvent>) -> bool {
        let mut queue = self.lock();
        if queue.closed {
            return true; // nobody will read it; do not make the log keep it waiting
        }
        if queue.events >= MAX_QUEUED_EVENTS {
            queue.behind.push(key);
            return false;
        }
        let was_empty = queue.items.is_empty() && queue.behind.is_empty();
        queue.events += 1;
        queue.items.push_back(Item::Event(key, event.clone()));
        drop(queue);
        if was_empty {
            self.wake.notify_one();
        }
        true
    }

    fn behind(&self, key: u64) {
        let mut queue = self.lock();
        let was_empty = queue.items.is_empty() && queue.behind.is_empty();
        queue.behind.push(key);
        drop(queue);
        if was_empty {
            self.wake.notify_one();
        }
    }

    fn ended(&self, key: u64) {
        self.push(Item::Ended(key));
    }
}

/// A subscription as the writer knows it.
struct Entry {
    head: Box<str>,
    subscription: Arc<Subscription>,
    _live: Arc<()>,
}

/// The connection's single writer: drains the mailbox until it is closed and empty, or
/// `close` is cancelled, or a write fails.
pub(super) async fn write_frames(
    write: OwnedWriteHalf,
    mailbox: Arc<Mailbox>,
    framing: Arc<OnceLock<Framing>>,
    close: CancellationToken,
) {
    drain(write, &mailbox, &framing, &close).await;
    // Whatever is left (a failed write, a closed connection) goes with its subscriptions.
    mailbox.discard();
}

async fn drain(
    mut write: OwnedWriteHalf,
    mailbox: &Mailbox,
    framing: &OnceLock<Framing>,
    close: &CancellationToken,
) {
    let mut subscriptions: HashMap<u64, Entry> = HashMap::new();
    // Subscriptions still catching up (from a ring) after the last round.
    let mut resuming: Vec<u64> = Vec::new();
    let mut buf: Vec<u8> = Vec::with_capacity(16 * 1024);
    // Once `close` fires, what is already queued (a run's last events at shutdown) is
    // still written, within `CLOSE_GRACE` per write.
    let mut closing = false;
    loop {
        let (items, behind, closed) = {
            let mut queue = mailbox.lock();
            let items = std::mem::take(&mut queue.items);
            let behind = std::mem::take(&mut queue.behind);
            let replies = std::mem::replace(&mut queue.replies, 0);
            queue.events = 0;
            if replies > 0 {
                mailbox.room.notify_one();
            }
            (items, behind, queue.closed)
        };
        if items.is_empty() && behind.is_empty() && resuming.is_empty() {
            if closed || closing {
                break;
            }
            tokio::select! {
                _ = close.cancelled() => {
                    closing = true;
                    continue;
                }
                _ = mailbox.wake.notified() => continue,
            }
        }
        let framing = framing.get().copied().unwrap_or(Framing::Ndjson);
        for item in items {
            match item {
                Item::Reply(text) => framing.append(&mut buf, &[text.as_bytes()]),
                Item::Event(key, event) => {
                    if let Some(entry) = subscriptions.get(&key) {
                        append_event(&mut buf, framing, &entry.head, &event);
                    }
                }
                Item::Subscribed(new) if new.subscription.is_detached() => {}
                Item::Subscribed(new) => {
                    subscriptions.insert(
                        new.key,
                        Entry {
                            head: new.head,
                            subscription: new.subscription,
                            _live: new.live,
                        },
                    );
                }
                Item::Unsubscribed(key) | Item::Ended(key) => {
                    subscriptions.remove(&key);
                }
            }
            if buf.len() >= WRITE_CHUNK && !flush(&mut write, &mut buf, close).await {
                return;
            }
        }
        for key in behind {
            if !resuming.contains(&key) {
                resuming.push(key);
            }
        }
        // Catch-ups, a step each per round, after what was queued before them.
        let mut still = Vec::new();
        for key in resuming.drain(..) {
            let Some(entry) = subscriptions.get(&key) else {
                continue;
            };
            let resumed = entry.subscription.resume(RESUME_STEP);
            for event in &resumed.events {
                append_event(&mut buf, framing, &entry.head, event);
            }
            match resumed.state {
                After::Live => {}
                After::Behind => still.push(key),
                After::Ended => {
                    subscriptions.remove(&key);
                }
            }
        }
        resuming = still;
        if !flush(&mut write, &mut buf, close).await {
            return;
        }
    }
    let _ = flush(&mut write, &mut buf, close).await;
    let _ = write.shutdown().await;
}

fn append_event(buf: &mut Vec<u8>, framing: Framing, head: &str, event: &EmittedEvent) {
    framing.append(
        buf,
        &[
            head.as_bytes(),
            event.json.as_bytes(),
            NOTIFICATION_TAIL.as_bytes(),
        ],
    );
}

/// Writes the buffer out; false when the connection is done (closed or failed). Once
/// `close` is cancelled the write goes on for at most [`CLOSE_GRACE`]: a client that
/// stopped reading must not hold the daemon's shutdown, one that reads gets everything.
async fn flush(write: &mut OwnedWriteHalf, buf: &mut Vec<u8>, close: &CancellationToken) -> bool {
    let mut deadline = close
        .is_cancelled()
        .then(|| tokio::time::Instant::now() + CLOSE_GRACE);
    let mut pos = 0;
    while pos < buf.len() {
        // `write` is cancel-safe: dropped, it wrote nothing; done, it says how much.
        let step = write.write(&buf[pos..]);
        let written = match deadline {
            Some(at) => match tokio::time::timeout_at(at, step).await {
                Ok(written) => written,
                Err(_) => return false,
            },
            None => tokio::select! {
                written = step => written,
                _ = close.cancelled() => {
                    deadline = Some(tokio::time::Instant::now() + CLOSE_GRACE);
                    continue;
                }
            },
        };
        match written {
            Ok(0) => {
                tracing::debug!("connection write failed: the peer is gone");
                close.cancel();
                return false;
            }
            Ok(n) => pos += n,
            Err(e) => {
                tracing::debug!("connection write failed: {e}");
                close.cancel();
                return false;
            }
        }
    }
    buf.clear();
    if buf.capacity() > 4 * WRITE_CHUNK {
        buf.shrink_to(WRITE_CHUNK);
    }
    true
}

/// How long a write may still take once the connection is being closed.
const CLOSE_GRACE: std::time::Duration = std::time::Duration::from_millis(500);
