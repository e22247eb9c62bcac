//! The wall (issue 32, section 1): every `bash` command runs in the OS sandbox of its
//! agent's mode. A command the user allowed cannot write outside the workspace (by any
//! program, not only a redirection), cannot reach a listener on 127.0.0.1 without a network
//! grant and can with one, cannot read the daemon's environment, its data dir or its
//! socket; only an answered `outsideSandbox` prompt lifts it, and that is always asked.

use std::io::Read;
use std::net::TcpListener;
use std::path::Path;
use std::time::Duration;

use agent_proto::client::Client;
use agent_proto::rpc::AgentRpcClient;
use agent_proto::{EventKind, PermissionLevel, Remember, SandboxMode, ToolCallStatus};
use agentd_testkit::daemon::{DaemonOptions, TestDaemon, openai_config_with};
use agentd_testkit::mock_model::{MockModel, Reply};
use serde_json::{Value, json};

use crate::common::{
    answer_prompt, bin, permission_request, run_bash_granted, send_and_collect, tool_agent,
    tool_result_of, ws,
};

/// Every level allowed but the network, which asks.
const ALLOW_BUT_NETWORK: &str =
    "[permissions]\nread = \"allow\"\nwrite = \"allow\"\nexecute = \"allow\"\nnetwork = \"ask\"\n";

/// A value only the daemon's own environment has.
const DAEMON_SECRET: &str = "daemon-only-value-7f3a";

async fn start(extra: &str) -> (MockModel, TestDaemon) {
    let mock = MockModel::start().await;
    let options = DaemonOptions {
        config_toml: openai_config_with(&mock.url(), extra),
        env: vec![("AGENTD_TEST_SECRET".into(), DAEMON_SECRET.into())],
    };
    let daemon = TestDaemon::start_with(bin(), options).await;
    (mock, daemon)
}

fn bash(id: &str, args: Value) -> Reply {
    Reply::openai_tool_calls(&[], &[(id, "bash", &args.to_string())])
}

/// Runs one bash call the user lets run (a prompt is granted once) and returns its
/// result. A prompt that would give it the network fails the test.
async fn run(
    mock: &MockModel,
    client: &Client,
    agent: &str,
    args: Value,
) -> (ToolCallStatus, String) {
    let (status, content, prompt) = run_bash_granted(mock, client, agent, args).await;
    if let Some(EventKind::PermissionRequested {
        network_access: true,
        ..
    }) = prompt
    {
        panic!("the prompt gave the network: {prompt:?}");
    }
    (status, content)
}

/// A tool agent in `mode`.
async fn agent_in(client: &Client, mode: SandboxMode) -> (agent_proto::Agent, tempfile::TempDir) {
    tool_agent(client, Some(json!({ "sandbox": mode.as_str() }))).await
}

/// Writes by three programs to `outside`, one write and one temp-folder write inside.
fn writes(outside: &Path) -> String {
    let o = outside.display();
    format!(
        "python3 -c 'open(\"{o}/py\", \"w\").write(\"x\")'; cp /etc/hostname {o}/cp; \
         echo x > {o}/redir; echo in > inside; echo t > \"$TMPDIR/t\" && cat \"$TMPDIR/t\"; \
         echo end"
    )
}

#[tokio::test]
async fn a_confined_command_writes_only_where_its_mode_lets_it() {
    let (mock, daemon) = start(ALLOW_BUT_NETWORK).await;
    let client = daemon.client().await;
    for mode in [
        SandboxMode::WorkspaceWrite,
        SandboxMode::ReadOnly,
        SandboxMode::Off,
    ] {
        let outside = tempfile::tempdir().unwrap();
        let (agent, _ws) = agent_in(&client, mode).await;
        let (_, content) = run(
            &mock,
            &client,
            &agent.id,
            json!({"command": writes(outside.path())}),
        )
        .await;
        let escaped: Vec<&str> = ["py", "cp", "redir"]
            .into_iter()
            .filter(|f| outside.path().join(f).exists())
            .collect();
        let inside = ws(&agent).join("inside").exists();
        match mode {
            SandboxMode::Off => {
                // The control: without the sandbox the same command writes everywhere.
                assert_eq!(escaped, ["py", "cp", "redir"], "{content}");
                assert!(inside, "{content}");
            }
            SandboxMode::WorkspaceWrite | SandboxMode::ReadOnly => {
                assert!(escaped.is_empty(), "{mode:?} wrote {escaped:?}: {content}");
                assert_eq!(
                    inside,
                    mode == SandboxMode::WorkspaceWrite,
                    "{mode:?}: {content}"
                );
                assert!(content.contains("Permission denied"), "{content}");
                // The way out is named, with what it may write.
                assert!(content.contains("[sandbox]"), "{content}");
                assert!(content.contains("outsideSandbox"), "{content}");
            }
        }
        // The agent's temp folder is writable in every mode, and is TMPDIR.
        assert!(content.lines().any(|l| l == "t"), "{mode:?}: {content}");
        assert!(content.contains("end"), "{content}");
    }
}

