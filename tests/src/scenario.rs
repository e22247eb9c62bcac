//! The start most scenarios share, as a builder: a mock model, a daemon whose default
//! provider is that mock (plus the test's own config and environment), a client, and if
//! asked an agent in `agent` mode working in a fresh temp workspace.
//!
//! ```no_run
//! # async fn f(agentd: &std::path::Path) {
//! use agentd_testkit::scenario::{Scenario, bash_call};
//! let s = Scenario::new(agentd)
//!     .config("[permissions]\nexecute = \"allow\"\n")
//!     .env("MY_KEY", "value")
//!     .tool_agent(None)
//!     .start()
//!     .await;
//! s.mock.push(bash_call("c1", "echo hi"));
//! # }
//! ```
//!
//! It only starts things; what a test then does with them is the test's. Also here: the
//! parts of it a test may want on their own ([`tool_agent`]), [`bash_call`], the model
//! turn most tool scenarios script, and [`answer_prompt`], the user's answer to a prompt.

use std::path::{Path, PathBuf};

use agent_proto::client::Client;
use agent_proto::rpc::AgentRpcClient;
use agent_proto::{Agent, AgentMode, Event, PermissionResponseResult, Remember};
use serde_json::{Value, json};

use crate::daemon::{DaemonOptions, TestDaemon, openai_config_with};
use crate::events::collect_run;
use crate::mock_model::{MockModel, Reply};

/// How long a run the kit collects may take before the test fails (a hang guard, not a
/// speed check).
pub const RUN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// What to start: built with [`Scenario::new`], started with [`Scenario::start`] (or
/// [`Scenario::tool_agent`], then [`WithToolAgent::start`]).
#[derive(Debug, Clone)]
pub struct Scenario {
    bin: PathBuf,
    config: String,
    env: Vec<(String, String)>,
}

/// A running scenario without an agent.
pub struct Running {
    pub mock: MockModel,
    pub daemon: TestDaemon,
    /// Connected once the daemon is ready.
    pub client: Client,
}

/// A running scenario with an agent in `agent` mode.
///
/// Its workspace is deleted when `workspace` drops: destructure it into a named binding
/// (`workspace: _ws`), never `_` or `..`, which drop it at once.
pub struct RunningAgent {
    pub mock: MockModel,
    pub daemon: TestDaemon,
    pub client: Client,
    pub agent: Agent,
    pub workspace: tempfile::TempDir,
}

/// A [`Scenario`] that also creates a tool agent once the daemon runs.
#[derive(Debug, Clone)]
pub struct WithToolAgent {
    scenario: Scenario,
    settings: Option<Value>,
}

impl Scenario {
    /// A scenario running the daemon binary `bin`, with the mock as its only provider
    /// ([`crate::daemon::openai_config`]).
    pub fn new(bin: &Path) -> Scenario {
        Scenario {
            bin: bin.to_owned(),
            config: String::new(),
            env: Vec::new(),
        }
    }

    /// More TOML after the mock provider's config (e.g. a `[permissions]` section); each
    /// call appends.
    pub fn config(mut self, toml: &str) -> Scenario {
        self.config.push_str(toml);
        self.config.push('\n');
        self
    }

    /// A variable in the daemon's environment.
    pub fn env(mut self, key: &str, value: &str) -> Scenario {
        self.env.push((key.to_owned(), value.to_owned()));
        self
    }

    /// Also create an agent in `agent` mode in a fresh temp workspace, with these settings
    /// (see [`tool_agent`]).
    pub fn tool_agent(self, settings: Option<Value>) -> WithToolAgent {
        WithToolAgent {
            scenario: self,
            settings,
        }
    }

    /// Starts the mock, then the daemon (panicking with its log if it does not become
    /// ready), and connects a client.
    pub async fn start(self) -> Running {
        let mock = MockModel::start().await;
        let options = DaemonOptions {
            config_toml: openai_config_with(&mock.url(), &self.config),
            env: self.env,
        };
        let daemon = TestDaemon::start_with(&self.bin, options).await;
        let client = daemon.client().await;
        Running {
            mock,
            daemon,
            client,
        }
    }
}

impl WithToolAgent {
    /// [`Scenario::start`], then creates the agent.
    pub async fn start(self) -> RunningAgent {
        let Running {
            mock,
            daemon,
            client,
        } = self.scenario.start().await;
        let (agent, workspace) = tool_agent(&client, self.settings).await;
        RunningAgent {
            mock,
            daemon,
            client,
            agent,
            workspace,
        }
    }
}

impl RunningAgent {
    /// Its parts as a tuple, `(mock, daemon, client, agent, workspace)`, for a test that
    /// binds them in one line; keep each in a named binding (`_daemon`, `_ws`), never `_`,
    /// which drops it at once (the daemon stops, the workspace goes).
    pub fn into_parts(self) -> (MockModel, TestDaemon, Client, Agent, tempfile::TempDir) {
        (
            self.mock,
            self.daemon,
            self.client,
            self.agent,
            self.workspace,
        )
    }

    /// The agent's workspace, as the daemon knows it (canonical).
    pub fn ws(&self) -> PathBuf {
        workspace_of(&self.agent)
    }
}

/// Creates an agent titled "tools" in `agent` mode (it has tools) working in a fresh temp
/// workspace, with these settings; returns it and the workspace, deleted when dropped.
pub async fn tool_agent(client: &Client, settings: Option<Value>) -> (Agent, tempfile::TempDir) {
    let workspace = tempfile::tempdir().unwrap();
    let path = std::fs::canonicalize(workspace.path()).unwrap();
    let agent = client
        .create_agent(
            Some("tools".into()),
            Some(AgentMode::Agent),
            None,
            None,
            None,
            Some(path.display().to_string()),
            None,
            settings,
            None,
        )
        .await
        .expect("createAgent in agent mode");
    (agent, workspace)
}

/// The workspace path of an agent that has one.
pub fn workspace_of(agent: &Agent) -> PathBuf {
    PathBuf::from(agent.workspace.clone().expect("a workspace"))
}

/// A model turn that calls the `bash` tool once, with `command` and nothing else.
pub fn bash_call(id: &str, command: &str) -> Reply {
    Reply::openai_tool_call(id, "bash", json!({ "command": command }))
}

/// Answers the permission prompt of call `call` of message `message_id` (as
/// `handlePermissionResponse`, which must answer `{}`) and collects the run the answer
/// resumes, to its `loopFinished`.
pub async fn answer_prompt(
    client: &Client,
    agent_id: &str,
    message_id: &str,
    call: &str,
    granted: bool,
    remember: Remember,
) -> Vec<Event> {
    let mut sub = client
        .subscribe_events(Some(agent_id.into()), None, None)
        .await
        .expect("subscribe");
    let answered = client
        .handle_permission_response(
            message_id.into(),
            call.into(),
            granted,
            None,
            Some(remember),
        )
        .await
        .expect("handlePermissionResponse");
    assert_eq!(answered, PermissionResponseResult {});
    collect_run(&mut sub, RUN_TIMEOUT).await
}
