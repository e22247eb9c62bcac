//! A stdio server's process: started by `tools::process` (the environment `tools::env`
//! allows, its own process group, the guard), its stdout handed to rmcp through a meter
//! that reports messages too large for the transport, its stderr kept as a short tail
//! (lines cut, so a server that never ends a line cannot fill the daemon's memory), and
//! stopped with SIGTERM then SIGKILL.

use std::path::Path;
use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::transport::async_rw::{AsyncRwTransport, DEFAULT_MAX_LINE_LENGTH};
use tokio::io::{AsyncBufReadExt, AsyncRead, ReadBuf};
use tokio::process::{ChildStderr, ChildStdin, ChildStdout};
use tokio::sync::broadcast;

use super::{STDERR_LINES, Server};
use crate::process::{Piped, ProcessGroup, ProcessLauncher};

/// Characters of a stderr line kept (and logged).
const STDERR_LINE_CHARS: usize = 500;
/// Bytes of a stderr line read before the rest of it is skipped.
const STDERR_LINE_BYTES: usize = STDERR_LINE_CHARS * 4;
/// Bytes of an oversized message kept at each end to find its request id.
const ENDS: usize = 512;

/// The transport of a stdio server.
pub(super) type StdioTransport = AsyncRwTransport<RoleClient, MeteredStdout, ChildStdin>;

/// A message the server sent that was over the transport's limit (rmcp drops it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Oversized {
    /// Its size, the newline included (stdio; HTTP stops reading at the limit).
    pub bytes: Option<u64>,
    /// The request it answers, when that could be read from its ends.
    pub id: Option<String>,
    /// It answers a request of ours (it is no request or notification of the server's).
    pub answer: bool,
}

impl Oversized {
    /// What the call it answered gets instead.
    pub(super) fn describe(&self) -> String {
        let size = self
            .bytes
            .map_or_else(String::new, |bytes| format!(" ({bytes} bytes)"));
        format!(
            "the server's answer{size} is over the {} MiB limit of one MCP message; it was \
             dropped (ask for less, e.g. a smaller page or range)",
            DEFAULT_MAX_LINE_LENGTH / (1024 * 1024)
        )
    }
}

/// A stdio server's process (in its own process group, so its children go with it; the
/// group dies when this is dropped).
pub(super) struct Child {
    pub(super) group: ProcessGroup,
    process: tokio::process::Child,
}

impl Child {
    /// SIGTERM to the group, SIGKILL after 2 s.
    pub(super) async fn stop(mut self) {
        use nix::sys::signal::Signal;
        if self.group.signal(Signal::SIGTERM) {
            for _ in 0..20 {
                tokio::time::sleep(Duration::from_millis(100)).await;
                if !self.group.alive() {
                    break;
                }
            }
        }
        // Dropping the group kills what is left of it; the process is reaped here.
        drop(self.group);
        let _ = tokio::time::timeout(Duration::from_secs(1), self.process.wait()).await;
    }
}

pub(super) fn spawn_stdio(
    server: &Arc<Server>,
    processes: &ProcessLauncher,
) -> Result<(StdioTransport, Child), String> {
    let spec = &server.spec;
    let program = spec.command.clone().unwrap_or_default();
    let command = processes.mcp_command(
        &program,
        &spec.args,
        &spec.env,
        spec.cwd.as_deref().map(Path::new),
    )?;
    let Piped {
        process,
        group,
        stdin,
        stdout,
        stderr,
    } = processes.spawn_piped(command, &format!("{program:?}"))?;
    tokio::spawn(read_stderr(stderr, Arc::downgrade(server)));
    let stdout = MeteredStdout {
        inner: stdout,
        meter: LineMeter::new(DEFAULT_MAX_LINE_LENGTH),
        oversized: server.oversized.clone(),
    };
    Ok((
        AsyncRwTransport::new_client(stdout, stdin),
        Child { group, process },
    ))
}

