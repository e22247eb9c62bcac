//! A stdio server's process: started by `tools::process` (the environment `tools::env`
//! allows, its own process group, the guard), its stderr kept as a short tail, and
//! stopped with SIGTERM then SIGKILL.

use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncBufReadExt;

use super::{STDERR_LINES, Server};
use crate::tools::process::{ProcessGroup, ProcessLauncher};

/// A stdio server's process (in its own process group, so its children go with it; the
/// group dies when this is dropped).
pub(super) struct Child {
    pub(super) group: ProcessGroup,
}

impl Child {
    /// SIGTERM to the group, SIGKILL after 2 s.
    pub(super) async fn stop(self) {
        use nix::sys::signal::Signal;
        if !self.group.signal(Signal::SIGTERM) {
            return; // gone already
        }
        for _ in 0..20 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            if !self.group.alive() {
                return;
            }
        }
        // Dropping the group kills what is left of it.
    }
}

pub(super) fn spawn_stdio(
    server: &Arc<Server>,
    processes: &ProcessLauncher,
) -> Result<(rmcp::transport::TokioChildProcess, Child), String> {
    let spec = &server.spec;
    let program = spec.command.clone().unwrap_or_default();
    let command = processes.mcp_command(
        &program,
        &spec.args,
        &spec.env,
        spec.cwd.as_deref().map(Path::new),
    )?;
    let (transport, stderr) = rmcp::transport::TokioChildProcess::builder(command)
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {program:?}: {e}"))?;
    let pid = transport
        .id()
        .ok_or_else(|| format!("{program:?} exited at once"))?;
    let group = processes.track(pid);
    if let Some(stderr) = stderr {
        let weak = Arc::downgrade(server);
        tokio::spawn(async move {
            let mut lines = tokio::io::BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let Some(server) = weak.upgrade() else {
                    return;
                };
                tracing::debug!(server = server.spec.name, "stderr: {line}");
                let mut st = server.lock();
                if st.stderr.len() == STDERR_LINES {
                    st.stderr.pop_front();
                }
                st.stderr.push_back(line.chars().take(500).collect());
            }
        });
    }
    Ok((transport, Child { group }))
}
