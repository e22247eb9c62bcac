//! The model's plan (`todo_write`) and its questions (`ask_user_question`) end to end: the
//! plan stored, announced and carried by fork/export; a question suspending the run like a
//! permission prompt, surviving a restart and a kill -9, answered, declined or cancelled.

use agentd_testkit::send::SendByName;
use std::time::Duration;

use agent_proto::rpc::AgentRpcClient;
use agent_proto::{
    Block, EventKind, ExportFormat, LoopFinishReason, PlanStatus, QuestionAnswer, SessionStatus,
    ToolCallBlock, ToolCallStatus,
};
use agentd_testkit::events::{collect_run, finish_reason};
use agentd_testkit::mock_model::Reply;
use agentd_testkit::transcript::tool_result;
use serde_json::{Value, json};

use crate::common::{
    error_of, messages, model_requests, send_and_collect, tool_agent, tool_scenario,
};

fn call(id: &str, tool: &str, args: Value) -> Reply {
    Reply::openai_tool_calls(&[], &[(id, tool, &args.to_string())])
}

fn questions() -> Value {
    json!({"questions": [
        {"question": "Which database?", "header": "DB",
         "options": [{"label": "SQLite", "description": "embedded"}, {"label": "Postgres"}]},
        {"question": "Which checks?", "options": [{"label": "fmt"}, {"label": "clippy"}],
         "multiSelect": true}
    ]})
}

/// The `questionRequested` of a transcript: (message id, call id, question texts).
fn asked(events: &[agent_proto::Event]) -> (String, String, Vec<String>) {
    events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::QuestionRequested {
                message_id,
                tool_call_id,
                questions,
            } => Some((
                message_id.clone(),
                tool_call_id.clone(),
                questions.iter().map(|q| q.question.clone()).collect(),
            )),
            _ => None,
        })
        .expect("a questionRequested event")
}

fn pick(labels: &[&str]) -> QuestionAnswer {
    QuestionAnswer {
        selected: labels.iter().map(|l| l.to_string()).collect(),
        text: None,
    }
}

