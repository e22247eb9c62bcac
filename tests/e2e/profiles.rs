//! Profiles end to end (issue 17 §1): `listProfiles`, a profile given at `createAgent` and
//! switched with `updateAgent` changing the tools, prompt and model settings the model
//! receives (and `listTools`), a profile's permission defaults, the environment section in
//! the preview and the real request (with the git state of a real repository), a profile a
//! changed config no longer has failing closed, and a `general` subagent of a profiled
//! parent getting the profile's tools minus `task`.

use agentd_testkit::send::SendByName;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use agent_proto::client::Client;
use agent_proto::rpc::AgentRpcClient;
use agent_proto::{Agent, AgentMode, EventKind, LoopFinishReason, ProfileSource, ToolCallStatus};
use agentd_testkit::daemon::openai_config;
use agentd_testkit::events::collect_until;
use agentd_testkit::mock_model::{RecordedRequest, Reply};
use serde_json::{Value, json};

use crate::common::{
    before_environment, error_of, model_requests, send_and_collect, start, start_with,
    tool_result_of,
};

const BASIC: &[&str] = &["read_file", "write_file", "edit_file", "bash"];
const CODER_ADDS: &[&str] = &["glob", "grep", "list_directory", "directory_tree"];

/// A profile extending a built-in one, and one with permission defaults and model settings.
const PROFILES: &str = r#"
[[profiles]]
name = "reviewer"
description = "Reads, never writes."
extends = "coder"
remove_tools = ["write_file", "edit_file"]
system_prompt = "Review the code in {{workspace}} as {{profile}}; keep {{unknown}} as it is."

[[profiles]]
name = "locked"
extends = "basic"
permissions = { execute = "deny" }
temperature = 0.3
max_output_tokens = 123
"#;

/// Git, which these tests need (`.ci/run` installs it).
fn git() -> &'static str {
    let git = "/usr/bin/git";
    assert!(
        Path::new(git).exists(),
        "git is not installed at {git}: install it (apt-get install git) to run these tests"
    );
    git
}

/// Runs git in `dir` as a user would, without the machine's own configuration.
fn sh_git(dir: &Path, args: &[&str]) {
    let out = Command::new(git())
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A repository on branch `trunk` with one commit; its canonical path.
fn repo() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = std::fs::canonicalize(dir.path()).unwrap();
    sh_git(&path, &["init", "-q", "-b", "trunk", "."]);
    std::fs::write(path.join("a.txt"), "a\n").unwrap();
    sh_git(&path, &["add", "a.txt"]);
    sh_git(&path, &["commit", "-q", "-m", "first"]);
    (dir, path)
}

/// An agent-mode agent in `workspace` with `profile` (and `settings`).
async fn profiled_agent(
    client: &Client,
    workspace: &Path,
    profile: Option<&str>,
    settings: Option<Value>,
) -> Agent {
    client
        .create_agent(
            Some("profiled".into()),
            Some(AgentMode::Agent),
            None,
            None,
            None,
            Some(workspace.display().to_string()),
            profile.map(str::to_owned),
            settings,
            None,
        )
        .await
        .expect("createAgent with a profile")
}

/// The message of a failed call.
fn message_of(e: &agent_proto::client::Error) -> String {
    match e {
        agent_proto::client::Error::Call(obj) => obj.message().to_owned(),
        other => panic!("expected an RPC error, got {other:?}"),
    }
}

/// A fresh canonical temp workspace (not a repository).
fn workspace() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = std::fs::canonicalize(dir.path()).unwrap();
    (dir, path)
}

async fn set_profile(client: &Client, agent: &Agent, profile: &str) -> Agent {
    client
        .update_agent(
            agent.id.clone(),
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            Some(profile.into()),
        )
        .await
        .expect("updateAgent profile")
}

/// The names of the tools a request offered, sorted.
fn tools_of(request: &RecordedRequest) -> Vec<String> {
    let mut names: Vec<String> = request.body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect();
    names.sort();
    names
}

/// The system prompt of a request.
fn system_of(body: &Value) -> String {
    let first = &body["messages"][0];
    assert_eq!(first["role"], "system", "{body}");
    first["content"].as_str().unwrap().to_owned()
}

/// The tools `listTools {agentId}` shows enabled, sorted.
async fn enabled_tools(client: &Client, agent: &Agent) -> Vec<String> {
    let mut names: Vec<String> = client
        .list_tools(Some(agent.id.clone()))
        .await
        .unwrap()
        .tools
        .into_iter()
        .filter(|t| t.enabled)
        .map(|t| t.name)
        .collect();
    names.sort();
    names
}

