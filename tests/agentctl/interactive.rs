//! agentctl's long-running commands: `watch` across a daemon restart and a
//! `resyncRequired`.

use std::process::Stdio;
use std::time::Duration;

use agentd_testkit::daemon::TestDaemon;
use agentd_testkit::mock_model::Reply;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, Command};

use super::{agentctl, ctl, start, stdout};

/// How long one awaited line of agentctl may take.
const LINE_WAIT: Duration = Duration::from_secs(20);

/// Reads lines until one contains `needle` and returns it; panics (with the lines read)
/// when the stream ends or [`LINE_WAIT`] passes first.
async fn line_with(lines: &mut Lines<impl AsyncBufRead + Unpin>, needle: &str) -> String {
    let mut seen = Vec::new();
    let found = tokio::time::timeout(LINE_WAIT, async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if line.contains(needle) {
                return Some(line);
            }
            seen.push(line);
        }
        None
    })
    .await;
    match found {
        Ok(Some(line)) => line,
        Ok(None) => panic!("the output ended before {needle:?}; read: {seen:?}"),
        Err(_) => panic!("no {needle:?} within {LINE_WAIT:?}; read: {seen:?}"),
    }
}

fn spawn(daemon: &TestDaemon, args: &[&str]) -> Child {
    Command::new(agentctl())
        .arg("--socket")
        .arg(daemon.socket())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap()
}

#[tokio::test]
async fn watch_follows_the_agent_through_a_daemon_restart() {
    let (mock, mut daemon) = start().await;
    let id = stdout(&ctl(&daemon, &["agents", "create"]).await)
        .trim()
        .to_owned();
    let mut watch = spawn(&daemon, &["watch", &id]);
    let mut out = BufReader::new(watch.stdout.take().unwrap()).lines();
    let mut err = BufReader::new(watch.stderr.take().unwrap()).lines();
    line_with(&mut err, "watching agent").await;
    mock.push(Reply::openai_text(&["before"]));
    assert!(ctl(&daemon, &["send", &id, "one"]).await.status.success());
    let last = line_with(&mut out, " loopFinished ").await;
    let seq: u64 = last[1..last.find(']').unwrap()].parse().unwrap();

    daemon.terminate().await;
    line_with(&mut err, "the daemon closed the connection").await;
    daemon.restart().await;
    let resumed = line_with(&mut err, "reconnected to agentd").await;
    assert_eq!(
        resumed,
        format!("reconnected to agentd; resuming after seq {seq}")
    );

    mock.push(Reply::openai_text(&["after"]));
    assert!(ctl(&daemon, &["send", &id, "two"]).await.status.success());
    let next = line_with(&mut out, "").await;
    assert!(
        next.starts_with(&format!("[{}] ", seq + 1)),
        "the first event after the restart follows the last one seen: {next}"
    );
    line_with(&mut out, "textDelta \"after\"").await;
}

#[tokio::test]
async fn watch_says_when_it_must_resync_and_goes_on() {
    let (mock, daemon) = start().await;
    let id = stdout(&ctl(&daemon, &["agents", "create"]).await)
        .trim()
        .to_owned();
    // A seq the agent never reached: the daemon cannot replay from there.
    let mut watch = spawn(&daemon, &["watch", &id, "--since", "999"]);
    let mut out = BufReader::new(watch.stdout.take().unwrap()).lines();
    let mut err = BufReader::new(watch.stderr.take().unwrap()).lines();
    line_with(&mut err, "watching agent").await;
    let said = line_with(&mut err, "resync required").await;
    assert!(said.contains(&format!("agentctl messages {id}")), "{said}");
    line_with(&mut out, " resyncRequired ").await;
    mock.push(Reply::openai_text(&["live"]));
    assert!(ctl(&daemon, &["send", &id, "x"]).await.status.success());
    line_with(&mut out, "textDelta \"live\"").await;
}
