//! LLM providers: one trait, one file per wire format, and the registry of instances.
//!
//! A provider turns a [`ProviderRequest`] into a stream of [`ProviderEvent`]s. Dropping the
//! stream cancels the call (the HTTP connection is closed), which is how a run's cancel
//! reaches the network at once. Providers know nothing of agents, sessions or the store.

mod anthropic;
mod complete;
#[cfg(test)]
mod document_tests;
mod gemini;
pub mod http;
pub mod oneshot;
mod openai;
mod output;
mod presets;
mod registry;
mod scripted;
mod served;
pub mod sse;
#[cfg(test)]
mod turn_tests;

use std::pin::Pin;

use agent_proto::{Role, Usage, run_error};
use futures::Stream;

pub use complete::{Completion, complete, complete_with};
pub use output::{AnswerOptions, OutputSchema};
pub use presets::key_variables;
pub use registry::{ProviderRegistry, Resolved};

/// What the model is asked: provider-neutral, built by `context`.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderRequest {
    pub model: String,
    pub system: Option<String>,
    pub messages: Vec<ChatMessage>,
    /// Tools offered with native function calling (empty for chat, and for models that
    /// get the legacy text protocol in their system prompt instead).
    pub tools: Vec<ToolSpec>,
    pub max_output_tokens: Option<u32>,
    pub temperature: Option<f64>,
    /// The turn's own choices (reasoning effort, output schema), written by each wire
    /// format in its form.
    pub options: AnswerOptions,
}

/// A tool offered to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments.
    pub parameters: serde_json::Value,
}

/// One message of the conversation as the model sees it.
#[derive(Debug, Clone, PartialEq)]
pub enum ChatMessage {
    User {
        content: String,
        /// Images shown to a vision model with the text (files the daemon keeps).
        images: Vec<ImageRef>,
        /// Documents (PDFs) given to a model that takes them (files the daemon keeps).
        documents: Vec<DocumentRef>,
    },
    Assistant {
        content: String,
        tool_calls: Vec<ToolCallRequest>,
        /// The reasoning the model wrote with this text and these calls, in order. Each
        /// wire format sends back what its API requires of it (and nothing where it
        /// requires nothing).
        reasoning: Vec<ReasoningPart>,
        /// The order in which the model wrote the reasoning, text and calls above, for the
        /// formats that send it back so (Anthropic: thinking, call, thinking, call). Empty:
        /// the reasoning, then the text, then the calls.
        order: Vec<Part>,
    },
    /// The result of one tool call, answering the assistant message that made it.
    Tool {
        tool_call_id: String,
        name: String,
        content: String,
        /// The call failed (an error, denied, cancelled, interrupted, or it never ran):
        /// each wire format marks it so the model cannot read it as a success.
        is_error: bool,
    },
}

impl ChatMessage {
    pub fn role(&self) -> Role {
        match self {
            ChatMessage::User { .. } | ChatMessage::Tool { .. } => Role::User,
            ChatMessage::Assistant { .. } => Role::Assistant,
        }
    }

    /// The text of the message (for counting and for the scripted provider).
    pub fn text(&self) -> &str {
        match self {
            ChatMessage::User { content, .. }
            | ChatMessage::Assistant { content, .. }
            | ChatMessage::Tool { content, .. } => content,
        }
    }
}

/// How a failed call's result starts for the APIs that have no error flag on a tool
/// result (chat completions, the legacy text protocol): the model must not read it as a
/// success.
pub const FAILED_RESULT_MARK: &str = "Error: ";

/// A failed call's result text for an API without an error flag: marked with
/// [`FAILED_RESULT_MARK`] unless it already starts so.
pub fn marked_failure(content: &str) -> std::borrow::Cow<'_, str> {
    if content.starts_with(FAILED_RESULT_MARK) {
        std::borrow::Cow::Borrowed(content)
    } else {
        std::borrow::Cow::Owned(format!("{FAILED_RESULT_MARK}{content}"))
    }
}

/// One piece of an assistant message, in [`ChatMessage::Assistant`]'s `order`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// `reasoning[i]`.
    Reasoning(usize),
    /// A piece of text: these bytes of `content`.
    Text(std::ops::Range<usize>),
    /// `tool_calls[i]`.
    Call(usize),
}

/// An image attached to a user message, stored as a file by the daemon.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageRef {
    pub path: std::path::PathBuf,
    pub mime_type: String,
}

