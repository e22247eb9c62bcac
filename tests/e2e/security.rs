//! Who can connect, and where secrets go (nowhere).

use agentd_testkit::send::SendByName;
use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::time::Duration;

use agent_proto::rpc::AgentRpcClient;
use agentd_testkit::daemon::{TEST_API_KEY, TestDaemon, openai_config};
use agentd_testkit::events::collect_run;
use agentd_testkit::mock_model::Reply;
use agentd_testkit::wait::eventually;

use crate::common::{bin, new_agent, start};

#[tokio::test]
async fn api_keys_never_reach_logs_or_rpc_results() {
    let (mock, daemon) = start().await;
    let client = daemon.client().await;
    let agent = new_agent(&client, "secret").await;
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    mock.push(Reply::status(401, r#"{"error":{"message":"bad key"}}"#));
    client
        .send_plain(agent.id.clone(), "hi".into())
        .await
        .unwrap();
    let events = collect_run(&mut sub, Duration::from_secs(10)).await;

    // The key was used...
    let request = &mock.requests()[0];
    let auth = request
        .headers
        .iter()
        .find(|(name, _)| name == "authorization")
        .map(|(_, v)| v.clone());
    assert_eq!(auth, Some(format!("Bearer {TEST_API_KEY}")));
    // ...and appears nowhere a client or a log reader can see.
    let providers = serde_json::to_string(&client.list_providers().await.unwrap()).unwrap();
    let models = serde_json::to_string(&client.list_models(None, None).await.unwrap()).unwrap();
    let agent_json =
        serde_json::to_string(&client.get_agent(agent.id.clone()).await.unwrap()).unwrap();
    let events_json = serde_json::to_string(&events).unwrap();
    for (what, text) in [
        ("listProviders", providers.as_str()),
        ("listModels", models.as_str()),
        ("getAgent", agent_json.as_str()),
        ("events", events_json.as_str()),
        ("the debug log", daemon.log().as_str()),
    ] {
        assert!(
            !text.contains(TEST_API_KEY),
            "the API key leaked into {what}"
        );
    }
    assert!(providers.contains("\"hasApiKey\":true"));
}

#[tokio::test]
async fn socket_is_private_and_a_live_daemon_is_not_replaced() {
    let (_mock, daemon) = start().await;
    let socket = daemon.socket();
    let mode = |p: &std::path::Path| std::fs::symlink_metadata(p).unwrap().mode() & 0o777;
    assert_eq!(mode(socket), 0o600);
    // the store is private too: the data dir the daemon made, and the database (a file
    // unless it is on PostgreSQL)
    assert_eq!(mode(daemon.data_dir()), 0o700);
    if daemon.postgres_url().is_none() {
        assert_eq!(mode(&daemon.db_path()), 0o600);
    }

    // A second daemon on the same socket path refuses to start and leaves it alone.
    let other = tempfile::tempdir().unwrap();
    std::fs::set_permissions(other.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let output = tokio::process::Command::new(bin())
        .arg("--socket")
        .arg(socket)
        .arg("--data-dir")
        .arg(other.path().join("data"))
        .arg("--config")
        .arg(other.path().join("missing.toml"))
        .output()
        .await
        .unwrap();
    assert!(!output.status.success());
    // The named config file does not exist: that is reported first.
    assert!(String::from_utf8_lossy(&output.stderr).contains("missing.toml"));
    std::fs::write(other.path().join("empty.toml"), "").unwrap();
    let output = tokio::process::Command::new(bin())
        .arg("--socket")
        .arg(socket)
        .arg("--data-dir")
        .arg(other.path().join("data"))
        .arg("--config")
        .arg(other.path().join("empty.toml"))
        .output()
        .await
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("already listening"), "{stderr}");
    assert!(
        daemon
            .client()
            .await
            .list_agents(None, None, None, None, None)
            .await
            .is_ok()
    );

    // A second daemon on the same data dir refuses too.
    let output = tokio::process::Command::new(bin())
        .arg("--socket")
        .arg(other.path().join("other.sock"))
        .arg("--data-dir")
        .arg(daemon.data_dir())
        .arg("--config")
        .arg(other.path().join("empty.toml"))
        .output()
        .await
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("data dir"), "{stderr}");

    // A stale socket file (no daemon behind it) is replaced.
    let stale_dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(stale_dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let stale = stale_dir.path().join("stale.sock");
    drop(std::os::unix::net::UnixListener::bind(&stale).unwrap());
    assert!(stale.exists());
    let mut child = tokio::process::Command::new(bin())
        .arg("--socket")
        .arg(&stale)
        .arg("--data-dir")
        .arg(stale_dir.path().join("data"))
        .env("AGENTD_CONFIG", other.path().join("empty.toml"))
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    eventually(
        Duration::from_secs(10),
        "the daemon on the stale path",
        async || tokio::net::UnixStream::connect(&stale).await.map(drop),
    )
    .await;
    child.kill().await.unwrap();
}

/// Run by `other_users_are_refused` as uid 65534: connects and reports what happened.
#[test]
#[ignore = "a probe run as another user by other_users_are_refused"]
fn probe_as_other_user() {
    let Ok(path) = std::env::var("AGENTD_PROBE_SOCKET") else {
        return;
    };
    let mut stream = match std::os::unix::net::UnixStream::connect(&path) {
        Ok(s) => s,
        Err(e) => {
            println!("PROBE connect-failed {e}");
            return;
        }
    };
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let request = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"listAgents\"}\n";
    if let Err(e) = stream.write_all(request) {
        println!("PROBE write-failed {e}");
        return;
    }
    let mut buf = [0u8; 4096];
    match stream.read(&mut buf) {
        Ok(0) => println!("PROBE closed"),
        Ok(n) => println!("PROBE answered {}", String::from_utf8_lossy(&buf[..n])),
        Err(e) => println!("PROBE read-failed {e}"),
    }
}

#[tokio::test]
async fn other_users_are_refused() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: connecting as another uid needs root (this is not a pass)");
        return;
    }
    let mock = agentd_testkit::mock_model::MockModel::start().await;
    let daemon = TestDaemon::start(bin(), &openai_config(&mock.url())).await;
    // Open the way to the socket for everyone, so only the uid check stands.
    let socket = daemon.socket().to_owned();
    let mut dir = socket.parent();
    while let Some(d) = dir {
        if d == std::path::Path::new("/") {
            break;
        }
        let perms = std::fs::metadata(d).unwrap().permissions().mode();
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(perms | 0o011)).unwrap();
        dir = d.parent();
    }
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o666)).unwrap();

    // The probe runs this test binary as `nobody`, who may not be able to reach it where
    // it was built (a checkout in a 0700 folder): run a copy from a folder open to all.
    let open = tempfile::tempdir().unwrap();
    std::fs::set_permissions(open.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let exe = open.path().join("probe");
    std::fs::copy(std::env::current_exe().unwrap(), &exe).unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    let output = tokio::task::spawn_blocking(move || {
        let mut command = std::process::Command::new(exe);
        command
            .args([
                "--exact",
                "security::probe_as_other_user",
                "--ignored",
                "--nocapture",
            ])
            .env("AGENTD_PROBE_SOCKET", &socket)
            .uid(65534)
            .gid(65534);
        agentd_testkit::other_user::retry_busy(|| command.output()).unwrap()
    })
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let probe = stdout
        .lines()
        .find(|l| l.starts_with("PROBE "))
        .unwrap_or_else(|| {
            panic!(
                "the probe did not run: {stdout} {}",
                String::from_utf8_lossy(&output.stderr)
            )
        });
    assert!(
        !probe.starts_with("PROBE connect-failed"),
        "the probe could not reach the socket: {probe}"
    );
    assert!(
        !probe.starts_with("PROBE answered"),
        "another uid got an answer: {probe}"
    );
    assert!(
        daemon
            .log()
            .contains("refused a connection from another user")
    );
    // Our own uid is still served.
    assert!(
        daemon
            .client()
            .await
            .list_agents(None, None, None, None, None)
            .await
            .is_ok()
    );
}

