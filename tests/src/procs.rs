//! Looking for processes a test started, through /proc (Linux).

use std::time::{Duration, Instant};

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
    loop {
        let left = with_marker(marker);
        if left.is_empty() {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < timeout,
            "processes with {marker:?} still running after {timeout:?}: {left:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
