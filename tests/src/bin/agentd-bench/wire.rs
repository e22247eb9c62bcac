//! A lean NDJSON client for measuring: it writes requests by hand and decodes of each frame
//! only what the bench needs (the response id, or the event's seq, agent, type and delta),
//! so the client's own cost stays small next to the daemon's. The instant a frame was read
//! is taken before it is decoded.

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};

/// The longest the bench waits for any one frame.
pub(crate) const FRAME_WAIT: Duration = Duration::from_secs(120);

/// The fields of an event the bench looks at.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EventHead {
    pub seq: u64,
    pub agent_id: String,
    #[serde(rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub delta: Option<String>,
    /// `loopFinished`'s reason.
    #[serde(default)]
    pub reason: Option<String>,
    /// `error`'s message (`userMessage`'s message object).
    #[serde(default)]
    pub message: Option<Value>,
    #[serde(default)]
    pub error: Option<Value>,
}

#[derive(Deserialize)]
struct Frame {
    #[serde(default)]
    id: Option<u64>,
    #[serde(default)]
    result: Option<Value>,
    #[serde(default)]
    error: Option<Value>,
    #[serde(default)]
    params: Option<NotificationParams>,
}

#[derive(Deserialize)]
struct NotificationParams {
    result: EventHead,
}

/// One frame from the daemon.
pub(crate) enum Incoming {
    Response {
        id: u64,
        result: Result<Value, Value>,
    },
    Event(EventHead),
}

fn decode(line: &str) -> anyhow::Result<Incoming> {
    let frame: Frame = serde_json::from_str(line)
        .with_context(|| format!("a frame the bench cannot read: {}", excerpt(line)))?;
    if let Some(params) = frame.params {
        return Ok(Incoming::Event(params.result));
    }
    let id = frame
        .id
        .with_context(|| format!("a frame with neither id nor params: {}", excerpt(line)))?;
    let result = match (frame.result, frame.error) {
        (_, Some(error)) => Err(error),
        (Some(result), None) => Ok(result),
        (None, None) => Ok(Value::Null),
    };
    Ok(Incoming::Response { id, result })
}

fn excerpt(line: &str) -> &str {
    let mut end = line.len().min(300);
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    &line[..end]
}

/// Per-agent seq contiguity: each event must be exactly one above the previous one seen
/// for its agent.
#[derive(Debug, Default)]
pub(crate) struct SeqCheck {
    last: HashMap<String, u64>,
    pub gaps: u64,
}

impl SeqCheck {
    pub(crate) fn see(&mut self, event: &EventHead) {
        if event.kind == "resyncRequired" {
            self.gaps += 1;
            return;
        }
        if let Some(prev) = self.last.insert(event.agent_id.clone(), event.seq)
            && event.seq != prev + 1
        {
            self.gaps += 1;
        }
    }
}

/// One connection speaking newline-delimited JSON-RPC.
pub(crate) struct Conn {
    read: BufReader<OwnedReadHalf>,
    write: OwnedWriteHalf,
    line: String,
    next_id: u64,
    pub seqs: SeqCheck,
}

impl Conn {
    pub(crate) async fn connect(socket: &Path) -> anyhow::Result<Conn> {
        let stream = UnixStream::connect(socket)
            .await
            .with_context(|| format!("cannot connect to {}", socket.display()))?;
        let (read, write) = stream.into_split();
        Ok(Conn {
            read: BufReader::with_capacity(256 * 1024, read),
            write,
            line: String::new(),
            next_id: 1,
            seqs: SeqCheck::default(),
        })
    }

    /// Writes a request; returns its id.
    pub(crate) async fn send(&mut self, method: &str, params: Value) -> anyhow::Result<u64> {
        let id = self.next_id;
        self.next_id += 1;
        let mut frame =
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
        frame.push('\n');
        self.write
            .write_all(frame.as_bytes())
            .await
            .with_context(|| format!("cannot send {method}"))?;
        Ok(id)
    }

    /// The next frame and when it was read.
    pub(crate) async fn next(&mut self) -> anyhow::Result<(Instant, Incoming)> {
        self.line.clear();
        let read = tokio::time::timeout(FRAME_WAIT, self.read.read_line(&mut self.line)).await;
        let at = Instant::now();
        match read {
            Err(_) => bail!("no frame from the daemon within {FRAME_WAIT:?}"),
            Ok(Err(e)) => bail!("reading from the daemon failed: {e}"),
            Ok(Ok(0)) => bail!("the daemon closed the connection"),
            Ok(Ok(_)) => {}
        }
        let incoming = decode(&self.line)?;
        if let Incoming::Event(event) = &incoming {
            self.seqs.see(event);
        }
        Ok((at, incoming))
    }

