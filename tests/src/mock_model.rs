//! A scripted mock LLM: an HTTP/1.1 server on 127.0.0.1 that plays the OpenAI
//! chat-completions streaming API.
//!
//! Tests queue [`Reply`]s; each request gets the next one (FIFO) and is recorded. The
//! server is hand-rolled on a TCP listener so a test controls every byte: delays, a stream
//! cut mid-way, a stream that stalls, garbage. Every response closes its connection.
//! A client that goes away before a reply is complete is recorded as a [`Disconnect`].

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

/// A request the mock received.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    pub method: String,
    pub path: String,
    /// Header names are lowercase.
    pub headers: Vec<(String, String)>,
    /// The body as JSON (`Null` if it is not JSON).
    pub body: Value,
    pub body_text: String,
}

/// A client that closed its connection before its reply was complete.
#[derive(Debug, Clone, Copy)]
pub struct Disconnect {
    pub request_index: usize,
    /// SSE events fully sent before the client went away.
    pub after_events: usize,
    pub at: Instant,
}

#[derive(Debug, Clone)]
enum Body {
    Sse(Vec<String>),
    Status(u16, String),
    Raw(String),
}

/// One scripted answer.
#[derive(Debug, Clone)]
pub struct Reply {
    body: Body,
    chunk_delay: Duration,
    first_byte_delay: Duration,
    cut_after: Option<usize>,
    stall_after: Option<usize>,
}

fn chunk(delta: Value, finish: Value) -> String {
    json!({
        "id": "chatcmpl-mock",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "mock-model",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]
    })
    .to_string()
}

impl Reply {
    fn new(body: Body) -> Reply {
        Reply {
            body,
            chunk_delay: Duration::ZERO,
            first_byte_delay: Duration::ZERO,
            cut_after: None,
            stall_after: None,
        }
    }

    /// An event stream whose events carry exactly these `data:` payloads (include
    /// `[DONE]` yourself if wanted).
    pub fn sse(events: Vec<String>) -> Reply {
        Reply::new(Body::Sse(events))
    }

    /// A complete OpenAI-style answer: one chunk per part, a finish chunk, a usage chunk
    /// (11 prompt tokens, one completion token per part) and `[DONE]`.
    pub fn openai_text(parts: &[&str]) -> Reply {
        Reply::openai_reasoning_text(&[], parts)
    }

    /// Like [`Reply::openai_text`], with `reasoning_content` deltas first.
    pub fn openai_reasoning_text(reasoning: &[&str], text: &[&str]) -> Reply {
        let mut events = Vec::new();
        for part in reasoning {
            events.push(chunk(
                json!({"role": "assistant", "content": null, "reasoning_content": part}),
                Value::Null,
            ));
        }
        for part in text {
            events.push(chunk(
                json!({"role": "assistant", "content": part}),
                Value::Null,
            ));
        }
        events.push(chunk(json!({}), json!("stop")));
        let completion = text.len() + reasoning.len();
        events.push(
            json!({
                "id": "chatcmpl-mock",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": "mock-model",
                "choices": [],
                "usage": {"prompt_tokens": 11, "completion_tokens": completion, "total_tokens": 11 + completion}
            })
            .to_string(),
        );
        events.push("[DONE]".into());
        Reply::sse(events)
    }

    /// An HTTP error with this body.
    pub fn status(code: u16, body: &str) -> Reply {
        Reply::new(Body::Status(code, body.into()))
    }

    /// A 200 event-stream response whose body is exactly `text`.
    pub fn raw_sse_body(text: &str) -> Reply {
        Reply::new(Body::Raw(text.into()))
    }

    /// Waits this long before each SSE event.
    pub fn chunk_delay(mut self, delay: Duration) -> Reply {
        self.chunk_delay = delay;
        self
    }

    /// Waits this long before the response headers.
    pub fn first_byte_delay(mut self, delay: Duration) -> Reply {
        self.first_byte_delay = delay;
        self
    }

    /// After `n` events, drops the connection without the end of the chunked body.
    pub fn cut_after(mut self, n: usize) -> Reply {
        self.cut_after = Some(n);
        self
    }

