//! Tools hardened against a hostile model (issue 12, section 4): `web_fetch` checks every
//! redirect hop with the policy, walks and paths never reach the data dir, an answer to a
//! write prompt applies to the path it showed and nothing else, and everything the daemon
//! writes is private.

use std::os::unix::fs::{DirBuilderExt, PermissionsExt, symlink};
use std::path::{Path, PathBuf};

use agent_proto::rpc::AgentRpcClient;
use agent_proto::{Agent, AgentMode, EventKind, PermissionLevel, Remember, ToolCallStatus};
use agentd_testkit::events::type_names;
use agentd_testkit::mock_model::{MockModel, Reply};
use agentd_testkit::scenario::answer_prompt;
use serde_json::json;

use crate::common::{
    ALLOW_ALL, permission_request, send_and_collect, start_with, tool_agent, tool_result_of,
    tool_scenario, ws,
};

fn call(id: &str, tool: &str, args: serde_json::Value) -> (String, String, String) {
    (id.into(), tool.into(), args.to_string())
}

/// One model reply making these calls.
fn calls(list: &[(String, String, String)]) -> Reply {
    let refs: Vec<(&str, &str, &str)> = list
        .iter()
        .map(|(i, n, a)| (i.as_str(), n.as_str(), a.as_str()))
        .collect();
    Reply::openai_tool_calls(&[], &refs)
}

fn permission_requests(events: &[agent_proto::Event]) -> usize {
    events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::PermissionRequested { .. }))
        .count()
}

/// An agent in `agent` mode working in `workspace`.
async fn agent_in(client: &agent_proto::client::Client, workspace: Option<&Path>) -> Agent {
    client
        .create_agent(
            Some("hardening".into()),
            Some(AgentMode::Agent),
            None,
            None,
            None,
            workspace.map(|w| w.display().to_string()),
            None,
            None,
            None,
        )
        .await
        .expect("createAgent")
}

/// A 302 to `location`.
fn redirect(location: &str) -> Reply {
    Reply::status(302, "").header("Location", location)
}

#[tokio::test]
async fn web_fetch_checks_every_redirect_hop_against_the_host_grants() {
    // network = "ask" (the default): a fetch runs on a grant for its host.
    let (mock, _daemon, client, agent, _dir) = tool_scenario("").await.into_parts();
    let a = MockModel::start().await;
    let b = MockModel::start().await;
    // The policy keys network grants by host:port when the URL names a port, so the two
    // servers on 127.0.0.1 are two hosts to it: a grant for A does not cover B.
    let host_of = |m: &MockModel| m.url().trim_start_matches("http://").replace("/v1", "");
    let (host_a, host_b) = (host_of(&a), host_of(&b));
    assert_ne!(host_a, host_b);
    let b_page = format!("{}/page", b.url());
    a.push(redirect(&b_page));
    b.push(Reply::html("<p>B's secret</p>"));

    // A redirects to B: the grant for A is given with the first prompt; B is not asked
    // for, so the fetch stops there and says where it wanted to go.
    let start_url = format!("{}/start", a.url());
    mock.push(calls(&[call(
        "to-b",
        "web_fetch",
        json!({"url": start_url}),
    )]));
    let (sent, events) = send_and_collect(&client, &agent.id, "fetch").await;
    match permission_request(&events) {
        EventKind::PermissionRequested {
            permission_type,
            description,
            ..
        } => {
            assert_eq!(permission_type, PermissionLevel::Network);
            assert!(description.contains(&host_a), "{description}");
        }
        other => panic!("{other:?}"),
    }
    mock.push(Reply::openai_text(&["stopped"]));
    let resumed = answer_prompt(
        &client,
        &agent.id,
        &sent.assistant_message_id,
        "to-b",
        true,
        Remember::Session,
    )
    .await;
    let (status, content, _) = tool_result_of(&resumed, "to-b");
    assert_eq!(status, ToolCallStatus::Error, "{content}");
    assert!(content.contains(&b_page), "names the target: {content}");
    assert!(
        content.contains("needs a permission") && content.contains(&host_b),
        "says it needs permission for B's host: {content}"
    );
    assert!(!content.contains("B's secret"), "{content}");
    assert!(
        b.requests().is_empty(),
        "B was contacted: {:?}",
        b.requests()
    );
    assert_eq!(a.requests().len(), 1);
    assert_eq!(permission_requests(&resumed), 0, "a hop does not prompt");

    // A redirects to A: covered by the grant for A, followed.
    a.push(redirect("/v1/final"));
    a.push(Reply::html("<p>A's final page</p>"));
    let self_url = format!("{}/self", a.url());
    mock.push(calls(&[call(
        "a-to-a",
        "web_fetch",
        json!({"url": self_url}),
    )]));
    mock.push(Reply::openai_text(&["fetched"]));
    let (_, events) = send_and_collect(&client, &agent.id, "fetch again").await;
    assert_eq!(permission_requests(&events), 0, "{:?}", type_names(&events));
    let (status, content, _) = tool_result_of(&events, "a-to-a");
    assert_eq!(
        (status, content.as_str()),
        (ToolCallStatus::Success, "A's final page")
    );
    let paths: Vec<String> = a.requests().iter().map(|r| r.path.clone()).collect();
    assert_eq!(paths, ["/v1/start", "/v1/self", "/v1/final"]);
    assert!(b.requests().is_empty());
}

