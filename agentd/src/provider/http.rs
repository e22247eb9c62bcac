//! The HTTP side every streaming provider shares. [`HttpProvider`] is the one provider
//! for every HTTP API: generic over a [`WireFormat`] (its URL, how the key is sent, the
//! request body, the stream parser), so a vendor file holds only what differs. The engine
//! sends the request (retrying, before the first byte, on refused or reset connections, 429
//! and 5xx with exponential backoff, jitter and `Retry-After`), checks the status, then
//! decodes the SSE body and hands each event to the format's [`SseParser`]. A body that
//! ends before the parser saw its end marker is a truncated stream, never a success.
//! Errors carry the provider's own words, plus a hint of what to check for 401/403/404.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use bytes::Bytes;
use futures::stream::BoxStream;
use futures::{StreamExt, stream};
use serde_json::{Value, json};
use tokio::time::Instant;

use super::sse::{SseDecoder, SseItem};
use super::{Provider, ProviderError, ProviderEvent, ProviderRequest, ProviderStream, excerpt};
use crate::config::Secret;
use crate::metrics::{Metrics, ModelRequest};

/// Most of an error body we keep (the start says what went wrong).
const MAX_ERROR_BODY: usize = 64 * 1024;
/// How much of an HTML error page's text is kept.
const HTML_ERROR_TEXT: usize = 1024;
/// The longest wait between attempts, whatever `Retry-After` says.
const MAX_RETRY_DELAY: Duration = Duration::from_secs(60);

/// What one HTTP API does differently from the others.
pub trait WireFormat: Send + Sync + std::fmt::Debug + 'static {
    /// The streaming endpoint for `model` under `base_url`.
    fn url(&self, base_url: &str, model: &str) -> String;
    /// Adds the key (in the header this API wants) and any header the API requires.
    fn authorize(
        &self,
        request: reqwest::RequestBuilder,
        key: Option<&Secret>,
    ) -> reqwest::RequestBuilder;
    /// The JSON body; `provider` names the provider in errors.
    fn body(&self, request: &ProviderRequest, provider: &str) -> Result<Value, ProviderError>;
    /// The body as sent: by default [`WireFormat::body`] written out; a format whose
    /// bodies carry long histories writes them without building a value first.
    fn body_bytes(
        &self,
        request: &ProviderRequest,
        provider: &str,
    ) -> Result<Vec<u8>, ProviderError> {
        write_body(&self.body(request, provider)?, provider)
    }
    /// A fresh parser for one answer's stream.
    fn parser(&self, provider: &str) -> Box<dyn SseParser>;
}

/// A request body written out as sent; `provider` names the provider in the error.
pub(super) fn write_body(
    body: &impl serde::Serialize,
    provider: &str,
) -> Result<Vec<u8>, ProviderError> {
    serde_json::to_vec(body).map_err(|e| ProviderError::BadRequest {
        provider: provider.to_owned(),
        detail: format!("cannot write the request body: {e}"),
    })
}

/// A provider reached over HTTP, speaking wire format `F`.
#[derive(Debug)]
pub struct HttpProvider<F> {
    pub id: String,
    pub base_url: String,
    pub api_key: Option<Secret>,
    /// Extra headers from the config, sent with every request.
    pub headers: BTreeMap<String, String>,
    pub client: reqwest::Client,
    pub idle_timeout: Duration,
    pub retry: RetryPolicy,
    /// What to check when the server refuses the key (401/403), e.g. "the API key in
    /// $OPENAI_API_KEY".
    pub key_hint: String,
    pub format: F,
    /// Where each request's latency is observed.
    pub metrics: Metrics,
}

impl<F: WireFormat> Provider for HttpProvider<F> {
    fn request_body(&self, request: &ProviderRequest) -> Value {
        self.format
            .body(request, &self.id)
            .unwrap_or_else(|e| json!({"error": e.to_string()}))
    }

