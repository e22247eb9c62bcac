//! A running command's output shown as it comes: the pipe readers hand each chunk to
//! [`Live`] (never waiting: a slow client must not hold up the command), and [`pump`]
//! sends what piled up as `toolProgress` events with `output`, the first piece at once and
//! then at most every [`INTERVAL`], joined per stream, cut on character boundaries into
//! events of at most [`EVENT_CAP`] bytes. A call shows at most [`CALL_CAP`] bytes live,
//! then one notice (`message`) that live output stops; the call's result is made apart,
//! from the readers' own copy, with its own caps. `progress` is the bytes of output text
//! sent so far for the call, so each output event's `progress` is the previous one plus
//! its text's length. A command that writes nothing sends nothing.

use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use agent_proto::{LiveOutput, OutputStream};
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;

use crate::tools::mcp::Progress;

/// Bytes of text in one event at most.
pub(super) const EVENT_CAP: usize = 8 * 1024;
/// Bytes of output one call shows live at most.
pub(super) const CALL_CAP: usize = 1024 * 1024;
/// The shortest time between two sends of one call.
const INTERVAL: Duration = Duration::from_millis(150);

/// What the readers read and the pump has not sent yet.
#[derive(Debug, Default)]
struct Pending {
    /// Text in the order it was read, consecutive pieces of one stream joined.
    pieces: VecDeque<(OutputStream, String)>,
    /// Per stream (stdout, stderr), the start of a character whose rest is still to come.
    carry: [Vec<u8>; 2],
    /// Bytes taken in, at most [`CALL_CAP`].
    taken: usize,
    /// The cap was reached and the notice is still to be sent.
    notice_due: bool,
}

/// One call's live output, between its pipe readers and its [`pump`].
#[derive(Debug, Default)]
pub(super) struct Live {
    pending: Mutex<Pending>,
    wake: Notify,
    ended: CancellationToken,
}

impl Live {
    fn lock(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes a chunk `stream` wrote. Never waits: past [`CALL_CAP`] it is dropped.
    pub(super) fn push(&self, stream: OutputStream, bytes: &[u8]) {
        let mut pending = self.lock();
        let room = CALL_CAP - pending.taken;
        if room == 0 || bytes.is_empty() {
            return;
        }
        let kept = &bytes[..bytes.len().min(room)];
        pending.taken += kept.len();
        let at_cap = pending.taken == CALL_CAP;
        let carry = &mut pending.carry[index(stream)];
        let mut text = decode(carry, kept);
        if at_cap {
            // What is cut at the cap ends here: a character cut in two is shown lossily.
            text.push_str(&String::from_utf8_lossy(&std::mem::take(carry)));
        }
        pending.notice_due |= at_cap;
        append(&mut pending.pieces, stream, text);
        drop(pending);
        self.wake.notify_one();
    }

    /// The command ended and its pipes are read: what is left is sent, then the pump ends.
    pub(super) fn end(&self) {
        let mut pending = self.lock();
        for stream in [OutputStream::Stdout, OutputStream::Stderr] {
            let rest = std::mem::take(&mut pending.carry[index(stream)]);
            append(
                &mut pending.pieces,
                stream,
                String::from_utf8_lossy(&rest).into_owned(),
            );
        }
        drop(pending);
        self.ended.cancel();
    }

    /// What is to be sent now, and whether the notice is.
    fn take(&self) -> (VecDeque<(OutputStream, String)>, bool) {
        let mut pending = self.lock();
        let notice = std::mem::take(&mut pending.notice_due);
        (std::mem::take(&mut pending.pieces), notice)
    }
}

fn index(stream: OutputStream) -> usize {
    match stream {
        OutputStream::Stdout => 0,
        OutputStream::Stderr => 1,
    }
}

/// Adds `text` after the pieces, joined to the last one when it is of the same stream.
fn append(pieces: &mut VecDeque<(OutputStream, String)>, stream: OutputStream, text: String) {
    if text.is_empty() {
        return;
    }
    match pieces.back_mut() {
        Some((last, joined)) if *last == stream => joined.push_str(&text),
        _ => pieces.push_back((stream, text)),
    }
}

/// `carry` then `bytes` as text: whole characters, a byte that cannot begin or continue
/// one replaced by U+FFFD, and the start of a character still incomplete at the end kept
/// in `carry` for the next chunk.
fn decode(carry: &mut Vec<u8>, bytes: &[u8]) -> String {
    carry.extend_from_slice(bytes);
    let mut text = String::with_capacity(carry.len());
    let mut rest: &[u8] = carry;
    loop {
        match std::str::from_utf8(rest) {
            Ok(valid) => {
                text.push_str(valid);
                rest = &[];
                break;
            }
            Err(e) => {
                let (valid, after) = rest.split_at(e.valid_up_to());
                text.push_str(std::str::from_utf8(valid).unwrap_or_default());
                match e.error_len() {
                    Some(bad) => {
                        text.push(char::REPLACEMENT_CHARACTER);
                        rest = &after[bad..];
                    }
                    // An incomplete character at the end: its rest may come next.
                    None => {
                        rest = after;
                        break;
                    }
                }
            }
        }
    }
    let kept = rest.len();
    carry.drain(..carry.len() - kept);
    text
}

/// `text` in parts of at most `cap` bytes, each ending on a character boundary.
fn parts(text: &str, cap: usize) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let mut end = rest.len().min(cap);
        while !rest.is_char_boundary(end) {
            end -= 1;
        }
        let (part, after) = rest.split_at(end);
        parts.push(part);
        rest = after;
    }
    parts
}

