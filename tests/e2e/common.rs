//! Shared set-up for the scenarios.

use agentd_testkit::send::SendByName;
use std::path::Path;

use agent_proto::client::Client;
use agent_proto::rpc::AgentRpcClient;
use agent_proto::{Agent, Message};
use agentd_testkit::daemon::{TestDaemon, openai_config};
use agentd_testkit::mock_model::MockModel;
use agentd_testkit::scenario::{RunningAgent, Scenario};
pub(crate) use agentd_testkit::scenario::{answer_prompt, tool_agent, workspace_of as ws};

/// The daemon binary built for these tests.
pub(crate) fn bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_agentd"))
}

/// A mock model and a daemon whose default provider is that mock.
pub(crate) async fn start() -> (MockModel, TestDaemon) {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start(bin(), &openai_config(&mock.url())).await;
    (mock, daemon)
}

pub(crate) async fn new_agent(client: &Client, title: &str) -> Agent {
    client
        .create_agent(
            Some(title.into()),
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
        )
        .await
        .expect("createAgent")
}

/// Every message of an agent, oldest first.
pub(crate) async fn messages(client: &Client, agent_id: &str) -> Vec<Message> {
    client
        .list_messages(agent_id.into(), None, Some(500), None)
        .await
        .expect("listMessages")
        .messages
}

