//! Raw socket connections for protocol-level tests: exact bytes out, frames in, in either
//! framing (newline-delimited JSON or `Content-Length` headers).

use std::collections::VecDeque;
use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;

const WAIT: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    Ndjson,
    ContentLength,
}

pub struct RawConn {
    stream: UnixStream,
    framing: Framing,
    buf: Vec<u8>,
    next_id: u64,
    notifications: VecDeque<Value>,
}

enum Read {
    Frame(Value),
    Eof,
    Timeout,
}

impl RawConn {
    pub async fn connect(path: &Path, framing: Framing) -> RawConn {
        let stream = UnixStream::connect(path)
            .await
            .unwrap_or_else(|e| panic!("cannot connect to {}: {e}", path.display()));
        RawConn {
            stream,
            framing,
            buf: Vec::new(),
            next_id: 1,
            notifications: VecDeque::new(),
        }
    }

    /// Writes exactly these bytes.
    pub async fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).await.unwrap();
    }

    /// Writes one frame in this connection's framing.
    pub async fn send(&mut self, value: &Value) {
        let body = value.to_string();
        let frame = match self.framing {
            Framing::Ndjson => format!("{body}\n"),
            Framing::ContentLength => format!("Content-Length: {}\r\n\r\n{body}", body.len()),
        };
        self.send_raw(frame.as_bytes()).await;
    }

    /// The next frame; panics on timeout or end of stream.
    pub async fn recv(&mut self) -> Value {
        match self.read_frame(WAIT).await {
            Read::Frame(v) => v,
            Read::Eof => panic!(
                "the daemon closed the connection; buffered: {:?}",
                String::from_utf8_lossy(&self.buf)
            ),
            Read::Timeout => panic!("no frame within {WAIT:?}"),
        }
    }

    /// The next frame, or `None` after `timeout`.
    pub async fn try_recv(&mut self, timeout: Duration) -> Option<Value> {
        match self.read_frame(timeout).await {
            Read::Frame(v) => Some(v),
            Read::Eof => panic!("the daemon closed the connection"),
            Read::Timeout => None,
        }
    }

    /// True when the daemon closes the connection within `timeout` (frames read meanwhile
    /// are dropped).
    pub async fn is_closed(&mut self, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            match self.read_frame(left).await {
                Read::Eof => return true,
                Read::Timeout => return false,
                Read::Frame(_) => continue,
            }
        }
    }

    /// Sends a request and returns its whole response, keeping notifications read
    /// meanwhile for [`RawConn::next_notification`].
    pub async fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        loop {
            let frame = self.recv().await;
            if frame.get("id") == Some(&json!(id)) {
                return frame;
            }
            if frame.get("method").is_some() {
                self.notifications.push_back(frame);
            } else {
                panic!("unexpected frame while waiting for response {id}: {frame}");
            }
        }
    }

    /// The next notification (buffered first, then from the socket).
    pub async fn next_notification(&mut self) -> Value {
        if let Some(n) = self.notifications.pop_front() {
            return n;
        }
        let frame = self.recv().await;
        assert!(
            frame.get("method").is_some(),
            "expected a notification, got {frame}"
        );
        frame
    }

    async fn read_frame(&mut self, timeout: Duration) -> Read {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Some(frame) = self.take_frame() {
                return Read::Frame(frame);
            }
            let mut chunk = [0u8; 64 * 1024];
            let read = tokio::time::timeout_at(deadline, self.stream.read(&mut chunk)).await;
            match read {
                Err(_) => return Read::Timeout,
                Ok(Ok(0)) | Ok(Err(_)) => return Read::Eof,
                Ok(Ok(n)) => self.buf.extend_from_slice(&chunk[..n]),
            }
        }
    }

    /// A complete frame from the buffer, if there is one.
    fn take_frame(&mut self) -> Option<Value> {
        match self.framing {
            Framing::Ndjson => loop {
                let pos = self.buf.iter().position(|&b| b == b'\n')?;
                let line: Vec<u8> = self.buf.drain(..=pos).collect();
                let text = String::from_utf8_lossy(&line);
                if text.trim().is_empty() {
                    continue;
                }
                return Some(serde_json::from_str(text.trim()).unwrap_or_else(|e| {
                    panic!("the daemon sent a line that is not JSON ({e}): {text}")
                }));
            },
            Framing::ContentLength => {
                let end = self.buf.windows(4).position(|w| w == b"\r\n\r\n")?;
                let head = String::from_utf8_lossy(&self.buf[..end]).into_owned();
                let length: usize = head
                    .split("\r\n")
                    .filter_map(|l| l.split_once(':'))
                    .find(|(n, _)| n.trim().eq_ignore_ascii_case("content-length"))
                    .map(|(_, v)| v.trim().parse().expect("a numeric Content-Length"))
                    .unwrap_or_else(|| panic!("no Content-Length in {head:?}"));
                if self.buf.len() < end + 4 + length {
                    return None;
                }
                let body: Vec<u8> = self.buf.drain(..end + 4 + length).skip(end + 4).collect();
                Some(serde_json::from_slice(&body).unwrap_or_else(|e| {
                    panic!(
                        "the daemon sent a body that is not JSON ({e}): {}",
                        String::from_utf8_lossy(&body)
                    )
                }))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::UnixListener;

    #[tokio::test]
    async fn content_length_round_trip_with_extra_headers() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.sock");
        let listener = UnixListener::bind(&path).unwrap();
        let server = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut buf = vec![0u8; 1024];
            let n = s.read(&mut buf).await.unwrap();
            let got = String::from_utf8_lossy(&buf[..n]).into_owned();
            let body = r#"{"jsonrpc":"2.0","method":"event","params":{}}"#;
            let reply = r#"{"jsonrpc":"2.0","id":1,"result":"ok"}"#;
            let out = format!(
                "content-length: {}\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{body}Content-Length: {}\r\n\r\n{reply}",
                body.len(),
                reply.len()
            );
            // Split the answer across writes to exercise partial reads.
            for piece in out.as_bytes().chunks(7) {
                s.write_all(piece).await.unwrap();
            }
            got
        });
        let mut conn = RawConn::connect(&path, Framing::ContentLength).await;
        let response = conn.call("ping", json!({})).await;
        assert_eq!(response["result"], "ok");
        assert_eq!(conn.next_notification().await["method"], "event");
        let sent = server.await.unwrap();
        assert!(sent.starts_with("Content-Length: "), "{sent}");
        assert!(
            sent.ends_with(r#""method":"ping","params":{}}"#)
                || sent.contains(r#""method":"ping""#)
        );
    }
}