    fn stream(&self, request: ProviderRequest) -> ProviderStream {
        let body = match self.format.body_bytes(&request, &self.id) {
            Ok(body) => body,
            Err(e) => return Box::pin(stream::once(async move { Err(e) })),
        };
        let url = self.format.url(&self.base_url, &request.model);
        let mut builder = self
            .client
            .post(&url)
            .header("accept", "text/event-stream")
            .header("content-type", "application/json")
            .body(body);
        builder = self.format.authorize(builder, self.api_key.as_ref());
        for (name, value) in &self.headers {
            builder = builder.header(name, value);
        }
        let call = HttpCall {
            provider: self.id.clone(),
            url,
            request: builder,
            idle_secs: self.idle_timeout.as_secs(),
            retry: self.retry,
            key_hint: self.key_hint.clone(),
            model: request.model,
        };
        let timer = self.metrics.model_request(&self.id);
        sse_stream(call, self.format.parser(&self.id), timer)
    }
}

/// Redirects followed in a row (within one origin) before giving up.
const MAX_REDIRECTS: usize = 10;

/// The HTTP client of one provider: `connect` to establish a connection, `idle` as the
/// longest wait for the next byte (never a total timeout: answers stream for minutes).
///
/// Redirects are followed only within the origin (scheme, host and port) of the URL that
/// was asked. reqwest's own policy, on a redirect to another host, port or scheme, drops
/// `Authorization`, `Cookie`, `Cookie2`, `Proxy-Authorization` and `WWW-Authenticate` but
/// keeps every other header, so `x-api-key`, `x-goog-api-key` or a custom auth header from
/// the config would reach the other server. A redirect to another origin is not followed:
/// the 3xx answer ends the call as an HTTP error naming where it pointed. (Every hop
/// followed is checked against the one before, so all stay in the first URL's origin.)
pub fn client(connect: Duration, idle: Duration) -> Result<reqwest::Client, String> {
    super::install_tls_provider();
    let policy = reqwest::redirect::Policy::custom(|attempt| {
        let same_origin = attempt
            .previous()
            .last()
            .is_some_and(|from| same_origin(from, attempt.url()));
        if !same_origin {
            attempt.stop()
        } else if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error("too many redirects")
        } else {
            attempt.follow()
        }
    });
    reqwest::Client::builder()
        .connect_timeout(connect)
        .read_timeout(idle)
        .redirect(policy)
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))
}

/// Whether two URLs share scheme, host and port (the port a scheme implies counts).
fn same_origin(a: &reqwest::Url, b: &reqwest::Url) -> bool {
    a.scheme() == b.scheme()
        && a.host_str() == b.host_str()
        && a.port_or_known_default() == b.port_or_known_default()
}

/// A `Retry-After` value: seconds (whole, or with a fraction as some servers send), or an
/// HTTP date (a date passed means now).
fn retry_after(value: &str, now: std::time::SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    if let Some(secs) = value
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s >= 0.0)
    {
        return Some(Duration::from_secs_f64(secs.min(86_400.0)));
    }
    let date = httpdate::parse_http_date(value).ok()?;
    Some(date.duration_since(now).unwrap_or(Duration::ZERO))
}

/// A `retry-after-ms` value: milliseconds, maybe with a fraction.
fn retry_after_ms(value: &str) -> Option<Duration> {
    let ms = value.trim().parse::<f64>().ok()?;
    (ms.is_finite() && ms >= 0.0).then(|| Duration::from_secs_f64(ms.min(86_400_000.0) / 1000.0))
}

/// Turns one wire format's SSE events into provider events.
pub trait SseParser: Send + 'static {
    /// One event (`name` is its `event:` field); returns the provider events it carries.
    fn event(
        &mut self,
        name: Option<&str>,
        data: &str,
    ) -> Result<Vec<ProviderEvent>, ProviderError>;
    /// True once the provider's end marker was seen: the answer is complete.
    fn finished(&self) -> bool;
    /// True once the stream said why the model stopped (a finish reason). Several servers
    /// end the body there without their end marker: a clean close after this is a complete
    /// answer, not a cut one.
    fn stopped(&self) -> bool {
        false
    }
}

/// When to try again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts after the first one.
    pub max_retries: u32,
    /// The first wait; each retry doubles it (with ±25% jitter).
    pub base_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 4,
            base_delay: Duration::from_secs(1),
        }
    }
}

