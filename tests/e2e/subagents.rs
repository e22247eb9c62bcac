//! Subagents (`task`) end to end: real child agents seen by every client, running in
//! parallel with their prompts answered from another client, cancelled with their parent,
//! in the background with their result delivered later, and limited in depth and type.
//!
//! Parent and children share one mock model; which request is whose is decided by routes on
//! texts only that request carries (the children's prompts, their tools' output), so the
//! order in which parallel children call the model does not matter.

use agentd_testkit::send::SendByName;
use std::time::Duration;

use agent_proto::rpc::AgentRpcClient;
use agent_proto::{Event, EventKind, LoopFinishReason, SessionStatus};
use agentd_testkit::events::{collect_run, collect_until};
use agentd_testkit::mock_model::Reply;
use agentd_testkit::transcript::tool_result;
use agentd_testkit::wait::eventually;
use serde_json::{Value, json};

use crate::common::{ALLOW_ALL, model_requests, start, start_with, tool_agent};

fn tasks(calls: &[(&str, Value)]) -> Reply {
    let args: Vec<(String, String)> = calls
        .iter()
        .map(|(id, a)| (id.to_string(), a.to_string()))
        .collect();
    let refs: Vec<(&str, &str, &str)> = args
        .iter()
        .map(|(id, a)| (id.as_str(), "task", a.as_str()))
        .collect();
    Reply::openai_tool_calls(&[], &refs)
}

fn task(prompt: &str, kind: &str) -> Value {
    json!({"description": "a subtask", "prompt": prompt, "subagentType": kind})
}

fn bash(id: &str, command: &str) -> Reply {
    let args = json!({ "command": command }).to_string();
    Reply::openai_tool_calls(&[], &[(id, "bash", &args)])
}

/// Follows every agent's events until the parent's run ends; returns them all.
async fn until_parent_finished(
    sub: &mut agent_proto::client::Subscription<Event>,
    parent: &str,
) -> Vec<Event> {
    collect_until(sub, Duration::from_secs(60), |e| {
        e.agent_id == parent && matches!(e.kind, EventKind::LoopFinished { .. })
    })
    .await
}

fn finish_of(events: &[Event], agent: &str) -> Option<LoopFinishReason> {
    events.iter().rev().find_map(|e| match &e.kind {
        EventKind::LoopFinished { reason, .. } if e.agent_id == agent => Some(*reason),
        _ => None,
    })
}

