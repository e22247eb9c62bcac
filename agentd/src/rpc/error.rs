//! The one mapping from errors to the wire: a stable code, `data.kind`, and a message a
//! person can act on. The session's and MCP's errors, jsonrpsee's own answers (method not
//! found, bad params) and the service layers' refusals (overload, timeout) all pass here.

use agent_proto::{ErrorData, ErrorKind};
use jsonrpsee::types::ErrorObjectOwned;
use serde_json::value::RawValue;
use serde_json::{Value, json};
use tower::BoxError;

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
            SessionError::ProviderFailed(_) => ErrorKind::ProviderFailed,
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

/// The `error` member of a response, unparsed (`None`: a result).
fn error_member(response: &str) -> Option<&RawValue> {
    #[derive(serde::Deserialize)]
    struct Probe<'a> {
        #[serde(borrow)]
        error: Option<&'a RawValue>,
    }
    serde_json::from_str::<Probe>(response).ok()?.error
}

/// The `data.kind` of an error object, if it has one of ours.
fn kind_of_error(error: &RawValue) -> Option<ErrorKind> {
    #[derive(serde::Deserialize)]
    struct Error {
        data: Option<ErrorData>,
    }
    Some(serde_json::from_str::<Error>(error.get()).ok()?.data?.kind)
}

/// The `data.kind` of a response that is an error (`None`: a result, or an error without
/// a kind of ours); what the metrics count an error response by.
pub fn error_kind_of(response: &str) -> Option<ErrorKind> {
    kind_of_error(error_member(response)?)
}

/// Gives an error response from jsonrpsee itself (method not found, invalid params) the
/// `data.kind` every error of ours carries, folding its detail into the message. Also
/// says the response's kind when it is an error (read in the same pass).
pub fn with_error_kind(response: &str, method: &str) -> (String, Option<ErrorKind>) {
    let Some(error) = error_member(response) else {
        return (response.to_owned(), None);
    };
    if let Some(kind) = kind_of_error(error) {
        return (response.to_owned(), Some(kind));
    }
    let Ok(mut value) = serde_json::from_str::<Value>(response) else {
        return (response.to_owned(), None);
    };
    let error = &mut value["error"];
    if error["data"]["kind"].is_string() {
        return (response.to_owned(), None);
    }
    let code = error["code"]
        .as_i64()
        .and_then(|c| i32::try_from(c).ok())
        .unwrap_or(-32603);
    let kind = ErrorKind::from_code(code).unwrap_or(ErrorKind::Internal);
    let mut message = error["message"].as_str().unwrap_or("error").to_owned();
    if kind == ErrorKind::MethodNotFound {
        message = format!("method {method:?} not found; initialize lists the methods");
    }
    match &error["data"] {
        Value::Null => {}
        Value::String(detail) => {
            message.push_str(": ");
            message.push_str(detail);
        }
        other => {
            message.push_str(": ");
            message.push_str(&other.to_string());
        }
    }
    error["message"] = Value::String(message);
    error["data"] = serde_json::json!({ "kind": kind });
    (value.to_string(), Some(kind))
}

/// The answer to a request the service layers stopped before its method ran: overload
/// (load shedding), a timeout, or a failure of the dispatch itself.
pub fn service_error(id: Value, method: &str, error: &BoxError) -> String {
    if error.is::<tower::load_shed::error::Overloaded>() {
        return error_response(
            id,
            ErrorKind::Overloaded,
            "the daemon is handling too many requests; retry shortly",
        );
    }
    if error.is::<tower::timeout::error::Elapsed>() {
        return error_response(
            id,
            ErrorKind::Internal,
            format!("{method} did not finish in time; it may still complete"),
        );
    }
    tracing::error!(method, "dispatch failed: {error}");
    error_response(id, ErrorKind::Internal, format!("internal error: {error}"))
}
