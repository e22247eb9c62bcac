//! Agents of mode `acp`: a real external ACP agent (`acp-test-agent`, the crate's agent
//! side playing a script) run by the daemon as a supervised child, its session updates
//! mapped onto agentd's events and stored messages, its permission requests and the
//! `fs/*` calls agentd's rules ask about turned into prompts any client answers.
//!
//! Deltas are compared as rebuilt text, never as counts.

use agentd_testkit::send::SendByName;
use std::path::{Path, PathBuf};
use std::time::Duration;

use agent_proto::rpc::AgentRpcClient;
use agent_proto::{
    AcpBackend, AgentMode, Block, EventKind, LoopFinishReason, MessageStatus, Remember,
    ToolCallBlock, ToolCallStatus,
};
use agentd_testkit::events::{collect_run, finished, text_of};
use agentd_testkit::procs;
use agentd_testkit::rebuild::{Rebuild, visible};
use agentd_testkit::wait::{Verbatim, eventually};
use serde_json::json;

use crate::common::{error_of, messages, start_with};

const WAIT: Duration = Duration::from_secs(30);

fn agent_bin() -> PathBuf {
    let path = Path::new(env!("CARGO_BIN_EXE_agentd")).with_file_name("acp-test-agent");
    assert!(
        path.exists(),
        "{} is missing: build it with `cargo build -p agentd-testkit --bins`",
        path.display()
    );
    path
}

/// A folder with the script (rewritable between runs) and the agent's log.
struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    fn new(script: serde_json::Value) -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let f = Fixture { dir };
        f.script(script);
        f
    }

    fn script(&self, script: serde_json::Value) {
        std::fs::write(self.path("script.json"), script.to_string()).unwrap();
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.path("agent.log")).unwrap_or_default()
    }

    /// The `[[acp_agents]]` entry `test` running the script (and more `env`).
    fn config(&self, env: &str) -> String {
        self.entry(&[], &format!("env = {{ {env} }}\n"))
    }

    /// The entry `test` with more arguments of the agent and more lines of the entry.
    fn entry(&self, args: &[&str], lines: &str) -> String {
        let more: String = args.iter().map(|a| format!(", {a:?}")).collect();
        format!(
            "[[acp_agents]]\nname = \"test\"\ncommand = {:?}\nargs = [\"--script\", {:?}, \"--log\", {:?}{more}]\n{lines}",
            agent_bin().display().to_string(),
            self.path("script.json").display().to_string(),
            self.path("agent.log").display().to_string(),
        )
    }
}

async fn acp_agent(client: &agent_proto::client::Client) -> agent_proto::Agent {
    client
        .create_agent(
            Some("external".into()),
            Some(AgentMode::Acp),
            None,
            None,
            None,
            None,
            None,
            None,
            Some(AcpBackend {
                name: Some("test".into()),
                ..AcpBackend::default()
            }),
        )
        .await
        .expect("createAgent mode acp")
}

/// Sends `text` and collects the run it starts, to its `loopFinished`.
async fn send(
    client: &agent_proto::client::Client,
    sub: &mut agent_proto::client::Subscription<agent_proto::Event>,
    agent_id: &str,
    text: &str,
) -> Vec<agent_proto::Event> {
    client
        .send_plain(agent_id.into(), text.into())
        .await
        .unwrap();
    collect_run(sub, WAIT).await
}

fn prompt_of(events: &[agent_proto::Event]) -> (String, String, bool) {
    events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::PermissionRequested {
                message_id,
                tool_call_id,
                rememberable,
                ..
            } => Some((message_id.clone(), tool_call_id.clone(), *rememberable)),
            _ => None,
        })
        .expect("a permissionRequested event")
}

