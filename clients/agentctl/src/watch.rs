//! `agentctl watch`: print events as they happen, for a second terminal.
//!
//! Only reads: it never calls a method that changes state. Ctrl-C ends it with status 0.
//! When the daemon goes away (a restart, an upgrade) it waits for the socket to answer
//! again and subscribes anew: for one agent with `sinceSeq` = the last seq it printed, so
//! nothing is missed or printed twice; when the daemon no longer has those events it says
//! so (`resyncRequired`) and goes on with the live ones. A watch of every agent has no
//! replay: it goes on with the live events.

use crate::endpoint::{Endpoint, Refusal};
use std::time::Duration;

use agent_proto::client::Client;
use agent_proto::rpc::AgentRpcClient;
use agent_proto::{Event, EventKind};
use tokio::signal::unix::{Signal, SignalKind, signal};

use crate::exit::{self, Exit};
use crate::format;

/// The first and the longest pause between two tries to reach a daemon that went away.
const RETRY_FIRST: Duration = Duration::from_millis(100);
const RETRY_MAX: Duration = Duration::from_secs(2);

pub(crate) async fn run(
    mut client: Client,
    endpoint: &Endpoint,
    agent: Option<String>,
    since: Option<u64>,
    json: bool,
) -> Exit {
    let what = agent
        .as_deref()
        .map_or("all agents".to_owned(), |a| format!("agent {a}"));
    // Take over Ctrl-C before subscribing, and once: a signal between two events is kept.
    let mut interrupt = match signal(SignalKind::interrupt()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: cannot handle Ctrl-C: {e}");
            return Exit::Error;
        }
    };
    // Where a new subscription resumes: the last seq printed (seqs are per agent, so only
    // a watch of one agent can resume).
    let mut last_seq = since;
    let mut reconnected = false;
    loop {
        let resume_at = agent.as_ref().and(last_seq);
        let mut sub = match client
            .subscribe_events(agent.clone(), resume_at, None)
            .await
        {
            Ok(sub) => sub,
            Err(e @ agent_proto::client::Error::Call(_)) => return exit::report(&e.into()),
            // Gone again before it answered: wait for it once more.
            Err(_) => match wait_for_daemon(endpoint, &mut interrupt).await {
                Ok(c) => {
                    client = c;
                    continue;
                }
                Err(exit) => return exit,
            },
        };
        // Also tells scripts (and tests) that the subscription is in place.
        match (reconnected, resume_at) {
            (false, _) => eprintln!("watching {what}; Ctrl-C to stop"),
            (true, Some(seq)) => eprintln!("reconnected to agentd; resuming after seq {seq}"),
            (true, None) => {
                eprintln!("reconnected to agentd; events while it was away are not shown")
            }
        }
        loop {
            let event = tokio::select! {
                event = sub.next() => event,
                _ = interrupt.recv() => return Exit::Ok,
            };
            match event {
                Some(Ok(event)) => {
                    if agent.is_some() {
                        last_seq = Some(event.seq);
                    }
                    print(&event, json);
                }
                Some(Err(e)) => eprintln!("warning: an event this agentctl cannot read: {e}"),
                None => break,
            }
        }
        eprintln!("the daemon closed the connection; waiting for it to come back (Ctrl-C to stop)");
        match wait_for_daemon(endpoint, &mut interrupt).await {
            Ok(c) => client = c,
            Err(exit) => return exit,
        }
        reconnected = true;
    }
}

fn print(event: &Event, json: bool) {
    if let EventKind::ResyncRequired { reason } = &event.kind {
        eprintln!(
            "resync required ({reason}): events were missed; the live ones follow \
             (agentctl messages {} shows the stored history)",
            event.agent_id
        );
    }
    if json {
        match serde_json::to_string(event) {
            Ok(line) => outln!("{line}"),
            Err(e) => eprintln!("warning: cannot print an event: {e}"),
        }
    } else {
        outln!("{}", format::event_line(event));
    }
}

/// Tries to connect until the daemon answers again; `Err` is how the watch ends instead
/// (Ctrl-C first, or a socket served by another user). Pauses grow from [`RETRY_FIRST`] to
/// [`RETRY_MAX`].
async fn wait_for_daemon(endpoint: &Endpoint, interrupt: &mut Signal) -> Result<Client, Exit> {
    let mut pause = RETRY_FIRST;
    loop {
        tokio::select! {
            () = tokio::time::sleep(pause) => {}
            _ = interrupt.recv() => return Err(Exit::Ok),
        }
        match endpoint.connect().await {
            Ok(client) => return Ok(client),
            // Not this user's daemon, or a token it refuses: the same refusal as at start.
            Err(Refusal::Refused(e)) => {
                eprintln!("error: {e}");
                return Err(Exit::Unreachable);
            }
            Err(Refusal::Unreachable(_)) => pause = (pause * 2).min(RETRY_MAX),
        }
    }
}
