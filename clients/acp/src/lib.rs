//! `agentd acp`: agentd as an Agent Client Protocol (ACP v1) agent for editors.
//!
//! An editor (Zed, JetBrains, Neovim's CodeCompanion, ...) runs `agentd acp` as its agent
//! command and speaks ACP on its stdin/stdout (newline-delimited JSON-RPC). This crate is a
//! client of the daemon's socket like agentctl: each ACP session is an agentd agent, so the
//! same conversation shows in every client at once. If no daemon answers, one is started in
//! the background (detached, same socket, data dir and config) and waited for.
//!
//! The ACP side uses the `agent-client-protocol` crate's types and connection; this crate
//! only maps (`convert`), drives one session's events (`session`), answers the methods
//! (`bridge`) and reaches the daemon (`daemon`). The `agentd` binary dispatches its `acp`
//! subcommand here; the daemon library does not depend on this crate.
//!
//! Nothing but ACP goes to stdout; diagnostics go to stderr, which editors keep as the
//! agent's log.

mod bridge;
pub mod convert;
pub mod daemon;
mod session;

use agent_client_protocol::ByteStreams;
use tokio_util::compat::{TokioAsyncReadCompatExt, TokioAsyncWriteCompatExt};

pub use daemon::DaemonOptions;

/// The flags of `agentd acp` (the socket, data dir and config are the daemon's own flags).
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Do not start a daemon when none answers: fail instead
    #[arg(long)]
    pub no_start: bool,
}

/// Runs the bridge on stdin/stdout until the editor closes it; returns the exit status
/// (0: the editor closed the connection; 1: an error, said on stderr).
pub fn main(args: Args, mut daemon: DaemonOptions) -> i32 {
    daemon.start = !args.no_start;
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .thread_name("agentd-acp")
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("agentd acp: cannot start the runtime: {e}");
            return 1;
        }
    };
    let served = runtime.block_on(serve_stdio(&daemon));
    // The stdin reader is a blocking thread that may still wait for a line (a signal
    // ended the bridge): do not wait for it.
    runtime.shutdown_background();
    match served {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("agentd acp: {e:#}");
            1
        }
    }
}

/// Connects to (or starts) the daemon, then serves ACP on stdin/stdout.
pub async fn serve_stdio(options: &DaemonOptions) -> anyhow::Result<()> {
    let (client, started) = daemon::connect_or_start(options).await?;
    if let Some(pid) = started {
        eprintln!(
            "agentd acp: started agentd (pid {pid}) on {}",
            options.socket.display()
        );
    }
    let transport = ByteStreams::new(
        tokio::io::stdout().compat_write(),
        tokio::io::stdin().compat(),
    );
    bridge::serve(client, transport, shutdown_signal()?)
        .await
        .map_err(|e| anyhow::anyhow!("ACP connection failed: {e}"))
}

/// Resolves at SIGTERM, SIGINT or SIGHUP (an editor stopping its agent), so the bridge
/// can remove what it added before it exits.
fn shutdown_signal() -> anyhow::Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let mut hup = signal(SignalKind::hangup())?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
            _ = hup.recv() => {}
        }
    })
}
