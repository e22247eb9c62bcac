//! agentctl's long-running commands: `chat` driven through stdin, and `watch` across a
//! daemon restart and a `resyncRequired`.

use std::process::Stdio;
use std::time::Duration;

use agentd_testkit::daemon::TestDaemon;
use agentd_testkit::mock_model::Reply;
use agentd_testkit::wait::eventually;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, Command};

use super::{agent_in_workspace, agentctl, ctl, start, stderr, stdout};

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
async fn chat_reads_lines_answers_prompts_and_quits() {
    let (mock, daemon) = start().await;
    let workspace = tempfile::tempdir().unwrap();
    let id = agent_in_workspace(&daemon, workspace.path()).await;
    mock.push(Reply::openai_text(&["Hello", " there."]));
    mock.push(Reply::openai_tool_calls(
        &["Running. "],
        &[("c1", "bash", r#"{"command": "echo from-chat"}"#)],
    ));
    mock.push(Reply::openai_text(&["It printed from-chat."]));

    let mut chat = spawn(&daemon, &["chat", &id[..30]]);
    let mut stdin = chat.stdin.take().unwrap();
    // A line at the prompt, an empty line (nothing sent), a line whose run asks
    // permission, the answer to that prompt, and /quit: each read when it is needed.
    stdin
        .write_all(b"hi\n\nrun the echo\ny\n/quit\nnever sent\n")
        .await
        .unwrap();
    drop(stdin);
    let out = tokio::time::timeout(Duration::from_secs(60), chat.wait_with_output())
        .await
        .expect("chat ends at /quit")
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "Hello there.\nRunning. It printed from-chat.\n",
        "{}",
        stderr(&out)
    );
    let err = stderr(&out);
    assert!(
        err.starts_with(&format!("chatting with agent {id};")),
        "{err}"
    );
    assert!(
        err.contains("\nallow ") && err.contains("[y]es / [n]o"),
        "{err}"
    );
    assert!(err.contains("from-chat\n    exit code: 0"), "{err}");
    let requests = mock.requests();
    assert_eq!(
        requests.len(),
        3,
        "the empty line and what followed /quit are not sent"
    );
    assert!(requests[2].body_text.contains("from-chat"));
}

#[tokio::test]
async fn chat_ends_at_the_end_of_input() {
    let (mock, daemon) = start().await;
    let id = stdout(&ctl(&daemon, &["agents", "create"]).await)
        .trim()
        .to_owned();
    mock.push(Reply::openai_text(&["only answer"]));
    let mut chat = spawn(&daemon, &["chat", &id]);
    let mut stdin = chat.stdin.take().unwrap();
    stdin.write_all(b"one line\n").await.unwrap();
    drop(stdin);
    let out = tokio::time::timeout(Duration::from_secs(60), chat.wait_with_output())
        .await
        .expect("chat ends at the end of input")
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "only answer\n");
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

#[tokio::test]
async fn send_queues_and_steers_into_a_busy_agent_and_compact_summarizes() {
    let (mock, daemon) = start().await;
    let workspace = tempfile::tempdir().unwrap();
    let id = agent_in_workspace(&daemon, workspace.path()).await;
    mock.push(Reply::openai_tool_calls(
        &[],
        &[("c1", "bash", r#"{"command": "echo hi"}"#)],
    ));
    // The run stops at the prompt (no terminal to ask at, no --yes).
    let first = ctl(&daemon, &["send", &id, "say hi"]).await;
    assert_eq!(first.status.code(), Some(3), "{}", stderr(&first));
    let refused = ctl(&daemon, &["send", &id, "next"]).await;
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        stderr(&refused).contains("invalidState"),
        "{}",
        stderr(&refused)
    );

    let steered = ctl(&daemon, &["send", "--steer", &id, "be brief"]).await;
    assert!(steered.status.success(), "{}", stderr(&steered));
    assert!(stdout(&steered).starts_with("steered into the running turn"));
    // Queued: it waits for its turn, then prints its answer.
    let queued = spawn(&daemon, &["send", "--queue", &id, "then this"]);
    let listed = eventually(Duration::from_secs(20), "both queued", async || {
        let out = stdout(&ctl(&daemon, &["queue", &id]).await);
        (out.lines().count() == 2).then_some(out)
    })
    .await;
    let kinds: Vec<&str> = listed
        .lines()
        .map(|l| l.split_whitespace().nth(1).unwrap())
        .collect();
    assert_eq!(kinds, ["steer", "queue"], "{listed}");

    mock.push(Reply::openai_text(&["hi, briefly"]));
    mock.push(Reply::openai_text(&["this is done"]));
    let session = ctl(&daemon, &["--json", "session", &id]).await;
    let session: serde_json::Value = serde_json::from_str(stdout(&session).trim()).unwrap();
    let prompt = &session["pendingPermissions"][0];
    let permit = ctl(
        &daemon,
        &[
            "permit",
            prompt["messageId"].as_str().unwrap(),
            prompt["toolCallId"].as_str().unwrap(),
            "allow",
        ],
    )
    .await;
    assert!(permit.status.success(), "{}", stderr(&permit));
    let out = tokio::time::timeout(Duration::from_secs(60), queued.wait_with_output())
        .await
        .expect("the queued send ends with its turn")
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "this is done\n");
    assert!(stderr(&out).contains("queued"), "{}", stderr(&out));
    let requests = mock.requests();
    assert!(requests[1].body_text.contains("be brief"));

    mock.push(Reply::openai_text(&["A SUMMARY"]));
    let compact = ctl(&daemon, &["compact", &id]).await;
    assert!(compact.status.success(), "{}", stderr(&compact));
    assert!(
        stdout(&compact).starts_with("2 messages folded into a summary"),
        "{}",
        stdout(&compact)
    );
    let empty = ctl(&daemon, &["queue", &id, "--clear"]).await;
    assert_eq!(stdout(&empty), "dropped 0\n");
}
