//! Raw socket connections for protocol-level tests: exact bytes out, frames in, in either
//! framing (newline-delimited JSON or `Content-Length` headers).
//!
//! A [`RawConn`] checks nothing about JSON-RPC beyond matching a response to its call; it is
//! the client a test uses to see precisely what the daemon sends. Frames read while waiting
//! for something else are kept, in order, so nothing the daemon sent is silently dropped.

use std::collections::VecDeque;
use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;

/// How long [`RawConn::recv`] and friends wait.
pub const WAIT: Duration = Duration::from_secs(10);

/// How frames are delimited on the socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// One JSON value per line.
    Ndjson,
    /// `Content-Length: N\r\n` (other headers allowed), a blank line, then N bytes of JSON.
    ContentLength,
}

/// A connection speaking one framing.
pub struct RawConn {
    stream: UnixStream,
    framing: Framing,
    /// Bytes read but not yet a whole frame.
    buf: Vec<u8>,
    /// Whole frames read while waiting for something else, oldest first.
    pending: VecDeque<Value>,
    next_id: u64,
}

enum Read {
    Frame(Value),
    Eof,
    Timeout,
}

fn is_notification(frame: &Value) -> bool {
    frame.get("method").is_some() && frame.get("id").is_none()
}

impl RawConn {
    /// Connects to the daemon's socket; panics if that fails or if the socket is served by
    /// another user (checked before anything is sent, as every client does).
    pub async fn connect(path: impl AsRef<Path>, framing: Framing) -> RawConn {
        let path = path.as_ref();
        let stream = UnixStream::connect(path)
            .await
            .unwrap_or_else(|e| panic!("cannot connect to {}: {e}", path.display()));
        agent_proto::client::check_peer(&stream, path).unwrap_or_else(|e| panic!("{e}"));
        RawConn {
            stream,
            framing,
            buf: Vec::new(),
            pending: VecDeque::new(),
            next_id: 1,
        }
    }

    /// Writes exactly these bytes; panics if the daemon closed the connection.
    pub async fn send_raw(&mut self, bytes: &[u8]) {
        if let Err(e) = self.try_send_raw(bytes).await {
            panic!(
                "cannot write {} byte(s) to the daemon: {e}; unread frames: {:?}",
                bytes.len(),
                self.pending
            );
        }
    }

    /// Writes exactly these bytes, reporting a write error (for tests where the daemon may
    /// cut the connection mid-write).
    pub async fn try_send_raw(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.stream.write_all(bytes).await
    }

    /// Writes one frame holding `value` in this connection's framing.
    pub async fn send(&mut self, value: &Value) {
        let frame = encode(self.framing, value);
        self.send_raw(&frame).await;
    }

    /// The next frame (unread frames kept by [`RawConn::call`] first); panics after
    /// [`WAIT`] or if the daemon closes the connection.
    pub async fn recv(&mut self) -> Value {
        if let Some(frame) = self.pending.pop_front() {
            return frame;
        }
        self.recv_from_socket("a frame").await
    }

    /// The next frame, or `None` if none arrives within `timeout`; panics if the daemon
    /// closes the connection.
    pub async fn try_recv(&mut self, timeout: Duration) -> Option<Value> {
        if let Some(frame) = self.pending.pop_front() {
            return Some(frame);
        }
        match self.read_frame(timeout).await {
            Read::Frame(frame) => Some(frame),
            Read::Eof => panic!("{}", self.closed_message("a frame")),
            Read::Timeout => None,
        }
    }

    /// The frames read but not yet handed out (by [`RawConn::is_closed`] or
    /// [`RawConn::call`]), oldest first.
    pub fn take_pending(&mut self) -> Vec<Value> {
        self.pending.drain(..).collect()
    }

