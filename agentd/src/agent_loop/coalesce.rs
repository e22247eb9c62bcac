//! Joining deltas that are already waiting: when the provider's stream has several pieces
//! of one stream ready at once (many SSE events in one read, as providers and proxies
//! that buffer send them), they become one piece, so the run emits one event, saves and
//! fans out once, instead of once per piece. The same holds for an external ACP agent's
//! turn (`acp.rs`): its message and thought chunks, forwarded one by one by the
//! connection's task, are joined the same way ([`Joinable`] says what joins).
//!
//! Never waits to join: what is ready now is taken, and the first piece that is not ready
//! ends the batch (a time budget of zero). The protocol allows any split of a stream into
//! deltas, so clients see the same text, in the same order, in fewer events.
//!
//! "Ready" includes what the daemon has already received but not yet decoded: the HTTP
//! client's connection task hands a response body over one chunk at a time (one SSE event
//! per chunk, as providers send them), so a burst of events read in one go still arrives
//! one task hop apart and would go out as one event, one save and one client write each.
//! In a burst (the previous piece went out less than [`BURST`] ago, or the stream had the
//! next one ready as soon as the run came back for it, so pieces queue faster than the run
//! takes them) a piece is held back while the connection task runs once more; if that hands over more, it is joined, and
//! when a turn hands over nothing the piece goes out. The yield is deferred until the
//! runtime's worker has run what is queued (`tokio::task::yield_now`), so no other worker
//! is woken for it, and a lone piece (a model streaming at its own pace) is never held.
//!
//! An external ACP agent's chunks come through more hands (its pipe, the connection's
//! reader and dispatcher, the turn's inbox), each as costly as the run's handling of one:
//! one more turn seldom brings the next, and a burst went out one or two chunks a delta.
//! Its stream is made [`Coalesced::holding`] a short while: in a burst, a piece waits up
//! to that long for more (never past a piece of another kind, which ends the wait).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::{Stream, StreamExt};
use tokio::time::Instant;

use crate::provider::{ProviderError, ProviderEvent};

/// The most text one joined piece carries.
const MAX_JOINED_BYTES: usize = 64 * 1024;

/// Pieces that follow the one before within this are a burst (see the module doc). A
/// model streaming at its own pace sends a piece every few milliseconds.
const BURST: Duration = Duration::from_micros(500);

/// An item of a stream whose deltas join.
pub(super) trait Joinable: Sized {
    /// Appends `next` to `self` if it continues the same stream; gives it back if not.
    fn join(&mut self, next: Self) -> Option<Self>;
    /// The size of a delta (of a joined piece); `None` for what never joins.
    fn delta_len(&self) -> Option<usize>;
}

/// A stream whose ready deltas are joined.
pub(super) struct Coalesced<S: Stream> {
    inner: S,
    /// An item taken while joining that did not join: the next one out.
    held: Option<S::Item>,
    /// The inner stream has ended.
    ended: bool,
    /// The held piece waits for one more turn of the connection's task.
    yielded: bool,
    /// When the last piece went out.
    last_out: Option<Instant>,
    /// Since the last piece went out, the stream had nothing ready once (the run waited
    /// for what came next, so it is not behind).
    waited: bool,
    /// In a burst, how long a piece may wait for more (`None`: one turn of the runtime).
    hold: Option<Duration>,
    /// Until when the held piece waits, and the timer that wakes it then.
    hold_until: Option<Instant>,
    timer: Option<Pin<Box<tokio::time::Sleep>>>,
}

// Nothing of it is pinned in place: the inner stream is `Unpin`, and a held item is
// only moved.
impl<S: Stream + Unpin> Unpin for Coalesced<S> {}

pub(super) fn coalesce<S: Stream + Unpin>(inner: S) -> Coalesced<S>
where
    S::Item: Joinable,
{
    Coalesced {
        inner,
        held: None,
        ended: false,
        yielded: false,
        last_out: None,
        waited: true,
        hold: None,
        hold_until: None,
        timer: None,
    }
}

impl<S: Stream> Coalesced<S> {
    /// In a burst, a piece waits up to `up_to` for more (see the module doc).
    pub(super) fn holding(mut self, up_to: Duration) -> Coalesced<S> {
        self.hold = Some(up_to);
        self
    }

