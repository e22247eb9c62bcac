//! The scenarios: one function each, each on a daemon of its own (fresh temp socket, data
//! dir and config) with the mock model on 127.0.0.1 as its only provider. Each returns its
//! figures; `main` prints them.
//!
//! Timing is taken at the client (the lean [`Conn`]) and at the mock, which share this
//! process and its clock, so "model time" can be subtracted from what the client saw.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_proto::Block;
use agentd_testkit::daemon::{DaemonOptions, TestDaemon, openai_config_with_window};
use agentd_testkit::mock_model::{MockModel, Reply, SENT_AT_MARKER, clock_us};
use anyhow::{Context, bail};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::measure::{MIB, cpu_time, median, ms, ms_between, peak_rss, percentile, rss};
use crate::wire::{Conn, Incoming};
use crate::{Bench, Figure, Target};

/// Every agent gets a title, so no turn renames it.
const TITLE: &str = "bench";

/// A config whose only provider is the mock, with this context window, then `extra`.
fn config(mock_url: &str, window: u32, extra: &str) -> String {
    format!("{}\n{extra}\n", openai_config_with_window(mock_url, window))
}

/// Permissions that let every tool run without asking.
pub(crate) const ALLOW_ALL: &str = "[permissions]\nread = \"allow\"\nwrite = \"allow\"\nexecute = \"allow\"\nnetwork = \"allow\"\n";

/// The window of most scenarios: large, so long histories never trigger a summary (which
/// would be an extra model call out of script).
pub(crate) const LARGE_WINDOW: u32 = 1_000_000;

/// A mock and a daemon using it, logging at the bench's level.
pub(crate) async fn start(
    bench: &Bench,
    extra_config: &str,
) -> anyhow::Result<(MockModel, TestDaemon)> {
    start_with_window(bench, LARGE_WINDOW, extra_config).await
}

pub(crate) async fn start_with_window(
    bench: &Bench,
    window: u32,
    extra_config: &str,
) -> anyhow::Result<(MockModel, TestDaemon)> {
    let mock = MockModel::start_keep_alive().await;
    let mut env = vec![("AGENTD_LOG".to_owned(), bench.log.clone())];
    env.extend(bench.daemon_env.iter().cloned());
    let options = DaemonOptions {
        config_toml: config(&mock.url(), window, extra_config),
        env,
    };
    let daemon = TestDaemon::try_start_with(&bench.agentd, options)
        .await
        .map_err(|f| anyhow::anyhow!("agentd exited at start ({}):\n{}", f.status, f.log))?;
    Ok((mock, daemon))
}

pub(crate) fn pid_of(daemon: &TestDaemon) -> anyhow::Result<u32> {
    daemon.pid().context("agentd is not running")
}

/// Creates an agent (chat mode unless `params` says otherwise); returns its id.
pub(crate) async fn create_agent(conn: &mut Conn, mut params: Value) -> anyhow::Result<String> {
    params["title"] = json!(TITLE);
    let agent = conn.call("createAgent", params).await?;
    agent["id"]
        .as_str()
        .map(str::to_owned)
        .context("createAgent answered without an id")
}

/// `n` copies of `piece`, as the parts of a mock answer.
pub(crate) fn parts(piece: &str, n: usize) -> Vec<&str> {
    vec![piece; n]
}

/// Lets the daemon finish what it does after a run (e.g. freeing buffers) before a reading.
pub(crate) async fn settle() {
    tokio::time::sleep(Duration::from_millis(500)).await;
}

/// 1. Start-up to socket-ready with an existing database: from spawning the binary to the
///    first successful `initialize` answer, median of 10.
pub(crate) async fn startup(bench: &Bench) -> anyhow::Result<Vec<Figure>> {
    let (mock, mut daemon) = start(bench, "").await?;
    // An existing database: agents with a few turns each.
    let mut conn = Conn::connect(daemon.socket()).await?;
    for _ in 0..20 {
        let id = create_agent(&mut conn, json!({})).await?;
        conn.subscribe(Some(&id)).await?;
        for _ in 0..3 {
            mock.push(Reply::openai_text(&["Fine", ", thanks."]));
            conn.turn(&id, "How are you?").await?;
        }
    }
    drop(conn);
    let status = daemon.terminate().await;
    bench.keep_log(&daemon, "startup");
    if !status.success() {
        bail!("agentd did not stop cleanly: {status}");
    }

    let runs = bench.size(10, 3);
    let spawn = StartCommand {
        bin: bench.agentd.clone(),
        socket: daemon.socket().to_owned(),
        data_dir: daemon.data_dir().to_owned(),
        config: daemon.config_path().to_owned(),
        log_filter: bench.log.clone(),
        env: bench.daemon_env.clone(),
        log_file: daemon.dir().join("startup.log"),
    };
    let times = tokio::task::spawn_blocking(move || {
        (0..runs)
            .map(|_| spawn.time_to_ready().map(ms))
            .collect::<anyhow::Result<Vec<f64>>>()
    })
    .await??;
    let s = "1 startup";
    Ok(vec![
        Figure::new(
            s,
            format!("spawn -> first initialize, median of {runs}"),
            median(&times),
            "ms",
        )
        .target(Target::Below(50.0)),
        Figure::new(s, "slowest start", percentile(&times, 100.0), "ms"),
    ])
}

/// How to start the daemon by hand (outside the harness, whose readiness poll is too
/// coarse to time a start-up).
struct StartCommand {
    bin: PathBuf,
    socket: PathBuf,
    data_dir: PathBuf,
    config: PathBuf,
    log_filter: String,
    env: Vec<(String, String)>,
    log_file: PathBuf,
}

