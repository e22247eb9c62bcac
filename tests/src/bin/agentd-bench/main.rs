//! `agentd-bench`: measures the shipped (`dist` profile) `agentd` binary against the quality bars of
//! DESIGN.md section 14, with the test kit's mock model on 127.0.0.1 as the provider.
//!
//! ```text
//! cargo build --profile dist -p agentd
//! cargo run --profile dist -p agentd-testkit --bin agentd-bench -- [OPTIONS] [SCENARIO...]
//! ```
//!
//! Options: `--quick` (small sizes, a smoke run), `--repeat N` (run every scenario N times
//! and report the median run with the spread), `--agentd PATH` (default
//! the `agentd` beside the bench binary, `target/dist/agentd`), `--log FILTER` (the daemon's log filter, default `info`, as a
//! user runs it), `--keep-logs DIR` (copy each daemon's log there), `--daemon-env KEY=VALUE`
//! (environment for the daemon only, e.g. `TOKIO_WORKER_THREADS=1`). Scenarios (all by
//! default): `startup memory first-token cpu throughput tool-turn many-agents list-messages
//! long-sessions history wake-up hostile-answers sandbox write-turn websocket scale-out`, or
//! their numbers 1-16 (`scale-out` needs PostgreSQL, as the tests of several daemons do).
//!
//! It is run by hand, never by CI or `cargo test`: its figures depend on the machine.
//! Every scenario starts its own daemon on a temp socket and data dir, and prints its
//! figures in one table at the end (see docs/performance.md).

mod hostile;
mod long;
mod measure;
mod sandbox;
mod scale;
mod scenarios;
mod undo;
mod wake;
mod web;
mod wire;

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, bail};

/// The scenarios, in the order they run; each is one function of `scenarios`.
const SCENARIOS: &[(&str, &str)] = &[
    (
        "startup",
        "start-up to the first initialize, existing database",
    ),
    ("memory", "idle RSS and RSS per idle loaded session"),
    (
        "first-token",
        "sendMessage -> first textDelta overhead, 200-message history",
    ),
    ("cpu", "daemon CPU time per 200-token turn"),
    (
        "throughput",
        "one 10,000-token answer, tokens/s to the client",
    ),
    (
        "tool-turn",
        "a read_file round trip: time beyond the two model calls",
    ),
    (
        "many-agents",
        "500 agents streaming at once: events/s, latency, RSS, seq gaps",
    ),
    ("list-messages", "listMessages on a 100,000-message agent"),
    (
        "long-sessions",
        "memory after many turns (10 x 400, 500 x 40), and a reconnect",
    ),
    (
        "history",
        "sendMessage -> model request with 200 to 4,000 messages of history",
    ),
    (
        "wake-up",
        "the machine: a thread waking another, on another CPU and on the same",
    ),
    (
        "hostile-answers",
        "4,000 tool calls in one answer (CPU), 400 MiB of streamed text (peak RSS)",
    ),
    (
        "sandbox",
        "a command through the guard with and without the OS sandbox",
    ),
    (
        "write-turn",
        "write_file turns in a 5,000-file workspace: what undo's snapshots cost",
    ),
    (
        "websocket",
        "the WebSocket listener against the socket: a call's and a short turn's time",
    ),
    (
        "scale-out",
        "one daemon vs three on one PostgreSQL: turns/s, relayed delta latency, CPU",
    ),
];

/// How a figure is judged.
#[derive(Debug, Clone, Copy)]
pub enum Target {
    /// No bar in DESIGN.md: reported for context.
    None,
    /// Must be below this.
    Below(f64),
    /// Must be above this.
    Above(f64),
    /// Must be exactly this (e.g. 0 lost events).
    Exactly(f64),
}

/// One line of the result table.
#[derive(Debug, Clone)]
pub struct Figure {
    pub scenario: &'static str,
    pub name: String,
    pub value: f64,
    pub unit: &'static str,
    pub target: Target,
}

impl Figure {
    pub fn new(
        scenario: &'static str,
        name: impl Into<String>,
        value: f64,
        unit: &'static str,
    ) -> Figure {
        Figure {
            scenario,
            name: name.into(),
            value,
            unit,
            target: Target::None,
        }
    }

    pub fn target(mut self, target: Target) -> Figure {
        self.target = target;
        self
    }

    fn met(&self, value: f64) -> &'static str {
        match self.target {
            Target::None => "",
            Target::Below(t) if value < t => "yes",
            Target::Above(t) if value > t => "yes",
            Target::Exactly(t) if value == t => "yes",
            _ => "NO",
        }
    }

    fn target_text(&self) -> String {
        match self.target {
            Target::None => "-".into(),
            Target::Below(t) => format!("< {} {}", number(t), self.unit),
            Target::Above(t) => format!("> {} {}", number(t), self.unit),
            Target::Exactly(t) => format!("= {}", number(t)),
        }
    }
}

