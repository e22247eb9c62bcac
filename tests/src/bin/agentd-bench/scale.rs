//! Scenario 16: several daemons on one PostgreSQL database (docs/scale-out.md). What the
//! cluster costs against one daemon on the same database:
//!
//! 1. Short turns (sendMessage -> loopFinished, a 3-delta answer) with one daemon, then with
//!    three: sends go round-robin over the three daemons, on an agent made on each, so a
//!    third of them land on the agent's home (local) and two thirds are forwarded to it.
//!    Each turn is watched on the daemon it is sent on (subscribed before, not timed):
//!    turns per second is turns over the sum of their sendMessage -> loopFinished times.
//! 2. A delta's latency from the mock writing it (its stamp) to a subscriber on the home
//!    daemon, and to one on another daemon (the home's events relayed over NOTIFY).
//! 3. The home daemon's CPU per turn with one daemon and with three, the others' CPU (the
//!    relay), and the notices per turn, counted by a LISTEN of the bench's own on both
//!    channels (a notice heard after the last turn's end may be missed: at most a turn's).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use agent_proto::client::{Client, Subscription};
use agent_proto::rpc::AgentRpcClient;
use agent_proto::{Event, EventKind};
use agentd_testkit::daemon::{DaemonOptions, TestDaemon, openai_config_with_window};
use agentd_testkit::events::{collect_run, text_of};
use agentd_testkit::mock_model::{MockModel, Reply, SENT_AT_MARKER, clock_us};
use agentd_testkit::send::SendByName;
use anyhow::{Context, bail};

use crate::measure::{median, ms, percentile};
use crate::scenarios::LARGE_WINDOW;
use crate::{Bench, Figure};

const S: &str = "16 scale-out";

/// The notice channels of the cluster (agentd/src/store/cluster.rs).
const CHANNELS: [&str; 2] = ["agentd_events", "agentd_commands"];

pub(crate) async fn scale_out(bench: &Bench) -> anyhow::Result<Vec<Figure>> {
    // Without PostgreSQL: fails (panics) in CI, else says why; either way no figures.
    let Some(cluster) = agentd_testkit::postgres::cluster("agentd-bench scale-out") else {
        bail!("scale-out needs PostgreSQL (see the line above): install postgresql");
    };
    let mock = MockModel::start_keep_alive().await;
    let turns = bench.size(200, 30);
    let mut figures = Vec::new();
    for n in [1, 3] {
        let url = cluster.database().await;
        let daemons = start_daemons(bench, &mock, &url, n).await?;
        figures.extend(round_robin(&mock, &daemons, turns).await?);
        keep_logs(bench, &daemons, &format!("scale-out-round-robin-{n}"));
    }
    for n in [1, 3] {
        let url = cluster.database().await;
        let daemons = start_daemons(bench, &mock, &url, n).await?;
        figures.extend(home_turns(&mock, &daemons, &url, turns).await?);
        keep_logs(bench, &daemons, &format!("scale-out-home-{n}"));
    }
    Ok(figures)
}

/// `n` daemons on the database `url`, one mock model.
async fn start_daemons(
    bench: &Bench,
    mock: &MockModel,
    url: &str,
    n: usize,
) -> anyhow::Result<Vec<TestDaemon>> {
    let mut daemons = Vec::with_capacity(n);
    for _ in 0..n {
        let mut env = vec![
            ("AGENTD_LOG".to_owned(), bench.log.clone()),
            ("AGENTD_STORE".to_owned(), url.to_owned()),
        ];
        env.extend(bench.daemon_env.iter().cloned());
        let options = DaemonOptions {
            config_toml: openai_config_with_window(&mock.url(), LARGE_WINDOW),
            env,
        };
        let daemon = TestDaemon::try_start_with(&bench.agentd, options)
            .await
            .map_err(|f| anyhow::anyhow!("agentd exited at start ({}):\n{}", f.status, f.log))?;
        daemons.push(daemon);
    }
    Ok(daemons)
}

fn keep_logs(bench: &Bench, daemons: &[TestDaemon], name: &str) {
    for (i, daemon) in daemons.iter().enumerate() {
        bench.keep_log(daemon, &format!("{name}-{i}"));
    }
}