/// How a daemon is told where its socket goes; each way ends in the same folder check.
#[derive(Debug, Clone, Copy)]
enum SocketWay {
    Flag,
    SocketEnv,
    XdgRuntimeDir,
    TmpdirFallback,
}

/// A daemon started with its socket folder chosen `way` inside `root`, where `folder` (the
/// socket's parent for that way) is what the test prepared. Returns the command and the
/// folder path.
fn daemon_at(
    way: SocketWay,
    root: &std::path::Path,
    folder: &str,
) -> (tokio::process::Command, std::path::PathBuf) {
    let uid = nix::unistd::geteuid().as_raw();
    std::fs::write(root.join("empty.toml"), "").unwrap();
    let mut command = tokio::process::Command::new(bin());
    command
        .arg("--data-dir")
        .arg(root.join(format!("data-{folder}")))
        .arg("--config")
        .arg(root.join("empty.toml"))
        .env_remove("AGENTD_SOCKET")
        .env_remove("XDG_RUNTIME_DIR")
        .env_remove("TMPDIR")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let dir = match way {
        SocketWay::Flag => {
            let dir = root.join(folder);
            command.arg("--socket").arg(dir.join("agentd.sock"));
            dir
        }
        SocketWay::SocketEnv => {
            let dir = root.join(folder);
            command.env("AGENTD_SOCKET", dir.join("agentd.sock"));
            dir
        }
        SocketWay::XdgRuntimeDir => {
            let runtime = root.join(folder);
            std::fs::create_dir_all(&runtime).unwrap();
            command.env("XDG_RUNTIME_DIR", &runtime);
            runtime.join("agentd")
        }
        SocketWay::TmpdirFallback => {
            let tmp = root.join(folder);
            std::fs::create_dir_all(&tmp).unwrap();
            command.env("TMPDIR", &tmp);
            tmp.join(format!("agentd-{uid}"))
        }
    };
    (command, dir)
}

