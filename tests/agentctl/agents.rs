//! agentctl on an existing agent: ids by prefix, rename, pin, model, fork, export and import,
//! attachments.

use std::time::Duration;

use agentd_testkit::mock_model::Reply;
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

use super::{agentctl, ctl, start, stderr, stdout};

async fn create(daemon: &agentd_testkit::daemon::TestDaemon, title: &str) -> String {
    let created = ctl(daemon, &["agents", "create", "--title", title]).await;
    assert!(created.status.success(), "{}", stderr(&created));
    stdout(&created).trim().to_owned()
}

#[tokio::test]
async fn an_id_prefix_names_one_agent() {
    let (mock, daemon) = start().await;
    let first = create(&daemon, "first").await;
    let second = create(&daemon, "second").await;
    // UUID v7 ids begin with their creation time: two made together share a start.
    let common: String = first
        .chars()
        .zip(second.chars())
        .take_while(|(a, b)| a == b)
        .map(|(a, _)| a)
        .collect();
    assert!(!common.is_empty(), "{first} {second}");

    let ambiguous = ctl(&daemon, &["agents", "show", &common]).await;
    assert_eq!(ambiguous.status.code(), Some(1));
    let err = stderr(&ambiguous);
    assert!(
        err.contains("is the start of 2 agent ids")
            && err.contains(&format!("{first}  first"))
            && err.contains(&format!("{second}  second")),
        "{err}"
    );

    let unique = &first[..first.len() - 4];
    let shown = ctl(&daemon, &["agents", "show", unique]).await;
    assert!(
        stdout(&shown).contains(&format!("id:        {first}\n")),
        "{}",
        stderr(&shown)
    );
    mock.push(Reply::openai_text(&["by prefix"]));
    let sent = ctl(&daemon, &["send", unique, "hi"]).await;
    assert_eq!(stdout(&sent), "by prefix\n", "{}", stderr(&sent));

    let unknown = ctl(&daemon, &["session", "zzzz"]).await;
    assert_eq!(unknown.status.code(), Some(1));
    assert!(
        stderr(&unknown)
            .contains("no agent has the id \"zzzz\" or an id starting with it (agentNotFound)"),
        "{}",
        stderr(&unknown)
    );
}

#[tokio::test]
async fn rename_pin_and_change_the_model() {
    let (_mock, daemon) = start().await;
    let id = create(&daemon, "old title").await;
    let renamed = ctl(&daemon, &["agents", "rename", &id, "new title"]).await;
    assert!(
        stdout(&renamed).contains("title:     new title\n"),
        "{}",
        stderr(&renamed)
    );

    let pinned = ctl(&daemon, &["agents", "pin", &id]).await;
    assert!(pinned.status.success(), "{}", stderr(&pinned));
    let listed = ctl(&daemon, &["agents", "list", "--pinned"]).await;
    assert!(stdout(&listed).contains(&id), "{}", stdout(&listed));
    let unpinned = ctl(&daemon, &["--json", "agents", "unpin", &id]).await;
    let agent: serde_json::Value = serde_json::from_slice(&unpinned.stdout).unwrap();
    assert_eq!(agent["pinned"], false);
    let listed = ctl(&daemon, &["agents", "list", "--pinned"]).await;
    assert!(!stdout(&listed).contains(&id), "{}", stdout(&listed));

    let changed = ctl(&daemon, &["agents", "model", &id, "other-model"]).await;
    assert!(
        stdout(&changed).contains("model:     other-model\n"),
        "{}",
        stderr(&changed)
    );
    let refused = ctl(
        &daemon,
        &["agents", "model", &id, "m", "--provider", "nowhere"],
    )
    .await;
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        stderr(&refused).contains("(providerNotConfigured)"),
        "{}",
        stderr(&refused)
    );
}