async fn clients(daemons: &[TestDaemon]) -> Vec<Client> {
    let mut clients = Vec::with_capacity(daemons.len());
    for daemon in daemons {
        clients.push(daemon.client().await);
    }
    clients
}

/// A chat agent named `bench` (also scenario 15's).
pub(crate) async fn new_agent(client: &Client) -> anyhow::Result<String> {
    let agent = client
        .create_agent(
            Some("bench".into()),
            None,
            None,
            None,
            None,
            None,
            None,
            None,
            None,
        )
        .await
        .context("createAgent")?;
    Ok(agent.id)
}

async fn subscribe(client: &Client, agent: &str) -> anyhow::Result<Subscription<Event>> {
    client
        .subscribe_events(Some(agent.to_owned()), None, None)
        .await
        .context("subscribeEvents")
}

/// Sum of the CPU times of `daemons`.
fn cpu_of(daemons: &[&TestDaemon]) -> anyhow::Result<Duration> {
    let mut sum = Duration::ZERO;
    for daemon in daemons {
        let pid = daemon.pid().context("agentd is not running")?;
        sum += crate::measure::cpu_time(pid)?;
    }
    Ok(sum)
}

/// Part 1: `turns` short turns; turn k on agent k % n (made on daemon k % n, its home),
/// sent on daemon (k / n) % n and watched there. Local when the two are the same.
async fn round_robin(
    mock: &MockModel,
    daemons: &[TestDaemon],
    turns: usize,
) -> anyhow::Result<Vec<Figure>> {
    let n = daemons.len();
    let clients = clients(daemons).await;
    let mut agents = Vec::with_capacity(n);
    for client in &clients {
        agents.push(new_agent(client).await?);
    }
    let all: Vec<&TestDaemon> = daemons.iter().collect();
    let cpu_before = cpu_of(&all)?;
    let (mut local, mut forwarded, mut total) = (Vec::new(), Vec::new(), Duration::ZERO);
    for k in 0..turns {
        let (home, sender) = (k % n, (k / n) % n);
        let mut sub = subscribe(&clients[sender], &agents[home]).await?;
        mock.push(Reply::openai_text(&["Hello", " there", "."]));
        let start = Instant::now();
        clients[sender]
            .send_plain(agents[home].clone(), "Say hello.".into())
            .await
            .context("sendMessage")?;
        let events = collect_run(&mut sub, Duration::from_secs(30)).await;
        let took = start.elapsed();
        if text_of(&events) != "Hello there." {
            bail!("a turn answered {:?}", text_of(&events));
        }
        total += took;
        let into = if home == sender {
            &mut local
        } else {
            &mut forwarded
        };
        into.push(ms(took));
    }
    let cpu = cpu_of(&all)? - cpu_before;
    let label = if n == 1 {
        "1 daemon".to_owned()
    } else {
        format!(
            "{n} daemons ({} local, {} forwarded)",
            local.len(),
            forwarded.len()
        )
    };
    let mut figures = vec![
        Figure::new(
            S,
            format!("{label}: short turns per second, {turns} in sequence"),
            turns as f64 / total.as_secs_f64(),
            "turns/s",
        ),
        Figure::new(
            S,
            "  sendMessage -> loopFinished, local, median",
            median(&local),
            "ms",
        ),
    ];
    if !forwarded.is_empty() {
        figures.push(Figure::new(
            S,
            "  sendMessage -> loopFinished, forwarded, median",
            median(&forwarded),
            "ms",
        ));
    }
    figures.push(Figure::new(
        S,
        "  CPU per turn, all daemons together",
        ms(cpu) / turns as f64,
        "ms",
    ));
    Ok(figures)
}

/// Counts the notices on the cluster's channels, from a connection of the bench's own.
async fn count_notices(url: &str) -> anyhow::Result<Arc<AtomicU64>> {
    let mut listener = sqlx::postgres::PgListener::connect(url)
        .await
        .context("LISTEN connection")?;
    listener.listen_all(CHANNELS).await.context("LISTEN")?;
    let count = Arc::new(AtomicU64::new(0));
    let counted = count.clone();
    tokio::spawn(async move {
        while listener.recv().await.is_ok() {
            counted.fetch_add(1, Ordering::Relaxed);
        }
    });
    Ok(count)
}