impl ImageRef {
    /// The image as base64, for the request body.
    pub fn base64(&self, provider: &str) -> Result<String, ProviderError> {
        file_base64(&self.path, "image", provider)
    }
}

/// A document (a PDF) attached to a user message, stored as a file by the daemon. Only
/// requests to models that take documents carry one (`ModelInfo::documents`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocumentRef {
    pub path: std::path::PathBuf,
    /// `application/pdf`.
    pub mime_type: String,
    /// The attached file's name, as the model is told it.
    pub name: String,
    /// Bytes (for estimating its tokens without reading it).
    pub size: u64,
}

impl DocumentRef {
    /// The document as base64, for the request body.
    pub fn base64(&self, provider: &str) -> Result<String, ProviderError> {
        file_base64(&self.path, "document", provider)
    }
}

/// A file the daemon keeps, read for a request body as base64.
fn file_base64(
    path: &std::path::Path,
    what: &str,
    provider: &str,
) -> Result<String, ProviderError> {
    use base64::Engine as _;
    let bytes = std::fs::read(path).map_err(|e| ProviderError::BadRequest {
        provider: provider.to_owned(),
        detail: format!("cannot read the {what} {}: {e}", path.display()),
    })?;
    Ok(base64::engine::general_purpose::STANDARD.encode(bytes))
}

/// A tool call as it goes back to the model in the transcript.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCallRequest {
    /// The id the provider gave the call.
    pub id: String,
    pub name: String,
    /// The arguments as a JSON text.
    pub arguments: String,
    /// The provider's opaque signature of the call (Gemini `thoughtSignature`).
    pub signature: Option<String>,
}

/// A piece of an assistant turn's reasoning, as it may go back to the model.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ReasoningPart {
    pub text: String,
    /// The provider's opaque signature of `text` (Anthropic thinking).
    pub signature: Option<String>,
    /// Reasoning the provider sent encrypted (Anthropic `redacted_thinking` data).
    pub redacted: Option<String>,
    /// Structured reasoning of a chat-completions provider (OpenRouter's
    /// `reasoning_details`, a list of objects), sent back as received.
    pub details: Option<serde_json::Value>,
}

impl ProviderRequest {
    /// Index of the first message of the current turn: the one after the last user
    /// message (the turn is the model's answer to it, with its tool calls and results).
    pub fn current_turn_start(&self) -> usize {
        self.messages
            .iter()
            .rposition(|m| matches!(m, ChatMessage::User { .. }))
            .map_or(0, |i| i + 1)
    }
}

/// Why the model stopped. Each wire format maps its own words onto these.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FinishReason {
    /// A complete answer.
    Stop,
    /// The output limit cut the answer (`length`, `max_tokens`, `MAX_TOKENS`): the text is
    /// partial and a tool call being written may have cut arguments.
    Length,
    /// The answer ends with tool calls.
    ToolCalls,
    /// The provider refused or filtered the answer (`content_filter`, `refusal`, Gemini
    /// `SAFETY`, a blocked prompt); the provider's own words.
    Refused(String),
    /// The provider paused a long turn and asks for the answer so far back to go on
    /// (Anthropic `pause_turn`, while its server tools work): not the end of the answer.
    Paused,
    /// Any other reason, as the provider named it (`MALFORMED_FUNCTION_CALL`, ...).
    Other(String),
}

/// One piece of a streamed answer.
#[derive(Debug, Clone, PartialEq)]
pub enum ProviderEvent {
    TextDelta(String),
    ReasoningDelta(String),
    /// The provider's signature of the reasoning just streamed (Anthropic `signature_delta`):
    /// it closes that reasoning, and goes back with it.
    ReasoningSignature(String),
    /// A piece of reasoning the provider sent encrypted (Anthropic `redacted_thinking`),
    /// kept only to be sent back.
    RedactedReasoning(String),
    /// The structured reasoning of the answer (OpenRouter's `reasoning_details`, merged
    /// per index), kept only to be sent back with it. Comes once, before `Finish`.
    ReasoningDetails(serde_json::Value),
    /// The model starts tool call number `index` of this answer.
    ToolCallStart {
        index: usize,
        id: String,
        name: String,
    },
    /// More of the arguments (JSON text) of tool call `index`.
    ToolCallArgsDelta {
        index: usize,
        delta: String,
    },
    /// The provider's signature of tool call `index` (Gemini `thoughtSignature`), to send
    /// back with the call exactly as received.
    ToolCallSignature {
        index: usize,
        signature: String,
    },
    Usage(Usage),
    Finish(FinishReason),
    /// The request failed before the first byte and will be sent again after `delay`
    /// (attempt `attempt` of `max` retries).
    Retrying {
        attempt: u32,
        max: u32,
        delay: std::time::Duration,
        error: ProviderError,
    },
}