fn calls(message: &agent_proto::Message) -> Vec<(String, ToolCallStatus, String)> {
    message
        .blocks
        .iter()
        .filter_map(|b| match b {
            Block::ToolCall(ToolCallBlock {
                name,
                status,
                result,
                ..
            }) => Some((
                name.clone(),
                *status,
                result
                    .as_ref()
                    .map(|r| r.content.clone())
                    .unwrap_or_default(),
            )),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn an_external_agent_answers_with_text_thoughts_tool_calls_and_a_plan() {
    let fx = Fixture::new(json!({"turns": [{"steps": [
        {"thought": "thinking it over"},
        "echo",
        {"plan": ["look", "answer"]},
        {"tool": {"id": "t1", "title": "List files", "kind": "execute", "input": {"command": "ls"}}},
        {"done": {"id": "t1", "output": "a.txt b.txt"}},
        {"text": " and done."}
    ]}]}));
    let (_mock, daemon) = start_with(&fx.config("")).await;
    let client = daemon.client().await;
    let agent = acp_agent(&client).await;
    assert_eq!(agent.mode, AgentMode::Acp);
    assert_eq!(
        (agent.provider.as_str(), agent.model.as_str()),
        ("acp", "test")
    );
    assert_eq!(
        agent.acp.as_ref().and_then(|a| a.name.as_deref()),
        Some("test")
    );
    let workspace = agent
        .workspace
        .clone()
        .expect("an acp agent has a workspace");

    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    let events = send(&client, &mut sub, &agent.id, "hello there").await;
    assert_eq!(
        finished(&events).0,
        LoopFinishReason::Completed,
        "{events:?}"
    );
    assert_eq!(text_of(&events), "you said: hello there and done.");
    let thoughts: String = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ReasoningDelta { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(thoughts, "thinking it over");
    let plan = events.iter().find_map(|e| match &e.kind {
        EventKind::PlanUpdated { items } => Some(items.clone()),
        _ => None,
    });
    assert_eq!(plan.map(|p| p.len()), Some(2));
    assert_eq!(
        client.get_plan(agent.id.clone()).await.unwrap().items[0].content,
        "look"
    );

    // Stored like any answer.
    let stored = messages(&client, &agent.id).await;
    let answer = stored.last().unwrap();
    assert_eq!(answer.status, MessageStatus::Done);
    assert_eq!(
        calls(answer),
        vec![(
            "List files".to_owned(),
            ToolCallStatus::Success,
            "a.txt b.txt".to_owned()
        )]
    );
    // The agent's session was opened in the agent's workspace.
    let log = fx.log();
    assert!(log.contains(&format!("session/new {workspace}")), "{log}");
    assert!(log.contains("prompt hello there"), "{log}");

    // An attached PDF goes as a link to the stored copy (every ACP agent takes links).
    let pdf = fx.path("report.pdf");
    std::fs::write(&pdf, b"%PDF-1.4\n%test\n").unwrap();
    let content = agent_proto::MessageContent::Parts(vec![
        agent_proto::ContentPart::Text {
            text: "read this".into(),
        },
        agent_proto::ContentPart::File {
            path: pdf.display().to_string(),
        },
    ]);
    client.send_plain(agent.id.clone(), content).await.unwrap();
    collect_run(&mut sub, WAIT).await;
    let log = fx.log();
    let line = log
        .lines()
        .find(|l| l.starts_with("prompt read this"))
        .unwrap_or_else(|| panic!("{log}"));
    assert!(
        line.contains("[link file://") && line.ends_with(".pdf application/pdf]"),
        "{line}"
    );
}

#[tokio::test]
async fn permission_requests_are_prompts_any_client_answers() {
    let fx = Fixture::new(json!({"turns": [
        {"steps": [
            {"tool": {"id": "t1", "title": "Run tests", "kind": "execute"}},
            {"permission": {"id": "t1"}},
            {"done": {"id": "t1", "output": "ok"}},
            {"text": "tests pass"}
        ]},
        {"steps": [
            {"tool": {"id": "t2", "title": "Delete build", "kind": "delete"}},
            {"permission": {"id": "t2"}},
            {"text": "deleted"}
        ]}
    ]}));
    let (_mock, daemon) = start_with(&fx.config("")).await;
    let client = daemon.client().await;
    let other = daemon.client().await;
    let agent = acp_agent(&client).await;
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();

    // Allowed, by another client than the one that sent.
    let events = send(&client, &mut sub, &agent.id, "run the tests").await;
    assert_eq!(finished(&events).0, LoopFinishReason::WaitingPermission);
    let (message_id, call_id, rememberable) = prompt_of(&events);
    assert!(rememberable, "the agent offered allow always");
    // The prompt is saved with the call, listed like any.
    let waiting = messages(&other, &agent.id).await;
    assert_eq!(
        calls(waiting.last().unwrap())[0].1,
        ToolCallStatus::WaitingPermission
    );
    other
        .handle_permission_response(message_id, call_id, true, None, Some(Remember::Once))
        .await
        .unwrap();
    let events = collect_run(&mut sub, WAIT).await;
    assert_eq!(
        finished(&events).0,
        LoopFinishReason::Completed,
        "{events:?}"
    );
    assert_eq!(text_of(&events), "tests pass");
    assert!(fx.log().contains("permission t1 allow"), "{}", fx.log());
    let answer = messages(&client, &agent.id).await.pop().unwrap();
    assert_eq!(calls(&answer)[0].1, ToolCallStatus::Success);

    // Denied: the agent hears reject and gives up.
    let events = send(&client, &mut sub, &agent.id, "clean up").await;
    let (message_id, call_id, _) = prompt_of(&events);
    client
        .handle_permission_response(message_id, call_id, false, None, None)
        .await
        .unwrap();
    let events = collect_run(&mut sub, WAIT).await;
    assert_eq!(finished(&events).0, LoopFinishReason::Completed);
    assert_eq!(text_of(&events), "rejected");
    assert!(fx.log().contains("permission t2 reject"), "{}", fx.log());
    let answer = messages(&client, &agent.id).await.pop().unwrap();
    assert_eq!(calls(&answer)[0].1, ToolCallStatus::Denied);
}

#[tokio::test]
async fn fs_requests_are_served_under_agentd_rules() {
    let fx = Fixture::new(json!({"turns": []}));
    let (_mock, daemon) = start_with(&fx.config("")).await;
    let client = daemon.client().await;
    let agent = acp_agent(&client).await;
    let workspace = PathBuf::from(agent.workspace.clone().unwrap());
    std::fs::write(workspace.join("notes.txt"), "one\ntwo\nthree\n").unwrap();
    let db = daemon.db_path();
    fx.script(json!({"turns": [{"steps": [
        {"read": {"path": workspace.join("notes.txt"), "line": 2, "limit": 1}},
        {"read": {"path": db}},
        {"write": {"path": workspace.join("out/new.txt"), "content": "written by the agent"}},
        {"terminal": "make"},
        {"text": " end"}
    ]}, {"steps": [
        {"write": {"path": workspace.join("out/new.txt"), "content": "second write"}}
    ]}]}));
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    client
        .send_plain(agent.id.clone(), "use files".into())
        .await
        .unwrap();
    // Reads in the workspace are allowed by default; the data dir is never reachable;
    // a write asks (the default write rule).
    let events = collect_run(&mut sub, WAIT).await;
    assert_eq!(finished(&events).0, LoopFinishReason::WaitingPermission);
    let text = text_of(&events);
    assert!(text.starts_with("read: two\n"), "{text}");
    assert!(text.contains("read failed"), "{text}");
    assert!(!workspace.join("out/new.txt").exists());
    let (message_id, call_id, rememberable) = prompt_of(&events);
    assert!(rememberable);
    client
        .handle_permission_response(message_id, call_id, true, None, Some(Remember::Session))
        .await
        .unwrap();
    let events = collect_run(&mut sub, WAIT).await;
    assert_eq!(
        finished(&events).0,
        LoopFinishReason::Completed,
        "{events:?}"
    );
    assert_eq!(
        std::fs::read_to_string(workspace.join("out/new.txt")).unwrap(),
        "written by the agent"
    );
    let log = fx.log();
    assert!(log.contains("read ") && log.contains(" error"), "{log}");
    assert!(log.contains("/out/new.txt ok"), "{log}");
    let answer = messages(&client, &agent.id).await.pop().unwrap();
    assert_eq!(
        calls(&answer),
        vec![(
            "fs/write_text_file".to_owned(),
            ToolCallStatus::Success,
            "wrote 20 bytes".to_owned()
        )]
    );

    // Remembered for the session (an agentd grant, as for write_file): the next write
    // there does not ask. The running agent already read its script: a new agent would
    // re-read it, so the second turn was in it from the start.
    let events = send(&client, &mut sub, &agent.id, "again").await;
    assert_eq!(
        finished(&events).0,
        LoopFinishReason::Completed,
        "{events:?}"
    );
    assert_eq!(
        std::fs::read_to_string(workspace.join("out/new.txt")).unwrap(),
        "second write"
    );
}

#[tokio::test]
async fn cancel_ends_the_turn_with_session_cancel() {
    let fx = Fixture::new(json!({"turns": [{"steps": [
        {"text": "starting"},
        {"sleep_ms": 20000},
        {"text": "never"}
    ]}]}));
    let (_mock, daemon) = start_with(&fx.config("")).await;
    let client = daemon.client().await;
    let agent = acp_agent(&client).await;
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    client
        .send_plain(agent.id.clone(), "go".into())
        .await
        .unwrap();
    let first = agentd_testkit::events::collect_until_text(&mut sub, WAIT, "starting").await;
    assert!(!first.is_empty());
    assert!(
        client
            .cancel_loop(agent.id.clone())
            .await
            .unwrap()
            .cancelled
    );
    let events = collect_run(&mut sub, WAIT).await;
    assert_eq!(finished(&events).0, LoopFinishReason::Cancelled);
    assert!(fx.log().contains("cancel"), "{}", fx.log());
    let answer = messages(&client, &agent.id).await.pop().unwrap();
    assert_eq!(answer.status, MessageStatus::Cancelled);
    assert_eq!(answer.text(), "starting");
}

#[tokio::test]
async fn an_agent_that_exits_fails_the_run_with_its_stderr_and_is_started_again() {
    let fx = Fixture::new(json!({"turns": [{"steps": [{"text": "bye"}, {"exit": 3}]}]}));
    let (_mock, daemon) = start_with(&fx.config("ACP_TEST_STDERR = \"marker-from-stderr\"")).await;
    let client = daemon.client().await;
    let agent = acp_agent(&client).await;
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    let events = send(&client, &mut sub, &agent.id, "one").await;
    let (reason, error) = finished(&events);
    assert_eq!(reason, LoopFinishReason::Error);
    let error = error.unwrap_or_default();
    assert!(error.contains("marker-from-stderr"), "{error}");
    let kinds: Vec<&str> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Error { kind, .. } => Some(kind.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(kinds, ["acpAgentError"]);

    // The next message starts it again (after a short backoff, announced).
    fx.script(json!({"turns": [{"steps": ["echo"]}]}));
    let events = send(&client, &mut sub, &agent.id, "two").await;
    assert_eq!(
        finished(&events).0,
        LoopFinishReason::Completed,
        "{events:?}"
    );
    assert_eq!(text_of(&events), "you said: two");
    let retry = events.iter().any(|e| {
        matches!(&e.kind, EventKind::Error { retry: Some(_), kind, .. } if kind == "acpAgentError")
    });
    assert!(
        retry,
        "the restart after an early exit is announced with its delay"
    );
    assert_eq!(fx.log().matches("initialize").count(), 2, "{}", fx.log());
}

#[tokio::test]
async fn an_agent_that_never_answers_initialize_fails_the_run_naming_it() {
    let fx = Fixture::new(json!({"turns": [{"steps": ["echo"]}]}));
    let (_mock, daemon) =
        start_with(&fx.entry(&["--silent-initialize"], "start_timeout_secs = 1\n")).await;
    let client = daemon.client().await;
    let agent = acp_agent(&client).await;
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    // The run ends with the start timeout of the entry, not the old 120 s (past WAIT).
    let events = send(&client, &mut sub, &agent.id, "hello").await;
    let (reason, error) = finished(&events);
    assert_eq!(reason, LoopFinishReason::Error, "{events:?}");
    let error = error.unwrap_or_default();
    assert!(
        error.contains("the ACP agent \"test\"") && error.contains("`initialize` within 1 s"),
        "{error}"
    );
    assert!(fx.log().contains("initialize"), "{}", fx.log());
    // The agent that did not answer was stopped.
    let marker = fx.path("script.json").display().to_string();
    procs::wait_gone(&marker, WAIT).await;
}

#[tokio::test]
async fn a_burst_of_small_chunks_goes_out_joined_and_whole() {
    const CHUNKS: usize = 20_000;
    let fx = Fixture::new(json!({"turns": [{"steps": [
        {"thought": "a"},
        {"chunks": {"text": "ab", "count": CHUNKS}},
        {"thought": "b"},
        {"text": "!"}
    ]}]}));
    let (_mock, daemon) = start_with(&fx.config("")).await;
    let client = daemon.client().await;
    let agent = acp_agent(&client).await;
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    let events = send(&client, &mut sub, &agent.id, "talk").await;
    assert_eq!(finished(&events).0, LoopFinishReason::Completed);
    let expected = format!("{}!", "ab".repeat(CHUNKS));
    assert_eq!(text_of(&events), expected);
    // Chunks that were waiting together went out as one delta each time (one event, one
    // save, one write per client), as a model's deltas do; thoughts are not joined to text.
    let deltas = events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::TextDelta { .. }))
        .count();
    assert!(
        deltas * 2 <= CHUNKS,
        "{deltas} textDelta events for {CHUNKS} chunks"
    );
    let thoughts: Vec<&str> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ReasoningDelta { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(thoughts, ["a", "b"]);
    let answer = messages(&client, &agent.id).await.pop().unwrap();
    assert_eq!(answer.text(), expected);
}

#[tokio::test]
async fn a_turn_of_thousands_of_tool_calls_lands_every_call() {
    const CALLS: usize = 3000;
    // Each call after a thought and some text, as agents talk (the turn's pieces and
    // calls alternate), and each ending once the next has started (calls end in another
    // order than they started).
    let fx = Fixture::new(json!({"turns": [{"steps": [
        {"tools": {"count": CALLS, "talk": true, "overlap": true}},
        {"text": "all done"}
    ]}]}));
    let config = format!(
        "{}[limits]\nmax_tool_calls_per_answer = {}\n",
        fx.config(""),
        CALLS + 10
    );
    let (_mock, daemon) = start_with(&config).await;
    let client = daemon.client().await;
    let agent = acp_agent(&client).await;
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    let events = send(&client, &mut sub, &agent.id, "work").await;
    assert_eq!(finished(&events).0, LoopFinishReason::Completed);
    let said: String = (1..=CALLS).map(|n| format!("say {n}. ")).collect();
    assert_eq!(text_of(&events), format!("{said}all done"));
    let results: Vec<(String, String)> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolResult {
                tool_call_id,
                content,
                status: ToolCallStatus::Success,
                ..
            } => Some((tool_call_id.clone(), content.clone())),
            _ => None,
        })
        .collect();
    let expected: Vec<(String, String)> = (1..=CALLS)
        .map(|n| (format!("c{n}"), format!("out {n}")))
        .collect();
    assert!(results == expected, "{} results of {CALLS}", results.len());
    let answer = messages(&client, &agent.id).await.pop().unwrap();
    let stored = calls(&answer);
    assert_eq!(stored.len(), CALLS);
    for (n, (name, status, content)) in stored.iter().enumerate() {
        let n = n + 1;
        assert_eq!(
            (name.as_str(), *status, content.as_str()),
            (
                format!("step {n}").as_str(),
                ToolCallStatus::Success,
                format!("out {n}").as_str()
            )
        );
    }
    // Stored as a client rebuilds it from the events (docs/protocol.md 4.6): what is said
    // after a call's result comes after that call, not before all the turn's calls.
    let mut rebuild = Rebuild::new();
    for event in &events {
        rebuild.apply(event);
    }
    let rebuilt = rebuild.message(&answer.id).expect("the answer rebuilt");
    assert!(
        visible(rebuilt) == visible(&answer),
        "rebuilt and stored differ"
    );
    assert_eq!(
        visible(&answer).last().map(String::as_str),
        Some("text:all done")
    );
}

#[tokio::test]
async fn the_child_is_stopped_with_its_agent_and_with_the_daemon() {
    let fx = Fixture::new(json!({"turns": [{"steps": ["echo"]}, {"steps": ["echo"]}]}));
    let marker = fx.path("script.json").display().to_string();
    let (_mock, mut daemon) = start_with(&fx.config("")).await;
    let client = daemon.client().await;
    let first = acp_agent(&client).await;
    let second = acp_agent(&client).await;
    for agent in [&first, &second] {
        let mut sub = client
            .subscribe_events(Some(agent.id.clone()), None, None)
            .await
            .unwrap();
        client
            .send_plain(agent.id.clone(), "hi".into())
            .await
            .unwrap();
        assert_eq!(
            finished(&collect_run(&mut sub, WAIT).await).0,
            LoopFinishReason::Completed
        );
    }
    // One child per agent (each under its guard process, which carries the same
    // command line).
    let both = procs::with_marker(&marker).len();
    assert!(both == 2 || both == 4, "{both} processes for two agents");
    client.delete_agent(first.id.clone()).await.unwrap();
    eventually(WAIT, "the deleted agent's child to end", async || {
        let left = procs::with_marker(&marker);
        if left.len() == both / 2 {
            Ok(())
        } else {
            Err(left)
        }
    })
    .await;
    daemon.terminate().await;
    procs::wait_gone(&marker, WAIT).await;
}

#[tokio::test]
async fn bad_acp_params_and_unsupported_calls_are_clear_errors() {
    let fx = Fixture::new(json!({"turns": []}));
    let (_mock, daemon) = start_with(&fx.config("")).await;
    let client = daemon.client().await;
    let create = |mode: Option<AgentMode>, acp: Option<AcpBackend>, model: Option<String>| {
        client.create_agent(None, mode, None, model, None, None, None, None, acp)
    };
    let named = |name: &str| AcpBackend {
        name: Some(name.into()),
        ..AcpBackend::default()
    };
    for (mode, acp, model, needle) in [
        (Some(AgentMode::Acp), None, None, "needs acp"),
        (
            Some(AgentMode::Acp),
            Some(named("nope")),
            None,
            "configured: test",
        ),
        (
            Some(AgentMode::Agent),
            Some(named("test")),
            None,
            "only for agents of mode",
        ),
        (
            Some(AgentMode::Acp),
            Some(named("test")),
            Some("gpt".into()),
            "model is not for mode",
        ),
    ] {
        let e = create(mode, acp, model).await.unwrap_err();
        assert_eq!(error_of(&e).0, -32602, "{e}");
        assert!(e.to_string().contains(needle), "{e}");
    }
    // A command of its own, with its env masked in answers.
    let own = AcpBackend {
        command: Some(agent_bin().display().to_string()),
        env: [("TOKEN".to_owned(), "s3cret".to_owned())].into(),
        ..AcpBackend::default()
    };
    let agent = create(Some(AgentMode::Acp), Some(own), None).await.unwrap();
    assert_eq!(agent.model, "acp-test-agent");
    let shown = serde_json::to_string(&client.get_agent(agent.id.clone()).await.unwrap()).unwrap();
    assert!(!shown.contains("s3cret"), "{shown}");
    for e in [
        client.continue_loop(agent.id.clone()).await.unwrap_err(),
        client
            .get_message_request_preview(agent.id.clone(), None)
            .await
            .unwrap_err(),
    ] {
        assert_eq!(error_of(&e).1, "notSupported", "{e}");
    }
    let e = client
        .update_agent(
            agent.id.clone(),
            None,
            None,
            None,
            None,
            Some("gpt".into()),
            None,
            None,
            None,
        )
        .await;
    assert!(
        e.is_err(),
        "a model of agentd's cannot be set on an acp agent"
    );
    let e = client.fork_agent(agent.id.clone(), None).await.unwrap_err();
    assert_eq!(error_of(&e).1, "notSupported", "{e}");
}

#[tokio::test]
async fn a_cancel_while_a_request_waits_answers_it_cancelled() {
    let fx = Fixture::new(json!({"turns": [{"steps": [
        {"tool": {"id": "t1", "title": "Push", "kind": "execute"}},
        {"permission": {"id": "t1"}},
        {"text": "pushed"}
    ]}]}));
    let (_mock, daemon) = start_with(&fx.config("")).await;
    let client = daemon.client().await;
    let agent = acp_agent(&client).await;
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    let events = send(&client, &mut sub, &agent.id, "push it").await;
    assert_eq!(finished(&events).0, LoopFinishReason::WaitingPermission);
    assert!(
        client
            .cancel_loop(agent.id.clone())
            .await
            .unwrap()
            .cancelled
    );
    let events = collect_run(&mut sub, WAIT).await;
    assert_eq!(
        finished(&events).0,
        LoopFinishReason::Cancelled,
        "{events:?}"
    );
    let log = fx.log();
    assert!(
        log.contains("permission t1 cancelled") && log.contains("cancel"),
        "{log}"
    );
    let answer = messages(&client, &agent.id).await.pop().unwrap();
    assert_eq!(calls(&answer)[0].1, ToolCallStatus::Cancelled);
}

#[tokio::test]
async fn an_answer_after_a_restart_says_the_turn_is_gone() {
    let fx = Fixture::new(json!({"turns": [{"steps": [
        {"tool": {"id": "t1", "title": "Deploy", "kind": "execute"}},
        {"permission": {"id": "t1"}},
        {"text": "deployed"}
    ]}]}));
    let (_mock, mut daemon) = start_with(&fx.config("")).await;
    let client = daemon.client().await;
    let agent = acp_agent(&client).await;
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    let events = send(&client, &mut sub, &agent.id, "deploy").await;
    let (message_id, call_id, _) = prompt_of(&events);
    drop(sub);
    drop(client);
    daemon.terminate().await;
    daemon.restart().await;
    let client = daemon.client().await;
    // The prompt survived (saved with the call), answerable; the external agent's turn
    // did not, which the run says.
    let waiting = messages(&client, &agent.id).await.pop().unwrap();
    assert_eq!(calls(&waiting)[0].1, ToolCallStatus::WaitingPermission);
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    client
        .handle_permission_response(message_id, call_id, true, None, None)
        .await
        .unwrap();
    let events = collect_run(&mut sub, WAIT).await;
    let (reason, error) = finished(&events);
    assert_eq!(reason, LoopFinishReason::Error);
    assert!(
        error.unwrap_or_default().contains("turn ended"),
        "{events:?}"
    );
    let answer = messages(&client, &agent.id).await.pop().unwrap();
    assert_eq!(calls(&answer)[0].1, ToolCallStatus::Interrupted);
    // A new message works with a new process.
    fx.script(json!({"turns": [{"steps": ["echo"]}]}));
    let events = send(&client, &mut sub, &agent.id, "again").await;
    assert_eq!(
        finished(&events).0,
        LoopFinishReason::Completed,
        "{events:?}"
    );
    assert_eq!(text_of(&events), "you said: again");
}

/// The caps on what a model writes hold for an external agent too: past
/// `max_message_bytes` (or `max_tool_calls_per_answer`) its turn is stopped with
/// `session/cancel`, what fits is kept, its calls left open get a result, and the next
/// message starts a turn as usual.
#[tokio::test]
async fn an_external_agent_past_a_cap_is_stopped_and_keeps_what_fits() {
    let chunk = |c: char| json!({"text": c.to_string().repeat(600)});
    let fx = Fixture::new(json!({"turns": [
        {"steps": [
            chunk('a'), chunk('b'), chunk('c'),
            // Only a cancel ends this turn early.
            {"sleep_ms": 60000},
            {"text": "never"}
        ]},
        {"steps": [
            {"tool": {"id": "t1", "title": "One", "kind": "read"}},
            {"tool": {"id": "t2", "title": "Two", "kind": "read"}},
            {"tool": {"id": "t3", "title": "Three", "kind": "read"}},
            {"sleep_ms": 60000}
        ]},
        {"steps": [{"text": "fine again"}]}
    ]}));
    let config = format!(
        "{}[limits]\nmax_message_bytes = 1024\nmax_tool_calls_per_answer = 2\n",
        fx.config("")
    );
    let (_mock, daemon) = start_with(&config).await;
    let client = daemon.client().await;
    let agent = acp_agent(&client).await;
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();

    let events = send(&client, &mut sub, &agent.id, "talk").await;
    let (reason, error) = finished(&events);
    assert_eq!(reason, LoopFinishReason::Error);
    let error = error.unwrap();
    assert!(
        error.starts_with("the ACP agent wrote more than 1024 bytes")
            && error.contains("[limits] max_message_bytes = 1024"),
        "{error}"
    );
    let kept = format!("{}{}", "a".repeat(600), "b".repeat(424));
    assert_eq!(text_of(&events), kept);
    let stored = messages(&client, &agent.id).await;
    assert_eq!(stored.last().unwrap().text(), kept);
    eventually(WAIT, "the agent's log to show the cancel", async || {
        let log = fx.log();
        if log.contains("cancel") {
            Ok(())
        } else {
            Err(Verbatim(log))
        }
    })
    .await;

    let events = send(&client, &mut sub, &agent.id, "use tools").await;
    let (reason, error) = finished(&events);
    assert_eq!(reason, LoopFinishReason::Error);
    assert!(
        error
            .as_deref()
            .is_some_and(|e| e.contains("[limits] max_tool_calls_per_answer = 2")),
        "{error:?}"
    );
    let stored = messages(&client, &agent.id).await;
    let answer = stored.last().unwrap();
    let calls = calls(answer);
    assert_eq!(calls.len(), 2, "{calls:?}");
    for (name, status, result) in &calls {
        assert_eq!(*status, ToolCallStatus::Error, "{name}");
        assert!(
            result.starts_with("stopped: the external agent's turn was stopped"),
            "{name}: {result}"
        );
    }

    let events = send(&client, &mut sub, &agent.id, "again").await;
    assert_eq!(finished(&events).0, LoopFinishReason::Completed);
    assert_eq!(text_of(&events), "fine again");
}

#[tokio::test]
async fn updates_for_a_session_the_daemon_never_opened_are_not_the_turns() {
    let fx = Fixture::new(json!({"turns": [{"steps": [
        {"text": "mine"},
        {"elsewhere": " NOT MINE"},
        {"text": " only"}
    ]}]}));
    let (_mock, daemon) = start_with(&fx.config("")).await;
    let client = daemon.client().await;
    let agent = acp_agent(&client).await;
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    let events = send(&client, &mut sub, &agent.id, "hi").await;
    assert_eq!(finished(&events).0, LoopFinishReason::Completed);
    assert_eq!(text_of(&events), "mine only");
}
