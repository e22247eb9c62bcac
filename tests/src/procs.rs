//! Looking for processes a test started, through /proc (Linux).

use std::time::{Duration, Instant};

use crate::wait::eventually;

/// Pids of live (not zombie) processes whose command line contains `marker`.
pub fn with_marker(marker: &str) -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let me = std::process::id();
    dir.flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != me)
        .filter(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let zombie = stat
                .rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'));
            cmdline.contains(marker) && !zombie
        })
        .collect()
}

/// Waits until no live process carries `marker`; returns how long that took, or panics
/// with the pids still there after `timeout`.
pub async fn wait_gone(marker: &str, timeout: Duration) -> Duration {
    let started = Instant::now();
    let what = format!("no live process with {marker:?}");
    eventually(timeout, &what, async || {
        let left = with_marker(marker);
        if left.is_empty() { Ok(()) } else { Err(left) }
    })
    .await;
    started.elapsed()
}

/// Waits until at least `count` live processes carry `marker` and returns their pids;
/// panics after `timeout` saying `what` was awaited ("the tool to start") and which
/// processes there were.
pub async fn wait_running(marker: &str, count: usize, timeout: Duration, what: &str) -> Vec<u32> {
    let what = format!("{what} ({count} live process(es) with {marker:?})");
    eventually(timeout, &what, async || {
        let running = with_marker(marker);
        if running.len() >= count {
            Ok(running)
        } else {
            Err(running)
        }
    })
    .await
}