impl RetryPolicy {
    /// The wait before retry number `attempt` (1-based), or what the server asked for.
    pub fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        if let Some(asked) = retry_after {
            return asked.min(MAX_RETRY_DELAY);
        }
        let exp = self.base_delay.saturating_mul(
            1u32.checked_shl(attempt.saturating_sub(1))
                .unwrap_or(u32::MAX),
        );
        // ±25% jitter, so clients retrying together do not hit the server together.
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let factor = 0.75 + f64::from(nanos % 1000) / 2000.0;
        exp.mul_f64(factor).min(MAX_RETRY_DELAY)
    }
}

/// One streaming call.
pub struct HttpCall {
    pub provider: String,
    pub url: String,
    /// The request; its body must be in memory (JSON) so it can be sent again.
    pub request: reqwest::RequestBuilder,
    pub idle_secs: u64,
    pub retry: RetryPolicy,
    /// What to check when the server refuses the key (401/403), e.g. "the API key in
    /// $OPENAI_API_KEY".
    pub key_hint: String,
    pub model: String,
}

/// Streams `call`, parsing its body with `parser`; `timer` observes when its answer starts
/// and ends.
pub fn sse_stream(
    call: HttpCall,
    parser: Box<dyn SseParser>,
    timer: ModelRequest,
) -> ProviderStream {
    let state = State::Start(Box::new(Pending {
        call,
        parser,
        attempt: 0,
        timer,
    }));
    Box::pin(stream::unfold(state, next))
}

struct Pending {
    call: HttpCall,
    parser: Box<dyn SseParser>,
    /// Attempts made so far.
    attempt: u32,
    timer: ModelRequest,
}

struct Streaming {
    provider: String,
    idle_secs: u64,
    body: BoxStream<'static, reqwest::Result<Bytes>>,
    decoder: SseDecoder,
    parser: Box<dyn SseParser>,
    pending: VecDeque<ProviderEvent>,
    /// Lines outside the SSE format, kept to explain a failure.
    junk: String,
    /// The body has ended.
    ended: bool,
    /// The stream failed: passed on once the events read before the failure are.
    failed: Option<ProviderError>,
    /// The request's timer; taken when the stream ends.
    timer: Option<ModelRequest>,
}

enum State {
    Start(Box<Pending>),
    Wait(Box<Pending>, Instant),
    Streaming(Box<Streaming>),
    Done,
}

type Item = Result<ProviderEvent, ProviderError>;

/// Why an attempt failed, and whether another may succeed.
enum Failure {
    Retry(ProviderError, Option<Duration>),
    Fatal(ProviderError),
}

async fn next(state: State) -> Option<(Item, State)> {
    match state {
        State::Start(mut p) => {
            p.attempt += 1;
            match attempt(&p.call).await {
                Ok(response) => {
                    let s = Box::new(Streaming {
                        provider: p.call.provider.clone(),
                        idle_secs: p.call.idle_secs,
                        body: response.bytes_stream().boxed(),
                        decoder: SseDecoder::new(),
                        parser: p.parser,
                        pending: VecDeque::new(),
                        junk: String::new(),
                        ended: false,
                        failed: None,
                        timer: Some(p.timer),
                    });
                    pump(s).await
                }
                Err(Failure::Retry(error, retry_after))
                    if p.attempt <= p.call.retry.max_retries =>
                {
                    let delay = p.call.retry.delay(p.attempt, retry_after);
                    let event = ProviderEvent::Retrying {
                        attempt: p.attempt,
                        max: p.call.retry.max_retries,
                        delay,
                        error,
                    };
                    let until = Instant::now() + delay;
                    Some((Ok(event), State::Wait(p, until)))
                }
                Err(Failure::Retry(error, _) | Failure::Fatal(error)) => {
                    p.timer.ended(false);
                    Some((Err(error), State::Done))
                }
            }
        }
        State::Wait(p, until) => {
            tokio::time::sleep_until(until).await;
            Box::pin(next(State::Start(p))).await
        }
        State::Streaming(s) => pump(s).await,
        State::Done => None,
    }
}

