//! Framing: where one message ends and the next begins.
//!
//! Detected per connection from its first non-blank byte: `C`/`c` means LSP-style headers
//! (`Content-Length: N\r\n\r\n` then N bytes; what editor JSON-RPC libraries send),
//! anything else newline-delimited JSON (one message per line). A frame over the limit is
//! reported and skipped: NDJSON resyncs at the next newline, headers by skipping the
//! announced length. Malformed headers cannot be resynced: the connection is closed.
//!
//! Memory: the bytes of a frame still being received are buffered. Each connection may hold
//! [`OWN_ALLOWANCE`] of them on its own; beyond that they are taken from an [`InputBudget`]
//! shared by all connections. A frame that would need more than is left is skipped like an
//! overlong one ([`Frame::OverBudget`]), so many connections with half-sent giant frames
//! cannot exhaust the daemon's memory. After a large frame the buffer is given back and a
//! small one takes its place.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::{Buf, Bytes, BytesMut};
use tokio_util::codec::Decoder;

/// Longest header block accepted (all header lines of one message).
const MAX_HEADER_BYTES: usize = 8 * 1024;

/// Bytes of an unfinished frame a connection may buffer without drawing on the shared
/// budget: every ordinary request fits, so small requests keep working when the budget is
/// spent.
pub const OWN_ALLOWANCE: usize = 64 * 1024;

/// A read buffer above this capacity is replaced by a small one once it holds little.
const KEEP_CAPACITY: usize = 64 * 1024;

/// Capacity of a fresh read buffer.
const FRESH_CAPACITY: usize = 8 * 1024;

/// Bytes of unfinished frames (beyond each connection's [`OWN_ALLOWANCE`]) that all
/// connections may buffer together. Cheap to clone: clones share one count.
#[derive(Debug, Clone)]
pub struct InputBudget {
    limit: usize,
    used: Arc<AtomicUsize>,
}

impl InputBudget {
    pub fn new(limit: usize) -> InputBudget {
        InputBudget {
            limit,
            used: Arc::new(AtomicUsize::new(0)),
        }
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Takes `n` bytes if that many are left.
    fn try_take(&self, n: usize) -> bool {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(n).filter(|&total| total <= self.limit)
            })
            .is_ok()
    }

    fn give_back(&self, n: usize) {
        self.used.fetch_sub(n, Ordering::AcqRel);
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    Ndjson,
    ContentLength,
}

impl Framing {
    /// One outgoing message in this framing.
    pub fn encode(self, message: &str) -> Bytes {
        match self {
            Framing::Ndjson => {
                let mut out = BytesMut::with_capacity(message.len() + 1);
                out.extend_from_slice(message.as_bytes());
                out.extend_from_slice(b"\n");
                out.freeze()
            }
            Framing::ContentLength => {
                let header = format!("Content-Length: {}\r\n\r\n", message.len());
                let mut out = BytesMut::with_capacity(header.len() + message.len());
                out.extend_from_slice(header.as_bytes());
                out.extend_from_slice(message.as_bytes());
                out.freeze()
            }
        }
    }
}

