//! Project instructions: the user's `AGENTS.md`, then each folder's `AGENTS.md` (else its
//! `CLAUDE.md`) from the repository root down to the workspace, in the system prompt of
//! agent-mode agents, as the model gets it and as the preview shows it; never a link's
//! target, never a folder above the root, never for a chat agent.

use std::path::{Path, PathBuf};

use agent_proto::AgentMode;
use agent_proto::client::Client;
use agent_proto::rpc::AgentRpcClient;
use agentd_testkit::daemon::{DaemonOptions, TestDaemon, openai_config};
use agentd_testkit::mock_model::{MockModel, Reply};
use serde_json::Value;

use crate::common::{bin, model_requests, send_and_collect};

struct World {
    mock: MockModel,
    _daemon: TestDaemon,
    client: Client,
    root: PathBuf,
    ws: PathBuf,
    _dir: tempfile::TempDir,
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

impl World {
    async fn start() -> World {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let repo = root.join("repo");
        let ws = repo.join("sub/ws");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        write(
            &root.join("config/agentd/AGENTS.md"),
            "USER RULE: be kind.\n",
        );
        write(&root.join("AGENTS.md"), "ABOVE THE ROOT\n");
        write(&repo.join("AGENTS.md"), "ROOT RULE: run make test.\n");
        write(&repo.join("CLAUDE.md"), "ROOT CLAUDE, SHADOWED\n");
        write(&repo.join("sub/CLAUDE.md"), "SUB RULE: no unsafe.\n");
        // The workspace's AGENTS.md is a link out of it: skipped, its CLAUDE.md read.
        write(&root.join("secret.md"), "SECRET OUTSIDE\n");
        std::os::unix::fs::symlink(root.join("secret.md"), ws.join("AGENTS.md")).unwrap();
        write(&ws.join("CLAUDE.md"), "WS RULE: tabs.\n");
        let mock = MockModel::start().await;
        let daemon = TestDaemon::start_with(
            bin(),
            DaemonOptions {
                config_toml: openai_config(&mock.url()),
                env: vec![(
                    "XDG_CONFIG_HOME".into(),
                    root.join("config").display().to_string(),
                )],
            },
        )
        .await;
        let client = daemon.client().await;
        World {
            mock,
            _daemon: daemon,
            client,
            root,
            ws,
            _dir: dir,
        }
    }

    async fn agent(&self, mode: AgentMode) -> agent_proto::Agent {
        self.client
            .create_agent(
                Some("instructions".into()),
                Some(mode),
                None,
                None,
                None,
                Some(self.ws.display().to_string()),
                None,
                None,
                None,
            )
            .await
            .expect("createAgent")
    }
}

/// The system prompt of an OpenAI-format request body ("" without one).
fn system_of(body: &Value) -> String {
    let first = &body["messages"][0];
    match first["role"].as_str() {
        Some("system") => first["content"].as_str().unwrap().to_owned(),
        _ => String::new(),
    }
}

/// The project instructions section of a system prompt: from its heading to the next
/// top-level heading.
fn section_of(system: &str) -> &str {
    let start = system
        .find("# Project instructions\n")
        .unwrap_or_else(|| panic!("no project instructions in {system}"));
    let rest = &system[start..];
    let end = rest[1..].find("\n# ").map_or(rest.len(), |i| i + 1);
    &rest[..end]
}

#[tokio::test]
async fn an_agents_prompt_carries_the_users_then_the_repositorys_files_in_order() {
    let w = World::start().await;
    let agent = w.agent(AgentMode::Agent).await;
    w.mock.push(Reply::openai_text(&["ok"]));
    send_and_collect(&w.client, &agent.id, "hi").await;
    let requests = model_requests(&w.mock);
    let system = system_of(&requests[0].body);
    let section = section_of(&system);
    let heading = |path: PathBuf| format!("## {}\n", path.display());
    let order = [
        heading(w.root.join("config/agentd/AGENTS.md")),
        "USER RULE: be kind.".into(),
        heading(w.root.join("repo/AGENTS.md")),
        "ROOT RULE: run make test.".into(),
        heading(w.root.join("repo/sub/CLAUDE.md")),
        "SUB RULE: no unsafe.".into(),
        heading(w.ws.join("CLAUDE.md")),
        "WS RULE: tabs.".into(),
    ];
    let mut at = 0;
    for part in &order {
        let found = section[at..]
            .find(part.as_str())
            .unwrap_or_else(|| panic!("{part:?} missing or out of order in {section}"));
        at += found + part.len();
    }
    for never in ["SECRET", "ABOVE THE ROOT", "SHADOWED"] {
        assert!(!system.contains(never), "{never} in {system}");
    }
    // The preview shows them: the same section.
    let preview = w
        .client
        .get_message_request_preview(agent.id.clone(), None)
        .await
        .unwrap();
    assert_eq!(section_of(&system_of(&preview.request)), section);
}

#[tokio::test]
async fn a_chat_agent_gets_no_project_instructions() {
    let w = World::start().await;
    let agent = w.agent(AgentMode::Chat).await;
    w.mock.push(Reply::openai_text(&["ok"]));
    send_and_collect(&w.client, &agent.id, "hi").await;
    let system = system_of(&model_requests(&w.mock)[0].body);
    assert!(!system.contains("Project instructions"), "{system}");
    assert!(!system.contains("RULE"), "{system}");
}