#[tokio::test]
async fn two_subagents_run_in_parallel_and_a_second_client_answers_ones_prompt() {
    let (mock, daemon) = start().await;
    let watcher = daemon.client().await;
    let answerer = daemon.client().await;
    let (parent, _dir) = tool_agent(&watcher, None).await;
    // Most specific first: the parent's follow-up carries both children's reports.
    mock.route("REPORT-A", Reply::openai_text(&["Both done."]));
    mock.route("A-DONE", Reply::openai_text(&["REPORT-A: ran it"]));
    mock.route("SUBTASK-A", bash("a1", "echo A-DONE"));
    mock.route("SUBTASK-B", Reply::openai_text(&["REPORT-B: looked"]));
    mock.push(tasks(&[
        ("t1", task("SUBTASK-A: run the command", "general")),
        ("t2", task("SUBTASK-B: look around", "explore")),
    ]));

    let mut all = watcher.subscribe_events(None, None, None).await.unwrap();
    let mut answers = answerer.subscribe_events(None, None, None).await.unwrap();
    watcher
        .send_plain(parent.id.clone(), "delegate".into())
        .await
        .unwrap();

    // The second client answers child A's prompt only once child A's run has stopped at
    // it AND child B has finished: run one after the other, A first, the test would hang.
    let mut waiting: Option<String> = None;
    let mut completed: Vec<String> = Vec::new();
    let seen = collect_until(&mut answers, Duration::from_secs(60), |e| {
        match &e.kind {
            EventKind::LoopFinished {
                reason: LoopFinishReason::WaitingPermission,
                ..
            } => waiting = Some(e.agent_id.clone()),
            EventKind::LoopFinished {
                reason: LoopFinishReason::Completed,
                ..
            } if e.agent_id != parent.id => completed.push(e.agent_id.clone()),
            _ => {}
        }
        waiting.is_some() && !completed.is_empty()
    })
    .await;
    let (child_a, message_id, call_id) = seen
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::PermissionRequested {
                message_id,
                tool_call_id,
                ..
            } => Some((e.agent_id.clone(), message_id.clone(), tool_call_id.clone())),
            _ => None,
        })
        .expect("child A's prompt");
    assert_ne!(child_a, parent.id);
    answerer
        .handle_permission_response(message_id, call_id, true, None, None)
        .await
        .unwrap();

    let events = until_parent_finished(&mut all, &parent.id).await;
    assert_eq!(
        finish_of(&events, &parent.id),
        Some(LoopFinishReason::Completed)
    );

    // Both children are real agents, announced to every client.
    let children: Vec<_> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::AgentCreated { agent } => Some(agent.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(children.len(), 2);
    for child in &children {
        assert_eq!(child.parent_agent_id.as_deref(), Some(parent.id.as_str()));
        assert_eq!(child.workspace, parent.workspace);
    }
    let a = children.iter().find(|c| c.id == child_a).unwrap();
    let b = children.iter().find(|c| c.id != child_a).unwrap();
    assert_eq!(a.subagent_type.as_deref(), Some("general"));
    assert_eq!(a.parent_tool_call_id.as_deref(), Some("t1"));
    assert_eq!(b.subagent_type.as_deref(), Some("explore"));

    // The children's final texts are the parent's tool results.
    let requests = model_requests(&mock);
    let last = requests
        .iter()
        .rev()
        .find(|r| r.body_text.contains("REPORT-A"))
        .unwrap();
    assert_eq!(tool_result(last, "t1"), "REPORT-A: ran it");
    assert_eq!(tool_result(last, "t2"), "REPORT-B: looked");

    // The explore child was offered read-only tools; the general one had bash, not task.
    let tools_of = |needle: &str| -> Vec<String> {
        let r = requests
            .iter()
            .find(|r| r.body_text.contains(needle) && !r.body_text.contains("delegate"))
            .unwrap();
        r.body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
            .collect()
    };
    let explore = tools_of("SUBTASK-B");
    assert!(explore.contains(&"read_file".to_owned()));
    assert!(
        !explore
            .iter()
            .any(|t| t == "bash" || t == "write_file" || t == "task")
    );
    let general = tools_of("SUBTASK-A");
    assert!(general.contains(&"bash".to_owned()));
    assert!(!general.contains(&"task".to_owned()));

    // listAgents shows them; their own messages are theirs.
    let listed = watcher
        .list_agents(None, Some(100), None, None, None)
        .await
        .unwrap()
        .agents;
    assert!(listed.iter().any(|x| x.id == child_a));
    let child_messages = watcher
        .list_messages(child_a.clone(), None, None, None)
        .await
        .unwrap()
        .messages;
    assert!(child_messages[0].text().contains("SUBTASK-A"));
}

