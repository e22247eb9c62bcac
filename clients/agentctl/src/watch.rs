//! `agentctl watch`: print events as they happen, for a second terminal.
//!
//! Only reads: it never calls a method that changes state. Ctrl-C ends it with status 0;
//! the daemon going away ends it with status 4.

use agent_proto::client::Client;
use agent_proto::rpc::AgentRpcClient;
use tokio::signal::unix::{SignalKind, signal};

use crate::exit::{self, Exit};
use crate::format;

pub(crate) async fn run(
    client: &Client,
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
    let mut sub = match client.subscribe_events(agent, since, None).await {
        Ok(sub) => sub,
        Err(e) => return exit::report(&e.into()),
    };
    // Also tells scripts (and tests) that the subscription is in place.
    eprintln!("watching {what}; Ctrl-C to stop");
    loop {
        let event = tokio::select! {
            event = sub.next() => event,
            _ = interrupt.recv() => return Exit::Ok,
        };
        match event {
            Some(Ok(event)) if json => match serde_json::to_string(&event) {
                Ok(line) => outln!("{line}"),
                Err(e) => eprintln!("warning: cannot print an event: {e}"),
            },
            Some(Ok(event)) => outln!("{}", format::event_line(&event)),
            Some(Err(e)) => eprintln!("warning: an event this agentctl cannot read: {e}"),
            None => {
                eprintln!("error: the daemon closed the connection");
                return Exit::Unreachable;
            }
        }
    }
}
