//! The one mapping from errors to the wire: a stable code, `data.kind`, and a message a
//! person can act on.

use agent_proto::{ErrorData, ErrorKind};
use jsonrpsee::types::ErrorObjectOwned;
use serde_json::{Value, json};

use crate::session::SessionError;

/// An error object of the given kind.
pub fn rpc_error(kind: ErrorKind, message: impl Into<String>) -> ErrorObjectOwned {
    ErrorObjectOwned::owned(kind.code(), message.into(), Some(ErrorData { kind }))
}

impl From<SessionError> for ErrorObjectOwned {
    fn from(e: SessionError) -> Self {
        let kind = match &e {
            SessionError::AgentNotFound(_) => ErrorKind::AgentNotFound,
            SessionError::AgentBusy { .. } => ErrorKind::AgentBusy,
            SessionError::InputTooLarge { .. } | SessionError::TooLarge(_) => {
                ErrorKind::InputTooLarge
            }
            SessionError::ProviderNotConfigured(_) => ErrorKind::ProviderNotConfigured,
            SessionError::InvalidParams(_) => ErrorKind::InvalidParams,
            SessionError::NotSupported(_) => ErrorKind::NotSupported,
            SessionError::ShuttingDown => ErrorKind::ShuttingDown,
            SessionError::MessageNotFound(_) => ErrorKind::MessageNotFound,
            SessionError::PermissionNotPending(_) => ErrorKind::PermissionNotPending,
            SessionError::QuestionNotPending(_) => ErrorKind::QuestionNotPending,
            SessionError::InvalidState(_) => ErrorKind::InvalidState,
            SessionError::Internal(_) => ErrorKind::Internal,
            SessionError::Store(store) => {
                tracing::error!("store failure answering a request: {store}");
                ErrorKind::Internal
            }
        };
        rpc_error(kind, e.to_string())
    }
}

impl From<crate::tools::mcp::McpError> for ErrorObjectOwned {
    fn from(e: crate::tools::mcp::McpError) -> Self {
        use crate::tools::mcp::McpError;
        let kind = match &e {
            McpError::Invalid(_) => ErrorKind::InvalidParams,
            McpError::NotFound(_) => ErrorKind::McpServerNotFound,
            McpError::ReadOnly(_) => ErrorKind::InvalidState,
            McpError::Store(store) => {
                tracing::error!("store failure answering a request: {store}");
                ErrorKind::Internal
            }
        };
        rpc_error(kind, e.to_string())
    }
}

/// A complete JSON-RPC error response (for errors found before a method runs: framing,
/// parsing, invalid requests, overload).
pub fn error_response(id: Value, kind: ErrorKind, message: impl Into<String>) -> String {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {
            "code": kind.code(),
            "message": message.into(),
            "data": {"kind": kind},
        }
    })
    .to_string()
}

/// A complete JSON-RPC error response carrying `error` (answered by the daemon itself, not
/// through the method table).
pub fn error_object_response(id: Value, error: &ErrorObjectOwned) -> String {
    json!({"jsonrpc": "2.0", "id": id, "error": error}).to_string()
}

/// A complete JSON-RPC success response.
pub fn result_response(id: Value, result: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string()
}