    /// A call and its result; events read meanwhile are checked for seq gaps and dropped.
    pub(crate) async fn call(&mut self, method: &str, params: Value) -> anyhow::Result<Value> {
        let id = self.send(method, params).await?;
        self.response(id, method).await
    }

    /// Reads until the response to `id`.
    pub(crate) async fn response(&mut self, id: u64, method: &str) -> anyhow::Result<Value> {
        loop {
            if let (_, Incoming::Response { id: got, result }) = self.next().await?
                && got == id
            {
                return result.map_err(|e| anyhow::anyhow!("{method} failed: {e}"));
            }
        }
    }

    /// Subscribes to one agent's events (all agents with `None`).
    pub(crate) async fn subscribe(&mut self, agent_id: Option<&str>) -> anyhow::Result<()> {
        let params = match agent_id {
            Some(id) => json!({"agentId": id}),
            None => json!({}),
        };
        self.call("subscribe", params).await.map(drop)
    }

    /// Sends a message and reads the run's events until `loopFinished`, which must say
    /// `completed`.
    pub(crate) async fn turn(&mut self, agent_id: &str, text: &str) -> anyhow::Result<Turn> {
        let sent = Instant::now();
        let id = self
            .send("sendMessage", json!({"agentId": agent_id, "content": text}))
            .await?;
        let mut turn = Turn {
            sent,
            first_delta: None,
            last_delta: None,
            finished: sent,
            deltas: 0,
            text_bytes: 0,
            events: 0,
        };
        loop {
            let (at, incoming) = self.next().await?;
            let event = match incoming {
                Incoming::Response { id: got, result } if got == id => {
                    result.map_err(|e| anyhow::anyhow!("sendMessage failed: {e}"))?;
                    continue;
                }
                Incoming::Response { .. } => continue,
                Incoming::Event(event) => event,
            };
            turn.events += 1;
            match event.kind.as_str() {
                "textDelta" => {
                    turn.first_delta.get_or_insert(at);
                    turn.last_delta = Some(at);
                    turn.deltas += 1;
                    turn.text_bytes += event.delta.as_deref().map_or(0, str::len);
                }
                "error" => bail!(
                    "the run reported an error: {}",
                    event.message.unwrap_or_default()
                ),
                "loopFinished" => {
                    turn.finished = at;
                    if event.reason.as_deref() != Some("completed") {
                        bail!("the run ended with {:?} ({:?})", event.reason, event.error);
                    }
                    return Ok(turn);
                }
                _ => {}
            }
        }
    }
}

/// When the pieces of one run reached the client.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Turn {
    pub sent: Instant,
    pub first_delta: Option<Instant>,
    pub last_delta: Option<Instant>,
    pub finished: Instant,
    /// textDelta events.
    pub deltas: usize,
    /// The answer's length, in bytes, summed over its textDeltas.
    pub text_bytes: usize,
    pub events: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_decode_to_responses_and_events() {
        let response = r#"{"jsonrpc":"2.0","id":3,"result":{"agentId":"a"}}"#;
        match decode(response).unwrap() {
            Incoming::Response { id, result } => {
                assert_eq!(id, 3);
                assert_eq!(result.unwrap()["agentId"], "a");
            }
            Incoming::Event(_) => panic!("a response"),
        }
        let event = r#"{"jsonrpc":"2.0","method":"event","params":{"subscription":"s","result":{"seq":7,"agentId":"a","at":1,"type":"textDelta","messageId":"m","delta":"hi"}}}"#;
        let mut seqs = SeqCheck::default();
        match decode(event).unwrap() {
            Incoming::Event(e) => {
                assert_eq!((e.seq, e.kind.as_str()), (7, "textDelta"));
                assert_eq!(e.delta.as_deref(), Some("hi"));
                seqs.see(&e);
                let mut next = e;
                next.seq = 9;
                seqs.see(&next);
            }
            Incoming::Response { .. } => panic!("an event"),
        }
        assert_eq!(seqs.gaps, 1);
    }
}
