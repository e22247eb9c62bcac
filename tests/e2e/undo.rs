//! Undo end to end: a turn's diff (`getTurnDiff`) and going back to a user message
//! (`revertTo`), over the socket against the real daemon: files written, edited, created
//! and deleted by tools and by a bash command restored byte for byte, a file someone else
//! changed named and left alone, ignored files and the user's `.git` untouched, the
//! conversation cut (and the next model request without it), the `reverted` event seen
//! by another client, refusals while a run is active or waiting, copies' inherited turns,
//! and the storage removed with the agent.

use agentd_testkit::send::SendByName;
use std::path::Path;
use std::time::Duration;

use agent_proto::rpc::AgentRpcClient;
use agent_proto::{EventKind, LoopFinishReason, Role, TurnFileStatus};
use agentd_testkit::events::{collect_run, collect_until};
use agentd_testkit::mock_model::Reply;
use serde_json::json;

use crate::common::{
    ALLOW_ALL, error_of, messages, model_requests, send_and_collect, tool_scenario, ws,
};

/// Every file under `root` with its bytes (the `.git` folder included), sorted.
fn tree(root: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(root).unwrap().display().to_string();
                out.push((rel, std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[tokio::test]
async fn a_turn_is_shown_as_a_diff_and_reverted_byte_for_byte_leaving_others_changes() {
    let (mock, daemon, client, agent, _dir) = tool_scenario(ALLOW_ALL).await.into_parts();
    let root = ws(&agent);
    let binary: Vec<u8> = (0..=255u8).cycle().take(3000).collect();
    std::fs::write(root.join("edit_me.txt"), "alpha\nkeep\n").unwrap();
    std::fs::write(root.join("overwrite.txt"), "old content\n").unwrap();
    std::fs::write(root.join("doomed.bin"), &binary).unwrap();
    std::fs::write(root.join(".gitignore"), "ignored/\n").unwrap();
    std::fs::create_dir_all(root.join("ignored")).unwrap();
    std::fs::write(root.join("ignored/cache"), "cache v1").unwrap();
    std::fs::create_dir_all(root.join(".git/refs")).unwrap();
    std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(root.join(".git/config"), "[core]\n").unwrap();
    let git_before = tree(&root.join(".git"));
    let start = tree(&root);

    let calls = [
        (
            "c1",
            "write_file",
            json!({"path": "overwrite.txt", "content": "new content\n"}).to_string(),
        ),
        (
            "c2",
            "edit_file",
            json!({"path": "edit_me.txt", "old_string": "alpha", "new_string": "beta"})
                .to_string(),
        ),
        (
            "c3",
            "write_file",
            json!({"path": "made/by/write.txt", "content": "fresh\n"}).to_string(),
        ),
        (
            "c4",
            "bash",
            json!({"command": "rm doomed.bin && printf 'by bash\\n' > by_bash.txt && printf v2 > ignored/cache"})
                .to_string(),
        ),
    ];
    let refs: Vec<(&str, &str, &str)> =
        calls.iter().map(|(i, n, a)| (*i, *n, a.as_str())).collect();
    mock.push(Reply::openai_tool_calls(&["On it. "], &refs));
    mock.push(Reply::openai_text(&["Changed the files."]));
    let (first, events) = send_and_collect(&client, &agent.id, "first turn: change things").await;
    assert_eq!(
        agentd_testkit::events::finish_reason(&events),
        LoopFinishReason::Completed
    );
    // A second turn that changes nothing.
    mock.push(Reply::openai_text(&["Just talking."]));
    let (second, _) = send_and_collect(&client, &agent.id, "second turn: just talk").await;

    // The diff of the first answer.
    let diff = client
        .get_turn_diff(agent.id.clone(), first.assistant_message_id.clone())
        .await
        .unwrap();
    let shown: Vec<(&str, TurnFileStatus)> = diff
        .files
        .iter()
        .map(|f| (f.path.as_str(), f.status))
        .collect();
    assert_eq!(
        shown,
        [
            ("by_bash.txt", TurnFileStatus::Added),
            ("doomed.bin", TurnFileStatus::Deleted),
            ("edit_me.txt", TurnFileStatus::Modified),
            ("made/by/write.txt", TurnFileStatus::Added),
            ("overwrite.txt", TurnFileStatus::Modified),
        ]
    );
    let edit = &diff.files[2].diff;
    assert!(
        edit.contains("--- a/edit_me.txt\n+++ b/edit_me.txt\n"),
        "{edit}"
    );
    assert!(edit.contains("-alpha\n+beta\n keep\n"), "{edit}");
    assert!(
        diff.files[0].diff.contains("+++ b/by_bash.txt\n"),
        "{}",
        diff.files[0].diff
    );
    assert!(
        diff.files[1].diff.contains("binary"),
        "{}",
        diff.files[1].diff
    );
    // The answer that changed nothing has an empty diff; a user message is refused.
    let quiet = client
        .get_turn_diff(agent.id.clone(), second.assistant_message_id.clone())
        .await
        .unwrap();
    assert!(quiet.files.is_empty(), "{quiet:?}");
    let e = client
        .get_turn_diff(agent.id.clone(), first.user_message_id.clone())
        .await
        .unwrap_err();
    assert_eq!(error_of(&e).1, "invalidParams");

    // Someone else edits a file the run created, after the run.
    std::fs::write(root.join("by_bash.txt"), "edited by hand\n").unwrap();

    // A second client watches.
    let watcher = daemon.client().await;
    let mut watching = watcher
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    let reverted = client
        .revert_to(agent.id.clone(), first.user_message_id.clone(), None, None)
        .await
        .unwrap();
    assert_eq!(
        reverted.restored,
        [
            "doomed.bin",
            "edit_me.txt",
            "made",
            "made/by",
            "made/by/write.txt",
            "overwrite.txt"
        ]
    );
    assert_eq!(reverted.conflicts.len(), 1, "{reverted:?}");
    assert_eq!(reverted.conflicts[0].path, "by_bash.txt");
    assert_eq!(reverted.removed_messages, 4);
    let seen = collect_until(&mut watching, Duration::from_secs(10), |e| {
        matches!(e.kind, EventKind::Reverted { .. })
    })
    .await;
    let EventKind::Reverted {
        message_id,
        restored,
        removed_messages,
        ..
    } = &seen.last().unwrap().kind
    else {
        unreachable!()
    };
    assert_eq!(message_id, &first.user_message_id);
    assert_eq!(restored, &reverted.restored);
    assert_eq!(*removed_messages, 4);

    // The files: as they were, byte for byte, but for the one someone else changed (left
    // alone) and the ignored one (never tracked).
    let mut expected = start.clone();
    expected.push(("by_bash.txt".into(), b"edited by hand\n".to_vec()));
    for (path, bytes) in &mut expected {
        if path == "ignored/cache" {
            *bytes = b"v2".to_vec();
        }
    }
    expected.sort();
    assert_eq!(tree(&root), expected);
    assert!(!root.join("made").exists());
    assert_eq!(tree(&root.join(".git")), git_before);
    assert!(!root.join(".git/index").exists());

    // The conversation is cut: the history, the session, the next request.
    assert!(messages(&client, &agent.id).await.is_empty());
    let session = client.get_session(agent.id.clone()).await.unwrap();
    assert_ne!(
        session.run_message_id.as_deref(),
        Some(first.assistant_message_id.as_str())
    );
    // A client joining now starts from a snapshot without the removed answer.
    let mut joined = watcher
        .subscribe_events(Some(agent.id.clone()), None, Some(true))
        .await
        .unwrap();
    let snapshot = collect_until(&mut joined, Duration::from_secs(10), |_| true).await;
    let EventKind::Snapshot { message, .. } = &snapshot[0].kind else {
        panic!("{snapshot:?}")
    };
    assert!(message.is_none(), "{message:?}");
    mock.push(Reply::openai_text(&["Fresh start."]));
    let before = model_requests(&mock).len();
    send_and_collect(&client, &agent.id, "third turn").await;
    let requests = model_requests(&mock);
    assert_eq!(requests.len(), before + 1);
    let body = requests.last().unwrap().body.to_string();
    assert!(body.contains("third turn"), "{body}");
    for gone in [
        "first turn",
        "second turn",
        "Changed the files",
        "Just talking",
    ] {
        assert!(
            !body.contains(gone),
            "{gone} is still in the request: {body}"
        );
    }
    let history = messages(&client, &agent.id).await;
    assert_eq!(history.len(), 2);
    assert_eq!(history[0].role, Role::User);
}

#[tokio::test]
async fn revert_is_refused_while_a_run_is_active_or_waits_and_storage_goes_with_the_agent() {
    let (mock, daemon, client, agent, _dir) = tool_scenario("").await.into_parts();
    let root = ws(&agent);
    std::fs::write(root.join("a.txt"), "one\n").unwrap();
    // A first turn that changes a file (the prompt granted).
    mock.push(Reply::openai_tool_calls(
        &[],
        &[(
            "w",
            "write_file",
            &json!({"path": "a.txt", "content": "two\n"}).to_string(),
        )],
    ));
    mock.push(Reply::openai_text(&["done"]));
    let (first, events) = send_and_collect(&client, &agent.id, "write").await;
    assert!(
        events
            .iter()
            .any(|e| matches!(e.kind, EventKind::PermissionRequested { .. }))
    );
    // Waiting for the prompt: refused, nothing changed.
    let e = client
        .revert_to(agent.id.clone(), first.user_message_id.clone(), None, None)
        .await
        .unwrap_err();
    assert_eq!(error_of(&e).1, "invalidState");
    let events = agentd_testkit::scenario::answer_prompt(
        &client,
        &agent.id,
        &first.assistant_message_id,
        "w",
        true,
        agent_proto::Remember::Once,
    )
    .await;
    assert_eq!(
        agentd_testkit::events::finish_reason(&events),
        LoopFinishReason::Completed
    );
    assert_eq!(
        std::fs::read_to_string(root.join("a.txt")).unwrap(),
        "two\n"
    );
    // The answer resumed after the prompt is one turn: its diff shows the write.
    let diff = client
        .get_turn_diff(agent.id.clone(), first.assistant_message_id.clone())
        .await
        .unwrap();
    assert_eq!(diff.files.len(), 1, "{diff:?}");

    // While a run streams: agentBusy.
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    mock.push(Reply::openai_text(&["still ", "going"]).stall_after(1));
    client
        .send_plain(agent.id.clone(), "stream".into())
        .await
        .unwrap();
    collect_until(&mut sub, Duration::from_secs(30), |e| {
        matches!(e.kind, EventKind::TextDelta { .. })
    })
    .await;
    let e = client
        .revert_to(agent.id.clone(), first.user_message_id.clone(), None, None)
        .await
        .unwrap_err();
    assert_eq!(error_of(&e).1, "agentBusy");
    assert!(
        client
            .cancel_loop(agent.id.clone())
            .await
            .unwrap()
            .cancelled
    );
    collect_run(&mut sub, Duration::from_secs(30)).await;
    assert_eq!(
        std::fs::read_to_string(root.join("a.txt")).unwrap(),
        "two\n"
    );

    // Files only: the file goes back, the conversation stays.
    let reverted = client
        .revert_to(
            agent.id.clone(),
            first.user_message_id.clone(),
            None,
            Some(false),
        )
        .await
        .unwrap();
    assert_eq!(reverted.restored, ["a.txt"]);
    assert_eq!(reverted.removed_messages, 0);
    assert_eq!(
        std::fs::read_to_string(root.join("a.txt")).unwrap(),
        "one\n"
    );
    assert_eq!(messages(&client, &agent.id).await.len(), 4);

    // Snapshots dropped (as the storage bound drops the oldest): undo says why and
    // changes nothing.
    let snapshots = daemon
        .data_dir()
        .join("sessions")
        .join(&agent.id)
        .join("checkpoints/snapshots");
    let moved = daemon.dir().join("snapshots-aside");
    std::fs::rename(&snapshots, &moved).unwrap();
    let e = client
        .revert_to(agent.id.clone(), first.user_message_id.clone(), None, None)
        .await
        .unwrap_err();
    let (_, kind) = error_of(&e);
    assert_eq!(kind, "invalidState");
    assert!(e.to_string().contains("was dropped"), "{e}");
    assert_eq!(messages(&client, &agent.id).await.len(), 4);
    std::fs::rename(&moved, &snapshots).unwrap();

    // A fork carries no snapshots: its inherited answers say so.
    let fork = client.fork_agent(agent.id.clone(), None).await.unwrap();
    let copied = messages(&client, &fork.id).await;
    let answer = copied.iter().find(|m| m.role == Role::Assistant).unwrap();
    let e = client
        .get_turn_diff(fork.id.clone(), answer.id.clone())
        .await
        .unwrap_err();
    assert_eq!(error_of(&e).1, "invalidState");
    let user = copied.iter().find(|m| m.role == Role::User).unwrap();
    let e = client
        .revert_to(fork.id.clone(), user.id.clone(), None, None)
        .await
        .unwrap_err();
    assert_eq!(error_of(&e).1, "invalidState");
    assert_eq!(messages(&client, &fork.id).await.len(), copied.len());
    // Without files, the copy's conversation is cut all the same.
    let cut = client
        .revert_to(fork.id.clone(), user.id.clone(), Some(false), None)
        .await
        .unwrap();
    assert_eq!(cut.removed_messages, copied.len() as u64);
    assert!(cut.restored.is_empty());

    // The storage is in the agent's folder and goes with it.
    let store = daemon
        .data_dir()
        .join("sessions")
        .join(&agent.id)
        .join("checkpoints");
    assert!(store.join("snapshots").read_dir().unwrap().next().is_some());
    client.delete_agent(agent.id.clone()).await.unwrap();
    assert!(!store.exists());
}

/// An MCP tool is a server's code: whatever it changes in the workspace while its call
/// runs is the turn's. (The test server's `sleep` stands for a tool that writes: the test
/// writes while the call is known to be running.)
#[tokio::test]
async fn what_changes_while_an_mcp_call_runs_is_the_turns_and_is_undone() {
    use crate::mcp::{setup, stdio_server, wait_status};
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("s.log");
    let config = stdio_server("s", &log, &[], "autoApprove = [\"sleep\"]");
    let (mock, _daemon, client, agent, _ws) = setup(&config).await;
    wait_status(&client, "s", agent_proto::McpServerStatus::Ready).await;
    let root = ws(&agent);
    std::fs::write(root.join("tracked.txt"), "before\n").unwrap();
    mock.push(Reply::openai_tool_calls(
        &[],
        &[("m1", "sleep", r#"{"ms": 30000}"#)],
    ));
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    let sent = client
        .send_plain(agent.id.clone(), "sleep".into())
        .await
        .unwrap();
    collect_until(&mut sub, Duration::from_secs(20), |e| {
        matches!(e.kind, EventKind::ToolProgress { .. })
    })
    .await;
    std::fs::write(root.join("tracked.txt"), "during the call\n").unwrap();
    std::fs::write(root.join("made_by_mcp.txt"), "new\n").unwrap();
    client.cancel_loop(agent.id.clone()).await.unwrap();
    collect_run(&mut sub, Duration::from_secs(10)).await;

    let diff = client
        .get_turn_diff(agent.id.clone(), sent.assistant_message_id.clone())
        .await
        .unwrap();
    let shown: Vec<(&str, TurnFileStatus)> = diff
        .files
        .iter()
        .map(|f| (f.path.as_str(), f.status))
        .collect();
    assert_eq!(
        shown,
        [
            ("made_by_mcp.txt", TurnFileStatus::Added),
            ("tracked.txt", TurnFileStatus::Modified)
        ]
    );
    let reverted = client
        .revert_to(agent.id.clone(), sent.user_message_id.clone(), None, None)
        .await
        .unwrap();
    assert_eq!(reverted.restored, ["made_by_mcp.txt", "tracked.txt"]);
    assert_eq!(
        std::fs::read_to_string(root.join("tracked.txt")).unwrap(),
        "before\n"
    );
    assert!(!root.join("made_by_mcp.txt").exists());
}
