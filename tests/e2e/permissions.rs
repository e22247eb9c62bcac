//! Permission prompts end to end: ask, grant, deny, remember, blocked commands, paths that
//! escape the workspace, racing answers, restarts between prompt and answer.

use agentd_testkit::send::SendByName;
use std::time::Duration;

use agent_proto::rpc::AgentRpcClient;
use agent_proto::{
    EventKind, LoopFinishReason, MessageStatus, PermissionLevel, Remember, SessionStatus,
    ToolCallStatus,
};
use agentd_testkit::events::{collect_run, type_names};
use agentd_testkit::mock_model::Reply;
use agentd_testkit::scenario::{answer_prompt, bash_call};
use agentd_testkit::transcript::{assert_calls_paired, tool_result};
use serde_json::json;

use crate::common::{
    error_of, messages, model_requests, permission_request, send_and_collect, start_with,
    tool_agent, tool_result_of, tool_scenario, ws,
};

#[tokio::test]
async fn a_prompt_is_answered_and_the_run_resumes_on_the_same_message() {
    let (mock, _daemon, client, agent, _dir) = tool_scenario("").await.into_parts();
    mock.push(bash_call("c1", "echo granted-ok"));
    let (sent, events) = send_and_collect(&client, &agent.id, "run it").await;
    assert_eq!(
        type_names(&events)[events.len() - 4..],
        [
            "toolCallReady",
            "permissionRequested",
            "statusChanged",
            "loopFinished"
        ]
    );
    match permission_request(&events) {
        EventKind::PermissionRequested {
            message_id,
            tool_call_id,
            tool_name,
            permission_type,
            command,
            signature,
            rememberable,
            risk,
            ..
        } => {
            assert_eq!(message_id, sent.assistant_message_id);
            assert_eq!((tool_call_id.as_str(), tool_name.as_str()), ("c1", "bash"));
            assert_eq!(permission_type, PermissionLevel::Execute);
            assert_eq!(command.as_deref(), Some("echo granted-ok"));
            assert_eq!(signature, Some(vec!["echo".to_owned()]));
            assert!(rememberable);
            assert_eq!(risk, None);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        events.last().unwrap().kind,
        EventKind::LoopFinished {
            message_id: sent.assistant_message_id.clone(),
            reason: LoopFinishReason::WaitingPermission,
            error: None
        }
    );
    let session = client.get_session(agent.id.clone()).await.unwrap();
    assert_eq!(session.status, SessionStatus::WaitingPermission);
    assert_eq!(session.pending_permissions.len(), 1);
    assert_eq!(session.pending_permissions[0].tool_call_id, "c1");
    // The prompt exactly as it was sent, not worked out again.
    let pending = &session.pending_permissions[0];
    assert_eq!(pending.command.as_deref(), Some("echo granted-ok"));
    assert_eq!(pending.command_display.as_deref(), Some("echo granted-ok"));
    assert_eq!(pending.signature, Some(vec!["echo".to_owned()]));
    assert!(pending.rememberable);
    assert_eq!(pending.risk, None);
    assert!(
        session.pending_permissions[0]
            .description
            .contains("echo granted-ok")
    );
    let stored = messages(&client, &agent.id).await;
    assert_eq!(stored[1].status, MessageStatus::Waiting);
    // Sending while a prompt is pending is refused with what to do.
    let err = client
        .send_plain(agent.id.clone(), "other".into())
        .await
        .unwrap_err();
    assert_eq!(error_of(&err).1, "invalidState");

    // The answer resumes the run on the same message.
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    mock.push(Reply::openai_text(&["It printed granted-ok."]));
    let answer = client
        .handle_permission_response(
            sent.assistant_message_id.clone(),
            "c1".into(),
            true,
            Some(PermissionLevel::Execute),
            Some(Remember::Once),
        )
        .await
        .unwrap();
    assert_eq!(answer, agent_proto::PermissionResponseResult {});
    let resumed = collect_run(&mut sub, Duration::from_secs(20)).await;
    assert_eq!(
        resumed[0].kind,
        EventKind::PermissionResolved {
            message_id: sent.assistant_message_id.clone(),
            tool_call_id: "c1".into(),
            granted: true,
            remember: Remember::Once,
            cancelled: false
        },
        "permissionResolved comes before the run's next event"
    );
    let (status, content, _) = tool_result_of(&resumed, "c1");
    assert_eq!(
        (status, content.as_str()),
        (ToolCallStatus::Success, "granted-ok\nexit code: 0")
    );
    assert_eq!(
        resumed.last().unwrap().kind,
        EventKind::LoopFinished {
            message_id: sent.assistant_message_id.clone(),
            reason: LoopFinishReason::Completed,
            error: None
        }
    );
    let stored = messages(&client, &agent.id).await;
    assert_eq!(stored.len(), 2, "the run went on in the same message");
    assert_eq!(stored[1].status, MessageStatus::Done);
    assert!(stored[1].text().contains("It printed granted-ok."));

    // A late answer is refused.
    let err = client
        .handle_permission_response(
            sent.assistant_message_id.clone(),
            "c1".into(),
            false,
            None,
            None,
        )
        .await
        .unwrap_err();
    assert_eq!(error_of(&err), (-32004, "permissionNotPending".into()));
    // `once` remembered nothing: the same command asks again.
    mock.push(bash_call("c2", "echo granted-ok"));
    let (_, events) = send_and_collect(&client, &agent.id, "again").await;
    permission_request(&events);
    assert_calls_paired(&model_requests(&mock));
}

#[tokio::test]
async fn denied_calls_tell_the_model_and_the_run_goes_on() {
    let (mock, _daemon, client, agent, _dir) = tool_scenario("").await.into_parts();
    mock.push(Reply::openai_tool_calls(
        &[],
        &[
            ("w1", "write_file", r#"{"path": "x.txt", "content": "x"}"#),
            ("r1", "read_file", r#"{"path": "x.txt"}"#),
        ],
    ));
    let (sent, events) = send_and_collect(&client, &agent.id, "write").await;
    permission_request(&events);
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    mock.push(Reply::openai_text(&["Understood."]));
    client
        .handle_permission_response(
            sent.assistant_message_id.clone(),
            "w1".into(),
            false,
            None,
            None,
        )
        .await
        .unwrap();
    let resumed = collect_run(&mut sub, Duration::from_secs(20)).await;
    let (status, content, _) = tool_result_of(&resumed, "w1");
    assert_eq!(
        (status, content.as_str()),
        (ToolCallStatus::Denied, "denied by the user")
    );
    // The rest of the step still ran (reads inside the workspace are allowed).
    let (status, _, _) = tool_result_of(&resumed, "r1");
    assert_eq!(status, ToolCallStatus::Error, "x.txt was never written");
    assert!(!ws(&agent).join("x.txt").exists());
    let requests = model_requests(&mock);
    assert_eq!(tool_result(&requests[1], "w1"), "Error: denied by the user");
    assert_calls_paired(&requests);
}

#[tokio::test]
async fn remembered_grants_cover_signatures_but_not_compounds_or_risks() {
    let (mock, mut daemon, client, agent, _dir) = tool_scenario("").await.into_parts();

    // `session`: remembered for this agent.
    mock.push(bash_call("s1", "echo one"));
    let (sent, events) = send_and_collect(&client, &agent.id, "1").await;
    permission_request(&events);
    mock.push(Reply::openai_text(&["ok"]));
    answer_prompt(
        &client,
        &agent.id,
        &sent.assistant_message_id,
        "s1",
        true,
        Remember::Session,
    )
    .await;
    mock.push(bash_call("s2", "echo two"));
    mock.push(Reply::openai_text(&["ok"]));
    let (_, events) = send_and_collect(&client, &agent.id, "2").await;
    assert!(
        !type_names(&events).contains(&"permissionRequested"),
        "covered by the session grant"
    );
    assert_eq!(tool_result_of(&events, "s2").0, ToolCallStatus::Success);

    // A compound command is covered only if every part is.
    mock.push(bash_call("s3", "echo three && ls"));
    let (sent, events) = send_and_collect(&client, &agent.id, "3").await;
    match permission_request(&events) {
        EventKind::PermissionRequested { signature, .. } => {
            assert_eq!(signature, Some(vec!["echo".to_owned(), "ls".to_owned()]));
        }
        other => panic!("{other:?}"),
    }
    mock.push(Reply::openai_text(&["ok"]));
    answer_prompt(
        &client,
        &agent.id,
        &sent.assistant_message_id,
        "s3",
        true,
        Remember::Session,
    )
    .await;

    // A risky command is asked even when its program was granted, and is not rememberable.
    mock.push(bash_call("s4", "ls; rm -rf scratch"));
    let (sent, events) = send_and_collect(&client, &agent.id, "4").await;
    match permission_request(&events) {
        EventKind::PermissionRequested {
            risk, rememberable, ..
        } => {
            assert!(risk.unwrap().contains("recursive delete"));
            assert!(!rememberable);
        }
        other => panic!("{other:?}"),
    }
    mock.push(Reply::openai_text(&["ok"]));
    answer_prompt(
        &client,
        &agent.id,
        &sent.assistant_message_id,
        "s4",
        false,
        Remember::Always,
    )
    .await;

    // `always`: every agent, and it survives a restart.
    mock.push(bash_call("a1", "date"));
    let (sent, events) = send_and_collect(&client, &agent.id, "5").await;
    permission_request(&events);
    mock.push(Reply::openai_text(&["ok"]));
    answer_prompt(
        &client,
        &agent.id,
        &sent.assistant_message_id,
        "a1",
        true,
        Remember::Always,
    )
    .await;
    drop(client);
    assert!(daemon.terminate().await.success());
    daemon.restart().await;
    let client = daemon.client().await;
    // The session grant survived too.
    mock.push(bash_call("s5", "echo after restart"));
    mock.push(Reply::openai_text(&["ok"]));
    let (_, events) = send_and_collect(&client, &agent.id, "6").await;
    assert!(!type_names(&events).contains(&"permissionRequested"));
    let (other, _other_dir) = tool_agent(&client, None).await;
    mock.push(bash_call("a2", "date +%s"));
    mock.push(Reply::openai_text(&["ok"]));
    let (_, events) = send_and_collect(&client, &other.id, "7").await;
    assert!(
        !type_names(&events).contains(&"permissionRequested"),
        "the always grant covers other agents"
    );
    // ...but the other agent does not inherit the first one's session grants.
    mock.push(bash_call("s6", "echo no"));
    let (_, events) = send_and_collect(&client, &other.id, "8").await;
    permission_request(&events);
    assert_calls_paired(&model_requests(&mock));
}

#[tokio::test]
async fn blocked_commands_are_denied_without_asking() {
    let (mock, daemon) = start_with(
        "[permissions]\nexecute = \"allow\"\nblocked_commands = [\"rm -rf /\", \"curl\"]\n",
    )
    .await;
    let client = daemon.client().await;
    let (agent, _dir) = tool_agent(&client, None).await;
    mock.push(Reply::openai_tool_calls(
        &[],
        &[
            ("b1", "bash", r#"{"command": "sudo rm -rf /"}"#),
            ("b2", "bash", r#"{"command": "echo $(curl -s http://x)"}"#),
            ("ok", "bash", r#"{"command": "echo fine"}"#),
        ],
    ));
    mock.push(Reply::openai_text(&["ok"]));
    let (_, events) = send_and_collect(&client, &agent.id, "go").await;
    assert!(!type_names(&events).contains(&"permissionRequested"));
    for (id, pattern) in [("b1", "rm -rf /"), ("b2", "curl")] {
        let (status, content, _) = tool_result_of(&events, id);
        assert_eq!(status, ToolCallStatus::Denied);
        assert!(
            content.contains("blocked") && content.contains(pattern),
            "{content}"
        );
    }
    assert_eq!(tool_result_of(&events, "ok").0, ToolCallStatus::Success);
}

#[tokio::test]
async fn paths_escaping_the_workspace_ask_with_the_path() {
    let (mock, daemon) = start_with("[permissions]\nwrite = \"allow\"\n").await;
    let client = daemon.client().await;
    let (agent, dir) = tool_agent(&client, None).await;
    let outside = tempfile::tempdir().unwrap();
    let outside_path = std::fs::canonicalize(outside.path()).unwrap();
    std::fs::write(outside_path.join("secret.txt"), "s3cret").unwrap();
    std::os::unix::fs::symlink(&outside_path, ws(&agent).join("link")).unwrap();
    // Both temp dirs live in the same temp root, so the outside one is a sibling.
    assert_eq!(outside_path.parent(), ws(&agent).parent());
    let escape = format!(
        "../{}/secret.txt",
        outside_path.file_name().unwrap().to_str().unwrap()
    );
    let _ = dir;
    let cases = [
        (
            "dotdot",
            "read_file",
            json!({"path": escape}),
            PermissionLevel::Read,
        ),
        (
            "symlink",
            "read_file",
            json!({"path": "link/secret.txt"}),
            PermissionLevel::Read,
        ),
        (
            "write",
            "write_file",
            json!({"path": "link/new.txt", "content": "x"}),
            PermissionLevel::Write,
        ),
    ];
    for (id, tool, args, level) in cases {
        let args = args.to_string();
        mock.push(Reply::openai_tool_calls(&[], &[(id, tool, &args)]));
        let (sent, events) = send_and_collect(&client, &agent.id, id).await;
        match permission_request(&events) {
            EventKind::PermissionRequested {
                permission_type,
                paths,
                description,
                ..
            } => {
                assert_eq!(permission_type, level, "{id}");
                let paths = paths.unwrap();
                assert!(
                    paths[0].starts_with(&outside_path.display().to_string()),
                    "{id}: {paths:?}"
                );
                assert!(
                    description.contains("outside the workspace"),
                    "{id}: {description}"
                );
            }
            other => panic!("{other:?}"),
        }
        let mut sub = client
            .subscribe_events(Some(agent.id.clone()), None, None)
            .await
            .unwrap();
        mock.push(Reply::openai_text(&["ok"]));
        client
            .handle_permission_response(sent.assistant_message_id, id.into(), false, None, None)
            .await
            .unwrap();
        let resumed = collect_run(&mut sub, Duration::from_secs(20)).await;
        assert_eq!(tool_result_of(&resumed, id).0, ToolCallStatus::Denied);
    }
    assert!(!outside_path.join("new.txt").exists());
}

#[tokio::test]
async fn two_clients_racing_to_answer_exactly_one_wins() {
    let (mock, daemon, client, agent, _dir) = tool_scenario("").await.into_parts();
    mock.push(bash_call("r1", "echo raced"));
    let (sent, _) = send_and_collect(&client, &agent.id, "race").await;
    mock.push(Reply::openai_text(&["ok"]));
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    let a = daemon.client().await;
    let b = daemon.client().await;
    let (ra, rb) = tokio::join!(
        a.handle_permission_response(
            sent.assistant_message_id.clone(),
            "r1".into(),
            true,
            None,
            None
        ),
        b.handle_permission_response(
            sent.assistant_message_id.clone(),
            "r1".into(),
            false,
            None,
            None
        ),
    );
    let results = [ra, rb];
    let wins = results.iter().filter(|r| r.is_ok()).count();
    assert_eq!(wins, 1, "{results:?}");
    let loser = results.iter().find_map(|r| r.as_ref().err()).unwrap();
    assert_eq!(error_of(loser).1, "permissionNotPending");
    let events = collect_run(&mut sub, Duration::from_secs(20)).await;
    let resolved = events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::PermissionResolved { .. }))
        .count();
    assert_eq!(resolved, 1);
}

#[tokio::test]
async fn a_prompt_survives_a_restart_and_a_kill() {
    let (mock, mut daemon, client, agent, _dir) = tool_scenario("").await.into_parts();
    mock.push(bash_call("p1", "echo after the restart"));
    let (sent, _) = send_and_collect(&client, &agent.id, "wait for me").await;
    drop(client);
    daemon.kill9().await;
    daemon.restart().await;
    let client = daemon.client().await;
    // listed with its saved status before anything loads its session
    let listed = client
        .list_agents(None, Some(10), None, None, None)
        .await
        .unwrap()
        .agents;
    let listed = listed.iter().find(|a| a.id == agent.id).unwrap();
    assert_eq!(listed.status, SessionStatus::WaitingPermission);
    let session = client.get_session(agent.id.clone()).await.unwrap();
    assert_eq!(session.status, SessionStatus::WaitingPermission);
    assert_eq!(session.pending_permissions[0].tool_call_id, "p1");
    let stored = messages(&client, &agent.id).await;
    assert_eq!(
        stored[1].status,
        MessageStatus::Waiting,
        "not marked interrupted"
    );
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    mock.push(Reply::openai_text(&["resumed"]));
    client
        .handle_permission_response(
            sent.assistant_message_id.clone(),
            "p1".into(),
            true,
            None,
            None,
        )
        .await
        .unwrap();
    let events = collect_run(&mut sub, Duration::from_secs(20)).await;
    let (status, content, _) = tool_result_of(&events, "p1");
    assert_eq!(
        (status, content.as_str()),
        (ToolCallStatus::Success, "after the restart\nexit code: 0")
    );
    assert!(matches!(
        events.last().unwrap().kind,
        EventKind::LoopFinished {
            reason: LoopFinishReason::Completed,
            ..
        }
    ));
    assert_calls_paired(&model_requests(&mock));
}

#[tokio::test]
async fn cancel_while_waiting_resolves_the_prompt_as_cancelled() {
    let (mock, _daemon, client, agent, _dir) = tool_scenario("").await.into_parts();
    mock.push(bash_call("w1", "echo never"));
    let (sent, _) = send_and_collect(&client, &agent.id, "prompt me").await;
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    assert!(
        client
            .cancel_loop(agent.id.clone())
            .await
            .unwrap()
            .cancelled
    );
    let events = collect_run(&mut sub, Duration::from_secs(20)).await;
    assert!(events.iter().any(|e| e.kind
        == EventKind::PermissionResolved {
            message_id: sent.assistant_message_id.clone(),
            tool_call_id: "w1".into(),
            granted: false,
            remember: Remember::Once,
            cancelled: true
        }));
    let (status, content, _) = tool_result_of(&events, "w1");
    assert_eq!(
        (status, content.as_str()),
        (ToolCallStatus::Cancelled, "cancelled by user")
    );
    assert!(matches!(
        events.last().unwrap().kind,
        EventKind::LoopFinished {
            reason: LoopFinishReason::Cancelled,
            ..
        }
    ));
    let err = client
        .handle_permission_response(
            sent.assistant_message_id.clone(),
            "w1".into(),
            true,
            None,
            None,
        )
        .await
        .unwrap_err();
    assert_eq!(error_of(&err).1, "permissionNotPending");
    // The next request pairs the cancelled call with its synthetic result.
    mock.push(Reply::openai_text(&["fresh start"]));
    send_and_collect(&client, &agent.id, "again").await;
    let requests = model_requests(&mock);
    assert_eq!(tool_result(&requests[1], "w1"), "Error: cancelled by user");
    assert_calls_paired(&requests);
}

#[tokio::test]
async fn an_answer_sent_as_soon_as_the_prompt_arrives_is_taken() {
    let (mock, _daemon, client, agent, _dir) = tool_scenario("").await.into_parts();
    mock.push(bash_call("q1", "echo quick"));
    mock.push(Reply::openai_text(&["done"]));
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    let sent = client
        .send_plain(agent.id.clone(), "go".into())
        .await
        .unwrap();
    agentd_testkit::events::collect_until(&mut sub, Duration::from_secs(10), |e| {
        matches!(e.kind, EventKind::PermissionRequested { .. })
    })
    .await;
    // Answer before the suspended run has even emitted its loopFinished.
    client
        .handle_permission_response(
            sent.assistant_message_id.clone(),
            "q1".into(),
            true,
            None,
            None,
        )
        .await
        .expect("the answer is taken, not refused as not pending");
    let rest = agentd_testkit::events::collect_until(&mut sub, Duration::from_secs(20), |e| {
        matches!(
            e.kind,
            EventKind::LoopFinished {
                reason: LoopFinishReason::Completed,
                ..
            }
        )
    })
    .await;
    let names = type_names(&rest);
    let waiting = names.iter().position(|n| *n == "loopFinished").unwrap();
    let resolved = names
        .iter()
        .position(|n| *n == "permissionResolved")
        .unwrap();
    assert!(
        waiting < resolved,
        "the suspended run ends before the answer resumes it: {names:?}"
    );
    assert_eq!(tool_result_of(&rest, "q1").1, "quick\nexit code: 0");
}
