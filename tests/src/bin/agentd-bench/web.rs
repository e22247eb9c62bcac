//! Scenario 15: the WebSocket listener against the socket. The same typed client
//! (jsonrpsee's, as agentctl uses) over each door of one daemon: a call's round trip and a
//! short turn's. What the second door adds: a TCP hop, WebSocket framing and the socket
//! pair the listener serves each connection through.

use std::time::{Duration, Instant};

use agent_proto::client::Client;
use agent_proto::rpc::AgentRpcClient;
use agentd_testkit::daemon::{DaemonOptions, TestDaemon, openai_config_with_window};
use agentd_testkit::events::{collect_run, text_of};
use agentd_testkit::mock_model::{MockModel, Reply};
use agentd_testkit::send::SendByName;
use anyhow::{Context, bail};

use crate::measure::{median, percentile};
use crate::scenarios::LARGE_WINDOW;
use crate::{Bench, Figure};

pub(crate) async fn websocket(bench: &Bench) -> anyhow::Result<Vec<Figure>> {
    let mock = MockModel::start_keep_alive().await;
    let mut env = vec![
        ("AGENTD_LOG".to_owned(), bench.log.clone()),
        ("AGENTD_LISTEN".to_owned(), "127.0.0.1:0".to_owned()),
    ];
    env.extend(bench.daemon_env.iter().cloned());
    let options = DaemonOptions {
        config_toml: openai_config_with_window(&mock.url(), LARGE_WINDOW),
        env,
    };
    let daemon = TestDaemon::try_start_with(&bench.agentd, options)
        .await
        .map_err(|f| anyhow::anyhow!("agentd exited at start ({}):\n{}", f.status, f.log))?;
    let socket = daemon.client().await;
    let ws = daemon.ws_client().await;
    let calls = bench.size(2000, 200);
    let turns = bench.size(200, 20);
    let s = "15 websocket";
    let mut figures = Vec::new();
    for (door, client) in [("socket", &socket), ("websocket", &ws)] {
        let round_trips = round_trips(client, calls).await?;
        let turn_times = turns_of(client, &mock, turns).await?;
        figures.push(Figure::new(
            s,
            format!("{door}: listAgents round trip, median of {calls}"),
            median(&round_trips),
            "ms",
        ));
        figures.push(Figure::new(
            s,
            format!("{door}: round trip p99"),
            percentile(&round_trips, 99.0),
            "ms",
        ));
        figures.push(Figure::new(
            s,
            format!("{door}: sendMessage -> loopFinished (3 deltas), median of {turns}"),
            median(&turn_times),
            "ms",
        ));
    }
    bench.keep_log(&daemon, "websocket");
    Ok(figures)
}

async fn round_trips(client: &Client, n: usize) -> anyhow::Result<Vec<f64>> {
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        let start = Instant::now();
        client
            .list_agents(None, None, None, None, None)
            .await
            .context("listAgents")?;
        times.push(start.elapsed().as_secs_f64() * 1000.0);
    }
    Ok(times)
}

async fn turns_of(client: &Client, mock: &MockModel, n: usize) -> anyhow::Result<Vec<f64>> {
    let agent = crate::scale::new_agent(client).await?;
    let mut sub = client
        .subscribe_events(Some(agent.clone()), None, None)
        .await
        .context("subscribe")?;
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        mock.push(Reply::openai_text(&["Hello", " there", "."]));
        let start = Instant::now();
        client
            .send_plain(agent.clone(), "Say hello.".into())
            .await
            .context("sendMessage")?;
        let events = collect_run(&mut sub, Duration::from_secs(30)).await;
        times.push(start.elapsed().as_secs_f64() * 1000.0);
        if text_of(&events) != "Hello there." {
            bail!("a turn answered {:?}", text_of(&events));
        }
    }
    Ok(times)
}
