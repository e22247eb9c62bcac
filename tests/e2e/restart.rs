//! Restarts keep agents, messages and seqs; kill -9 mid-stream leaves the message
//! `interrupted` with its partial text.

use agentd_testkit::send::SendByName;
use std::time::Duration;

use agent_proto::client::Client;
use agent_proto::rpc::AgentRpcClient;
use agent_proto::{EventKind, MessageStatus};
use agentd_testkit::events::{collect_run, collect_until, collect_until_text, text_of};
use agentd_testkit::mock_model::Reply;
use agentd_testkit::wait::eventually;

use crate::common::{before_environment, messages, new_agent, start};
use agent_proto::ToolCallBlock;

/// Polls the store (through the API) until the message holds exactly `text`, still
/// `streaming`: a save made while the stream goes on. Fails once the stored text has gone
/// past `text` (it was never saved on its own) or after 20 s.
async fn saved_while_streaming(client: &Client, agent_id: &str, message_id: &str, text: &str) {
    let what = format!("{text:?} to be saved while streaming");
    let message = eventually(Duration::from_secs(20), &what, async || {
        let stored = messages(client, agent_id).await;
        let message = stored.into_iter().find(|m| m.id == message_id).unwrap();
        let now = message.text();
        assert!(
            text.starts_with(&now),
            "{text:?} was never saved while streaming; the store went on to {now:?}"
        );
        if now == text { Ok(message) } else { Err(now) }
    })
    .await;
    assert_eq!(message.status, MessageStatus::Streaming);
}

#[tokio::test]
async fn clean_restart_keeps_everything_and_seq_continues() {
    let (mock, mut daemon) = start().await;
    let client = daemon.client().await;
    let agent = new_agent(&client, "durable").await;
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    mock.push(Reply::openai_text(&["kept ", "answer"]));
    client
        .send_plain(agent.id.clone(), "remember".into())
        .await
        .unwrap();
    let events = collect_run(&mut sub, Duration::from_secs(10)).await;
    let last_seq = events.last().unwrap().seq;
    let before = messages(&client, &agent.id).await;
    drop(sub);
    drop(client);

    let status = daemon.terminate().await;
    assert!(status.success(), "SIGTERM exits 0: {status:?}");
    assert!(!daemon.socket().exists(), "the socket file is removed");

    daemon.restart().await;
    let client = daemon.client().await;
    assert_eq!(
        client.get_agent(agent.id.clone()).await.unwrap().title,
        "durable"
    );
    assert_eq!(messages(&client, &agent.id).await, before);
    let session = client.get_session(agent.id.clone()).await.unwrap();
    assert_eq!(
        session.last_seq, last_seq,
        "a clean restart continues exactly"
    );

    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    mock.push(Reply::openai_text(&["again"]));
    client
        .send_plain(agent.id.clone(), "more".into())
        .await
        .unwrap();
    let events = collect_run(&mut sub, Duration::from_secs(10)).await;
    assert_eq!(events.first().unwrap().seq, last_seq + 1);
    let body = &mock.requests()[1].body;
    let system = body["messages"][0]["content"].as_str().unwrap();
    assert_eq!(before_environment(system, "none", "no", "none"), "");
    assert_eq!(body["messages"][2]["content"], "kept answer");
}

/// A model that streams slowly has its message saved again after each save interval, not
/// only once: each piece is in the store while the next is still on its way.
#[tokio::test]
async fn a_slow_stream_is_saved_again_while_it_streams() {
    let (mock, daemon) = start().await;
    let client = daemon.client().await;
    let agent = new_agent(&client, "slow").await;
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    // A piece a second: a save lands within 250 ms of a piece, long before the next.
    mock.push(Reply::openai_text(&["one ", "two ", "three"]).chunk_delay(Duration::from_secs(1)));
    let sent = client
        .send_plain(agent.id.clone(), "go".into())
        .await
        .unwrap();
    for (piece, so_far) in [("one", "one "), ("two", "one two ")] {
        collect_until_text(&mut sub, Duration::from_secs(20), piece).await;
        saved_while_streaming(&client, &agent.id, &sent.assistant_message_id, so_far).await;
    }
    collect_run(&mut sub, Duration::from_secs(20)).await;
}

