//! Scenarios of long use: memory after many turns (the replay rings), and the cost of a
//! turn as the history grows.

use std::time::Instant;

use agentd_testkit::mock_model::Reply;
use anyhow::{Context, bail};
use serde_json::json;

use crate::measure::{MIB, median, ms_between, peak_rss, rss};
use crate::scenarios::{
    LARGE_WINDOW, create_agent, fill_store, parts, pid_of, settle, start_with_window,
};
use crate::wire::{Conn, Incoming};
use crate::{Bench, Figure, Target};

/// 9. Memory of long sessions: `agents` agents, each with its own subscribed client, take
///    `turns` turns of 50-token answers (all agents at once); the daemon's RSS before and
///    after. Then a client of the first agent reconnects with `sinceSeq` 500 events back
///    and must get them all, in order.
pub(crate) async fn long_sessions(bench: &Bench) -> anyhow::Result<Vec<Figure>> {
    let mut figures = sessions_run(
        bench,
        "9 long sessions, 10 agents",
        bench.size(10, 10),
        bench.size(400, 40),
        40.0,
    )
    .await?;
    figures.extend(
        sessions_run(
            bench,
            "9 long sessions, 500 agents",
            bench.size(500, 50),
            bench.size(40, 10),
            150.0,
        )
        .await?,
    );
    Ok(figures)
}

async fn sessions_run(
    bench: &Bench,
    s: &'static str,
    agents: usize,
    turns: usize,
    bar_mib: f64,
) -> anyhow::Result<Vec<Figure>> {
    let limits = format!("[limits]\nmax_connections = {}\n", agents + 64);
    let (mock, daemon) = start_with_window(bench, LARGE_WINDOW, &limits).await?;
    let pid = pid_of(&daemon)?;
    let mut conn = Conn::connect(daemon.socket()).await?;
    let mut clients = Vec::with_capacity(agents);
    for _ in 0..agents {
        let id = create_agent(&mut conn, json!({})).await?;
        let mut c = Conn::connect(daemon.socket()).await?;
        c.subscribe(Some(&id)).await?;
        clients.push((id, c));
    }
    settle().await;
    let before = rss(pid)? as f64;
    let answer = parts("tok ", 50);
    for _ in 0..agents * turns {
        mock.push(Reply::openai_text(&answer));
    }
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for (id, mut c) in clients {
        tasks.spawn(async move {
            for _ in 0..turns {
                c.turn(&id, "Fifty tokens, please.").await?;
            }
            anyhow::Ok((id, c.seqs.gaps))
        });
    }
    let mut ids = Vec::new();
    let mut gaps = 0;
    while let Some(done) = tasks.join_next().await {
        let (id, g) = done??;
        ids.push(id);
        gaps += g;
    }
    let took = started.elapsed();
    settle().await;
    let after = rss(pid)? as f64;
    let peak = peak_rss(pid)? as f64;

    // A client that went away comes back 500 events later.
    let first = ids.first().context("no agent")?;
    let session = conn.call("getSession", json!({"agentId": first})).await?;
    let last = session["lastSeq"]
        .as_u64()
        .context("getSession without lastSeq")?;
    let since = last.saturating_sub(500);
    let mut back = Conn::connect(daemon.socket()).await?;
    back.call("subscribe", json!({"agentId": first, "sinceSeq": since}))
        .await?;
    let mut replayed = 0;
    let mut expected = since + 1;
    let mut replay_gaps = 0;
    while expected <= last {
        if let (_, Incoming::Event(event)) = back.next().await? {
            if event.kind == "resyncRequired" || event.seq != expected {
                replay_gaps += 1;
                break;
            }
            replayed += 1;
            expected += 1;
        }
    }
    bench.keep_log(&daemon, "long-sessions");
    Ok(vec![
        Figure::new(
            s,
            format!("RSS after {turns} turns of 50 tokens each"),
            after / MIB,
            "MiB",
        )
        .target(Target::Below(bar_mib)),
        Figure::new(s, "  RSS before the turns", before / MIB, "MiB"),
        Figure::new(s, "  peak RSS", peak / MIB, "MiB"),
        Figure::new(
            s,
            "  turns per second (all agents)",
            (agents * turns) as f64 / took.as_secs_f64(),
            "turns/s",
        ),
        Figure::new(
            s,
            "seq gaps + resyncRequired while streaming",
            gaps as f64,
            "",
        )
        .target(Target::Exactly(0.0)),
        Figure::new(
            s,
            format!(
                "reconnect with sinceSeq = lastSeq - {}: events replayed",
                last - since
            ),
            replayed as f64,
            "",
        ),
        Figure::new(
            s,
            "  gaps or resyncRequired in the replay",
            replay_gaps as f64,
            "",
        )
        .target(Target::Exactly(0.0)),
    ])
}

/// 10. The cost of a turn as the history grows: agents with 200, 2,000 and 4,000 messages
///     (rows written into the store, as in scenario 8), in a 32k window (summaries off, so
///     the oldest rounds are left out), then warm turns: sendMessage -> model request
///     read, median of 20 after two turns that warm the agent up. For comparison, the same
///     in a window large enough that every message is sent.
pub(crate) async fn history(bench: &Bench) -> anyhow::Result<Vec<Figure>> {
    let sizes = [200, bench.size(2000, 500), bench.size(4000, 1000)];
    let mut figures =
        history_run(bench, "10 history, 32k window", 32_768, &sizes, Some(2.0)).await?;
    figures.extend(
        history_run(
            bench,
            "10 history, all sent",
            LARGE_WINDOW,
            &sizes[..2],
            None,
        )
        .await?,
    );
    Ok(figures)
}

async fn history_run(
    bench: &Bench,
    s: &'static str,
    window: u32,
    sizes: &[usize],
    bar_at_2000: Option<f64>,
) -> anyhow::Result<Vec<Figure>> {
    let no_summaries = "[context]\nsummarize_threshold = 1.0\nkeep_rounds = 1000000\n";
    let (mock, mut daemon) = start_with_window(bench, window, no_summaries).await?;
    let mut conn = Conn::connect(daemon.socket()).await?;
    let mut agents = Vec::new();
    for _ in sizes {
        agents.push(create_agent(&mut conn, json!({})).await?);
    }
    drop(conn);
    daemon.terminate().await;
    for (agent, &size) in agents.iter().zip(sizes) {
        fill_store(&daemon.db_path(), agent, size).await?;
    }
    daemon.restart().await;
    let mut conn = Conn::connect(daemon.socket()).await?;
    let mut figures = Vec::new();
    for (agent, &size) in agents.iter().zip(sizes) {
        conn.subscribe(Some(agent)).await?;
        let mut times = Vec::new();
        let mut sent_messages = 0;
        for n in 0..22 {
            mock.push(Reply::openai_text(&["Noted", "."]));
            let turn = conn.turn(agent, "One more question.").await?;
            let request = mock.last_request().context("no model request")?;
            if n >= 2 {
                times.push(ms_between(request.received_at, turn.sent));
            }
            sent_messages = request.body["messages"].as_array().map_or(0, Vec::len);
        }
        if sent_messages == 0 {
            bail!("the model got no messages");
        }
        figures.push(
            Figure::new(
                s,
                format!("{size}-message agent: sendMessage -> model request ({sent_messages} sent), median"),
                median(&times),
                "ms",
            )
            .target(match bar_at_2000 {
                Some(bar) if size >= 2000 => Target::Below(bar),
                _ => Target::None,
            }),
        );
    }
    bench.keep_log(&daemon, "history");
    Ok(figures)
}
