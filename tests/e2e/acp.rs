//! `agentd acp` driven as an editor drives it: the real binary as a child over real pipes,
//! spoken to with the `agent-client-protocol` crate's client side, bridged to a real daemon
//! whose provider is the scripted one (canned answers, tool calls).
//!
//! Updates are compared as rebuilt text and ordered tool call states, never as counts of
//! chunks.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    CancelNotification, ContentBlock, InitializeRequest, InitializeResponse, LoadSessionRequest,
    McpServer, McpServerStdio, NewSessionRequest, NewSessionResponse, PromptRequest,
    PromptResponse, RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse,
    SelectedPermissionOutcome, SessionConfigOptionValue, SessionNotification, SessionUpdate,
    SetSessionConfigOptionRequest, SetSessionModeRequest, StopReason, ToolCallStatus, ToolKind,
};
use agent_client_protocol::{Agent, ByteStreams, Client, Error};
use agent_proto::rpc::AgentRpcClient;
use agent_proto::{AgentMode, Block, ToolCallBlock};
use agentd_testkit::daemon::TestDaemon;
use agentd_testkit::wait::eventually;
use tokio::process::{Child, Command};
use tokio::sync::mpsc;
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

use crate::common::bin;

const WAIT: Duration = Duration::from_secs(20);

/// The script: a tool call (answered with allow), an answer; a tool call (rejected), an
/// answer.
const SCRIPT: &str = r#"
[[turns]]
reasoning = "The user wants a command run."
text = "I will run it."
[[turns.tool_calls]]
name = "bash"
arguments = { command = "echo acp-ok" }

[[turns]]
text = "It printed acp-ok."

[[turns]]
text = "Trying again."
[[turns.tool_calls]]
name = "bash"
arguments = { command = "echo acp-two" }

[[turns]]
text = "Fine, I will not."
"#;

/// One slow answer (about 6 s), to be cancelled.
const SLOW_SCRIPT: &str = r#"
[[turns]]
text = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty"
delay_ms = 300
"#;

/// A daemon whose default provider replays `script`.
async fn scripted_daemon(script_toml: &str) -> (TestDaemon, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.toml");
    std::fs::write(&script, script_toml).unwrap();
    let config = format!(
        "[defaults]\nprovider = \"script\"\n\n[[providers]]\nid = \"script\"\nkind = \"scripted\"\nscript = \"{}\"\n",
        script.display()
    );
    (TestDaemon::start(bin(), &config).await, dir)
}

/// What the editor received.
enum Inbound {
    Update(SessionNotification),
    Permission(
        RequestPermissionRequest,
        agent_client_protocol::v1::Responder<RequestPermissionResponse>,
    ),
}

/// An editor: `agentd acp` as its child, and the ACP client connection to it.
struct Editor {
    cx: ConnectionTo<Agent>,
    /// The task holding the connection (and the child's stdin).
    connection: tokio::task::JoinHandle<()>,
    inbound: mpsc::UnboundedReceiver<Inbound>,
    child: Child,
    stderr: PathBuf,
}

impl Editor {
    /// Runs `agentd acp` for `daemon` (extra args after `acp`) and connects to it.
    async fn start(socket: &Path, data_dir: &Path, config: &Path, extra: &[&str]) -> Editor {
        let stderr = data_dir.with_file_name(format!("acp-{}.log", std::process::id()));
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&stderr)
            .unwrap();
        let mut child = Command::new(bin())
            .arg("--socket")
            .arg(socket)
            .arg("--data-dir")
            .arg(data_dir)
            .arg("--config")
            .arg(config)
            .arg("acp")
            .args(extra)
            .env_remove("AGENTD_SOCKET")
            .env_remove("AGENTD_DATA_DIR")
            .env_remove("AGENTD_CONFIG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let to_agent = child.stdin.take().unwrap().compat_write();
        let from_agent = child.stdout.take().unwrap().compat();
        let (tx, inbound) = mpsc::unbounded_channel();
        let (tx2, (cx_tx, cx_rx)) = (tx.clone(), tokio::sync::oneshot::channel());
        let connection = tokio::spawn(async move {
            let result = Client
                .v1()
                .name("e2e-editor")
                .on_receive_notification(
                    async move |n: SessionNotification, _cx| {
                        let _ = tx.send(Inbound::Update(n));
                        Ok(())
                    },
                    agent_client_protocol::on_receive_notification!(),
                )
                .on_receive_request(
                    async move |r: RequestPermissionRequest, responder, _cx| {
                        let _ = tx2.send(Inbound::Permission(r, responder));
                        Ok(())
                    },
                    agent_client_protocol::on_receive_request!(),
                )
                .connect_with(
                    ByteStreams::new(to_agent, from_agent),
                    async move |cx: ConnectionTo<Agent>| {
                        let _ = cx_tx.send(cx.clone());
                        cx.incoming_closed().await;
                        Ok(())
                    },
                )
                .await;
            if let Err(e) = result {
                eprintln!("e2e editor connection ended: {e}");
            }
        });
        let cx = tokio::time::timeout(WAIT, cx_rx).await.unwrap().unwrap();
        Editor {
            cx,
            connection,
            inbound,
            child,
            stderr,
        }
    }

    async fn for_daemon(daemon: &TestDaemon, extra: &[&str]) -> Editor {
        Editor::start(
            daemon.socket(),
            daemon.data_dir(),
            daemon.config_path(),
            extra,
        )
        .await
    }