/// Tool names of several lists, in order.
fn listed(list: &[&[&str]]) -> Vec<String> {
    list.iter()
        .flat_map(|l| l.iter())
        .map(|s| (*s).to_owned())
        .collect()
}

/// Tool names of several lists, sorted (requests and `listTools` keep the daemon's order).
fn names(list: &[&[&str]]) -> Vec<String> {
    let mut names = listed(list);
    names.sort();
    names
}

#[tokio::test]
async fn list_profiles_shows_the_builtin_ones_and_the_configs() {
    let (_mock, daemon) = start_with(PROFILES).await;
    let client = daemon.client().await;
    let profiles = client.list_profiles().await.unwrap().profiles;
    let sources: Vec<(&str, ProfileSource)> = profiles
        .iter()
        .map(|p| (p.name.as_str(), p.source))
        .collect();
    assert_eq!(
        sources,
        [
            ("basic", ProfileSource::Builtin),
            ("coder", ProfileSource::Builtin),
            ("planner", ProfileSource::Builtin),
            ("full", ProfileSource::Builtin),
            ("reviewer", ProfileSource::Config),
            ("locked", ProfileSource::Config),
        ]
    );
    let tools = |name: &str| {
        profiles
            .iter()
            .find(|p| p.name == name)
            .unwrap()
            .tools
            .clone()
    };
    assert_eq!(tools("basic"), listed(&[BASIC]));
    assert_eq!(tools("coder"), listed(&[BASIC, CODER_ADDS]));
    assert_eq!(
        tools("planner"),
        listed(&[
            BASIC,
            CODER_ADDS,
            &["todo_write", "ask_user_question", "task"]
        ])
    );
    assert_eq!(
        tools("full"),
        listed(&[
            BASIC,
            CODER_ADDS,
            &["todo_write", "ask_user_question", "task"],
            &["web_fetch", "web_search", "skill"]
        ])
    );
    // Extending coder less two tools.
    assert_eq!(
        tools("reviewer"),
        listed(&[&["read_file", "bash"], CODER_ADDS])
    );
    let reviewer = profiles.iter().find(|p| p.name == "reviewer").unwrap();
    assert_eq!(reviewer.description, "Reads, never writes.");
    let locked = profiles.iter().find(|p| p.name == "locked").unwrap();
    assert_eq!(
        (locked.temperature, locked.max_output_tokens),
        (Some(0.3), Some(123))
    );
    // The wire shape.
    let raw = serde_json::to_value(locked).unwrap();
    assert_eq!(raw["source"], "config");
    assert_eq!(raw["maxOutputTokens"], 123);
    assert_eq!(raw["permissions"], json!({"execute": "deny"}));
}

#[tokio::test]
async fn a_profile_switch_changes_the_tools_and_prompt_sent_to_the_model() {
    let (mock, daemon) = start_with(PROFILES).await;
    let client = daemon.client().await;
    let (_dir, ws) = workspace();
    let ws_text = ws.display().to_string();
    let agent = profiled_agent(&client, &ws, Some("basic"), None).await;
    assert_eq!(agent.profile.as_deref(), Some("basic"));
    assert_eq!(enabled_tools(&client, &agent).await, names(&[BASIC]));

    mock.push(Reply::openai_text(&["one"]));
    send_and_collect(&client, &agent.id, "first").await;
    let agent = set_profile(&client, &agent, "reviewer").await;
    assert_eq!(agent.profile.as_deref(), Some("reviewer"));
    assert_eq!(
        enabled_tools(&client, &agent).await,
        names(&[&["read_file", "bash"], CODER_ADDS])
    );
    mock.push(Reply::openai_text(&["two"]));
    send_and_collect(&client, &agent.id, "second").await;
    // `""` removes the profile: every builtin tool again, as for any agent without one.
    let agent = set_profile(&client, &agent, "").await;
    assert_eq!(agent.profile, None);
    let mut all: Vec<String> = client
        .list_tools(None)
        .await
        .unwrap()
        .tools
        .into_iter()
        // Every builtin this daemon can offer (web_search has no backend here).
        .filter(|t| t.source == "builtin" && t.enabled)
        .map(|t| t.name)
        .collect();
    all.sort();
    assert_eq!(enabled_tools(&client, &agent).await, all);
    mock.push(Reply::openai_text(&["three"]));
    send_and_collect(&client, &agent.id, "third").await;

    let requests = model_requests(&mock);
    assert_eq!(requests.len(), 3);
    assert_eq!(tools_of(&requests[0]), names(&[BASIC]));
    assert_eq!(
        tools_of(&requests[1]),
        names(&[&["read_file", "bash"], CODER_ADDS])
    );
    assert_eq!(tools_of(&requests[2]), all);
    assert!(all.len() > 8, "{all:?}");

    // The prompts: the profile's (its template rendered), then the environment section.
    let first = before_environment(&system_of(&requests[0].body), &ws_text, "no", "basic");
    assert!(
        first.starts_with(&format!(
            "You are a coding agent working in the workspace {ws_text}."
        )),
        "{first}"
    );
    assert!(first.contains("edit_file"), "{first}");
    let second = before_environment(&system_of(&requests[1].body), &ws_text, "no", "reviewer");
    assert_eq!(
        second,
        format!("Review the code in {ws_text} as reviewer; keep {{{{unknown}}}} as it is.")
    );
    let third = before_environment(&system_of(&requests[2].body), &ws_text, "no", "none");
    assert_eq!(third, "");
}