/// A listener on 127.0.0.1 that counts the connections it gets.
struct Listener {
    listener: TcpListener,
    port: u16,
}

impl Listener {
    fn new() -> Listener {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        Listener { listener, port }
    }

    /// Connections accepted so far (each read to its end).
    fn accepted(&self) -> Vec<String> {
        let mut got = Vec::new();
        while let Ok((mut stream, _)) = self.listener.accept() {
            stream.set_nonblocking(false).unwrap();
            stream
                .set_read_timeout(Some(Duration::from_secs(5)))
                .unwrap();
            let mut text = String::new();
            let _ = stream.read_to_string(&mut text);
            got.push(text);
        }
        got
    }
}

/// Connects to `port` by TCP (sending `py-tcp`) and sends a UDP datagram, each printing
/// what it achieved; a plain command (`python3 net.py PORT`) once written.
fn write_net_script(agent: &agent_proto::Agent) {
    std::fs::write(
        ws(agent).join("net.py"),
        "import socket, sys\n\
         port = int(sys.argv[1])\n\
         try:\n    \
             s = socket.create_connection(('127.0.0.1', port))\n    \
             s.sendall(b'py-tcp')\n    \
             print('PY-OK')\n\
         except OSError as e:\n    \
             print('tcp:', e)\n\
         try:\n    \
             u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n    \
             u.sendto(b'x', ('127.0.0.1', port))\n    \
             print('UDP-OK')\n\
         except OSError as e:\n    \
             print('udp:', e)\n",
    )
    .unwrap();
}

/// bash's own /dev/tcp, then the script.
fn connects(port: u16) -> String {
    format!("echo bash-tcp >/dev/tcp/127.0.0.1/{port} && echo BASH-OK; python3 net.py {port}")
}

#[tokio::test]
async fn the_network_is_closed_unless_granted_and_open_with_a_grant() {
    let (mock, daemon) = start(ALLOW_BUT_NETWORK).await;
    let client = daemon.client().await;

    // An agent whose network is denied: the command runs (the user lets it), without the
    // network: TCP and UDP fail, /dev/tcp fails, nothing arrives.
    let (closed, _ws1) = tool_agent(
        &client,
        Some(json!({"sandbox": "workspace-write", "permissions": {"network": "deny"}})),
    )
    .await;
    write_net_script(&closed);
    let listener = Listener::new();
    let (status, content) = run(
        &mock,
        &client,
        &closed.id,
        json!({"command": connects(listener.port)}),
    )
    .await;
    assert_eq!(status, ToolCallStatus::Success, "{content}");
    for ok in ["BASH-OK", "PY-OK", "UDP-OK"] {
        assert!(
            !content.contains(ok),
            "{ok} without a network grant: {content}"
        );
    }
    assert!(content.contains("Operation not permitted"), "{content}");
    assert!(listener.accepted().is_empty());

    // The network rule asks: a plain command without `network` runs without it...
    let (agent, _ws2) = agent_in(&client, SandboxMode::WorkspaceWrite).await;
    write_net_script(&agent);
    let listener = Listener::new();
    let script = format!("python3 net.py {}", listener.port);
    let (status, content) = run(&mock, &client, &agent.id, json!({ "command": script })).await;
    assert_eq!(status, ToolCallStatus::Success, "{content}");
    assert!(
        !content.contains("PY-OK") && !content.contains("UDP-OK"),
        "{content}"
    );
    assert!(
        content.contains("network: true"),
        "the hint names the way: {content}"
    );
    assert!(listener.accepted().is_empty());

    // ... and asking for it is a network prompt; granted for the session, it connects.
    let listener = Listener::new();
    let script = format!("python3 net.py {}", listener.port);
    mock.push(bash("n", json!({"command": script, "network": true})));
    let (sent, events) = send_and_collect(&client, &agent.id, "go").await;
    match permission_request(&events) {
        EventKind::PermissionRequested {
            permission_type,
            network_access,
            outside_sandbox,
            rememberable,
            description,
            ..
        } => {
            assert_eq!(permission_type, PermissionLevel::Network);
            assert!(network_access && !outside_sandbox && rememberable);
            assert!(description.contains("network"), "{description}");
        }
        other => panic!("{other:?}"),
    }
    mock.push(Reply::openai_text(&["connected"]));
    let resumed = answer_prompt(
        &client,
        &agent.id,
        &sent.assistant_message_id,
        "n",
        true,
        Remember::Session,
    )
    .await;
    let (status, content, _) = tool_result_of(&resumed, "n");
    assert_eq!(status, ToolCallStatus::Success, "{content}");
    assert!(
        content.contains("PY-OK") && content.contains("UDP-OK"),
        "{content}"
    );
    let got = listener.accepted();
    assert_eq!(got, ["py-tcp"]);

    // Remembered for the session: the same command has the network without a prompt,
    // even without asking for it.
    let listener = Listener::new();
    let script = format!("python3 net.py {}", listener.port);
    let (status, content, prompt) =
        run_bash_granted(&mock, &client, &agent.id, json!({ "command": script })).await;
    assert!(prompt.is_none(), "{prompt:?}");
    assert_eq!(status, ToolCallStatus::Success, "{content}");
    assert!(content.contains("PY-OK"), "{content}");
    assert_eq!(listener.accepted(), ["py-tcp"]);
}

