//! `mcp-test-server`: a real MCP server, built on rmcp's server side, for the tests of
//! agentd's MCP client. It owns the command line, the transport (stdio by default, or
//! streamable HTTP with `--http`) and the event log tests read; the tools live in
//! `tools.rs` and the HTTP listener in `http.rs`.
//!
//! ```text
//! mcp-test-server [--http ADDR] [--name NAME] [--log FILE] [--clash] [--crash-after N] [--env-tool]
//!                 [--odd-tools] [--odd-results] [--paginate MODE] [--hang-relist]
//!                 [--exit-after-list] [--storm N] [--many-tools N] [--huge-schema BYTES]
//!                 [--stderr-flood BYTES] [--chatty] [--progress-last] [--slow-list MS]
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
//! - `--log` also gets a `list <cursor or ->` line per `tools/list`.
//!
//! Misbehaviours (`quirks.rs`; those marked * only over stdio, where the transport can
//! send what rmcp's types cannot):
//! - `--odd-tools`*: tools named `get.weather`, `with space`, `a/b`, `météo`, 70 `n`,
//!   `b__echo`, `dup` (twice) and `` (empty), schemas `{"type":"string"}`
//!   (`schema_string`) and `properties: "oops"` (`schema_props`), and raw tools without a
//!   name, with a null or no `inputSchema`, or a number as description. Each named one
//!   answers `called <name>`.
//! - `--odd-results`*: `unknown_content` (a `video` part between two texts),
//!   `image_no_mime` (an image without `mimeType`, then a caption), `no_content`
//!   (`{"answer": 42}`).
//! - `--paginate pages|empty-forever|repeat|endless`*: one tool per page; every tool with
//!   `nextCursor: ""` forever; with `nextCursor: "again"` forever; a new tool and cursor
//!   on every page forever.
//! - `--hang-relist`: answers `tools/list` once, never again (logs `cancelled list` when the
//!   client cancels one).
//! - `--exit-after-list`*: exits (code 4) right after its first `tools/list` answer.
//! - `--storm N`: `storm {add}` sends N `tools/list_changed` 2 ms apart, then (with `add`)
//!   adds `added` and announces it once more.
//! - `--many-tools N`: `bulk_0001` ... `bulk_N`.
//! - `--huge-schema BYTES`: `huge`, whose schema holds an enum of about BYTES.
//! - `--stderr-flood BYTES`: BYTES of `x` on stderr at start, with no newline.
//! - `--chatty`: `chatty` sends `notifications/x-test-chatter` with a 100 KiB payload.
//! - `--progress-last`: `progress_last` sends one `notifications/progress` (1 of 1,
//!   message `last`) right before its result `progressed`.
//! - `--slow-list MS`: every `tools/list` is answered MS milliseconds late.
//!
//! It is a test fixture: it must stay small and predictable, and it must never print
//! anything but protocol messages on stdout in stdio mode.

mod http;
mod quirks;
mod raw;
mod tools;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, bail};
use rmcp::ServiceExt;

use quirks::{Paginate, Quirks};
use tools::{EventLog, Shared, TestServer};

const USAGE: &str = "usage: mcp-test-server [--http ADDR] [--name NAME] [--log FILE] [--clash] [--crash-after N] [--env-tool] [--odd-tools] [--odd-results] [--paginate pages|empty-forever|repeat|endless] [--hang-relist] [--exit-after-list] [--storm N] [--many-tools N] [--huge-schema BYTES] [--stderr-flood BYTES] [--chatty] [--progress-last] [--slow-list MS]";

/// What the command line asked for.
#[derive(Debug)]
struct Options {
    http: Option<SocketAddr>,
    name: String,
    log: Option<PathBuf>,
    clash: bool,
    crash_after: Option<u64>,
    env_tool: bool,
    quirks: Quirks,
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
            quirks: Quirks::default(),
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
                "--odd-tools" => options.quirks.odd_tools = true,
                "--odd-results" => options.quirks.odd_results = true,
                "--hang-relist" => options.quirks.hang_relist = true,
                "--exit-after-list" => options.quirks.exit_after_list = true,
                "--chatty" => options.quirks.chatty = true,
                "--progress-last" => options.quirks.progress_last = true,
                "--slow-list" => {
                    options.quirks.slow_list_ms = Some(number(&value("--slow-list")?)?)
                }
                "--paginate" => {
                    let mode = value("--paginate")?;
                    options.quirks.paginate = Some(
                        Paginate::parse(&mode)
                            .with_context(|| format!("--paginate {mode:?}\n{USAGE}"))?,
                    );
                }
                "--storm" => options.quirks.storm = Some(number(&value("--storm")?)?),
                "--many-tools" => {
                    options.quirks.many_tools = number(&value("--many-tools")?)? as usize;
                }
                "--huge-schema" => {
                    options.quirks.huge_schema = Some(number(&value("--huge-schema")?)? as usize);
                }
                "--stderr-flood" => {
                    options.quirks.stderr_flood = Some(number(&value("--stderr-flood")?)? as usize);
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

fn number(text: &str) -> anyhow::Result<u64> {
    text.parse()
        .with_context(|| format!("{text:?}: not a number"))
}

/// `--stderr-flood`: the bytes go out from a thread of their own (the pipe fills until the
/// client reads), so serving goes on meanwhile.
fn flood_stderr(bytes: usize) {
    std::thread::spawn(move || {
        use std::io::Write;
        let chunk = vec![b'x'; 64 * 1024];
        let mut left = bytes;
        let mut stderr = std::io::stderr().lock();
        while left > 0 {
            let n = left.min(chunk.len());
            if stderr.write_all(&chunk[..n]).is_err() {
                return;
            }
            left -= n;
        }
        let _ = stderr.flush();
    });
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
    if let Some(bytes) = options.quirks.stderr_flood {
        flood_stderr(bytes);
    }
    let exit_after_list = options.quirks.exit_after_list;
    let shared = Arc::new(
        Shared::new(options.name, log, options.clash, options.crash_after)
            .with_env_tool(options.env_tool)
            .with_quirks(options.quirks),
    );
    match options.http {
        Some(addr) => http::serve(addr, shared).await,
        None => {
            let running = TestServer::new(shared)
                .serve(raw::RawStdio::new(exit_after_list))
                .await
                .context("MCP initialization over stdio failed")?;
            let reason = running.waiting().await.context("MCP service task failed")?;
            eprintln!("mcp-test-server: stdio session ended ({reason:?})");
            Ok(())
        }
    }
}