    /// After `n` events, sends nothing more but keeps the connection open until the client
    /// goes away (or 120 s).
    pub fn stall_after(mut self, n: usize) -> Reply {
        self.stall_after = Some(n);
        self
    }
}

#[derive(Default)]
struct State {
    queue: VecDeque<Reply>,
    requests: Vec<RecordedRequest>,
    disconnects: Vec<Disconnect>,
}

/// The running mock; stops when dropped.
pub struct MockModel {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for MockModel {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl MockModel {
    pub async fn start() -> MockModel {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(Mutex::new(State::default()));
        let server = tokio::spawn(serve(listener, state.clone()));
        MockModel {
            addr,
            state,
            server,
        }
    }

    /// The base URL to configure as the provider's `base_url`.
    pub fn url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn push(&self, reply: Reply) {
        self.state.lock().unwrap().queue.push_back(reply);
    }

    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.state.lock().unwrap().requests.clone()
    }

    pub fn disconnects(&self) -> Vec<Disconnect> {
        self.state.lock().unwrap().disconnects.clone()
    }

    /// Waits until at least `n` requests arrived.
    pub async fn wait_requests(&self, n: usize, timeout: Duration) -> Vec<RecordedRequest> {
        let deadline = Instant::now() + timeout;
        loop {
            let requests = self.requests();
            if requests.len() >= n {
                return requests;
            }
            assert!(
                Instant::now() < deadline,
                "mock model: waited {timeout:?} for {n} requests, got {}",
                requests.len()
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Waits for the first client disconnect.
    pub async fn wait_disconnect(&self, timeout: Duration) -> Disconnect {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(d) = self.disconnects().first() {
                return *d;
            }
            assert!(
                Instant::now() < deadline,
                "mock model: no client disconnected within {timeout:?}"
            );
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
}

async fn serve(listener: TcpListener, state: Arc<Mutex<State>>) {
    // Connection tasks live in this set, so aborting the server aborts them all.
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                if let Ok((stream, _)) = accepted {
                    connections.spawn(handle(stream, state.clone()));
                }
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

async fn handle(mut stream: TcpStream, state: Arc<Mutex<State>>) {
    let Some(request) = read_request(&mut stream).await else {
        return;
    };
    let (index, reply) = {
        let mut st = state.lock().unwrap();
        st.requests.push(request);
        (st.requests.len() - 1, st.queue.pop_front())
    };
    let reply = reply.unwrap_or_else(|| {
        Reply::status(
            500,
            r#"{"error":{"message":"mock model: no scripted reply left"}}"#,
        )
    });
    if let Some(after_events) = send_reply(&mut stream, &reply).await {
        state.lock().unwrap().disconnects.push(Disconnect {
            request_index: index,
            after_events,
            at: Instant::now(),
        });
    }
}

async fn read_request(stream: &mut TcpStream) -> Option<RecordedRequest> {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 8192];
    let header_end = loop {
        if let Some(pos) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos;
        }
        if buf.len() > 64 * 1024 {
            return None;
        }
        let n = stream.read(&mut tmp).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&tmp[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..header_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split_whitespace();
    let method = first.next()?.to_owned();
    let path = first.next()?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[header_end + 4..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut tmp).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&tmp[..n]);
    }
    body.truncate(length);
    let body_text = String::from_utf8_lossy(&body).into_owned();
    Some(RecordedRequest {
        method,
        path,
        headers,
        body: serde_json::from_str(&body_text).unwrap_or(Value::Null),
        body_text,
    })
}

/// Waits `delay`, or less if the client goes away (then returns false).
async fn wait_or_gone(stream: &mut TcpStream, delay: Duration) -> bool {
    let mut probe = [0u8; 1];
    tokio::select! {
        _ = tokio::time::sleep(delay) => true,
        read = stream.read(&mut probe) => matches!(read, Ok(n) if n > 0),
    }
}

/// Sends the reply; `Some(events sent)` if the client went away before it was complete.
async fn send_reply(stream: &mut TcpStream, reply: &Reply) -> Option<usize> {
    if !reply.first_byte_delay.is_zero() && !wait_or_gone(stream, reply.first_byte_delay).await {
        return Some(0);
    }
    match &reply.body {
        Body::Status(code, body) => {
            let head = format!(
                "HTTP/1.1 {code} Mock\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes()).await;
            let _ = stream.write_all(body.as_bytes()).await;
            let _ = stream.shutdown().await;
            None
        }
        Body::Raw(text) => {
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                text.len()
            );
            let _ = stream.write_all(head.as_bytes()).await;
            let _ = stream.write_all(text.as_bytes()).await;
            let _ = stream.shutdown().await;
            None
        }
        Body::Sse(events) => {
            let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n";
            if stream.write_all(head.as_bytes()).await.is_err() {
                return Some(0);
            }
            for (i, event) in events.iter().enumerate() {
                if reply.cut_after == Some(i) {
                    return None; // dropping the stream cuts the body mid-way
                }
                if reply.stall_after == Some(i) {
                    let gone = !wait_or_gone(stream, Duration::from_secs(120)).await;
                    return gone.then_some(i);
                }
                if !reply.chunk_delay.is_zero() && !wait_or_gone(stream, reply.chunk_delay).await {
                    return Some(i);
                }
                let data = format!("data: {event}\n\n");
                let framed = format!("{:x}\r\n{data}\r\n", data.len());
                if stream.write_all(framed.as_bytes()).await.is_err() {
                    return Some(i);
                }
            }
            if reply.cut_after == Some(events.len()) {
                return None;
            }
            let _ = stream.write_all(b"0\r\n\r\n").await;
            let _ = stream.shutdown().await;
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;

    async fn post(url: &str) -> reqwest::Response {
        let _ = rustls::crypto::ring::default_provider().install_default();
        reqwest::Client::new()
            .post(format!("{url}/chat/completions"))
            .header("authorization", "Bearer k")
            .body(r#"{"model":"m"}"#)
            .send()
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn text_reply_status_reply_and_recording() {
        let mock = MockModel::start().await;
        mock.push(Reply::openai_text(&["Hel", "lo"]));
        mock.push(Reply::status(429, r#"{"error":"slow down"}"#));
        let response = post(&mock.url()).await;
        assert_eq!(response.status(), 200);
        let body = response.text().await.unwrap();
        assert!(body.contains(r#""content":"Hel""#), "{body}");
        assert!(body.trim_end().ends_with("data: [DONE]"), "{body}");
        let response = post(&mock.url()).await;
        assert_eq!(response.status(), 429);
        assert_eq!(response.text().await.unwrap(), r#"{"error":"slow down"}"#);
        let response = post(&mock.url()).await;
        assert_eq!(response.status(), 500, "queue empty");

        let requests = mock.requests();
        assert_eq!(requests.len(), 3);
        assert_eq!(requests[0].method, "POST");
        assert_eq!(requests[0].path, "/v1/chat/completions");
        assert_eq!(requests[0].body, json!({"model": "m"}));
        assert!(
            requests[0]
                .headers
                .contains(&("authorization".into(), "Bearer k".into()))
        );
    }

    #[tokio::test]
    async fn a_cut_stream_is_an_error_for_the_client() {
        let mock = MockModel::start().await;
        mock.push(Reply::openai_text(&["a", "b", "c"]).cut_after(1));
        let mut body = post(&mock.url()).await.bytes_stream();
        let mut saw_error = false;
        while let Some(item) = body.next().await {
            if item.is_err() {
                saw_error = true;
            }
        }
        assert!(
            saw_error,
            "an unterminated chunked body must not look complete"
        );
    }

    #[tokio::test]
    async fn a_client_leaving_mid_stream_is_recorded() {
        let mock = MockModel::start().await;
        mock.push(Reply::openai_text(&["a"; 50]).chunk_delay(Duration::from_millis(20)));
        let mut body = post(&mock.url()).await.bytes_stream();
        body.next().await.unwrap().unwrap();
        let left = Instant::now();
        drop(body);
        let d = mock.wait_disconnect(Duration::from_secs(5)).await;
        assert_eq!(d.request_index, 0);
        assert!(d.after_events < 50);
        assert!(d.at >= left);
    }
}