#[tokio::test]
async fn an_allowed_network_is_open_without_a_network_prompt() {
    let (mock, daemon) = start(crate::common::ALLOW_ALL).await;
    let client = daemon.client().await;
    let (agent, _ws) = agent_in(&client, SandboxMode::ReadOnly).await;
    write_net_script(&agent);
    let listener = Listener::new();
    let (status, content) = run(
        &mock,
        &client,
        &agent.id,
        json!({"command": connects(listener.port)}),
    )
    .await;
    assert_eq!(status, ToolCallStatus::Success, "{content}");
    assert!(
        content.contains("BASH-OK") && content.contains("PY-OK"),
        "{content}"
    );
    let mut got = listener.accepted();
    got.sort();
    assert_eq!(got, ["bash-tcp\n", "py-tcp"]);
}

#[tokio::test]
async fn a_confined_command_cannot_read_the_daemons_environment_data_or_socket() {
    let (mock, daemon) = start(crate::common::ALLOW_ALL).await;
    let client = daemon.client().await;
    let pid = daemon.pid().unwrap();
    let data = daemon.data_dir().display().to_string();
    let socket = daemon.socket().display().to_string();
    for mode in [
        SandboxMode::WorkspaceWrite,
        SandboxMode::ReadOnly,
        SandboxMode::Off,
    ] {
        let (agent, _ws) = agent_in(&client, mode).await;
        // The network is allowed (ALLOW_ALL): the socket is refused by the daemon itself.
        std::fs::write(
            ws(&agent).join("probe.py"),
            format!(
                "import socket\n\
                 s = socket.socket(socket.AF_UNIX)\n\
                 s.connect({socket:?})\n\
                 try:\n    \
                     s.sendall(b'{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"listAgents\"}}\\n')\n    \
                     print('SOCKET-ANSWER:', s.recv(4096))\n\
                 except OSError as e:\n    \
                     print('SOCKET-ANSWER:', b'', e)\n"
            ),
        )
        .unwrap();
        let command = format!(
            "tr '\\0' '\\n' < /proc/{pid}/environ | grep AGENTD_TEST; \
             head -c 16 {data}/agentd.db; echo; cat {data}/process-groups/*; \
             python3 probe.py; kill -0 {pid} && echo SIGNAL-OK; echo end"
        );
        let (_, content) = run(&mock, &client, &agent.id, json!({ "command": command })).await;
        assert!(content.contains("end"), "{content}");
        if mode == SandboxMode::Off {
            // The control: unconfined, the same command reads the database (a SQLite
            // file; on PostgreSQL there is none) and is served.
            if daemon.postgres_url().is_none() {
                assert!(content.contains("SQLite format"), "{content}");
            }
            assert!(content.contains("SOCKET-ANSWER: b'{"), "{content}");
            continue;
        }
        assert!(!content.contains(DAEMON_SECRET), "{mode:?}: {content}");
        assert!(!content.contains("SQLite format"), "{mode:?}: {content}");
        assert!(!content.contains("SIGNAL-OK"), "{mode:?}: {content}");
        assert!(
            content.contains("SOCKET-ANSWER: b''"),
            "{mode:?}: {content}"
        );
    }
    // The daemon is fine and still serves its clients.
    assert!(
        client
            .list_agents(None, None, None, None, None)
            .await
            .is_ok()
    );
}

