//! Loop control: maxSteps and continueLoop, pause and resume, cancel during a tool (no
//! process left behind).

use agentd_testkit::send::SendByName;
use std::time::{Duration, Instant};

use agent_proto::rpc::AgentRpcClient;
use agent_proto::{EventKind, LoopFinishReason, MessageStatus, SessionStatus, ToolCallStatus};
use agentd_testkit::events::{collect_run, collect_until, type_names};
use agentd_testkit::mock_model::Reply;
use agentd_testkit::procs;
use agentd_testkit::transcript::assert_calls_paired;
use agentd_testkit::wait::eventually;
use serde_json::json;

use crate::common::{
    ALLOW_ALL, error_of, messages, model_requests, send_and_collect, start_with, tool_agent,
    tool_result_of, tool_scenario,
};

fn list_call(id: &str) -> Reply {
    Reply::openai_tool_calls(&[], &[(id, "list_directory", "{}")])
}

#[tokio::test]
async fn max_steps_stops_the_run_and_continue_loop_goes_on() {
    let (mock, daemon) = start_with(ALLOW_ALL).await;
    let client = daemon.client().await;
    let (agent, _dir) = tool_agent(&client, Some(json!({"maxSteps": 2}))).await;
    mock.push(list_call("s1"));
    mock.push(list_call("s2"));
    let (sent, events) = send_and_collect(&client, &agent.id, "explore").await;
    assert_eq!(
        events.last().unwrap().kind,
        EventKind::LoopFinished {
            message_id: sent.assistant_message_id.clone(),
            reason: LoopFinishReason::MaxSteps,
            error: None
        }
    );
    assert_eq!(
        tool_result_of(&events, "s2").0,
        ToolCallStatus::Success,
        "the step's calls ran"
    );
    assert!(
        !type_names(&events).contains(&"messageCompleted"),
        "the message is not finished"
    );
    let stored = messages(&client, &agent.id).await;
    assert_eq!(stored[1].status, MessageStatus::Waiting);
    assert_eq!(
        client.get_session(agent.id.clone()).await.unwrap().status,
        SessionStatus::Idle
    );

    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    mock.push(list_call("s3"));
    mock.push(Reply::openai_text(&["Seen enough."]));
    let continued = client.continue_loop(agent.id.clone()).await.unwrap();
    assert_eq!(continued.assistant_message_id, sent.assistant_message_id);
    let events = collect_run(&mut sub, Duration::from_secs(20)).await;
    assert!(events.iter().any(|e| e.kind
        == EventKind::MessageStarted {
            message_id: sent.assistant_message_id.clone(),
            message: None,
        }));
    assert!(matches!(
        events.last().unwrap().kind,
        EventKind::LoopFinished {
            reason: LoopFinishReason::Completed,
            ..
        }
    ));
    let stored = messages(&client, &agent.id).await;
    assert_eq!(stored.len(), 2);
    assert_eq!(stored[1].status, MessageStatus::Done);
    assert_eq!(stored[1].text(), "Seen enough.");
    // Nothing left to continue.
    let err = client.continue_loop(agent.id.clone()).await.unwrap_err();
    assert_eq!(error_of(&err).1, "invalidState");
    let requests = model_requests(&mock);
    assert_eq!(requests.len(), 4);
    assert_calls_paired(&requests);
}

#[tokio::test]
async fn cancel_during_a_tool_kills_its_processes() {
    let (mock, _daemon, client, agent, _dir) = tool_scenario(ALLOW_ALL).await.into_parts();
    // An unlikely duration marks our sleep among the machine's processes.
    // Unique to this test process: another suite running on the machine has its own.
    let marker = &format!("sleep 30.4821{}", std::process::id());
    let args = json!({"command": format!("{marker} | {marker}; echo never")}).to_string();
    mock.push(Reply::openai_tool_calls(&[], &[("slow", "bash", &args)]));
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
    procs::wait_running(marker, 2, Duration::from_secs(10), "the sleeps to start").await;
    let asked = Instant::now();
    assert!(
        client
            .cancel_loop(agent.id.clone())
            .await
            .unwrap()
            .cancelled
    );
    let events = collect_run(&mut sub, Duration::from_secs(10)).await;
    let finished = asked.elapsed();
    let gone = procs::wait_gone(marker, Duration::from_secs(10)).await;
    eprintln!(
        "cancel during a tool: loopFinished after {finished:?}, processes gone after {:?}",
        asked.elapsed().max(gone)
    );
    let (status, content, _) = tool_result_of(&events, "slow");
    assert_eq!(status, ToolCallStatus::Cancelled, "{content}");
    assert!(!content.contains("never"));
    assert!(matches!(
        events.last().unwrap().kind,
        EventKind::LoopFinished {
            reason: LoopFinishReason::Cancelled,
            ..
        }
    ));
    let stored = messages(&client, &agent.id).await;
    let assistant = stored
        .iter()
        .find(|m| m.id == sent.assistant_message_id)
        .unwrap();
    assert_eq!(assistant.status, MessageStatus::Cancelled);
    // The next request is a valid transcript.
    mock.push(Reply::openai_text(&["ok"]));
    send_and_collect(&client, &agent.id, "next").await;
    assert_calls_paired(&model_requests(&mock));
}

