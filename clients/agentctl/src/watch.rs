//! `agentctl watch`: print events as they happen, for a second terminal.

use agent_proto::client::Client;
use agent_proto::rpc::AgentRpcClient;

use crate::exit::{self, Exit};
use crate::format;

pub async fn run(client: &Client, agent: Option<String>, since: Option<u64>, json: bool) -> Exit {
    let what = agent
        .as_deref()
        .map_or("all agents".to_owned(), |a| format!("agent {a}"));
    let mut sub = match client.subscribe_events(agent, since).await {
        Ok(sub) => sub,
        Err(e) => return exit::report(&e.into()),
    };
    // Also tells scripts (and tests) that the subscription is in place.
    eprintln!("watching {what}; Ctrl-C to stop");
    loop {
        let event = tokio::select! {
            event = sub.next() => event,
            _ = tokio::signal::ctrl_c() => return Exit::Ok,
        };
        match event {
            Some(Ok(event)) if json => match serde_json::to_string(&event) {
                Ok(line) => println!("{line}"),
                Err(e) => eprintln!("warning: cannot print an event: {e}"),
            },
            Some(Ok(event)) => println!("{}", format::event_line(&event)),
            Some(Err(e)) => eprintln!("warning: an event this agentctl cannot read: {e}"),
            None => {
                eprintln!("error: the daemon closed the connection");
                return Exit::Unreachable;
            }
        }
    }
}
