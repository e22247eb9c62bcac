//! One WebSocket connection served as a socket connection: the daemon's end of a Unix
//! socket pair goes to the socket transport's own connection code (framing, the shared
//! input budget, the writer's mailbox and backpressure, subscriptions and replay), and
//! this module moves messages between the WebSocket and the pair's other end as
//! newline-delimited JSON. So the protocol over WebSocket is the socket's, not a copy.
//!
//! Each text frame is one line; a newline inside a frame becomes a space (raw newlines are
//! whitespace between JSON tokens and invalid inside strings, so nothing valid changes).
//! Each line the daemon writes is one text frame. A binary frame is refused: the
//! connection closes with 1003.

use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket, close_code};
use futures::{SinkExt, StreamExt};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio_util::sync::CancellationToken;

use crate::transport::{Admission, Transport, overloaded_reply};

/// Serves `ws` until either side leaves or `close` is cancelled.
pub(super) async fn serve(ws: WebSocket, admission: Admission, close: CancellationToken) {
    let (mut to_client, mut from_client) = ws.split();
    let Some(admitted) = admission.admit(Transport::WebSocket) else {
        let _ = to_client
            .send(Message::Text(overloaded_reply().into()))
            .await;
        let _ = to_client.send(Message::Close(None)).await;
        return;
    };
    let (daemon_end, our_end) = match UnixStream::pair() {
        Ok(pair) => pair,
        Err(e) => {
            tracing::warn!("cannot make a socket pair for a WebSocket connection: {e}");
            let _ = to_client.send(Message::Close(None)).await;
            return;
        }
    };
    let connection = tokio::spawn(admitted.serve(daemon_end, close.clone()));
    let (read, mut write) = our_end.into_split();

    // The daemon's lines to the client.
    let outgoing = async {
        let mut lines = BufReader::new(read);
        let mut line = Vec::new();
        loop {
            line.clear();
            match lines.read_until(b'\n', &mut line).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            if line.last() == Some(&b'\n') {
                line.pop();
            }
            // The daemon writes JSON it serialized itself: always UTF-8.
            let Ok(text) = String::from_utf8(std::mem::take(&mut line)) else {
                return;
            };
            if to_client.send(Message::Text(text.into())).await.is_err() {
                return;
            }
        }
    };
    // The client's frames to the daemon; what ends them says how the socket closes.
    let incoming = async {
        while let Some(Ok(message)) = from_client.next().await {
            let text = match message {
                Message::Text(text) => text,
                Message::Binary(_) => {
                    return Some(CloseFrame {
                        code: close_code::UNSUPPORTED,
                        reason: "agentd speaks JSON-RPC in text frames only".into(),
                    });
                }
                Message::Close(_) => return None,
                Message::Ping(_) | Message::Pong(_) => continue,
            };
            if write.write_all(&one_line(&text)).await.is_err() {
                return None;
            }
        }
        None
    };
    // Either side ending ends the connection: the client left (the daemon's end then reads
    // EOF and stops the subscriptions), or the daemon closed it (shutdown, a bad frame).
    let why = tokio::select! {
        () = outgoing => None,
        why = incoming => why,
    };
    let _ = write.shutdown().await;
    let _ = to_client.send(Message::Close(why)).await;
    let _ = connection.await;
}

/// A frame as one NDJSON line, newline included.
fn one_line(text: &Utf8Bytes) -> Vec<u8> {
    let mut line = Vec::with_capacity(text.len() + 1);
    // A raw newline is whitespace between JSON tokens and invalid inside a string: as a
    // space, nothing valid changes and the frame stays one line.
    line.extend(
        text.as_bytes()
            .iter()
            .map(|&b| if b == b'\n' { b' ' } else { b }),
    );
    line.push(b'\n');
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_is_one_line_whatever_newlines_it_holds() {
        for (frame, line) in [
            ("{\"a\":1}", "{\"a\":1}\n"),
            ("{\n  \"a\": 1\n}\n", "{   \"a\": 1 } \n"),
            ("", "\n"),
        ] {
            let line_of = one_line(&Utf8Bytes::from(frame));
            assert_eq!(String::from_utf8(line_of).unwrap(), line, "{frame:?}");
        }
    }
}