impl Framing {
    /// Appends one outgoing message, given in parts, to `buf` in this framing.
    pub fn append(self, buf: &mut Vec<u8>, parts: &[&[u8]]) {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        match self {
            Framing::Ndjson => {
                buf.reserve(len + 1);
                for part in parts {
                    buf.extend_from_slice(part);
                }
                buf.push(b'\n');
            }
            Framing::ContentLength => {
                use std::io::Write as _;
                buf.reserve(len + 32);
                // Writing into a Vec cannot fail.
                let _ = write!(buf, "Content-Length: {len}\r\n\r\n");
                for part in parts {
                    buf.extend_from_slice(part);
                }
            }
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    Message(Bytes),
    /// A frame over the limit was skipped; `len` is its size as far as known.
    TooLarge {
        len: usize,
    },
    /// A frame was skipped because the shared [`InputBudget`] could not hold it; `len` is
    /// what had arrived of it (or its announced length).
    OverBudget {
        len: usize,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// A header block the decoder cannot read; the connection must be closed.
    #[error("bad message header: {0}")]
    BadHeader(String),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Between messages.
    Idle,
    /// NDJSON: dropping the rest of an overlong line.
    SkipLine,
    /// Headers read; waiting for a body of this length.
    Body(usize),
    /// Dropping this many more bytes of an overlong body.
    SkipBytes(usize),
}

/// The decoder of one connection. Dropping it gives back what it took from the budget.
#[derive(Debug)]
pub struct FrameCodec {
    framing: Option<Framing>,
    max_frame: usize,
    state: State,
    /// NDJSON: bytes of the buffer already searched for a newline.
    scanned: usize,
    budget: InputBudget,
    /// Bytes taken from `budget` for the unfinished frame in the buffer.
    held: usize,
}

impl Drop for FrameCodec {
    fn drop(&mut self) {
        self.budget.give_back(self.held);
    }
}

impl FrameCodec {
    pub fn new(max_frame: usize, budget: InputBudget) -> Self {
        FrameCodec {
            framing: None,
            max_frame,
            state: State::Idle,
            scanned: 0,
            budget,
            held: 0,
        }
    }

    /// The connection's framing, once its first bytes arrived.
    pub fn framing(&self) -> Option<Framing> {
        self.framing
    }

    fn decode_ndjson(&mut self, buf: &mut BytesMut) -> Option<Frame> {
        loop {
            self.scanned = self.scanned.min(buf.len());
            let newline = buf[self.scanned..].iter().position(|&b| b == b'\n');
            match (self.state, newline) {
                (State::SkipLine, Some(pos)) => {
                    buf.advance(self.scanned + pos + 1);
                    self.scanned = 0;
                    self.state = State::Idle;
                }
                (State::SkipLine, None) => {
                    buf.clear();
                    self.scanned = 0;
                    return None;
                }
                (_, Some(pos)) => {
                    let line = buf.split_to(self.scanned + pos + 1);
                    self.scanned = 0;
                    let body = trim_ascii(&line);
                    if body.is_empty() {
                        continue;
                    }
                    if body.len() > self.max_frame {
                        return Some(Frame::TooLarge { len: body.len() });
                    }
                    return Some(Frame::Message(Bytes::copy_from_slice(body)));
                }
                (_, None) => {
                    if buf.len() > self.max_frame {
                        let len = buf.len();
                        buf.clear();
                        self.scanned = 0;
                        self.state = State::SkipLine;
                        return Some(Frame::TooLarge { len });
                    }
                    self.scanned = buf.len();
                    return None;
                }
            }
        }
    }

    fn decode_headers(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, FrameError> {
        loop {
            match self.state {
                State::SkipBytes(left) => {
                    let n = left.min(buf.len());
                    buf.advance(n);
                    if n < left {
                        self.state = State::SkipBytes(left - n);
                        return Ok(None);
                    }
                    self.state = State::Idle;
                }
                State::Body(len) => {
                    if buf.len() < len {
                        // The buffer grows as the body arrives, not by what was announced.
                        return Ok(None);
                    }
                    self.state = State::Idle;
                    return Ok(Some(Frame::Message(buf.split_to(len).freeze())));
                }
                State::Idle | State::SkipLine => {
                    let blank = buf.iter().take_while(|b| b.is_ascii_whitespace()).count();
                    buf.advance(blank);
                    let Some(end) = find(buf, b"\r\n\r\n") else {
                        if buf.len() > MAX_HEADER_BYTES {
                            return Err(FrameError::BadHeader(format!(
                                "no end of headers within {MAX_HEADER_BYTES} bytes"
                            )));
                        }
                        return Ok(None);
                    };
                    let headers = buf.split_to(end + 4);
                    let len = content_length(&headers[..end])?;
                    if len > self.max_frame {
                        self.state = State::SkipBytes(len);
                        return Ok(Some(Frame::TooLarge { len }));
                    }
                    self.state = State::Body(len);
                }
            }
        }
    }
}

fn trim_ascii(line: &[u8]) -> &[u8] {
    let start = line
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(line.len());
    let end = line
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(start, |p| p + 1);
    &line[start..end.max(start)]
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn content_length(headers: &[u8]) -> Result<usize, FrameError> {
    let text = std::str::from_utf8(headers)
        .map_err(|_| FrameError::BadHeader("headers are not UTF-8".into()))?;
    let mut length = None;
    for line in text.split("\r\n") {
        let Some((name, value)) = line.split_once(':') else {
            return Err(FrameError::BadHeader(format!(
                "{line:?} is not a header line"
            )));
        };
        if name.trim().eq_ignore_ascii_case("content-length") {
            let value = value.trim();
            length = Some(value.parse::<usize>().map_err(|_| {
                FrameError::BadHeader(format!("Content-Length {value:?} is not a number"))
            })?);
        }
    }
    length.ok_or_else(|| FrameError::BadHeader("no Content-Length header".into()))
}

impl FrameCodec {
    /// The next frame, before the budget is settled.
    fn decode_frame(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, FrameError> {
        let framing = match self.framing {
            Some(f) => f,
            None => {
                let Some(first) = buf.iter().find(|b| !b.is_ascii_whitespace()) else {
                    return Ok(None);
                };
                let f = if matches!(first, b'C' | b'c') {
                    Framing::ContentLength
                } else {
                    Framing::Ndjson
                };
                self.framing = Some(f);
                f
            }
        };
        match framing {
            Framing::Ndjson => Ok(self.decode_ndjson(buf)),
            Framing::ContentLength => self.decode_headers(buf),
        }
    }

    /// The buffer holds only an unfinished frame: its bytes beyond the connection's own
    /// allowance must be covered by the budget. If they cannot be, the frame is dropped and
    /// skipped to its end, and `OverBudget` says so.
    fn hold_unfinished(&mut self, buf: &mut BytesMut) -> Option<Frame> {
        let want = buf.len().saturating_sub(OWN_ALLOWANCE);
        if want <= self.held || self.budget.try_take(want - self.held) {
            self.held = self.held.max(want);
            return None;
        }
        let len = buf.len();
        buf.clear();
        self.scanned = 0;
        Some(match self.state {
            State::Body(announced) => {
                self.state = State::SkipBytes(announced - len);
                Frame::OverBudget { len: announced }
            }
            // An NDJSON line (a header block is never this long: MAX_HEADER_BYTES).
            _ => {
                self.state = State::SkipLine;
                Frame::OverBudget { len }
            }
        })
    }

    /// Gives back what the buffer no longer needs: budget beyond its unfinished bytes, and
    /// a large allocation once it holds little.
    fn release(&mut self, buf: &mut BytesMut) {
        let want = buf.len().saturating_sub(OWN_ALLOWANCE);
        if want < self.held {
            self.budget.give_back(self.held - want);
            self.held = want;
        }
        if buf.capacity() > KEEP_CAPACITY && buf.len() <= KEEP_CAPACITY / 2 {
            let mut fresh = BytesMut::with_capacity(FRESH_CAPACITY.max(buf.len()));
            fresh.extend_from_slice(buf);
            *buf = fresh;
        }
    }
}

impl Decoder for FrameCodec {
    type Item = Frame;
    type Error = FrameError;

    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, FrameError> {
        let frame = match self.decode_frame(buf)? {
            Some(frame) => Some(frame),
            None => self.hold_unfinished(buf),
        };
        self.release(buf);
        Ok(frame)
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, FrameError> {
        if let Some(frame) = self.decode(buf)? {
            return Ok(Some(frame));
        }
        // A last NDJSON line without its newline still counts.
        if self.framing == Some(Framing::Ndjson) && self.state == State::Idle {
            let body = trim_ascii(buf);
            if !body.is_empty() && body.len() <= self.max_frame {
                let frame = Frame::Message(Bytes::copy_from_slice(body));
                buf.clear();
                self.scanned = 0;
                self.release(buf);
                return Ok(Some(frame));
            }
        }
        buf.clear();
        self.scanned = 0;
        self.release(buf);
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes the budget has handed out now.
    fn used(budget: &InputBudget) -> usize {
        budget.used.load(Ordering::Relaxed)
    }

    fn msg(s: &str) -> Frame {
        Frame::Message(Bytes::copy_from_slice(s.as_bytes()))
    }

    /// Decodes `input` fed in chunks of `chunk` bytes, then EOF.
    fn decode_all(input: &[u8], chunk: usize, max: usize) -> (Vec<Frame>, Option<String>) {
        decode_chunks(input, || chunk, max)
    }

    /// Decodes `input` fed in chunks whose sizes `next_size` gives, then EOF; returns the
    /// frames, or the error that ended it.
    pub(super) fn decode_chunks(
        input: &[u8],
        mut next_size: impl FnMut() -> usize,
        max: usize,
    ) -> (Vec<Frame>, Option<String>) {
        let mut codec = FrameCodec::new(max, InputBudget::new(usize::MAX));
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        let mut at = 0;
        while at < input.len() {
            let end = (at + next_size().max(1)).min(input.len());
            buf.extend_from_slice(&input[at..end]);
            at = end;
            loop {
                match codec.decode(&mut buf) {
                    Ok(Some(f)) => out.push(f),
                    Ok(None) => break,
                    Err(e) => return (out, Some(e.to_string())),
                }
            }
        }
        loop {
            match codec.decode_eof(&mut buf) {
                Ok(Some(f)) => out.push(f),
                Ok(None) => break,
                Err(e) => return (out, Some(e.to_string())),
            }
        }
        (out, None)
    }

    #[test]
    fn table() {
        struct Case {
            input: &'static str,
            max: usize,
            frames: Vec<Frame>,
            error: Option<&'static str>,
        }
        let cases = vec![
            Case {
                input: "{\"a\":1}\n{\"b\":2}\r\n\n  \n[1]",
                max: 100,
                frames: vec![msg("{\"a\":1}"), msg("{\"b\":2}"), msg("[1]")],
                error: None,
            },
            Case {
                input: "{\"long\":\"xxxxxxxxxxxxxxxxxxxx\"}\n{\"ok\":1}\n",
                max: 10,
                frames: vec![Frame::TooLarge { len: 0 }, msg("{\"ok\":1}")],
                error: None,
            },
            Case {
                input: "Content-Length: 7\r\n\r\n{\"a\":1}content-length: 2\r\nContent-Type: application/json\r\n\r\n[]",
                max: 100,
                frames: vec![msg("{\"a\":1}"), msg("[]")],
                error: None,
            },
            Case {
                input: "Content-Length: 19\r\n\r\n{\"big\":\"xxxxxxxxx\"}Content-Length: 2\r\n\r\n{}",
                max: 10,
                frames: vec![Frame::TooLarge { len: 0 }, msg("{}")],
                error: None,
            },
            Case {
                input: "Content-Length: abc\r\n\r\n{}",
                max: 100,
                frames: vec![],
                error: Some("not a number"),
            },
            Case {
                input: "Content-Type: x\r\n\r\n{}",
                max: 100,
                frames: vec![],
                error: Some("no Content-Length"),
            },
        ];
        for case in cases {
            for chunk in [1, 3, 16, 1000] {
                let (frames, error) = decode_all(case.input.as_bytes(), chunk, case.max);
                // The size of a skipped frame is what was known when it was skipped.
                let frames: Vec<Frame> = frames
                    .into_iter()
                    .map(|f| match f {
                        Frame::TooLarge { .. } => Frame::TooLarge { len: 0 },
                        m => m,
                    })
                    .collect();
                assert_eq!(frames, case.frames, "{:?} chunk {chunk}", case.input);
                match (error, case.error) {
                    (None, None) => {}
                    (Some(e), Some(needle)) => assert!(e.contains(needle), "{e}"),
                    (e, expected) => panic!("{:?}: error {e:?}, expected {expected:?}", case.input),
                }
            }
        }
    }

    #[test]
    fn overlong_ndjson_line_without_newline_is_skipped_to_the_next() {
        let mut input = vec![b'{'; 50];
        input.extend_from_slice(b"xx\n{}\n");
        for chunk in [1, 7, 64] {
            let (frames, error) = decode_all(&input, chunk, 20);
            assert_eq!(error, None);
            assert_eq!(frames.last(), Some(&msg("{}")), "chunk {chunk}");
            assert!(matches!(frames[0], Frame::TooLarge { .. }), "chunk {chunk}");
            assert_eq!(frames.len(), 2, "chunk {chunk}: {frames:?}");
        }
    }

    /// Feeds `input` to `codec` in one go, like FramedRead would, and returns its frames.
    fn feed(codec: &mut FrameCodec, buf: &mut BytesMut, input: &[u8]) -> Vec<Frame> {
        buf.extend_from_slice(input);
        let mut out = Vec::new();
        while let Some(frame) = codec.decode(buf).unwrap() {
            out.push(frame);
        }
        out
    }

    #[test]
    fn unfinished_frames_share_one_budget() {
        const KIB: usize = 1024;
        for framing in [Framing::Ndjson, Framing::ContentLength] {
            let budget = InputBudget::new(300 * KIB);
            let open = |len: usize| match framing {
                Framing::Ndjson => vec![b'x'; len],
                Framing::ContentLength => {
                    let mut v = format!("Content-Length: {}\r\n\r\n", 1000 * KIB).into_bytes();
                    v.extend(std::iter::repeat_n(b'x', len));
                    v
                }
            };
            let (mut a, mut a_buf) = (FrameCodec::new(1 << 20, budget.clone()), BytesMut::new());
            let (mut b, mut b_buf) = (FrameCodec::new(1 << 20, budget.clone()), BytesMut::new());
            // Within its own allowance a connection takes nothing from the budget.
            assert_eq!(feed(&mut a, &mut a_buf, &open(OWN_ALLOWANCE / 2)), vec![]);
            assert_eq!(used(&budget), 0, "{framing:?}");
            // Beyond it, the rest comes from the budget.
            assert_eq!(feed(&mut a, &mut a_buf, &vec![b'x'; 200 * KIB]), vec![]);
            let a_holds = OWN_ALLOWANCE / 2 + 200 * KIB - OWN_ALLOWANCE;
            assert!(
                used(&budget) >= a_holds - 100,
                "{framing:?}: {}",
                used(&budget)
            );
            // B's unfinished frame would need more than is left: it is skipped, and what
            // B held goes back.
            let frames = feed(&mut b, &mut b_buf, &open(250 * KIB));
            assert!(
                matches!(frames[..], [Frame::OverBudget { .. }]),
                "{framing:?}: {frames:?}"
            );
            assert!(used(&budget) <= budget.limit());
            assert_eq!(b.held, 0);
            assert!(b_buf.capacity() <= KEEP_CAPACITY, "{framing:?}");
            // B skips the rest of that frame, then works as before.
            let rest = match framing {
                Framing::Ndjson => b"xxxx\n{\"ok\":1}\n".to_vec(),
                Framing::ContentLength => {
                    let mut v = vec![b'x'; 750 * KIB];
                    v.extend_from_slice(b"Content-Length: 8\r\n\r\n{\"ok\":1}");
                    v
                }
            };
            assert_eq!(
                feed(&mut b, &mut b_buf, &rest),
                vec![msg("{\"ok\":1}")],
                "{framing:?}"
            );
            // A finishes its frame: the budget is free again and A's buffer is small.
            let end = match framing {
                Framing::Ndjson => b"\n".to_vec(),
                Framing::ContentLength => vec![b'x'; 1000 * KIB - (OWN_ALLOWANCE / 2 + 200 * KIB)],
            };
            let frames = feed(&mut a, &mut a_buf, &end);
            assert!(matches!(frames[..], [Frame::Message(_)]), "{framing:?}");
            assert_eq!(used(&budget), 0, "{framing:?}");
            assert!(
                a_buf.capacity() <= KEEP_CAPACITY,
                "{framing:?}: {}",
                a_buf.capacity()
            );
            // A connection that goes away mid-frame gives its share back.
            feed(&mut a, &mut a_buf, &open(200 * KIB));
            assert!(used(&budget) > 0);
            drop(a);
            assert_eq!(used(&budget), 0, "{framing:?}");
        }
    }

    #[test]
    fn a_large_frame_leaves_a_small_buffer() {
        let mut line = vec![b'x'; 4 << 20];
        line.push(b'\n');
        for max in [8 << 20, 1 << 20] {
            let mut codec = FrameCodec::new(max, InputBudget::new(usize::MAX));
            let mut buf = BytesMut::new();
            for chunk in line.chunks(64 * 1024) {
                buf.extend_from_slice(chunk);
                while codec.decode(&mut buf).unwrap().is_some() {}
            }
            assert!(
                buf.capacity() <= KEEP_CAPACITY,
                "max {max}: {}",
                buf.capacity()
            );
        }
    }

    #[test]
    fn encode_round_trips() {
        for framing in [Framing::Ndjson, Framing::ContentLength] {
            let encoded = framing.encode("{\"é\":1}");
            let (frames, error) = decode_all(&encoded, 3, 100);
            assert_eq!(error, None);
            assert_eq!(frames, vec![msg("{\"é\":1}")], "{framing:?}");
        }
    }
}

/// Property tests: random messages in random chunkings decode to themselves; random bytes
/// never panic the decoder nor yield a frame over the limit. A small xorshift generator
/// with fixed seeds keeps failures reproducible (the seed is in the message), and the
/// corpus of hand-made nasty inputs in `tests/fuzz/framing/` is replayed too.
#[cfg(test)]
mod properties {
    use super::*;

    use agentd_testkit::rng::Rng;

    /// Feeds `input` in random chunks of 1 to 64 bytes.
    fn decode_random_chunks(
        input: &[u8],
        rng: &mut Rng,
        max: usize,
    ) -> (Vec<Frame>, Option<String>) {
        super::tests::decode_chunks(input, || 1 + rng.below(64), max)
    }

    fn check_limits(frames: &[Frame], max: usize, what: &str) {
        for f in frames {
            if let Frame::Message(m) = f {
                assert!(
                    m.len() <= max,
                    "{what}: a frame of {} bytes over {max}",
                    m.len()
                );
            }
        }
    }

    #[test]
    fn messages_survive_any_chunking_in_both_framings() {
        for seed in 1..=300u64 {
            let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15));
            let messages: Vec<String> = (0..1 + rng.below(8))
                .map(|i| {
                    let filler: String = (0..rng.below(300))
                        .map(|_| char::from(b'a' + (rng.below(26) as u8)))
                        .collect();
                    format!("{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"m\",\"params\":{{\"s\":\"{filler} é 工\"}}}}")
                })
                .collect();
            for framing in [Framing::Ndjson, Framing::ContentLength] {
                let input: Vec<u8> = messages
                    .iter()
                    .flat_map(|m| framing.encode(m).to_vec())
                    .collect();
                let (frames, error) = decode_random_chunks(&input, &mut rng, 1 << 20);
                assert_eq!(error, None, "seed {seed} {framing:?}");
                let expected: Vec<Frame> = messages
                    .iter()
                    .map(|m| Frame::Message(Bytes::copy_from_slice(m.as_bytes())))
                    .collect();
                assert_eq!(frames, expected, "seed {seed} {framing:?}");
            }
        }
    }

    #[test]
    fn random_bytes_never_panic_nor_exceed_the_limit() {
        for seed in 1..=2000u64 {
            let mut rng = Rng(seed.wrapping_mul(0x2545_F491_4F6C_DD1D));
            let max = 16 + rng.below(512);
            let len = rng.below(4096);
            let mut input = rng.bytes(len);
            // Sometimes start like a header block, so both decoders get exercised.
            if seed % 2 == 0 {
                let head = format!("Content-Length: {}\r\n\r\n", rng.below(2 * max));
                input.splice(0..0, head.into_bytes());
            }
            let (frames, _) = decode_random_chunks(&input, &mut rng, max);
            check_limits(&frames, max, &format!("seed {seed}"));
        }
    }

    #[test]
    fn the_corpus_decodes_without_panics() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fuzz/framing");
        let mut replayed = 0;
        for entry in std::fs::read_dir(&dir).expect("the framing corpus") {
            let path = entry.expect("a corpus entry").path();
            let input = std::fs::read(&path).expect("a corpus file");
            for seed in 1..=20u64 {
                let mut rng = Rng(seed);
                let (frames, _) = decode_random_chunks(&input, &mut rng, 256);
                check_limits(&frames, 256, &path.display().to_string());
            }
            replayed += 1;
        }
        assert!(replayed >= 5, "the corpus is in {}", dir.display());
    }
}