/// Keeps the last lines of stderr (each cut to 500 characters) until the stream ends.
async fn read_stderr(stderr: ChildStderr, server: Weak<Server>) {
    let mut reader = tokio::io::BufReader::new(stderr);
    let mut line: Vec<u8> = Vec::new();
    let mut cut = false;
    let mut shown = false;
    loop {
        let (consumed, ended) = {
            let buf = match reader.fill_buf().await {
                Ok(buf) if !buf.is_empty() => buf,
                _ => break,
            };
            let newline = buf.iter().position(|b| *b == b'\n');
            let chunk = &buf[..newline.unwrap_or(buf.len())];
            let room = STDERR_LINE_BYTES.saturating_sub(line.len());
            line.extend_from_slice(&chunk[..chunk.len().min(room)]);
            cut |= chunk.len() > room;
            (
                chunk.len() + usize::from(newline.is_some()),
                newline.is_some(),
            )
        };
        reader.consume(consumed);
        // A cut line shows at once: its end may never come.
        if (ended || cut) && !shown {
            let Some(server) = server.upgrade() else {
                return;
            };
            keep_stderr_line(&server, &line, cut);
            shown = !ended;
        }
        if ended {
            line.clear();
            cut = false;
            shown = false;
        }
    }
    if !line.is_empty()
        && !shown
        && let Some(server) = server.upgrade()
    {
        keep_stderr_line(&server, &line, cut);
    }
}

fn keep_stderr_line(server: &Server, line: &[u8], cut: bool) {
    let text = String::from_utf8_lossy(line);
    let mut shown: String = text.chars().take(STDERR_LINE_CHARS).collect();
    if cut || shown.len() < text.len() {
        shown.push_str(" … (cut)");
    }
    tracing::debug!(server = server.spec.name, "stderr: {shown}");
    let mut st = server.lock();
    if st.stderr.len() == STDERR_LINES {
        st.stderr.pop_front();
    }
    st.stderr.push_back(shown);
}

/// A stdio server's stdout as rmcp reads it, with every line measured: a line over rmcp's
/// limit (which rmcp drops without a word) is reported to the calls waiting.
pub(super) struct MeteredStdout {
    inner: ChildStdout,
    meter: LineMeter,
    oversized: broadcast::Sender<Oversized>,
}

impl AsyncRead for MeteredStdout {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let poll = Pin::new(&mut this.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = &poll {
            for message in this.meter.feed(&buf.filled()[before..]) {
                tracing::warn!(
                    bytes = message.bytes,
                    id = message.id,
                    answer = message.answer,
                    "an MCP server sent a message over the transport's limit; it was dropped"
                );
                if message.answer {
                    let _ = this.oversized.send(message);
                }
            }
        }
        poll
    }
}

/// Measures newline-delimited messages as they stream by, keeping only their ends.
#[derive(Debug)]
struct LineMeter {
    limit: usize,
    len: u64,
    head: Vec<u8>,
    tail: Vec<u8>,
}

impl LineMeter {
    fn new(limit: usize) -> LineMeter {
        LineMeter {
            limit,
            len: 0,
            head: Vec::new(),
            tail: Vec::new(),
        }
    }

    /// Takes the next bytes; returns the messages over the limit that ended in them.
    fn feed(&mut self, mut bytes: &[u8]) -> Vec<Oversized> {
        let mut out = Vec::new();
        while !bytes.is_empty() {
            let newline = bytes.iter().position(|b| *b == b'\n');
            let end = newline.map_or(bytes.len(), |i| i + 1);
            let (part, rest) = bytes.split_at(end);
            bytes = rest;
            self.len += part.len() as u64;
            let body = part.strip_suffix(b"\n").unwrap_or(part);
            if self.head.len() < ENDS {
                let take = (ENDS - self.head.len()).min(body.len());
                self.head.extend_from_slice(&body[..take]);
            }
            if body.len() >= ENDS {
                self.tail.clear();
                self.tail.extend_from_slice(&body[body.len() - ENDS..]);
            } else {
                self.tail.extend_from_slice(body);
                let excess = self.tail.len().saturating_sub(ENDS);
                self.tail.drain(..excess);
            }
            if newline.is_some() {
                if self.len > self.limit as u64 {
                    out.push(Oversized {
                        bytes: Some(self.len),
                        id: response_id(&self.head, &self.tail),
                        answer: !has_method(&self.head),
                    });
                }
                self.len = 0;
                self.head.clear();
                self.tail.clear();
            }
        }
        out
    }
}

/// The `id` of a JSON-RPC response from its first and last bytes: a top-level `"id"`
/// near the start (rmcp, Python), or as the last member (`..., "id": 5}`, TypeScript).
/// `None` when neither shows one.
fn response_id(head: &[u8], tail: &[u8]) -> Option<String> {
    top_level(head, b"id").or_else(|| id_at_end(tail))
}

/// Whether the message is a request or notification of the server's (a top-level
/// `"method"` in its first bytes), not an answer to one of ours.
fn has_method(head: &[u8]) -> bool {
    top_level(head, b"method").is_some()
}