/// A number with a sensible precision for the table.
fn number(v: f64) -> String {
    let a = v.abs();
    if (v == v.trunc() || a >= 100.0) && a < 1e15 {
        let v = v.round();
        // Thousands separators for large integers.
        let digits = format!("{}", v as i64);
        let (sign, digits) = digits.split_at(usize::from(digits.starts_with('-')));
        let mut out = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i).is_multiple_of(3) {
                out.push(',');
            }
            out.push(c);
        }
        format!("{sign}{out}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// What the scenarios share: the binary, the sizes and where logs go.
pub struct Bench {
    pub agentd: PathBuf,
    pub quick: bool,
    pub log: String,
    /// `--keep-logs DIR`: each daemon's log is copied there when its scenario ends.
    pub keep_logs: Option<PathBuf>,
    /// `--daemon-env KEY=VALUE`: extra environment for the daemon only (experiments, e.g.
    /// `TOKIO_WORKER_THREADS=1`).
    pub daemon_env: Vec<(String, String)>,
}

impl Bench {
    /// `full` normally, `quick` with `--quick`.
    pub fn size(&self, full: usize, quick: usize) -> usize {
        if self.quick { quick } else { full }
    }

    /// Copies the daemon's log to `--keep-logs DIR` as `NAME.log` (appending, so repeated
    /// runs add up), for looking at where time went.
    pub fn keep_log(&self, daemon: &agentd_testkit::daemon::TestDaemon, name: &str) {
        let Some(dir) = &self.keep_logs else { return };
        let path = dir.join(format!("{name}.log"));
        let written = std::fs::create_dir_all(dir).and_then(|()| {
            use std::io::Write;
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)?
                .write_all(daemon.log().as_bytes())
        });
        if let Err(e) = written {
            eprintln!("agentd-bench: cannot write {}: {e}", path.display());
        }
    }
}

struct Options {
    bench: Bench,
    repeat: usize,
    scenarios: Vec<&'static str>,
}

fn usage() -> String {
    let mut text = String::from(
        "usage: agentd-bench [--quick] [--repeat N] [--agentd PATH] [--log FILTER] \
         [--keep-logs DIR] [--daemon-env KEY=VALUE]... [SCENARIO...]\n\nscenarios:\n",
    );
    for (i, (name, what)) in SCENARIOS.iter().enumerate() {
        text.push_str(&format!("  {} {name:<14} {what}\n", i + 1));
    }
    text
}

fn parse_args() -> anyhow::Result<Options> {
    let mut quick = false;
    let mut repeat = 1;
    let mut agentd = None;
    let mut log = "info".to_owned();
    let mut keep_logs = None;
    let mut daemon_env = Vec::new();
    let mut scenarios = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--quick" => quick = true,
            "--repeat" => {
                let n = args.next().context("--repeat needs a number")?;
                repeat = n
                    .parse()
                    .ok()
                    .filter(|&n| n >= 1)
                    .with_context(|| format!("--repeat {n:?}: not a number >= 1"))?;
            }
            "--agentd" => {
                agentd = Some(PathBuf::from(args.next().context("--agentd needs a path")?))
            }
            "--log" => log = args.next().context("--log needs a filter")?,
            "--daemon-env" => {
                let pair = args.next().context("--daemon-env needs KEY=VALUE")?;
                let (key, value) = pair
                    .split_once('=')
                    .with_context(|| format!("--daemon-env {pair:?}: not KEY=VALUE"))?;
                daemon_env.push((key.to_owned(), value.to_owned()));
            }
            "--keep-logs" => {
                keep_logs = Some(PathBuf::from(
                    args.next().context("--keep-logs needs a dir")?,
                ));
            }
            "-h" | "--help" => {
                print!("{}", usage());
                std::process::exit(0);
            }
            name => {
                let found = SCENARIOS
                    .iter()
                    .enumerate()
                    .find(|(i, (n, _))| *n == name || (i + 1).to_string() == name)
                    .map(|(_, (n, _))| *n);
                match found {
                    Some(n) => scenarios.push(n),
                    None => bail!("unknown argument {name:?}\n\n{}", usage()),
                }
            }
        }
    }
    if scenarios.is_empty() {
        scenarios = SCENARIOS.iter().map(|(n, _)| *n).collect();
    }
    Ok(Options {
        bench: Bench {
            agentd: locate_agentd(agentd)?,
            quick,
            log,
            keep_logs,
            daemon_env,
        },
        repeat,
        scenarios,
    })
}

/// `--agentd PATH`, else the `agentd` built beside this bench binary (the same profile:
/// `target/dist/` when run with `--profile dist`, as the figures are).
fn locate_agentd(given: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    let path = match given {
        Some(path) => path,
        None => std::env::current_exe()?.with_file_name("agentd"),
    };
    if !path.is_file() {
        bail!(
            "no agentd binary at {}: build it first with `cargo build --profile dist -p agentd`, \
             or pass --agentd PATH",
            path.display()
        );
    }
    Ok(std::fs::canonicalize(&path).unwrap_or(path))
}