    /// Closes the connection (the child's stdin ends, as when an editor closes it) and
    /// waits for `agentd acp` to exit.
    async fn close(mut self) -> std::process::ExitStatus {
        self.connection.abort();
        let _ = (&mut self.connection).await;
        tokio::time::timeout(WAIT, self.child.wait())
            .await
            .expect("agentd acp did not exit when its stdin closed")
            .unwrap()
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    async fn request<R: agent_client_protocol::JsonRpcRequest>(
        &self,
        request: R,
    ) -> Result<R::Response, Error> {
        tokio::time::timeout(WAIT, self.cx.send_request(request).block_task())
            .await
            .unwrap_or_else(|_| panic!("no answer within {WAIT:?}; acp log:\n{}", self.log()))
    }

    async fn initialize(&self) -> InitializeResponse {
        self.request(InitializeRequest::new(
            agent_client_protocol::schema::ProtocolVersion::V1,
        ))
        .await
        .unwrap()
    }

    async fn new_session(&self, cwd: &Path) -> NewSessionResponse {
        self.request(NewSessionRequest::new(cwd)).await.unwrap()
    }

    /// The next thing the editor received.
    async fn next(&mut self) -> Inbound {
        match tokio::time::timeout(WAIT, self.inbound.recv()).await {
            Ok(Some(i)) => i,
            Ok(None) => panic!("the connection ended; acp log:\n{}", self.log()),
            Err(_) => panic!("nothing arrived within {WAIT:?}; acp log:\n{}", self.log()),
        }
    }

    /// Updates received so far (none waited for).
    fn drain(&mut self) -> Vec<SessionUpdate> {
        let mut out = Vec::new();
        while let Ok(i) = self.inbound.try_recv() {
            if let Inbound::Update(n) = i {
                out.push(n.update);
            }
        }
        out
    }
}

/// Sends a prompt in a task of its own (its answer comes after the run, which may need
/// the editor's answers meanwhile).
fn prompt(
    editor: &Editor,
    session: &str,
    text: &str,
) -> tokio::task::JoinHandle<Result<PromptResponse, Error>> {
    let cx = editor.cx.clone();
    let request = PromptRequest::new(
        session.to_owned(),
        vec![ContentBlock::from(text.to_owned())],
    );
    tokio::spawn(async move { cx.send_request(request).block_task().await })
}

/// What a list of updates says: the agent's text, its thoughts, the user's text, and per
/// tool call its kind and statuses in order.
#[derive(Debug, Default)]
struct Transcript {
    text: String,
    thoughts: String,
    user: String,
    calls: Vec<(String, Option<ToolKind>, Vec<ToolCallStatus>, String)>,
}

fn transcript(updates: &[SessionUpdate]) -> Transcript {
    let mut t = Transcript::default();
    let text_of = |c: &ContentBlock| match c {
        ContentBlock::Text(t) => t.text.clone(),
        _ => String::new(),
    };
    for update in updates {
        match update {
            SessionUpdate::AgentMessageChunk(c) => t.text.push_str(&text_of(&c.content)),
            SessionUpdate::AgentThoughtChunk(c) => t.thoughts.push_str(&text_of(&c.content)),
            SessionUpdate::UserMessageChunk(c) => t.user.push_str(&text_of(&c.content)),
            SessionUpdate::ToolCall(call) => t.calls.push((
                call.tool_call_id.to_string(),
                Some(call.kind),
                vec![call.status],
                call.title.clone(),
            )),
            SessionUpdate::ToolCallUpdate(u) => {
                // (A call announced in updates not given here starts a new entry.)
                let id = u.tool_call_id.to_string();
                if !t.calls.iter().any(|c| c.0 == id) {
                    t.calls.push((id.clone(), None, Vec::new(), String::new()));
                }
                let Some(entry) = t.calls.iter_mut().find(|c| c.0 == id) else {
                    continue;
                };
                if let Some(kind) = u.fields.kind {
                    entry.1 = Some(kind);
                }
                if let Some(title) = &u.fields.title {
                    entry.3.clone_from(title);
                }
                if let Some(status) = u.fields.status
                    && entry.2.last() != Some(&status)
                {
                    entry.2.push(status);
                }
            }
            _ => {}
        }
    }
    t
}

/// Waits for the permission question of the run, collecting the updates before it.
async fn until_permission(
    editor: &mut Editor,
) -> (
    Vec<SessionUpdate>,
    RequestPermissionRequest,
    agent_client_protocol::v1::Responder<RequestPermissionResponse>,
) {
    let mut updates = Vec::new();
    loop {
        match editor.next().await {
            Inbound::Update(n) => updates.push(n.update),
            Inbound::Permission(r, responder) => return (updates, r, responder),
        }
    }
}

fn choose(option: &str) -> RequestPermissionResponse {
    RequestPermissionResponse::new(RequestPermissionOutcome::Selected(
        SelectedPermissionOutcome::new(option.to_owned()),
    ))
}

#[tokio::test]
async fn a_conversation_with_tool_calls_allowed_and_rejected_then_loaded_elsewhere() {
    let (daemon, _script) = scripted_daemon(SCRIPT).await;
    let workspace = tempfile::tempdir().unwrap();
    let cwd = std::fs::canonicalize(workspace.path()).unwrap();
    let mut editor = Editor::for_daemon(&daemon, &["--no-start"]).await;

    let init = editor.initialize().await;
    let caps = &init.agent_capabilities;
    assert!(caps.load_session);
    assert!(caps.prompt_capabilities.image && caps.prompt_capabilities.embedded_context);
    assert!(caps.mcp_capabilities.http && !caps.mcp_capabilities.sse);
    let info = init.agent_info.unwrap();
    assert_eq!(
        (info.name.as_str(), info.version.as_str()),
        ("agentd", env!("CARGO_PKG_VERSION"))
    );

    let session = editor.new_session(&cwd).await;
    let id = session.session_id.to_string();
    // The session is an agent in agent mode working in the editor's folder.
    let client = daemon.client().await;
    let agent = client.get_agent(id.clone()).await.unwrap();
    assert_eq!(agent.mode, AgentMode::Agent);
    assert_eq!(agent.workspace.as_deref(), Some(cwd.to_str().unwrap()));
    assert_eq!(session.modes.unwrap().current_mode_id.to_string(), "agent");
    let options = serde_json::to_value(session.config_options.unwrap()).unwrap();
    assert_eq!(options[1]["id"], "model");
    assert_eq!(options[1]["category"], "model");
    assert_eq!(options[1]["currentValue"], "script/script");

    // 1. A tool call that needs permission: allowed once.
    let turn = prompt(&editor, &id, "run it");
    let (before, question, responder) = until_permission(&mut editor).await;
    let t = transcript(&before);
    assert_eq!(t.thoughts, "The user wants a command run.");
    assert_eq!(t.text, "I will run it.");
    assert_eq!(t.user, "", "the editor's own prompt is not echoed");
    let call_id = question.tool_call.tool_call_id.to_string();
    assert_eq!(t.calls.len(), 1);
    assert_eq!(t.calls[0].0, call_id);
    assert_eq!(t.calls[0].1, Some(ToolKind::Execute));
    assert_eq!(t.calls[0].3, "Run `echo acp-ok`");
    let offered: Vec<String> = question
        .options
        .iter()
        .map(|o| o.option_id.to_string())
        .collect();
    assert_eq!(
        offered,
        ["allow_once", "allow_session", "allow_always", "reject"]
    );
    assert!(
        question
            .tool_call
            .fields
            .title
            .as_deref()
            .is_some_and(|t| t.contains("echo acp-ok")),
        "{question:?}"
    );
    responder.respond(choose("allow_once")).unwrap();
    let answer = tokio::time::timeout(WAIT, turn)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(answer.stop_reason, StopReason::EndTurn);
    let mut all = before;
    all.extend(editor.drain());
    let t = transcript(&all);
    assert_eq!(t.text, "I will run it.It printed acp-ok.");
    assert_eq!(t.calls[0].2.first(), Some(&ToolCallStatus::Pending));
    assert_eq!(t.calls[0].2.last(), Some(&ToolCallStatus::Completed));
    let result = all
        .iter()
        .filter_map(|u| match u {
            SessionUpdate::ToolCallUpdate(u) => u.fields.raw_output.clone(),
            _ => None,
        })
        .next_back()
        .unwrap();
    assert!(result.as_str().unwrap().contains("acp-ok"), "{result}");
    // The command's output came as it ran, as the call's content so far, before its result.
    let position = |live: bool| {
        all.iter().position(|u| match u {
            SessionUpdate::ToolCallUpdate(u) if live => {
                u.fields.raw_output.is_none()
                    && serde_json::to_value(&u.fields.content).unwrap()
                        == serde_json::json!([{"type": "content", "content": {"type": "text", "text": "acp-ok\n"}}])
            }
            SessionUpdate::ToolCallUpdate(u) => u.fields.raw_output.is_some(),
            _ => false,
        })
    };
    let (live, done) = (position(true), position(false));
    assert!(
        live.is_some() && live < done,
        "live output before the result: {all:?}"
    );

    // 2. The next tool call is rejected: the model is told, and answers.
    let turn = prompt(&editor, &id, "again");
    let (_, question, responder) = until_permission(&mut editor).await;
    responder.respond(choose("reject")).unwrap();
    let answer = tokio::time::timeout(WAIT, turn)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(answer.stop_reason, StopReason::EndTurn);
    let t = transcript(&editor.drain());
    assert_eq!(t.text, "Fine, I will not.");
    let rejected = question.tool_call.tool_call_id.to_string();
    let messages = crate::common::messages(&client, &id).await;
    let statuses: Vec<(String, agent_proto::ToolCallStatus)> = messages
        .iter()
        .flat_map(|m| &m.blocks)
        .filter_map(|b| match b {
            Block::ToolCall(ToolCallBlock {
                tool_call_id,
                status,
                ..
            }) => Some((tool_call_id.clone(), *status)),
            _ => None,
        })
        .collect();
    assert_eq!(
        statuses,
        [
            (call_id.clone(), agent_proto::ToolCallStatus::Success),
            (rejected.clone(), agent_proto::ToolCallStatus::Denied)
        ]
    );

    // 3. Another editor loads the session: the history is replayed before the answer.
    let mut second = Editor::for_daemon(&daemon, &["--no-start"]).await;
    second.initialize().await;
    let loaded = second
        .request(LoadSessionRequest::new(id.clone(), cwd.clone()))
        .await
        .unwrap();
    assert_eq!(loaded.modes.unwrap().current_mode_id.to_string(), "agent");
    let t = transcript(&second.drain());
    assert_eq!(t.user, "run itagain");
    assert_eq!(
        t.text,
        "I will run it.It printed acp-ok.Trying again.Fine, I will not."
    );
    assert_eq!(t.thoughts, "The user wants a command run.");
    let calls: Vec<(String, Vec<ToolCallStatus>)> =
        t.calls.into_iter().map(|c| (c.0, c.2)).collect();
    assert_eq!(
        calls,
        [
            (call_id, vec![ToolCallStatus::Completed]),
            (rejected, vec![ToolCallStatus::Failed])
        ]
    );

    // 4. A prompt sent from the second editor shows in the first as the user's words.
    let turn = prompt(&second, &id, "from the other editor");
    let (_, _, responder) = until_permission(&mut second).await;
    responder.respond(choose("reject")).unwrap();
    tokio::time::timeout(WAIT, turn)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let mut seen = Vec::new();
    while !transcript(&seen).user.contains("from the other editor") {
        if let Inbound::Update(n) = editor.next().await {
            seen.push(n.update);
        }
    }
    drop(editor);
    drop(second);
}

#[tokio::test]
async fn cancel_ends_the_turn_as_cancelled_and_unknown_sessions_are_acp_errors() {
    let (daemon, _script) = scripted_daemon(SLOW_SCRIPT).await;
    let workspace = tempfile::tempdir().unwrap();
    let mut editor = Editor::for_daemon(&daemon, &["--no-start"]).await;
    editor.initialize().await;
    let id = editor
        .new_session(workspace.path())
        .await
        .session_id
        .to_string();
    let client = daemon.client().await;
    editor.drain();
    let turn = prompt(&editor, &id, "count slowly");
    // Cancel once the answer is streaming.
    loop {
        if let Inbound::Update(n) = editor.next().await
            && matches!(n.update, SessionUpdate::AgentMessageChunk(_))
        {
            break;
        }
    }
    editor
        .cx
        .send_notification(CancelNotification::new(id.clone()))
        .unwrap();
    let answer = tokio::time::timeout(WAIT, turn)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(answer.stop_reason, StopReason::Cancelled);
    let messages = crate::common::messages(&client, &id).await;
    assert_eq!(
        messages.last().unwrap().status,
        agent_proto::MessageStatus::Cancelled
    );

    // A session this connection never opened, and one that does not exist.
    let e = editor
        .request(PromptRequest::new(
            "no-such-session",
            vec![ContentBlock::from("hi".to_owned())],
        ))
        .await
        .unwrap_err();
    assert_eq!(i32::from(e.code), -32002, "{e:?}");
    let e = editor
        .request(LoadSessionRequest::new("no-such-agent", workspace.path()))
        .await
        .unwrap_err();
    assert_eq!(i32::from(e.code), -32002, "{e:?}");
    assert!(e.message.contains("no-such-agent"), "{e:?}");
    // A cwd that is not a folder: agentd's reason, as invalid params.
    let e = editor
        .request(NewSessionRequest::new("/nonexistent/folder"))
        .await
        .unwrap_err();
    assert_eq!(i32::from(e.code), -32602, "{e:?}");
}

#[tokio::test]
async fn modes_models_and_editor_mcp_servers_are_per_agent() {
    let (daemon, _script) = scripted_daemon(SCRIPT).await;
    let workspace = tempfile::tempdir().unwrap();
    let editor = Editor::for_daemon(&daemon, &["--no-start"]).await;
    editor.initialize().await;
    let server = Path::new(env!("CARGO_BIN_EXE_agentd")).with_file_name("mcp-test-server");
    let request = NewSessionRequest::new(workspace.path()).mcp_servers(vec![McpServer::Stdio(
        McpServerStdio::new("editor tools", server).args(vec!["--name".into(), "editor".into()]),
    )]);
    let client = daemon.client().await;
    // (Watching every agent's events, which carry the servers' `mcpServerStatus`.)
    let mut events = client.subscribe_events(None, None, None).await.unwrap();
    let session = editor.request(request).await.unwrap();
    let id = session.session_id.to_string();

    // The editor's server is the session's alone.
    let servers = client.list_mcp_servers().await.unwrap().servers;
    let ours: Vec<_> = servers
        .iter()
        .filter(|s| s.spec.name.starts_with("acp-"))
        .collect();
    assert_eq!(ours.len(), 1, "{servers:?}");
    assert!(
        ours[0].spec.name.ends_with("-editor_tools"),
        "{:?}",
        ours[0].spec.name
    );
    assert_eq!(ours[0].spec.agents, std::slice::from_ref(&id));
    let other = crate::common::tool_agent(&client, None).await.0;
    let name = ours[0].spec.name.clone();
    loop {
        let event = tokio::time::timeout(WAIT, events.next())
            .await
            .expect("the editor's MCP server never became ready")
            .unwrap()
            .unwrap();
        match event.kind {
            agent_proto::EventKind::McpServerStatus {
                server,
                status,
                error,
            } if server == name => {
                assert_ne!(status, agent_proto::McpServerStatus::Failed, "{error:?}");
                if status == agent_proto::McpServerStatus::Ready {
                    break;
                }
            }
            _ => {}
        }
    }
    let mcp_tools = |tools: agent_proto::ToolList| -> Vec<String> {
        tools
            .tools
            .into_iter()
            .filter(|t| t.enabled && t.source.starts_with("mcp:"))
            .map(|t| t.name)
            .collect()
    };
    let mine = mcp_tools(client.list_tools(Some(id.clone())).await.unwrap());
    assert!(mine.iter().any(|t| t.ends_with("echo")), "{mine:?}");
    let theirs = mcp_tools(client.list_tools(Some(other.id.clone())).await.unwrap());
    assert!(theirs.is_empty(), "another agent sees {theirs:?}");

    // Chat mode, then back; the model selector changes the agent's model.
    editor
        .request(SetSessionModeRequest::new(id.clone(), "chat"))
        .await
        .unwrap();
    assert_eq!(
        client.get_agent(id.clone()).await.unwrap().mode,
        AgentMode::Chat
    );
    let set = editor
        .request(SetSessionConfigOptionRequest::new(
            id.clone(),
            "mode",
            SessionConfigOptionValue::value_id("agent"),
        ))
        .await
        .unwrap();
    assert_eq!(
        client.get_agent(id.clone()).await.unwrap().mode,
        AgentMode::Agent
    );
    assert_eq!(
        serde_json::to_value(&set.config_options).unwrap()[0]["currentValue"],
        "agent"
    );
    let e = editor
        .request(SetSessionModeRequest::new(id.clone(), "acp"))
        .await
        .unwrap_err();
    assert_eq!(i32::from(e.code), -32602, "{e:?}");

    // Profiles are modes too: `profile:<name>` is agent mode with that profile; `agent`
    // takes the profile off; an unknown profile is agentd's error.
    let profiles = client.list_profiles().await.unwrap().profiles;
    let profile = profiles
        .first()
        .expect("the built-in profiles")
        .name
        .clone();
    let offered: Vec<String> = session
        .modes
        .as_ref()
        .unwrap()
        .available_modes
        .iter()
        .map(|m| m.id.to_string())
        .collect();
    let mut want = vec!["chat".to_owned(), "agent".to_owned()];
    want.extend(profiles.iter().map(|p| format!("profile:{}", p.name)));
    assert_eq!(offered, want);
    editor
        .request(SetSessionModeRequest::new(id.clone(), "chat"))
        .await
        .unwrap();
    editor
        .request(SetSessionModeRequest::new(
            id.clone(),
            format!("profile:{profile}"),
        ))
        .await
        .unwrap();
    let agent = client.get_agent(id.clone()).await.unwrap();
    assert_eq!(
        (agent.mode, agent.profile.as_deref()),
        (AgentMode::Agent, Some(profile.as_str()))
    );
    let set = editor
        .request(SetSessionConfigOptionRequest::new(
            id.clone(),
            "model",
            SessionConfigOptionValue::value_id("script/script"),
        ))
        .await
        .unwrap();
    assert_eq!(
        serde_json::to_value(&set.config_options).unwrap()[0]["currentValue"],
        format!("profile:{profile}")
    );
    let e = editor
        .request(SetSessionModeRequest::new(id.clone(), "profile:no-such"))
        .await
        .unwrap_err();
    assert!(e.message.contains("no-such"), "agentd's message: {e:?}");
    editor
        .request(SetSessionModeRequest::new(id.clone(), "agent"))
        .await
        .unwrap();
    let agent = client.get_agent(id.clone()).await.unwrap();
    assert_eq!((agent.mode, agent.profile), (AgentMode::Agent, None));
    let e = editor
        .request(SetSessionConfigOptionRequest::new(
            id.clone(),
            "model",
            SessionConfigOptionValue::value_id("nope/none"),
        ))
        .await
        .unwrap_err();
    assert!(e.message.contains("nope"), "agentd's message: {e:?}");
    editor
        .request(SetSessionConfigOptionRequest::new(
            id.clone(),
            "model",
            SessionConfigOptionValue::value_id("script/script"),
        ))
        .await
        .unwrap();

    // The editor closes the connection: its servers go with it before `agentd acp` exits.
    let acp_servers = async || -> Vec<String> {
        let servers = client.list_mcp_servers().await.unwrap().servers;
        servers
            .into_iter()
            .map(|s| s.spec.name)
            .filter(|n| n.starts_with("acp-"))
            .collect()
    };
    assert!(editor.close().await.success());
    assert_eq!(acp_servers().await, Vec::<String>::new());

    // So they do when the editor stops it with a signal.
    let mut editor = Editor::for_daemon(&daemon, &["--no-start"]).await;
    editor.initialize().await;
    let server = Path::new(env!("CARGO_BIN_EXE_agentd")).with_file_name("mcp-test-server");
    let request = NewSessionRequest::new(workspace.path())
        .mcp_servers(vec![McpServer::Stdio(McpServerStdio::new("more", server))]);
    editor.request(request).await.unwrap();
    assert_eq!(acp_servers().await.len(), 1);
    let pid = nix::unistd::Pid::from_raw(editor.child.id().unwrap() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    // (stdin still open: the signal alone ends it)
    let status = tokio::time::timeout(WAIT, editor.child.wait())
        .await
        .expect("agentd acp did not exit at SIGTERM")
        .unwrap();
    assert!(status.success(), "{status:?}");
    assert_eq!(acp_servers().await, Vec::<String>::new());
}

/// A folder for a daemon `agentd acp` is to start itself: a config whose default provider
/// plays `script`, and a socket path no daemon serves. Returns the folder (deleted when
/// dropped), the config and the socket.
fn no_daemon_yet(script: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::Builder::new()
        .prefix("agentd-acp-")
        .tempdir_in("/tmp")
        .unwrap();
    let script_path = dir.path().join("script.toml");
    std::fs::write(&script_path, script).unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[defaults]\nprovider = \"script\"\n[[providers]]\nid = \"script\"\nkind = \"scripted\"\nscript = \"{}\"\n",
            script_path.display()
        ),
    )
    .unwrap();
    let socket = dir.path().join("run/agentd.sock");
    (dir, config, socket)
}

