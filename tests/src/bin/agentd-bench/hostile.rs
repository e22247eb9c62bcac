//! Answers a hostile (or broken) model can send: thousands of tool calls in one answer, and
//! an answer of hundreds of MiB of text. What they cost the daemon: CPU, peak memory, the
//! size of its database. The `[limits]` caps bound them; these figures show what is left.

use std::path::Path;
use std::time::Instant;

use agentd_testkit::mock_model::Reply;
use anyhow::{Context, bail};
use serde_json::json;

use crate::measure::{MIB, cpu_time, ms, peak_rss, rss};
use crate::scenarios::{create_agent, parts, pid_of, start_with_window};
use crate::wire::{Conn, Incoming};
use crate::{Bench, Figure};

/// 12. Hostile answers: one answer with 1,000 and one with 4,000 `read_file` calls (the
///     per-answer cap raised to let them all through; each call runs), the daemon's CPU
///     for the whole turn (a linear cost grows 4 times from the first to the second); then
///     a model streaming 400 MiB of text under the default caps: the daemon's peak RSS,
///     the data dir's size and what reached the client.
pub(crate) async fn hostile_answers(bench: &Bench) -> anyhow::Result<Vec<Figure>> {
    let mut figures = Vec::new();
    figures.extend(many_calls(bench, bench.size(1_000, 100), "12 hostile, 1,000 calls").await?);
    figures.extend(many_calls(bench, bench.size(4_000, 400), "12 hostile, 4,000 calls").await?);
    figures.extend(big_answer(bench, bench.size(400, 40)).await?);
    Ok(figures)
}

/// What the events of one run showed.
#[derive(Debug, Default)]
struct RunSeen {
    reason: String,
    text_bytes: usize,
    tool_results: usize,
    errors: Vec<String>,
}

/// Sends `text` and reads the run's events until `loopFinished`, whatever its reason.
async fn run_to_end(conn: &mut Conn, agent_id: &str, text: &str) -> anyhow::Result<RunSeen> {
    let id = conn
        .send("sendMessage", json!({"agentId": agent_id, "content": text}))
        .await?;
    let mut seen = RunSeen::default();
    loop {
        let event = match conn.next().await?.1 {
            Incoming::Response { id: got, result } if got == id => {
                result.map_err(|e| anyhow::anyhow!("sendMessage failed: {e}"))?;
                continue;
            }
            Incoming::Response { .. } => continue,
            Incoming::Event(event) => event,
        };
        match event.kind.as_str() {
            "textDelta" => seen.text_bytes += event.delta.as_deref().map_or(0, str::len),
            "toolResult" => seen.tool_results += 1,
            "error" => seen
                .errors
                .push(event.message.unwrap_or_default().to_string()),
            "loopFinished" => {
                seen.reason = event.reason.unwrap_or_default();
                return Ok(seen);
            }
            _ => {}
        }
    }
}

/// One answer of `calls` `read_file` calls, then a short text answer.
async fn many_calls(bench: &Bench, calls: usize, s: &'static str) -> anyhow::Result<Vec<Figure>> {
    let limits = format!("[limits]\nmax_tool_calls_per_answer = {calls}\n");
    let (mock, daemon) = start_with_window(bench, 10_000_000, &limits).await?;
    let pid = pid_of(&daemon)?;
    let workspace = tempfile::tempdir()?;
    std::fs::write(workspace.path().join("notes.txt"), "a short note\n")?;
    let path = std::fs::canonicalize(workspace.path())?;
    let mut conn = Conn::connect(daemon.socket()).await?;
    let id = create_agent(
        &mut conn,
        json!({"mode": "agent", "workspace": path.display().to_string()}),
    )
    .await?;
    conn.subscribe(Some(&id)).await?;
    let args = json!({"path": "notes.txt"}).to_string();
    let ids: Vec<String> = (0..calls).map(|n| format!("call_{n}")).collect();
    let script: Vec<(&str, &str, &str)> = ids
        .iter()
        .map(|id| (id.as_str(), "read_file", args.as_str()))
        .collect();
    mock.push(Reply::openai_tool_calls(&[], &script));
    mock.push(Reply::openai_text(&["Read them all."]));
    let cpu_before = cpu_time(pid)?;
    let started = Instant::now();
    let seen = run_to_end(&mut conn, &id, "Read the notes, many times.").await?;
    let wall = started.elapsed();
    let cpu = cpu_time(pid)? - cpu_before;
    if seen.reason != "completed" || seen.tool_results != calls {
        bail!(
            "the {calls}-call turn ended {:?} with {} results; errors: {:?}",
            seen.reason,
            seen.tool_results,
            seen.errors
        );
    }
    bench.keep_log(&daemon, "hostile-answers");
    Ok(vec![
        Figure::new(
            s,
            format!("daemon CPU, one answer of {calls} calls"),
            ms(cpu),
            "ms",
        ),
        Figure::new(s, "  per call", ms(cpu) / calls as f64, "ms"),
        Figure::new(s, "wall time of the turn", ms(wall), "ms"),
    ])
}

/// The size of every file under `dir`, in bytes.
fn size_of(dir: &Path) -> anyhow::Result<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))? {
        let entry = entry?;
        let meta = entry.metadata()?;
        total += if meta.is_dir() {
            size_of(&entry.path())?
        } else {
            meta.len()
        };
    }
    Ok(total)
}

/// A model streaming `mib` MiB of text in 64 KiB pieces, under the default caps.
async fn big_answer(bench: &Bench, mib: usize) -> anyhow::Result<Vec<Figure>> {
    let (mock, daemon) = start_with_window(bench, 10_000_000, "").await?;
    let pid = pid_of(&daemon)?;
    let mut conn = Conn::connect(daemon.socket()).await?;
    let id = create_agent(&mut conn, json!({})).await?;
    conn.subscribe(Some(&id)).await?;
    let piece = "lorem ipsum dolor sit amet ".repeat(64 * 1024 / 27 + 1);
    let piece = &piece[..64 * 1024];
    mock.push(Reply::openai_text(&parts(piece, mib * 16)));
    let idle = rss(pid)?;
    let cpu_before = cpu_time(pid)?;
    let started = Instant::now();
    let seen = run_to_end(&mut conn, &id, "Write forever.").await?;
    let wall = started.elapsed();
    let cpu = cpu_time(pid)? - cpu_before;
    let peak = peak_rss(pid)?;
    let stored = size_of(daemon.data_dir())?;
    bench.keep_log(&daemon, "hostile-answers");
    let s = "12 hostile, big answer";
    Ok(vec![
        Figure::new(s, "idle RSS before the answer", idle as f64 / MIB, "MiB"),
        Figure::new(
            s,
            format!("peak RSS (VmHWM) after {mib} MiB of streamed text"),
            peak as f64 / MIB,
            "MiB",
        ),
        Figure::new(s, "data dir size after it", stored as f64 / MIB, "MiB"),
        Figure::new(
            s,
            format!("text the client got (run ended {})", seen.reason),
            seen.text_bytes as f64 / MIB,
            "MiB",
        ),
        Figure::new(s, "daemon CPU of the turn", ms(cpu), "ms"),
        Figure::new(s, "wall time of the turn", ms(wall), "ms"),
    ])
}