/// One attempt: send, check the status.
async fn attempt(call: &HttpCall) -> Result<reqwest::Response, Failure> {
    let provider = || call.provider.clone();
    let Some(request) = call.request.try_clone() else {
        return Err(Failure::Fatal(ProviderError::Unreachable {
            provider: provider(),
            url: call.url.clone(),
            detail: "the request cannot be sent again (streaming body)".into(),
        }));
    };
    let response = match request.send().await {
        Ok(r) => r,
        Err(e) => {
            return Err(Failure::Retry(
                ProviderError::Unreachable {
                    provider: provider(),
                    url: call.url.clone(),
                    detail: error_chain(&e),
                },
                None,
            ));
        }
    };
    let status = response.status();
    if !status.is_success() {
        let header = |name| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        // OpenAI and Azure also say it in milliseconds, more precisely: that one first.
        let retry_after = header(reqwest::header::HeaderName::from_static("retry-after-ms"))
            .and_then(|v| retry_after_ms(&v))
            .or_else(|| {
                header(reqwest::header::RETRY_AFTER)
                    .and_then(|v| retry_after(&v, std::time::SystemTime::now()))
            });
        let location = header(reqwest::header::LOCATION);
        let body = read_body(response).await;
        let code = status.as_u16();
        let hint = match code {
            401 | 403 => Some(format!("check {}", call.key_hint)),
            404 => Some(format!(
                "check the base URL {} and the model name {:?}",
                call.url, call.model
            )),
            300..=399 => Some(format!(
                "redirected to {}; the daemon does not follow a redirect to another origin, so \
                 the key is never sent there: set base_url to that address if you trust it",
                location.as_deref().unwrap_or("an address it did not give")
            )),
            _ => None,
        };
        let error = ProviderError::Http {
            provider: provider(),
            status: code,
            body: if body.is_empty() {
                status.canonical_reason().unwrap_or("no body").to_owned()
            } else {
                body
            },
            hint,
        };
        return Err(if error.retryable() {
            Failure::Retry(error, retry_after)
        } else {
            Failure::Fatal(error)
        });
    }
    let is_json = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if is_json {
        // The server ignored the streaming request or sent an error with a 200.
        let body = read_body(response).await;
        return Err(Failure::Fatal(ProviderError::Malformed {
            provider: provider(),
            raw: format!("expected an event stream, got JSON: {body}"),
        }));
    }
    Ok(response)
}

async fn read_body(response: reqwest::Response) -> String {
    let mut body = Vec::new();
    let mut chunks = response.bytes_stream();
    while let Some(Ok(chunk)) = chunks.next().await {
        body.extend_from_slice(&chunk);
        if body.len() >= MAX_ERROR_BODY {
            break;
        }
    }
    let text = String::from_utf8_lossy(&body);
    match html_text(&text) {
        Some(readable) => readable,
        None => excerpt(text.trim(), MAX_ERROR_BODY),
    }
}

/// What an error page in HTML says, short: a proxy's or a gateway's page (often 100 KB of
/// markup and script) would otherwise go whole into every error event and retry note.
/// Its title and the start of its visible text, at most [`HTML_ERROR_TEXT`] bytes; `None`
/// when the body is not HTML.
fn html_text(body: &str) -> Option<String> {
    let start = body.trim_start();
    let head = start.get(..start.len().min(15))?.to_ascii_lowercase();
    if !(head.starts_with("<!doctype html") || head.starts_with("<html")) {
        return None;
    }
    let mut visible = String::new();
    let mut rest = start;
    while let Some(open) = rest.find('<') {
        visible.push_str(&rest[..open]);
        visible.push(' ');
        let tag = &rest[open..];
        let lower = tag
            .get(..tag.len().min(8))
            .unwrap_or_default()
            .to_ascii_lowercase();
        // Script and style are not text: skip to their end tag.
        let skip_to = ["<script", "<style"]
            .iter()
            .find(|t| lower.starts_with(*t))
            .map(|t| format!("</{}", &t[1..]));
        rest = match skip_to {
            Some(end) => {
                let at = tag.to_ascii_lowercase().find(&end).unwrap_or(tag.len());
                &tag[at..]
            }
            None => &tag[1..],
        };
        rest = rest.find('>').map_or("", |close| &rest[close + 1..]);
    }
    visible.push_str(rest);
    let text = visible.split_whitespace().collect::<Vec<_>>().join(" ");
    Some(format!(
        "an HTML page ({} bytes): {}",
        body.len(),
        excerpt(&text, HTML_ERROR_TEXT)
    ))
}