    /// True when the daemon closes the connection within `timeout`. Frames read meanwhile
    /// stay available to [`RawConn::recv`].
    pub async fn is_closed(&mut self, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            match self.read_frame(left).await {
                Read::Eof => return true,
                Read::Timeout => return false,
                Read::Frame(frame) => self.pending.push_back(frame),
            }
        }
    }

    /// Sends `{"jsonrpc":"2.0","id":<n>,"method":..,"params":..}` with the next integer id
    /// (1, 2, ...) and returns the whole response object with that id. Frames read meanwhile
    /// (notifications, other responses) are kept for [`RawConn::recv`] and
    /// [`RawConn::next_notification`].
    pub async fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        let wanted = json!(id);
        let is_answer =
            |frame: &Value| frame.get("id") == Some(&wanted) && frame.get("method").is_none();
        if let Some(pos) = self.pending.iter().position(is_answer) {
            return self.pending.remove(pos).unwrap();
        }
        let what = format!("the response to {method} (id {id})");
        loop {
            let frame = self.recv_from_socket(&what).await;
            if is_answer(&frame) {
                return frame;
            }
            self.pending.push_back(frame);
        }
    }

    /// The next notification (a frame with `method` and no `id`): the oldest kept one, else
    /// from the socket (other frames read meanwhile are kept).
    pub async fn next_notification(&mut self) -> Value {
        if let Some(pos) = self.pending.iter().position(is_notification) {
            return self.pending.remove(pos).unwrap();
        }
        loop {
            let frame = self.recv_from_socket("a notification").await;
            if is_notification(&frame) {
                return frame;
            }
            self.pending.push_back(frame);
        }
    }

    async fn recv_from_socket(&mut self, what: &str) -> Value {
        match self.read_frame(WAIT).await {
            Read::Frame(frame) => frame,
            Read::Eof => panic!("{}", self.closed_message(what)),
            Read::Timeout => panic!(
                "waited {WAIT:?} for {what}; unread frames: {:?}; partial bytes: {:?}",
                self.pending,
                String::from_utf8_lossy(&self.buf)
            ),
        }
    }

    fn closed_message(&self, what: &str) -> String {
        format!(
            "the daemon closed the connection while we waited for {what}; unread frames: {:?}; \
             partial bytes: {:?}",
            self.pending,
            String::from_utf8_lossy(&self.buf)
        )
    }

    /// Reads from the socket until a whole frame is buffered (EOF and read errors, such as
    /// a reset, both count as closed).
    async fn read_frame(&mut self, timeout: Duration) -> Read {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Some(frame) = decode(self.framing, &mut self.buf) {
                return Read::Frame(frame);
            }
            self.buf.reserve(64 * 1024);
            let read = tokio::time::timeout_at(deadline, self.stream.read_buf(&mut self.buf));
            match read.await {
                Err(_) => return Read::Timeout,
                Ok(Ok(0) | Err(_)) => return Read::Eof,
                Ok(Ok(_)) => {}
            }
        }
    }
}

/// One frame holding `value`.
pub fn encode(framing: Framing, value: &Value) -> Vec<u8> {
    let body = value.to_string();
    match framing {
        Framing::Ndjson => format!("{body}\n"),
        Framing::ContentLength => format!("Content-Length: {}\r\n\r\n{body}", body.len()),
    }
    .into_bytes()
}