impl StartCommand {
    /// Spawns the daemon, polls (every 100 µs) until `initialize` answers, then stops it
    /// with SIGTERM. Blocking.
    fn time_to_ready(&self) -> anyhow::Result<Duration> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log_file)?;
        let started = Instant::now();
        let mut child = std::process::Command::new(&self.bin)
            .arg("--socket")
            .arg(&self.socket)
            .arg("--data-dir")
            .arg(&self.data_dir)
            .arg("--config")
            .arg(&self.config)
            .env("AGENTD_LOG", &self.log_filter)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(std::process::Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .with_context(|| format!("cannot run {}", self.bin.display()))?;
        let ready = loop {
            if initialize_answers(&self.socket) {
                break started.elapsed();
            }
            if let Some(status) = child.try_wait()? {
                bail!(
                    "agentd exited during start-up ({status}); see {}",
                    self.log_file.display()
                );
            }
            if started.elapsed() > Duration::from_secs(10) {
                let _ = child.kill();
                bail!("agentd was not ready within 10 s");
            }
            std::thread::sleep(Duration::from_micros(100));
        };
        let pid = Pid::from_raw(i32::try_from(child.id())?);
        kill(pid, Signal::SIGTERM)?;
        let status = child.wait()?;
        if !status.success() {
            bail!("agentd did not stop cleanly after SIGTERM: {status}");
        }
        Ok(ready)
    }
}

/// True when the socket accepts a connection and answers `initialize` with a result.
fn initialize_answers(socket: &Path) -> bool {
    let Ok(mut stream) = std::os::unix::net::UnixStream::connect(socket) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let request = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}\n";
    if stream.write_all(request).is_err() {
        return false;
    }
    let mut line = String::new();
    let read = std::io::BufReader::new(&stream).read_line(&mut line);
    read.is_ok() && line.contains("\"result\"")
}

/// 2. Idle RSS, and RSS per idle loaded session: create 10,000 agents and touch each with
///    `getSession`; the RSS difference divided by 10,000, and the RSS with all of them
///    loaded. Again after a restart, where the sessions are loaded by `getSession` alone.
pub(crate) async fn memory(bench: &Bench) -> anyhow::Result<Vec<Figure>> {
    let (_mock, mut daemon) = start(bench, "").await?;
    let pid = pid_of(&daemon)?;
    let mut conn = Conn::connect(daemon.socket()).await?;
    conn.call("initialize", json!({})).await?;
    settle().await;
    let idle = rss(pid)? as f64;

    let n = bench.size(10_000, 1000);
    let mut ids = Vec::with_capacity(n);
    for _ in 0..n {
        ids.push(create_agent(&mut conn, json!({})).await?);
    }
    for id in &ids {
        conn.call("getSession", json!({"agentId": id})).await?;
    }
    settle().await;
    let loaded = rss(pid)? as f64;

    drop(conn);
    daemon.terminate().await;
    daemon.restart().await;
    let pid = pid_of(&daemon)?;
    let mut conn = Conn::connect(daemon.socket()).await?;
    conn.call("initialize", json!({})).await?;
    settle().await;
    let idle_again = rss(pid)? as f64;
    for id in &ids {
        conn.call("getSession", json!({"agentId": id})).await?;
    }
    settle().await;
    let reloaded = rss(pid)? as f64;
    bench.keep_log(&daemon, "memory");

    let s = "2 memory";
    let per = |after: f64, before: f64| (after - before) / n as f64 / 1024.0;
    Ok(vec![
        Figure::new(s, "idle RSS after start", idle / MIB, "MiB").target(Target::Below(20.0)),
        Figure::new(
            s,
            format!("RSS per session: create {n} + getSession"),
            per(loaded, idle),
            "KiB",
        )
        .target(Target::Below(100.0)),
        Figure::new(
            s,
            format!("idle RSS after restart, {n} agents stored"),
            idle_again / MIB,
            "MiB",
        ),
        Figure::new(
            s,
            format!("RSS per session: getSession x{n} after restart"),
            per(reloaded, idle_again),
            "KiB",
        )
        .target(Target::Below(100.0)),
        Figure::new(
            s,
            format!("RSS with {n} idle sessions loaded"),
            loaded / MIB,
            "MiB",
        )
        .target(if n >= 10_000 {
            Target::Below(80.0)
        } else {
            Target::None
        }),
        Figure::new(
            s,
            format!("  the same after a restart (getSession x{n})"),
            reloaded / MIB,
            "MiB",
        ),
    ])
}

