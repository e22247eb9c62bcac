//! A running `bash` command's output reaches clients as `toolProgress` events with
//! `output`, in order, before the call's `toolResult`, which is unchanged: stderr marked,
//! characters never split, capped per call, nothing for a silent command.

use agentd_testkit::send::SendByName;
use std::time::Duration;

use agent_proto::client::Subscription;
use agent_proto::rpc::AgentRpcClient;
use agent_proto::{Event, EventKind, OutputStream, ToolCallStatus};
use agentd_testkit::events::{collect_run, collect_until};
use agentd_testkit::mock_model::Reply;
use agentd_testkit::scenario::{RunningAgent, bash_call};

use crate::common::{ALLOW_ALL, tool_result_of, tool_scenario, ws};

const WAIT: Duration = Duration::from_secs(60);

/// The call's live output events in order: (stream, text, progress), and the notes
/// (`message`) among them.
fn live_of(events: &[Event], call: &str) -> (Vec<(OutputStream, String, f64)>, Vec<String>) {
    let mut output = Vec::new();
    let mut notes = Vec::new();
    for e in events {
        if let EventKind::ToolProgress {
            tool_call_id,
            progress,
            message,
            output: live,
            ..
        } = &e.kind
            && tool_call_id == call
        {
            match (live, message) {
                (Some(live), _) => output.push((live.stream, live.text.clone(), *progress)),
                (None, Some(note)) => notes.push(note.clone()),
                (None, None) => panic!("a toolProgress with neither output nor message"),
            }
        }
    }
    (output, notes)
}

/// What one stream showed live, joined.
fn joined(output: &[(OutputStream, String, f64)], stream: OutputStream) -> String {
    output
        .iter()
        .filter(|(s, _, _)| *s == stream)
        .map(|(_, t, _)| t.as_str())
        .collect()
}

/// `progress` is the bytes of text sent so far: each event adds its own text's length.
fn assert_progress_counts_the_text(output: &[(OutputStream, String, f64)]) {
    let mut sent = 0usize;
    for (_, text, progress) in output {
        sent += text.len();
        assert_eq!(*progress, sent as f64, "progress after {text:?}");
    }
}

/// The seq of the call's `toolResult`.
fn result_seq(events: &[Event], call: &str) -> u64 {
    events
        .iter()
        .find(|e| matches!(&e.kind, EventKind::ToolResult { tool_call_id, .. } if tool_call_id == call))
        .map(|e| e.seq)
        .expect("the call's toolResult")
}

async fn subscribe(s: &RunningAgent) -> Subscription<Event> {
    s.client
        .subscribe_events(Some(s.agent.id.clone()), None, None)
        .await
        .unwrap()
}

/// Runs `command` as one bash call with every tool allowed; the run's events.
async fn run(s: &RunningAgent, command: &str) -> Vec<Event> {
    s.mock.push(bash_call("c", command));
    s.mock.push(Reply::openai_text(&["done"]));
    let mut sub = subscribe(s).await;
    s.client
        .send_plain(s.agent.id.clone(), "go".into())
        .await
        .unwrap();
    collect_run(&mut sub, WAIT).await
}

