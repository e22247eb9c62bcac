//! `mcp-test-server`: a real MCP server, built on rmcp's server side, for the tests of
//! agentd's MCP client. It owns the command line, the transport (stdio by default, or
//! streamable HTTP with `--http`) and the event log tests read; the tools live in
//! `tools.rs` and the HTTP listener in `http.rs`.
//!
//! ```text
//! mcp-test-server [--http ADDR] [--name NAME] [--log FILE] [--clash] [--crash-after N] [--env-tool]
//! ```
//!
//! - stdio (default): stdout carries only MCP JSON-RPC; diagnostics go to stderr.
//! - `--http ADDR` (e.g. `127.0.0.1:0`): MCP streamable HTTP at `/mcp`; once bound, prints
//!   exactly one line `listening http://IP:PORT/mcp` to stdout, then serves until killed.
//! - `--name NAME`: the server info name (default `test-server`).
//! - `--log FILE`: appends `call <tool> <arguments json>`, `cancelled <tool>` and
//!   `done <tool>` lines to FILE, each flushed at once.
//! - `--clash`: also offers `read_file` (a name agentd uses for a builtin).
//! - `--env-tool`: also offers `env`, which answers the server's environment as
//!   `NAME=value` lines, sorted by name (what a client let through to its server).
//! - `--crash-after N`: on the N-th `tools/call` (from 1) the process exits with code 3,
//!   after logging the `call` line and before answering.
//! - env `MCP_TEST_STDERR`: written to stderr at start.
//!
//! It is a test fixture: it must stay small and predictable, and it must never print
//! anything but protocol messages on stdout in stdio mode.

mod http;
mod tools;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, bail};
use rmcp::ServiceExt;

use tools::{EventLog, Shared, TestServer};

const USAGE: &str = "usage: mcp-test-server [--http ADDR] [--name NAME] [--log FILE] [--clash] [--crash-after N] [--env-tool]";

/// What the command line asked for.
#[derive(Debug)]
struct Options {
    http: Option<SocketAddr>,
    name: String,
    log: Option<PathBuf>,
    clash: bool,
    crash_after: Option<u64>,
    env_tool: bool,
}

impl Options {
    fn parse(mut args: impl Iterator<Item = String>) -> anyhow::Result<Options> {
        let mut options = Options {
            http: None,
            name: "test-server".to_owned(),
            log: None,
            clash: false,
            crash_after: None,
            env_tool: false,
        };
        while let Some(arg) = args.next() {
            let mut value = |flag: &str| {
                args.next()
                    .with_context(|| format!("{flag} needs a value\n{USAGE}"))
            };
            match arg.as_str() {
                "--http" => {
                    let addr = value("--http")?;
                    options.http = Some(
                        addr.parse()
                            .with_context(|| format!("--http {addr:?}: not an IP:PORT"))?,
                    );
                }
                "--name" => options.name = value("--name")?,
                "--log" => options.log = Some(PathBuf::from(value("--log")?)),
                "--clash" => options.clash = true,
                "--env-tool" => options.env_tool = true,
                "--crash-after" => {
                    let n = value("--crash-after")?;
                    let n: u64 = n
                        .parse()
                        .with_context(|| format!("--crash-after {n:?}: not a number"))?;
                    if n == 0 {
                        bail!("--crash-after counts calls from 1");
                    }
                    options.crash_after = Some(n);
                }
                "-h" | "--help" => {
                    eprintln!("{USAGE}");
                    std::process::exit(0);
                }
                other => bail!("unknown argument {other:?}\n{USAGE}"),
            }
        }
        Ok(options)
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let options = Options::parse(std::env::args().skip(1))?;
    if let Some(text) = std::env::var_os("MCP_TEST_STDERR") {
        eprintln!("{}", text.to_string_lossy());
    }
    let log = match &options.log {
        Some(path) => Some(EventLog::open(path)?),
        None => None,
    };
    let shared = Arc::new(
        Shared::new(options.name, log, options.clash, options.crash_after)
            .with_env_tool(options.env_tool),
    );
    match options.http {
        Some(addr) => http::serve(addr, shared).await,
        None => {
            let running = TestServer::new(shared)
                .serve(rmcp::transport::stdio())
                .await
                .context("MCP initialization over stdio failed")?;
            let reason = running.waiting().await.context("MCP service task failed")?;
            eprintln!("mcp-test-server: stdio session ended ({reason:?})");
            Ok(())
        }
    }
}