/// 3. Overhead on the first token of a warm agent with a 200-message history: from
///    `sendMessage` to the first `textDelta` at the client, minus the mock's own time from
///    receiving the request to its first byte; median and p99 over 100 turns.
pub(crate) async fn first_token(bench: &Bench) -> anyhow::Result<Vec<Figure>> {
    let (mock, daemon) = start(bench, "").await?;
    let mut conn = Conn::connect(daemon.socket()).await?;
    let id = create_agent(&mut conn, json!({})).await?;
    conn.subscribe(Some(&id)).await?;
    // The history is built by real turns (tiny answers), which are timed too: the first
    // ten show the overhead with an almost empty history.
    let history_turns = bench.size(100, 10);
    let turns = bench.size(100, 10);
    let mut all = Vec::with_capacity(history_turns + turns);
    for n in 0..history_turns + turns {
        if n < history_turns {
            mock.push(Reply::openai_text(&["Sure."]));
            all.push(conn.turn(&id, "Tell me something.").await?);
        } else {
            mock.push(Reply::openai_text(&["Hello", " there", "."]));
            all.push(conn.turn(&id, "Say hello.").await?);
        }
    }
    let requests = mock.requests();
    if requests.len() != all.len() {
        bail!(
            "expected {} model requests, the mock got {}",
            all.len(),
            requests.len()
        );
    }
    let (mut overhead, mut before, mut after) = (Vec::new(), Vec::new(), Vec::new());
    for (turn, request) in all.iter().zip(&requests) {
        let first = turn.first_delta.context("a turn without textDelta")?;
        let served = request.served_at.context("a reply never served")?;
        let model = ms_between(served, request.received_at);
        overhead.push(ms_between(first, turn.sent) - model);
        before.push(ms_between(request.received_at, turn.sent));
        after.push(ms_between(first, served));
    }
    bench.keep_log(&daemon, "first-token");
    let s = "3 first token";
    let h = history_turns * 2;
    let measured = history_turns..;
    Ok(vec![
        Figure::new(
            s,
            format!("overhead, median ({h}-message history, {turns} turns)"),
            median(&overhead[measured.clone()]),
            "ms",
        )
        .target(Target::Below(2.0)),
        Figure::new(
            s,
            "overhead, p99",
            percentile(&overhead[measured.clone()], 99.0),
            "ms",
        )
        .target(Target::Below(2.0)),
        Figure::new(
            s,
            "  of which sendMessage -> model request read",
            median(&before[measured.clone()]),
            "ms",
        ),
        Figure::new(
            s,
            "  of which model first byte -> client textDelta",
            median(&after[measured]),
            "ms",
        ),
        Figure::new(
            s,
            "overhead, median of turns 1-10 (history 0-18)",
            median(&overhead[..10]),
            "ms",
        ),
    ])
}

/// 4. Daemon CPU time (user + system, from /proc) per turn whose answer is 200 chunks.
pub(crate) async fn cpu_per_turn(bench: &Bench) -> anyhow::Result<Vec<Figure>> {
    let (mock, daemon) = start(bench, "").await?;
    let pid = pid_of(&daemon)?;
    let mut conn = Conn::connect(daemon.socket()).await?;
    let id = create_agent(&mut conn, json!({})).await?;
    conn.subscribe(Some(&id)).await?;
    let answer = parts("tok ", 200);
    for _ in 0..5 {
        mock.push(Reply::openai_text(&answer));
        conn.turn(&id, "Warm up.").await?;
    }
    let turns = bench.size(100, 10);
    let cpu_before = cpu_time(pid)?;
    let started = Instant::now();
    let mut deltas = 0;
    for _ in 0..turns {
        mock.push(Reply::openai_text(&answer));
        let turn = conn.turn(&id, "Write me 200 tokens.").await?;
        if turn.text_bytes != 200 * "tok ".len() {
            bail!("a 200-chunk answer arrived as {} bytes", turn.text_bytes);
        }
        deltas += turn.deltas;
    }
    let wall = started.elapsed();
    let cpu = cpu_time(pid)? - cpu_before;
    bench.keep_log(&daemon, "cpu");
    let s = "4 cpu";
    Ok(vec![
        Figure::new(
            s,
            format!("daemon CPU per 200-token turn ({turns} turns)"),
            ms(cpu) / turns as f64,
            "ms",
        )
        .target(Target::Below(1.5)),
        Figure::new(s, "wall time per turn", ms(wall) / turns as f64, "ms"),
        Figure::new(
            s,
            "textDelta events per turn (mean)",
            deltas as f64 / turns as f64,
            "",
        ),
    ])
}

/// 5. One 10,000-token answer (10,000 chunks, no delays) through to a client, fed two ways:
///    one SSE event per read (the mock writes each event on its own), and in large reads
///    (100 events per write, as providers and proxies that buffer send them). For each: one
///    subscriber (tokens/s from the model's first byte to the last textDelta, and the
///    daemon's CPU per token), four subscribers on four connections, and nobody subscribed
///    (the run alone: provider, message, event log). Last, the mock alone, read straight
///    over TCP, to show it is not the bottleneck.
pub(crate) async fn throughput(bench: &Bench) -> anyhow::Result<Vec<Figure>> {
    let (mock, daemon) = start(bench, "").await?;
    let tokens = bench.size(10_000, 2_000);
    let answers = bench.size(5, 2);
    let mut figures = Vec::new();
    // (section, SSE events per write, CPU per token bars with 1 and 4 subscribers)
    for (s, per_write, targets) in [
        ("5 throughput, large reads", 100, [2.0, 3.0]),
        ("5 throughput, one event per read", 1, [5.0, 8.0]),
    ] {
        let feed = Feed {
            mock: &mock,
            daemon: &daemon,
            tokens,
            answers,
            per_write,
        };
        figures.extend(feed.measure(s, targets).await?);
    }

    // The mock alone: the same reply, read by a bare TCP client.
    let answer = parts("tok ", tokens);
    let mut alone = Vec::new();
    for _ in 0..answers {
        mock.push(Reply::openai_text(&answer));
        alone.push(tokens as f64 / read_mock_directly(&mock).await?.as_secs_f64());
    }
    bench.keep_log(&daemon, "throughput");
    figures.push(Figure::new(
        "5 throughput",
        "mock alone, one event per write, to a bare TCP reader",
        median(&alone),
        "tok/s",
    ));
    Ok(figures)
}