#[tokio::test]
async fn the_data_dir_is_out_of_reach_of_every_tool_and_walk() {
    let (mock, daemon) = start_with(ALLOW_ALL).await;
    let client = daemon.client().await;
    let data = std::fs::canonicalize(daemon.data_dir()).unwrap();
    // Another agent leaves an offload in the data dir.
    let (other, _other_dir) = tool_agent(&client, None).await;
    let loud = "seq -f SECRET-OTHER-%g 1 400";
    mock.push(calls(&[call("big", "bash", json!({"command": loud}))]));
    mock.push(Reply::openai_text(&["ok"]));
    let (_, events) = send_and_collect(&client, &other.id, "make noise").await;
    let other_offload = tool_result_of(&events, "big").2.expect("offloaded");
    assert!(Path::new(&other_offload).starts_with(&data));

    // This agent's workspace is the folder that holds the data dir.
    let root = data.parent().unwrap().to_owned();
    let agent = agent_in(&client, Some(&root)).await;
    mock.push(calls(&[call(
        "mine",
        "bash",
        json!({"command": "seq 1 2000"}),
    )]));
    mock.push(Reply::openai_text(&["ok"]));
    let (_, events) = send_and_collect(&client, &agent.id, "own offload").await;
    let own_offload = tool_result_of(&events, "mine").2.expect("offloaded");

    let data_file = data.join("note.txt");
    let list = [
        call(
            "grep",
            "grep",
            json!({"pattern": "SECRET-OTHER", "glob": "*.offload"}),
        ),
        call("glob", "glob", json!({"pattern": "**/*.offload"})),
        call("glob-db", "glob", json!({"pattern": "**/agentd.db*"})),
        call("list", "list_directory", json!({})),
        call("tree", "directory_tree", json!({"depth": 3})),
        call("db", "read_file", json!({"path": "data/agentd.db"})),
        call(
            "wal",
            "read_file",
            json!({"path": data.join("agentd.db-wal")}),
        ),
        call("peek", "read_file", json!({"path": other_offload})),
        call("list-data", "list_directory", json!({"path": "data"})),
        call(
            "write",
            "write_file",
            json!({"path": data_file, "content": "x"}),
        ),
        call(
            "write-own",
            "write_file",
            json!({"path": Path::new(&own_offload).with_extension("txt"), "content": "x"}),
        ),
        call(
            "own",
            "read_file",
            json!({"path": own_offload, "offset": 1999}),
        ),
    ];
    mock.push(calls(&list));
    mock.push(Reply::openai_text(&["done"]));
    let (_, events) = send_and_collect(&client, &agent.id, "look around").await;
    assert_eq!(permission_requests(&events), 0, "denied, not asked");
    let result = |id: &str| tool_result_of(&events, id);

    // Walks leave the data dir out.
    let (status, content, _) = result("grep");
    assert_eq!(status, ToolCallStatus::Success);
    assert!(content.starts_with("no matches"), "{content}");
    for id in ["glob", "glob-db"] {
        let (status, content, _) = result(id);
        assert_eq!(status, ToolCallStatus::Success);
        assert!(content.starts_with("no files match"), "{id}: {content}");
    }
    let (_, listing, _) = result("list");
    assert!(listing.lines().any(|l| l == "config.toml"), "{listing}");
    assert!(!listing.lines().any(|l| l.starts_with("data")), "{listing}");
    let (_, tree, _) = result("tree");
    assert!(tree.contains("config.toml"), "{tree}");
    for hidden in ["data/", "sessions", "agentd.db", "offload"] {
        assert!(!tree.contains(hidden), "{hidden} in {tree}");
    }
    // Paths into it are denied, whatever the rules.
    for id in ["db", "wal", "peek", "list-data", "write", "write-own"] {
        let (status, content, _) = result(id);
        assert_eq!(status, ToolCallStatus::Denied, "{id}: {content}");
        assert!(content.contains("cannot access"), "{id}: {content}");
    }
    assert!(!data_file.exists());
    // Its own offloads stay readable.
    let (status, content, _) = result("own");
    assert_eq!(status, ToolCallStatus::Success, "{content}");
    assert!(content.contains("  2000\t2000"), "{content}");
}

