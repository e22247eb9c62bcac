//! Error codes and kinds on the wire.
//!
//! Every error the daemon returns is a JSON-RPC error object with a stable `code` and
//! `data.kind` (a camelCase string), and a `message` a person can act on. Clients should
//! match on `data.kind`; codes are stable too.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The stable kind of an RPC error, sent as `data.kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ErrorKind {
    /// -32700: the frame is not JSON.
    ParseError,
    /// -32600: JSON, but not a JSON-RPC request (or a header block that cannot be read).
    InvalidRequest,
    /// -32601
    MethodNotFound,
    /// -32602: params missing, of the wrong type, or out of range.
    InvalidParams,
    /// -32603: a bug or a store failure; the message says what failed.
    Internal,
    /// No agent has that id (or it was deleted): refresh with `listAgents`.
    AgentNotFound,
    /// A run is active on the agent: wait for `loopFinished` or `cancelLoop` it.
    AgentBusy,
    /// No message has that id (or it is another agent's): reload with `listMessages`.
    MessageNotFound,
    /// The tool call is not waiting for an answer (answered already: the first answer
    /// wins; cancelled; never asked).
    PermissionNotPending,
    /// User text over the limit (1,048,576 characters), or a frame over the limit (16 MiB).
    InputTooLarge,
    /// The provider or model named is not configured; `listProviders` shows what is.
    ProviderNotConfigured,
    /// Too many connections or requests in flight: retry later.
    Overloaded,
    /// The daemon is stopping: reconnect to the next one.
    ShuttingDown,
    /// The feature exists in the protocol but this daemon does not implement it yet.
    NotSupported,
    /// The agent is not in a state where this works (nothing to continue, a prompt must be
    /// answered first, ...); the message says what to do.
    InvalidState,
    /// No MCP server of that name (`listMcpServers` shows them).
    McpServerNotFound,
    /// The connection holds as many subscriptions as one may: unsubscribe some first.
    TooManySubscriptions,
    /// The question was answered already (the first answer wins), or cancelled.
    QuestionNotPending,
    /// A model call made for the caller (`complete`) failed; the message is the provider's.
    ProviderFailed,
}

impl ErrorKind {
    /// The JSON-RPC error code of this kind.
    pub fn code(self) -> i32 {
        match self {
            ErrorKind::ParseError => -32700,
            ErrorKind::InvalidRequest => -32600,
            ErrorKind::MethodNotFound => -32601,
            ErrorKind::InvalidParams => -32602,
            ErrorKind::Internal => -32603,
            ErrorKind::AgentNotFound => -32001,
            ErrorKind::AgentBusy => -32002,
            ErrorKind::MessageNotFound => -32003,
            ErrorKind::PermissionNotPending => -32004,
            ErrorKind::InputTooLarge => -32005,
            ErrorKind::ProviderNotConfigured => -32006,
            ErrorKind::Overloaded => -32007,
            ErrorKind::ShuttingDown => -32008,
            ErrorKind::NotSupported => -32009,
            ErrorKind::InvalidState => -32010,
            ErrorKind::McpServerNotFound => -32011,
            ErrorKind::TooManySubscriptions => -32012,
            ErrorKind::QuestionNotPending => -32013,
            ErrorKind::ProviderFailed => -32014,
        }
    }