#[tokio::test]
async fn output_arrives_while_the_command_runs_in_order_with_stderr_marked() {
    let s = tool_scenario(ALLOW_ALL).await;
    // The command waits for the test: its first lines can only be seen while it runs.
    let command = "echo line1; echo warn1 >&2; while [ ! -e go-on ]; do sleep 0.05; done; \
                   for i in 2 3; do echo line$i; sleep 0.2; done; echo warn2 >&2";
    s.mock.push(bash_call("c", command));
    s.mock.push(Reply::openai_text(&["done"]));
    let mut sub = subscribe(&s).await;
    let sent = s
        .client
        .send_plain(s.agent.id.clone(), "go".into())
        .await
        .unwrap();
    // A loop is not a plain command: it is asked even with execute allowed.
    collect_run(&mut sub, WAIT).await;
    s.client
        .handle_permission_response(
            sent.assistant_message_id,
            "c".into(),
            true,
            None,
            Some(agent_proto::Remember::Once),
        )
        .await
        .unwrap();
    let mut shown = String::new();
    let mut events = collect_until(&mut sub, WAIT, |e| {
        if let EventKind::ToolProgress {
            output: Some(o), ..
        } = &e.kind
            && o.stream == OutputStream::Stdout
        {
            shown.push_str(&o.text);
        }
        shown.contains("line1\n")
    })
    .await;
    assert!(
        !events
            .iter()
            .any(|e| matches!(e.kind, EventKind::ToolResult { .. })),
        "the command is still waiting"
    );
    std::fs::write(ws(&s.agent).join("go-on"), "").unwrap();
    events.extend(collect_run(&mut sub, WAIT).await);

    let (output, notes) = live_of(&events, "c");
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(
        joined(&output, OutputStream::Stdout),
        "line1\nline2\nline3\n"
    );
    assert_eq!(joined(&output, OutputStream::Stderr), "warn1\nwarn2\n");
    assert_progress_counts_the_text(&output);
    let progress_seqs: Vec<u64> = events
        .iter()
        .filter(|e| matches!(e.kind, EventKind::ToolProgress { .. }))
        .map(|e| e.seq)
        .collect();
    let result = result_seq(&events, "c");
    assert!(
        progress_seqs.iter().all(|seq| *seq < result),
        "output before the result"
    );
    // The result is the whole output as before, stdout then stderr.
    let (status, content, _) = tool_result_of(&events, "c");
    assert_eq!(status, ToolCallStatus::Success);
    assert!(
        content.starts_with("line1\nline2\nline3\n[stderr]\nwarn1\nwarn2\n"),
        "{content}"
    );
}

#[tokio::test]
async fn a_flood_is_cut_at_the_call_cap_with_one_notice_and_a_silent_command_sends_nothing() {
    let s = tool_scenario(ALLOW_ALL).await;
    let events = run(&s, "yes | head -c 5000000").await;
    let (output, notes) = live_of(&events, "c");
    let shown = joined(&output, OutputStream::Stdout);
    assert_eq!(shown.len(), 1024 * 1024, "the per-call cap");
    assert!(shown.bytes().all(|b| b == b'y' || b == b'\n'));
    assert!(
        output.iter().all(|(_, text, _)| text.len() <= 8 * 1024),
        "the per-event cap"
    );
    assert_progress_counts_the_text(&output);
    assert_eq!(notes.len(), 1, "one notice: {notes:?}");
    assert!(notes[0].contains("live output stops"), "{notes:?}");
    let (status, content, offload) = tool_result_of(&events, "c");
    assert_eq!(status, ToolCallStatus::Success);
    assert!(
        offload.is_some(),
        "the result keeps its own caps: {content}"
    );

    let events = run(&s, "true").await;
    assert!(
        !events
            .iter()
            .any(|e| matches!(e.kind, EventKind::ToolProgress { .. })),
        "nothing for a silent command"
    );
}

#[tokio::test]
async fn characters_split_across_reads_arrive_whole() {
    let s = tool_scenario(ALLOW_ALL).await;
    // "é" and "😀" written a byte at a time, with a pause between the bytes so the daemon
    // reads them apart; and a byte that is not UTF-8.
    let command =
        r"printf 'a\xc3'; sleep 0.2; printf '\xa9b\xf0\x9f'; sleep 0.2; printf '\x98\x80c\xffd\n'";
    let events = run(&s, command).await;
    let (output, _) = live_of(&events, "c");
    assert_eq!(
        joined(&output, OutputStream::Stdout),
        "a\u{e9}b\u{1f600}c\u{fffd}d\n"
    );
    assert_progress_counts_the_text(&output);
}
