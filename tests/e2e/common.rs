//! Shared set-up for the scenarios.

use std::path::Path;

use agent_proto::client::Client;
use agent_proto::rpc::AgentRpcClient;
use agent_proto::{Agent, Message};
use agentd_testkit::daemon::{TestDaemon, openai_config};
use agentd_testkit::mock_model::MockModel;

/// The daemon binary built for these tests.
pub fn bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_agentd"))
}

/// A mock model and a daemon whose default provider is that mock.
pub async fn start() -> (MockModel, TestDaemon) {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start(bin(), &openai_config(&mock.url())).await;
    (mock, daemon)
}

pub async fn new_agent(client: &Client, title: &str) -> Agent {
    client
        .create_agent(Some(title.into()), None, None, None, None, None, None, None)
        .await
        .expect("createAgent")
}

/// Every message of an agent, oldest first.
pub async fn messages(client: &Client, agent_id: &str) -> Vec<Message> {
    client
        .list_messages(agent_id.into(), None, Some(500), None)
        .await
        .expect("listMessages")
        .messages
}

/// The JSON-RPC error code and `data.kind` of a failed call.
pub fn error_of(e: &agent_proto::client::Error) -> (i32, String) {
    match e {
        agent_proto::client::Error::Call(obj) => {
            let kind = obj
                .data()
                .and_then(|d| serde_json::from_str::<serde_json::Value>(d.get()).ok())
                .and_then(|d| d["kind"].as_str().map(str::to_owned))
                .unwrap_or_default();
            (obj.code(), kind)
        }
        other => panic!("expected an RPC error, got {other:?}"),
    }
}