#[tokio::test]
async fn unknown_profiles_are_refused_naming_the_ones_there_are() {
    let (_mock, daemon) = start_with(PROFILES).await;
    let client = daemon.client().await;
    let (_dir, ws) = workspace();
    let expected = "unknown profile \"nope\"; the profiles are: basic, coder, planner, full, \
                    reviewer, locked (listProfiles), or \"\" for none";
    let err = client
        .create_agent(
            None,
            Some(AgentMode::Agent),
            None,
            None,
            None,
            Some(ws.display().to_string()),
            Some("nope".into()),
            None,
            None,
        )
        .await
        .unwrap_err();
    assert_eq!(error_of(&err), (-32602, "invalidParams".to_owned()));
    assert_eq!(message_of(&err), expected);

    let agent = profiled_agent(&client, &ws, Some("coder"), None).await;
    let err = client
        .update_agent(
            agent.id.clone(),
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            Some("nope".into()),
        )
        .await
        .unwrap_err();
    assert_eq!(error_of(&err), (-32602, "invalidParams".to_owned()));
    assert_eq!(message_of(&err), expected);
    let unchanged = client.get_agent(agent.id.clone()).await.unwrap();
    assert_eq!(unchanged.profile.as_deref(), Some("coder"));
}

#[tokio::test]
async fn a_profiles_permissions_and_model_settings_apply_under_the_agents_own() {
    // The config asks before execute; the profile denies it.
    let (mock, daemon) = start_with(PROFILES).await;
    let client = daemon.client().await;
    let (_dir, ws) = workspace();
    let agent = profiled_agent(&client, &ws, Some("locked"), None).await;
    let marker = ws.join("ran");
    let args = json!({"command": format!("touch {}", marker.display())}).to_string();
    mock.push(Reply::openai_tool_calls(&[], &[("b1", "bash", &args)]));
    mock.push(Reply::openai_text(&["could not"]));
    let (_, events) = send_and_collect(&client, &agent.id, "run it").await;
    assert!(
        !events
            .iter()
            .any(|e| matches!(e.kind, EventKind::PermissionRequested { .. })),
        "the profile's deny needs no prompt"
    );
    assert_eq!(tool_result_of(&events, "b1").0, ToolCallStatus::Denied);
    assert!(!marker.exists());
    let requests = model_requests(&mock);
    assert_eq!(requests[0].body["temperature"], json!(0.3));
    assert_eq!(requests[0].body["max_tokens"], json!(123));

    // The agent's own settings win over the profile's: execute allowed, its temperature.
    client
        .update_agent(
            agent.id.clone(),
            None,
            None,
            None,
            None,
            None,
            None,
            Some(json!({"temperature": 0.9, "permissions": {"execute": "allow"}})),
            None,
        )
        .await
        .unwrap();
    mock.push(Reply::openai_tool_calls(&[], &[("b2", "bash", &args)]));
    mock.push(Reply::openai_text(&["done"]));
    let (_, events) = send_and_collect(&client, &agent.id, "again").await;
    assert_eq!(tool_result_of(&events, "b2").0, ToolCallStatus::Success);
    assert!(marker.exists());
    let requests = model_requests(&mock);
    let last = requests.last().unwrap();
    assert_eq!(last.body["temperature"], json!(0.9));
    assert_eq!(last.body["max_tokens"], json!(123));
}

