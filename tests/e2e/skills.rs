//! Skills end to end (issue 18 §1): skills of the workspace, of the config's folders and of
//! the user's (`$HOME/.config/agentd/skills` of the daemon's environment), the workspace's
//! winning a name clash; the system prompt's skills section in the real request and the
//! preview; the `skill` tool returning the body and the folder; `listSkills` with a
//! malformed `SKILL.md` and its reason; agents without the `skill` tool getting no section.

use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use agent_proto::client::Client;
use agent_proto::rpc::AgentRpcClient;
use agent_proto::{Agent, AgentMode, SkillSource, ToolCallStatus};
use agentd_testkit::daemon::{DaemonOptions, TestDaemon, openai_config_with};
use agentd_testkit::mock_model::{MockModel, Reply};
use serde_json::{Value, json};

use crate::common::{
    before_environment, bin, error_of, model_requests, send_and_collect, tool_result_of,
};

/// The text every skills section starts with, before its list.
const SECTION_START: &str = "# Skills\nSkills are instructions for particular tasks, each in a \
                             folder with files beside it. When a task matches a skill's \
                             description, load the skill with the skill tool (by its name) \
                             before you start, and follow it.";

/// A skill folder with a `SKILL.md` of this front matter and body.
fn skill(root: &Path, folder: &str, front: &str, body: &str) -> PathBuf {
    let dir = root.join(folder);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("SKILL.md"), format!("---\n{front}\n---\n{body}")).unwrap();
    dir
}

/// A daemon whose user has skills in `$HOME/.config/agentd/skills` and whose config names
/// one more folder, and a workspace with skills of its own (one overriding a user's, one
/// malformed).
struct World {
    mock: MockModel,
    _daemon: TestDaemon,
    client: Client,
    ws: PathBuf,
    user: PathBuf,
    config: PathBuf,
    _dir: tempfile::TempDir,
}

impl World {
    async fn start() -> World {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let home = root.join("home");
        let user = home.join(".config/agentd/skills");
        let config = root.join("team-skills");
        let ws = root.join("ws");
        let ws_skills = ws.join(".agentd/skills");
        skill(
            &user,
            "review",
            "name: review\ndescription: Review code the user's way.",
            "USER REVIEW BODY\n",
        );
        skill(
            &user,
            "notes",
            "name: release-notes\ndescription: 'Write release notes: short ones.'\nlicense: MIT",
            "notes body\n",
        );
        skill(
            &config,
            "deploy",
            "name: deploy\ndescription: \"Deploy the service.\"",
            "deploy body\n",
        );
        let review = skill(
            &ws_skills,
            "review",
            "name: review\ndescription: >-\n  Review code as\n  this project wants.",
            "WORKSPACE REVIEW BODY\nGo through checklist.md.\n",
        );
        std::fs::write(review.join("checklist.md"), "- tests pass\n").unwrap();
        std::fs::create_dir_all(review.join("scripts")).unwrap();
        skill(
            &ws_skills,
            "broken",
            "name: broken",
            "no description above\n",
        );
        let mock = MockModel::start().await;
        let config_toml = openai_config_with(
            &mock.url(),
            &format!("[skills]\nfolders = [{:?}]\n", config.display().to_string()),
        );
        let daemon = TestDaemon::start_with(
            bin(),
            DaemonOptions {
                config_toml,
                // XDG_CONFIG_HOME empty: the user's folder is found from HOME.
                env: vec![
                    ("HOME".into(), home.display().to_string()),
                    ("XDG_CONFIG_HOME".into(), String::new()),
                ],
            },
        )
        .await;
        let client = daemon.client().await;
        World {
            mock,
            _daemon: daemon,
            client,
            ws,
            user,
            config,
            _dir: dir,
        }
    }

    /// An agent-mode agent in the workspace.
    async fn agent(&self, profile: Option<&str>, settings: Option<Value>) -> Agent {
        self.client
            .create_agent(
                Some("skills".into()),
                Some(AgentMode::Agent),
                None,
                None,
                None,
                Some(self.ws.display().to_string()),
                profile.map(str::to_owned),
                settings,
                None,
            )
            .await
            .expect("createAgent")
    }
}

/// The system prompt of an OpenAI-format request body.
fn system_of(body: &Value) -> String {
    let first = &body["messages"][0];
    assert_eq!(first["role"], "system", "{body}");
    first["content"].as_str().unwrap().to_owned()
}

