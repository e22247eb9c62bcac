//! 13. What the OS sandbox costs a command: `true` run as the bash tool runs it (through
//!     the daemon's binary as the child guard, `bash --noprofile --norc -c true`), with and
//!     without the sandbox (the launcher, Landlock's rules, the seccomp filter), in
//!     alternating runs. The data dir sits where the daemon keeps it by default
//!     (`~/.local/share/...`), so the rules are cut around it as on a user's machine.
//!
//! The figure to hold is the difference of the medians: DESIGN.md section 14 wants the
//! sandbox's setup under 5 ms a command.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;

use crate::{Bench, Figure, Target};

/// The daemon's hidden arguments (agentd's `tools::process`): its binary as the child
/// guard, and the sandbox launcher's probe.
const GUARD_ARG: &str = "__agentd-child-guard";
const PROBE: [&str; 2] = ["__agentd-sandbox", "--probe"];

pub(crate) async fn sandbox(bench: &Bench) -> anyhow::Result<Vec<Figure>> {
    let runs = bench.size(100, 20);
    let probe = std::process::Command::new(&bench.agentd)
        .args(PROBE)
        .output()?;
    anyhow::ensure!(
        probe.status.success(),
        "the sandbox is not available here: {}",
        String::from_utf8_lossy(&probe.stderr)
    );
    // Where a user's data dir is: under ~/.local/share (else a temp dir).
    let parent = std::env::var_os("HOME")
        .map(|h| PathBuf::from(h).join(".local/share"))
        .filter(|p| p.is_dir())
        .unwrap_or_else(std::env::temp_dir);
    let data = tempfile::Builder::new()
        .prefix("agentd-bench-")
        .tempdir_in(&parent)
        .context("cannot make a data dir")?;
    let data_dir = std::fs::canonicalize(data.path())?;
    let workspace = tempfile::tempdir().context("cannot make a workspace")?;
    let tmpdir = data_dir.join("tmp/bench");
    std::fs::create_dir_all(&tmpdir)?;
    // As the daemon writes it (agentd's `tools::process::Confinement`).
    let spec = serde_json::json!({
        "writable": [tmpdir, std::fs::canonicalize(workspace.path())?],
        "hidden": [data_dir],
        "readable": [data_dir.join("sessions/bench")],
        "network": false,
    })
    .to_string();
    let mut plain = Vec::with_capacity(runs);
    let mut confined = Vec::with_capacity(runs);
    for _ in 0..runs {
        plain.push(one(bench, workspace.path(), &tmpdir, "-").await?);
        confined.push(one(bench, workspace.path(), &tmpdir, &spec).await?);
    }
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let s = "13 sandbox";
    let (plain_median, confined_median) = (median(&mut plain), median(&mut confined));
    Ok(vec![
        Figure::new(
            s,
            "`true` through the guard, no sandbox (median)",
            ms(plain_median),
            "ms",
        ),
        Figure::new(
            s,
            "`true` through the guard, in the sandbox (median)",
            ms(confined_median),
            "ms",
        ),
        Figure::new(
            s,
            "`true` in the sandbox (p90)",
            ms(percentile(&confined, 0.9)),
            "ms",
        ),
        Figure::new(
            s,
            "sandbox setup per command (difference of the medians)",
            ms(confined_median.saturating_sub(plain_median)),
            "ms",
        )
        .target(Target::Below(5.0)),
    ])
}

/// One `true` as the daemon runs a command (guard, then the launcher when `spec` is not
/// `-`, then bash), from the spawn to its end.
async fn one(
    bench: &Bench,
    workspace: &Path,
    tmpdir: &Path,
    spec: &str,
) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let status = tokio::process::Command::new(&bench.agentd)
        .arg(GUARD_ARG)
        .arg(std::process::id().to_string())
        .arg("-")
        .arg(spec)
        .args(["/usr/bin/bash", "--noprofile", "--norc", "-c", "true"])
        .env("TMPDIR", tmpdir)
        .current_dir(workspace)
        .process_group(0)
        .stdin(std::process::Stdio::null())
        .status()
        .await?;
    let took = started.elapsed();
    anyhow::ensure!(status.success(), "`true` ended with {status}");
    Ok(took)
}

fn median(values: &mut [Duration]) -> Duration {
    values.sort_unstable();
    values[values.len() / 2]
}

/// `values` sorted already.
fn percentile(values: &[Duration], p: f64) -> Duration {
    let at = ((values.len() as f64 - 1.0) * p).round() as usize;
    values[at.min(values.len() - 1)]
}
