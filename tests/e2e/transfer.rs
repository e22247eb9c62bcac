//! forkAgent, exportAgent and importAgent end to end: copies stand alone (their own ids,
//! offload files and workspace), the model gets the copied history, and bad input gets an
//! error that says what is wrong.

use agentd_testkit::send::SendByName;
use std::path::{Path, PathBuf};
use std::time::Duration;

use agent_proto::client::Client;
use agent_proto::rpc::AgentRpcClient;
use agent_proto::{
    Agent, AgentMode, Block, EventKind, ExportFormat, Message, MessageStatus, ToolCallBlock,
    ToolCallStatus,
};
use agentd_testkit::daemon::TEST_API_KEY;
use agentd_testkit::events::{collect_run, collect_until, collect_until_text};
use agentd_testkit::mock_model::Reply;
use agentd_testkit::raw::{Framing, RawConn};
use agentd_testkit::transcript::assert_calls_paired;
use serde_json::{Value, json};

use crate::common::{
    ALLOW_ALL, before_environment, error_of, messages, model_requests, new_agent, send_and_collect,
    start_with, tool_result_of,
};

/// An agent in `agent` mode (its own default workspace) with three rounds: a tool call
/// whose output is offloaded, then two plain answers. Returns it and its offload path.
async fn agent_with_history(
    client: &Client,
    mock: &agentd_testkit::mock_model::MockModel,
) -> (Agent, String) {
    let agent = client
        .create_agent(
            Some("counter".into()),
            Some(AgentMode::Agent),
            None,
            None,
            Some("You count.".into()),
            None,
            None,
            None,
            None,
        )
        .await
        .unwrap();
    mock.push(Reply::openai_tool_calls(
        &["let me count"],
        &[("big", "bash", r#"{"command": "seq 1 3000"}"#)],
    ));
    mock.push(Reply::openai_reasoning_text(&["3000 lines"], &["counted"]));
    let (_, events) = send_and_collect(client, &agent.id, "count").await;
    let (status, _, offload) = tool_result_of(&events, "big");
    assert_eq!(status, ToolCallStatus::Success);
    let offload = offload.expect("the output was offloaded");
    mock.push(Reply::openai_text(&["second answer"]));
    send_and_collect(client, &agent.id, "more").await;
    mock.push(Reply::openai_text(&["third answer"]));
    send_and_collect(client, &agent.id, "last").await;
    (agent, offload)
}

/// A message as JSON with what a copy changes taken out: its id and agent id, and the
/// agent's session folder in paths.
fn comparable(message: &Message, session_dir: &Path) -> Value {
    let mut v = serde_json::to_value(message).unwrap();
    let obj = v.as_object_mut().unwrap();
    obj.remove("id");
    obj.remove("agentId");
    let text = v
        .to_string()
        .replace(&session_dir.display().to_string(), "<SESSION>");
    serde_json::from_str(&text).unwrap()
}

fn session_dir(data_dir: &Path, agent_id: &str) -> PathBuf {
    data_dir.join("sessions").join(agent_id)
}

/// The offload path a message's toolCall block `id` names.
fn offload_of(messages: &[Message], id: &str) -> String {
    messages
        .iter()
        .flat_map(|m| &m.blocks)
        .find_map(|b| match b {
            Block::ToolCall(ToolCallBlock {
                tool_call_id,
                result: Some(r),
                ..
            }) if tool_call_id == id => r.offload_path.clone(),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no offloaded call {id}"))
}

async fn wait_created(
    sub: &mut agent_proto::client::Subscription<agent_proto::Event>,
    agent_id: &str,
) -> Agent {
    let events = collect_until(
        sub,
        Duration::from_secs(10),
        |e| matches!(&e.kind, EventKind::AgentCreated { agent } if agent.id == agent_id),
    )
    .await;
    match &events.last().unwrap().kind {
        EventKind::AgentCreated { agent } => agent.clone(),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_fork_copies_a_prefix_with_its_offloads_and_outlives_its_source() {
    let (mock, daemon) = start_with(ALLOW_ALL).await;
    let client = daemon.client().await;
    let (source, source_offload) = agent_with_history(&client, &mock).await;
    let source_messages = messages(&client, &source.id).await;
    assert_eq!(source_messages.len(), 6);
    let full = std::fs::read_to_string(&source_offload).unwrap();

    let mut all = client.subscribe_events(None, None, None).await.unwrap();
    let at = &source_messages[3]; // the answer of the second round
    let fork = client
        .fork_agent(source.id.clone(), Some(at.id.clone()))
        .await
        .unwrap();
    assert_eq!(wait_created(&mut all, &fork.id).await, fork);

    assert_ne!(fork.id, source.id);
    assert_eq!(fork.title, "counter (fork)");
    assert_eq!(fork.parent_agent_id.as_deref(), Some(source.id.as_str()));
    assert_eq!(fork.fork_message_id.as_deref(), Some(at.id.as_str()));
    assert_eq!(
        (&fork.mode, &fork.provider, &fork.model, &fork.system_prompt),
        (
            &source.mode,
            &source.provider,
            &source.model,
            &source.system_prompt
        )
    );
    assert_eq!(fork.settings, source.settings);
    let fork_ws = PathBuf::from(fork.workspace.clone().unwrap());
    assert_ne!(fork.workspace, source.workspace, "a workspace of its own");
    assert!(fork_ws.is_dir() && fork_ws.ends_with(&fork.id));
    let wire = serde_json::to_value(&fork).unwrap();
    assert_eq!(wire["parentAgentId"], json!(source.id));
    let plain = serde_json::to_value(&source).unwrap();
    assert!(plain.get("parentAgentId").is_none() && plain.get("forkMessageId").is_none());

    // Its history is the source's prefix, with new ids and its own offload file.
    let fork_messages = messages(&client, &fork.id).await;
    assert_eq!(fork_messages.len(), 4);
    let data = daemon.data_dir();
    for (copy, orig) in fork_messages.iter().zip(&source_messages) {
        assert_ne!(copy.id, orig.id);
        assert_eq!(copy.agent_id, fork.id);
        assert_eq!(
            comparable(copy, &session_dir(data, &fork.id)),
            comparable(orig, &session_dir(data, &source.id))
        );
    }
    assert!(fork_messages.iter().any(|m| m.text() == "second answer"));
    let fork_offload = offload_of(&fork_messages, "big");
    assert_eq!(
        Path::new(&fork_offload),
        session_dir(data, &fork.id).join("tool_big.offload")
    );
    assert_eq!(std::fs::read_to_string(&fork_offload).unwrap(), full);
    assert_eq!(
        std::fs::read_to_string(&source_offload).unwrap(),
        full,
        "the source's file is untouched"
    );
    assert_eq!(messages(&client, &source.id).await, source_messages);

    // A run in the fork sends the copied history (with the fork's stub) to the model.
    mock.push(Reply::openai_text(&["fork answer"]));
    send_and_collect(&client, &fork.id, "in the fork").await;
    let requests = model_requests(&mock);
    let last = requests.last().unwrap();
    let sent: Vec<(String, String)> = last.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap_or_default().to_owned(),
                m["content"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    let contents: Vec<&str> = sent.iter().map(|(_, c)| c.as_str()).collect();
    assert_eq!(sent[0].0, "system");
    let workspace = fork.workspace.clone().unwrap_or_else(|| "none".into());
    assert_eq!(
        before_environment(&sent[0].1, &workspace, "no", "none"),
        "You count."
    );
    for expected in ["count", "more", "second answer", "in the fork"] {
        assert!(contents.contains(&expected), "{expected:?} not in {sent:?}");
    }
    assert!(
        !contents
            .iter()
            .any(|c| c.contains("third answer") || *c == "last")
    );
    let tool = sent.iter().find(|(role, _)| role == "tool").unwrap();
    assert!(tool.1.contains(&fork_offload), "{}", tool.1);
    assert!(!tool.1.contains(&source_offload));
    assert_calls_paired(&requests);

    // Deleting the source leaves the fork whole.
    client.delete_agent(source.id.clone()).await.unwrap();
    assert!(!Path::new(&source_offload).exists());
    assert_eq!(std::fs::read_to_string(&fork_offload).unwrap(), full);
    let after = messages(&client, &fork.id).await;
    assert_eq!(after.len(), 6);
    assert_eq!(after[..4], fork_messages[..]);
    assert_eq!(after[5].text(), "fork answer");
    assert_eq!(
        client
            .get_agent(fork.id.clone())
            .await
            .unwrap()
            .parent_agent_id,
        Some(source.id.clone())
    );
}

#[tokio::test]
async fn a_fork_during_a_run_holds_the_unfinished_answer_as_interrupted() {
    let (mock, daemon) = start_with(ALLOW_ALL).await;
    let client = daemon.client().await;
    let source = new_agent(&client, "busy").await;
    let mut sub = client
        .subscribe_events(Some(source.id.clone()), None, None)
        .await
        .unwrap();
    mock.push(Reply::openai_text(&["partial ", "never"]).stall_after(1));
    let sent = client
        .send_plain(source.id.clone(), "go".into())
        .await
        .unwrap();
    collect_until_text(&mut sub, Duration::from_secs(10), "partial ").await;

    // Whole history (no messageId) while the answer is being written.
    let fork = client.fork_agent(source.id.clone(), None).await.unwrap();
    assert_eq!(
        fork.fork_message_id.as_deref(),
        Some(sent.assistant_message_id.as_str())
    );
    let copied = messages(&client, &fork.id).await;
    assert_eq!(copied.len(), 2);
    assert_eq!(copied[0].text(), "go");
    assert_eq!(copied[1].status, MessageStatus::Interrupted);
    assert_eq!(
        client.get_session(fork.id.clone()).await.unwrap().status,
        agent_proto::SessionStatus::Idle
    );

    // The source's run goes on untouched; cancel it.
    assert!(
        client
            .cancel_loop(source.id.clone())
            .await
            .unwrap()
            .cancelled
    );
    collect_run(&mut sub, Duration::from_secs(10)).await;
    let source_messages = messages(&client, &source.id).await;
    assert_eq!(source_messages[1].status, MessageStatus::Cancelled);
    assert_eq!(source_messages[1].id, sent.assistant_message_id);

    // The fork continues from its interrupted answer.
    mock.push(Reply::openai_text(&["resumed"]));
    let mut fork_sub = client
        .subscribe_events(Some(fork.id.clone()), None, None)
        .await
        .unwrap();
    let continued = client.continue_loop(fork.id.clone()).await.unwrap();
    assert_eq!(continued.assistant_message_id, copied[1].id);
    collect_run(&mut fork_sub, Duration::from_secs(10)).await;
    let after = messages(&client, &fork.id).await;
    assert_eq!(after[1].status, MessageStatus::Done);
    assert!(after[1].text().ends_with("resumed"), "{}", after[1].text());
}

#[tokio::test]
async fn export_shows_a_transcript_and_json_round_trips_through_import() {
    let (mock, daemon) = start_with(ALLOW_ALL).await;
    let client = daemon.client().await;
    let (source, source_offload) = agent_with_history(&client, &mock).await;
    let source_messages = messages(&client, &source.id).await;
    let full = std::fs::read_to_string(&source_offload).unwrap();

    let md = client
        .export_agent(source.id.clone(), ExportFormat::Markdown)
        .await
        .unwrap();
    assert_eq!(md.format, ExportFormat::Markdown);
    for piece in [
        "# counter",
        "- Provider: `mock`, model `mock-model`",
        "## System prompt",
        "You count.",
        "### User",
        "### Assistant",
        "count",
        "let me count",
        "**Tool call** `bash` (success)",
        "\"command\": \"seq 1 3000\"",
        "[output offloaded",
        &format!("*Full output offloaded to `{source_offload}`.*"),
        "<summary>Reasoning</summary>",
        "3000 lines",
        "counted",
        "second answer",
        "third answer",
    ] {
        assert!(
            md.content.contains(piece),
            "{piece:?} not in:\n{}",
            md.content
        );
    }
    assert!(!md.content.contains(TEST_API_KEY));

    let exported = client
        .export_agent(source.id.clone(), ExportFormat::Json)
        .await
        .unwrap();
    assert!(!exported.content.contains(TEST_API_KEY));
    let doc: Value = serde_json::from_str(&exported.content).unwrap();
    assert_eq!(doc["format"], "agentd-export");
    assert_eq!(doc["version"], 1);
    assert!(doc["agent"].get("status").is_none());
    assert!(
        doc["agent"].get("workspace").is_none(),
        "the daemon's own workspace folder is not exported"
    );
    assert_eq!(doc["messages"].as_array().unwrap().len(), 6);
    assert_eq!(doc["messages"][1]["parentId"], json!(source_messages[0].id));
    assert_eq!(doc["offloads"]["big"], json!(full));

    let mut all = client.subscribe_events(None, None, None).await.unwrap();
    // As the content string, and again as the object: two separate agents.
    let first = client
        .import_agent(Value::String(exported.content.clone()), None, None)
        .await
        .unwrap();
    assert_eq!(wait_created(&mut all, &first.id).await, first);
    let second = client.import_agent(doc.clone(), None, None).await.unwrap();
    assert_eq!(wait_created(&mut all, &second.id).await, second);
    assert_ne!(first.id, second.id);
    let data = daemon.data_dir();
    for imported in [&first, &second] {
        assert_ne!(imported.id, source.id);
        assert_eq!(imported.title, "counter");
        assert_eq!(imported.parent_agent_id, None);
        assert_eq!(
            (&imported.mode, &imported.model, &imported.system_prompt),
            (&source.mode, &source.model, &source.system_prompt)
        );
        let ws = PathBuf::from(imported.workspace.clone().unwrap());
        assert!(ws.is_dir() && ws.ends_with(&imported.id), "{ws:?}");
        let got = messages(&client, &imported.id).await;
        assert_eq!(got.len(), source_messages.len());
        for (copy, orig) in got.iter().zip(&source_messages) {
            assert_ne!(copy.id, orig.id);
            assert_eq!(
                comparable(copy, &session_dir(data, &imported.id)),
                comparable(orig, &session_dir(data, &source.id))
            );
        }
        let offload = offload_of(&got, "big");
        assert_eq!(
            Path::new(&offload),
            session_dir(data, &imported.id).join("tool_big.offload")
        );
        assert_eq!(std::fs::read_to_string(&offload).unwrap(), full);
    }

    // An import is complete without its source: delete it, the import still reads back.
    client.delete_agent(source.id.clone()).await.unwrap();
    let again = client
        .export_agent(first.id.clone(), ExportFormat::Json)
        .await
        .unwrap();
    let again: Value = serde_json::from_str(&again.content).unwrap();
    assert_eq!(again["offloads"]["big"], json!(full));
}

#[tokio::test]
async fn bad_transfer_requests_get_clear_errors() {
    let (mock, daemon) = start_with(ALLOW_ALL).await;
    let client = daemon.client().await;
    let agent = crate::common::new_agent(&client, "plain").await;
    let other = crate::common::new_agent(&client, "other").await;

    let e = client.fork_agent("nope".into(), None).await.unwrap_err();
    assert_eq!(error_of(&e).1, "agentNotFound");
    let e = client
        .fork_agent(agent.id.clone(), Some("no-such-message".into()))
        .await
        .unwrap_err();
    assert_eq!(error_of(&e), (-32003, "messageNotFound".into()));
    // A message of another agent is not one of this agent's.
    mock.push(Reply::openai_text(&["hi"]));
    let (sent, _) = send_and_collect(&client, &other.id, "hello").await;
    let e = client
        .fork_agent(agent.id.clone(), Some(sent.user_message_id))
        .await
        .unwrap_err();
    assert_eq!(error_of(&e).1, "messageNotFound");

    let mut raw = RawConn::connect(daemon.socket(), Framing::Ndjson).await;
    let cases = [
        (
            "exportAgent",
            json!({"agentId": agent.id, "format": "pdf"}),
            -32602,
            vec!["pdf", "markdown", "json"],
        ),
        (
            "exportAgent",
            json!({"agentId": agent.id}),
            -32602,
            vec!["format"],
        ),
        (
            "importAgent",
            json!({"data": {"format": "something-else", "version": 1}}),
            -32602,
            vec!["data.format", "agentd-export"],
        ),
        (
            "importAgent",
            json!({"data": {"format": "agentd-export", "version": 9}}),
            -32602,
            vec!["data.version 9 is not supported"],
        ),
        (
            "importAgent",
            json!({"data": "not json at all"}),
            -32602,
            vec!["not JSON text"],
        ),
        (
            "importAgent",
            json!({"data": {"format": "agentd-export", "version": 1,
                            "agent": {"title": "t", "mode": "chat", "provider": "p", "model": "m"},
                            "messages": [{"id": "m1", "role": "robot"}]}}),
            -32602,
            vec!["data.messages[0]"],
        ),
    ];
    for (method, params, code, words) in cases {
        let answer = raw.call(method, params.clone()).await;
        let error = &answer["error"];
        assert_eq!(error["code"], json!(code), "{params}: {answer}");
        assert_eq!(error["data"]["kind"], "invalidParams", "{answer}");
        let message = error["message"].as_str().unwrap();
        for word in words {
            assert!(message.contains(word), "{message:?} lacks {word:?}");
        }
    }
    // Nothing half-made was left behind.
    let agents = client
        .list_agents(None, None, None, None, None)
        .await
        .unwrap()
        .agents;
    assert_eq!(agents.len(), 2);

    // An unknown provider is accepted on import; a run then fails as for any agent.
    let imported = client
        .import_agent(
            json!({
                "format": "agentd-export", "version": 1,
                "agent": {"title": "elsewhere", "mode": "chat", "provider": "gone", "model": "m"},
                "messages": []
            }),
            None,
            None,
        )
        .await
        .unwrap();
    assert_eq!(imported.provider, "gone");
    assert_eq!(imported.workspace, None);
    let (_, events) = send_and_collect(&client, &imported.id, "hi").await;
    assert!(
        events.iter().any(|e| matches!(
            &e.kind,
            EventKind::Error { kind, .. } if kind == agent_proto::run_error::PROVIDER_NOT_CONFIGURED
        )),
        "{:?}",
        agentd_testkit::events::type_names(&events)
    );
}

/// An export that asks for everything: allow-all permissions and a workspace of the
/// exporter's choosing.
fn hostile_export(workspace: &Path) -> Value {
    json!({
        "format": "agentd-export", "version": 1,
        "agent": {
            "title": "hostile", "mode": "agent", "provider": "mock", "model": "mock-model",
            "workspace": workspace.display().to_string(),
            "settings": {
                "permissions": {"read": "allow", "write": "allow", "execute": "allow", "network": "allow"},
                "maxSteps": 7
            }
        },
        "messages": []
    })
}

#[tokio::test]
async fn an_import_drops_the_exported_permissions_and_keeps_its_workspace_only_when_asked() {
    // The daemon's defaults: execute asks.
    let (mock, daemon) = start_with("").await;
    let client = daemon.client().await;
    let victim = tempfile::tempdir().unwrap();
    let victim_path = std::fs::canonicalize(victim.path()).unwrap();
    let doc = hostile_export(&victim_path);

    // By default: a folder of its own under the data dir, and the daemon's permissions.
    let imported = client.import_agent(doc.clone(), None, None).await.unwrap();
    let ws = PathBuf::from(imported.workspace.clone().unwrap());
    assert!(
        ws.starts_with(daemon.data_dir()) && ws.ends_with(&imported.id),
        "{ws:?}"
    );
    assert_eq!(imported.settings.permissions, None);
    assert_eq!(
        imported.settings.max_steps,
        Some(7),
        "other settings are kept"
    );
    // The exported allow-all does not run a command: it asks.
    mock.push(Reply::openai_tool_calls(
        &[],
        &[("c1", "bash", r#"{"command": "touch planted"}"#)],
    ));
    let (_, events) = send_and_collect(&client, &imported.id, "go").await;
    let asked = crate::common::permission_request(&events);
    assert!(
        matches!(asked, EventKind::PermissionRequested { ref tool_name, .. } if tool_name == "bash"),
        "{asked:?}"
    );
    assert!(!ws.join("planted").exists() && !victim_path.join("planted").exists());

    // keepWorkspace: the exported folder, which exists here.
    let kept = client
        .import_agent(doc.clone(), None, Some(true))
        .await
        .unwrap();
    assert_eq!(kept.workspace, Some(victim_path.display().to_string()));
    assert_eq!(kept.settings.permissions, None);

    // A workspace the caller gives.
    let given = tempfile::tempdir().unwrap();
    let given_path = std::fs::canonicalize(given.path()).unwrap();
    let chosen = client
        .import_agent(doc.clone(), Some(given_path.display().to_string()), None)
        .await
        .unwrap();
    assert_eq!(chosen.workspace, Some(given_path.display().to_string()));

    // Refused: keeping a folder that does not exist here, a relative or missing folder,
    // both at once. Nothing is created by a refused import.
    let before = client
        .list_agents(None, None, None, None, None)
        .await
        .unwrap()
        .agents
        .len();
    let gone = hostile_export(Path::new("/nonexistent/agentd-victim"));
    let e = client
        .import_agent(gone, None, Some(true))
        .await
        .unwrap_err();
    assert_eq!(error_of(&e), (-32602, "invalidParams".into()));
    assert!(e.to_string().contains("keepWorkspace"), "{e}");
    for bad in ["relative/folder", "/nonexistent/agentd-folder"] {
        let e = client
            .import_agent(doc.clone(), Some(bad.into()), None)
            .await
            .unwrap_err();
        assert_eq!(error_of(&e).1, "invalidParams", "{bad}");
    }
    let e = client
        .import_agent(doc, Some(given_path.display().to_string()), Some(true))
        .await
        .unwrap_err();
    assert!(e.to_string().contains("not both"), "{e}");
    let after = client
        .list_agents(None, None, None, None, None)
        .await
        .unwrap()
        .agents
        .len();
    assert_eq!(after, before);
}