/// Runs a daemon that must refuse to start; returns its stderr.
async fn refused_start(mut command: tokio::process::Command) -> String {
    let output = tokio::time::timeout(Duration::from_secs(20), command.output())
        .await
        .expect("the daemon should have refused to start, but it is running")
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(!output.status.success(), "the daemon started: {stderr}");
    stderr
}

/// Another user can pre-create the socket folder (`$TMPDIR/agentd-$UID` with mode 1777)
/// and swap the socket: a folder that is not the daemon's user's own with mode 0700 is
/// refused, whichever way the path was chosen, and left as it was.
#[tokio::test]
async fn socket_folders_others_could_enter_are_refused_whichever_way_the_path_is_chosen() {
    let root = tempfile::tempdir().unwrap();
    let ways = [
        SocketWay::Flag,
        SocketWay::SocketEnv,
        SocketWay::XdgRuntimeDir,
        SocketWay::TmpdirFallback,
    ];
    for (i, way) in ways.into_iter().enumerate() {
        let (command, dir) = daemon_at(way, root.path(), &format!("open-{i}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o1777)).unwrap();
        let stderr = refused_start(command).await;
        let shown = dir.display().to_string();
        assert!(
            stderr.contains(&shown) && stderr.contains("mode 1777") && stderr.contains("0700"),
            "{way:?}: {stderr}"
        );
        let mode = std::fs::metadata(&dir).unwrap().mode() & 0o7777;
        assert_eq!(
            mode, 0o1777,
            "{way:?}: the daemon changed the folder's mode"
        );
        assert!(!dir.join("agentd.sock").exists(), "{way:?}");
    }

    // The fallback folder the daemon makes itself is private, and served.
    let (mut command, dir) = daemon_at(SocketWay::TmpdirFallback, root.path(), "fresh");
    let mut child = command.spawn().unwrap();
    let socket = dir.join("agentd.sock");
    let what = format!("a socket at {}", socket.display());
    eventually(Duration::from_secs(10), &what, async || {
        assert!(child.try_wait().unwrap().is_none(), "the daemon exited");
        tokio::net::UnixStream::connect(&socket).await.map(drop)
    })
    .await;
    assert_eq!(std::fs::metadata(&dir).unwrap().mode() & 0o7777, 0o700);
    child.kill().await.unwrap();

    // A private folder that belongs to another user.
    if !agentd_testkit::other_user::can_switch_user("the other-owner case") {
        return;
    }
    let other = agentd_testkit::other_user::OTHER_UID;
    for (i, way) in [SocketWay::TmpdirFallback, SocketWay::Flag]
        .into_iter()
        .enumerate()
    {
        let (command, dir) = daemon_at(way, root.path(), &format!("foreign-{i}"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::os::unix::fs::chown(&dir, Some(other), Some(other)).unwrap();
        let stderr = refused_start(command).await;
        assert!(
            stderr.contains(&dir.display().to_string())
                && stderr.contains(&format!("belongs to uid {other}")),
            "{way:?}: {stderr}"
        );
        let meta = std::fs::metadata(&dir).unwrap();
        assert_eq!(
            (meta.uid(), meta.mode() & 0o7777),
            (other, 0o700),
            "{way:?}"
        );
    }
}

/// Run as another user by `clients_refuse_a_socket_served_by_another_user`.
#[test]
#[ignore = "a listener run as another user by clients_refuse_a_socket_served_by_another_user"]
fn foreign_listener() {
    agentd_testkit::other_user::listen_and_report();
}

/// A client checks whom it talks to (SO_PEERCRED) before it sends a byte: a socket served
/// by another user's process is refused with a clear error.
#[tokio::test]
async fn clients_refuse_a_socket_served_by_another_user() {
    use agentd_testkit::other_user::{ForeignListener, OTHER_UID, can_switch_user};
    if !can_switch_user("clients_refuse_a_socket_served_by_another_user") {
        return;
    }
    let listener = ForeignListener::start("security::foreign_listener").await;
    let error = match agent_proto::client::connect(listener.path()).await {
        Ok(_) => panic!("the client accepted a socket served by uid {OTHER_UID}"),
        Err(e) => e,
    };
    assert!(
        matches!(
            error,
            agent_proto::client::ConnectError::ForeignPeer {
                peer: OTHER_UID,
                ..
            }
        ),
        "{error}"
    );
    let text = error.to_string();
    assert!(
        text.contains(&format!("uid {OTHER_UID}")) && text.contains("nothing was sent"),
        "{text}"
    );
    assert_eq!(listener.received().await, 0, "the client sent bytes first");
}

/// Deleting `agentd.lock` (which older daemons locked) under a running daemon does not let
/// a second daemon open the same store: the lock is on the data directory itself.
#[tokio::test]
async fn deleting_the_lock_file_does_not_let_a_second_daemon_in() {
    let (_mock, daemon) = start().await;
    let lock_file = daemon.data_dir().join("agentd.lock");
    if lock_file.exists() {
        std::fs::remove_file(&lock_file).unwrap();
    }
    let other = tempfile::tempdir().unwrap();
    std::fs::set_permissions(other.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::write(other.path().join("empty.toml"), "").unwrap();
    let second_socket = other.path().join("second.sock");
    let mut command = tokio::process::Command::new(bin());
    command
        .arg("--socket")
        .arg(&second_socket)
        .arg("--data-dir")
        .arg(daemon.data_dir())
        .arg("--config")
        .arg(other.path().join("empty.toml"))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let stderr = refused_start(command).await;
    assert!(
        stderr.contains("another agentd is using the data dir")
            && stderr.contains(&daemon.data_dir().display().to_string()),
        "{stderr}"
    );
    assert!(!second_socket.exists());
    // The first daemon is unharmed.
    assert!(
        daemon
            .client()
            .await
            .list_agents(None, None, None, None, None)
            .await
            .is_ok()
    );
}

/// A daemon on a socket of its own with `data_dir` as its data dir.
fn daemon_with_data_dir(
    root: &std::path::Path,
    data_dir: &std::path::Path,
) -> tokio::process::Command {
    std::fs::write(root.join("empty.toml"), "").unwrap();
    let name = data_dir.file_name().unwrap().to_string_lossy().into_owned();
    let mut command = tokio::process::Command::new(bin());
    command
        .arg("--socket")
        .arg(root.join(format!("run-{name}")).join("agentd.sock"))
        .arg("--data-dir")
        .arg(data_dir)
        .arg("--config")
        .arg(root.join("empty.toml"))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    command
}

/// The data dir holds the database, and with it the MCP servers, hooks and agents the
/// daemon runs: one another user could write (a folder of theirs, or one group or others
/// may write, or a database file of theirs) is refused at start, naming it and what to do,
/// and left as it was. A folder the user made 0755 is fine.
#[tokio::test]
async fn data_dirs_and_databases_others_could_write_are_refused() {
    let root = tempfile::tempdir().unwrap();
    let uid = nix::unistd::geteuid().as_raw();
    for mode in [0o777, 0o775, 0o1777] {
        let dir = root.path().join(format!("open-{mode:o}"));
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(mode)).unwrap();
        let stderr = refused_start(daemon_with_data_dir(root.path(), &dir)).await;
        assert!(
            stderr.contains(&format!("data dir {} has mode {mode:04o}", dir.display()))
                && stderr.contains(&format!("chmod 700 {}", dir.display())),
            "{mode:o}: {stderr}"
        );
        assert_eq!(
            std::fs::metadata(&dir).unwrap().mode() & 0o7777,
            mode,
            "the daemon changed the folder's mode"
        );
        assert!(
            !dir.join("agentd.db").exists(),
            "{mode:o}: a database was made"
        );
    }
    let shared_db = root.path().join("shared-db");
    std::fs::create_dir(&shared_db).unwrap();
    std::fs::set_permissions(&shared_db, std::fs::Permissions::from_mode(0o700)).unwrap();
    let db = shared_db.join("agentd.db");
    std::fs::write(&db, b"").unwrap();
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o666)).unwrap();
    let stderr = refused_start(daemon_with_data_dir(root.path(), &shared_db)).await;
    assert!(
        stderr.contains(&format!("database file {} has mode 0666", db.display()))
            && stderr.contains(&format!("chmod 600 {}", db.display())),
        "{stderr}"
    );

    // A folder the user made 0755 is served (and stays 0755).
    let readable = root.path().join("readable");
    std::fs::create_dir(&readable).unwrap();
    std::fs::set_permissions(&readable, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut child = daemon_with_data_dir(root.path(), &readable)
        .spawn()
        .unwrap();
    let socket = root.path().join("run-readable").join("agentd.sock");
    eventually(Duration::from_secs(10), "the daemon's socket", async || {
        assert!(child.try_wait().unwrap().is_none(), "the daemon exited");
        tokio::net::UnixStream::connect(&socket).await.map(drop)
    })
    .await;
    assert_eq!(std::fs::metadata(&readable).unwrap().mode() & 0o7777, 0o755);
    child.kill().await.unwrap();

    // A folder, or a database, another user owns (a `nobody`-made database had a root
    // daemon start the MCP server it named).
    if !agentd_testkit::other_user::can_switch_user("the other-owner cases") {
        return;
    }
    let other = agentd_testkit::other_user::OTHER_UID;
    let foreign = root.path().join("foreign");
    std::fs::create_dir(&foreign).unwrap();
    std::fs::set_permissions(&foreign, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::os::unix::fs::chown(&foreign, Some(other), Some(other)).unwrap();
    let stderr = refused_start(daemon_with_data_dir(root.path(), &foreign)).await;
    assert!(
        stderr.contains(&format!(
            "data dir {} belongs to uid {other}, not to this user (uid {uid})",
            foreign.display()
        )) && stderr.contains(&format!("chown {uid} {}", foreign.display())),
        "{stderr}"
    );
    let meta = std::fs::metadata(&foreign).unwrap();
    assert_eq!((meta.uid(), meta.mode() & 0o7777), (other, 0o700));
    let planted = root.path().join("planted");
    std::fs::create_dir(&planted).unwrap();
    std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o700)).unwrap();
    let db = planted.join("agentd.db");
    std::fs::write(&db, b"").unwrap();
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::os::unix::fs::chown(&db, Some(other), Some(other)).unwrap();
    let stderr = refused_start(daemon_with_data_dir(root.path(), &planted)).await;
    assert!(
        stderr.contains(&format!(
            "database file {} belongs to uid {other}",
            db.display()
        )),
        "{stderr}"
    );
    assert_eq!(std::fs::metadata(&db).unwrap().uid(), other);
}
