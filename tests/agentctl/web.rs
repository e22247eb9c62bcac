//! agentctl over the daemon's WebSocket listener: `--url` / `AGENTD_URL` with the token
//! in `AGENTD_TOKEN`, and `watch` resuming over it after a restart.

use std::time::Duration;

use agentd_testkit::daemon::{DaemonOptions, TestDaemon, openai_config};
use agentd_testkit::mock_model::{MockModel, Reply};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

use super::{agentctl, agentd, stderr, stdout};

/// A daemon listening on a fixed free port (kept across restarts) too.
async fn start_listening() -> (MockModel, TestDaemon) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mock = MockModel::start().await;
    let options = DaemonOptions {
        config_toml: openai_config(&mock.url()),
        env: vec![("AGENTD_LISTEN".into(), format!("127.0.0.1:{port}"))],
    };
    (mock, TestDaemon::start_with(&agentd(), options).await)
}

/// agentctl with only the URL and the token: no socket to fall back on.
fn over_web(daemon: &TestDaemon, token: &str) -> Command {
    let mut command = Command::new(agentctl());
    command
        .env_remove("AGENTD_SOCKET")
        .env("XDG_RUNTIME_DIR", "/nonexistent")
        .env("AGENTD_URL", daemon.ws_url())
        .env("AGENTD_TOKEN", token);
    command
}

#[tokio::test]
async fn agentctl_sends_and_watches_over_the_websocket() {
    let (mock, mut daemon) = start_listening().await;
    let token = daemon.listen_token();
    let created = over_web(&daemon, &token)
        .args(["agents", "create"])
        .output()
        .await
        .unwrap();
    assert!(created.status.success(), "{}", stderr(&created));
    let id = stdout(&created).trim().to_owned();

    mock.push(Reply::openai_text(&["over ", "the web"]));
    let sent = over_web(&daemon, &token)
        .args(["send", &id, "hi"])
        .output()
        .await
        .unwrap();
    assert!(sent.status.success(), "{}", stderr(&sent));
    assert!(stdout(&sent).contains("over the web"), "{}", stdout(&sent));

    // A wrong token and no token: refused with what to do, exit 4 and 1.
    let wrong = over_web(&daemon, &"0".repeat(64))
        .args(["agents", "list"])
        .output()
        .await
        .unwrap();
    assert_eq!(wrong.status.code(), Some(4), "{}", stderr(&wrong));
    assert!(
        stderr(&wrong).contains("refused the token"),
        "{}",
        stderr(&wrong)
    );
    let none = over_web(&daemon, "")
        .args(["agents", "list"])
        .output()
        .await
        .unwrap();
    assert_eq!(none.status.code(), Some(1), "{}", stderr(&none));
    assert!(stderr(&none).contains("AGENTD_TOKEN"), "{}", stderr(&none));

    // watch over the WebSocket survives a restart and resumes after the last seq.
    let mut watch = over_web(&daemon, &token)
        .args(["watch", &id])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(watch.stdout.take().unwrap()).lines();
    let mut notes = BufReader::new(watch.stderr.take().unwrap()).lines();
    let mut next_note = async || {
        tokio::time::timeout(Duration::from_secs(20), notes.next_line())
            .await
            .expect("watch says something within 20 s")
            .unwrap()
            .expect("watch is still running")
    };
    assert_eq!(
        next_note().await,
        format!("watching agent {id}; Ctrl-C to stop")
    );
    let mut next_line = async |what: &str| loop {
        let line = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
            .await
            .expect("watch output within 10 s")
            .unwrap()
            .expect("watch is still running");
        if line.contains(what) {
            break;
        }
    };
    mock.push(Reply::openai_text(&["before the restart"]));
    let sent = over_web(&daemon, &token)
        .args(["send", &id, "once"])
        .output()
        .await
        .unwrap();
    assert!(sent.status.success(), "{}", stderr(&sent));
    next_line("loopFinished completed").await;
    daemon.terminate().await;
    daemon.restart().await;
    loop {
        let note = next_note().await;
        if note.starts_with("reconnected to agentd; resuming after seq") {
            break;
        }
    }
    mock.push(Reply::openai_text(&["after the restart"]));
    let sent = over_web(&daemon, &token)
        .args(["send", &id, "again"])
        .output()
        .await
        .unwrap();
    assert!(sent.status.success(), "{}", stderr(&sent));
    next_line("textDelta \"after the restart\"").await;
}