#[tokio::test]
async fn cancelling_the_parent_kills_a_childs_running_command() {
    let (mock, daemon) = start_with(ALLOW_ALL).await;
    let client = daemon.client().await;
    let (parent, _dir) = tool_agent(&client, None).await;
    // Unique to this test process: another suite running on the machine has its own.
    let marker = &format!("agentd-e2e-subagent-sleep-4417{}", std::process::id());
    mock.route(
        "SUBTASK-SLEEP",
        bash("s1", &format!("sleep 600 # {marker}")),
    );
    mock.push(tasks(&[("t1", task("SUBTASK-SLEEP: wait", "general"))]));
    let mut sub = client.subscribe_events(None, None, None).await.unwrap();
    client
        .send_plain(parent.id.clone(), "delegate".into())
        .await
        .unwrap();
    let started = collect_until(&mut sub, Duration::from_secs(60), |e| {
        matches!(&e.kind, EventKind::ToolCallStarted { tool_call_id, .. } if tool_call_id == "s1")
    })
    .await;
    let child = started.last().unwrap().agent_id.clone();
    // The command is running (its process exists) before the cancel.
    agentd_testkit::procs::wait_running(marker, 1, Duration::from_secs(20), "the command to run")
        .await;

    client.cancel_loop(parent.id.clone()).await.unwrap();
    let events = until_parent_finished(&mut sub, &parent.id).await;
    assert_eq!(
        finish_of(&events, &parent.id),
        Some(LoopFinishReason::Cancelled)
    );
    agentd_testkit::procs::wait_gone(marker, Duration::from_secs(20)).await;
    // The child's run ended too, and nothing of it is left running.
    eventually(
        Duration::from_secs(20),
        "the child's run to end",
        async || {
            let session = client.get_session(child.clone()).await.unwrap();
            if session.status == SessionStatus::Idle && session.run_message_id.is_none() {
                Ok(())
            } else {
                Err(session)
            }
        },
    )
    .await;
}

#[tokio::test]
async fn deleting_the_parent_deletes_its_subagents_and_keeps_its_forks() {
    let (mock, daemon) = start_with(ALLOW_ALL).await;
    let client = daemon.client().await;
    let (parent, _dir) = tool_agent(&client, None).await;
    let marker = &format!("agentd-e2e-subagent-sleep-4418{}", std::process::id());
    mock.route(
        "SUBTASK-DELETED",
        bash("d1", &format!("sleep 600 # {marker}")),
    );
    mock.push(tasks(&[("t1", task("SUBTASK-DELETED: wait", "general"))]));
    let mut sub = client.subscribe_events(None, None, None).await.unwrap();
    client
        .send_plain(parent.id.clone(), "delegate".into())
        .await
        .unwrap();
    let started = collect_until(&mut sub, Duration::from_secs(60), |e| {
        matches!(&e.kind, EventKind::ToolCallStarted { tool_call_id, .. } if tool_call_id == "d1")
    })
    .await;
    let child = started.last().unwrap().agent_id.clone();
    agentd_testkit::procs::wait_running(marker, 1, Duration::from_secs(20), "the command to run")
        .await;
    let fork = client.fork_agent(parent.id.clone(), None).await.unwrap();

    client.delete_agent(parent.id.clone()).await.unwrap();
    // Every client is told of the child's end too, and its command does not live on.
    collect_until(&mut sub, Duration::from_secs(30), |e| {
        e.agent_id == child && matches!(e.kind, EventKind::AgentDeleted {})
    })
    .await;
    agentd_testkit::procs::wait_gone(marker, Duration::from_secs(20)).await;
    let listed: Vec<String> = client
        .list_agents(None, None, None, None, None)
        .await
        .unwrap()
        .agents
        .into_iter()
        .map(|a| a.id)
        .collect();
    assert!(!listed.contains(&child), "{listed:?}");
    assert!(listed.contains(&fork.id), "{listed:?}");
    let gone = client.get_agent(child.clone()).await.unwrap_err();
    assert_eq!(crate::common::error_of(&gone).1, "agentNotFound");
}

