//! Calling a tool of a running server: the request with its progress token, the timeout,
//! cancellation (sent on to the server), and the result turned into text for the model.

use std::path::{Path, PathBuf};
use std::sync::PoisonError;
use std::time::Duration;

use agent_proto::McpServerStatus;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotificationParam, ClientRequest, ServerResult,
};
use rmcp::service::PeerRequestOptions;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{CALL_TIMEOUT, McpManager, Progress, convert, redact};

impl McpManager {
    /// Calls a tool. `Err` is a result text for the model (the server is down, the call
    /// failed); cancelling `cancel` sends the MCP cancellation and returns at once.
    pub async fn call(
        &self,
        server_name: &str,
        tool: &str,
        args: Value,
        cancel: &CancellationToken,
        progress: Option<mpsc::Sender<Progress>>,
        save_dir: &Path,
    ) -> Result<(String, bool), String> {
        let server = self.get(server_name).map_err(|e| e.to_string())?;
        let (peer, status) = {
            let st = server.lock();
            (
                st.peer.clone(),
                st.status.unwrap_or(McpServerStatus::Stopped),
            )
        };
        let Some(peer) = peer.filter(|_| status == McpServerStatus::Ready) else {
            if server.spec.enabled && !server.lock().supervised {
                self.supervise(&server);
            }
            let why = server.lock().last_error.clone();
            return Err(match why {
                Some(why) => format!(
                    "the MCP server {server_name:?} is {} ({why}); try again later",
                    status.as_str()
                ),
                None => format!(
                    "the MCP server {server_name:?} is {}; try again later",
                    status.as_str()
                ),
            });
        };
        let arguments = match args {
            Value::Object(map) => map,
            Value::Null => serde_json::Map::new(),
            other => return Err(format!("arguments must be an object, got {other}")),
        };
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        let handle = peer
            .send_cancellable_request(request, PeerRequestOptions::no_options())
            .await
            .map_err(|e| {
                redact::mask_urls_in(&format!(
                    "the MCP server {server_name:?} failed the call: {e}"
                ))
            })?;
        // rmcp puts its own progress token on every request: progress is routed by it.
        let token = token_key(&handle.progress_token.0);
        if let Some(tx) = progress {
            server
                .progress
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(token.clone(), tx);
        }
        let request_id = handle.id.clone();
        let limit = server
            .spec
            .call_timeout_secs
            .map_or(CALL_TIMEOUT, Duration::from_secs);
        let outcome = tokio::select! {
            _ = cancel.cancelled() => {
                let note = CancelledNotificationParam::new(
                    Some(request_id),
                    Some("cancelled by the user".into()),
                );
                if let Err(e) = peer.notify_cancelled(note).await {
                    tracing::debug!(server = server_name, "cannot send the cancellation: {e}");
                }
                Err("cancelled".to_owned())
            }
            r = tokio::time::timeout(limit, handle.await_response()) => match r {
                Ok(Ok(ServerResult::CallToolResult(result))) => Ok(result),
                Ok(Ok(other)) => Err(format!(
                    "the MCP server {server_name:?} answered the call with something else: {}",
                    crate::provider::excerpt(&serde_json::to_string(&other).unwrap_or_default(), 300)
                )),
                Ok(Err(e)) => Err(redact::mask_urls_in(&format!("the MCP server {server_name:?} failed the call: {e}"))),
                Err(_) => Err(format!("{tool} timed out after {} s", limit.as_secs())),
            },
        };
        server
            .progress
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&token);
        let result = outcome?;
        let json = serde_json::to_value(&result).unwrap_or(Value::Null);
        let mut n = 0;
        Ok(convert::result_text(&json, |mime, bytes| {
            n += 1;
            let ext = mime.rsplit('/').next().unwrap_or("bin");
            let ext: String = ext.chars().filter(char::is_ascii_alphanumeric).collect();
            let path: PathBuf = save_dir.join(format!("mcp_{}_{n}.{ext}", uuid::Uuid::now_v7()));
            std::fs::create_dir_all(save_dir)
                .and_then(|()| std::fs::write(&path, bytes))
                .map_err(|e| e.to_string())?;
            Ok(path.display().to_string())
        }))
    }
}

/// A progress token as a map key.
pub(super) fn token_key(token: &rmcp::model::NumberOrString) -> String {
    match token {
        rmcp::model::NumberOrString::String(s) => s.to_string(),
        rmcp::model::NumberOrString::Number(n) => n.to_string(),
    }
}