#[tokio::test]
async fn kill_9_mid_stream_leaves_an_interrupted_message_with_its_text() {
    let (mock, mut daemon) = start().await;
    let client = daemon.client().await;
    let agent = new_agent(&client, "crash").await;
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    mock.push(Reply::openai_text(&["half ", "an ", "answer ", "never"]).stall_after(3));
    let sent = client
        .send_plain(agent.id.clone(), "go".into())
        .await
        .unwrap();
    let events = collect_until_text(&mut sub, Duration::from_secs(10), "answer ").await;
    let last_seq = events.last().unwrap().seq;
    assert_eq!(text_of(&events), "half an answer ");

    // The partial text is persisted at most 250 ms after it streamed.
    saved_while_streaming(
        &client,
        &agent.id,
        &sent.assistant_message_id,
        "half an answer ",
    )
    .await;
    drop(sub);
    drop(client);
    daemon.kill9().await;

    daemon.restart().await;
    let client = daemon.client().await;
    let stored = messages(&client, &agent.id).await;
    assert_eq!(stored.len(), 2);
    assert_eq!(stored[0].text(), "go");
    assert_eq!(stored[1].status, MessageStatus::Interrupted);
    assert_eq!(stored[1].text(), "half an answer ");
    assert_eq!(
        client.get_session(agent.id.clone()).await.unwrap().status,
        agent_proto::SessionStatus::Idle
    );

    // Seqs never go back: the next events are above everything seen before the kill.
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    mock.push(Reply::openai_text(&["recovered"]));
    client
        .send_plain(agent.id.clone(), "again".into())
        .await
        .unwrap();
    let events = collect_run(&mut sub, Duration::from_secs(10)).await;
    assert!(events.first().unwrap().seq > last_seq);
    assert_eq!(text_of(&events), "recovered");
    // A subscriber that asks for events from before the crash is told to resync.
    let mut old = client
        .subscribe_events(Some(agent.id.clone()), Some(last_seq), None)
        .await
        .unwrap();
    let first = tokio::time::timeout(Duration::from_secs(5), futures::StreamExt::next(&mut old))
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(
        matches!(first.kind, EventKind::ResyncRequired { .. }),
        "{first:?}"
    );
    assert_eq!(crate::common::integrity_check(&daemon).await, "ok");
}

#[tokio::test]
async fn kill_9_during_a_tool_leaves_the_call_interrupted_and_the_transcript_valid() {
    let (mock, mut daemon) = crate::common::start_with(crate::common::ALLOW_ALL).await;
    let client = daemon.client().await;
    let (agent, _dir) = crate::common::tool_agent(&client, None).await;
    // Unique to this test process: another suite running on the machine has its own.
    let marker = &format!("sleep 30.7713{}", std::process::id());
    let args = serde_json::json!({"command": marker}).to_string();
    mock.push(Reply::openai_tool_calls(
        &["Sleeping. "],
        &[("k1", "bash", &args)],
    ));
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    let sent = client
        .send_plain(agent.id.clone(), "sleep".into())
        .await
        .unwrap();
    collect_until(&mut sub, Duration::from_secs(10), |e| {
        matches!(e.kind, EventKind::ToolCallReady { .. })
    })
    .await;
    agentd_testkit::procs::wait_running(marker, 1, Duration::from_secs(10), "the tool to start")
        .await;
    drop(sub);
    drop(client);
    daemon.kill9().await;
    // The command's guard takes it along when the daemon dies (e2e::process_hardening).
    agentd_testkit::procs::wait_gone(marker, Duration::from_secs(20)).await;
    daemon.restart().await;
    let client = daemon.client().await;
    let stored = messages(&client, &agent.id).await;
    let assistant = stored
        .iter()
        .find(|m| m.id == sent.assistant_message_id)
        .unwrap();
    assert_eq!(assistant.status, MessageStatus::Interrupted);
    assert_eq!(assistant.text(), "Sleeping. ");
    let call = assistant
        .blocks
        .iter()
        .find_map(|b| match b {
            agent_proto::Block::ToolCall(ToolCallBlock { status, result, .. }) => {
                Some((*status, result.clone()))
            }
            _ => None,
        })
        .unwrap();
    assert_eq!(call.0, agent_proto::ToolCallStatus::Interrupted);
    assert!(call.1.unwrap().content.contains("interrupted"));
    let runs = crate::common::tool_executions(&daemon, &sent.assistant_message_id).await;
    assert_eq!(runs[0].2, "interrupted");
    // The agent works on, and the model sees the interrupted call with its result.
    mock.push(Reply::openai_text(&["ok"]));
    crate::common::send_and_collect(&client, &agent.id, "again").await;
    let requests = crate::common::model_requests(&mock);
    agentd_testkit::transcript::assert_calls_paired(&requests);
    assert!(agentd_testkit::transcript::tool_result(&requests[1], "k1").contains("interrupted"));
}

