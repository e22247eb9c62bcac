//! The shell checker fails closed, end to end: a grant (or an `allow` level) covers only a
//! command bash's grammar shows to be plain; everything the checker cannot read is asked
//! every time, is never rememberable, shows why, and is shown with its control characters
//! escaped; a blocked pattern that cannot be ruled out is denied.

use std::os::unix::fs::PermissionsExt;

use agent_proto::{EventKind, Remember, ToolCallStatus};
use agentd_testkit::events::type_names;
use agentd_testkit::mock_model::{MockModel, Reply};
use agentd_testkit::scenario::bash_call;
use serde_json::json;

use crate::common::{
    answer_prompt, permission_request, send_and_collect, start, tool_agent, tool_result_of,
    tool_scenario, ws,
};

/// Commands that read as "just ls" to a careless parser but run `touch P` (or a program
/// the agent wrote) in bash.
const ATTACKS: &[&str] = &[
    "ls \r# ; touch P",
    "ls $(( $(touch P) 0 ))",
    "(( $(touch P) )); ls",
    "ls ${x:-\"$(touch P)\"}",
    "ls $(cat <<EOF\n$(touch P)\nEOF\n)",
    "ls $'\\''; touch P",
    "bash --rcfile ./rc -i -c ls",
    "bash -i -c ls",
    "./x/ls",
    "PATH=./x ls",
];

/// Sends each attack, checks the prompt, denies it, and checks nothing ran.
async fn each_attack_is_asked_every_time(
    mock: &MockModel,
    client: &agent_proto::client::Client,
    agent: &agent_proto::Agent,
) {
    let ws = ws(agent);
    for (k, command) in ATTACKS.iter().enumerate() {
        let id = format!("attack{k}");
        mock.push(bash_call(&id, command));
        let (sent, events) = send_and_collect(client, &agent.id, "go on").await;
        match permission_request(&events) {
            EventKind::PermissionRequested {
                rememberable,
                risk,
                description,
                command_display,
                command: raw,
                ..
            } => {
                assert!(!rememberable, "{command:?} must not be rememberable");
                let risk = risk.unwrap_or_else(|| panic!("{command:?}: the prompt says no why"));
                assert!(!risk.is_empty());
                assert_eq!(raw.as_deref(), Some(*command), "the exact command is kept");
                let shown = command_display.unwrap();
                for text in [&shown, &description, &risk] {
                    assert!(
                        !text
                            .chars()
                            .any(|c| c.is_control() && c != '\n' && c != '\t'),
                        "{command:?}: a raw control character is shown: {text:?}"
                    );
                }
                if command.contains('\r') {
                    assert!(shown.contains("\\r"), "{shown:?}");
                    assert!(description.contains("\\r"), "{description:?}");
                }
            }
            other => panic!("{other:?}"),
        }
        mock.push(Reply::openai_text(&["understood"]));
        let resumed = answer_prompt(
            client,
            &agent.id,
            &sent.assistant_message_id,
            &id,
            false,
            Remember::Once,
        )
        .await;
        assert_eq!(tool_result_of(&resumed, &id).0, ToolCallStatus::Denied);
        assert!(!ws.join("P").exists(), "{command:?} ran touch");
    }
}