#[tokio::test]
async fn a_write_prompt_binds_the_path_it_showed() {
    // write = "ask" (the default).
    let (mock, daemon, client, agent, _dir) = tool_scenario("").await.into_parts();
    let workspace = ws(&agent);
    let outside_dir = tempfile::tempdir().unwrap();
    let outside = std::fs::canonicalize(outside_dir.path()).unwrap();
    let secret = outside.join("secret.txt");
    std::fs::write(&secret, "original").unwrap();
    let target = workspace.join("f.txt");
    std::fs::write(&target, "before").unwrap();

    mock.push(calls(&[call(
        "w1",
        "write_file",
        json!({"path": "f.txt", "content": "pwned"}),
    )]));
    let (sent, events) = send_and_collect(&client, &agent.id, "write").await;
    match permission_request(&events) {
        EventKind::PermissionRequested { paths, .. } => {
            assert_eq!(paths, Some(vec![target.display().to_string()]));
        }
        other => panic!("{other:?}"),
    }
    // While the prompt waits, the file becomes a link to a file outside the workspace.
    std::fs::remove_file(&target).unwrap();
    symlink(&secret, &target).unwrap();

    // The model's next step writes outside: that must still ask.
    let other = outside.join("other.txt");
    mock.push(calls(&[call(
        "w2",
        "write_file",
        json!({"path": other, "content": "x"}),
    )]));
    let resumed = answer_prompt(
        &client,
        &agent.id,
        &sent.assistant_message_id,
        "w1",
        true,
        Remember::Session,
    )
    .await;
    let (status, content, _) = tool_result_of(&resumed, "w1");
    assert_eq!(status, ToolCallStatus::Error, "{content}");
    assert!(
        content.contains("changed after the permission prompt")
            && content.contains(&target.display().to_string())
            && content.contains(&secret.display().to_string()),
        "names the change: {content}"
    );
    assert_eq!(std::fs::read_to_string(&secret).unwrap(), "original");
    match permission_request(&resumed) {
        EventKind::PermissionRequested {
            tool_call_id,
            paths,
            ..
        } => {
            assert_eq!(tool_call_id, "w2");
            assert_eq!(paths, Some(vec![other.display().to_string()]));
        }
        other => panic!("{other:?}"),
    }
    // The remembered grant is keyed by what the prompt showed: the workspace, never the
    // folder the link points to.
    let store = crate::common::store(&daemon).await;
    let keys: Vec<String> = store
        .grants_for(&agent.id)
        .await
        .unwrap()
        .into_iter()
        .map(|g| g.key)
        .collect();
    assert_eq!(keys, [workspace.display().to_string()]);

    // Denying the outside write leaves it unwritten; a later write in the workspace runs
    // on the grant without asking.
    mock.push(calls(&[call(
        "w3",
        "write_file",
        json!({"path": "g.txt", "content": "granted"}),
    )]));
    mock.push(Reply::openai_text(&["done"]));
    let resumed = answer_prompt(
        &client,
        &agent.id,
        &sent.assistant_message_id,
        "w2",
        false,
        Remember::Once,
    )
    .await;
    assert_eq!(tool_result_of(&resumed, "w2").0, ToolCallStatus::Denied);
    assert_eq!(tool_result_of(&resumed, "w3").0, ToolCallStatus::Success);
    assert_eq!(permission_requests(&resumed), 0);
    assert!(!other.exists());
    assert_eq!(
        std::fs::read_to_string(workspace.join("g.txt")).unwrap(),
        "granted"
    );
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o777
}