    /// Whether the held piece still waits (the timer is armed for `hold` from the first
    /// wait of this piece); `false` once that time has passed.
    fn still_holding(&mut self, hold: Duration, cx: &mut Context<'_>) -> bool {
        let until = *self.hold_until.get_or_insert_with(|| Instant::now() + hold);
        let timer = self
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(until)));
        if timer.deadline() != until {
            timer.as_mut().reset(until);
        }
        timer.as_mut().poll(cx).is_pending()
    }
}

/// Asks to be polled again once the worker has run what is queued now.
fn yield_once(cx: &mut Context<'_>) {
    let mut yielded = std::pin::pin!(tokio::task::yield_now());
    // The first poll defers the waker and is pending; the future is done with after it.
    let _ = yielded.as_mut().poll(cx);
}

/// A provider's stream: its text, reasoning and one call's arguments join; an error never
/// does (what came before it is delivered first).
impl Joinable for Result<ProviderEvent, ProviderError> {
    fn join(&mut self, next: Self) -> Option<Self> {
        match (self, next) {
            (Ok(ProviderEvent::TextDelta(text)), Ok(ProviderEvent::TextDelta(more)))
            | (Ok(ProviderEvent::ReasoningDelta(text)), Ok(ProviderEvent::ReasoningDelta(more))) => {
                text.push_str(&more);
                None
            }
            (
                Ok(ProviderEvent::ToolCallArgsDelta { index, delta }),
                Ok(ProviderEvent::ToolCallArgsDelta {
                    index: next_index,
                    delta: more,
                }),
            ) if *index == next_index => {
                delta.push_str(&more);
                None
            }
            (_, next) => Some(next),
        }
    }

    fn delta_len(&self) -> Option<usize> {
        match self {
            Ok(ProviderEvent::TextDelta(text) | ProviderEvent::ReasoningDelta(text)) => {
                Some(text.len())
            }
            Ok(ProviderEvent::ToolCallArgsDelta { delta, .. }) => Some(delta.len()),
            _ => None,
        }
    }
}

