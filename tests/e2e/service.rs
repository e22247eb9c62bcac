//! Running as a service (issue 20): socket activation under `systemd-socket-activate`,
//! readiness (`Type=notify`), `--exit-when-idle` decided from connections, runs and
//! waiting prompts, the restart on the next connection with nothing lost, the checks a
//! passed socket gets, and API keys from systemd credentials.
//!
//! `systemd-socket-activate` comes with Debian's systemd package (.ci/run installs it); a
//! test that needs it and cannot find it says it is skipped, and fails under CI.
//! Nothing here measures time: a short `--exit-when-idle` and a wait for the exit.

use std::os::unix::fs::{DirBuilderExt, FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use agent_proto::rpc::AgentRpcClient;
use agent_proto::{EventKind, LoopFinishReason, PermissionLevel, Remember, ToolCallStatus};
use agentd_testkit::activation::{Activated, Life, SocketActivator};
use agentd_testkit::daemon::{DaemonOptions, TestDaemon, openai_config};
use agentd_testkit::events::collect_run;
use agentd_testkit::mock_model::{MockModel, Reply};
use agentd_testkit::raw::{Framing, RawConn};
use agentd_testkit::scenario::bash_call;
use agentd_testkit::wait::{Verbatim, eventually};
use serde_json::json;
use tokio::process::{Child, Command};

use crate::common::{bin, model_requests, send_and_collect, tool_agent, tool_result_of};

/// How long anything here may take: a start, a run, an exit after the idle time.
const WAIT: Duration = Duration::from_secs(30);

/// The program `name` on PATH; `None` (after saying why the test is skipped) if missing.
/// Under CI a missing tool is a failure: .ci/run installs it.
fn tool(name: &str, package: &str) -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{name} is missing: CI must install {package} (.ci/run)"
        );
        eprintln!("skipped: {name} is not installed (apt-get install {package})");
    }
    found
}

/// A short temp dir (socket paths are limited to 108 bytes) with a 0700 `run/` folder and
/// the mock's config.
struct Place {
    dir: tempfile::TempDir,
}

impl Place {
    fn new(config_toml: &str) -> Place {
        let dir = tempfile::Builder::new()
            .prefix("agentd-svc-")
            .tempdir_in("/tmp")
            .unwrap();
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(dir.path().join("run"))
            .unwrap();
        std::fs::write(dir.path().join("config.toml"), config_toml).unwrap();
        Place { dir }
    }

    fn socket(&self) -> PathBuf {
        self.dir.path().join("run/agentd.sock")
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("daemon.log")
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    /// The daemon's flags: this place's data dir and config.
    fn daemon_args(&self) -> Vec<String> {
        let path = |p: &str| self.dir.path().join(p).display().to_string();
        vec![
            "--data-dir".into(),
            path("data"),
            "--config".into(),
            path("config.toml"),
        ]
    }

    fn log_file(&self) -> std::fs::File {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .unwrap()
    }

    /// Waits until the log contains `needle`; panics with the log after [`WAIT`].
    async fn wait_log(&self, needle: &str) {
        let what = format!("{needle:?} in the log");
        eventually(WAIT, &what, async || {
            let log = self.log();
            if log.contains(needle) {
                Ok(())
            } else {
                Err(Verbatim(log))
            }
        })
        .await;
    }

    /// Waits for the socket file to appear (whoever binds it).
    async fn wait_socket(&self) {
        let what = format!("a socket at {}", self.socket().display());
        eventually(WAIT, &what, async || {
            if is_socket(&self.socket()) {
                Ok(())
            } else {
                Err(Verbatim(self.log()))
            }
        })
        .await;
    }
}

fn is_socket(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_socket())
}

async fn wait_exit(child: &mut Child, place: &Place) -> ExitStatus {
    match tokio::time::timeout(WAIT, child.wait()).await {
        Ok(status) => status.unwrap(),
        Err(_) => panic!("agentd did not exit within {WAIT:?}; log:\n{}", place.log()),
    }
}

/// `systemd-socket-activate -l SOCKET [-E ...] agentd ARGS`: it listens, and on the first
/// connection execs agentd in its own place with the socket as descriptor 3.
fn socket_activate(activate: &Path, place: &Place, env: &[String], args: &[&str]) -> Child {
    let mut command = Command::new(activate);
    command.arg("-l").arg(place.socket());
    for var in env {
        command.arg("-E").arg(var);
    }
    command
        .arg(bin())
        .args(place.daemon_args())
        .args(args)
        .stdin(Stdio::null())
        .stdout(place.log_file())
        .stderr(place.log_file())
        .kill_on_drop(true);
    command.spawn().unwrap()
}

