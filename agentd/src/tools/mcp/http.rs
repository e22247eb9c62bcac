//! The HTTP client of streamable HTTP servers: reqwest as rmcp drives it, watched for
//! answers over rmcp's size limits. rmcp drops such an answer and the call only learns
//! "Transport closed"; here the request's id and the real reason go to the calls waiting
//! (the same [`Oversized`] reports the stdio meter makes).

use std::collections::HashMap;
use std::sync::Arc;

use futures::StreamExt;
use futures::stream::BoxStream;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::Sse;
use tokio::sync::broadcast;

use super::call::token_key;
use super::process::Oversized;

/// What rmcp says when an answer is over its limit (its error types are private).
const TOO_LARGE: &str = "exceeded the maximum size";

/// reqwest, with answers over the limit reported.
#[derive(Clone)]
pub(super) struct WatchedHttp {
    inner: reqwest::Client,
    oversized: broadcast::Sender<Oversized>,
}

impl WatchedHttp {
    pub(super) fn new(inner: reqwest::Client, oversized: broadcast::Sender<Oversized>) -> Self {
        WatchedHttp { inner, oversized }
    }
}

/// Whether an error (or one of its sources) is rmcp's "over the size limit".
fn too_large(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(error);
    while let Some(e) = next {
        if e.to_string().contains(TOO_LARGE) {
            return true;
        }
        next = e.source();
    }
    false
}

/// Reports a message over the limit: to the calls waiting when it answers a request of
/// ours (the answer stream of a POST), else only in the log (the GET stream carries the
/// server's own requests and notifications).
fn report(oversized: &broadcast::Sender<Oversized>, id: Option<String>, answer: bool) {
    tracing::warn!(
        id,
        answer,
        "an MCP server sent a message over the transport's limit; it was dropped"
    );
    if answer {
        let _ = oversized.send(Oversized {
            bytes: None,
            id,
            answer,
        });
    }
}

/// The stream with its too-large errors reported (for request `id`, when known).
fn watch(
    stream: BoxStream<'static, Result<Sse, SseError>>,
    oversized: broadcast::Sender<Oversized>,
    id: Option<String>,
    answer: bool,
) -> BoxStream<'static, Result<Sse, SseError>> {
    stream
        .inspect(move |item| {
            if let Err(e) = item
                && too_large(e)
            {
                report(&oversized, id.clone(), answer);
            }
        })
        .boxed()
}

impl StreamableHttpClient for WatchedHttp {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default(),
        )
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let mut limits = StreamableHttpResponseLimits::default();
        limits.max_sse_event_size = max_sse_event_size;
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            limits,
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let id = match &message {
            JsonRpcMessage::Request(request) => Some(token_key(&request.id)),
            _ => None,
        };
        let response = self
            .inner
            .post_message_with_response_limits(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                limits,
            )
            .await;
        match response {
            Ok(StreamableHttpPostResponse::Sse(stream, session)) => {
                Ok(StreamableHttpPostResponse::Sse(
                    watch(stream, self.oversized.clone(), id, true),
                    session,
                ))
            }
            Err(e) if too_large(&e) => {
                report(&self.oversized, id, true);
                Err(e)
            }
            other => other,
        }
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        self.inner
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        let stream = self
            .inner
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
            .await?;
        Ok(watch(stream, self.oversized.clone(), None, false))
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        let stream = self
            .inner
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await?;
        Ok(watch(stream, self.oversized.clone(), None, false))
    }
}
