//! Tools end to end: every builtin tool through a real run, offload and paging, the legacy
//! text protocol, argument repair, tool lists and request previews.

use std::time::Duration;

use agent_proto::rpc::AgentRpcClient;
use agent_proto::{
    Block, EventKind, LoopFinishReason, MessageStatus, PermissionLevel, ToolCallBlock,
    ToolCallStatus,
};
use agentd_testkit::events::{collect_run, text_of};
use agentd_testkit::mock_model::{Reply, openai_chunk};
use agentd_testkit::transcript::{assert_calls_paired, tool_result};
use serde_json::{Value, json};

use crate::common::{
    ALLOW_ALL, before_environment, messages, model_requests, send_and_collect, start_with,
    tool_agent, tool_result_of, tool_scenario, ws,
};

#[tokio::test]
async fn every_builtin_tool_runs_and_its_result_reaches_the_model() {
    let (mock, daemon, client, agent, _dir) = tool_scenario(ALLOW_ALL).await.into_parts();
    let root = ws(&agent);
    std::fs::write(root.join("notes.txt"), "alpha\nbeta\ngamma\n").unwrap();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(root.join("src/lib.rs"), "pub fn gamma() {}\n").unwrap();
    let page = format!("{}/page.html", mock.url());

    let calls: Vec<(&str, &str, String)> = vec![
        (
            "c1",
            "bash",
            json!({"command": "echo hi && wc -l < notes.txt"}).to_string(),
        ),
        ("c2", "read_file", json!({"path": "notes.txt"}).to_string()),
        (
            "c3",
            "write_file",
            json!({"path": "out/new.txt", "content": "written"}).to_string(),
        ),
        (
            "c4",
            "edit_file",
            json!({"path": "notes.txt", "old_string": "beta", "new_string": "BETA"}).to_string(),
        ),
        ("c5", "glob", json!({"pattern": "**/*.rs"}).to_string()),
        (
            "c6",
            "grep",
            json!({"pattern": "gamma", "glob": "*.txt"}).to_string(),
        ),
        ("c7", "list_directory", json!({}).to_string()),
        ("c8", "directory_tree", json!({"depth": 2}).to_string()),
        ("c9", "web_fetch", json!({"url": page}).to_string()),
    ];
    let call_refs: Vec<(&str, &str, &str)> =
        calls.iter().map(|(i, n, a)| (*i, *n, a.as_str())).collect();
    mock.push(Reply::openai_tool_calls(&["Working on it. "], &call_refs));
    mock.push(Reply::html(
        "<html><body><h1>Hello page</h1><script>x()</script></body></html>",
    ));
    mock.push(Reply::openai_text(&["All done."]));

    let (sent, events) = send_and_collect(&client, &agent.id, "use every tool").await;
    assert_eq!(
        events.last().unwrap().kind,
        EventKind::LoopFinished {
            message_id: sent.assistant_message_id.clone(),
            reason: LoopFinishReason::Completed,
            error: None
        }
    );
    assert_eq!(text_of(&events), "Working on it. All done.");
    let expect: Vec<(&str, &str)> = vec![
        ("c1", "hi\n3\nexit code: 0"),
        ("c2", "     2\tbeta\n"),
        ("c3", "created"),
        ("c4", "-beta\n+BETA"),
        ("c5", "src/lib.rs"),
        ("c6", "notes.txt:3: gamma"),
        ("c7", "notes.txt"),
        ("c8", "└── lib.rs"),
        ("c9", "Hello page"),
    ];
    for (id, needle) in &expect {
        let (status, content, _) = tool_result_of(&events, id);
        assert_eq!(status, ToolCallStatus::Success, "{id}: {content}");
        assert!(
            content.contains(needle),
            "{id}: {needle:?} not in {content:?}"
        );
    }
    assert_eq!(
        std::fs::read_to_string(root.join("out/new.txt")).unwrap(),
        "written"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("notes.txt")).unwrap(),
        "alpha\nBETA\ngamma\n"
    );

    // The model got every result, each paired with its call, in one follow-up request.
    let requests = model_requests(&mock);
    assert_eq!(requests.len(), 2);
    assert_calls_paired(&requests);
    for (id, needle) in &expect {
        assert!(tool_result(&requests[1], id).contains(needle), "{id}");
    }
    let names: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "bash",
            "read_file",
            "write_file",
            "edit_file",
            "glob",
            "grep",
            "list_directory",
            "directory_tree",
            "web_fetch",
            "todo_write",
            "ask_user_question",
            "task",
            "skill"
        ]
    );

    // The message holds the steps: text, calls with results, text.
    let stored = messages(&client, &agent.id).await;
    let assistant = stored
        .iter()
        .find(|m| m.id == sent.assistant_message_id)
        .unwrap();
    assert_eq!(assistant.status, MessageStatus::Done);
    let calls_done = assistant
        .blocks
        .iter()
        .filter(|b| {
            matches!(
                b,
                Block::ToolCall(ToolCallBlock {
                    status: ToolCallStatus::Success,
                    result: Some(_),
                    ..
                })
            )
        })
        .count();
    assert_eq!(calls_done, 9);
    // And each execution is on record.
    let runs = crate::common::tool_executions(&daemon, &sent.assistant_message_id).await;
    assert_eq!(runs.len(), 9);
    assert!(
        runs.iter()
            .all(|(_, _, status, output, _)| status == "success" && output.is_some())
    );
}

