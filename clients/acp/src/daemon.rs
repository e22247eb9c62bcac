//! Reaching the daemon: connect to its socket (the typed client checks that a process of
//! this user serves it), and when nothing answers, start one in the background with the
//! same socket, data dir and config, and wait for it.
//!
//! The daemon started here is detached: its own process group, no terminal, stdin closed,
//! its output appended to `agentd.log` beside the socket; it outlives the editor, as a
//! daemon started by hand would.

use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use agent_proto::client::{Client, ConnectError};

/// How long a daemon started here may take to accept connections.
const START_WAIT: Duration = Duration::from_secs(15);

/// Where the daemon is, and how to start one.
#[derive(Debug, Clone)]
pub struct DaemonOptions {
    pub socket: PathBuf,
    /// Passed on to a daemon started here (else it resolves them as this process would:
    /// the same environment).
    pub data_dir: Option<PathBuf>,
    pub config: Option<PathBuf>,
    /// Start a daemon when none answers.
    pub start: bool,
    /// The `agentd` binary to start (default: this program).
    pub program: Option<PathBuf>,
}

/// Why the daemon could not be reached.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error(transparent)]
    Connect(#[from] ConnectError),
    #[error("cannot start agentd ({program}): {source}")]
    Spawn {
        program: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "agentd exited ({status}) before it accepted connections; its log ({log}) ends with:\n{tail}"
    )]
    Exited {
        status: std::process::ExitStatus,
        log: PathBuf,
        tail: String,
    },
    #[error("agentd did not accept connections on {socket} within {START_WAIT:?}; see {log}")]
    Timeout { socket: PathBuf, log: PathBuf },
}

/// A client of the daemon, started first if none answers (and `options.start`). The pid
/// of a daemon started here is returned too.
pub async fn connect_or_start(
    options: &DaemonOptions,
) -> Result<(Client, Option<u32>), DaemonError> {
    match agent_proto::client::connect(&options.socket).await {
        Ok(client) => return Ok((client, None)),
        Err(ConnectError::Unreachable { .. }) if options.start => {}
        Err(e) => return Err(e.into()),
    }
    let (mut child, log) = spawn(options)?;
    let pid = child.id();
    let deadline = Instant::now() + START_WAIT;
    loop {
        match agent_proto::client::connect(&options.socket).await {
            Ok(client) => return Ok((client, Some(pid))),
            Err(ConnectError::Unreachable { .. }) => {}
            Err(e) => return Err(e.into()),
        }
        // Exited: another daemon may have won a race to the socket; else it failed.
        if let Ok(Some(status)) = child.try_wait() {
            if let Ok(client) = agent_proto::client::connect(&options.socket).await {
                return Ok((client, None));
            }
            return Err(DaemonError::Exited {
                status,
                tail: tail(&log),
                log,
            });
        }
        if Instant::now() >= deadline {
            return Err(DaemonError::Timeout {
                socket: options.socket.clone(),
                log,
            });
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Starts `agentd` detached; returns the child (only to see it exit early) and its log.
fn spawn(options: &DaemonOptions) -> Result<(std::process::Child, PathBuf), DaemonError> {
    let program = match &options.program {
        Some(p) => p.clone(),
        None => std::env::current_exe().map_err(|source| DaemonError::Spawn {
            program: PathBuf::from("agentd"),
            source,
        })?,
    };
    let spawn_error = |source| DaemonError::Spawn {
        program: program.clone(),
        source,
    };
    // The daemon makes the socket's folder itself (0700, checked); making it first, the
    // same way, gives its log a private place.
    let dir = options.socket.parent().unwrap_or(Path::new("/"));
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(spawn_error)?;
    let log = dir.join("agentd.log");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(&log)
        .map_err(spawn_error)?;
    let err = file.try_clone().map_err(spawn_error)?;
    let mut command = std::process::Command::new(&program);
    command.arg("--socket").arg(&options.socket);
    if let Some(d) = &options.data_dir {
        command.arg("--data-dir").arg(d);
    }
    if let Some(c) = &options.config {
        command.arg("--config").arg(c);
    }
    command
        .stdin(Stdio::null())
        .stdout(file)
        .stderr(err)
        // Its own group: a signal to the editor's process group does not reach it.
        .process_group(0);
    let child = command.spawn().map_err(spawn_error)?;
    Ok((child, log))
}

/// The last lines of a log, for an error message.
fn tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}