/// Sends `live`'s output to `sink` until the command ended and all of it is sent (or
/// nobody listens any more): the first piece at once, then at most every [`INTERVAL`].
pub(super) async fn pump(live: &Live, sink: mpsc::Sender<Progress>) {
    let mut sent = 0usize;
    loop {
        let ended = tokio::select! {
            _ = live.wake.notified() => false,
            _ = live.ended.cancelled() => true,
        };
        let (pieces, notice) = live.take();
        for (stream, text) in &pieces {
            for part in parts(text, EVENT_CAP) {
                sent += part.len();
                let output = LiveOutput {
                    stream: *stream,
                    text: part.to_owned(),
                };
                if send(&sink, sent, None, Some(output)).await.is_err() {
                    return;
                }
            }
        }
        if notice {
            let note = format!(
                "live output stops here (at {} KiB); the result has the output",
                CALL_CAP / 1024
            );
            if send(&sink, sent, Some(note), None).await.is_err() {
                return;
            }
        }
        if ended {
            return;
        }
        // At most one send per interval; the end cuts the wait short.
        tokio::select! {
            () = tokio::time::sleep(INTERVAL) => {}
            () = live.ended.cancelled() => {}
        }
    }
}

async fn send(
    sink: &mpsc::Sender<Progress>,
    sent: usize,
    message: Option<String>,
    output: Option<LiveOutput>,
) -> Result<(), ()> {
    let progress = Progress {
        progress: sent as f64,
        total: None,
        message,
        output,
    };
    sink.send(progress).await.map_err(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn characters_split_across_chunks_arrive_whole_and_bad_bytes_are_replaced() {
        // (chunks, the text of each chunk, what is carried at the end)
        type Case<'a> = (&'a [&'a [u8]], &'a [&'a str], &'a [u8]);
        let cases: &[Case] = &[
            (&[b"plain"], &["plain"], b""),
            (&[b"\xc3", b"\xa9t\xc3\xa9"], &["", "\u{e9}t\u{e9}"], b""),
            (&[b"a\xe2\x82", b"\xac"], &["a", "\u{20ac}"], b""),
            (
                &[b"\xf0\x9f", b"\x98", b"\x80!"],
                &["", "", "\u{1f600}!"],
                b"",
            ),
            (&[b"x\xffy"], &["x\u{fffd}y"], b""),
            (&[b"\xc3("], &["\u{fffd}("], b""),
            (&[b"end\xe2\x82"], &["end"], b"\xe2\x82"),
        ];
        for (chunks, texts, carried) in cases {
            let mut carry = Vec::new();
            let got: Vec<String> = chunks.iter().map(|c| decode(&mut carry, c)).collect();
            assert_eq!(got, *texts, "{chunks:?}");
            assert_eq!(carry, *carried, "{chunks:?}");
        }
    }

    #[test]
    fn parts_are_capped_and_never_split_a_character() {
        assert_eq!(parts("abcdef", 4), ["abcd", "ef"]);
        assert_eq!(parts("ab\u{e9}cd", 3), ["ab", "\u{e9}c", "d"]);
        assert!(parts("", 4).is_empty());
    }

    #[test]
    fn pieces_of_one_stream_are_joined_in_order_and_the_cap_holds() {
        let live = Live::default();
        live.push(OutputStream::Stdout, b"a");
        live.push(OutputStream::Stdout, b"b");
        live.push(OutputStream::Stderr, b"E");
        live.push(OutputStream::Stdout, b"\xc3");
        live.push(OutputStream::Stdout, b"\xa9");
        let (pieces, notice) = live.take();
        let pieces: Vec<_> = pieces.into_iter().collect();
        assert_eq!(
            pieces,
            [
                (OutputStream::Stdout, "ab".to_owned()),
                (OutputStream::Stderr, "E".to_owned()),
                (OutputStream::Stdout, "\u{e9}".to_owned()),
            ]
        );
        assert!(!notice);
        let big = vec![b'y'; CALL_CAP];
        live.push(OutputStream::Stdout, &big);
        live.push(OutputStream::Stdout, b"more");
        let (pieces, notice) = live.take();
        let kept: usize = pieces.iter().map(|(_, t)| t.len()).sum();
        assert_eq!(
            kept,
            CALL_CAP - 5,
            "what came before counts against the cap"
        );
        assert!(notice);
        live.push(OutputStream::Stderr, b"after");
        assert_eq!(live.take(), (VecDeque::new(), false));
    }

    #[tokio::test]
    async fn the_pump_sends_everything_then_ends_and_progress_counts_the_text() {
        let live = Live::default();
        let (tx, mut rx) = mpsc::channel(1024);
        live.push(OutputStream::Stdout, b"one\n");
        live.push(OutputStream::Stderr, b"two\xe2\x82");
        live.end();
        pump(&live, tx).await;
        let got: Vec<(f64, Option<LiveOutput>)> = std::iter::from_fn(|| rx.try_recv().ok())
            .map(|p| (p.progress, p.output))
            .collect();
        let out = |stream, text: &str| {
            Some(LiveOutput {
                stream,
                text: text.into(),
            })
        };
        assert_eq!(
            got,
            [
                (4.0, out(OutputStream::Stdout, "one\n")),
                (10.0, out(OutputStream::Stderr, "two\u{fffd}")),
            ]
        );
    }

    #[tokio::test]
    async fn nothing_written_sends_nothing() {
        let live = Live::default();
        let (tx, mut rx) = mpsc::channel(16);
        live.end();
        pump(&live, tx).await;
        assert!(rx.try_recv().is_err());
    }
}
