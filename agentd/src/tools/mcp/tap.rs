//! Progress routed as the transport reads it. rmcp hands each notification to the client
//! handler in a task of its own, but a call's result straight to the caller: a
//! `notifications/progress` sent right before the result could reach the handler after
//! the call had ended and stopped listening, and was lost. So the transport is wrapped:
//! a progress notification goes to its call's channel when it is read, before the next
//! message (the result) is, and a call's progress always comes before its result. It must
//! not wait: the channel takes it at once or it is dropped (a call whose progress is not
//! read keeps up no other message of the server). A call's request is sent before its
//! token can be registered, so progress for a token nobody listens to yet is kept (the
//! last `EARLY_PROGRESS`) and handed over when its call listens.

use std::borrow::Cow;
use std::sync::{PoisonError, Weak};

use rmcp::RoleClient;
use rmcp::model::{JsonRpcMessage, JsonRpcNotification, ServerNotification};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;

use super::call::token_key;
use super::{Progress, Server};

/// A server's transport whose progress notifications reach their calls as they are read.
pub(super) struct ProgressTap<T> {
    inner: T,
    server: Weak<Server>,
}

impl<T> ProgressTap<T> {
    pub(super) fn new(inner: T, server: Weak<Server>) -> ProgressTap<T> {
        ProgressTap { inner, server }
    }

    /// Hands a progress notification to the call it is about, if one listens.
    fn route(&self, message: &RxJsonRpcMessage<RoleClient>) {
        let JsonRpcMessage::Notification(JsonRpcNotification {
            notification: ServerNotification::ProgressNotification(notification),
            ..
        }) = message
        else {
            return;
        };
        let Some(server) = self.server.upgrade() else {
            return;
        };
        let params = &notification.params;
        let token = token_key(&params.progress_token.0);
        let progress = Progress {
            progress: params.progress,
            total: params.total,
            message: params.message.clone(),
            output: None,
        };
        // A call's request goes out before its token can be registered: what comes first
        // is kept for it (`ProgressRoutes::listen`).
        let routed = server
            .progress
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .route(token, progress);
        if !routed {
            tracing::debug!(
                server = server.spec.name,
                "a call's progress came faster than it is sent on: dropped"
            );
        }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for ProgressTap<T> {
    type Error = T::Error;

    fn name() -> Cow<'static, str> {
        T::name()
    }

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let message = self.inner.receive().await?;
        self.route(&message);
        Some(message)
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.close()
    }
}
