//! Calling a tool of a running server: the request with its progress token, the timeout
//! and cancellation (both sent on to the server; timeouts in a row restart it), an answer
//! the transport dropped for its size (the call fails at once, saying so), and the result,
//! whatever its shape, turned into text for the model.

use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use agent_proto::McpServerStatus;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotificationParam, ClientRequest,
};
use rmcp::service::{Peer, PeerRequestOptions, RoleClient};
use serde_json::Value;
use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;

use super::process::Oversized;
use super::{CALL_TIMEOUT, McpManager, Progress, Server, convert, redact};

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
        let peer = self.ready_peer(&server, server_name)?;
        let arguments = match args {
            Value::Object(map) => map,
            Value::Null => serde_json::Map::new(),
            other => return Err(format!("arguments must be an object, got {other}")),
        };
        let mut dropped = server.oversized.subscribe();
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
                .listen(&token, tx);
        }
        let request_id = handle.id.clone();
        let id = token_key(&request_id);
        let limit = server
            .spec
            .call_timeout_secs
            .map_or(CALL_TIMEOUT, Duration::from_secs);
        let tell_server = |why: &str| {
            let note = CancelledNotificationParam::new(Some(request_id.clone()), Some(why.into()));
            let peer = peer.clone();
            async move {
                if let Err(e) = peer.notify_cancelled(note).await {
                    tracing::debug!(server = server_name, "cannot send the cancellation: {e}");
                }
            }
        };
        let mut timed_out = false;
        // Biased: an answer dropped for its size is reported before rmcp fails the call
        // with a bare "Transport closed" (HTTP), and that reason must win.
        let outcome = tokio::select! {
            biased;
            _ = cancel.cancelled() => {
                tell_server("cancelled by the user").await;
                Err("cancelled".to_owned())
            }
            too_big = oversized_answer(&mut dropped, &id) => {
                Err(format!("the MCP server {server_name:?} could not answer: {}", too_big.describe()))
            }
            r = tokio::time::timeout(limit, handle.await_response()) => match r {
                // Any shape: rmcp types a result with a part it does not know as something
                // else, and `result_text` keeps what it can of it.
                Ok(Ok(result)) => serde_json::to_value(&result).map_err(|e| e.to_string()),
                Ok(Err(e)) => Err(redact::mask_urls_in(&format!("the MCP server {server_name:?} failed the call: {e}"))),
                Err(_) => {
                    timed_out = true;
                    tell_server("timed out").await;
                    Err(format!("{tool} timed out after {} s", limit.as_secs()))
                }
            },
        };
        server
            .progress
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .listening
            .remove(&token);
        if timed_out {
            self.count_timeout(&server);
        } else if !cancel.is_cancelled() {
            server.lock().timeouts_in_a_row = 0;
        }
        Ok(saved_result_text(&outcome?, save_dir))
    }

    /// The server's peer when it is ready; otherwise why not, for the model (and the
    /// supervisor is started again for an enabled server nobody watches).
    fn ready_peer(
        &self,
        server: &Arc<Server>,
        server_name: &str,
    ) -> Result<Peer<RoleClient>, String> {
        let (peer, status) = {
            let st = server.lock();
            (
                st.peer.clone(),
                st.status.unwrap_or(McpServerStatus::Stopped),
            )
        };
        if let Some(peer) = peer.filter(|_| status == McpServerStatus::Ready) {
            return Ok(peer);
        }
        if server.spec.enabled && !server.lock().supervised {
            self.supervise(server);
        }
        let why = server.lock().last_error.clone();
        Err(match why {
            Some(why) => format!(
                "the MCP server {server_name:?} is {} ({why}); try again later",
                status.as_str()
            ),
            None => format!(
                "the MCP server {server_name:?} is {}; try again later",
                status.as_str()
            ),
        })
    }

    /// One more call of the server timed out: restarts it after `timeouts_before_restart`
    /// in a row (a server that stopped answering).
    fn count_timeout(&self, server: &Server) {
        let limit = self.limits.timeouts_before_restart;
        let restart = {
            let mut st = server.lock();
            st.timeouts_in_a_row += 1;
            let n = st.timeouts_in_a_row;
            if limit > 0 && n >= limit {
                st.timeouts_in_a_row = 0;
                st.last_error = Some(format!("restarted: {n} calls in a row timed out"));
                true
            } else {
                false
            }
        };
        if restart {
            tracing::warn!(
                server = server.spec.name,
                "{limit} calls in a row timed out; restarting the server"
            );
            server.restart.notify_one();
        }
    }
}

/// The answer to request `id` that the transport dropped for its size (also one whose id
/// could not be read); pending while none comes.
pub(super) async fn oversized_answer(
    dropped: &mut broadcast::Receiver<Oversized>,
    id: &str,
) -> Oversized {
    loop {
        match dropped.recv().await {
            Ok(message) if message.id.as_deref().is_none_or(|i| i == id) => return message,
            Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
            Err(broadcast::error::RecvError::Closed) => std::future::pending().await,
        }
    }
}

/// A progress token as a map key.
pub(super) fn token_key(token: &rmcp::model::NumberOrString) -> String {
    match token {
        rmcp::model::NumberOrString::String(s) => s.to_string(),
        rmcp::model::NumberOrString::Number(n) => n.to_string(),
    }
}

/// A call's result as text for the model, its binary parts saved as files in `save_dir`.
fn saved_result_text(json: &Value, save_dir: &Path) -> (String, bool) {
    let mut n = 0;
    convert::result_text(json, |mime, bytes| {
        n += 1;
        let ext = mime.rsplit('/').next().unwrap_or("bin");
        let ext: String = ext.chars().filter(char::is_ascii_alphanumeric).collect();
        let path: PathBuf = save_dir.join(format!("mcp_{}_{n}.{ext}", uuid::Uuid::now_v7()));
        std::fs::create_dir_all(save_dir)
            .and_then(|()| std::fs::write(&path, bytes))
            .map_err(|e| e.to_string())?;
        Ok(path.display().to_string())
    })
}