/// The answer's next item, with the request's timer told of its first event and its end.
async fn pump(mut s: Box<Streaming>) -> Option<(Item, State)> {
    let timer = s.timer.take();
    match (read_next(s).await, timer) {
        (Some((Ok(event), State::Streaming(mut s))), Some(mut timer)) => {
            timer.first_event();
            s.timer = Some(timer);
            Some((Ok(event), State::Streaming(s)))
        }
        (Some((Err(error), state)), Some(timer)) => {
            timer.ended(false);
            Some((Err(error), state))
        }
        (None, Some(timer)) => {
            timer.ended(true);
            None
        }
        (next, _) => next,
    }
}

/// The answer's next item: an event read, the failure, or its end.
async fn read_next(mut s: Box<Streaming>) -> Option<(Item, State)> {
    loop {
        if let Some(event) = s.pending.pop_front() {
            return Some((Ok(event), State::Streaming(s)));
        }
        if let Some(error) = s.failed.take() {
            return Some((Err(error), State::Done));
        }
        if s.parser.finished() {
            return None;
        }
        if s.ended {
            if s.parser.stopped() {
                // Closed cleanly after the finish reason, without the end marker.
                return None;
            }
            // The body ended before the end marker: what arrived was delivered; now the cut.
            let mut detail = "the connection closed before the end of the answer".to_owned();
            if !s.junk.is_empty() {
                detail.push_str("; it also sent: ");
                detail.push_str(&excerpt(&s.junk, 4096));
            }
            let error = ProviderError::Truncated {
                provider: s.provider.clone(),
                detail,
            };
            return Some((Err(error), State::Done));
        }
        let Streaming {
            body,
            decoder,
            parser,
            pending,
            junk,
            provider,
            ended,
            ..
        } = &mut *s;
        let read = body.next().await;
        let mut take =
            |item: SseItem<'_>| take_item(provider, parser.as_mut(), pending, junk, item);
        let taken = match read {
            Some(Ok(bytes)) => decoder.push(&bytes, &mut take),
            Some(Err(e)) => {
                let error = if e.is_timeout() {
                    ProviderError::IdleTimeout {
                        provider: s.provider.clone(),
                        secs: s.idle_secs,
                    }
                } else {
                    ProviderError::Truncated {
                        provider: s.provider.clone(),
                        detail: error_chain(&e),
                    }
                };
                return Some((Err(error), State::Done));
            }
            None => {
                *ended = true;
                decoder.finish(&mut take)
            }
        };
        if let Err(e) = taken {
            // The events the same read brought before the failure (text streamed just
            // before an in-stream error) come first.
            s.failed = Some(e);
        }
    }
}

/// One decoded item: an event to the parser (whose provider events queue in `pending`), a
/// stray line kept (up to 8 KiB) to explain a failure. Nothing is taken once the parser saw
/// the end marker.
fn take_item(
    provider: &str,
    parser: &mut dyn SseParser,
    pending: &mut VecDeque<ProviderEvent>,
    junk: &mut String,
    item: SseItem<'_>,
) -> Result<(), ProviderError> {
    if parser.finished() {
        return Ok(());
    }
    match item {
        SseItem::Event { event, data } => pending.extend(parser.event(event, data)?),
        SseItem::Junk(line) => {
            if junk.len() < 8192 {
                junk.push_str(line);
                junk.push('\n');
            }
        }
        SseItem::Overflow => {
            return Err(ProviderError::Malformed {
                provider: provider.to_owned(),
                raw: "a line over 8 MiB".into(),
            });
        }
    }
    Ok(())
}