#[tokio::test]
async fn the_environment_section_is_in_the_preview_and_the_request() {
    let (mock, daemon) = start().await;
    let client = daemon.client().await;

    // A clean repository: the real request, then the preview, say so.
    let (_clean_dir, clean) = repo();
    let clean_text = clean.display().to_string();
    let agent = profiled_agent(&client, &clean, Some("coder"), None).await;
    mock.push(Reply::openai_text(&["ok"]));
    send_and_collect(&client, &agent.id, "hello").await;
    let sent = system_of(&model_requests(&mock)[0].body);
    let before = before_environment(&sent, &clean_text, "yes (branch trunk; clean)", "coder");
    assert!(before.contains("glob for file names"), "{before}");
    let preview = client
        .get_message_request_preview(agent.id.clone(), None)
        .await
        .unwrap();
    let previewed = system_of(&preview.request);
    before_environment(
        &previewed,
        &clean_text,
        "yes (branch trunk; clean)",
        "coder",
    );

    // Changes and another branch, in a folder inside the repository.
    let (_dirty_dir, dirty) = repo();
    sh_git(&dirty, &["checkout", "-q", "-b", "feat/env"]);
    std::fs::write(dirty.join("a.txt"), "changed\n").unwrap();
    std::fs::create_dir(dirty.join("sub")).unwrap();
    let inner = dirty.join("sub");
    let agent = profiled_agent(&client, &inner, None, None).await;
    let preview = client
        .get_message_request_preview(agent.id.clone(), None)
        .await
        .unwrap();
    before_environment(
        &system_of(&preview.request),
        &inner.display().to_string(),
        "yes (branch feat/env; uncommitted changes)",
        "none",
    );

    // A repository whose config would run a program from `git status`: not run, and the
    // changes are unknown.
    let (_trap_dir, trap) = repo();
    let marker = trap.join("fsmonitor-ran");
    let mut config = std::fs::read_to_string(trap.join(".git/config")).unwrap();
    config.push_str(&format!(
        "[core]\n\tfsmonitor = \"touch {}; false\"\n",
        marker.display()
    ));
    std::fs::write(trap.join(".git/config"), config).unwrap();
    let agent = profiled_agent(&client, &trap, None, None).await;
    let preview = client
        .get_message_request_preview(agent.id.clone(), None)
        .await
        .unwrap();
    before_environment(
        &system_of(&preview.request),
        &trap.display().to_string(),
        "yes (branch trunk; changes unknown)",
        "none",
    );
    assert!(
        !marker.exists(),
        "the daemon ran the repository's fsmonitor"
    );
    // The trap is real: a plain git status springs it.
    sh_git(&trap, &["status", "--porcelain"]);
    assert!(marker.exists());
}

#[tokio::test]
async fn a_profile_the_config_no_longer_has_fails_closed_until_the_agent_gets_another() {
    let (mock, mut daemon) = start_with(PROFILES).await;
    let client = daemon.client().await;
    let (_dir, ws) = workspace();
    let agent = profiled_agent(&client, &ws, Some("reviewer"), None).await;
    drop(client);
    daemon.terminate().await;
    std::fs::write(daemon.config_path(), openai_config(&mock.url())).unwrap();
    daemon.restart().await;
    let client = daemon.client().await;

    assert_eq!(enabled_tools(&client, &agent).await, Vec::<String>::new());
    let err = client
        .get_message_request_preview(agent.id.clone(), None)
        .await
        .unwrap_err();
    assert_eq!(error_of(&err).1, "invalidState");
    assert!(
        message_of(&err).starts_with("this agent's profile \"reviewer\" does not exist"),
        "{err}"
    );

    let (_, events) = send_and_collect(&client, &agent.id, "hello").await;
    let (message, kind) = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::Error { message, kind, .. } => Some((message.clone(), kind.clone())),
            _ => None,
        })
        .expect("an error event");
    assert_eq!(kind, "profileNotFound");
    assert_eq!(
        message,
        "this agent's profile \"reviewer\" does not exist (the profiles are: basic, coder, \
         planner, full); give it one that exists with updateAgent (profile), or profile \"\" \
         for none"
    );
    assert!(
        model_requests(&mock).is_empty(),
        "nothing reached the model"
    );

    set_profile(&client, &agent, "basic").await;
    mock.push(Reply::openai_text(&["back"]));
    let (_, events) = send_and_collect(&client, &agent.id, "again").await;
    assert!(events.iter().any(|e| matches!(
        e.kind,
        EventKind::LoopFinished {
            reason: LoopFinishReason::Completed,
            ..
        }
    )));
    assert_eq!(tools_of(&model_requests(&mock)[0]), names(&[BASIC]));
}

