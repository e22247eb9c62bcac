//! The `#[rpc]` trait and the schema (`agent_proto::schema`) name the same params: every
//! method of the trait is called through its generated client with every param given,
//! and the names it sends are the schema's.

use std::collections::BTreeSet;
use std::future::Future;
use std::sync::Mutex;

use agent_proto::rpc::AgentRpcClient;
use agent_proto::{
    AgentMode, ExportFormat, ListOrder, McpServerSpec, MessageContent, PermissionLevel, Remember,
};
use jsonrpsee::core::client::{BatchResponse, ClientT, Error, Subscription, SubscriptionClientT};
use jsonrpsee::core::params::BatchRequestBuilder;
use jsonrpsee::core::traits::ToRpcParams;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

/// A client that records what it would send and answers nothing.
#[derive(Default)]
struct Recorder {
    calls: Mutex<Vec<(String, Value)>>,
}

impl Recorder {
    fn record(&self, method: &str, params: impl ToRpcParams) {
        let params = params
            .to_rpc_params()
            .unwrap()
            .map_or(Value::Null, |raw| serde_json::from_str(raw.get()).unwrap());
        self.calls.lock().unwrap().push((method.to_owned(), params));
    }
}

async fn refused<T>() -> Result<T, Error> {
    Err(Error::Custom("recorded, not sent".into()))
}

impl ClientT for Recorder {
    fn notification<P: ToRpcParams + Send>(
        &self,
        method: &str,
        params: P,
    ) -> impl Future<Output = Result<(), Error>> + Send {
        self.record(method, params);
        refused()
    }

    fn request<R: DeserializeOwned, P: ToRpcParams + Send>(
        &self,
        method: &str,
        params: P,
    ) -> impl Future<Output = Result<R, Error>> + Send {
        self.record(method, params);
        refused()
    }

    fn batch_request<'a, R: DeserializeOwned + std::fmt::Debug + 'a>(
        &self,
        _batch: BatchRequestBuilder<'a>,
    ) -> impl Future<Output = Result<BatchResponse<'a, R>, Error>> + Send {
        refused()
    }
}

impl SubscriptionClientT for Recorder {
    fn subscribe<'a, N: DeserializeOwned, P: ToRpcParams + Send>(
        &self,
        method: &'a str,
        params: P,
        _unsubscribe: &'a str,
    ) -> impl Future<Output = Result<Subscription<N>, Error>> + Send {
        self.record(method, params);
        refused()
    }

    fn subscribe_to_method<N: DeserializeOwned>(
        &self,
        _method: &str,
    ) -> impl Future<Output = Result<Subscription<N>, Error>> + Send {
        refused()
    }
}

#[tokio::test]
async fn the_trait_sends_the_params_the_schema_names() {
    let c = Recorder::default();
    let s = || Some("x".to_owned());
    let x = || "x".to_owned();
    let spec: McpServerSpec = serde_json::from_value(json!({"name": "m"})).unwrap();
    // Every method of the trait, every param given.
    let _ = c.initialize(s(), s(), Some(1)).await;
    let _ = c
        .create_agent(
            s(),
            Some(AgentMode::Chat),
            s(),
            s(),
            s(),
            s(),
            s(),
            Some(json!({})),
            None,
        )
        .await;
    let _ = c.get_agent(x()).await;
    let _ = c
        .list_agents(s(), Some(1), s(), Some(true), Some(true))
        .await;
    let _ = c
        .update_agent(
            x(),
            s(),
            Some(true),
            Some(true),
            s(),
            s(),
            s(),
            Some(json!({})),
            s(),
        )
        .await;
    let _ = c.set_agent_mode(x(), AgentMode::Agent).await;
    let _ = c.delete_agent(x()).await;
    let _ = c.fork_agent(x(), s()).await;
    let _ = c.export_agent(x(), ExportFormat::Json).await;
    let _ = c.import_agent(json!({}), s(), Some(true)).await;
    let _ = c
        .list_messages(x(), s(), Some(1), Some(ListOrder::Asc))
        .await;
    let _ = c
        .send_message(
            x(),
            MessageContent::from("hi"),
            s(),
            Some(agent_proto::WhenBusy::Queue),
            s(),
            s(),
            Some(agent_proto::ReasoningEffort::Low),
            Some(serde_json::json!({"type": "object"})),
        )
        .await;
    let _ = c.cancel_loop(x()).await;
    let _ = c.cancel_queued_message(x(), s()).await;
    let _ = c.compact_context(x(), Some(2)).await;
    let _ = c.continue_loop(x()).await;
    let _ = c
        .handle_permission_response(
            x(),
            x(),
            true,
            Some(PermissionLevel::Read),
            Some(Remember::Once),
        )
        .await;
    let _ = c
        .answer_question(
            x(),
            x(),
            Some(vec![agent_proto::QuestionAnswer::default()]),
            Some(false),
        )
        .await;
    let _ = c.get_plan(x()).await;
    let _ = c.pause_session(x()).await;
    let _ = c.resume_session(x()).await;
    let _ = c.list_tools(s()).await;
    let _ = c.get_message_request_preview(x(), s()).await;
    let _ = c.set_context_edge(x(), s()).await;
    let _ = c.regenerate(x(), x()).await;
    let _ = c.list_mcp_servers().await;
    let _ = c.add_mcp_server(spec).await;
    let _ = c.update_mcp_server(x(), json!({})).await;
    let _ = c.remove_mcp_server(x()).await;
    let _ = c.restart_mcp_server(x()).await;
    let _ = c.get_session(x()).await;
    let _ = c.list_profiles().await;
    let _ = c
        .complete(
            s(),
            s(),
            Some(Vec::new()),
            s(),
            s(),
            Some(1),
            Some(0.5),
            Some(true),
        )
        .await;
    let _ = c.list_skills(x()).await;
    let _ = c.list_providers().await;
    let _ = c.list_models(s(), Some(true)).await;
    let _ = c.get_usage(s()).await;
    let _ = c.search_messages(x(), s(), Some(1)).await;
    let _ = c.test_provider(s(), s()).await;
    let _ = c.get_turn_diff(x(), x()).await;
    let _ = c.revert_to(x(), x(), Some(true), Some(false)).await;
    let _ = c.subscribe_events(s(), Some(1), Some(true)).await;

    let calls = c.calls.into_inner().unwrap();
    let schema = agent_proto::schema::methods();
    let mut mismatches = Vec::new();
    for (method, params) in &calls {
        let sent: BTreeSet<&str> = params
            .as_object()
            .map(|p| p.keys().map(String::as_str).collect())
            .unwrap_or_default();
        let Some(described) = schema.iter().find(|m| m.name == method) else {
            mismatches.push(format!("{method}: not in the schema"));
            continue;
        };
        let named: BTreeSet<&str> = described.param_names().into_iter().collect();
        if sent != named {
            mismatches.push(format!(
                "{method}: the trait sends {sent:?}, the schema names {named:?}"
            ));
        }
    }
    assert!(mismatches.is_empty(), "{mismatches:#?}");
    // Every method of the schema was called here (unsubscribe is the subscription's).
    let called: BTreeSet<&str> = calls.iter().map(|(m, _)| m.as_str()).collect();
    let described: BTreeSet<&str> = schema
        .iter()
        .map(|m| m.name)
        .filter(|m| *m != "unsubscribe")
        .collect();
    assert_eq!(called, described);
}
