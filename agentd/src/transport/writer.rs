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
//! Written through: while the writer waits with nothing in hand (nothing queued, nothing
//! to catch up on, its buffer written), whoever queues a reply or an event frames it and
//! writes it to the socket itself, under the mailbox's lock, with one non-blocking write.
//! A model streams a turn's deltas a few at a time; waking the writer task for each costs
//! a thread wake-up (often of the other runtime worker) per write. What the socket does not
//! take at once is queued for the writer, which from then on writes everything until it
//! waits again, so frames leave in the order they were queued.
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
/// The buffer frames written through are built in is dropped when it grew past this.
const SCRATCH_KEPT: usize = 64 * 1024;

enum Item {
    Reply(String),
    /// The rest of a frame written through in part.
    Rest(Vec<u8>),
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
    /// The writer waits with nothing in hand: a frame may be written through.
    idle: bool,
    /// The socket, while the writer runs (for frames written through).
    socket: Option<Arc<OwnedWriteHalf>>,
    /// The envelope head of each subscription the writer knows (for events written
    /// through; the writer keeps it).
    heads: HashMap<u64, Arc<str>>,
    /// Where a frame written through is built.
    scratch: Vec<u8>,
    /// Frames written through, in whole or in part.
    #[cfg(test)]
    through: usize,
}

/// What [`Queue::write_through`] did.
enum Through {
    /// The whole frame is written.
    Written,
    /// Part of it is written and the rest queued: wake the writer.
    Rest,
    /// Nothing was written: queue the frame.
    No,
}

impl Queue {
    /// Writes one frame to the socket if the writer waits with nothing in hand (see the
    /// module's doc).
    fn write_through(&mut self, framing: &OnceLock<Framing>, parts: &[&[u8]]) -> Through {
        if !self.idle || self.closed || !self.items.is_empty() || !self.behind.is_empty() {
            return Through::No;
        }
        let Some(socket) = &self.socket else {
            return Through::No;
        };
        let framing = framing.get().copied().unwrap_or(Framing::Ndjson);
        self.scratch.clear();
        framing.append(&mut self.scratch, parts);
        let done = match socket.try_write(&self.scratch) {
            Ok(n) if n == self.scratch.len() => Through::Written,
            Ok(n) if n > 0 => {
                let rest = self.scratch[n..].to_vec();
                self.items.push_back(Item::Rest(rest));
                self.idle = false;
                Through::Rest
            }
            // Would block (or failed: the writer meets the same error and closes). The
            // frame is queued, and nothing goes through until the writer has written it.
            _ => {
                self.idle = false;
                Through::No
            }
        };
        if self.scratch.capacity() > SCRATCH_KEPT {
            self.scratch = Vec::new();
        }
        #[cfg(test)]
        if !matches!(done, Through::No) {
            self.through += 1;
        }
        done
    }
}

/// Everything one connection has to write.
pub(super) struct Mailbox {
    queue: Mutex<Queue>,
    /// The connection's framing, once its first frame told it.
    framing: Arc<OnceLock<Framing>>,
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
    pub(super) fn new(framing: Arc<OnceLock<Framing>>) -> Mailbox {
        Mailbox {
            queue: Mutex::default(),
            framing,
            wake: Notify::new(),
            room: Notify::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues `item`, waking the writer if the queue was empty.
    fn push(&self, item: Item) {
        let queue = self.lock();
        if queue.closed {
            return;
        }
        self.push_locked(queue, |q| q.items.push_back(item));
    }

    /// Adds to the held queue, then wakes the writer if the queue was empty: the one place
    /// that queues and wakes.
    fn push_locked(&self, mut queue: MutexGuard<'_, Queue>, add: impl FnOnce(&mut Queue)) {
        let was_empty = queue.items.is_empty() && queue.behind.is_empty();
        add(&mut queue);
        drop(queue);
        if was_empty {
            self.wake.notify_one();
        }
    }

    /// Writes a frame through (see the module doc), waking the writer for what the socket
    /// left of it; gives the queue back when the frame must be queued instead.
    fn through<'q>(
        &self,
        mut queue: MutexGuard<'q, Queue>,
        parts: &[&[u8]],
    ) -> Option<MutexGuard<'q, Queue>> {
        match queue.write_through(&self.framing, parts) {
            Through::Written => None,
            Through::Rest => {
                drop(queue);
                self.wake.notify_one();
                None
            }
            Through::No => Some(queue),
        }
    }

