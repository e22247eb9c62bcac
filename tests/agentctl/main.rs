//! agentctl against a real daemon: the commands, their output and their exit statuses.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use agentd_testkit::daemon::{TestDaemon, openai_config};
use agentd_testkit::mock_model::{MockModel, Reply};
use agentd_testkit::wait::{Verbatim, eventually};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

mod agents;
mod interactive;
mod manual;
mod undo;
mod web;

fn agentctl() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_agentctl"))
}

/// The daemon binary, built next to agentctl by `cargo test --workspace`.
fn agentd() -> PathBuf {
    let path = agentctl().with_file_name("agentd");
    assert!(
        path.exists(),
        "{} is missing: build it first (cargo build -p agentd, or run cargo test --workspace)",
        path.display()
    );
    path
}

async fn ctl(daemon: &TestDaemon, args: &[&str]) -> Output {
    Command::new(agentctl())
        .arg("--socket")
        .arg(daemon.socket())
        .args(args)
        .output()
        .await
        .unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// An agent of mode `agent` in `workspace`, created with agentctl; its id.
async fn agent_in_workspace(daemon: &TestDaemon, workspace: &std::path::Path) -> String {
    let path = std::fs::canonicalize(workspace).unwrap();
    let created = ctl(
        daemon,
        &[
            "agents",
            "create",
            "--mode",
            "agent",
            "--workspace",
            path.to_str().unwrap(),
        ],
    )
    .await;
    assert!(created.status.success(), "{}", stderr(&created));
    stdout(&created).trim().to_owned()
}

async fn start() -> (MockModel, TestDaemon) {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start(&agentd(), &openai_config(&mock.url())).await;
    (mock, daemon)
}

#[tokio::test]
async fn agents_send_and_messages() {
    let (mock, daemon) = start().await;
    let created = ctl(&daemon, &["agents", "create", "--title", "cli agent"]).await;
    assert!(created.status.success(), "{}", stderr(&created));
    let id = stdout(&created).trim().to_owned();
    assert_eq!(id.len(), 36, "prints the id: {id:?}");

    let listed = ctl(&daemon, &["agents", "list"]).await;
    assert!(stdout(&listed).contains(&id) && stdout(&listed).contains("cli agent"));
    let shown = ctl(&daemon, &["agents", "show", &id]).await;
    assert!(
        stdout(&shown).contains("title:     cli agent"),
        "{}",
        stdout(&shown)
    );
    let shown = ctl(&daemon, &["--json", "agents", "show", &id]).await;
    let agent: serde_json::Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(agent["id"], id.as_str());

    mock.push(Reply::openai_reasoning_text(
        &["pondering"],
        &["Hello", " from", " the mock"],
    ));
    let sent = ctl(&daemon, &["send", &id, "hi"]).await;
    assert_eq!(sent.status.code(), Some(0), "{}", stderr(&sent));
    assert_eq!(stdout(&sent), "Hello from the mock\n");
    assert!(stderr(&sent).contains("pondering"));

    mock.push(Reply::openai_text(&["json", " mode"]));
    let sent = ctl(&daemon, &["--json", "send", &id, "again"]).await;
    assert_eq!(sent.status.code(), Some(0), "{}", stderr(&sent));
    let events: Vec<serde_json::Value> = stdout(&sent)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events.first().unwrap()["type"], "userMessage");
    assert_eq!(events.last().unwrap()["type"], "loopFinished");
    let text: String = events
        .iter()
        .filter(|e| e["type"] == "textDelta")
        .map(|e| e["delta"].as_str().unwrap())
        .collect();
    assert_eq!(text, "json mode");

    let transcript = ctl(&daemon, &["messages", &id]).await;
    let out = stdout(&transcript);
    assert!(
        out.contains("--- user\nhi\n--- assistant\n  | pondering\nHello from the mock"),
        "{out}"
    );

    let deleted = ctl(&daemon, &["agents", "delete", &id]).await;
    assert_eq!(stdout(&deleted).trim(), format!("deleted {id}"));
    let gone = ctl(&daemon, &["agents", "show", &id]).await;
    assert_eq!(gone.status.code(), Some(1));
    assert!(
        stderr(&gone).contains("(agentNotFound)"),
        "{}",
        stderr(&gone)
    );
}