/// One way of feeding answers to the daemon, measured with 1, 4 and no subscribers.
struct Feed<'a> {
    mock: &'a MockModel,
    daemon: &'a TestDaemon,
    tokens: usize,
    answers: usize,
    /// SSE events per write of the mock.
    per_write: usize,
}

impl Feed<'_> {
    fn reply(&self, answer: &[&str]) -> Reply {
        Reply::openai_text(answer).events_per_write(self.per_write)
    }

    /// `targets`: the bars for CPU per token with one and with four subscribers.
    async fn measure(&self, s: &'static str, targets: [f64; 2]) -> anyhow::Result<Vec<Figure>> {
        let (mock, tokens, answers) = (self.mock, self.tokens, self.answers);
        let pid = pid_of(self.daemon)?;
        let mut conn = Conn::connect(self.daemon.socket()).await?;
        let id = create_agent(&mut conn, json!({})).await?;
        conn.subscribe(Some(&id)).await?;
        let answer = parts("tok ", tokens);
        mock.push(self.reply(&answer[..100]));
        conn.turn(&id, "Warm up.").await?;

        let mut streaming = Vec::new();
        let mut end_to_end = Vec::new();
        let mut mock_feed = Vec::new();
        let (mut cpu_per_token, mut own_cpu_per_token) = (Vec::new(), Vec::new());
        let mut events_per_answer = Vec::new();
        let me = std::process::id();
        for _ in 0..answers {
            mock.push(self.reply(&answer));
            let (cpu, own) = (cpu_time(pid)?, cpu_time(me)?);
            let turn = conn.turn(&id, "A long answer, please.").await?;
            cpu_per_token.push((cpu_time(pid)? - cpu).as_secs_f64() * 1e6 / tokens as f64);
            own_cpu_per_token.push((cpu_time(me)? - own).as_secs_f64() * 1e6 / tokens as f64);
            if turn.text_bytes != tokens * "tok ".len() {
                bail!("{tokens} chunks arrived as {} bytes", turn.text_bytes);
            }
            events_per_answer.push(turn.deltas as f64);
            let last = turn.last_delta.context("no textDelta")?;
            end_to_end.push(tokens as f64 / (turn.finished - turn.sent).as_secs_f64());
            let request = mock.last_request().context("no request")?;
            let served = request.served_at.context("a reply never served")?;
            // From the mock's first byte to the client's last delta: the whole answer's trip.
            streaming.push(tokens as f64 / (last - served).as_secs_f64());
            if let Some(finished) = request.finished_at {
                mock_feed.push(tokens as f64 / (finished - served).as_secs_f64());
            }
        }
        if conn.seqs.gaps > 0 {
            bail!("{} seq gap(s) in a single stream", conn.seqs.gaps);
        }

        // Nobody subscribed: sendMessage, then getSession every 2 ms until the run is over.
        let lonely = create_agent(&mut conn, json!({})).await?;
        let (mut unwatched, mut unwatched_cpu) = (Vec::new(), Vec::new());
        for _ in 0..answers {
            mock.push(self.reply(&answer));
            let cpu = cpu_time(pid)?;
            let sent = Instant::now();
            conn.call("sendMessage", json!({"agentId": lonely, "content": "Go."}))
                .await?;
            loop {
                tokio::time::sleep(Duration::from_millis(2)).await;
                let session = conn.call("getSession", json!({"agentId": lonely})).await?;
                if session["status"] == "idle" {
                    break;
                }
            }
            unwatched.push(tokens as f64 / sent.elapsed().as_secs_f64());
            unwatched_cpu.push((cpu_time(pid)? - cpu).as_secs_f64() * 1e6 / tokens as f64);
        }

        // Four subscribers (four connections) on one agent.
        let watched = create_agent(&mut conn, json!({})).await?;
        let mut main = Conn::connect(self.daemon.socket()).await?;
        main.subscribe(Some(&watched)).await?;
        let mut readers = tokio::task::JoinSet::new();
        for _ in 0..3 {
            let mut c = Conn::connect(self.daemon.socket()).await?;
            c.subscribe(Some(&watched)).await?;
            readers.spawn(async move { last_deltas(&mut c, answers).await });
        }
        let mut fan_out = Vec::new();
        let mut main_runs = Vec::new();
        let cpu = cpu_time(pid)?;
        for _ in 0..answers {
            mock.push(self.reply(&answer));
            main_runs.push(main.turn(&watched, "Go.").await?);
        }
        let mut others = Vec::new();
        while let Some(done) = readers.join_next().await {
            others.push(done??);
        }
        // All runs, once all four have read them.
        let fan_out_cpu = (cpu_time(pid)? - cpu).as_secs_f64() * 1e6 / (tokens * answers) as f64;
        let requests = mock.requests();
        let served: Vec<Instant> = requests[requests.len() - answers..]
            .iter()
            .map(|r| r.served_at.context("a reply never served"))
            .collect::<anyhow::Result<_>>()?;
        for (n, turn) in main_runs.iter().enumerate() {
            let first = served[n];
            let mut last = turn.last_delta.context("no textDelta")?;
            for reader in &others {
                last = last.max(*reader.get(n).context("a subscriber missed a run")?);
            }
            fan_out.push(tokens as f64 / (last - first).as_secs_f64());
        }
        Ok(vec![
            Figure::new(
                s,
                format!(
                    "{tokens}-token answer, 1 subscriber: model's first byte -> last textDelta"
                ),
                median(&streaming),
                "tok/s",
            )
            .target(if self.per_write > 1 {
                Target::Above(200_000.0)
            } else {
                Target::None
            }),
            Figure::new(
                s,
                "  sendMessage -> loopFinished",
                median(&end_to_end),
                "tok/s",
            ),
            Figure::new(
                s,
                "  textDelta events per answer",
                median(&events_per_answer),
                "",
            ),
            Figure::new(
                s,
                "  daemon CPU per token, 1 subscriber",
                median(&cpu_per_token),
                "us",
            )
            .target(Target::Below(targets[0])),
            Figure::new(
                s,
                "  bench CPU per token (mock + client)",
                median(&own_cpu_per_token),
                "us",
            ),
            Figure::new(
                s,
                "4 subscribers: model's first byte -> last textDelta at all 4",
                median(&fan_out),
                "tok/s",
            )
            .target(if self.per_write > 1 {
                Target::Above(100_000.0)
            } else {
                Target::None
            }),
            Figure::new(
                s,
                "  daemon CPU per token, 4 subscribers",
                fan_out_cpu,
                "us",
            )
            .target(Target::Below(targets[1])),
            Figure::new(
                s,
                "no subscriber: sendMessage -> idle",
                median(&unwatched),
                "tok/s",
            ),
            Figure::new(
                s,
                "  daemon CPU per token, no subscriber",
                median(&unwatched_cpu),
                "us",
            ),
            Figure::new(s, "mock writing to the daemon", median(&mock_feed), "tok/s"),
        ])
    }
}