#[tokio::test]
async fn pause_stops_at_a_checkpoint_and_resume_goes_on() {
    let (mock, _daemon, client, agent, _dir) = tool_scenario(ALLOW_ALL).await.into_parts();
    mock.push(Reply::openai_tool_calls(
        &[],
        &[
            (
                "p1",
                "bash",
                r#"{"command": "touch started; sleep 0.5; echo first"}"#,
            ),
            ("p2", "bash", r#"{"command": "echo second"}"#),
        ],
    ));
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    client
        .send_plain(agent.id.clone(), "two steps".into())
        .await
        .unwrap();
    // Pause while the first call runs.
    let started = crate::common::ws(&agent).join("started");
    eventually(
        Duration::from_secs(10),
        "the first call to start",
        async || started.exists(),
    )
    .await;
    let status = client.pause_session(agent.id.clone()).await.unwrap().status;
    assert_eq!(
        status,
        SessionStatus::Generating,
        "the pause takes effect at the next checkpoint"
    );
    let events = collect_run(&mut sub, Duration::from_secs(10)).await;
    assert!(matches!(
        events.last().unwrap().kind,
        EventKind::LoopFinished {
            reason: LoopFinishReason::Paused,
            error: None,
            ..
        }
    ));
    assert_eq!(
        tool_result_of(&events, "p1").0,
        ToolCallStatus::Success,
        "the running call finished"
    );
    assert!(!events.iter().any(
        |e| matches!(&e.kind, EventKind::ToolResult { tool_call_id, .. } if tool_call_id == "p2")
    ));
    assert_eq!(
        client.get_session(agent.id.clone()).await.unwrap().status,
        SessionStatus::Paused
    );
    let err = client
        .send_plain(agent.id.clone(), "hi".into())
        .await
        .unwrap_err();
    assert_eq!(error_of(&err).1, "invalidState");

    mock.push(Reply::openai_text(&["both done"]));
    let status = client
        .resume_session(agent.id.clone())
        .await
        .unwrap()
        .status;
    assert_eq!(status, SessionStatus::Generating);
    let events = collect_run(&mut sub, Duration::from_secs(20)).await;
    assert_eq!(tool_result_of(&events, "p2").1, "second\nexit code: 0");
    assert!(matches!(
        events.last().unwrap().kind,
        EventKind::LoopFinished {
            reason: LoopFinishReason::Completed,
            ..
        }
    ));
    let err = client.resume_session(agent.id.clone()).await.unwrap_err();
    assert_eq!(error_of(&err).1, "invalidState");
    assert_calls_paired(&model_requests(&mock));
}

#[tokio::test]
async fn continue_loop_retries_after_an_error_on_the_same_message() {
    let (mock, _daemon, client, agent, _dir) = tool_scenario(ALLOW_ALL).await.into_parts();
    mock.push(list_call("e1"));
    mock.push(Reply::status(
        503,
        r#"{"error":{"message":"overloaded, try again"}}"#,
    ));
    let (sent, events) = send_and_collect(&client, &agent.id, "go").await;
    assert!(matches!(
        events.last().unwrap().kind,
        EventKind::LoopFinished {
            reason: LoopFinishReason::Error,
            ..
        }
    ));
    assert_eq!(
        client.get_session(agent.id.clone()).await.unwrap().status,
        SessionStatus::Error
    );
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    mock.push(Reply::openai_text(&["Recovered."]));
    let continued = client.continue_loop(agent.id.clone()).await.unwrap();
    assert_eq!(continued.assistant_message_id, sent.assistant_message_id);
    let events = collect_run(&mut sub, Duration::from_secs(20)).await;
    assert!(matches!(
        events.last().unwrap().kind,
        EventKind::LoopFinished {
            reason: LoopFinishReason::Completed,
            ..
        }
    ));
    let stored = messages(&client, &agent.id).await;
    assert_eq!(stored.len(), 2);
    assert_eq!(stored[1].status, MessageStatus::Done);
    assert_eq!(stored[1].text(), "Recovered.");
    // The retried request carries the first step (call and result) but not the error.
    let requests = model_requests(&mock);
    assert_eq!(requests.len(), 3);
    assert_eq!(
        requests[2].body, requests[1].body,
        "the failed step is sent again as it was"
    );
    assert_calls_paired(&requests);
}

#[tokio::test]
async fn sending_after_max_steps_closes_the_stopped_answer() {
    let (mock, daemon) = start_with(ALLOW_ALL).await;
    let client = daemon.client().await;
    let (agent, _ws) = tool_agent(&client, Some(json!({"maxSteps": 1}))).await;
    mock.push(list_call("m1"));
    let (_, events) = send_and_collect(&client, &agent.id, "look around").await;
    assert!(matches!(
        events.last().unwrap().kind,
        EventKind::LoopFinished {
            reason: LoopFinishReason::MaxSteps,
            ..
        }
    ));
    assert_eq!(
        messages(&client, &agent.id).await[1].status,
        MessageStatus::Waiting
    );
    mock.push(Reply::openai_text(&["new topic"]));
    send_and_collect(&client, &agent.id, "something else").await;
    let stored = messages(&client, &agent.id).await;
    assert_eq!(stored.len(), 4);
    assert_eq!(
        stored[1].status,
        MessageStatus::Done,
        "closed, not waiting forever"
    );
    assert_eq!(stored[3].status, MessageStatus::Done);
    assert_calls_paired(&model_requests(&mock));
}