/// A workspace with a program named `ls` and an rc file, both of which would create `P`.
fn plant_traps(agent: &agent_proto::Agent) {
    let ws = ws(agent);
    std::fs::create_dir_all(ws.join("x")).unwrap();
    std::fs::write(ws.join("x/ls"), "#!/bin/sh\ntouch P\n").unwrap();
    std::fs::set_permissions(ws.join("x/ls"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(ws.join("rc"), "touch P\n").unwrap();
}

#[tokio::test]
async fn a_session_grant_for_ls_never_runs_what_the_checker_cannot_read() {
    let (mock, _daemon, client, agent, _dir) = tool_scenario("").await.into_parts();
    plant_traps(&agent);

    mock.push(bash_call("grant", "ls"));
    let (sent, events) = send_and_collect(&client, &agent.id, "list").await;
    match permission_request(&events) {
        EventKind::PermissionRequested { rememberable, .. } => assert!(rememberable),
        other => panic!("{other:?}"),
    }
    mock.push(Reply::openai_text(&["listed"]));
    let resumed = answer_prompt(
        &client,
        &agent.id,
        &sent.assistant_message_id,
        "grant",
        true,
        Remember::Session,
    )
    .await;
    assert_eq!(tool_result_of(&resumed, "grant").0, ToolCallStatus::Success);

    // The grant covers a plain ls...
    mock.push(bash_call("plain", "ls -la x"));
    mock.push(Reply::openai_text(&["listed again"]));
    let (_, events) = send_and_collect(&client, &agent.id, "again").await;
    assert!(!type_names(&events).contains(&"permissionRequested"));
    assert_eq!(tool_result_of(&events, "plain").0, ToolCallStatus::Success);

    // ...and nothing the checker cannot read.
    each_attack_is_asked_every_time(&mock, &client, &agent).await;
}

#[tokio::test]
async fn an_allow_level_covers_only_plain_commands() {
    let (mock, daemon) = start().await;
    let client = daemon.client().await;
    let settings = json!({"permissions": {"execute": "allow"}});
    let (agent, _dir) = tool_agent(&client, Some(settings)).await;
    plant_traps(&agent);

    mock.push(bash_call("plain", "echo allowed > out.txt && cat out.txt"));
    mock.push(Reply::openai_text(&["done"]));
    let (_, events) = send_and_collect(&client, &agent.id, "write").await;
    assert!(!type_names(&events).contains(&"permissionRequested"));
    let (status, content, _) = tool_result_of(&events, "plain");
    assert_eq!(status, ToolCallStatus::Success, "{content}");
    assert!(content.contains("allowed"), "{content}");

    // A redirection outside the workspace is not plain.
    mock.push(bash_call("outside", "echo x > ../escaped.txt"));
    let (sent, events) = send_and_collect(&client, &agent.id, "escape").await;
    if !type_names(&events).contains(&"permissionRequested") {
        panic!("not asked: {:?}", tool_result_of(&events, "outside"));
    }
    match permission_request(&events) {
        EventKind::PermissionRequested {
            risk, rememberable, ..
        } => {
            assert!(!rememberable);
            assert!(risk.unwrap().contains("outside the workspace"));
        }
        other => panic!("{other:?}"),
    }
    mock.push(Reply::openai_text(&["not then"]));
    answer_prompt(
        &client,
        &agent.id,
        &sent.assistant_message_id,
        "outside",
        false,
        Remember::Once,
    )
    .await;
    assert!(!ws(&agent).join("../escaped.txt").exists());

    each_attack_is_asked_every_time(&mock, &client, &agent).await;
}

#[tokio::test]
async fn blocked_patterns_that_cannot_be_ruled_out_are_denied() {
    let extra = "[permissions]\nexecute = \"allow\"\nblocked_commands = [\"git push --force\", \"rm -rf /\"]\n";
    let (mock, _daemon, client, agent, _dir) = tool_scenario(extra).await.into_parts();
    let commands = [
        "F=--force; git push \"$F\" origin",
        "git push $(echo --force)",
        "git push --for''ce",
        "rm -rf $(echo /)",
        "timeout $T rm -rf /",
        "sh -c 'rm -rf /'",
    ];
    for (k, command) in commands.iter().enumerate() {
        let id = format!("b{k}");
        mock.push(bash_call(&id, command));
        mock.push(Reply::openai_text(&["blocked, fine"]));
        let (_, events) = send_and_collect(&client, &agent.id, "try").await;
        assert!(
            !type_names(&events).contains(&"permissionRequested"),
            "{command:?} is denied, not asked"
        );
        let (status, content, _) = tool_result_of(&events, &id);
        assert_eq!(status, ToolCallStatus::Denied, "{command:?}: {content}");
        assert!(content.contains("blocked"), "{content}");
    }
    // A command that cannot match is not denied.
    mock.push(bash_call("ok", "git status --short"));
    mock.push(Reply::openai_text(&["fine"]));
    let (_, events) = send_and_collect(&client, &agent.id, "status").await;
    assert_ne!(tool_result_of(&events, "ok").0, ToolCallStatus::Denied);
}