/// Reads a subscription through `runs` runs; returns when each run's last textDelta came.
async fn last_deltas(conn: &mut Conn, runs: usize) -> anyhow::Result<Vec<Instant>> {
    let mut lasts = Vec::with_capacity(runs);
    let mut last = None;
    while lasts.len() < runs {
        if let (at, Incoming::Event(event)) = conn.next().await? {
            match event.kind.as_str() {
                "textDelta" => last = Some(at),
                "loopFinished" => lasts.push(last.take().context("a run without textDelta")?),
                _ => {}
            }
        }
    }
    Ok(lasts)
}

/// Posts to the mock over a bare TCP connection and reads the whole reply; returns the
/// time from the first byte of the reply to its end.
async fn read_mock_directly(mock: &MockModel) -> anyhow::Result<Duration> {
    let url = mock.url();
    let addr = url
        .strip_prefix("http://")
        .and_then(|rest| rest.split('/').next())
        .context("mock URL")?;
    let mut stream = tokio::net::TcpStream::connect(addr).await?;
    let body = "{}";
    let request = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await?;
    let mut buf = vec![0u8; 256 * 1024];
    let n = stream.read(&mut buf).await?;
    let first = Instant::now();
    if n == 0 {
        bail!("the mock closed the connection without a reply");
    }
    // The mock keeps the connection open: the reply ends with the last chunk.
    let mut tail = buf[..n].to_vec();
    while !tail.ends_with(b"0\r\n\r\n") {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            bail!("the mock's reply did not end its chunked body");
        }
        tail.extend_from_slice(&buf[..n]);
        if tail.len() > 16 {
            tail.drain(..tail.len() - 16);
        }
    }
    Ok(first.elapsed())
}

/// 6. A tool round trip (agent mode, every permission `allow`): the model calls `read_file`,
///    then answers. The turn's wall time beyond the two model calls' own time (request read
///    to reply written, at the mock).
pub(crate) async fn tool_turn(bench: &Bench) -> anyhow::Result<Vec<Figure>> {
    let (mock, daemon) = start(bench, ALLOW_ALL).await?;
    let workspace = tempfile::tempdir()?;
    let marker = "the quick brown fox jumps over the lazy dog";
    std::fs::write(
        workspace.path().join("notes.txt"),
        format!("{marker}\n").repeat(20),
    )?;
    let path = std::fs::canonicalize(workspace.path())?;
    let mut conn = Conn::connect(daemon.socket()).await?;
    let id = create_agent(
        &mut conn,
        json!({"mode": "agent", "workspace": path.display().to_string()}),
    )
    .await?;
    conn.subscribe(Some(&id)).await?;
    let args = json!({"path": "notes.txt"}).to_string();
    let turn_with_tool = async |n: usize, conn: &mut Conn| {
        let call_id = format!("call_{n}");
        mock.push(Reply::openai_tool_calls(
            &[],
            &[(&call_id, "read_file", &args)],
        ));
        mock.push(Reply::openai_text(&["The file", " has notes."]));
        conn.turn(&id, "What is in notes.txt?").await
    };
    let warm = 3;
    for n in 0..warm {
        turn_with_tool(n, &mut conn).await?;
    }
    let turns = bench.size(50, 5);
    let mut measured = Vec::with_capacity(turns);
    for n in warm..warm + turns {
        measured.push(turn_with_tool(n, &mut conn).await?);
    }
    let requests = mock.requests();
    if requests.len() != 2 * (warm + turns) {
        bail!(
            "expected {} model requests, the mock got {}",
            2 * (warm + turns),
            requests.len()
        );
    }
    let last = requests.last().context("no request")?;
    if !last.body_text.contains(marker) {
        bail!("the second model call did not carry the file's content: the tool did not run");
    }
    let (mut beyond, mut tool_gap, mut total) = (Vec::new(), Vec::new(), Vec::new());
    for (turn, pair) in measured.iter().zip(requests[2 * warm..].chunks(2)) {
        let model_time = |r: &agentd_testkit::mock_model::RecordedRequest| {
            r.finished_at
                .map(|f| ms_between(f, r.received_at))
                .context("a reply never finished")
        };
        let wall = ms_between(turn.finished, turn.sent);
        beyond.push(wall - model_time(&pair[0])? - model_time(&pair[1])?);
        let first_done = pair[0].finished_at.context("a reply never finished")?;
        tool_gap.push(ms_between(pair[1].received_at, first_done));
        total.push(wall);
    }
    bench.keep_log(&daemon, "tool-turn");
    let s = "6 tool turn";
    Ok(vec![
        Figure::new(
            s,
            format!("wall time beyond the 2 model calls, median of {turns}"),
            median(&beyond),
            "ms",
        )
        .target(Target::Below(2.0)),
        Figure::new(s, "  p99", percentile(&beyond, 99.0), "ms"),
        Figure::new(
            s,
            "  of which 1st reply end -> 2nd request read",
            median(&tool_gap),
            "ms",
        ),
        Figure::new(s, "whole turn, median", median(&total), "ms"),
    ])
}