#[tokio::test]
async fn it_starts_the_daemon_when_none_answers() {
    let (dir, config, socket) = no_daemon_yet(SCRIPT);
    let data = dir.path().join("data");

    // Without a daemon and told not to start one: an error on stderr, exit status 1.
    let mut refused = Editor::start(&socket, &data, &config, &["--no-start"]).await;
    let status = tokio::time::timeout(WAIT, refused.child.wait())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(status.code(), Some(1));
    assert!(
        refused.log().contains("cannot connect"),
        "{}",
        refused.log()
    );

    let mut editor = Editor::start(&socket, &data, &config, &[]).await;
    editor.initialize().await;
    let log = editor.log();
    let pid: i32 = log
        .split("started agentd (pid ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .and_then(|pid| pid.parse().ok())
        .unwrap_or_else(|| panic!("no pid in the log:\n{log}"));
    let _stop = StopOnDrop(pid);
    assert!(data.join("agentd.db").exists(), "the same data dir");
    let workspace = tempfile::tempdir().unwrap();
    let id = editor
        .new_session(workspace.path())
        .await
        .session_id
        .to_string();
    let turn = prompt(&editor, &id, "hi");
    let (_, _, responder) = until_permission(&mut editor).await;
    responder.respond(choose("allow_once")).unwrap();
    let answer = tokio::time::timeout(WAIT, turn)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(answer.stop_reason, StopReason::EndTurn);

    // The daemon outlives the editor, in its own process group.
    drop(editor);
    let client = agent_proto::client::connect(&socket).await.unwrap();
    assert_eq!(client.get_agent(id).await.unwrap().mode, AgentMode::Agent);
    let pgid = nix::unistd::getpgid(Some(nix::unistd::Pid::from_raw(pid))).unwrap();
    assert_eq!(pgid.as_raw(), pid);
}

/// Stops the daemon `agentd acp` started (SIGTERM) when the test ends.
struct StopOnDrop(i32);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.0),
            nix::sys::signal::Signal::SIGTERM,
        );
    }
}