async fn run_scenario(bench: &Bench, name: &str) -> anyhow::Result<Vec<Figure>> {
    match name {
        "startup" => scenarios::startup(bench).await,
        "memory" => scenarios::memory(bench).await,
        "first-token" => scenarios::first_token(bench).await,
        "cpu" => scenarios::cpu_per_turn(bench).await,
        "throughput" => scenarios::throughput(bench).await,
        "tool-turn" => scenarios::tool_turn(bench).await,
        "many-agents" => scenarios::many_agents(bench).await,
        "list-messages" => scenarios::list_messages(bench).await,
        "long-sessions" => long::long_sessions(bench).await,
        "history" => long::history(bench).await,
        "wake-up" => wake::wake_up(bench).await,
        "hostile-answers" => hostile::hostile_answers(bench).await,
        "sandbox" => sandbox::sandbox(bench).await,
        "write-turn" => undo::write_turn(bench).await,
        "websocket" => web::websocket(bench).await,
        "scale-out" => scale::scale_out(bench).await,
        other => bail!("no scenario {other:?}"),
    }
}

/// Prints the table: one line per figure, the median of the runs, and with `--repeat`
/// the value of every run.
fn print_table(runs: &[Vec<Figure>]) {
    let Some(first) = runs.first() else { return };
    let mut lines = vec![[
        "scenario".to_owned(),
        "figure".to_owned(),
        "value".to_owned(),
        "target".to_owned(),
        "met?".to_owned(),
        if runs.len() > 1 {
            "runs".to_owned()
        } else {
            String::new()
        },
    ]];
    for (i, figure) in first.iter().enumerate() {
        let values: Vec<f64> = runs
            .iter()
            .filter_map(|run| {
                run.get(i)
                    .filter(|f| f.name == figure.name)
                    .map(|f| f.value)
            })
            .collect();
        let value = measure::median(&values);
        let all = if runs.len() > 1 {
            values
                .iter()
                .map(|&v| number(v))
                .collect::<Vec<_>>()
                .join(" / ")
        } else {
            String::new()
        };
        lines.push([
            figure.scenario.to_owned(),
            figure.name.clone(),
            format!("{} {}", number(value), figure.unit)
                .trim_end()
                .to_owned(),
            figure.target_text(),
            figure.met(value).to_owned(),
            all,
        ]);
    }
    let columns = if runs.len() > 1 { 6 } else { 5 };
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            lines
                .iter()
                .map(|l| l[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for (n, line) in lines.iter().enumerate() {
        let cells: Vec<String> = line
            .iter()
            .zip(&widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        println!("| {} |", cells.join(" | "));
        if n == 0 {
            let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
            println!("|-{}-|", rule.join("-|-"));
        }
    }
}

#[tokio::main]
async fn main() {
    if let Err(e) = run().await {
        eprintln!("agentd-bench: {e:#}");
        std::process::exit(1);
    }
}

async fn run() -> anyhow::Result<()> {
    let options = parse_args()?;
    let bench = &options.bench;
    eprintln!("machine: {}", measure::machine());
    eprintln!(
        "agentd:  {} (log filter {:?}){}",
        bench.agentd.display(),
        bench.log,
        if bench.quick { ", --quick sizes" } else { "" }
    );
    let mut runs = Vec::new();
    for round in 1..=options.repeat {
        let mut figures = Vec::new();
        for &name in &options.scenarios {
            let load = measure::load_average();
            let started = Instant::now();
            eprintln!(
                "[{round}/{}] {name}: running (load average {load})",
                options.repeat
            );
            let mut got = run_scenario(bench, name)
                .await
                .with_context(|| format!("scenario {name}"))?;
            eprintln!(
                "[{round}/{}] {name}: done in {:.1} s (load average {})",
                options.repeat,
                started.elapsed().as_secs_f64(),
                measure::load_average()
            );
            figures.append(&mut got);
        }
        runs.push(figures);
    }
    print_table(&runs);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_verdicts() {
        assert_eq!(number(123_456.0), "123,456");
        assert_eq!(number(-1234.0), "-1,234");
        assert_eq!(number(0.0), "0");
        assert_eq!(number(1.234), "1.23");
        assert_eq!(number(35_825.4), "35,825");
        assert_eq!(number(123.6), "124");
        assert_eq!(number(0.1234), "0.123");
        let f = Figure::new("s", "f", 0.0, "ms");
        assert_eq!(f.clone().target(Target::Below(2.0)).met(1.5), "yes");
        assert_eq!(f.clone().target(Target::Below(2.0)).met(2.5), "NO");
        assert_eq!(f.clone().target(Target::Above(10.0)).met(11.0), "yes");
        assert_eq!(f.clone().target(Target::Exactly(0.0)).met(0.0), "yes");
        assert_eq!(f.target(Target::None).met(1.0), "");
    }
}