#[tokio::test]
async fn a_background_task_reports_when_done_and_its_result_reaches_the_next_request() {
    let (mock, daemon) = start().await;
    let client = daemon.client().await;
    let (parent, _dir) = tool_agent(&client, None).await;
    // Only the explore child's requests carry its system prompt.
    mock.route(
        "to find something out",
        Reply::openai_text(&["BG-RESULT: 42 files"]),
    );
    let mut args = task("SUBTASK-BG: count files", "explore");
    args["background"] = json!(true);
    mock.push(tasks(&[("t1", args)]));
    mock.push(Reply::openai_text(&["Started it."]));
    let mut sub = client.subscribe_events(None, None, None).await.unwrap();
    client
        .send_plain(parent.id.clone(), "in the background".into())
        .await
        .unwrap();

    // The call returned at once with the child's id; the parent's answer completed and
    // `backgroundTaskFinished` came (in either order: the child may be quicker).
    let (mut reported, mut answered) = (false, false);
    let events = collect_until(&mut sub, Duration::from_secs(60), |e| {
        reported |= matches!(e.kind, EventKind::BackgroundTaskFinished { .. });
        answered |= e.agent_id == parent.id && matches!(e.kind, EventKind::LoopFinished { .. });
        reported && answered
    })
    .await;
    let (child, status) = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::BackgroundTaskFinished {
                child_agent_id,
                tool_call_id,
                status,
            } if e.agent_id == parent.id && tool_call_id == "t1" => {
                Some((child_agent_id.clone(), *status))
            }
            _ => None,
        })
        .unwrap();
    assert_eq!(status, LoopFinishReason::Completed);
    let first = model_requests(&mock)
        .into_iter()
        .find(|r| r.body_text.contains("in the background") && r.body_text.contains("\"t1\""))
        .expect("the parent's follow-up");
    let returned = tool_result(&first, "t1");
    assert!(returned.contains(&child), "{returned}");
    assert!(!returned.contains("BG-RESULT"), "{returned}");
    assert_eq!(
        finish_of(&events, &parent.id),
        Some(LoopFinishReason::Completed)
    );

    // The next request carries the result, once.
    mock.push(Reply::openai_text(&["Noted."]));
    let mut own = client
        .subscribe_events(Some(parent.id.clone()), None, None)
        .await
        .unwrap();
    client
        .send_plain(parent.id.clone(), "and now?".into())
        .await
        .unwrap();
    collect_run(&mut own, Duration::from_secs(30)).await;
    let last = model_requests(&mock).pop().unwrap();
    assert!(last.body_text.contains("BG-RESULT: 42 files"));
    assert!(last.body_text.contains(&child));
    mock.push(Reply::openai_text(&["Again."]));
    client
        .send_plain(parent.id.clone(), "once more".into())
        .await
        .unwrap();
    collect_run(&mut own, Duration::from_secs(30)).await;
    let last = model_requests(&mock).pop().unwrap();
    assert_eq!(last.body_text.matches("BG-RESULT").count(), 1);
}