/// The calls of one answer that ended are recorded at once, the message saved with them at
/// most 250 ms later: a kill -9 in between loses nothing, the restarted daemon gives them
/// their recorded results (and the call that was running is interrupted).
#[tokio::test]
async fn kill_9_after_a_call_ended_keeps_its_recorded_result() {
    let (mock, mut daemon) = crate::common::start_with(crate::common::ALLOW_ALL).await;
    let client = daemon.client().await;
    let (agent, _dir) = crate::common::tool_agent(&client, None).await;
    // Unique to this test process: another suite running on the machine has its own.
    let marker = &format!("sleep 30.8821{}", std::process::id());
    let quick = serde_json::json!({"command": "echo quick-result"}).to_string();
    let slow = serde_json::json!({"command": marker}).to_string();
    mock.push(Reply::openai_tool_calls(
        &[],
        &[("q1", "bash", &quick), ("s1", "bash", &slow)],
    ));
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    let sent = client
        .send_plain(agent.id.clone(), "two commands".into())
        .await
        .unwrap();
    collect_until(
        &mut sub,
        Duration::from_secs(20),
        |e| matches!(&e.kind, EventKind::ToolResult { tool_call_id, .. } if tool_call_id == "q1"),
    )
    .await;
    agentd_testkit::procs::wait_running(
        marker,
        1,
        Duration::from_secs(10),
        "the second command to start",
    )
    .await;
    drop(sub);
    drop(client);
    daemon.kill9().await;
    agentd_testkit::procs::wait_gone(marker, Duration::from_secs(20)).await;
    daemon.restart().await;
    let client = daemon.client().await;
    let stored = messages(&client, &agent.id).await;
    let assistant = stored
        .iter()
        .find(|m| m.id == sent.assistant_message_id)
        .unwrap();
    assert_eq!(assistant.status, MessageStatus::Interrupted);
    let calls: Vec<(String, agent_proto::ToolCallStatus, String)> = assistant
        .blocks
        .iter()
        .filter_map(|b| match b {
            agent_proto::Block::ToolCall(ToolCallBlock {
                tool_call_id,
                status,
                result,
                ..
            }) => Some((
                tool_call_id.clone(),
                *status,
                result
                    .as_ref()
                    .map(|r| r.content.clone())
                    .unwrap_or_default(),
            )),
            _ => None,
        })
        .collect();
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert_eq!(
        calls[0].1,
        agent_proto::ToolCallStatus::Success,
        "{calls:?}"
    );
    assert!(calls[0].2.contains("quick-result"), "{calls:?}");
    assert_eq!(
        calls[1].1,
        agent_proto::ToolCallStatus::Interrupted,
        "{calls:?}"
    );
    mock.push(Reply::openai_text(&["ok"]));
    crate::common::send_and_collect(&client, &agent.id, "again").await;
    let requests = crate::common::model_requests(&mock);
    agentd_testkit::transcript::assert_calls_paired(&requests);
    assert!(agentd_testkit::transcript::tool_result(&requests[1], "q1").contains("quick-result"));
}

/// Sends "go" to a tool agent whose model calls `bash` with `command`, collects the run to
/// its permission prompt, and kills the daemon -9 there. The assistant message's id.
async fn prompt_then_kill_9(
    mock: &agentd_testkit::mock_model::MockModel,
    daemon: &mut agentd_testkit::daemon::TestDaemon,
    agent_id: &str,
    command: &str,
) -> String {
    let client = daemon.client().await;
    mock.push(agentd_testkit::scenario::bash_call("p1", command));
    let (sent, events) = crate::common::send_and_collect(&client, agent_id, "go").await;
    crate::common::permission_request(&events);
    drop(client);
    daemon.kill9().await;
    sent.assistant_message_id
}