/// An error and its sources, e.g. "error sending request: connection refused".
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let s_text = s.to_string();
        if !text.contains(&s_text) {
            text.push_str(": ");
            text.push_str(&s_text);
        }
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_with_jitter_and_honours_retry_after() {
        let policy = RetryPolicy {
            max_retries: 4,
            base_delay: Duration::from_millis(1000),
        };
        for (attempt, base) in [(1, 1000u64), (2, 2000), (3, 4000), (4, 8000)] {
            let d = policy.delay(attempt, None).as_millis() as u64;
            assert!(
                d >= base * 3 / 4 && d <= base * 5 / 4,
                "attempt {attempt}: {d} ms"
            );
        }
        assert_eq!(
            policy.delay(1, Some(Duration::from_secs(7))),
            Duration::from_secs(7)
        );
        assert_eq!(
            policy.delay(1, Some(Duration::from_secs(600))),
            MAX_RETRY_DELAY
        );
        assert!(policy.delay(40, None) <= MAX_RETRY_DELAY);
    }

    #[test]
    fn an_html_error_page_is_its_title_and_text_in_short() {
        let page = format!(
            "<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title><style>body {{ color: red }}</style>\
             <script>var x = \"<b>not text</b>\";</script></head><body><h1>Bad Gateway</h1>\
             <p>The upstream   server did not answer.</p>{}</body></html>",
            "<div>padding</div>".repeat(10_000)
        );
        let text = html_text(&page).unwrap();
        assert!(
            text.starts_with(&format!(
                "an HTML page ({} bytes): 502 Bad Gateway Bad Gateway The upstream server did not answer. padding",
                page.len()
            )),
            "{text}"
        );
        assert!(
            !text.contains("color") && !text.contains("not text"),
            "{text}"
        );
        assert!(text.len() < HTML_ERROR_TEXT + 100, "{}", text.len());
        assert_eq!(html_text(r#"{"error": "<html> is not here"}"#), None);
        assert_eq!(html_text("<h"), None);
    }

    #[test]
    fn retry_after_ms_is_milliseconds() {
        assert_eq!(retry_after_ms("250"), Some(Duration::from_millis(250)));
        assert_eq!(
            retry_after_ms(" 20.5 "),
            Some(Duration::from_micros(20_500))
        );
        assert_eq!(retry_after_ms("-1"), None);
        assert_eq!(retry_after_ms("soon"), None);
    }

    #[test]
    fn retry_after_is_seconds_or_an_http_date() {
        let now = std::time::UNIX_EPOCH + Duration::from_secs(784_111_777);
        let cases: &[(&str, Option<Duration>)] = &[
            ("7", Some(Duration::from_secs(7))),
            (" 0 ", Some(Duration::ZERO)),
            // now is Sun, 06 Nov 1994 08:49:37 GMT
            (
                "Sun, 06 Nov 1994 08:49:40 GMT",
                Some(Duration::from_secs(3)),
            ),
            (
                "Sunday, 06-Nov-94 08:50:37 GMT",
                Some(Duration::from_secs(60)),
            ),
            ("Sun Nov  6 08:49:47 1994", Some(Duration::from_secs(10))),
            ("Sun, 06 Nov 1994 08:49:00 GMT", Some(Duration::ZERO)),
            ("1.5", Some(Duration::from_millis(1500))),
            ("-3", None),
            ("soon", None),
            ("-5", None),
        ];
        for (value, expected) in cases {
            assert_eq!(retry_after(value, now), *expected, "{value:?}");
        }
    }

    #[test]
    fn origins() {
        let url = |s: &str| reqwest::Url::parse(s).unwrap();
        let cases = [
            ("https://api.x.com/v1/a", "https://api.x.com/v2/b", true),
            ("https://api.x.com/v1", "https://api.x.com:443/v1", true),
            ("http://127.0.0.1:8080/", "http://127.0.0.1:8080/x", true),
            ("http://127.0.0.1:8080/", "http://127.0.0.1:8081/", false),
            ("https://api.x.com/", "http://api.x.com/", false),
            ("https://api.x.com/", "https://evil.x.com/", false),
        ];
        for (a, b, same) in cases {
            assert_eq!(same_origin(&url(a), &url(b)), same, "{a} {b}");
        }
    }
}