impl<S: Stream + Unpin> Stream for Coalesced<S>
where
    S::Item: Joinable,
{
    type Item = S::Item;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<S::Item>> {
        let this = &mut *self;
        let mut joined = match this.held.take() {
            Some(item) => item,
            None if this.ended => return Poll::Ready(None),
            None => match this.inner.poll_next_unpin(cx) {
                Poll::Pending => {
                    this.waited = true;
                    return Poll::Pending;
                }
                Poll::Ready(None) => {
                    this.ended = true;
                    return Poll::Ready(None);
                }
                Poll::Ready(Some(item)) => item,
            },
        };
        if joined.delta_len().is_none() {
            this.waited = false;
            return Poll::Ready(Some(joined));
        }
        // Held back last time: if the connection's turn handed nothing over, it goes now.
        let resumed = std::mem::take(&mut this.yielded);
        let mut more = false;
        while !this.ended && joined.delta_len().is_some_and(|n| n < MAX_JOINED_BYTES) {
            match this.inner.poll_next_unpin(cx) {
                Poll::Pending => {
                    let burst =
                        !this.waited || this.last_out.is_some_and(|at| at.elapsed() < BURST);
                    if let Some(hold) = this.hold
                        && burst
                    {
                        if this.still_holding(hold, cx) {
                            this.held = Some(joined);
                            return Poll::Pending;
                        }
                        break;
                    }
                    if burst && (more || !resumed) {
                        this.held = Some(joined);
                        this.yielded = true;
                        yield_once(cx);
                        return Poll::Pending;
                    }
                    break;
                }
                Poll::Ready(None) => this.ended = true,
                Poll::Ready(Some(next)) => {
                    if let Some(other) = joined.join(next) {
                        this.held = Some(other);
                        break;
                    }
                    more = true;
                }
            }
        }
        this.last_out = Some(Instant::now());
        this.waited = false;
        this.hold_until = None;
        Poll::Ready(Some(joined))
    }
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;

    use super::*;
    use crate::provider::{FinishReason, ProviderStream};

    type Item = Result<ProviderEvent, ProviderError>;

    fn text(s: &str) -> ProviderEvent {
        ProviderEvent::TextDelta(s.into())
    }

    fn args(index: usize, s: &str) -> ProviderEvent {
        ProviderEvent::ToolCallArgsDelta {
            index,
            delta: s.into(),
        }
    }

    /// A stream that yields `ready` items, then is pending once (a read that has not
    /// arrived), then yields `later`.
    fn stream(ready: Vec<Item>, later: Vec<Item>) -> ProviderStream {
        let ready = futures::stream::iter(ready);
        let mut waited = false;
        let gap = futures::stream::poll_fn(move |cx| {
            if waited {
                Poll::Ready(None)
            } else {
                waited = true;
                cx.waker().wake_by_ref();
                Poll::Pending
            }
        });
        Box::pin(ready.chain(gap).chain(futures::stream::iter(later)))
    }

    #[tokio::test]
    async fn ready_pieces_of_one_stream_join_and_nothing_waits() {
        let error = || ProviderError::Truncated {
            provider: "p".into(),
            detail: "cut".into(),
        };
        // (ready now, ready after a pause, what comes out)
        let cases: Vec<(Vec<Item>, Vec<Item>, Vec<Item>)> = vec![
            (
                vec![Ok(text("a")), Ok(text("b")), Ok(text("c"))],
                vec![Ok(text("d"))],
                // the pause ends the batch: "d" is not waited for
                vec![Ok(text("abc")), Ok(text("d"))],
            ),
            (
                vec![
                    Ok(ProviderEvent::ReasoningDelta("r1".into())),
                    Ok(ProviderEvent::ReasoningDelta("r2".into())),
                    Ok(text("t")),
                    Ok(args(0, "{\"a\"")),
                    Ok(args(0, ":1}")),
                    Ok(args(1, "{}")),
                    Ok(ProviderEvent::Finish(FinishReason::ToolCalls)),
                    Ok(text("after")),
                ],
                vec![],
                vec![
                    Ok(ProviderEvent::ReasoningDelta("r1r2".into())),
                    Ok(text("t")),
                    Ok(args(0, "{\"a\":1}")),
                    Ok(args(1, "{}")),
                    Ok(ProviderEvent::Finish(FinishReason::ToolCalls)),
                    Ok(text("after")),
                ],
            ),
            (
                vec![Ok(text("x")), Ok(text("y")), Err(error()), Ok(text("z"))],
                vec![],
                // an error is not joined, and what came before it is delivered first
                vec![Ok(text("xy")), Err(error()), Ok(text("z"))],
            ),
        ];
        for (ready, later, expected) in cases {
            let got: Vec<Item> = coalesce(stream(ready.clone(), later)).collect().await;
            assert_eq!(got, expected, "{ready:?}");
        }
    }

    /// Pieces fed as an HTTP client's connection task feeds a body: through a channel of
    /// one, each only after the one before was taken and the feeder ran again.
    fn fed(pieces: Vec<&'static str>, pause: Duration) -> ProviderStream {
        let (tx, mut rx) = tokio::sync::mpsc::channel::<Item>(1);
        tokio::spawn(async move {
            for piece in pieces {
                if !pause.is_zero() {
                    tokio::time::sleep(pause).await;
                }
                if tx.send(Ok(text(piece))).await.is_err() {
                    return;
                }
            }
        });
        Box::pin(futures::stream::poll_fn(move |cx| rx.poll_recv(cx)))
    }

    fn texts(got: &[Item]) -> Vec<String> {
        got.iter()
            .map(|item| match item {
                Ok(ProviderEvent::TextDelta(t)) => t.clone(),
                other => panic!("{other:?}"),
            })
            .collect()
    }

    // The runtime's clock is paused: pieces fed back to back are a burst however slow the
    // machine, and the feeder's pauses move the clock by exactly their length.
    #[tokio::test(start_paused = true)]
    async fn a_burst_handed_over_one_piece_at_a_time_is_joined() {
        let pieces: Vec<&str> = (0..200).map(|_| "tok ").collect();
        let got: Vec<Item> = coalesce(fed(pieces, Duration::ZERO)).collect().await;
        let got = texts(&got);
        assert_eq!(got.concat(), "tok ".repeat(200));
        // The first piece goes out alone (nothing says a burst follows); the rest are
        // handed over while the held piece waits for the feeder's next turn.
        assert!(got.len() <= 3, "{} pieces: {got:?}", got.len());
    }

    // A run slower per piece than the burst window (an external ACP agent's chunks, each
    // a message the run emits, saves and sends): what queued while it worked is joined.
    #[tokio::test(start_paused = true)]
    async fn a_run_that_falls_behind_joins_what_queued_meanwhile() {
        let pieces: Vec<&str> = (0..200).map(|_| "tok ").collect();
        let mut stream = coalesce(fed(pieces, Duration::ZERO));
        let mut got = Vec::new();
        while let Some(item) = stream.next().await {
            got.push(item);
            tokio::time::sleep(BURST * 2).await;
        }
        let got = texts(&got);
        assert_eq!(got.concat(), "tok ".repeat(200));
        assert!(got.len() <= 3, "{} pieces: {got:?}", got.len());
    }

    // Pieces that each take a few hops to arrive (an ACP agent's chunks): a holding stream
    // waits for them in a burst, and a piece of another kind ends the wait at once.
    #[tokio::test(start_paused = true)]
    async fn a_holding_stream_waits_in_a_burst_for_pieces_a_turn_does_not_bring() {
        let (tx, mut rx) = tokio::sync::mpsc::channel::<Item>(1);
        tokio::spawn(async move {
            for i in 0..100 {
                // Three hops per piece: one turn of the runtime never brings the next.
                for _ in 0..3 {
                    tokio::task::yield_now().await;
                }
                let item = if i == 99 {
                    Ok(ProviderEvent::Finish(FinishReason::Stop))
                } else {
                    Ok(text("tok "))
                };
                if tx.send(item).await.is_err() {
                    return;
                }
            }
        });
        let inner: ProviderStream = Box::pin(futures::stream::poll_fn(move |cx| rx.poll_recv(cx)));
        let got: Vec<Item> = coalesce(inner)
            .holding(Duration::from_millis(5))
            .collect()
            .await;
        let (pieces, rest) = got.split_at(got.len() - 1);
        assert_eq!(rest, [Ok(ProviderEvent::Finish(FinishReason::Stop))]);
        let pieces = texts(pieces);
        assert_eq!(pieces.concat(), "tok ".repeat(99));
        assert!(pieces.len() <= 3, "{} pieces: {pieces:?}", pieces.len());
    }

    #[tokio::test(start_paused = true)]
    async fn pieces_that_come_at_a_models_pace_are_never_held() {
        let pieces = vec!["a", "b", "c", "d", "e"];
        let mut stream = coalesce(fed(pieces, Duration::from_millis(5)));
        let (mut got, mut held) = (Vec::new(), 0);
        futures::future::poll_fn(|cx| {
            loop {
                match Pin::new(&mut stream).poll_next(cx) {
                    Poll::Ready(Some(item)) => got.push(item),
                    Poll::Ready(None) => return Poll::Ready(()),
                    Poll::Pending => {
                        held += usize::from(stream.yielded);
                        return Poll::Pending;
                    }
                }
            }
        })
        .await;
        assert_eq!(texts(&got), ["a", "b", "c", "d", "e"]);
        assert_eq!(held, 0, "a piece was held back");
    }

    #[tokio::test]
    async fn a_joined_piece_is_bounded() {
        let piece = "x".repeat(1000);
        let ready: Vec<Item> = (0..200).map(|_| Ok(text(&piece))).collect();
        let got: Vec<Item> = coalesce(stream(ready, vec![])).collect().await;
        let sizes: Vec<usize> = got
            .iter()
            .map(|item| match item {
                Ok(ProviderEvent::TextDelta(t)) => t.len(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(sizes.iter().sum::<usize>(), 200_000);
        assert!(
            sizes.iter().all(|&n| n <= MAX_JOINED_BYTES + 1000),
            "{sizes:?}"
        );
        assert!(sizes.len() >= 3, "{sizes:?}");
    }
}