/// The next datagram on the notify socket, as text.
async fn notification(socket: &tokio::net::UnixDatagram, place: &Place) -> String {
    let mut buf = vec![0u8; 4096];
    match tokio::time::timeout(WAIT, socket.recv(&mut buf)).await {
        Ok(n) => String::from_utf8_lossy(&buf[..n.unwrap()]).into_owned(),
        Err(_) => panic!(
            "no sd_notify message within {WAIT:?}; log:\n{}",
            place.log()
        ),
    }
}

/// Under `systemd-socket-activate`: the first connection starts agentd on the passed
/// socket, which reports READY=1; a connected client, then a prompt nobody answered, keep
/// it up; once the prompt is answered and the client gone it exits cleanly (STOPPING=1),
/// leaving the socket file to its owner.
#[tokio::test]
async fn socket_activated_daemon_serves_the_passed_socket_and_exits_when_idle() {
    let Some(activate) = tool("systemd-socket-activate", "systemd") else {
        return;
    };
    let mock = MockModel::start().await;
    let place = Place::new(&openai_config(&mock.url()));
    let notify_path = place.dir.path().join("notify");
    let notify = tokio::net::UnixDatagram::bind(&notify_path).unwrap();
    let env = [
        "AGENTD_LOG=debug".to_owned(),
        format!("NOTIFY_SOCKET={}", notify_path.display()),
    ];
    let mut daemon = socket_activate(&activate, &place, &env, &["--exit-when-idle", "1"]);
    place.wait_socket().await;
    assert!(
        !place.log().contains("agentd listening"),
        "agentd starts on the first connection, not before:\n{}",
        place.log()
    );

    let client = agent_proto::client::connect(&place.socket()).await.unwrap();
    let ready = notification(&notify, &place).await;
    assert!(ready.lines().any(|l| l == "READY=1"), "{ready:?}");
    let (agent, _workspace) = tool_agent(&client, None).await;
    assert!(place.log().contains("passed=true"), "{}", place.log());
    mock.push(bash_call("c1", "echo activated"));
    let (sent, events) = send_and_collect(&client, &agent.id, "run it").await;
    assert_eq!(
        events.last().unwrap().kind,
        EventKind::LoopFinished {
            message_id: sent.assistant_message_id.clone(),
            reason: LoopFinishReason::WaitingPermission,
            error: None
        }
    );
    place
        .wait_log("idle check: staying up, a client is connected")
        .await;

    // Nobody is connected, but a prompt waits for an answer: agentd stays up.
    drop(client);
    place
        .wait_log("idle check: staying up, a permission prompt waits for an answer")
        .await;
    assert!(daemon.try_wait().unwrap().is_none(), "{}", place.log());

    // The same process answers the next connection (systemd-socket-activate has become
    // agentd: were it gone, nothing would listen).
    let client = agent_proto::client::connect(&place.socket()).await.unwrap();
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    mock.push(Reply::openai_text(&["It printed activated."]));
    client
        .handle_permission_response(
            sent.assistant_message_id.clone(),
            "c1".into(),
            true,
            Some(PermissionLevel::Execute),
            Some(Remember::Once),
        )
        .await
        .unwrap();
    let resumed = collect_run(&mut sub, WAIT).await;
    let (status, content, _) = tool_result_of(&resumed, "c1");
    assert_eq!(status, ToolCallStatus::Success, "{content}");
    assert!(content.contains("activated"), "{content}");
    drop(sub);
    drop(client);

    // Now nothing keeps it: a clean exit, the socket file left where it was.
    let status = wait_exit(&mut daemon, &place).await;
    assert!(status.success(), "{status}; log:\n{}", place.log());
    let log = place.log();
    assert!(
        log.contains("idle check: idle; exiting unless used within 1s"),
        "{log}"
    );
    assert!(
        log.contains("exiting (the service manager keeps the socket)"),
        "{log}"
    );
    assert!(log.contains("agentd stopped"), "{log}");
    assert!(
        is_socket(&place.socket()),
        "agentd removed a socket it did not bind"
    );
    let stopping = notification(&notify, &place).await;
    assert!(stopping.lines().any(|l| l == "STOPPING=1"), "{stopping:?}");
}