    /// The kind of a JSON-RPC error code, if it is one of ours.
    pub fn from_code(code: i32) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.code() == code)
    }

    /// Every kind.
    pub const ALL: [ErrorKind; 19] = [
        ErrorKind::ParseError,
        ErrorKind::InvalidRequest,
        ErrorKind::MethodNotFound,
        ErrorKind::InvalidParams,
        ErrorKind::Internal,
        ErrorKind::AgentNotFound,
        ErrorKind::AgentBusy,
        ErrorKind::MessageNotFound,
        ErrorKind::PermissionNotPending,
        ErrorKind::InputTooLarge,
        ErrorKind::ProviderNotConfigured,
        ErrorKind::Overloaded,
        ErrorKind::ShuttingDown,
        ErrorKind::NotSupported,
        ErrorKind::InvalidState,
        ErrorKind::McpServerNotFound,
        ErrorKind::TooManySubscriptions,
        ErrorKind::QuestionNotPending,
        ErrorKind::ProviderFailed,
    ];

    /// The kind of a `data.kind` name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == name)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::ParseError => "parseError",
            ErrorKind::InvalidRequest => "invalidRequest",
            ErrorKind::MethodNotFound => "methodNotFound",
            ErrorKind::InvalidParams => "invalidParams",
            ErrorKind::Internal => "internal",
            ErrorKind::AgentNotFound => "agentNotFound",
            ErrorKind::AgentBusy => "agentBusy",
            ErrorKind::MessageNotFound => "messageNotFound",
            ErrorKind::PermissionNotPending => "permissionNotPending",
            ErrorKind::InputTooLarge => "inputTooLarge",
            ErrorKind::ProviderNotConfigured => "providerNotConfigured",
            ErrorKind::Overloaded => "overloaded",
            ErrorKind::ShuttingDown => "shuttingDown",
            ErrorKind::NotSupported => "notSupported",
            ErrorKind::InvalidState => "invalidState",
            ErrorKind::McpServerNotFound => "mcpServerNotFound",
            ErrorKind::TooManySubscriptions => "tooManySubscriptions",
            ErrorKind::QuestionNotPending => "questionNotPending",
            ErrorKind::ProviderFailed => "providerFailed",
        }
    }
}

/// The `data` member of every error object the daemon sends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ErrorData {
    pub kind: ErrorKind,
}

/// Kinds carried by `error` events and error blocks (strings, so new ones can be added).
pub mod run_error {
    /// The provider answered with an HTTP error status; the message holds its body.
    pub const PROVIDER_HTTP: &str = "providerHttpError";
    /// The provider could not be reached (refused, DNS, TLS, reset before any byte).
    pub const PROVIDER_UNREACHABLE: &str = "providerUnreachable";
    /// The stream ended before its end marker, or the connection broke mid-stream.
    pub const PROVIDER_TRUNCATED: &str = "providerStreamTruncated";
    /// The stream carried something that is not the provider's format.
    pub const PROVIDER_MALFORMED: &str = "providerMalformedStream";
    /// The provider sent an error object inside the stream.
    pub const PROVIDER_STREAM_ERROR: &str = "providerStreamError";
    /// No byte arrived for the idle timeout.
    pub const PROVIDER_IDLE_TIMEOUT: &str = "providerIdleTimeout";
    /// The request could not be built (e.g. an attached image cannot be read).
    pub const PROVIDER_BAD_REQUEST: &str = "providerBadRequest";
    /// The agent's provider or model is not configured.
    pub const PROVIDER_NOT_CONFIGURED: &str = "providerNotConfigured";
    /// The agent's profile is not one the daemon has (any more): choose another with
    /// `updateAgent` (`profile`), or `""` for none.
    pub const PROFILE_NOT_FOUND: &str = "profileNotFound";
    /// A failure inside the daemon (store, bug).
    pub const INTERNAL: &str = "internal";
    /// The external agent of an agent of mode `acp` could not be started, exited, or
    /// failed the prompt; the message says which, with the end of its stderr.
    pub const ACP_AGENT: &str = "acpAgentError";
    /// The model's (or the external ACP agent's) answer went past a cap of the daemon's
    /// `[limits]` (bytes of one message, of one call's arguments, calls per answer): it was
    /// stopped there, what came before is kept. The message names the cap, its value and
    /// the key that raises it.
    pub const ANSWER_TOO_LARGE: &str = "answerTooLarge";
    /// Not an end: the per-request tool cap left some MCP tools out of this run's
    /// requests, or MCP servers still starting had not listed their tools in time (the
    /// message names them); the run goes on without them.
    pub const TOOLS_LEFT_OUT: &str = "toolsLeftOut";
    /// The turn asked for `outputSchema` and the model's final answer was not valid
    /// against it, also after one corrective retry; the message names the errors.
    pub const OUTPUT_SCHEMA_MISMATCH: &str = "outputSchemaMismatch";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_are_distinct() {
        let mut seen = std::collections::HashSet::new();
        for code in (-32800..=-32000).rev() {
            if let Some(kind) = ErrorKind::from_code(code) {
                assert_eq!(kind.code(), code);
                assert!(seen.insert(code));
                let json = serde_json::to_value(kind).unwrap();
                assert_eq!(json, kind.as_str());
            }
        }
        assert_eq!(seen.len(), 19);
    }
}