/// A plan, a question with choices (answered in the editor), then one without choices
/// (which ACP cannot answer: left to another client).
const QUESTION_SCRIPT: &str = r#"
[[turns]]
[[turns.tool_calls]]
name = "todo_write"
arguments = { todos = [ { content = "Pick a database", status = "in_progress", activeForm = "Picking a database" }, { content = "Write the schema", status = "pending" } ] }

[[turns]]
[[turns.tool_calls]]
name = "ask_user_question"
arguments = { questions = [ { question = "Which database?", header = "DB", options = [ { label = "SQLite", description = "embedded" }, { label = "Postgres" } ] } ] }

[[turns]]
text = "Postgres it is."

[[turns]]
[[turns.tool_calls]]
name = "ask_user_question"
arguments = { questions = [ { question = "What should the table be called?", options = [] } ] }

[[turns]]
text = "Named as you said."
"#;

#[tokio::test]
async fn plans_and_questions_reach_the_editor() {
    let (daemon, _script) = scripted_daemon(QUESTION_SCRIPT).await;
    let workspace = tempfile::tempdir().unwrap();
    let mut editor = Editor::for_daemon(&daemon, &["--no-start"]).await;
    editor.initialize().await;
    let id = editor
        .new_session(workspace.path())
        .await
        .session_id
        .to_string();
    let client = daemon.client().await;

    // The plan arrives as ACP's plan; the question as a permission request with one
    // option per choice and "decline".
    let turn = prompt(&editor, &id, "set up storage");
    let (before, question, responder) = until_permission(&mut editor).await;
    let plan = before
        .iter()
        .find_map(|u| match u {
            SessionUpdate::Plan(p) => Some(serde_json::to_value(p).unwrap()),
            _ => None,
        })
        .expect("a plan update");
    assert_eq!(
        plan["entries"],
        serde_json::json!([
            {"content": "Picking a database", "priority": "medium", "status": "in_progress"},
            {"content": "Write the schema", "priority": "medium", "status": "pending"}
        ])
    );
    let offered: Vec<(String, String)> = question
        .options
        .iter()
        .map(|o| (o.option_id.to_string(), o.name.clone()))
        .collect();
    assert_eq!(
        offered,
        [
            ("choice-0".to_owned(), "SQLite".to_owned()),
            ("choice-1".to_owned(), "Postgres".to_owned()),
            ("decline".to_owned(), "Decline to answer".to_owned())
        ]
    );
    assert_eq!(
        question.tool_call.fields.title.as_deref(),
        Some("DB: Which database?")
    );
    responder.respond(choose("choice-1")).unwrap();
    let answer = tokio::time::timeout(WAIT, turn)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(answer.stop_reason, StopReason::EndTurn);
    assert_eq!(transcript(&editor.drain()).text, "Postgres it is.");
    let results: Vec<String> = crate::common::messages(&client, &id)
        .await
        .iter()
        .flat_map(|m| &m.blocks)
        .filter_map(|b| match b {
            Block::ToolCall(ToolCallBlock { name, result, .. }) if name == "ask_user_question" => {
                result.as_ref().map(|r| r.content.clone())
            }
            _ => None,
        })
        .collect();
    assert_eq!(results.len(), 1);
    assert!(results[0].contains("Postgres"), "{results:?}");

    // A question without choices: the turn ends saying where to answer; the question
    // stays pending, and the answer given elsewhere resumes the run, seen in the editor.
    let turn = prompt(&editor, &id, "and the table?");
    let answer = tokio::time::timeout(WAIT, turn)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(answer.stop_reason, StopReason::EndTurn);
    let t = transcript(&editor.drain());
    assert!(
        t.text.contains("What should the table be called?"),
        "{}",
        t.text
    );
    assert!(t.text.contains("another agentd client"), "{}", t.text);
    // (The turn ended on questionRequested, which may come before the daemon counts the
    // question as pending: watch the agent's events until it does.)
    let mut events = client
        .subscribe_events(Some(id.clone()), None, None)
        .await
        .unwrap();
    let pending = loop {
        let info = client.get_session(id.clone()).await.unwrap();
        if let Some(q) = info.pending_questions.into_iter().next() {
            break q;
        }
        tokio::time::timeout(WAIT, events.next())
            .await
            .expect("the question never became pending");
    };
    client
        .answer_question(
            pending.message_id,
            pending.tool_call_id,
            Some(vec![agent_proto::QuestionAnswer {
                selected: Vec::new(),
                text: Some("users".into()),
            }]),
            None,
        )
        .await
        .unwrap();
    let mut seen = Vec::new();
    while !transcript(&seen).text.contains("Named as you said.") {
        if let Inbound::Update(n) = editor.next().await {
            seen.push(n.update);
        }
    }
}