/// The JSON-RPC error code and `data.kind` of a failed call.
pub(crate) fn error_of(e: &agent_proto::client::Error) -> (i32, String) {
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

/// A daemon whose config is the mock provider plus `extra` TOML.
pub(crate) async fn start_with(extra: &str) -> (MockModel, TestDaemon) {
    let mock = MockModel::start().await;
    let config = agentd_testkit::daemon::openai_config_with(&mock.url(), extra);
    let daemon = TestDaemon::start(bin(), &config).await;
    (mock, daemon)
}

/// The scenario most tool tests start with: the mock as the daemon's provider, `extra`
/// TOML after it (`""` for none), a client and a tool agent in a temp workspace.
pub(crate) async fn tool_scenario(extra: &str) -> RunningAgent {
    Scenario::new(bin())
        .config(extra)
        .tool_agent(None)
        .start()
        .await
}

/// Permissions that let every tool run without asking.
pub(crate) const ALLOW_ALL: &str = "[permissions]\nread = \"allow\"\nwrite = \"allow\"\nexecute = \"allow\"\nnetwork = \"allow\"\n";

/// The model requests (POSTs) the mock received, in order.
pub(crate) fn model_requests(mock: &MockModel) -> Vec<agentd_testkit::mock_model::RecordedRequest> {
    mock.requests()
        .into_iter()
        .filter(|r| r.method == "POST")
        .collect()
}

/// The `toolResult` of a call in a transcript: (status, content, offload path).
pub(crate) fn tool_result_of(
    events: &[agent_proto::Event],
    id: &str,
) -> (agent_proto::ToolCallStatus, String, Option<String>) {
    events
        .iter()
        .find_map(|e| match &e.kind {
            agent_proto::EventKind::ToolResult {
                tool_call_id,
                status,
                content,
                offload_path,
                ..
            } if tool_call_id == id => Some((*status, content.clone(), offload_path.clone())),
            _ => None,
        })
        .unwrap_or_else(|| {
            panic!(
                "no toolResult for {id} in {:?}",
                agentd_testkit::events::type_names(events)
            )
        })
}

/// The `permissionRequested` event of a transcript.
pub(crate) fn permission_request(events: &[agent_proto::Event]) -> agent_proto::EventKind {
    events
        .iter()
        .find(|e| matches!(e.kind, agent_proto::EventKind::PermissionRequested { .. }))
        .map(|e| e.kind.clone())
        .unwrap_or_else(|| {
            panic!(
                "no permissionRequested in {:?}",
                agentd_testkit::events::type_names(events)
            )
        })
}

/// Runs one `bash` call with `args` as the user would let it run: a prompt it raises is
/// granted once. Returns the call's status and result, and the prompt if there was one.
pub(crate) async fn run_bash_granted(
    mock: &agentd_testkit::mock_model::MockModel,
    client: &Client,
    agent_id: &str,
    args: serde_json::Value,
) -> (
    agent_proto::ToolCallStatus,
    String,
    Option<agent_proto::EventKind>,
) {
    use agentd_testkit::mock_model::Reply;
    mock.push(Reply::openai_tool_calls(
        &[],
        &[("c", "bash", &args.to_string())],
    ));
    mock.push(Reply::openai_text(&["done"]));
    let (sent, mut events) = send_and_collect(client, agent_id, "go").await;
    let prompt = events
        .iter()
        .find(|e| matches!(e.kind, agent_proto::EventKind::PermissionRequested { .. }))
        .map(|e| e.kind.clone());
    if prompt.is_some() {
        events = answer_prompt(
            client,
            agent_id,
            &sent.assistant_message_id,
            "c",
            true,
            agent_proto::Remember::Once,
        )
        .await;
    }
    let (status, content, _) = tool_result_of(&events, "c");
    (status, content, prompt)
}

/// Subscribes, sends, and collects the run's events.
pub(crate) async fn send_and_collect(
    client: &Client,
    agent_id: &str,
    text: &str,
) -> (agent_proto::SendMessageResult, Vec<agent_proto::Event>) {
    let mut sub = client
        .subscribe_events(Some(agent_id.into()), None, None)
        .await
        .unwrap();
    let sent = client
        .send_plain(agent_id.into(), text.into())
        .await
        .unwrap();
    let events =
        agentd_testkit::events::collect_run(&mut sub, std::time::Duration::from_secs(30)).await;
    (sent, events)
}

/// The daemon's store, opened by the test itself to look at what only the database shows
/// (the daemon may still be running: SQLite's WAL lets both in). SQLite or PostgreSQL,
/// whichever the daemon runs on: statements use `$1`-style arguments, which both read.
pub(crate) async fn database(daemon: &TestDaemon) -> sqlx::AnyPool {
    sqlx::any::install_default_drivers();
    sqlx::pool::PoolOptions::new()
        .max_connections(1)
        .connect(&daemon.store_url())
        .await
        .unwrap_or_else(|e| panic!("cannot open the store {}: {e}", daemon.store_url()))
}

/// A fresh database on the tests' PostgreSQL cluster, or `None` (the test says it is
/// skipped) outside CI without PostgreSQL.
pub(crate) async fn fresh_postgres(test: &str) -> Option<String> {
    Some(agentd_testkit::postgres::cluster(test)?.database().await)
}

/// `PRAGMA integrity_check` of the daemon's SQLite file: `"ok"` when it is sound; on
/// PostgreSQL, which has no such check, `"ok"` once a statement runs.
pub(crate) async fn integrity_check(daemon: &TestDaemon) -> String {
    let db = database(daemon).await;
    let sql = match daemon.postgres_url() {
        None => "PRAGMA integrity_check",
        Some(_) => "SELECT 'ok'",
    };
    let (answer,): (String,) = sqlx::query_as(sql).fetch_one(&db).await.unwrap();
    db.close().await;
    answer
}

/// The daemon's store through the store's own API (a second store: it keeps nothing).
pub(crate) async fn store(daemon: &TestDaemon) -> agentd::store::Store {
    match daemon.postgres_url() {
        Some(url) => agentd::store::Store::connect(url).await,
        None => agentd::store::Store::open(&daemon.db_path()).await,
    }
    .unwrap()
}

/// A message's rows in `tool_executions`, in order: (tool call id, tool, status, output,
/// offload path).
pub(crate) async fn tool_executions(
    daemon: &TestDaemon,
    message_id: &str,
) -> Vec<(String, String, String, Option<String>, Option<String>)> {
    let db = database(daemon).await;
    let rows = sqlx::query_as(
        "SELECT tool_call_id, tool_name, status, output, offload_path FROM tool_executions \
         WHERE message_id = $1 ORDER BY id",
    )
    .bind(message_id)
    .fetch_all(&db)
    .await
    .unwrap();
    db.close().await;
    rows
}

/// The part of a system prompt before its environment section (`""` when the section is
/// all of it), after checking that the section is there, last, and says: today's UTC date,
/// this machine's OS, `workspace`, `git` (`no`, or `yes (branch main; clean)`...) and
/// `profile`.
pub(crate) fn before_environment(
    system: &str,
    workspace: &str,
    git: &str,
    profile: &str,
) -> String {
    let (before, section) = match system.rsplit_once("\n\n# Environment\n") {
        Some((before, section)) => (before.to_owned(), section),
        None => (
            String::new(),
            system
                .strip_prefix("# Environment\n")
                .unwrap_or_else(|| panic!("no environment section at the end of {system:?}")),
        ),
    };
    let today = |when: &str| {
        let out = std::process::Command::new("date")
            .args(["-u", "-d", when, "+%F"])
            .output()
            .expect("date");
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    };
    let lines: Vec<&str> = section.lines().collect();
    let date = lines.first().copied().unwrap_or_default();
    // Midnight may have passed between the request and this check.
    assert!(
        [today("now"), today("yesterday")]
            .iter()
            .any(|d| date == format!("- Date: {d} (UTC)")),
        "{section}"
    );
    assert_eq!(
        lines[1..],
        [
            format!("- OS: {} {}", std::env::consts::OS, std::env::consts::ARCH),
            format!("- Workspace: {workspace}"),
            format!("- Git repository: {git}"),
            format!("- Profile: {profile}"),
        ],
        "{system}"
    );
    before
}