/// Takes one whole frame off the front of `buf`, if there is one. Blank NDJSON lines are
/// skipped; a frame that is not JSON, or a header block without a usable `Content-Length`,
/// panics (the daemon must never send one).
pub fn decode(framing: Framing, buf: &mut Vec<u8>) -> Option<Value> {
    match framing {
        Framing::Ndjson => loop {
            let end = buf.iter().position(|&b| b == b'\n')?;
            let line: Vec<u8> = buf.drain(..=end).collect();
            let text = String::from_utf8_lossy(&line);
            if text.trim().is_empty() {
                continue;
            }
            return Some(serde_json::from_str(text.trim()).unwrap_or_else(|e| {
                panic!("the daemon sent a line that is not JSON ({e}): {text:?}")
            }));
        },
        Framing::ContentLength => {
            let head_end = buf.windows(4).position(|w| w == b"\r\n\r\n")?;
            let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
            let length: usize = head
                .split("\r\n")
                .filter_map(|line| line.split_once(':'))
                .find(|(name, _)| name.trim().eq_ignore_ascii_case("content-length"))
                .map(|(_, value)| value.trim().parse())
                .unwrap_or_else(|| {
                    panic!("the daemon sent headers without Content-Length: {head:?}")
                })
                .unwrap_or_else(|e| panic!("the daemon sent a bad Content-Length ({e}): {head:?}"));
            let body_start = head_end + 4;
            if buf.len() < body_start + length {
                return None;
            }
            let frame: Vec<u8> = buf.drain(..body_start + length).collect();
            let body = &frame[body_start..];
            Some(serde_json::from_slice(body).unwrap_or_else(|e| {
                panic!(
                    "the daemon sent a body that is not JSON ({e}): {:?}",
                    String::from_utf8_lossy(body)
                )
            }))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::UnixListener;

    #[test]
    fn frames_decode_from_partial_input() {
        let cases: &[(Framing, &str, &[Value])] = &[
            (
                Framing::Ndjson,
                "{\"a\":1}\n\n  \r\n[2]\r\n{\"b\"",
                &[json!({"a": 1}), json!([2])],
            ),
            (
                Framing::ContentLength,
                "content-length: 7\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{\"a\":1}CONTENT-LENGTH:3\r\n\r\n[2]Content-Length: 9\r\n\r\n{\"b\"",
                &[json!({"a": 1}), json!([2])],
            ),
        ];
        for (framing, input, expected) in cases {
            // Fed one byte at a time: a frame only comes out once it is whole.
            let mut buf = Vec::new();
            let mut got = Vec::new();
            for &byte in input.as_bytes() {
                buf.push(byte);
                got.extend(decode(*framing, &mut buf));
            }
            assert_eq!(&got, expected, "{framing:?}");
            assert!(
                buf.ends_with(b"{\"b\""),
                "{framing:?}: the partial frame is kept"
            );
        }
    }

    #[test]
    fn encode_then_decode_round_trips() {
        let value = json!({"jsonrpc": "2.0", "method": "x", "params": {"text": "é\n"}});
        for framing in [Framing::Ndjson, Framing::ContentLength] {
            let mut buf = encode(framing, &value);
            assert_eq!(decode(framing, &mut buf), Some(value.clone()));
            assert!(buf.is_empty());
        }
    }

    /// A fake daemon: reads one request, then writes `answer` in 7-byte pieces.
    async fn fake_daemon(
        answer: String,
    ) -> (
        tempfile::TempDir,
        std::path::PathBuf,
        tokio::task::JoinHandle<String>,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.sock");
        let listener = UnixListener::bind(&path).unwrap();
        let server = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut got = vec![0u8; 4096];
            let n = s.read(&mut got).await.unwrap();
            for piece in answer.as_bytes().chunks(7) {
                s.write_all(piece).await.unwrap();
            }
            String::from_utf8_lossy(&got[..n]).into_owned()
        });
        (dir, path, server)
    }

    #[tokio::test]
    async fn content_length_call_keeps_notifications_and_other_frames() {
        let frames = [
            r#"{"jsonrpc":"2.0","method":"event","params":{"n":1}}"#,
            r#"{"jsonrpc":"2.0","id":99,"result":"other"}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":"ok"}"#,
            r#"{"jsonrpc":"2.0","method":"event","params":{"n":2}}"#,
        ];
        let answer: String = frames
            .iter()
            .map(|f| {
                format!(
                    "content-length: {}\r\nContent-Type: application/json\r\n\r\n{f}",
                    f.len()
                )
            })
            .collect();
        let (_dir, path, server) = fake_daemon(answer).await;
        let mut conn = RawConn::connect(&path, Framing::ContentLength).await;

        let response = conn.call("ping", json!({"x": 1})).await;
        assert_eq!(response, json!({"jsonrpc": "2.0", "id": 1, "result": "ok"}));
        assert_eq!(conn.next_notification().await["params"]["n"], 1);
        assert_eq!(conn.next_notification().await["params"]["n"], 2);
        assert_eq!(conn.recv().await["id"], 99);
        assert!(conn.is_closed(Duration::from_secs(5)).await);

        let sent = server.await.unwrap();
        let body = r#"{"id":1,"jsonrpc":"2.0","method":"ping","params":{"x":1}}"#;
        let expected = format!("Content-Length: {}\r\n\r\n{body}", body.len());
        let mut sent_buf = sent.clone().into_bytes();
        let mut expected_buf = expected.into_bytes();
        assert_eq!(
            decode(Framing::ContentLength, &mut sent_buf),
            decode(Framing::ContentLength, &mut expected_buf),
            "{sent}"
        );
        assert!(sent.starts_with("Content-Length: "), "{sent}");
    }

    #[tokio::test]
    async fn ndjson_try_recv_times_out_then_sees_the_frame() {
        let (_dir, path, server) =
            fake_daemon("{\"jsonrpc\":\"2.0\",\"method\":\"event\"}\n".into()).await;
        let mut conn = RawConn::connect(&path, Framing::Ndjson).await;
        assert_eq!(conn.try_recv(Duration::from_millis(20)).await, None);
        conn.send(&json!({"hello": true})).await;
        assert_eq!(conn.recv().await["method"], "event");
        assert_eq!(server.await.unwrap(), "{\"hello\":true}\n");
        assert!(conn.is_closed(Duration::from_secs(5)).await);
    }
}