/// A provider failure. Each ends the run with an `error` event; the Display text carries
/// the provider's own words so the user sees what it said.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProviderError {
    /// Non-success HTTP status. Retrying helps for 429 and 5xx; for 401/403/404 check the
    /// key or the model name.
    #[error("{provider} answered HTTP {status}: {body}{}", hint.as_ref().map(|h| format!(" ({h})")).unwrap_or_default())]
    Http {
        provider: String,
        status: u16,
        body: String,
        /// What to check (the key, the model name), for errors a retry will not fix.
        hint: Option<String>,
    },
    /// Connection refused, DNS, TLS or a reset before any byte. Retry later.
    #[error("cannot reach {provider} at {url}: {detail}")]
    Unreachable {
        provider: String,
        url: String,
        detail: String,
    },
    /// The stream broke or ended before the provider's end marker: the answer is partial.
    #[error("{provider}'s stream ended before it was complete: {detail}")]
    Truncated { provider: String, detail: String },
    /// The provider sent something outside its format.
    #[error("{provider} sent data that is not a valid stream chunk: {raw}")]
    Malformed { provider: String, raw: String },
    /// The provider reported an error inside the stream.
    #[error("{provider} reported an error: {raw}")]
    InStream { provider: String, raw: String },
    /// Nothing arrived for the idle timeout.
    #[error("{provider} sent nothing for {secs} s (idle timeout)")]
    IdleTimeout { provider: String, secs: u64 },
    /// The request could not be built (an image that cannot be read, ...).
    #[error("cannot build the request for {provider}: {detail}")]
    BadRequest { provider: String, detail: String },
}

impl ProviderError {
    /// The `kind` of the `error` event and error block.
    pub fn kind(&self) -> &'static str {
        match self {
            ProviderError::Http { .. } => run_error::PROVIDER_HTTP,
            ProviderError::Unreachable { .. } => run_error::PROVIDER_UNREACHABLE,
            ProviderError::Truncated { .. } => run_error::PROVIDER_TRUNCATED,
            ProviderError::Malformed { .. } => run_error::PROVIDER_MALFORMED,
            ProviderError::InStream { .. } => run_error::PROVIDER_STREAM_ERROR,
            ProviderError::IdleTimeout { .. } => run_error::PROVIDER_IDLE_TIMEOUT,
            ProviderError::BadRequest { .. } => run_error::PROVIDER_BAD_REQUEST,
        }
    }

    /// Whether sending the same request again may succeed.
    pub fn retryable(&self) -> bool {
        match self {
            ProviderError::Http { status, body, .. } => {
                *status == 429 || (*status >= 500 && !refuses_the_request(body))
            }
            ProviderError::Unreachable { .. }
            | ProviderError::Truncated { .. }
            | ProviderError::IdleTimeout { .. } => true,
            ProviderError::InStream { raw, .. } => passing_trouble(raw),
            ProviderError::Malformed { .. } | ProviderError::BadRequest { .. } => false,
        }
    }
}

/// Usage given as running totals (each report the answer's totals so far: vLLM's
/// continuous usage, Gemini's `usageMetadata`): what each report adds to those passed on,
/// so the sums the loop keeps are the answer's totals whether a stream reports once or on
/// every chunk.
#[derive(Debug, Default)]
pub(super) struct UsageTotals {
    reported: Usage,
}

impl UsageTotals {
    /// What `totals` adds to the totals reported so far (`None`: nothing).
    pub(super) fn added(&mut self, totals: Usage) -> Option<Usage> {
        let added = Usage {
            input_tokens: totals
                .input_tokens
                .saturating_sub(self.reported.input_tokens),
            output_tokens: totals
                .output_tokens
                .saturating_sub(self.reported.output_tokens),
        };
        self.reported.input_tokens = self.reported.input_tokens.max(totals.input_tokens);
        self.reported.output_tokens = self.reported.output_tokens.max(totals.output_tokens);
        (added.input_tokens > 0 || added.output_tokens > 0).then_some(added)
    }
}