#[tokio::test]
async fn exit_status_follows_the_run() {
    let (mock, daemon) = start().await;
    let id = stdout(&ctl(&daemon, &["agents", "create"]).await)
        .trim()
        .to_owned();

    mock.push(Reply::status(
        500,
        r#"{"error":{"message":"upstream exploded"}}"#,
    ));
    let failed = ctl(&daemon, &["send", &id, "hi"]).await;
    assert_eq!(failed.status.code(), Some(1));
    assert!(
        stderr(&failed).contains("upstream exploded"),
        "{}",
        stderr(&failed)
    );

    // Cancelled from a second agentctl while the first one streams.
    let parts: Vec<String> = (0..100).map(|i| format!("{i} ")).collect();
    let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
    mock.push(Reply::openai_text(&parts).chunk_delay(Duration::from_millis(50)));
    let send = Command::new(agentctl())
        .arg("--socket")
        .arg(daemon.socket())
        .args(["send", &id, "long"])
        .output();
    let canceller = async {
        mock.wait_requests(2, Duration::from_secs(10)).await;
        let out = ctl(&daemon, &["cancel", &id]).await;
        assert_eq!(stdout(&out).trim(), "cancelled");
    };
    let (sent, ()) = tokio::join!(send, canceller);
    let sent = sent.unwrap();
    assert_eq!(sent.status.code(), Some(2), "{}", stderr(&sent));

    let unreachable = Command::new(agentctl())
        .arg("--socket")
        .arg(daemon.dir().join("nobody-here.sock"))
        .args(["agents", "list"])
        .output()
        .await
        .unwrap();
    assert_eq!(unreachable.status.code(), Some(4));
    assert!(stderr(&unreachable).contains("cannot connect to agentd"));
}

#[tokio::test]
async fn watch_prints_events_from_another_terminal() {
    let (mock, daemon) = start().await;
    let id = stdout(&ctl(&daemon, &["agents", "create"]).await)
        .trim()
        .to_owned();
    let mut watch = Command::new(agentctl())
        .arg("--socket")
        .arg(daemon.socket())
        .args(["watch", &id])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(watch.stdout.take().unwrap()).lines();
    // watch says on stderr when its subscription is in place.
    let mut errors = BufReader::new(watch.stderr.take().unwrap()).lines();
    let ready = tokio::time::timeout(Duration::from_secs(10), errors.next_line())
        .await
        .expect("watch reports its subscription within 10 s")
        .unwrap()
        .unwrap();
    assert_eq!(ready, format!("watching agent {id}; Ctrl-C to stop"));
    mock.push(Reply::openai_text(&["watched"]));
    assert!(ctl(&daemon, &["send", &id, "x"]).await.status.success());
    let mut seen = Vec::new();
    loop {
        let line = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
            .await
            .expect("watch output within 10 s")
            .unwrap()
            .expect("watch is still running");
        let done = line.contains(" loopFinished ");
        seen.push(line);
        if done {
            break;
        }
    }
    // seq 1 is the agent's agentCreated, sent before watch subscribed.
    assert!(
        seen[0].starts_with("[2] ") && seen[0].contains(" userMessage "),
        "{seen:?}"
    );
    assert!(
        seen.iter().any(|l| l.ends_with("textDelta \"watched\"")),
        "{seen:?}"
    );
    assert!(
        seen.last().unwrap().ends_with("loopFinished completed"),
        "{seen:?}"
    );
}