/// The tool names of a request.
fn tools_of(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn the_system_prompt_lists_the_skills_and_the_skill_tool_loads_one() {
    let w = World::start().await;
    let agent = w.agent(None, None).await;
    w.mock.push(Reply::openai_tool_calls(
        &[],
        &[
            ("load", "skill", r#"{"name": "review"}"#),
            ("unknown", "skill", r#"{"name": "nope"}"#),
        ],
    ));
    w.mock.push(Reply::openai_text(&["done"]));
    let (_, events) = send_and_collect(&w.client, &agent.id, "review my change").await;

    // The workspace's review wins over the user's; the body, the folder and its files.
    let folder = w.ws.join(".agentd/skills/review");
    let (status, content, _) = tool_result_of(&events, "load");
    assert_eq!(status, ToolCallStatus::Success, "{content}");
    assert_eq!(
        content,
        format!(
            "Skill review (the workspace's). Its folder: {}\nOther files in the folder (read \
             them with read_file when the instructions point to them): checklist.md, \
             scripts/.\n\nWORKSPACE REVIEW BODY\nGo through checklist.md.\n",
            folder.display()
        )
    );
    let (status, content, _) = tool_result_of(&events, "unknown");
    assert_eq!(status, ToolCallStatus::Error);
    assert_eq!(
        content,
        "unknown skill \"nope\"; the skills are: review, deploy, release-notes"
    );

    // Both requests list every valid skill (names and descriptions, never a body) right
    // before the environment section; the malformed one is left out.
    let requests = model_requests(&w.mock);
    assert_eq!(requests.len(), 2);
    let ws_text = w.ws.display().to_string();
    let expected = format!(
        "{SECTION_START}\n- review: Review code as this project wants.\n- deploy: Deploy the \
         service.\n- release-notes: Write release notes: short ones."
    );
    for request in &requests {
        assert!(tools_of(&request.body).contains(&"skill".to_owned()));
        let system = system_of(&request.body);
        assert_eq!(
            before_environment(&system, &ws_text, "no", "none"),
            expected
        );
        assert!(!system.contains("BODY"), "{system}");
        assert!(!system.contains("broken"), "{system}");
    }
    // The preview is the request that is sent: the same section.
    let preview = w
        .client
        .get_message_request_preview(agent.id.clone(), None)
        .await
        .unwrap();
    let system = system_of(&preview.request);
    assert_eq!(
        before_environment(&system, &ws_text, "no", "none"),
        expected
    );
}

#[tokio::test]
async fn list_skills_shows_the_winners_and_reports_malformed_ones_with_the_reason() {
    let w = World::start().await;
    let ws_skills = w.ws.join(".agentd/skills");
    // A SKILL.md that is a link to a real skill outside the workspace is not followed.
    std::fs::create_dir_all(ws_skills.join("linked")).unwrap();
    symlink(
        w.user.join("review/SKILL.md"),
        ws_skills.join("linked/SKILL.md"),
    )
    .unwrap();
    skill(&ws_skills, "Bad Name", "name: Bad\ndescription: d", "");
    let agent = w.agent(Some("coder"), None).await;
    let list = w.client.list_skills(agent.id.clone()).await.unwrap();
    let skills: Vec<(&str, SkillSource, String)> = list
        .skills
        .iter()
        .map(|s| (s.name.as_str(), s.source, s.path.clone()))
        .collect();
    let path = |p: PathBuf| p.display().to_string();
    assert_eq!(
        skills,
        [
            (
                "review",
                SkillSource::Workspace,
                path(ws_skills.join("review"))
            ),
            ("deploy", SkillSource::Config, path(w.config.join("deploy"))),
            (
                "release-notes",
                SkillSource::User,
                path(w.user.join("notes"))
            ),
        ]
    );
    assert_eq!(
        list.skills[2].description,
        "Write release notes: short ones."
    );
    let errors: Vec<(String, String)> = list
        .errors
        .iter()
        .map(|e| (e.path.clone(), e.reason.clone()))
        .collect();
    let file = |folder: &str| path(ws_skills.join(folder).join("SKILL.md"));
    assert_eq!(errors.len(), 3, "{errors:#?}");
    assert_eq!(
        errors[0],
        (
            file("Bad Name"),
            "invalid name \"Bad\": a name is 1 to 64 lowercase letters, digits and hyphens"
                .to_owned()
        )
    );
    assert_eq!(
        errors[1],
        (file("broken"), "missing description".to_owned())
    );
    assert_eq!(errors[2].0, file("linked"));
    assert!(
        errors[2]
            .1
            .starts_with("symlink: SKILL.md is a symbolic link"),
        "{}",
        errors[2].1
    );
    // The wire shape.
    let raw = serde_json::to_value(&list).unwrap();
    assert_eq!(raw["skills"][0]["source"], "workspace");
    assert_eq!(
        raw["errors"][1],
        json!({"path": file("broken"), "reason": "missing description"})
    );
    // An agent that does not exist.
    let err = w.client.list_skills("agent-nope".into()).await.unwrap_err();
    assert_eq!(error_of(&err).1, "agentNotFound");
}

#[tokio::test]
async fn agents_without_the_skill_tool_get_no_skills_section() {
    let w = World::start().await;
    let ws_text = w.ws.display().to_string();
    // (profile, settings, has the skill tool)
    let cases: [(Option<&str>, Option<Value>, bool); 4] = [
        (Some("full"), None, true),
        (Some("planner"), None, false),
        (
            None,
            Some(json!({"enabledTools": ["read_file", "bash"]})),
            false,
        ),
        (None, Some(json!({"enabledTools": ["skill"]})), true),
    ];
    for (profile, settings, has_skill) in cases {
        let agent = w.agent(profile, settings.clone()).await;
        let before = model_requests(&w.mock).len();
        w.mock.push(Reply::openai_text(&["ok"]));
        send_and_collect(&w.client, &agent.id, "hi").await;
        let requests = model_requests(&w.mock);
        assert_eq!(requests.len(), before + 1);
        let body = &requests[before].body;
        let system = system_of(body);
        assert_eq!(
            tools_of(body).contains(&"skill".to_owned()),
            has_skill,
            "{profile:?} {settings:?}"
        );
        let profile_name = profile.unwrap_or("none");
        let prompt = before_environment(&system, &ws_text, "no", profile_name);
        assert_eq!(
            prompt.contains(SECTION_START),
            has_skill,
            "{profile:?} {settings:?}: {system}"
        );
        assert_eq!(prompt.contains("- deploy: Deploy the service."), has_skill);
    }
}