/// Parts 2 and 3: `turns` stamped 3-delta turns on an agent made and sent on daemon 0 (its
/// home), watched there and, with several daemons, on daemon 1 too.
async fn home_turns(
    mock: &MockModel,
    daemons: &[TestDaemon],
    url: &str,
    turns: usize,
) -> anyhow::Result<Vec<Figure>> {
    let n = daemons.len();
    let clients = clients(daemons).await;
    let agent = new_agent(&clients[0]).await?;
    let mut on_home = subscribe(&clients[0], &agent).await?;
    let mut elsewhere = match clients.get(1) {
        Some(other) => Some(subscribe(other, &agent).await?),
        None => None,
    };
    let notices = count_notices(url).await?;
    let others: Vec<&TestDaemon> = daemons.iter().skip(1).collect();
    let (home_cpu, others_cpu) = (cpu_of(&[&daemons[0]])?, cpu_of(&others)?);
    let notices_before = notices.load(Ordering::Relaxed);
    let stamp = format!("{SENT_AT_MARKER};");
    let (mut home_lat, mut other_lat) = (Vec::new(), Vec::new());
    for _ in 0..turns {
        mock.push(Reply::openai_text(&[&stamp, &stamp, &stamp]).stamped());
        clients[0]
            .send_plain(agent.clone(), "Stamp it.".into())
            .await
            .context("sendMessage")?;
        let watch_other = async {
            match elsewhere.as_mut() {
                Some(sub) => latencies(sub).await,
                None => Ok(Vec::new()),
            }
        };
        let (home, other) = tokio::join!(latencies(&mut on_home), watch_other);
        home_lat.extend(home?);
        other_lat.extend(other?);
    }
    let home_cpu = cpu_of(&[&daemons[0]])? - home_cpu;
    let others_cpu = cpu_of(&others)? - others_cpu;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let heard = notices.load(Ordering::Relaxed) - notices_before;
    let per_turn = |d: Duration| ms(d) / turns as f64;
    let label = if n == 1 { "1 daemon" } else { "3 daemons" };
    let mut figures = vec![
        Figure::new(
            S,
            format!("{label}, sent on the home: delta latency to the home's subscriber, p50"),
            median(&home_lat),
            "ms",
        ),
        Figure::new(S, "  p99", percentile(&home_lat, 99.0), "ms"),
    ];
    if n > 1 {
        figures.push(Figure::new(
            S,
            "  delta latency to a subscriber on another daemon, p50",
            median(&other_lat),
            "ms",
        ));
        figures.push(Figure::new(S, "  p99", percentile(&other_lat, 99.0), "ms"));
    }
    figures.push(Figure::new(
        S,
        format!("  home daemon CPU per turn ({turns} turns)"),
        per_turn(home_cpu),
        "ms",
    ));
    if n > 1 {
        figures.push(Figure::new(
            S,
            "  the other daemons' CPU per turn (together)",
            per_turn(others_cpu),
            "ms",
        ));
    }
    figures.push(Figure::new(
        S,
        "  notices per turn (both channels)",
        heard as f64 / turns as f64,
        "",
    ));
    Ok(figures)
}

/// Reads one run to its loopFinished; the latency of each delta's stamps, in ms.
async fn latencies(sub: &mut Subscription<Event>) -> anyhow::Result<Vec<f64>> {
    let mut got = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let event = tokio::time::timeout_at(deadline, sub.next())
            .await
            .context("no loopFinished within 30 s")?
            .context("the subscription ended")?
            .context("a bad event")?;
        let now_us = clock_us();
        match event.kind {
            EventKind::TextDelta { delta, .. } => {
                for stamp in delta.split_terminator(';') {
                    let sent: u64 = stamp
                        .parse()
                        .with_context(|| format!("not a stamp: {stamp:?}"))?;
                    got.push(now_us.saturating_sub(sent) as f64 / 1000.0);
                }
            }
            EventKind::LoopFinished { .. } => break,
            _ => {}
        }
    }
    if got.len() != 3 {
        bail!("a turn streamed {} stamps, not 3", got.len());
    }
    Ok(got)
}