/// Sets an agent's stored session status, as the test's own edit of the database.
async fn store_session_status(
    daemon: &agentd_testkit::daemon::TestDaemon,
    agent_id: &str,
    status: &str,
) {
    let db = crate::common::database(daemon).await;
    sqlx::query("UPDATE agents SET session_status = $1 WHERE id = $2")
        .bind(status)
        .bind(agent_id)
        .execute(&db)
        .await
        .unwrap();
    db.close().await;
}

#[tokio::test]
async fn a_prompt_saved_just_before_a_kill_9_is_still_waiting_after_the_restart() {
    let (mock, mut daemon) = crate::common::start_with("").await;
    let client = daemon.client().await;
    let (agent, _dir) = crate::common::tool_agent(&client, None).await;
    drop(client);
    let message_id =
        prompt_then_kill_9(&mock, &mut daemon, &agent.id, "echo granted-after-restart").await;
    // A run saves the waiting call and announces its prompt before it saves the session's
    // status: a kill -9 in between leaves the session `generating` in the store.
    store_session_status(&daemon, &agent.id, "generating").await;
    daemon.restart().await;
    let client = daemon.client().await;

    let session = client.get_session(agent.id.clone()).await.unwrap();
    assert_eq!(
        session.status,
        agent_proto::SessionStatus::WaitingPermission
    );
    let pending: Vec<_> = session
        .pending_permissions
        .iter()
        .map(|p| (p.message_id.as_str(), p.tool_call_id.as_str()))
        .collect();
    assert_eq!(pending, [(message_id.as_str(), "p1")]);
    // The prompt stands: a new message is refused, the grant runs the call.
    let refused = client
        .send_plain(agent.id.clone(), "something else".into())
        .await
        .unwrap_err();
    assert_eq!(crate::common::error_of(&refused).1, "invalidState");
    mock.push(Reply::openai_text(&["done"]));
    let events = agentd_testkit::scenario::answer_prompt(
        &client,
        &agent.id,
        &message_id,
        "p1",
        true,
        agent_proto::Remember::Once,
    )
    .await;
    let (status, output, _) = crate::common::tool_result_of(&events, "p1");
    assert_eq!(status, agent_proto::ToolCallStatus::Success);
    assert!(output.contains("granted-after-restart"), "{output}");
}

#[tokio::test]
async fn a_prompt_of_an_answer_the_conversation_went_past_cannot_be_granted() {
    let (mock, mut daemon) = crate::common::start_with("").await;
    let client = daemon.client().await;
    let (agent, _dir) = crate::common::tool_agent(&client, None).await;
    mock.push(Reply::openai_text(&["hello"]));
    let (first, _) = crate::common::send_and_collect(&client, &agent.id, "hi").await;
    drop(client);
    let waiting = prompt_then_kill_9(&mock, &mut daemon, &agent.id, "echo never-runs").await;
    // The state a restart used to leave when it lost a prompt (the session idle, a new
    // message accepted and answered): the waiting answer is no longer the last one.
    let db = crate::common::database(&daemon).await;
    let ord = async |id: &str| -> i64 {
        sqlx::query_scalar("SELECT ord FROM messages WHERE id = $1")
            .bind(id.to_owned())
            .fetch_one(&db)
            .await
            .unwrap()
    };
    let (old, new) = (ord(&first.assistant_message_id).await, ord(&waiting).await);
    for (id, to) in [
        (&first.assistant_message_id, -1),
        (&waiting, old),
        (&first.assistant_message_id, new),
    ] {
        sqlx::query("UPDATE messages SET ord = $1 WHERE id = $2")
            .bind(to)
            .bind(id)
            .execute(&db)
            .await
            .unwrap();
    }
    db.close().await;
    store_session_status(&daemon, &agent.id, "idle").await;
    daemon.restart().await;
    let client = daemon.client().await;

    let refused = client
        .handle_permission_response(waiting.clone(), "p1".into(), true, None, None)
        .await
        .unwrap_err();
    assert_eq!(crate::common::error_of(&refused).1, "permissionNotPending");
    let session = client.get_session(agent.id.clone()).await.unwrap();
    assert_eq!(session.status, agent_proto::SessionStatus::Idle);
    assert_eq!(crate::common::model_requests(&mock).len(), 2, "nothing ran");
}