/// 7. Many agents streaming at once, each a 200-chunk answer, one subscriber connection
///    per agent: 500 flat out (no delays: capacity), then paced at 20 ms per chunk (50
///    tokens/s per agent, a fast real model: latency under a realistic load), 500 and
///    2,000 of them.
pub(crate) async fn many_agents(bench: &Bench) -> anyhow::Result<Vec<Figure>> {
    let paced = Duration::from_millis(20);
    let mut figures = streaming_agents(
        bench,
        "7 many agents, flat out",
        bench.size(500, 50),
        Duration::ZERO,
    )
    .await?;
    figures
        .extend(streaming_agents(bench, "7 many agents, paced", bench.size(500, 50), paced).await?);
    figures.extend(
        streaming_agents(bench, "7 2,000 agents, paced", bench.size(2000, 100), paced).await?,
    );
    Ok(figures)
}

/// What one agent's subscriber saw.
#[derive(Default)]
struct AgentStream {
    events: usize,
    /// Chunks received (their stamps), whether alone or joined in one textDelta.
    deltas: usize,
    gaps: u64,
    /// Mock send -> client read of each textDelta, µs.
    latencies: Vec<u32>,
    finished: Option<Instant>,
    failure: Option<String>,
    /// Sends answered `overloaded` and sent again.
    retries: u32,
}

async fn streaming_agents(
    bench: &Bench,
    s: &'static str,
    agents: usize,
    chunk_delay: Duration,
) -> anyhow::Result<Vec<Figure>> {
    // A connection per agent, and the bench's own.
    let limits = format!("[limits]\nmax_connections = {}\n", agents + 64);
    let (mock, daemon) = start(bench, &limits).await?;
    let pid = pid_of(&daemon)?;
    let chunks = 200;
    let mut conn = Conn::connect(daemon.socket()).await?;
    let mut conns = Vec::with_capacity(agents);
    for _ in 0..agents {
        let id = create_agent(&mut conn, json!({})).await?;
        let mut c = Conn::connect(daemon.socket()).await?;
        c.subscribe(Some(&id)).await?;
        conns.push((id, c));
    }
    let stamp = format!("{SENT_AT_MARKER};");
    let answer = parts(&stamp, chunks);
    for _ in 0..agents {
        mock.push(
            Reply::openai_text(&answer)
                .stamped()
                .chunk_delay(chunk_delay),
        );
    }
    settle().await;

    let go = Arc::new(tokio::sync::Barrier::new(agents + 1));
    let mut tasks = tokio::task::JoinSet::new();
    for (id, mut c) in conns {
        let go = go.clone();
        tasks.spawn(async move {
            let mut seen = AgentStream::default();
            go.wait().await;
            if let Err(e) = stream_one(&mut c, &id, &mut seen).await {
                seen.failure = Some(format!("{e:#}"));
            }
            seen.gaps = c.seqs.gaps;
            seen
        });
    }
    let (daemon_cpu, own_cpu) = (cpu_time(pid)?, cpu_time(std::process::id())?);
    go.wait().await;
    let started = Instant::now();
    let mut streams = Vec::with_capacity(agents);
    while let Some(seen) = tasks.join_next().await {
        streams.push(seen?);
    }
    let daemon_cpu = cpu_time(pid)? - daemon_cpu;
    let own_cpu = cpu_time(std::process::id())? - own_cpu;
    let peak = peak_rss(pid)? as f64;
    bench.keep_log(&daemon, "many-agents");

    let failures: Vec<&String> = streams.iter().filter_map(|s| s.failure.as_ref()).collect();
    if let Some(first) = failures.first() {
        eprintln!("{s}: {} run(s) failed; the first: {first}", failures.len());
    }
    let end = streams
        .iter()
        .filter_map(|s| s.finished)
        .max()
        .unwrap_or(started);
    let window = (end - started).as_secs_f64().max(1e-9);
    let events: usize = streams.iter().map(|s| s.events).sum();
    let deltas: usize = streams.iter().map(|s| s.deltas).sum();
    let gaps: u64 = streams.iter().map(|s| s.gaps).sum();
    let retries: u32 = streams.iter().map(|s| s.retries).sum();
    let latencies: Vec<f64> = streams
        .iter()
        .flat_map(|s| s.latencies.iter().map(|&us| f64::from(us) / 1000.0))
        .collect();
    let paced = !chunk_delay.is_zero();
    Ok(vec![
        Figure::new(
            s,
            format!("{agents} agents x {chunks} chunks: events/s to clients"),
            events as f64 / window,
            "ev/s",
        ),
        Figure::new(s, "  tokens/s to clients", deltas as f64 / window, "tok/s"),
        Figure::new(s, "  all answers streamed in", window * 1000.0, "ms"),
        Figure::new(
            s,
            "  sendMessage answered overloaded, sent again",
            f64::from(retries),
            "",
        ),
        Figure::new(
            s,
            "delta latency mock -> client, p50",
            percentile(&latencies, 50.0),
            "ms",
        ),
        Figure::new(
            s,
            "delta latency mock -> client, p99",
            percentile(&latencies, 99.0),
            "ms",
        )
        .target(if paced && agents >= 2000 {
            Target::Below(20.0)
        } else {
            Target::None
        }),
        Figure::new(s, "seq gaps + resyncRequired", gaps as f64, "").target(Target::Exactly(0.0)),
        Figure::new(
            s,
            "chunks missing (by their stamps)",
            (agents * chunks) as f64 - deltas as f64,
            "",
        )
        .target(Target::Exactly(0.0)),
        Figure::new(s, "runs not completed", failures.len() as f64, "")
            .target(Target::Exactly(0.0)),
        Figure::new(s, "daemon peak RSS", peak / MIB, "MiB").target(if paced && agents >= 2000 {
            Target::Below(300.0)
        } else {
            Target::None
        }),
        Figure::new(
            s,
            "CPU in the window: daemon",
            daemon_cpu.as_secs_f64(),
            "s",
        ),
        Figure::new(
            s,
            "CPU in the window: bench (mock + clients)",
            own_cpu.as_secs_f64(),
            "s",
        ),
    ])
}