#[tokio::test]
async fn an_editor_that_goes_away_leaves_the_prompt_pending_and_a_load_asks_again() {
    let (daemon, _script) = scripted_daemon(SCRIPT).await;
    let workspace = tempfile::tempdir().unwrap();
    let mut editor = Editor::for_daemon(&daemon, &["--no-start"]).await;
    editor.initialize().await;
    let id = editor
        .new_session(workspace.path())
        .await
        .session_id
        .to_string();
    let client = daemon.client().await;
    let mut events = client
        .subscribe_events(Some(id.clone()), None, None)
        .await
        .unwrap();
    let _turn = prompt(&editor, &id, "run it");
    let (_, question, _responder) = until_permission(&mut editor).await;
    let call_id = question.tool_call.tool_call_id.to_string();
    editor.child.kill().await.unwrap();
    drop(editor);

    // Still pending in the daemon, answerable from anywhere. (The editor is asked on
    // permissionRequested; the session counts the prompt once the run has ended on it.)
    loop {
        let event = tokio::time::timeout(WAIT, events.next())
            .await
            .expect("the run never ended on the prompt")
            .unwrap()
            .unwrap();
        if let agent_proto::EventKind::LoopFinished { reason, .. } = event.kind {
            assert_eq!(reason, agent_proto::LoopFinishReason::WaitingPermission);
            break;
        }
    }
    let info = client.get_session(id.clone()).await.unwrap();
    let pending: Vec<&str> = info
        .pending_permissions
        .iter()
        .map(|p| p.tool_call_id.as_str())
        .collect();
    assert_eq!(pending, [call_id.as_str()]);

    // Another editor loads the session: the history, then the same question.
    let mut second = Editor::for_daemon(&daemon, &["--no-start"]).await;
    second.initialize().await;
    second
        .request(LoadSessionRequest::new(id.clone(), workspace.path()))
        .await
        .unwrap();
    let (history, again, responder) = until_permission(&mut second).await;
    assert_eq!(transcript(&history).user, "run it");
    assert_eq!(again.tool_call.tool_call_id.to_string(), call_id);
    responder.respond(choose("allow_once")).unwrap();
    let mut seen = Vec::new();
    while !transcript(&seen).text.contains("It printed acp-ok.") {
        if let Inbound::Update(n) = second.next().await {
            seen.push(n.update);
        }
    }
    // The stored message follows the events by up to a timed save (250 ms): wait for it.
    eventually(WAIT, "the call stored as a success", async || {
        let statuses: Vec<agent_proto::ToolCallStatus> = crate::common::messages(&client, &id)
            .await
            .iter()
            .flat_map(|m| &m.blocks)
            .filter_map(|b| match b {
                Block::ToolCall(ToolCallBlock { status, .. }) => Some(*status),
                _ => None,
            })
            .collect();
        if statuses == [agent_proto::ToolCallStatus::Success] {
            Ok(())
        } else {
            Err(statuses)
        }
    })
    .await;
}