#[tokio::test]
async fn defaults_profile_is_the_profile_of_agents_created_without_one() {
    let mock = agentd_testkit::mock_model::MockModel::start().await;
    let config =
        openai_config(&mock.url()).replace("[defaults]\n", "[defaults]\nprofile = \"coder\"\n");
    let daemon = agentd_testkit::daemon::TestDaemon::start(crate::common::bin(), &config).await;
    let client = daemon.client().await;
    let (_dir, ws) = workspace();
    let defaulted = profiled_agent(&client, &ws, None, None).await;
    assert_eq!(defaulted.profile.as_deref(), Some("coder"));
    let none = profiled_agent(&client, &ws, Some(""), None).await;
    assert_eq!(none.profile, None);
}

#[tokio::test]
async fn a_general_subagent_of_a_profiled_parent_gets_its_tools_minus_task() {
    let (mock, daemon) = start().await;
    let client = daemon.client().await;
    let (_dir, ws) = workspace();
    let parent = profiled_agent(&client, &ws, Some("planner"), None).await;
    mock.route("CHILD-REPORT", Reply::openai_text(&["All done."]));
    mock.route("SUBTASK-P", Reply::openai_text(&["CHILD-REPORT: fine"]));
    let args = json!({
        "description": "a subtask",
        "prompt": "SUBTASK-P: look around",
        "subagentType": "general"
    })
    .to_string();
    mock.push(Reply::openai_tool_calls(&[], &[("t1", "task", &args)]));
    let mut all = client.subscribe_events(None, None, None).await.unwrap();
    client
        .send_plain(parent.id.clone(), "delegate".into())
        .await
        .unwrap();
    let events = collect_until(&mut all, Duration::from_secs(60), |e| {
        e.agent_id == parent.id && matches!(e.kind, EventKind::LoopFinished { .. })
    })
    .await;
    let child = events
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::AgentCreated { agent } => Some(agent.clone()),
            _ => None,
        })
        .expect("the subagent");
    assert_eq!(child.profile.as_deref(), Some("planner"));

    let requests = model_requests(&mock);
    let parent_tools = tools_of(&requests[0]);
    // The planner's tools this daemon has (all of them here).
    assert_eq!(
        parent_tools,
        names(&[
            BASIC,
            CODER_ADDS,
            &["todo_write", "ask_user_question", "task"]
        ])
    );
    // The child's request is the next one the model received.
    let child_request = &requests[1];
    assert!(child_request.body_text.contains("SUBTASK-P"));
    assert_eq!(
        tools_of(child_request),
        names(&[BASIC, CODER_ADDS, &["todo_write", "ask_user_question"]])
    );
    before_environment(
        &system_of(&child_request.body),
        &ws.display().to_string(),
        "no",
        "planner",
    );
    let last = requests.last().unwrap();
    assert_eq!(
        agentd_testkit::transcript::tool_result(last, "t1"),
        "CHILD-REPORT: fine"
    );
}

#[tokio::test]
async fn an_import_does_not_choose_a_profile() {
    // A profile that allows every command: naming it must not be how an export gets them.
    let open = "[[profiles]]\nname = \"open\"\nextends = \"basic\"\npermissions = { execute = \"allow\" }\n";
    let (mock, daemon) = start_with(open).await;
    let client = daemon.client().await;
    let (_dir, ws) = workspace();
    let source = profiled_agent(&client, &ws, Some("open"), None).await;
    let exported = client
        .export_agent(source.id.clone(), agent_proto::ExportFormat::Json)
        .await
        .unwrap();
    assert!(exported.content.contains("\"profile\":\"open\""));
    let imported = client
        .import_agent(
            Value::String(exported.content),
            Some(ws.display().to_string()),
            None,
        )
        .await
        .unwrap();
    assert_eq!(imported.profile, None);
    // So a command asks, as the config says.
    let args = json!({"command": "true"}).to_string();
    mock.push(Reply::openai_tool_calls(&[], &[("b1", "bash", &args)]));
    let (_, events) = send_and_collect(&client, &imported.id, "run").await;
    assert!(
        events
            .iter()
            .any(|e| matches!(e.kind, EventKind::PermissionRequested { .. }))
    );
}