/// Sends the message and reads one agent's run to its end, noting each delta's latency
/// from the mock's send time stamped in its text.
async fn stream_one(conn: &mut Conn, agent_id: &str, seen: &mut AgentStream) -> anyhow::Result<()> {
    let params = json!({"agentId": agent_id, "content": "Stream, please."});
    let mut id = conn.send("sendMessage", params.clone()).await?;
    let mut overloaded = 0u32;
    loop {
        let (at, incoming) = conn.next().await?;
        let now_us = clock_us();
        let event = match incoming {
            Incoming::Response { id: got, result } => {
                if got == id {
                    // A burst of sends past `max_in_flight_requests` is shed with
                    // `overloaded` ("retry shortly"): a client retries, so does the bench.
                    if let Err(e) = &result
                        && e["data"]["kind"] == "overloaded"
                        && overloaded < 100
                    {
                        overloaded += 1;
                        seen.retries += 1;
                        tokio::time::sleep(Duration::from_millis(10 * u64::from(overloaded))).await;
                        id = conn.send("sendMessage", params.clone()).await?;
                        continue;
                    }
                    result.map_err(|e| anyhow::anyhow!("sendMessage failed: {e}"))?;
                }
                continue;
            }
            Incoming::Event(event) => event,
        };
        seen.events += 1;
        match event.kind.as_str() {
            "textDelta" => {
                // One stamp per chunk, `;`-terminated, so a delta carrying several chunks
                // would still be counted right.
                let delta = event.delta.as_deref().unwrap_or_default();
                for stamp in delta.split_terminator(';') {
                    let sent: u64 = stamp
                        .trim()
                        .parse()
                        .with_context(|| format!("not a mock timestamp: {stamp:?}"))?;
                    seen.deltas += 1;
                    seen.latencies
                        .push(u32::try_from(now_us.saturating_sub(sent)).unwrap_or(u32::MAX));
                }
            }
            "error" => bail!("error event: {}", event.message.unwrap_or_default()),
            "loopFinished" => {
                seen.finished = Some(at);
                if event.reason.as_deref() != Some("completed") {
                    bail!("loopFinished {:?} {:?}", event.reason, event.error);
                }
                return Ok(());
            }
            _ => {}
        }
    }
}