/// An edit of the workspace's file, then an answer.
const EDIT_SCRIPT: &str = r#"
[[turns]]
[[turns.tool_calls]]
name = "edit_file"
arguments = { path = "notes.txt", old_string = "one", new_string = "two" }

[[turns]]
text = "Edited."
"#;

/// A 1x1 PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

#[tokio::test]
async fn prompts_carry_images_and_resources_and_edits_show_as_diffs() {
    use agent_client_protocol::v1::schema::{
        EmbeddedResource, EmbeddedResourceResource, ImageContent, TextResourceContents,
        ToolCallContent,
    };
    let (daemon, _script) = scripted_daemon(EDIT_SCRIPT).await;
    let workspace = tempfile::tempdir().unwrap();
    let cwd = std::fs::canonicalize(workspace.path()).unwrap();
    std::fs::write(cwd.join("notes.txt"), "one\n").unwrap();
    let mut editor = Editor::for_daemon(&daemon, &["--no-start"]).await;
    editor.initialize().await;
    let id = editor.new_session(&cwd).await.session_id.to_string();
    let client = daemon.client().await;

    let prompt_blocks = vec![
        ContentBlock::from("change it".to_owned()),
        ContentBlock::Resource(EmbeddedResource::new(
            EmbeddedResourceResource::TextResourceContents(TextResourceContents::new(
                "one",
                format!("file://{}/notes.txt", cwd.display()),
            )),
        )),
        ContentBlock::Image(ImageContent::new(PNG, "image/png")),
    ];
    let cx = editor.cx.clone();
    let request = PromptRequest::new(id.clone(), prompt_blocks);
    let turn = tokio::spawn(async move { cx.send_request(request).block_task().await });

    // The question shows the edit as a diff, at the file's absolute path.
    let (before, question, responder) = until_permission(&mut editor).await;
    let file = cwd.join("notes.txt");
    let diff_of = |content: &Option<Vec<ToolCallContent>>| {
        content.iter().flatten().find_map(|c| match c {
            ToolCallContent::Diff(d) => {
                Some((d.path.clone(), d.old_text.clone(), d.new_text.clone()))
            }
            _ => None,
        })
    };
    let want = Some((file.clone(), Some("one".to_owned()), "two".to_owned()));
    assert_eq!(
        diff_of(&question.tool_call.fields.content),
        want,
        "{question:?}"
    );
    let t = transcript(&before);
    assert_eq!(t.calls.len(), 1);
    assert_eq!(t.calls[0].1, Some(ToolKind::Edit));
    assert_eq!(t.calls[0].3, "Edit notes.txt");
    let locations: Vec<PathBuf> = before
        .iter()
        .filter_map(|u| match u {
            SessionUpdate::ToolCallUpdate(u) => u.fields.locations.clone(),
            _ => None,
        })
        .flatten()
        .map(|l| l.path)
        .collect();
    assert_eq!(locations, std::slice::from_ref(&file));
    responder.respond(choose("allow_once")).unwrap();
    let answer = tokio::time::timeout(WAIT, turn)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(answer.stop_reason, StopReason::EndTurn);
    let after = editor.drain();
    let done = after
        .iter()
        .find_map(|u| match u {
            SessionUpdate::ToolCallUpdate(u)
                if u.fields.status == Some(ToolCallStatus::Completed) =>
            {
                Some(u.fields.content.clone())
            }
            _ => None,
        })
        .expect("the edit completed");
    assert_eq!(diff_of(&done), want);
    assert_eq!(transcript(&after).text, "Edited.");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "two\n");

    // The daemon got the text, the resource as fenced text naming its URI, and the image.
    let messages = crate::common::messages(&client, &id).await;
    let user = &messages[0];
    let Block::Text { text } = &user.blocks[0] else {
        panic!("{:?}", user.blocks)
    };
    assert!(
        text.starts_with("change it\nContext from file://"),
        "{text}"
    );
    assert!(text.contains("notes.txt:\n```\none\n```"), "{text}");
    assert!(
        matches!(&user.blocks[1], Block::Image { mime_type, .. } if mime_type == "image/png"),
        "{:?}",
        user.blocks
    );
}