#[tokio::test]
async fn depth_and_type_are_limited() {
    // Default depth 2: a nester may start a nester, whose own `task` is refused.
    let config = "[[subagents.types]]\nname = \"nester\"\ntools = [\"task\"]\n";
    let (mock, daemon) = start_with(config).await;
    let client = daemon.client().await;
    let (parent, _dir) = tool_agent(&client, None).await;
    // Most specific first: each follow-up carries the report of the level below (or, at
    // the bottom, the refusal); each first request its task.
    mock.route("L1-REPORT", Reply::openai_text(&["done"]));
    mock.route("L2-REPORT", Reply::openai_text(&["L1-REPORT"]));
    mock.route("nest at most 2 level", Reply::openai_text(&["L2-REPORT"]));
    mock.route(
        "SUBTASK-L2",
        tasks(&[("g2", task("SUBTASK-L3: deeper still", "nester"))]),
    );
    mock.route(
        "SUBTASK-L1",
        tasks(&[("g1", task("SUBTASK-L2: deeper", "nester"))]),
    );
    mock.push(tasks(&[
        ("t1", task("SUBTASK-L1: go deep", "nester")),
        ("t2", task("SUBTASK-X", "wizard")),
    ]));
    let mut sub = client.subscribe_events(None, None, None).await.unwrap();
    client
        .send_plain(parent.id.clone(), "go".into())
        .await
        .unwrap();
    let events = until_parent_finished(&mut sub, &parent.id).await;
    assert_eq!(
        finish_of(&events, &parent.id),
        Some(LoopFinishReason::Completed),
        "{}",
        agentd_testkit::events::summary(&events)
    );
    let requests = model_requests(&mock);
    let refused = requests
        .iter()
        .find(|r| r.body_text.contains("\"g2\"") && r.body_text.contains("nest at most"))
        .map(|r| tool_result(r, "g2"))
        .expect("the second level's follow-up");
    assert!(refused.contains("nest at most 2 level"), "{refused}");
    let parent_follow_up = requests
        .iter()
        .find(|r| r.body_text.contains("\"t2\"") && r.body_text.contains("L1-REPORT"))
        .unwrap();
    assert_eq!(tool_result(parent_follow_up, "t1"), "L1-REPORT");
    let unknown = tool_result(parent_follow_up, "t2");
    assert!(
        unknown.contains("wizard") && unknown.contains("explore"),
        "{unknown}"
    );
    // Two levels of children exist, no third, no wizard.
    let created: Vec<_> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::AgentCreated { agent } => Some(agent.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(created.len(), 2);
    let l1 = created
        .iter()
        .find(|a| a.parent_agent_id.as_deref() == Some(parent.id.as_str()))
        .unwrap();
    assert!(
        created
            .iter()
            .any(|a| a.parent_agent_id.as_deref() == Some(l1.id.as_str()))
    );
}

/// Profiles for the parents of the tests below: the config allows `execute`, their
/// profiles take it back (or `bash` itself); `runner` names its own tools.
const NARROW_PARENTS: &str = r#"
[permissions]
execute = "allow"

[[profiles]]
name = "no-exec"
extends = "planner"
permissions = { execute = "deny" }

[[profiles]]
name = "careful"
extends = "planner"
permissions = { execute = "ask" }

[[profiles]]
name = "no-bash"
extends = "planner"
remove_tools = ["bash"]

[[subagents.types]]
name = "runner"
tools = ["bash", "read_file", "web_fetch", "task"]
"#;

/// An agent-mode parent with `profile` (and `settings`) in a fresh workspace.
async fn parent_with(
    client: &agent_proto::client::Client,
    profile: Option<&str>,
    settings: Option<Value>,
) -> (agent_proto::Agent, tempfile::TempDir) {
    let workspace = tempfile::tempdir().unwrap();
    let path = std::fs::canonicalize(workspace.path()).unwrap();
    let agent = client
        .create_agent(
            Some("parent".into()),
            Some(agent_proto::AgentMode::Agent),
            None,
            None,
            None,
            Some(path.display().to_string()),
            profile.map(str::to_owned),
            settings,
            None,
        )
        .await
        .expect("createAgent");
    (agent, workspace)
}

/// The names of the tools a request offered, sorted.
fn offered(request: &agentd_testkit::mock_model::RecordedRequest) -> Vec<String> {
    let mut names: Vec<String> = request.body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    names
}

/// A subagent type with its own `tools` list once dropped the parent's profile: a parent
/// whose profile denied `execute` had a child run bash. A child's tools are those its type
/// names that the parent has, and its rules are the parent's (config, profile and the
/// parent's own settings layered).
#[tokio::test]
async fn a_typed_subagent_gets_no_tool_or_permission_its_parent_lacks() {
    let (mock, daemon) = start_with(NARROW_PARENTS).await;
    let client = daemon.client().await;
    let mut sub = client.subscribe_events(None, None, None).await.unwrap();
    // Each parent delegates one task; its child tries bash, then reports.
    mock.route("PARENT-FOLLOW-UP", Reply::openai_text(&["All done."]));
    mock.route(
        "denies running commands",
        Reply::openai_text(&["PARENT-FOLLOW-UP: it was denied"]),
    );
    mock.route("SUBTASK-RUN", bash("r1", "touch ran-by-child"));
    mock.route(
        "SUBTASK-LOOK",
        Reply::openai_text(&["PARENT-FOLLOW-UP: looked"]),
    );

    // A profile that denies execute; then the parent's own settings that deny it.
    let denying: [(Option<&str>, Option<Value>); 2] = [
        (Some("no-exec"), None),
        (None, Some(json!({"permissions": {"execute": "deny"}}))),
    ];
    for (profile, settings) in denying {
        let (parent, dir) = parent_with(&client, profile, settings).await;
        mock.push(tasks(&[("t1", task("SUBTASK-RUN: run it", "runner"))]));
        client
            .send_plain(parent.id.clone(), "delegate".into())
            .await
            .unwrap();
        let events = until_parent_finished(&mut sub, &parent.id).await;
        assert_eq!(
            finish_of(&events, &parent.id),
            Some(LoopFinishReason::Completed),
            "{profile:?}: {}",
            agentd_testkit::events::summary(&events)
        );
        let (status, content) = events
            .iter()
            .find_map(|e| match &e.kind {
                EventKind::ToolResult {
                    tool_call_id,
                    status,
                    content,
                    ..
                } if tool_call_id == "r1" && e.agent_id != parent.id => {
                    Some((*status, content.clone()))
                }
                _ => None,
            })
            .expect("the child's bash call has a result");
        assert_eq!(
            status,
            agent_proto::ToolCallStatus::Denied,
            "{profile:?}: {content}"
        );
        assert!(content.contains("denies running commands"), "{content}");
        assert!(
            !dir.path().join("ran-by-child").exists(),
            "{profile:?}: the child ran bash"
        );
    }
    // The child was offered what its type names and the parent has: web_fetch is not in
    // `planner`, so no child got it; task is.
    let child_request = model_requests(&mock)
        .into_iter()
        .find(|r| r.body_text.contains("SUBTASK-RUN") && !r.body_text.contains("delegate"))
        .unwrap();
    assert_eq!(offered(&child_request), ["bash", "read_file", "task"]);

    // A parent whose profile has no bash: its child is not offered bash.
    let (parent, _dir) = parent_with(&client, Some("no-bash"), None).await;
    mock.push(tasks(&[("t2", task("SUBTASK-LOOK: look", "runner"))]));
    client
        .send_plain(parent.id.clone(), "delegate".into())
        .await
        .unwrap();
    let events = until_parent_finished(&mut sub, &parent.id).await;
    assert_eq!(
        finish_of(&events, &parent.id),
        Some(LoopFinishReason::Completed)
    );
    let child_request = model_requests(&mock)
        .into_iter()
        .find(|r| r.body_text.contains("SUBTASK-LOOK") && !r.body_text.contains("delegate"))
        .unwrap();
    assert_eq!(offered(&child_request), ["read_file", "task"]);
}

/// Where the parent's profile asks, the child asks too, though the config allows.
#[tokio::test]
async fn a_typed_subagent_asks_where_its_parent_asks() {
    let (mock, daemon) = start_with(NARROW_PARENTS).await;
    let client = daemon.client().await;
    let mut sub = client.subscribe_events(None, None, None).await.unwrap();
    mock.route("SUBTASK-RUN", bash("r1", "touch ran-by-child"));
    let (parent, dir) = parent_with(&client, Some("careful"), None).await;
    mock.push(tasks(&[("t1", task("SUBTASK-RUN: run it", "runner"))]));
    client
        .send_plain(parent.id.clone(), "delegate".into())
        .await
        .unwrap();
    let events = collect_until(&mut sub, Duration::from_secs(60), |e| {
        matches!(e.kind, EventKind::PermissionRequested { .. })
            || matches!(&e.kind, EventKind::ToolResult { tool_call_id, .. } if tool_call_id == "r1")
    })
    .await;
    let asked = events.last().unwrap();
    assert!(
        matches!(
            &asked.kind,
            EventKind::PermissionRequested { tool_call_id, .. } if tool_call_id == "r1"
        ),
        "the child's bash call was not asked about: {}",
        agentd_testkit::events::summary(&events)
    );
    assert_ne!(asked.agent_id, parent.id);
    assert!(!dir.path().join("ran-by-child").exists());
    client.cancel_loop(parent.id.clone()).await.unwrap();
    let events = until_parent_finished(&mut sub, &parent.id).await;
    assert_eq!(
        finish_of(&events, &parent.id),
        Some(LoopFinishReason::Cancelled)
    );
    assert!(!dir.path().join("ran-by-child").exists());
}

/// `[subagents] max_parallel` counts one parent's children together, background and
/// foreground: of six background tasks of one answer two work at once and the others wait
/// their turn, and a foreground task of the next answer waits for a turn too; all seven
/// finish. (40 background tasks of one answer used to run at once.)
#[tokio::test]
async fn background_and_foreground_tasks_of_a_parent_take_turns_within_max_parallel() {
    let (mock, daemon) = start_with("[subagents]\nmax_parallel = 2\n").await;
    let client = daemon.client().await;
    let (parent, _dir) = tool_agent(&client, None).await;
    // Each child takes a while to answer, so children allowed to work at once do.
    mock.route(
        "to find something out",
        Reply::openai_text(&["REPORT: counted"]).first_byte_delay(Duration::from_millis(200)),
    );
    let background: Vec<(String, Value)> = (0..6)
        .map(|n| {
            let mut args = task(&format!("SUBTASK-BG-{n}: count"), "explore");
            args["background"] = json!(true);
            (format!("b{n}"), args)
        })
        .collect();
    let refs: Vec<(&str, Value)> = background
        .iter()
        .map(|(id, a)| (id.as_str(), a.clone()))
        .collect();
    mock.push(tasks(&refs));
    mock.push(tasks(&[("f1", task("SUBTASK-FG: count too", "explore"))]));
    mock.push(Reply::openai_text(&["All delegated."]));
    let mut sub = client.subscribe_events(None, None, None).await.unwrap();
    client
        .send_plain(parent.id.clone(), "seven tasks".into())
        .await
        .unwrap();

    let (mut reported, mut answered) = (0, false);
    let events = collect_until(&mut sub, Duration::from_secs(60), |e| {
        if e.agent_id == parent.id {
            reported += usize::from(matches!(e.kind, EventKind::BackgroundTaskFinished { .. }));
            answered |= matches!(e.kind, EventKind::LoopFinished { .. });
        }
        reported == 6 && answered
    })
    .await;
    // Children working at once: from the message they were sent to the end of their run.
    let (mut working, mut most) = (0_usize, 0);
    let mut finished = Vec::new();
    for e in events.iter().filter(|e| e.agent_id != parent.id) {
        match &e.kind {
            EventKind::UserMessage { .. } => {
                working += 1;
                most = most.max(working);
            }
            EventKind::LoopFinished { reason, .. } => {
                working -= 1;
                finished.push(*reason);
            }
            _ => {}
        }
    }
    assert!(
        most <= 2,
        "{most} children worked at once: {}",
        agentd_testkit::events::summary(&events)
    );
    assert_eq!(finished, vec![LoopFinishReason::Completed; 7]);
    assert_eq!(
        finish_of(&events, &parent.id),
        Some(LoopFinishReason::Completed)
    );
    // Two started at once, the other four were told they wait their turn; the foreground
    // task's result is its child's report.
    let requests = model_requests(&mock);
    let follow_up = requests
        .iter()
        .find(|r| r.body_text.contains("\"b5\"") && !r.body_text.contains("\"f1\""))
        .expect("the parent's request after the background tasks");
    let returned: Vec<String> = (0..6)
        .map(|n| tool_result(follow_up, &format!("b{n}")))
        .collect();
    let started = returned.iter().filter(|r| r.starts_with("Started")).count();
    let queued = returned.iter().filter(|r| r.starts_with("Queued")).count();
    assert_eq!((started, queued), (2, 4), "{returned:?}");
    let last = requests
        .iter()
        .rev()
        .find(|r| r.body_text.contains("\"f1\""))
        .unwrap();
    assert_eq!(tool_result(last, "f1"), "REPORT: counted");
}