#[tokio::test]
async fn ctrl_c_during_send_cancels_the_run() {
    let (mock, daemon) = start().await;
    let id = stdout(&ctl(&daemon, &["agents", "create"]).await)
        .trim()
        .to_owned();
    let parts: Vec<String> = (0..100).map(|i| format!("{i} ")).collect();
    let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
    mock.push(Reply::openai_text(&parts).chunk_delay(Duration::from_millis(50)));
    let send = Command::new(agentctl())
        .arg("--socket")
        .arg(daemon.socket())
        .args(["send", &id, "long"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let pid = send.id().unwrap() as i32;
    mock.wait_requests(1, Duration::from_secs(10)).await;
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let out = tokio::time::timeout(Duration::from_secs(10), send.wait_with_output())
        .await
        .expect("agentctl ends after Ctrl-C")
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("cancelling"));
    let transcript = ctl(&daemon, &["messages", &id]).await;
    assert!(
        stdout(&transcript).contains("--- assistant (cancelled)"),
        "{}",
        stdout(&transcript)
    );
}

#[tokio::test]
async fn tools_are_shown_and_permissions_answered() {
    let mock = MockModel::start().await;
    let daemon = TestDaemon::start(&agentd(), &openai_config(&mock.url())).await;
    let workspace = tempfile::tempdir().unwrap();
    let id = agent_in_workspace(&daemon, workspace.path()).await;

    // --yes grants the prompt and the run completes; tool activity goes to stderr.
    mock.push(Reply::openai_tool_calls(
        &["Checking. "],
        &[("c1", "bash", r#"{"command": "echo from-the-tool"}"#)],
    ));
    mock.push(Reply::openai_text(&["It said hi."]));
    let sent = ctl(&daemon, &["send", &id, "run it", "--yes"]).await;
    assert_eq!(sent.status.code(), Some(0), "{}", stderr(&sent));
    assert_eq!(stdout(&sent), "Checking. It said hi.\n");
    let err = stderr(&sent);
    assert!(err.contains("[tool] bash: echo from-the-tool"), "{err}");
    assert!(err.contains("[success in "), "{err}");
    assert!(err.contains("from-the-tool\n    exit code: 0"), "{err}");
    // The command's output is shown as it comes, indented under the call, before its result.
    let live = err
        .find("[tool] bash: echo from-the-tool\n    from-the-tool\n")
        .unwrap_or_else(|| panic!("no live output: {err}"));
    assert!(live < err.find("[success in ").unwrap(), "{err}");

    // Without a terminal and without --yes, send stops at the prompt and says how to answer.
    mock.push(Reply::openai_tool_calls(
        &[],
        &[("c2", "bash", r#"{"command": "echo second"}"#)],
    ));
    let sent = ctl(&daemon, &["send", &id, "again"]).await;
    assert_eq!(sent.status.code(), Some(3), "{}", stderr(&sent));
    let err = stderr(&sent);
    let line = err
        .lines()
        .find(|l| l.starts_with("answer it with: agentctl permit "))
        .unwrap_or_else(|| panic!("{err}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    let (message, call) = (words[5], words[6]);
    assert_eq!(call, "c2");
    mock.push(Reply::openai_text(&["done"]));
    let permitted = ctl(
        &daemon,
        &["permit", message, call, "allow", "--remember", "session"],
    )
    .await;
    assert_eq!(
        stdout(&permitted).trim(),
        "allowed",
        "{}",
        stderr(&permitted)
    );
    let late = ctl(&daemon, &["permit", message, call, "deny"]).await;
    assert_eq!(late.status.code(), Some(1));
    assert!(
        stderr(&late).contains("(permissionNotPending)"),
        "{}",
        stderr(&late)
    );
    // The session grant covers the next echo without a prompt.
    eventually(
        Duration::from_secs(10),
        "the session to be idle",
        async || {
            let shown = stdout(&ctl(&daemon, &["session", &id]).await);
            if shown.contains("status:   idle") {
                Ok(())
            } else {
                Err(Verbatim(shown))
            }
        },
    )
    .await;
    mock.push(Reply::openai_tool_calls(
        &[],
        &[("c3", "bash", r#"{"command": "echo third"}"#)],
    ));
    mock.push(Reply::openai_text(&["ok"]));
    let sent = ctl(&daemon, &["send", &id, "third"]).await;
    assert_eq!(sent.status.code(), Some(0), "{}", stderr(&sent));

    let tools = ctl(&daemon, &["tools", &id]).await;
    assert!(stdout(&tools).contains("* bash"), "{}", stdout(&tools));
    let transcript = ctl(&daemon, &["messages", &id]).await;
    assert!(
        stdout(&transcript).contains("> bash: echo second [success]"),
        "{}",
        stdout(&transcript)
    );
}

#[tokio::test]
async fn preview_edge_and_regenerate() {
    let (mock, daemon) = start().await;
    let created = ctl(&daemon, &["agents", "create"]).await;
    let id = stdout(&created).trim().to_owned();
    mock.push(Reply::openai_text(&["first answer"]));
    let sent = ctl(&daemon, &["send", &id, "Explain the build"]).await;
    assert_eq!(sent.status.code(), Some(0), "{}", stderr(&sent));
    // the title came from the first message
    let shown = ctl(&daemon, &["agents", "show", &id]).await;
    assert!(
        stdout(&shown).contains("title:     Explain the build"),
        "{}",
        stdout(&shown)
    );

    let preview = ctl(&daemon, &["preview", &id, "--body"]).await;
    let out = stdout(&preview);
    assert!(
        out.contains("tokens:   ~") && out.contains("window 32768"),
        "{out}"
    );
    assert!(out.contains("\"content\": \"first answer\""), "{out}");
    let preview = ctl(&daemon, &["--json", "preview", &id]).await;
    let json: serde_json::Value = serde_json::from_slice(&preview.stdout).unwrap();
    assert_eq!(json["context"]["hiddenByEdge"], 0);

    let edge = ctl(&daemon, &["edge", &id]).await;
    assert!(
        stdout(&edge).contains("no longer sees"),
        "{}",
        stderr(&edge)
    );
    let preview = ctl(&daemon, &["--json", "preview", &id]).await;
    let json: serde_json::Value = serde_json::from_slice(&preview.stdout).unwrap();
    assert_eq!(json["context"]["hiddenByEdge"], 2);
    let cleared = ctl(&daemon, &["edge", &id, "--clear"]).await;
    assert!(stdout(&cleared).contains("sees the whole history"));

    mock.push(Reply::openai_text(&["second answer"]));
    let regen = ctl(&daemon, &["regenerate", &id]).await;
    assert!(
        stdout(&regen).starts_with("regenerating as "),
        "{}",
        stderr(&regen)
    );
    mock.wait_requests(2, Duration::from_secs(10)).await;
    let messages = ctl(&daemon, &["--json", "messages", &id]).await;
    let listed: Vec<serde_json::Value> = stdout(&messages)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(listed.len(), 3);
    assert_eq!(listed[1]["superseded"], true);
}

/// Run as another user by `a_socket_served_by_another_user_is_refused`.
#[test]
#[ignore = "a listener run as another user by a_socket_served_by_another_user_is_refused"]
fn foreign_listener() {
    agentd_testkit::other_user::listen_and_report();
}

/// agentctl checks who serves the socket (SO_PEERCRED) before sending anything.
#[tokio::test]
async fn a_socket_served_by_another_user_is_refused() {
    use agentd_testkit::other_user::{ForeignListener, OTHER_UID, can_switch_user};
    if !can_switch_user("a_socket_served_by_another_user_is_refused") {
        return;
    }
    let listener = ForeignListener::start("foreign_listener").await;
    let out = tokio::time::timeout(
        Duration::from_secs(20),
        Command::new(agentctl())
            .arg("--socket")
            .arg(listener.path())
            .args(["agents", "list"])
            .output(),
    )
    .await
    .expect("agentctl waited on the foreign socket")
    .unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("refusing to talk to agentd")
            && err.contains(&format!("served by a process of uid {OTHER_UID}")),
        "{err}"
    );
    assert_eq!(listener.received().await, 0, "agentctl sent bytes first");
}

#[tokio::test]
async fn the_plan_is_shown_and_questions_answered() {
    let (mock, daemon) = start().await;
    let workspace = tempfile::tempdir().unwrap();
    let path = std::fs::canonicalize(workspace.path()).unwrap();
    let created = ctl(
        &daemon,
        &[
            "agents",
            "create",
            "--mode",
            "agent",
            "--workspace",
            path.to_str().unwrap(),
        ],
    )
    .await;
    let id = stdout(&created).trim().to_owned();

    // The plan shows on stderr as a checklist while send runs, and `plan` prints it.
    let todos = r#"{"todos": [{"content": "Read", "status": "completed"}, {"content": "Write", "status": "in_progress", "activeForm": "Writing"}]}"#;
    mock.push(Reply::openai_tool_calls(
        &[],
        &[("p1", "todo_write", todos)],
    ));
    let questions = r#"{"questions": [{"question": "Which database?", "options": [{"label": "SQLite"}, {"label": "Postgres"}]}]}"#;
    mock.push(Reply::openai_tool_calls(
        &[],
        &[("q1", "ask_user_question", questions)],
    ));
    // Without a terminal send stops at the question and says how to answer it.
    let sent = ctl(&daemon, &["send", &id, "plan and ask"]).await;
    assert_eq!(sent.status.code(), Some(3), "{}", stderr(&sent));
    let err = stderr(&sent);
    assert!(err.contains("[plan]\n[x] Read\n[>] Writing"), "{err}");
    assert!(
        err.contains("question: Which database?\n  1. SQLite\n  2. Postgres"),
        "{err}"
    );
    let line = err
        .lines()
        .find(|l| l.starts_with("answer it with: agentctl answer "))
        .unwrap_or_else(|| panic!("{err}"));
    let words: Vec<&str> = line.split_whitespace().collect();
    let (message, call) = (words[5], words[6]);
    assert_eq!(call, "q1");

    let plan = ctl(&daemon, &["plan", &id]).await;
    assert_eq!(stdout(&plan), "[x] Read\n[>] Writing\n");
    let session = ctl(&daemon, &["session", &id]).await;
    assert!(
        stdout(&session).contains("question: q1 Which database?"),
        "{}",
        stdout(&session)
    );

    let bad = ctl(
        &daemon,
        &[
            "answer",
            message,
            call,
            "--data",
            "[{\"selected\": [\"MySQL\"]}]",
        ],
    )
    .await;
    assert_eq!(
        bad.status.code(),
        Some(1),
        "{} {}",
        stdout(&bad),
        stderr(&bad)
    );
    assert!(stderr(&bad).contains("(invalidParams)"), "{}", stderr(&bad));
    mock.push(Reply::openai_text(&["SQLite it is."]));
    let answered = ctl(&daemon, &["answer", message, call, "SQLite, embedded"]).await;
    assert_eq!(
        stdout(&answered).trim(),
        "answered",
        "{}",
        stderr(&answered)
    );
    let late = ctl(&daemon, &["answer", message, call, "--decline"]).await;
    assert_eq!(late.status.code(), Some(1));
    assert!(
        stderr(&late).contains("(questionNotPending)"),
        "{}",
        stderr(&late)
    );
    let requests = mock.wait_requests(3, Duration::from_secs(20)).await;
    assert!(requests[2].body_text.contains("SQLite, embedded"));
}

#[tokio::test]
async fn profiles_are_listed_and_given_at_create() {
    let (_mock, daemon) = start().await;
    let listed = ctl(&daemon, &["profiles"]).await;
    assert!(listed.status.success(), "{}", stderr(&listed));
    let out = stdout(&listed);
    let names: Vec<&str> = out
        .lines()
        .filter(|l| !l.starts_with(' '))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(names, ["basic", "coder", "planner", "full"], "{out}");
    assert!(
        out.contains("tools: read_file, write_file, edit_file, bash\n"),
        "{out}"
    );

    let workspace = tempfile::tempdir().unwrap();
    let path = std::fs::canonicalize(workspace.path()).unwrap();
    let created = ctl(
        &daemon,
        &[
            "agents",
            "create",
            "--mode",
            "agent",
            "--workspace",
            path.to_str().unwrap(),
            "--profile",
            "coder",
        ],
    )
    .await;
    assert!(created.status.success(), "{}", stderr(&created));
    let id = stdout(&created).trim().to_owned();
    let shown = ctl(&daemon, &["agents", "show", &id]).await;
    assert!(
        stdout(&shown).contains("profile:   coder\n"),
        "{}",
        stdout(&shown)
    );
    let refused = ctl(&daemon, &["agents", "create", "--profile", "nope"]).await;
    assert!(!refused.status.success());
    assert!(
        stderr(&refused).contains("unknown profile \"nope\""),
        "{}",
        stderr(&refused)
    );
}

#[tokio::test]
async fn ask_prints_a_one_shot_answer() {
    let (mock, daemon) = start().await;
    mock.push(Reply::openai_text(&["Paris", "."]));
    let asked = ctl(
        &daemon,
        &["ask", "Capital of France?", "--system", "Be brief."],
    )
    .await;
    assert_eq!(asked.status.code(), Some(0), "{}", stderr(&asked));
    assert_eq!(stdout(&asked), "Paris.\n");
    let body = &mock.requests()[0].body;
    assert_eq!(body["messages"][0]["content"], "Be brief.");
    assert_eq!(body["messages"][1]["content"], "Capital of France?");
}