#[tokio::test]
async fn large_results_are_offloaded_paged_and_private() {
    let (mock, _daemon, client, agent, _dir) = tool_scenario(ALLOW_ALL).await.into_parts();
    mock.push(Reply::openai_tool_calls(
        &[],
        &[("big", "bash", r#"{"command": "seq 1 3000"}"#)],
    ));
    mock.push(Reply::openai_text(&["ok"]));
    let (_, events) = send_and_collect(&client, &agent.id, "count").await;
    let (status, stub, offload) = tool_result_of(&events, "big");
    assert_eq!(status, ToolCallStatus::Success);
    let offload = offload.expect("the result was offloaded");
    assert!(
        offload.ends_with(&format!("sessions/{}/tool_big.offload", agent.id)),
        "{offload}"
    );
    let full = std::fs::read_to_string(&offload).unwrap();
    assert!(full.starts_with("1\n2\n3\n") && full.contains("\n3000\nexit code: 0"));
    assert!(stub.len() < 1024 + offload.len(), "{}", stub.len());
    assert!(stub.contains(&format!("{} chars", full.chars().count())));
    assert!(stub.contains("3001 lines"), "{stub}");
    assert!(stub.contains("exit code: 0"), "the tail is in the preview");
    assert_eq!(
        tool_result(&model_requests(&mock)[1], "big"),
        stub,
        "the model got the stub"
    );

    // Paging through it with read_file returns the lines, never another offload.
    let args = json!({"path": offload, "offset": 2990, "limit": 20}).to_string();
    mock.push(Reply::openai_tool_calls(
        &[],
        &[("page", "read_file", &args)],
    ));
    mock.push(Reply::openai_text(&["seen"]));
    let (_, events) = send_and_collect(&client, &agent.id, "read it").await;
    let (status, content, offloaded) = tool_result_of(&events, "page");
    assert_eq!((status, offloaded), (ToolCallStatus::Success, None));
    assert!(content.contains("  2995\t2995\n"), "{content}");
    assert!(content.contains("[lines 2990-3001 of 3001]"), "{content}");
    let args = json!({"path": offload}).to_string();
    mock.push(Reply::openai_tool_calls(
        &[],
        &[("whole", "read_file", &args)],
    ));
    mock.push(Reply::openai_text(&["seen"]));
    let (_, events) = send_and_collect(&client, &agent.id, "read all").await;
    let (_, content, offloaded) = tool_result_of(&events, "whole");
    assert_eq!(offloaded, None, "read_file pages instead of offloading");
    assert!(
        content.contains("continue with offset=2001"),
        "{}",
        &content[content.len() - 100..]
    );

    // Another agent cannot read it, whatever the policy.
    let (other, _other_dir) = tool_agent(&client, None).await;
    let args = json!({"path": offload}).to_string();
    mock.push(Reply::openai_tool_calls(
        &[],
        &[("peek", "read_file", &args)],
    ));
    mock.push(Reply::openai_text(&["refused"]));
    let (_, events) = send_and_collect(&client, &other.id, "peek").await;
    let (status, content, _) = tool_result_of(&events, "peek");
    assert_eq!(status, ToolCallStatus::Denied, "{content}");
    assert!(content.contains("another agent"), "{content}");
    assert!(
        !events
            .iter()
            .any(|e| matches!(e.kind, EventKind::PermissionRequested { .. }))
    );

    // Deleting the agent removes its offloads.
    client.delete_agent(agent.id.clone()).await.unwrap();
    assert!(!std::path::Path::new(&offload).exists());
    assert_calls_paired(&model_requests(&mock));
}

#[tokio::test]
async fn legacy_models_call_tools_in_tags_split_across_chunks() {
    let extra = r#"[[providers]]
id = "legacy"
kind = "openai"
base_url = "MOCK"
models = [{ id = "old-model", tools = false }]
"#;
    let mock = agentd_testkit::mock_model::MockModel::start().await;
    let config = agentd_testkit::daemon::openai_config_with(
        &mock.url(),
        &format!("{ALLOW_ALL}\n{}", extra.replace("MOCK", &mock.url())),
    );
    let daemon = agentd_testkit::daemon::TestDaemon::start(crate::common::bin(), &config).await;
    let client = daemon.client().await;
    let workspace = tempfile::tempdir().unwrap();
    let path = std::fs::canonicalize(workspace.path()).unwrap();
    std::fs::write(path.join("hello.txt"), "hi").unwrap();
    let agent = client
        .create_agent(
            None,
            Some(agent_proto::AgentMode::Agent),
            Some("legacy".into()),
            Some("old-model".into()),
            None,
            Some(path.display().to_string()),
            None,
            None,
            None,
        )
        .await
        .unwrap();
    let answer = "Let me look.<function_call>{\"name\": \"list_directory\", \"arguments\": {}}</function_call> Back soon.";
    // Cut the answer into pieces of 3 characters: the tags are split everywhere.
    let chars: Vec<char> = answer.chars().collect();
    let mut events: Vec<String> = chars
        .chunks(3)
        .map(|c| openai_chunk(json!({"content": c.iter().collect::<String>()}), None))
        .collect();
    events.push(openai_chunk(json!({}), Some("stop")));
    events.push("[DONE]".into());
    mock.push(Reply::sse(events));
    mock.push(Reply::openai_text(&["Found hello.txt."]));
    let (_, events) = send_and_collect(&client, &agent.id, "what is here?").await;
    assert_eq!(text_of(&events), "Let me look. Back soon.Found hello.txt.");
    let id = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::ToolCallReady {
                tool_call_id,
                name,
                arguments,
                ..
            } => {
                assert_eq!((name.as_str(), arguments), ("list_directory", &json!({})));
                Some(tool_call_id.clone())
            }
            _ => None,
        })
        .expect("a toolCallReady");
    let (status, content, _) = tool_result_of(&events, &id);
    assert_eq!(
        (status, content.as_str()),
        (ToolCallStatus::Success, "hello.txt")
    );

    let requests = model_requests(&mock);
    let first = &requests[0].body;
    assert!(
        first.get("tools").is_none(),
        "no native tools for this model"
    );
    let system = first["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains("<function_call>") && system.contains("- list_directory:"),
        "{system}"
    );
    let second = &requests[1].body["messages"];
    let assistant = second[2]["content"].as_str().unwrap();
    assert!(
        assistant.starts_with("Let me look. Back soon.<function_call>{"),
        "{assistant}"
    );
    let results = second[3]["content"].as_str().unwrap();
    assert_eq!(
        results,
        format!(
            "<function_call_result name=\"list_directory\" id=\"{id}\">hello.txt</function_call_result>"
        )
    );
}

