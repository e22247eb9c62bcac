//! Joining deltas that are already waiting: when the provider's stream has several pieces
//! of one stream ready at once (many SSE events in one read, as providers and proxies
//! that buffer send them), they become one piece, so the run emits one event, saves and
//! fans out once, instead of once per piece.
//!
//! Never waits to join: what is ready now is taken, and the first piece that is not ready
//! ends the batch (a time budget of zero). The protocol allows any split of a stream into
//! deltas, so clients see the same text, in the same order, in fewer events.

use std::pin::Pin;
use std::task::{Context, Poll};

use futures::Stream;

use crate::provider::{ProviderError, ProviderEvent, ProviderStream};

/// The most text one joined piece carries.
const MAX_JOINED_BYTES: usize = 64 * 1024;

type Item = Result<ProviderEvent, ProviderError>;

/// A provider stream whose ready deltas are joined.
pub(super) struct Coalesced {
    inner: ProviderStream,
    /// An item taken while joining that did not join: the next one out.
    held: Option<Item>,
    /// The inner stream has ended.
    ended: bool,
}

pub(super) fn coalesce(inner: ProviderStream) -> Coalesced {
    Coalesced {
        inner,
        held: None,
        ended: false,
    }
}

/// Appends `next` to `joined` if it continues the same stream; gives it back if not.
fn join(joined: &mut ProviderEvent, next: ProviderEvent) -> Option<ProviderEvent> {
    match (joined, next) {
        (ProviderEvent::TextDelta(text), ProviderEvent::TextDelta(more))
        | (ProviderEvent::ReasoningDelta(text), ProviderEvent::ReasoningDelta(more)) => {
            text.push_str(&more);
            None
        }
        (
            ProviderEvent::ToolCallArgsDelta { index, delta },
            ProviderEvent::ToolCallArgsDelta {
                index: next_index,
                delta: more,
            },
        ) if *index == next_index => {
            delta.push_str(&more);
            None
        }
        (_, next) => Some(next),
    }
}

/// The text of a delta (the size of a joined piece); `None` for other events.
fn delta_len(event: &ProviderEvent) -> Option<usize> {
    match event {
        ProviderEvent::TextDelta(text) | ProviderEvent::ReasoningDelta(text) => Some(text.len()),
        ProviderEvent::ToolCallArgsDelta { delta, .. } => Some(delta.len()),
        _ => None,
    }
}

impl Stream for Coalesced {
    type Item = Item;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Item>> {
        let this = &mut *self;
        let first = match this.held.take() {
            Some(item) => item,
            None if this.ended => return Poll::Ready(None),
            None => match this.inner.as_mut().poll_next(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => {
                    this.ended = true;
                    return Poll::Ready(None);
                }
                Poll::Ready(Some(item)) => item,
            },
        };
        let Ok(mut joined) = first else {
            return Poll::Ready(Some(first));
        };
        while !this.ended && delta_len(&joined).is_some_and(|n| n < MAX_JOINED_BYTES) {
            match this.inner.as_mut().poll_next(cx) {
                Poll::Pending => break,
                Poll::Ready(None) => this.ended = true,
                Poll::Ready(Some(Ok(next))) => {
                    if let Some(other) = join(&mut joined, next) {
                        this.held = Some(Ok(other));
                        break;
                    }
                }
                Poll::Ready(Some(Err(e))) => {
                    this.held = Some(Err(e));
                    break;
                }
            }
        }
        Poll::Ready(Some(Ok(joined)))
    }
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;

    use super::*;
    use crate::provider::FinishReason;

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
