//! A race harness: a scenario repeated for many trials with random jitter between the
//! calls that race, and the invariants every trial must keep, checked after each one.
//!
//! - **No agent stuck**: once the trial's calls are answered, the agent settles (no run left
//!   `generating`), and it takes the next message (after a cancel if a prompt waits).
//! - **One resolution per call**: at most one `permissionResolved` per tool call.
//! - **Nothing after `agentDeleted`**: it is the agent's last event.
//! - **Stored = streamed**: the text of every finished answer rebuilt from its deltas is the
//!   stored text; seqs are contiguous.
//!
//! The number of trials is `RACE_TRIALS` (default [`DEFAULT_TRIALS`], kept small for CI);
//! the seed is `RACE_SEED` (default fixed), so a failing trial can be replayed.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use agent_proto::client::{Client, Subscription};
use agent_proto::rpc::AgentRpcClient;
use agent_proto::{Block, Event, EventKind, MessageStatus, SessionStatus};

use crate::rng::Rng;

/// Trials per scenario when `RACE_TRIALS` is not set.
pub const DEFAULT_TRIALS: usize = 6;

/// How many trials to run.
pub fn trials() -> usize {
    std::env::var("RACE_TRIALS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(DEFAULT_TRIALS)
}

/// The generator of one scenario's jitter.
pub fn rng(scenario: u64) -> Rng {
    let seed = std::env::var("RACE_SEED")
        .ok()
        .and_then(|n| n.parse::<u64>().ok())
        .unwrap_or(0x9e37_79b9_7f4a_7c15);
    Rng((seed ^ scenario.wrapping_mul(0x2545_f491_4f6c_dd1d)) | 1)
}

/// A random pause of up to `max`: where in the other call's life this one lands.
pub async fn jitter(rng: &mut Rng, max: Duration) {
    let micros = u64::try_from(max.as_micros()).unwrap_or(u64::MAX).max(1);
    let pause = rng.next_u64() % micros;
    if pause > 0 {
        tokio::time::sleep(Duration::from_micros(pause)).await;
    }
}

/// Reads every event of one agent from `sub` (subscribed before the trial started) until
/// the agent has settled: its `agentDeleted`, or a run's `loopFinished` as the last event,
/// with no run active and every seq up to the session's last one seen (the status changes
/// just before `loopFinished`, so the status alone does not say a run has ended). Call it
/// once the trial's calls have answered: a run they start has started by then. Panics after
/// `timeout`.
pub async fn settle(
    client: &Client,
    agent_id: &str,
    sub: &mut Subscription<Event>,
    timeout: Duration,
) -> Vec<Event> {
    let deadline = tokio::time::Instant::now() + timeout;
    let mut events: Vec<Event> = Vec::new();
    loop {
        if events
            .iter()
            .any(|e| matches!(e.kind, EventKind::AgentDeleted {}))
        {
            return events;
        }
        let seen = events.last().map(|e| e.seq);
        let ended = events
            .last()
            .is_some_and(|e| matches!(e.kind, EventKind::LoopFinished { .. }));
        let info = client.get_session(agent_id.to_owned()).await;
        match &info {
            Ok(info)
                if ended
                    && info.status != SessionStatus::Generating
                    && seen >= Some(info.last_seq) =>
            {
                return events;
            }
            // Gone (deleted): the subscription brings the rest up to `agentDeleted`.
            Ok(_) | Err(_) => {}
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "agent {agent_id} did not settle within {timeout:?} (session: {info:?}); events: {}",
            crate::events::summary(&events)
        );
        match tokio::time::timeout(Duration::from_millis(200), sub.next()).await {
            Ok(Some(Ok(event))) => events.push(event),
            Ok(Some(Err(e))) => panic!("an event that does not decode: {e}"),
            // The subscription ended (the agent was deleted) or nothing came yet.
            Ok(None) => return events,
            Err(_) => {}
        }
    }
}

/// The transcript invariants: contiguous seqs, nothing after `agentDeleted`, at most one
/// `permissionResolved` per call. Returns what is wrong.
pub fn check_transcript(events: &[Event]) -> Result<(), String> {
    let mut last: Option<u64> = None;
    let mut deleted = false;
    let mut resolved: HashSet<(String, String)> = HashSet::new();
    for event in events {
        if let Some(prev) = last
            && event.seq != prev + 1
        {
            return Err(format!("seq {} follows {prev}", event.seq));
        }
        last = Some(event.seq);
        if deleted {
            return Err(format!(
                "{} (seq {}) after agentDeleted",
                event.kind.type_name(),
                event.seq
            ));
        }
        match &event.kind {
            EventKind::AgentDeleted {} => deleted = true,
            EventKind::PermissionResolved {
                message_id,
                tool_call_id,
                ..
            } if !resolved.insert((message_id.clone(), tool_call_id.clone())) => {
                return Err(format!(
                    "a second permissionResolved for call {tool_call_id} (seq {})",
                    event.seq
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

/// Stored = streamed: every answer that completed in the transcript has, in the store, the
/// text its deltas spelled.
pub async fn check_stored_equals_streamed(
    client: &Client,
    agent_id: &str,
    events: &[Event],
) -> Result<(), String> {
    let mut streamed: HashMap<&str, String> = HashMap::new();
    let mut completed: Vec<&str> = Vec::new();
    for event in events {
        match &event.kind {
            EventKind::TextDelta { message_id, delta } => {
                streamed.entry(message_id).or_default().push_str(delta);
            }
            EventKind::MessageCompleted {
                message_id,
                status: MessageStatus::Done,
                ..
            } => completed.push(message_id),
            _ => {}
        }
    }
    if completed.is_empty() {
        return Ok(());
    }
    let messages = client
        .list_messages(agent_id.to_owned(), None, Some(500), None)
        .await
        .map_err(|e| format!("listMessages: {e}"))?
        .messages;
    for id in completed {
        let Some(message) = messages.iter().find(|m| m.id == id) else {
            return Err(format!("completed message {id} is not stored"));
        };
        let stored: String = message
            .blocks
            .iter()
            .filter_map(|b| match b {
                Block::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        let sent = streamed.get(id).cloned().unwrap_or_default();
        if stored != sent {
            return Err(format!(
                "message {id}: stored {stored:?}, streamed {sent:?}"
            ));
        }
    }
    Ok(())
}

/// No agent stuck: a settled agent that still exists shows the prompt it waits for, and
/// takes a cancel of anything pending (the scenario then sends it a new message).
pub async fn check_not_stuck(client: &Client, agent_id: &str) -> Result<(), String> {
    let info = match client.get_session(agent_id.to_owned()).await {
        Ok(info) => info,
        Err(_) => return Ok(()), // deleted
    };
    if info.status == SessionStatus::WaitingPermission && info.pending_permissions.is_empty() {
        return Err("waiting for permission with no pending prompt".into());
    }
    if matches!(
        info.status,
        SessionStatus::WaitingPermission | SessionStatus::Paused
    ) {
        let cancelled = client
            .cancel_loop(agent_id.to_owned())
            .await
            .map_err(|e| format!("cancelLoop: {e}"))?;
        if !cancelled.cancelled {
            return Err(format!("a {:?} agent could not be cancelled", info.status));
        }
    }
    Ok(())
}