#[tokio::test]
async fn outside_the_sandbox_is_always_asked_and_never_remembered() {
    let (mock, daemon) = start(crate::common::ALLOW_ALL).await;
    let client = daemon.client().await;
    let (agent, _ws) = agent_in(&client, SandboxMode::WorkspaceWrite).await;
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("made-outside");
    let args = json!({
        "command": format!("touch {}", target.display()),
        "outsideSandbox": true,
        "reason": "writes the build cache outside",
    });
    for round in 0..2 {
        let id = format!("o{round}");
        mock.push(bash(&id, args.clone()));
        let (sent, events) = send_and_collect(&client, &agent.id, "go").await;
        match permission_request(&events) {
            EventKind::PermissionRequested {
                outside_sandbox,
                rememberable,
                risk,
                description,
                ..
            } => {
                assert!(outside_sandbox && !rememberable);
                let risk = risk.unwrap();
                assert!(risk.contains("outside the OS sandbox"), "{risk}");
                assert!(risk.contains("writes the build cache outside"), "{risk}");
                assert!(description.contains("outside the sandbox"), "{description}");
            }
            other => panic!("{other:?}"),
        }
        mock.push(Reply::openai_text(&["ok"]));
        // Answered "always": it still asks the second time.
        let resumed = answer_prompt(
            &client,
            &agent.id,
            &sent.assistant_message_id,
            &id,
            true,
            Remember::Always,
        )
        .await;
        assert_eq!(tool_result_of(&resumed, &id).0, ToolCallStatus::Success);
        assert!(target.exists());
        std::fs::remove_file(&target).unwrap();
    }
    // Without a reason the call is refused before anything is asked.
    let (status, content) = run(
        &mock,
        &client,
        &agent.id,
        json!({"command": "true", "outsideSandbox": true}),
    )
    .await;
    assert_eq!(status, ToolCallStatus::Error);
    assert!(content.contains("reason"), "{content}");
}

#[tokio::test]
async fn initialize_agents_and_tools_say_how_commands_are_confined() {
    let (_mock, daemon) = start(
        "[sandbox]\nmode = \"read-only\"\n\n\
         [[profiles]]\nname = \"trusted\"\nextends = \"coder\"\nsandbox = \"off\"\n",
    )
    .await;
    let client = daemon.client().await;
    let init = client.initialize(None, None, None).await.unwrap();
    let sandbox = init.capabilities.sandbox;
    // This machine's kernel has Landlock ABI 7; CI runs on the same kind of machine.
    assert!(sandbox.available, "{sandbox:?}");
    assert!(sandbox.abi.unwrap() >= 6, "{sandbox:?}");
    assert!(sandbox.enforced);
    assert_eq!(sandbox.mode, SandboxMode::ReadOnly);

    let (default, _a) = tool_agent(&client, None).await;
    let (off, _b) = agent_in(&client, SandboxMode::Off).await;
    for (agent, mode) in [(&default, SandboxMode::ReadOnly), (&off, SandboxMode::Off)] {
        let got = client.get_agent(agent.id.clone()).await.unwrap();
        assert_eq!(got.sandbox, Some(mode));
        let tools = client
            .list_tools(Some(agent.id.clone()))
            .await
            .unwrap()
            .tools;
        let bash = tools.iter().find(|t| t.name == "bash").unwrap();
        assert_eq!(bash.sandbox, Some(mode));
        assert!(
            tools
                .iter()
                .filter(|t| t.name != "bash")
                .all(|t| t.sandbox.is_none())
        );
    }
    // A profile's mode, over the config's; the agent's own over the profile's.
    let profiled = |settings: Value| {
        let client = &client;
        async move {
            let workspace = tempfile::tempdir().unwrap();
            let agent = client
                .create_agent(
                    None,
                    Some(agent_proto::AgentMode::Agent),
                    None,
                    None,
                    None,
                    Some(workspace.path().display().to_string()),
                    Some("trusted".into()),
                    Some(settings),
                    None,
                )
                .await
                .unwrap();
            (agent.sandbox, workspace)
        }
    };
    assert_eq!(profiled(json!({})).await.0, Some(SandboxMode::Off));
    assert_eq!(
        profiled(json!({"sandbox": "workspace-write"})).await.0,
        Some(SandboxMode::WorkspaceWrite)
    );
    let profiles = client.list_profiles().await.unwrap().profiles;
    let trusted = profiles.iter().find(|p| p.name == "trusted").unwrap();
    assert_eq!(trusted.sandbox, Some(SandboxMode::Off));
    let chat = crate::common::new_agent(&client, "chat").await;
    assert_eq!(client.get_agent(chat.id).await.unwrap().sandbox, None);
}

#[tokio::test]
async fn every_command_runs_confined_without_new_privileges() {
    let (mock, daemon) = start(ALLOW_BUT_NETWORK).await;
    let client = daemon.client().await;
    let (agent, _ws) = agent_in(&client, SandboxMode::WorkspaceWrite).await;
    for k in 0..3 {
        let command =
            format!("grep -E '^(NoNewPrivs|Seccomp):' /proc/self/status | tr -d '\\t'; echo {k}");
        let (_, content) = run(&mock, &client, &agent.id, json!({ "command": command })).await;
        // Seccomp 2: a filter (no network); NoNewPrivs: nothing regains what was taken.
        assert_eq!(
            content,
            format!("NoNewPrivs:1\nSeccomp:2\n{k}\nexit code: 0"),
            "{content}"
        );
    }
}