/// Whether a server error's body says the request itself was refused: a validation
/// error of its schema (pydantic's "N validation errors for ...", or FastAPI's list of
/// `loc` and `msg`), which some servers answer with 500 instead of 4xx
/// (llama-cpp-python's). Sending the same request again cannot help.
fn refuses_the_request(body: &str) -> bool {
    let lower = body.to_ascii_lowercase();
    let pydantic = lower.contains("validation error");
    let fastapi = ["loc", "msg"]
        .iter()
        .all(|key| lower.contains(&format!("\"{key}\"")) || lower.contains(&format!("'{key}'")));
    pydantic || fastapi
}

/// Whether an error sent inside the stream is the provider's passing trouble (overloaded,
/// rate-limited, its own failure), so that the same request later may succeed: Anthropic's
/// `overloaded_error`, `rate_limit_error` and `api_error`, OpenAI's `server_error`.
fn passing_trouble(raw: &str) -> bool {
    [
        "overloaded_error",
        "rate_limit_error",
        "api_error",
        "server_error",
    ]
    .iter()
    .any(|kind| raw.contains(&format!("\"{kind}\"")))
}

pub type ProviderStream = Pin<Box<dyn Stream<Item = Result<ProviderEvent, ProviderError>> + Send>>;

/// A configured provider instance.
pub trait Provider: Send + Sync + std::fmt::Debug {
    /// Starts a call. The stream ends after `Finish` (and a trailing `Usage`) or with one
    /// error; dropping it aborts the call.
    fn stream(&self, request: ProviderRequest) -> ProviderStream;

    /// The body `stream` would send for this request (for previews and debugging).
    fn request_body(&self, request: &ProviderRequest) -> serde_json::Value;
}

/// Installs the process-wide TLS crypto provider reqwest needs (idempotent). Building an
/// HTTP client before this panics inside rustls.
pub fn install_tls_provider() {
    // An error only means another provider is installed already, which is fine.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Text shown for a body or line, cut to a readable size at a char boundary.
pub(crate) fn excerpt(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}... ({} bytes in all)", &text[..end], text.len())
}

#[cfg(test)]
mod retryable_tests {
    use super::*;

    fn http(status: u16, body: &str) -> ProviderError {
        ProviderError::Http {
            provider: "p".into(),
            status,
            body: body.into(),
            hint: None,
        }
    }

    #[test]
    fn a_server_error_that_refuses_the_request_is_not_retryable() {
        let refused = [
            // llama-cpp-python: pydantic's message inside the error.
            r#"{"error":{"message":"7 validation errors for ChatCompletionRequestAssistantMessage\ncontent\n  Input should be a valid string","type":"internal_server_error"}}"#,
            // FastAPI's shape.
            r#"{"detail":[{"type":"string_type","loc":["body","messages",1,"content"],"msg":"Input should be a valid string","input":null}]}"#,
            "[{'type': 'string_type', 'loc': ('body', 'messages'), 'msg': 'Input should be a valid string'}]",
        ];
        for body in refused {
            assert!(!http(500, body).retryable(), "{body}");
        }
        for body in [
            r#"{"error":{"message":"The server had an error while processing your request.","type":"server_error"}}"#,
            "upstream connect error or disconnect/reset before headers",
            "",
        ] {
            assert!(http(500, body).retryable(), "{body}");
        }
        assert!(http(429, "7 validation errors").retryable());
        assert!(!http(400, "").retryable());
    }

    #[test]
    fn an_error_in_the_stream_is_retryable_when_it_is_the_providers_passing_trouble() {
        let in_stream = |raw: &str| ProviderError::InStream {
            provider: "p".into(),
            raw: raw.into(),
        };
        for raw in [
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
            r#"{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}"#,
            r#"{"type":"error","error":{"type":"api_error","message":"Internal server error"}}"#,
            r#"{"error":{"message":"The server had an error","type":"server_error"}}"#,
        ] {
            assert!(in_stream(raw).retryable(), "{raw}");
        }
        for raw in [
            r#"{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long"}}"#,
            r#"{"error":{"message":"quota exceeded"}}"#,
            "finish_reason \"error\": {}",
        ] {
            assert!(!in_stream(raw).retryable(), "{raw}");
        }
    }
}