#[tokio::test]
async fn the_plan_is_stored_announced_and_carried_by_fork_and_export() {
    let (mock, _daemon, client, agent, _dir) = tool_scenario("").await.into_parts();
    let todos = json!({"todos": [
        {"content": "Read the code", "status": "completed"},
        {"content": "Fix the bug", "status": "in_progress", "activeForm": "Fixing the bug"},
        {"content": "Run the tests", "status": "pending"}
    ]});
    mock.push(call("p1", "todo_write", todos));
    // Two items in progress: refused, and the stored plan stays as it was.
    mock.push(call(
        "p2",
        "todo_write",
        json!({"todos": [
            {"content": "A", "status": "in_progress"},
            {"content": "B", "status": "in_progress"}
        ]}),
    ));
    mock.push(Reply::openai_text(&["planned"]));
    let (_, events) = send_and_collect(&client, &agent.id, "plan it").await;
    assert_eq!(finish_reason(&events), LoopFinishReason::Completed);

    // One planUpdated (the refused plan announces nothing), and no permission asked: read
    // level even with the default `ask` for writes.
    let updates: Vec<_> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::PlanUpdated { items } => Some(items.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(updates.len(), 1);
    assert_eq!(updates[0][1].active_form.as_deref(), Some("Fixing the bug"));
    assert!(
        !events
            .iter()
            .any(|e| matches!(e.kind, EventKind::PermissionRequested { .. }))
    );
    let requests = model_requests(&mock);
    assert!(tool_result(&requests[1], "p1").contains("Plan saved: 3 items"));
    assert!(
        tool_result(&requests[2], "p2").contains("in_progress"),
        "{}",
        tool_result(&requests[2], "p2")
    );

    let plan = client.get_plan(agent.id.clone()).await.unwrap();
    assert_eq!(plan.agent_id, agent.id);
    assert_eq!(plan.items, updates[0]);
    assert_eq!(plan.items[0].status, PlanStatus::Completed);
    assert!(plan.updated_at.is_some());

    let fork = client.fork_agent(agent.id.clone(), None).await.unwrap();
    assert_eq!(
        client.get_plan(fork.id.clone()).await.unwrap().items,
        plan.items
    );
    let export = client
        .export_agent(agent.id.clone(), ExportFormat::Json)
        .await
        .unwrap();
    let data: Value = serde_json::from_str(&export.content).unwrap();
    assert_eq!(data["plan"][1]["content"], "Fix the bug");
    let imported = client.import_agent(data, None, None).await.unwrap();
    assert_eq!(
        client.get_plan(imported.id.clone()).await.unwrap().items,
        plan.items
    );

    // An agent that never planned has an empty plan; an unknown one is an error.
    let (other, _d) = tool_agent(&client, None).await;
    let empty = client.get_plan(other.id.clone()).await.unwrap();
    assert!(empty.items.is_empty() && empty.updated_at.is_none());
    let e = client.get_plan("nope".into()).await.unwrap_err();
    assert_eq!(error_of(&e).1, "agentNotFound");
}

#[tokio::test]
async fn a_question_survives_a_restart_and_a_kill_and_its_answer_resumes_the_run() {
    let (mock, mut daemon, client, agent, _dir) = tool_scenario("").await.into_parts();
    mock.push(call("q1", "ask_user_question", questions()));
    let (sent, events) = send_and_collect(&client, &agent.id, "set it up").await;
    assert_eq!(finish_reason(&events), LoopFinishReason::WaitingQuestion);
    let (message_id, call_id, texts) = asked(&events);
    assert_eq!(
        (message_id.as_str(), call_id.as_str()),
        (sent.assistant_message_id.as_str(), "q1")
    );
    assert_eq!(texts, ["Which database?", "Which checks?"]);

    // A new message is refused while the question waits.
    let e = client
        .send_plain(agent.id.clone(), "hello?".into())
        .await
        .unwrap_err();
    assert_eq!(error_of(&e).1, "invalidState");

    drop(client);
    let status = daemon.terminate().await;
    assert!(status.success());
    daemon.restart().await;
    let client = daemon.client().await;
    let session = client.get_session(agent.id.clone()).await.unwrap();
    assert_eq!(session.status, SessionStatus::WaitingQuestion);
    assert_eq!(session.pending_questions.len(), 1);
    assert_eq!(session.pending_questions[0].tool_call_id, "q1");
    assert!(session.pending_questions[0].questions[1].multi_select);

    drop(client);
    daemon.kill9().await;
    daemon.restart().await;
    let client = daemon.client().await;
    let session = client.get_session(agent.id.clone()).await.unwrap();
    assert_eq!(session.status, SessionStatus::WaitingQuestion);
    assert_eq!(session.pending_questions[0].message_id, message_id);

    // Answers that do not fit the questions are refused and change nothing.
    for bad in [
        vec![pick(&["MySQL"]), pick(&["fmt"])],
        vec![pick(&["SQLite", "Postgres"]), pick(&["fmt"])],
        vec![pick(&["SQLite"])],
        vec![QuestionAnswer::default(), pick(&["fmt"])],
    ] {
        let e = client
            .answer_question(message_id.clone(), call_id.clone(), Some(bad.clone()), None)
            .await
            .unwrap_err();
        assert_eq!(error_of(&e).1, "invalidParams", "{bad:?}");
    }
    assert_eq!(
        client
            .get_session(agent.id.clone())
            .await
            .unwrap()
            .pending_questions
            .len(),
        1
    );

    mock.push(Reply::openai_text(&["Using SQLite."]));
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    let answers = vec![
        pick(&["SQLite"]),
        QuestionAnswer {
            selected: vec!["fmt".into(), "clippy".into()],
            text: Some("and the tests".into()),
        },
    ];
    client
        .answer_question(
            message_id.clone(),
            call_id.clone(),
            Some(answers.clone()),
            None,
        )
        .await
        .unwrap();
    let events = collect_run(&mut sub, Duration::from_secs(30)).await;
    assert_eq!(finish_reason(&events), LoopFinishReason::Completed);
    assert!(events.iter().any(|e| matches!(&e.kind,
        EventKind::QuestionResolved { tool_call_id, answers: a, declined: false, cancelled: false, .. }
            if tool_call_id == "q1" && *a == answers)));
    let requests = model_requests(&mock);
    let result = tool_result(requests.last().unwrap(), "q1");
    assert!(result.contains("Q: Which database?\nA: SQLite"), "{result}");
    assert!(result.contains("fmt, clippy"), "{result}");
    assert!(result.contains("and the tests"), "{result}");

    // The first answer won: a second one is refused.
    let e = client
        .answer_question(message_id.clone(), call_id.clone(), Some(answers), None)
        .await
        .unwrap_err();
    assert_eq!(error_of(&e), (-32013, "questionNotPending".into()));

    // The stored call keeps its questions and the answer.
    let stored = messages(&client, &agent.id).await;
    let assistant = stored.iter().find(|m| m.id == message_id).unwrap();
    let (status, answer) = assistant
        .blocks
        .iter()
        .find_map(|b| match b {
            Block::ToolCall(ToolCallBlock {
                tool_call_id,
                status,
                answer,
                ..
            }) if tool_call_id == "q1" => Some((*status, answer.clone())),
            _ => None,
        })
        .unwrap();
    assert_eq!(status, ToolCallStatus::Success);
    assert_eq!(answer.unwrap().answers[0].selected, ["SQLite"]);
    let session = client.get_session(agent.id.clone()).await.unwrap();
    assert_eq!(session.status, SessionStatus::Idle);
    assert!(session.pending_questions.is_empty());
}

#[tokio::test]
async fn a_declined_or_cancelled_question_tells_the_model_the_user_declined() {
    let (mock, _daemon, client, agent, _dir) = tool_scenario("").await.into_parts();

    // Declined: the run resumes with "declined" as the result.
    mock.push(call("q1", "ask_user_question", questions()));
    let (_, events) = send_and_collect(&client, &agent.id, "one").await;
    let (message_id, call_id, _) = asked(&events);
    mock.push(Reply::openai_text(&["I will pick SQLite."]));
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    client
        .answer_question(message_id, call_id, None, Some(true))
        .await
        .unwrap();
    let events = collect_run(&mut sub, Duration::from_secs(30)).await;
    assert_eq!(finish_reason(&events), LoopFinishReason::Completed);
    assert!(
        events
            .iter()
            .any(|e| matches!(&e.kind, EventKind::QuestionResolved { declined: true, .. }))
    );
    let requests = model_requests(&mock);
    assert!(tool_result(requests.last().unwrap(), "q1").contains("the user declined"));

    // Cancelled while waiting: resolved as cancelled, the agent is idle, and the next
    // request tells the model the user declined.
    mock.push(call("q2", "ask_user_question", questions()));
    let (_, events) = send_and_collect(&client, &agent.id, "two").await;
    let (message_id, call_id, _) = asked(&events);
    // `sub` saw that run too: skip to its end before the cancel.
    let events = collect_run(&mut sub, Duration::from_secs(30)).await;
    assert_eq!(finish_reason(&events), LoopFinishReason::WaitingQuestion);
    client.cancel_loop(agent.id.clone()).await.unwrap();
    let events = collect_run(&mut sub, Duration::from_secs(30)).await;
    assert_eq!(finish_reason(&events), LoopFinishReason::Cancelled);
    assert!(
        events.iter().any(|e| matches!(&e.kind,
        EventKind::QuestionResolved { tool_call_id, cancelled: true, .. } if tool_call_id == "q2"))
    );
    let session = client.get_session(agent.id.clone()).await.unwrap();
    assert_eq!(session.status, SessionStatus::Idle);
    assert!(session.pending_questions.is_empty());
    let e = client
        .answer_question(message_id, call_id, None, Some(true))
        .await
        .unwrap_err();
    assert_eq!(error_of(&e).1, "questionNotPending");
    mock.push(Reply::openai_text(&["ok"]));
    let (_, events) = send_and_collect(&client, &agent.id, "three").await;
    assert_eq!(finish_reason(&events), LoopFinishReason::Completed);
    let requests = model_requests(&mock);
    assert!(tool_result(requests.last().unwrap(), "q2").contains("the user declined"));
}

#[tokio::test]
async fn malformed_questions_are_the_models_error_and_never_suspend() {
    let (mock, _daemon, client, agent, _dir) = tool_scenario("").await.into_parts();
    mock.push(call("q1", "ask_user_question", json!({"questions": []})));
    mock.push(call(
        "q2",
        "ask_user_question",
        json!({"questions": [{"question": "Same?", "options": [{"label": "a"}, {"label": "a"}]}]}),
    ));
    mock.push(Reply::openai_text(&["fine"]));
    let (_, events) = send_and_collect(&client, &agent.id, "ask badly").await;
    assert_eq!(finish_reason(&events), LoopFinishReason::Completed);
    assert!(
        !events
            .iter()
            .any(|e| matches!(e.kind, EventKind::QuestionRequested { .. }))
    );
    let requests = model_requests(&mock);
    assert!(
        tool_result(&requests[1], "q1").contains("less than 1 item"),
        "{}",
        tool_result(&requests[1], "q1")
    );
    assert!(tool_result(&requests[2], "q2").contains("labels must differ"));
}