    /// Writes a reply (or a notification: not `counted` among the replies that make the
    /// reader wait) through, or queues it.
    fn send_text(&self, queue: MutexGuard<'_, Queue>, text: String, counted: bool) {
        if let Some(mut queue) = self.through(queue, &[text.as_bytes()]) {
            queue.replies += usize::from(counted);
            self.push_locked(queue, |q| q.items.push_back(Item::Reply(text)));
        }
    }

    /// Queues a reply, waiting while too many are queued (the client is not reading).
    pub(super) async fn reply(&self, text: String) {
        loop {
            let room = self.room.notified();
            {
                let queue = self.lock();
                if queue.closed {
                    return;
                }
                if queue.replies < MAX_QUEUED_REPLIES {
                    self.send_text(queue, text, true);
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
            queue.idle = false;
            queue.socket = None;
            queue.heads.clear();
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
        if queue.idle
            && let Some(head) = queue.heads.get(&key).cloned()
        {
            let parts = [
                head.as_bytes(),
                event.json.as_bytes(),
                NOTIFICATION_TAIL.as_bytes(),
            ];
            match self.through(queue, &parts) {
                None => return true,
                Some(back) => queue = back,
            }
        }
        queue.events += 1;
        self.push_locked(queue, |q| {
            q.items.push_back(Item::Event(key, event.clone()))
        });
        true
    }

    fn behind(&self, key: u64) {
        let queue = self.lock();
        self.push_locked(queue, |q| q.behind.push(key));
    }

    fn ended(&self, key: u64) {
        self.push(Item::Ended(key));
    }

    fn notify(&self, frame: String) {
        let queue = self.lock();
        if !queue.closed {
            self.send_text(queue, frame, false);
        }
    }
}

/// A subscription as the writer knows it.
struct Entry {
    head: Arc<str>,
    subscription: Arc<Subscription>,
    _live: Arc<()>,
}

/// The connection's single writer: drains the mailbox until it is closed and empty, or
/// `close` is cancelled, or a write fails.
pub(super) async fn write_frames(
    write: OwnedWriteHalf,
    mailbox: Arc<Mailbox>,
    close: CancellationToken,
) {
    let write = Arc::new(write);
    mailbox.lock().socket = Some(write.clone());
    let flushed = drain(&write, &mailbox, &close).await;
    // Whatever is left (a failed write, a closed connection) goes with its subscriptions.
    mailbox.discard();
    if flushed && let Ok(mut write) = Arc::try_unwrap(write) {
        let _ = write.shutdown().await;
    }
}

/// Writes until the mailbox is closed and empty (true), or the connection is done (false).
async fn drain(write: &OwnedWriteHalf, mailbox: &Mailbox, close: &CancellationToken) -> bool {
    let framing = &*mailbox.framing;
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
            // Nothing in hand (the buffer was written at the end of the last round):
            // frames may be written through until the writer is woken again.
            queue.idle = items.is_empty()
                && behind.is_empty()
                && resuming.is_empty()
                && !closing
                && !queue.closed;
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
                Item::Rest(bytes) => buf.extend_from_slice(&bytes),
                Item::Event(key, event) => {
                    if let Some(entry) = subscriptions.get(&key) {
                        append_event(&mut buf, framing, &entry.head, &event);
                    }
                }
                Item::Subscribed(new) if new.subscription.is_detached() => {}
                Item::Subscribed(new) => {
                    let head: Arc<str> = new.head.into();
                    mailbox.lock().heads.insert(new.key, head.clone());
                    subscriptions.insert(
                        new.key,
                        Entry {
                            head,
                            subscription: new.subscription,
                            _live: new.live,
                        },
                    );
                }
                Item::Unsubscribed(key) | Item::Ended(key) => {
                    forget(mailbox, &mut subscriptions, key);
                }
            }
            if buf.len() >= WRITE_CHUNK && !flush(write, &mut buf, close).await {
                return false;
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
                After::Ended => forget(mailbox, &mut subscriptions, key),
            }
        }
        resuming = still;
        if !flush(write, &mut buf, close).await {
            return false;
        }
    }
    flush(write, &mut buf, close).await
}

