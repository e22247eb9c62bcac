//! The built-in demo model (no API key, no config): a newcomer's first tool call, its
//! permission prompt and the answer, offline.

use agentd_testkit::send::SendByName;
use std::time::Duration;

use agent_proto::client::Client;
use agent_proto::rpc::AgentRpcClient;
use agent_proto::{Agent, AgentMode, Event, EventKind, LoopFinishReason, Remember, ToolCallStatus};
use agentd_testkit::daemon::TestDaemon;
use agentd_testkit::events::{collect_run, finished, text_of};
use agentd_testkit::scenario::answer_prompt;

use crate::common::bin;

const RUN: Duration = Duration::from_secs(30);

/// A daemon with an empty config (the demo is its default provider) and an agent of the
/// demo in `agent` mode, working in a temp folder.
async fn demo_agent() -> (TestDaemon, Client, Agent, tempfile::TempDir) {
    let daemon = TestDaemon::start(bin(), "").await;
    let client = daemon.client().await;
    let workspace = tempfile::tempdir().unwrap();
    let path = std::fs::canonicalize(workspace.path()).unwrap();
    let agent = client
        .create_agent(
            Some("demo".into()),
            Some(AgentMode::Agent),
            Some("demo".into()),
            None,
            None,
            Some(path.display().to_string()),
            None,
            None,
            None,
        )
        .await
        .unwrap();
    (daemon, client, agent, workspace)
}

async fn send(client: &Client, agent: &Agent, text: &str) -> (String, Vec<Event>) {
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    let sent = client
        .send_plain(agent.id.clone(), text.into())
        .await
        .unwrap();
    (sent.assistant_message_id, collect_run(&mut sub, RUN).await)
}

/// The `toolResult`s of a run: (status, content).
fn results(events: &[Event]) -> Vec<(ToolCallStatus, String)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolResult {
                status, content, ..
            } => Some((*status, content.clone())),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn run_asks_permission_then_runs_the_command_and_answers() {
    let (_daemon, client, agent, workspace) = demo_agent().await;
    std::fs::write(workspace.path().join("hello.txt"), "hi\n").unwrap();

    let (message, events) = send(&client, &agent, "run ls").await;
    assert_eq!(
        finished(&events).0,
        LoopFinishReason::WaitingPermission,
        "{events:?}"
    );
    let (call, command) = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::PermissionRequested {
                tool_call_id,
                tool_name,
                command,
                ..
            } if tool_name == "bash" => Some((tool_call_id.clone(), command.clone())),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no bash prompt: {events:?}"));
    assert_eq!(command.as_deref(), Some("ls"));
    assert_eq!(text_of(&events), "I'll run `ls`.");

    let resumed = answer_prompt(&client, &agent.id, &message, &call, true, Remember::Once).await;
    assert_eq!(finished(&resumed).0, LoopFinishReason::Completed);
    let results = results(&resumed);
    assert_eq!(results.len(), 1, "{resumed:?}");
    assert_eq!(results[0].0, ToolCallStatus::Success);
    assert!(results[0].1.contains("hello.txt"), "{}", results[0].1);
    let answer = text_of(&resumed);
    assert!(
        answer.starts_with("`ls` printed:\n\n    hello.txt"),
        "{answer}"
    );
}

#[tokio::test]
async fn read_reads_a_file_of_the_workspace_without_a_prompt() {
    let (_daemon, client, agent, workspace) = demo_agent().await;
    std::fs::write(
        workspace.path().join("README.md"),
        "# A project\n\nIt does things.\n",
    )
    .unwrap();

    let (_, events) = send(&client, &agent, "read README.md").await;
    assert_eq!(
        finished(&events).0,
        LoopFinishReason::Completed,
        "{events:?}"
    );
    assert!(
        !events
            .iter()
            .any(|e| matches!(e.kind, EventKind::PermissionRequested { .. })),
        "reading inside the workspace is allowed: {events:?}"
    );
    let results = results(&events);
    assert_eq!(results.len(), 1, "{events:?}");
    assert!(results[0].1.contains("# A project"), "{}", results[0].1);
    let text = text_of(&events);
    assert!(
        text.starts_with("Let me read README.md.README.md begins with:"),
        "{text}"
    );
    assert!(text.contains("# A project"), "{text}");

    // Anything else is echoed, naming the phrases to try.
    let (_, events) = send(&client, &agent, "Hello").await;
    let text = text_of(&events);
    assert!(text.contains("You said: Hello"), "{text}");
    assert!(text.contains("\"run ls\""), "{text}");
}