#[tokio::test]
async fn fork_export_and_import() {
    let (mock, daemon) = start().await;
    let id = create(&daemon, "original").await;
    mock.push(Reply::openai_text(&["the answer"]));
    let sent = ctl(&daemon, &["send", &id, "the question"]).await;
    assert!(sent.status.success(), "{}", stderr(&sent));
    let transcript = stdout(&ctl(&daemon, &["messages", &id]).await);
    assert!(transcript.contains("the answer"), "{transcript}");

    let forked = ctl(&daemon, &["agents", "fork", &id]).await;
    let fork = stdout(&forked).trim().to_owned();
    assert_eq!(fork.len(), 36, "{fork:?} {}", stderr(&forked));
    assert_ne!(fork, id);
    assert_eq!(
        stdout(&ctl(&daemon, &["messages", &fork]).await),
        transcript
    );

    // To a file and back.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("export.json");
    let exported = ctl(
        &daemon,
        &["agents", "export", &id, "-o", file.to_str().unwrap()],
    )
    .await;
    assert!(exported.status.success(), "{}", stderr(&exported));
    let export: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(export["format"], "agentd-export");
    let imported = ctl(&daemon, &["agents", "import", file.to_str().unwrap()]).await;
    let copy = stdout(&imported).trim().to_owned();
    assert_eq!(copy.len(), 36, "{copy:?} {}", stderr(&imported));
    assert_eq!(
        stdout(&ctl(&daemon, &["messages", &copy]).await),
        transcript
    );

    // Through stdout and stdin.
    let exported = ctl(&daemon, &["agents", "export", &id]).await;
    let mut import = Command::new(agentctl())
        .arg("--socket")
        .arg(daemon.socket())
        .args(["agents", "import", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = import.stdin.take().unwrap();
    stdin.write_all(&exported.stdout).await.unwrap();
    drop(stdin);
    let imported = import.wait_with_output().await.unwrap();
    let copy = stdout(&imported).trim().to_owned();
    assert_eq!(copy.len(), 36, "{copy:?} {}", stderr(&imported));
    assert_eq!(
        stdout(&ctl(&daemon, &["messages", &copy]).await),
        transcript
    );

    let markdown = ctl(&daemon, &["agents", "export", &id, "--markdown"]).await;
    let text = stdout(&markdown);
    assert!(
        text.starts_with("# original\n") && text.contains("the question"),
        "{text}"
    );
}

#[tokio::test]
async fn send_attaches_files() {
    let (mock, daemon) = start().await;
    let id = create(&daemon, "attach").await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "remember the milk\n").unwrap();
    mock.push(Reply::openai_text(&["noted"]));
    // A relative path, as typed in a shell: agentctl makes it absolute for the daemon.
    let sent = Command::new(agentctl())
        .current_dir(dir.path())
        .arg("--socket")
        .arg(daemon.socket())
        .args(["send", &id, "read this", "--attach", "notes.txt"])
        .output()
        .await
        .unwrap();
    assert_eq!(sent.status.code(), Some(0), "{}", stderr(&sent));
    let requests = mock.wait_requests(1, Duration::from_secs(10)).await;
    let body = &requests[0].body_text;
    assert!(
        body.contains("read this") && body.contains("remember the milk"),
        "{body}"
    );

    let missing = ctl(
        &daemon,
        &["send", &id, "x", "--attach", "/nonexistent/file"],
    )
    .await;
    assert_eq!(missing.status.code(), Some(1));
    assert!(
        stderr(&missing).contains("cannot attach /nonexistent/file"),
        "{}",
        stderr(&missing)
    );
}

#[tokio::test]
async fn send_takes_the_turns_model_effort_and_output_schema() {
    let (mock, daemon) = start().await;
    let id = create(&daemon, "turn").await;
    let dir = tempfile::tempdir().unwrap();
    let schema = dir.path().join("schema.json");
    std::fs::write(
        &schema,
        r#"{"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}"#,
    )
    .unwrap();
    mock.push(Reply::openai_text(&["{\"n\": 3}"]));
    let schema_arg = schema.display().to_string();
    let args = [
        "send",
        &id,
        "count",
        "--provider",
        "mock",
        "--model",
        "other-model",
        "--effort",
        "high",
        "--output-schema",
        &schema_arg,
    ];
    let sent = ctl(&daemon, &args).await;
    assert_eq!(sent.status.code(), Some(0), "{}", stderr(&sent));
    let requests = mock.wait_requests(1, Duration::from_secs(10)).await;
    let body = &requests[0].body;
    assert_eq!(body["model"], "other-model");
    assert_eq!(body["response_format"]["type"], "json_schema");
    assert_eq!(
        body["response_format"]["json_schema"]["schema"]["required"][0],
        "n"
    );
    // The test config does not mark the model as reasoning: the effort is left out.
    assert!(body.get("reasoning_effort").is_none(), "{body}");

    let bad = ctl(&daemon, &["send", &id, "x", "--effort", "max"]).await;
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
    let nowhere = ctl(&daemon, &["send", &id, "x", "--provider", "nowhere"]).await;
    assert_ne!(nowhere.status.code(), Some(0));
    assert!(stderr(&nowhere).contains("nowhere"), "{}", stderr(&nowhere));
    std::fs::write(&schema, "not json").unwrap();
    let unreadable = ctl(&daemon, &["send", &id, "x", "--output-schema", &schema_arg]).await;
    assert_eq!(unreadable.status.code(), Some(1));
    assert!(
        stderr(&unreadable).contains("is not JSON"),
        "{}",
        stderr(&unreadable)
    );
}

#[tokio::test]
async fn usage_search_and_served_models() {
    let (mock, daemon) = start().await;
    let agent = create(&daemon, "counted").await;
    mock.push(Reply::openai_text(&["a needle ", "in the answer"]));
    let sent = ctl(&daemon, &["send", &agent[..13], "find the needle"]).await;
    assert!(sent.status.success(), "{}", stderr(&sent));

    let usage = ctl(&daemon, &["usage", &agent[..13]]).await;
    let text = stdout(&usage);
    // The mock reports 11 tokens in and one out per part; the test config prices nothing.
    assert!(text.starts_with("1 answers  11 in  2 out\n"), "{text}");
    assert!(
        text.contains("  mock/mock-model  1 answers  11 in  2 out\n"),
        "{text}"
    );
    assert!(
        text.contains("no price in the config for: mock/mock-model"),
        "{text}"
    );

    let found = ctl(&daemon, &["search", "NEEDLE"]).await;
    let lines: Vec<String> = stdout(&found).lines().map(str::to_owned).collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(
        lines[0].starts_with(&agent[..8]) && lines[0].ends_with("assistant a needle in the answer")
    );
    assert!(lines[1].ends_with("user      find the needle"), "{lines:?}");

    mock.push(Reply::bytes(
        "application/json",
        br#"{"data":[{"id":"mock-model"},{"id":"other-model"}]}"#,
    ));
    let models = ctl(&daemon, &["models", "mock", "--served"]).await;
    let text = stdout(&models);
    assert!(
        text.contains("mock/mock-model  context") && text.contains("  served\n"),
        "{text}"
    );
    assert!(text.contains("mock/other-model  context"), "{text}");
}