/// The writer no longer writes the events of subscription `key`.
fn forget(mailbox: &Mailbox, subscriptions: &mut HashMap<u64, Entry>, key: u64) {
    subscriptions.remove(&key);
    mailbox.lock().heads.remove(&key);
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
async fn flush(write: &OwnedWriteHalf, buf: &mut Vec<u8>, close: &CancellationToken) -> bool {
    let mut deadline = close
        .is_cancelled()
        .then(|| tokio::time::Instant::now() + CLOSE_GRACE);
    let mut pos = 0;
    while pos < buf.len() {
        // Cancel-safe: dropped, it wrote nothing; done, it says how much.
        let step = write_some(write, &buf[pos..]);
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

/// Writes what the socket takes of `bytes` once it takes anything (at least one byte, or
/// 0 when the peer is gone).
async fn write_some(write: &OwnedWriteHalf, bytes: &[u8]) -> std::io::Result<usize> {
    loop {
        write.writable().await?;
        match write.try_write(bytes) {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            done => return done,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use tokio::net::UnixStream;

    use super::*;

    async fn wait_idle(mailbox: &Mailbox) {
        while !mailbox.lock().idle {
            tokio::task::yield_now().await;
        }
    }

    /// While the writer waits, frames are written through; when the socket is full, the
    /// rest goes to the writer, and nothing is written through while anything waits for
    /// it, even when the client makes room meanwhile. The client reads every frame whole,
    /// in order.
    #[tokio::test]
    async fn frames_written_through_or_queued_arrive_whole_and_in_order() {
        // The client side is a plain non-blocking socket: it reads without the runtime.
        let (daemon, mut client) = std::os::unix::net::UnixStream::pair().unwrap();
        daemon.set_nonblocking(true).unwrap();
        client.set_nonblocking(true).unwrap();
        let (_read, write) = UnixStream::from_std(daemon).unwrap().into_split();
        let mailbox = Arc::new(Mailbox::new(Arc::new(OnceLock::new())));
        let close = CancellationToken::new();
        let writer = tokio::spawn(write_frames(write, mailbox.clone(), close.clone()));
        wait_idle(&mailbox).await;
        // Frames of up to 1 MB, some past what the socket buffers. The writer task does
        // not run until the end (nothing here yields), and the client reads all it can
        // after each frame: the socket has room again while frames wait for the writer.
        let frames: Vec<String> = (0..60)
            .map(|i| {
                let pad = if i % 10 == 3 {
                    1 << 20
                } else {
                    (i * 7919) % 20_000
                };
                format!("{{\"n\":{i},\"pad\":\"{}\"}}", "x".repeat(pad))
            })
            .collect();
        let mut received = Vec::new();
        let mut chunk = vec![0; 64 * 1024];
        let mut read_all = |received: &mut Vec<u8>| {
            while let Ok(n @ 1..) = client.read(&mut chunk) {
                received.extend_from_slice(&chunk[..n]);
            }
        };
        for frame in &frames {
            mailbox.notify(frame.clone());
            read_all(&mut received);
        }
        assert!(mailbox.lock().through >= 1, "nothing was written through");
        let total: usize = frames.iter().map(|f| f.len() + 1).sum();
        while received.len() < total {
            tokio::task::yield_now().await;
            read_all(&mut received);
        }
        let lines: Vec<&[u8]> = received.split(|b| *b == b'\n').collect();
        assert_eq!(lines.len(), frames.len() + 1);
        for (i, frame) in frames.iter().enumerate() {
            assert!(lines[i] == frame.as_bytes(), "frame {i} differs");
        }
        // The writer waits again, and a frame sent now is written through.
        wait_idle(&mailbox).await;
        let through = mailbox.lock().through;
        mailbox.notify("{}".into());
        assert_eq!(mailbox.lock().through, through + 1);
        received.clear();
        read_all(&mut received);
        assert_eq!(received, b"{}\n");
        close.cancel();
        writer.await.unwrap();
    }
}