#[tokio::test]
async fn broken_arguments_are_repaired_or_reported_to_the_model() {
    let (mock, _daemon, client, agent, _dir) = tool_scenario(ALLOW_ALL).await.into_parts();
    std::fs::write(ws(&agent).join("a.txt"), "content of a").unwrap();
    mock.push(Reply::openai_tool_calls(
        &[],
        &[
            ("fixable", "read_file", "{'path': 'a.txt',}"),
            ("hopeless", "read_file", "this is not json"),
            ("wrong", "read_file", r#"{"file": "a.txt"}"#),
            ("ghost", "teleport", "{}"),
        ],
    ));
    mock.push(Reply::openai_text(&["noted"]));
    let (sent, events) = send_and_collect(&client, &agent.id, "read").await;
    let (status, content, _) = tool_result_of(&events, "fixable");
    assert_eq!(status, ToolCallStatus::Success);
    assert!(content.contains("content of a"));
    let (status, content, _) = tool_result_of(&events, "hopeless");
    assert_eq!(status, ToolCallStatus::Error);
    assert!(
        content.contains("not valid JSON") && content.contains("this is not json"),
        "{content}"
    );
    let (status, content, _) = tool_result_of(&events, "wrong");
    assert_eq!(status, ToolCallStatus::Error);
    assert!(
        content.contains("invalid arguments for read_file"),
        "{content}"
    );
    let (status, content, _) = tool_result_of(&events, "ghost");
    assert_eq!(status, ToolCallStatus::Error);
    assert!(content.contains("unknown tool \"teleport\""), "{content}");
    // toolCallReady carries the repaired arguments; the block keeps what the model wrote.
    assert!(events.iter().any(|e| matches!(&e.kind,
        EventKind::ToolCallReady { tool_call_id, arguments, .. } if tool_call_id == "fixable" && arguments == &json!({"path": "a.txt"}))));
    let stored = messages(&client, &agent.id).await;
    let assistant = stored
        .iter()
        .find(|m| m.id == sent.assistant_message_id)
        .unwrap();
    let raw = assistant.blocks.iter().find_map(|b| match b {
        Block::ToolCall(ToolCallBlock {
            tool_call_id,
            raw_arguments,
            ..
        }) if tool_call_id == "fixable" => raw_arguments.clone(),
        _ => None,
    });
    assert_eq!(raw.as_deref(), Some("{'path': 'a.txt',}"));
    let requests = model_requests(&mock);
    assert_calls_paired(&requests);
    assert!(tool_result(&requests[1], "hopeless").contains("not valid JSON"));
}

#[tokio::test]
async fn tool_lists_follow_mode_and_enabled_tools() {
    let (mock, daemon) = start_with(ALLOW_ALL).await;
    let client = daemon.client().await;
    let all = client.list_tools(None).await.unwrap().tools;
    assert_eq!(all.len(), 14);
    let bash = all.iter().find(|t| t.name == "bash").unwrap();
    assert_eq!(
        (bash.permission_level, bash.source.as_str(), bash.enabled),
        (PermissionLevel::Execute, "builtin", true)
    );
    assert_eq!(bash.schema["required"], json!(["command"]));
    let levels: Vec<(String, PermissionLevel)> = all
        .iter()
        .map(|t| (t.name.clone(), t.permission_level))
        .collect();
    assert!(levels.contains(&("web_fetch".into(), PermissionLevel::Network)));
    assert!(levels.contains(&("write_file".into(), PermissionLevel::Write)));

    // An agent with tools and no workspace gets a folder of its own under the data dir.
    let own = client
        .create_agent(
            None,
            Some(agent_proto::AgentMode::Agent),
            None,
            None,
            None,
            None,
            None,
            None,
            None,
        )
        .await
        .unwrap();
    let own_ws = own.workspace.clone().expect("a default workspace");
    assert_eq!(
        std::path::Path::new(&own_ws),
        daemon.data_dir().join("workspaces").join(&own.id)
    );
    assert!(std::path::Path::new(&own_ws).is_dir());
    let err = client
        .create_agent(
            None,
            Some(agent_proto::AgentMode::Agent),
            None,
            None,
            None,
            Some("/no/such/dir".into()),
            None,
            None,
            None,
        )
        .await
        .unwrap_err();
    assert_eq!(crate::common::error_of(&err).1, "invalidParams");

    // A chat agent has no tools; an agent with enabledTools only those.
    let chat = crate::common::new_agent(&client, "chat").await;
    let tools = client
        .list_tools(Some(chat.id.clone()))
        .await
        .unwrap()
        .tools;
    assert!(tools.iter().all(|t| !t.enabled));
    let (agent, _dir) = tool_agent(
        &client,
        Some(json!({"enabledTools": ["read_file", "glob"]})),
    )
    .await;
    let enabled: Vec<String> = client
        .list_tools(Some(agent.id.clone()))
        .await
        .unwrap()
        .tools
        .into_iter()
        .filter(|t| t.enabled)
        .map(|t| t.name)
        .collect();
    assert_eq!(enabled, ["read_file", "glob"]);
    mock.push(Reply::openai_text(&["hi"]));
    send_and_collect(&client, &agent.id, "hello").await;
    mock.push(Reply::openai_text(&["hi"]));
    send_and_collect(&client, &chat.id, "hello").await;
    let requests = model_requests(&mock);
    let offered: Vec<&str> = requests[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(offered, ["read_file", "glob"]);
    assert!(
        requests[1].body.get("tools").is_none(),
        "chat agents get no tools"
    );
}

#[tokio::test]
async fn request_preview_is_the_body_that_gets_sent() {
    let (mock, daemon) = start_with(ALLOW_ALL).await;
    let client = daemon.client().await;
    let (agent, _dir) = tool_agent(&client, Some(json!({"maxSteps": 1}))).await;
    mock.push(Reply::openai_tool_calls(
        &["Listing. "],
        &[("l1", "list_directory", "{}")],
    ));
    let (sent, events) = send_and_collect(&client, &agent.id, "look around").await;
    assert!(matches!(
        events.last().unwrap().kind,
        EventKind::LoopFinished {
            reason: LoopFinishReason::MaxSteps,
            ..
        }
    ));
    // The preview of the first call of the message is what the model received.
    let first = client
        .get_message_request_preview(agent.id.clone(), Some(sent.assistant_message_id.clone()))
        .await
        .unwrap();
    assert_eq!(
        (first.provider.as_str(), first.model.as_str()),
        ("mock", "mock-model")
    );
    assert_eq!(first.request, model_requests(&mock)[0].body);
    assert!(first.estimated_tokens > 10);
    // The preview of the next call is what continueLoop sends.
    let next = client
        .get_message_request_preview(agent.id.clone(), None)
        .await
        .unwrap();
    mock.push(Reply::openai_text(&["Done."]));
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    client.continue_loop(agent.id.clone()).await.unwrap();
    collect_run(&mut sub, Duration::from_secs(20)).await;
    let sent_body: Value = model_requests(&mock)[1].body.clone();
    assert_eq!(next.request, sent_body);
    let sent = sent_body["messages"].as_array().unwrap();
    let roles: Vec<&str> = sent.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool"]);
    let workspace = agent.workspace.clone().unwrap();
    let system = sent[0]["content"].as_str().unwrap();
    assert_eq!(before_environment(system, &workspace, "no", "none"), "");
}