/// 8. `listMessages` on one agent with 100,000 messages. The store is built by writing rows
///    straight into the daemon's SQLite file (schema created by the daemon's own
///    migrations at its first start, rows shaped like those a real turn stored), with the
///    daemon stopped; driving 50,000 turns through one agent would take hours, since each
///    turn reads the whole history. Last, one turn on agents with 1,000, 2,000 and 4,000
///    messages (a usual 32k window, summaries off so the oldest rounds are left out
///    instead of summarized): the cost of fitting a long history into the window.
pub(crate) async fn list_messages(bench: &Bench) -> anyhow::Result<Vec<Figure>> {
    let (mock, mut daemon) = start_with_window(bench, 32_768, "").await?;
    let mut conn = Conn::connect(daemon.socket()).await?;
    let id = create_agent(&mut conn, json!({})).await?;
    conn.subscribe(Some(&id)).await?;
    mock.push(Reply::openai_text(&["A real", " answer."]));
    conn.turn(&id, "A real question.").await?;
    let long_sizes = [
        bench.size(1000, 250),
        bench.size(2000, 500),
        bench.size(4000, 1000),
    ];
    let mut long_agents = Vec::new();
    for _ in long_sizes {
        let no_summaries = json!({"settings": {"autoSummarize": false}});
        long_agents.push(create_agent(&mut conn, no_summaries).await?);
    }
    drop(conn);
    daemon.terminate().await;

    let total = bench.size(100_000, 10_000);
    let filled = Instant::now();
    fill_store(&daemon.db_path(), &id, total).await?;
    eprintln!(
        "list-messages: wrote {} rows in {:.1} s",
        total - 2,
        filled.elapsed().as_secs_f64()
    );
    for (agent, size) in long_agents.iter().zip(long_sizes) {
        fill_store(&daemon.db_path(), agent, size).await?;
    }
    daemon.restart().await;
    let mut conn = Conn::connect(daemon.socket()).await?;

    let page = async |conn: &mut Conn, cursor: Option<&str>, limit: u32, order: &str| {
        let mut params = json!({"agentId": id, "limit": limit, "order": order});
        if let Some(c) = cursor {
            params["cursor"] = json!(c);
        }
        let sent = Instant::now();
        let call = conn.send("listMessages", params).await?;
        loop {
            if let (at, Incoming::Response { id, result }) = conn.next().await?
                && id == call
            {
                let result = result.map_err(|e| anyhow::anyhow!("listMessages failed: {e}"))?;
                let count = result["messages"].as_array().map_or(0, Vec::len);
                let next = result["nextCursor"].as_str().map(str::to_owned);
                return anyhow::Ok((ms_between(at, sent), count, next));
            }
        }
    };
    let (cold, _, _) = page(&mut conn, None, 100, "asc").await?;
    let mut warm = Vec::new();
    let mut newest = Vec::new();
    for _ in 0..20 {
        warm.push(page(&mut conn, None, 100, "asc").await?.0);
        newest.push(page(&mut conn, None, 100, "desc").await?.0);
    }
    bench.keep_log(&daemon, "list-messages");
    let s = "8 listMessages";
    let mut figures = vec![
        Figure::new(
            s,
            format!("first page (100), first call after start, {total} messages"),
            cold,
            "ms",
        ),
        Figure::new(
            s,
            "first page (100, oldest first), median",
            median(&warm),
            "ms",
        ),
        Figure::new(
            s,
            "first page (100, newest first), median",
            median(&newest),
            "ms",
        ),
    ];
    for limit in [100u32, 500] {
        let started = Instant::now();
        let (mut times, mut seen, mut cursor) = (Vec::new(), 0, None);
        loop {
            let (t, count, next) = page(&mut conn, cursor.as_deref(), limit, "asc").await?;
            times.push(t);
            seen += count;
            match next {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        let whole = started.elapsed();
        if seen != total {
            bail!("paging at limit {limit} returned {seen} messages, not {total}");
        }
        let tail = &times[times.len().saturating_sub(10)..];
        figures.extend([
            Figure::new(
                s,
                format!("page through all at limit {limit}: {} pages", times.len()),
                ms(whole),
                "ms",
            ),
            Figure::new(s, "  per page, median", median(&times), "ms"),
            Figure::new(s, "  per page, p99", percentile(&times, 99.0), "ms"),
            Figure::new(s, "  last 10 pages, median", median(tail), "ms"),
        ]);
    }

    for (agent, size) in long_agents.iter().zip(long_sizes) {
        conn.subscribe(Some(agent)).await?;
        mock.push(Reply::openai_text(&["Noted", "."]));
        let turn = conn.turn(agent, "One more question.").await?;
        let request = mock.last_request().context("no model request")?;
        let sent = request.body["messages"].as_array().map_or(0, Vec::len);
        figures.push(Figure::new(
            s,
            format!("a turn on a {size}-message agent: sendMessage -> model request ({sent} sent)"),
            ms_between(request.received_at, turn.sent),
            "ms",
        ));
    }
    Ok(figures)
}

/// Adds messages to `agent_id` until it has `total`: alternating user and assistant
/// messages after the ones already there, in one transaction.
pub(crate) async fn fill_store(db: &Path, agent_id: &str, total: usize) -> anyhow::Result<()> {
    use sqlx::sqlite::{SqliteConnectOptions, SqlitePoolOptions};
    let options = SqliteConnectOptions::new().filename(db).foreign_keys(true);
    let pool = SqlitePoolOptions::new()
        .max_connections(1)
        .connect_with(options)
        .await
        .with_context(|| format!("cannot open {}", db.display()))?;
    let (existing,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM messages WHERE agent_id = ?")
        .bind(agent_id)
        .fetch_one(&pool)
        .await?;
    let existing = usize::try_from(existing)?;
    let now = now_ms();
    let question = "Could you look at the next part of the report and tell me what stands out?";
    let answer = "Here is what stands out: the figures for the second quarter are lower than \
                  the first, mostly because of the delayed shipments; the costs stayed flat; \
                  and the forecast assumes the delays end next month, which the notes do not \
                  support. I would check the shipment dates before relying on it.";
    let mut tx = pool.begin().await?;
    let mut parent = None::<String>;
    for ord in existing + 1..=total {
        let id = uuid::Uuid::now_v7().to_string();
        let user = ord % 2 == 1;
        let text = if user { question } else { answer };
        let blocks = serde_json::to_string(&[Block::Text { text: text.into() }])?;
        let at = now + i64::try_from(ord)?;
        sqlx::query(
            "INSERT INTO messages (id, agent_id, ord, role, blocks, status, parent_id, \
             input_tokens, output_tokens, created_at, updated_at) \
             VALUES (?, ?, ?, ?, ?, 'done', ?, ?, ?, ?, ?)",
        )
        .bind(&id)
        .bind(agent_id)
        .bind(i64::try_from(ord)?)
        .bind(if user { "user" } else { "assistant" })
        .bind(blocks)
        .bind(if user { None } else { parent.take() })
        .bind(if user { None } else { Some(1000_i64) })
        .bind(if user { None } else { Some(60_i64) })
        .bind(at)
        .bind(at)
        .execute(&mut *tx)
        .await?;
        if user {
            parent = Some(id);
        }
    }
    tx.commit().await?;
    pool.close().await;
    Ok(())
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}