#[tokio::test]
async fn everything_the_daemon_writes_is_private_whatever_the_data_dir_mode() {
    let (mock, mut daemon) = start_with(ALLOW_ALL).await;
    // Start again on a data dir the user made 0755.
    daemon.terminate().await;
    let data: PathBuf = daemon.data_dir().to_owned();
    std::fs::remove_dir_all(&data).unwrap();
    std::fs::DirBuilder::new()
        .mode(0o755)
        .create(&data)
        .unwrap();
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).unwrap();
    daemon.restart().await;
    let client = daemon.client().await;

    // An agent with no workspace gets one the daemon creates; its call offloads.
    let agent = agent_in(&client, None).await;
    mock.push(calls(&[call(
        "big",
        "bash",
        json!({"command": "seq 1 2000"}),
    )]));
    mock.push(Reply::openai_text(&["ok"]));
    let (_, events) = send_and_collect(&client, &agent.id, "offload").await;
    let offload = PathBuf::from(tool_result_of(&events, "big").2.expect("offloaded"));

    // The SQLite files, unless the store is on PostgreSQL.
    let database = match daemon.postgres_url() {
        None => vec![
            data.join("agentd.db"),
            data.join("agentd.db-wal"),
            data.join("agentd.db-shm"),
        ],
        Some(_) => Vec::new(),
    };
    let private = [
        data.join("sessions"),
        data.join("sessions").join(&agent.id),
        offload.clone(),
        data.join("workspaces"),
        data.join("workspaces").join(&agent.id),
    ];
    assert!(offload.starts_with(data.join("sessions").join(&agent.id)));
    for path in database.iter().chain(&private) {
        let m = mode(path);
        assert_eq!(m & 0o077, 0, "{} is {m:o}", path.display());
    }
    assert_eq!(
        mode(&data),
        0o755,
        "a data dir the user made keeps its mode"
    );

    // What a tool creates for the user in a workspace gets the user's own umask back: the
    // same mode as a file this test (whose umask the daemon inherited) creates there.
    let (user_agent, _dir) = tool_agent(&client, None).await;
    let workspace = ws(&user_agent);
    mock.push(calls(&[call(
        "made",
        "write_file",
        json!({"path": "sub/made.txt", "content": "x"}),
    )]));
    mock.push(Reply::openai_text(&["ok"]));
    let (_, events) = send_and_collect(&client, &user_agent.id, "write").await;
    assert_eq!(tool_result_of(&events, "made").0, ToolCallStatus::Success);
    std::fs::create_dir(workspace.join("mine")).unwrap();
    std::fs::write(workspace.join("mine/test.txt"), "x").unwrap();
    assert_eq!(
        mode(&workspace.join("sub/made.txt")),
        mode(&workspace.join("mine/test.txt"))
    );
    assert_eq!(mode(&workspace.join("sub")), mode(&workspace.join("mine")));

    // So do the commands the bash tool runs.
    mock.push(calls(&[call(
        "shell",
        "bash",
        json!({"command": "touch by-bash.txt && mkdir by-bash"}),
    )]));
    mock.push(Reply::openai_text(&["ok"]));
    let (_, events) = send_and_collect(&client, &user_agent.id, "touch").await;
    assert_eq!(tool_result_of(&events, "shell").0, ToolCallStatus::Success);
    assert_eq!(
        mode(&workspace.join("by-bash.txt")),
        mode(&workspace.join("mine/test.txt"))
    );
    assert_eq!(
        mode(&workspace.join("by-bash")),
        mode(&workspace.join("mine"))
    );
}
