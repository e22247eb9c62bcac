//! `sendMessage` with its optional params by name. The generated client
//! (`AgentRpcClient::send_message`) takes every param positionally, so each param the
//! protocol grows would change every call of every test; tests call these instead.

use agent_proto::client::{Client, Error};
use agent_proto::rpc::AgentRpcClient;
use agent_proto::{MessageContent, ReasoningEffort, SendMessageResult, WhenBusy};

/// `sendMessage`'s optional params (all absent by default).
#[derive(Debug, Clone, Default)]
pub struct SendOptions {
    pub client_request_id: Option<String>,
    pub when_busy: Option<WhenBusy>,
    pub provider: Option<String>,
    pub model: Option<String>,
    pub reasoning_effort: Option<ReasoningEffort>,
    pub output_schema: Option<serde_json::Value>,
}

/// `sendMessage` by name, on the typed client.
pub trait SendByName {
    /// A send with no optional param.
    fn send_plain(
        &self,
        agent_id: String,
        content: MessageContent,
    ) -> impl Future<Output = Result<SendMessageResult, Error>> + Send;

    /// A send with the optional params `options` names.
    fn send_with(
        &self,
        agent_id: String,
        content: MessageContent,
        options: SendOptions,
    ) -> impl Future<Output = Result<SendMessageResult, Error>> + Send;
}

impl SendByName for Client {
    fn send_plain(
        &self,
        agent_id: String,
        content: MessageContent,
    ) -> impl Future<Output = Result<SendMessageResult, Error>> + Send {
        self.send_with(agent_id, content, SendOptions::default())
    }

    async fn send_with(
        &self,
        agent_id: String,
        content: MessageContent,
        options: SendOptions,
    ) -> Result<SendMessageResult, Error> {
        let SendOptions {
            client_request_id,
            when_busy,
            provider,
            model,
            reasoning_effort,
            output_schema,
        } = options;
        self.send_message(
            agent_id,
            content,
            client_request_id,
            when_busy,
            provider,
            model,
            reasoning_effort,
            output_schema,
        )
        .await
    }
}