/// A conversation with a tool call, to see what reaches the editor's pipe.
const STDOUT_SCRIPT: &str = r#"
[[turns]]
reasoning = "A command is needed."
text = "Running it."
[[turns.tool_calls]]
name = "bash"
arguments = { command = "echo printed-by-the-tool" }

[[turns]]
text = "Done."
"#;

/// `agentd acp`'s stdout read as an editor reads it, line by line: anything that is not one
/// JSON-RPC 2.0 message fails the test.
struct AcpStdout {
    lines: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
    /// Where the bridge's stderr goes (shown when something fails).
    stderr: PathBuf,
    seen: Vec<serde_json::Value>,
}

impl AcpStdout {
    fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// The next message, or None at the end of the stream.
    async fn next(&mut self) -> Option<serde_json::Value> {
        let line = tokio::time::timeout(WAIT, self.lines.next_line())
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "nothing on stdout within {WAIT:?}; stderr:\n{}",
                    self.stderr()
                )
            })
            .expect("stdout is UTF-8 text")?;
        let message: serde_json::Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("not JSON on stdout ({e}): {line:?}"));
        assert_eq!(message["jsonrpc"], "2.0", "not JSON-RPC 2.0: {line}");
        let is_call = message["method"].is_string();
        let is_answer = !message["id"].is_null()
            && (message.get("result").is_some() || message.get("error").is_some());
        assert!(
            is_call ^ is_answer,
            "not a request, notification or response: {line}"
        );
        self.seen.push(message.clone());
        Some(message)
    }

    /// Sends request `id` and reads messages until its answer, answering permission
    /// requests on the way with their `allow_once` option.
    async fn call(
        &mut self,
        stdin: &mut tokio::process::ChildStdin,
        id: u64,
        method: &str,
        params: serde_json::Value,
    ) -> serde_json::Value {
        use tokio::io::AsyncWriteExt;
        let request =
            serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        stdin
            .write_all(format!("{request}\n").as_bytes())
            .await
            .unwrap();
        loop {
            let message = self.next().await.expect("stdout ended early");
            if message["id"] == id && message.get("method").is_none() {
                return message;
            }
            if message["method"] == "session/request_permission" {
                let options = message["params"]["options"].as_array().unwrap();
                let allow = options
                    .iter()
                    .find(|o| o["kind"] == "allow_once")
                    .expect("an allow_once option");
                let reply = serde_json::json!({"jsonrpc": "2.0", "id": message["id"],
                    "result": {"outcome": {"outcome": "selected", "optionId": allow["optionId"]}}});
                stdin
                    .write_all(format!("{reply}\n").as_bytes())
                    .await
                    .unwrap();
            }
        }
    }
}