/// The socket stays with its holder across daemon lives: a request written before any
/// daemon runs is answered by the one the connection starts; that daemon exits when idle;
/// the next connection starts another, which has everything the first one stored.
#[tokio::test]
async fn the_next_connection_starts_it_again_and_nothing_is_lost() {
    let mock = MockModel::start().await;
    let place = Place::new(&openai_config(&mock.url()));
    let mut args = place.daemon_args();
    args.extend(["--exit-when-idle".into(), "1".into()]);
    let mut activator = SocketActivator::start(
        &place.socket(),
        Activated {
            program: bin().to_owned(),
            args: args.into_iter().map(Into::into).collect(),
            env: vec![("AGENTD_LOG".into(), "debug".into())],
            log: place.log_path(),
        },
    );

    let mut raw = RawConn::connect(activator.path(), Framing::Ndjson).await;
    raw.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "createAgent",
        "params": {"title": "kept across lives"}}))
        .await;
    let Life::Started { pid: first } = activator.next_life(WAIT).await else {
        panic!("expected a start; log:\n{}", place.log());
    };
    let created = raw.recv().await;
    let agent_id = created["result"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{created}"))
        .to_owned();
    drop(raw);
    match activator.next_life(WAIT).await {
        Life::Exited { pid, status } => {
            assert_eq!(pid, first);
            assert!(status.success(), "{status}; log:\n{}", place.log());
        }
        other => panic!("{other:?}"),
    }
    assert!(is_socket(&place.socket()));

    let mut raw = RawConn::connect(activator.path(), Framing::Ndjson).await;
    let listed = raw.call("listAgents", json!({})).await;
    let Life::Started { pid: second } = activator.next_life(WAIT).await else {
        panic!("expected a second start; log:\n{}", place.log());
    };
    assert_ne!(second, first);
    let ids: Vec<&str> = listed["result"]["agents"]
        .as_array()
        .unwrap_or_else(|| panic!("{listed}"))
        .iter()
        .filter_map(|a| a["id"].as_str())
        .collect();
    assert_eq!(ids, [agent_id.as_str()], "{listed}");
    drop(raw);
    match activator.next_life(WAIT).await {
        Life::Exited { pid, status } => {
            assert_eq!(pid, second);
            assert!(status.success(), "{status}; log:\n{}", place.log());
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(place.log().matches("agentd listening").count(), 2);
}

/// Without a service manager, `--exit-when-idle` works on the socket agentd binds itself,
/// which it removes when it goes.
#[tokio::test]
async fn its_own_socket_is_removed_at_the_idle_exit() {
    let place = Place::new("");
    let mut daemon = Command::new(bin())
        .arg("--socket")
        .arg(place.socket())
        .args(place.daemon_args())
        .args(["--exit-when-idle", "1"])
        .env("AGENTD_LOG", "debug")
        .stdin(Stdio::null())
        .stdout(place.log_file())
        .stderr(place.log_file())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    place.wait_socket().await;
    let mut raw = RawConn::connect(place.socket(), Framing::Ndjson).await;
    let listed = raw.call("listAgents", json!({})).await;
    assert!(listed["result"]["agents"].is_array(), "{listed}");
    place
        .wait_log("idle check: staying up, a client is connected")
        .await;
    drop(raw);
    let status = wait_exit(&mut daemon, &place).await;
    assert!(status.success(), "{status}; log:\n{}", place.log());
    let log = place.log();
    assert!(log.contains("passed=false"), "{log}");
    assert!(
        log.contains("exiting") && !log.contains("keeps the socket"),
        "{log}"
    );
    assert!(!place.socket().exists(), "its own socket is removed");
}

/// A passed socket is refused, with what to fix, when it is not the one socket agentd
/// expects, when `--socket` names another path, or when its folder is open to others.
#[tokio::test]
async fn passed_sockets_that_fail_a_check_are_refused() {
    let Some(activate) = tool("systemd-socket-activate", "systemd") else {
        return;
    };
    let place = Place::new("");
    let other = place.dir.path().join("run/other.sock");
    let open = place.dir.path().join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).unwrap();
    let cases: &[(&[&str], &str, &str)] = &[
        (
            &["-l", other.to_str().unwrap()],
            "run/agentd.sock",
            "agentd takes exactly one",
        ),
        (
            &["--socket", other.to_str().unwrap()],
            "run/agentd.sock",
            "--socket (or AGENTD_SOCKET) says",
        ),
        (&[], "open/agentd.sock", "DirectoryMode=0700"),
    ];
    for (extra, socket, error) in cases {
        let socket = place.dir.path().join(socket);
        let (before, after): (Vec<&str>, Vec<&str>) = if extra.first() == Some(&"-l") {
            (extra.to_vec(), Vec::new())
        } else {
            (Vec::new(), extra.to_vec())
        };
        let _ = std::fs::remove_file(&socket); // the last case's
        let mut command = Command::new(&activate);
        command.arg("-l").arg(&socket).args(&before).arg(bin());
        command
            .args(place.daemon_args())
            .args(&after)
            .stdin(Stdio::null())
            .stdout(place.log_file())
            .stderr(place.log_file())
            .kill_on_drop(true);
        let mut daemon = command.spawn().unwrap();
        let what = format!("a socket at {}", socket.display());
        eventually(WAIT, &what, async || {
            if is_socket(&socket) {
                Ok(())
            } else {
                Err(Verbatim(place.log()))
            }
        })
        .await;
        // The connection starts agentd, which refuses the socket and exits.
        let _connection = tokio::net::UnixStream::connect(&socket).await.unwrap();
        let status = wait_exit(&mut daemon, &place).await;
        assert_eq!(status.code(), Some(1), "{error}: {}", place.log());
        assert!(place.log().contains(error), "{error}: {}", place.log());
    }
    assert!(!place.log().contains("agentd listening"), "{}", place.log());
}

#[tokio::test]
async fn launchd_sockets_are_refused_off_macos() {
    let place = Place::new("");
    let out = Command::new(bin())
        .args(place.daemon_args())
        .args(["--launchd-socket", "Listeners"])
        .output()
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("launchd exists only on macOS"), "{err}");
}