/// The scalar value of a top-level key in the first bytes of a JSON object.
fn top_level(head: &[u8], wanted: &[u8]) -> Option<String> {
    let mut depth = 0usize;
    let mut i = 0;
    let mut expect_key = false;
    while i < head.len() {
        match head[i] {
            b'{' => {
                depth += 1;
                expect_key = depth == 1;
            }
            b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            b',' if depth == 1 => expect_key = true,
            b'"' => {
                let end = string_end(head, i)?;
                if depth == 1 && expect_key {
                    let key = &head[i + 1..end];
                    let mut j = end + 1;
                    while head
                        .get(j)
                        .is_some_and(|b| b.is_ascii_whitespace() || *b == b':')
                    {
                        j += 1;
                    }
                    if key == wanted {
                        return scalar_at(head, j);
                    }
                    expect_key = false;
                }
                i = end;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// The index of the quote that closes the string opening at `start`.
fn string_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut i = start + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

/// A number or a string without escapes, starting at `at`.
fn scalar_at(bytes: &[u8], at: usize) -> Option<String> {
    let rest = bytes.get(at..)?;
    if rest.first() == Some(&b'"') {
        let end = string_end(bytes, at)?;
        let text = &bytes[at + 1..end];
        return (!text.contains(&b'\\')).then(|| String::from_utf8_lossy(text).into_owned());
    }
    let len = rest
        .iter()
        .take_while(|b| b.is_ascii_digit() || **b == b'-')
        .count();
    (len > 0).then(|| String::from_utf8_lossy(&rest[..len]).into_owned())
}

fn id_at_end(tail: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(tail).ok()?.trim_end();
    let body = text.strip_suffix('}')?.trim_end();
    let (value, before) = if let Some(inner) = body.strip_suffix('"') {
        let open = inner.rfind('"')?;
        let value = &inner[open + 1..];
        if value.contains('\\') {
            return None;
        }
        (value, &inner[..open])
    } else {
        let digits = body
            .trim_end_matches(|c: char| c.is_ascii_digit() || c == '-')
            .len();
        (&body[digits..], &body[..digits])
    };
    let key = before.trim_end().strip_suffix(':')?.trim_end();
    (key.ends_with("\"id\"") && !value.is_empty()).then(|| value.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_ids_from_the_ends_of_a_message() {
        let cases: &[(&str, &str, Option<&str>)] = &[
            (
                r#"{"jsonrpc":"2.0","id":17,"result":{"content":[{"#,
                "",
                Some("17"),
            ),
            (
                r#"{"jsonrpc": "2.0", "id" : "abc", "result""#,
                "",
                Some("abc"),
            ),
            (
                r#"{"result":{"content":[{"id":3,"text":"xx"#,
                r#"xx"}]},"jsonrpc":"2.0","id":9}"#,
                Some("9"),
            ),
            (r#"{"result":{"a":"xx"#, r#"xx","id":4}}"#, None),
            (
                r#"{"method":"notifications/progress","params":{"id":2"#,
                "",
                None,
            ),
            (
                r#"{"result":{"id":5,"#,
                r#"xx"}, "id": "r-1" }"#,
                Some("r-1"),
            ),
            (r#"{"jsonrpc":"2.0","result":{"text":"\"id\":8"#, "", None),
        ];
        for (head, tail, expected) in cases {
            assert_eq!(
                response_id(head.as_bytes(), tail.as_bytes()).as_deref(),
                *expected,
                "{head} … {tail}"
            );
        }
        assert!(has_method(
            br#"{"jsonrpc":"2.0","id":3,"method":"sampling/createMessage""#
        ));
        assert!(!has_method(
            br#"{"jsonrpc":"2.0","id":3,"result":{"method":"x"}"#
        ));
    }

    #[test]
    fn lines_over_the_limit_are_reported_whatever_the_chunks() {
        let big = format!(
            r#"{{"jsonrpc":"2.0","id":3,"result":"{}"}}"#,
            "x".repeat(100)
        );
        let stream = format!("{{\"small\":1}}\n{big}\n{{\"id\":4}}\n{big}");
        for chunk in [1, 7, 64, 10_000] {
            let mut meter = LineMeter::new(50);
            let mut seen = Vec::new();
            for part in stream.as_bytes().chunks(chunk) {
                seen.extend(meter.feed(part));
            }
            let expected = Oversized {
                bytes: Some(big.len() as u64 + 1),
                id: Some("3".into()),
                answer: true,
            };
            assert_eq!(seen, std::slice::from_ref(&expected), "chunks of {chunk}");
            seen.extend(meter.feed(b"\n"));
            assert_eq!(seen, [expected.clone(), expected], "chunks of {chunk}");
        }
    }
}