#[tokio::test]
async fn nothing_but_acp_reaches_stdout() {
    use tokio::io::AsyncBufReadExt;

    // No daemon yet: `agentd acp` starts one, which must not write to the editor's pipe.
    let (dir, config, socket) = no_daemon_yet(STDOUT_SCRIPT);
    let stderr = dir.path().join("acp-stderr.log");
    let workspace = tempfile::tempdir().unwrap();
    let mut child = Command::new(bin())
        .arg("--socket")
        .arg(&socket)
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .arg("--config")
        .arg(&config)
        .arg("acp")
        .env_remove("AGENTD_SOCKET")
        .env_remove("AGENTD_DATA_DIR")
        .env_remove("AGENTD_CONFIG")
        // As chatty as it gets, for the bridge and the daemon it starts.
        .env("AGENTD_LOG", "trace")
        .env("RUST_LOG", "trace")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = AcpStdout {
        lines: tokio::io::BufReader::new(child.stdout.take().unwrap()).lines(),
        stderr,
        seen: Vec::new(),
    };

    let init = stdout
        .call(
            &mut stdin,
            1,
            "initialize",
            serde_json::json!({"protocolVersion": 1, "clientCapabilities": {}}),
        )
        .await;
    assert_eq!(init["result"]["protocolVersion"], 1, "{init}");
    // Said on stderr before the bridge serves: the daemon it started (stopped at the end).
    let log = stdout.stderr();
    let pid: i32 = log
        .split("started agentd (pid ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .and_then(|pid| pid.parse().ok())
        .unwrap_or_else(|| panic!("no pid on stderr:\n{log}"));
    let _stop = StopOnDrop(pid);
    let session = stdout
        .call(
            &mut stdin,
            2,
            "session/new",
            serde_json::json!({"cwd": workspace.path(), "mcpServers": []}),
        )
        .await;
    let id = session["result"]["sessionId"].clone();
    assert!(id.is_string(), "{session}");
    let turn = stdout
        .call(
            &mut stdin,
            3,
            "session/prompt",
            serde_json::json!({"sessionId": id, "prompt": [{"type": "text", "text": "run it"}]}),
        )
        .await;
    assert_eq!(turn["result"]["stopReason"], "end_turn", "{turn}");

    // The editor closes the pipe: stdout is read to its end, then the bridge exits.
    drop(stdin);
    while stdout.next().await.is_some() {}
    let status = tokio::time::timeout(WAIT, child.wait())
        .await
        .expect("agentd acp did not exit when its stdin closed")
        .unwrap();
    assert!(status.success(), "{status:?}; stderr:\n{}", stdout.stderr());

    // The run went through the pipe: a permission request, updates with the tool's output.
    let methods: Vec<&str> = stdout
        .seen
        .iter()
        .filter_map(|m| m["method"].as_str())
        .collect();
    assert!(
        methods.contains(&"session/request_permission"),
        "{methods:?}"
    );
    assert!(methods.contains(&"session/update"), "{methods:?}");
    let all = serde_json::to_string(&stdout.seen).unwrap();
    assert!(all.contains("printed-by-the-tool"), "{all}");
    // The started daemon's trace logs went to its own log beside the socket.
    let daemon_log = std::fs::read_to_string(socket.with_file_name("agentd.log")).unwrap();
    assert!(daemon_log.contains("agentd listening"), "{daemon_log}");
}