/// `LoadCredential=MOCK_API_KEY:...` puts the key in `$CREDENTIALS_DIRECTORY/MOCK_API_KEY`:
/// the provider whose `api_key_env` is `MOCK_API_KEY` sends it, over a variable of the
/// same name; without the file, the variable is used. The key never reaches the log.
#[tokio::test]
async fn api_keys_come_from_systemd_credentials() {
    let mock = MockModel::start().await;
    let credentials = tempfile::tempdir().unwrap();
    let key_file = credentials.path().join("MOCK_API_KEY");
    std::fs::write(&key_file, "sk-from-credential\n").unwrap();
    let config = format!(
        r#"[defaults]
provider = "mock"
model = "mock-model"

[[providers]]
id = "mock"
kind = "openai"
base_url = "{}"
api_key_env = "MOCK_API_KEY"
max_retries = 0
models = [{{ id = "mock-model", context_window = 32768 }}]
"#,
        mock.url()
    );
    let mut daemon = TestDaemon::start_with(
        bin(),
        DaemonOptions {
            config_toml: config,
            env: vec![
                (
                    "CREDENTIALS_DIRECTORY".into(),
                    credentials.path().display().to_string(),
                ),
                ("MOCK_API_KEY".into(), "sk-from-environment".into()),
            ],
        },
    )
    .await;
    let sent_key = async |daemon: &TestDaemon, n: usize| {
        let client = daemon.client().await;
        let providers = client.list_providers().await.unwrap();
        let mock_provider = providers.providers.iter().find(|p| p.id == "mock").unwrap();
        assert!(mock_provider.has_api_key);
        let agent = crate::common::new_agent(&client, "keys").await;
        mock.push(Reply::openai_text(&["hi"]));
        send_and_collect(&client, &agent.id, "hello").await;
        let requests = model_requests(&mock);
        assert_eq!(requests.len(), n);
        requests[n - 1]
            .header("authorization")
            .unwrap_or_default()
            .to_owned()
    };
    assert_eq!(sent_key(&daemon, 1).await, "Bearer sk-from-credential");

    daemon.terminate().await;
    std::fs::remove_file(&key_file).unwrap();
    daemon.restart().await;
    assert_eq!(sent_key(&daemon, 2).await, "Bearer sk-from-environment");
    let log = daemon.log();
    assert!(!log.contains("sk-from-credential"), "{log}");
}

#[tokio::test]
async fn a_log_file_gets_the_log_and_only_its_owner_can_read_it() {
    let mock = MockModel::start().await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("agentd.log");
    let mut daemon = TestDaemon::start_with(
        bin(),
        DaemonOptions {
            config_toml: openai_config(&mock.url()),
            env: vec![("AGENTD_LOG_FILE".into(), file.display().to_string())],
        },
    )
    .await;
    daemon.terminate().await;
    let logged = std::fs::read_to_string(&file).unwrap();
    assert!(
        logged.contains("agentd listening") && logged.contains("agentd stopped"),
        "{logged}"
    );
    assert!(
        !daemon.log().contains("agentd listening"),
        "{}",
        daemon.log()
    );
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    // Appended across starts, never truncated.
    daemon.restart().await;
    daemon.terminate().await;
    let logged = std::fs::read_to_string(&file).unwrap();
    assert_eq!(logged.matches("agentd listening").count(), 2, "{logged}");
}
