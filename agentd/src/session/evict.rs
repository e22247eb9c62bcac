//! Unloading idle sessions: a session nobody uses (no run, no subscriber, nothing holding
//! it, no activity for `limits.idle_session_secs`) is dropped from the registry with its
//! replay ring; the next use loads it again from the store.
//!
//! Seqs continue exactly: the log's last seq is kept in [`Registry::evicted`] (a number
//! per agent) and taken by the next load, which starts there with the reservation the
//! store holds; a clean shutdown stores it. A client that reconnects after the eviction
//! with a `sinceSeq` before that seq gets `resyncRequired`, as after a restart.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError, Weak};
use std::time::Duration;

use super::{Session, SessionManager};
use crate::store::now_ms;

/// The loaded sessions, and the exact last seq of those unloaded while idle.
#[derive(Debug, Default)]
pub(super) struct Registry {
    pub(super) loaded: HashMap<String, Arc<Session>>,
    pub(super) evicted: HashMap<String, u64>,
}

impl Registry {
    /// Forgets an agent (deleted).
    pub(super) fn remove(&mut self, agent_id: &str) {
        self.loaded.remove(agent_id);
        self.evicted.remove(agent_id);
    }

    /// Unloads the sessions idle since before `cutoff` (unix ms); returns how many.
    pub(super) fn evict_idle(&mut self, cutoff: i64) -> usize {
        let Registry { loaded, evicted } = self;
        let before = loaded.len();
        loaded.retain(|agent_id, session| match idle_last_seq(session, cutoff) {
            Some(last_seq) => {
                evicted.insert(agent_id.clone(), last_seq);
                false
            }
            None => true,
        });
        before - loaded.len()
    }
}

/// The exact last seq of a session that may be unloaded: nobody holds it or its log
/// (no run, no subscription, no call in progress), it has no run slot, and it was not
/// used since `cutoff`.
fn idle_last_seq(session: &Arc<Session>, cutoff: i64) -> Option<u64> {
    // Only the registry holds the session, and only the session its log: nothing can
    // reach either while the registry's lock is held.
    if Arc::strong_count(session) != 1 || Arc::strong_count(&session.events) != 1 {
        return None;
    }
    if session.touched.load(Ordering::Relaxed) > cutoff {
        return None;
    }
    let state = session.state.lock().unwrap_or_else(PoisonError::into_inner);
    if state.run.is_some() || state.deleted {
        return None;
    }
    let (last_seq, subscribed, last_event_at) = session.events.idle_state();
    (!subscribed && last_event_at <= cutoff).then_some(last_seq)
}

/// Sweeps the registry now and then while the manager lives.
pub(super) fn spawn_sweeper(manager: &Arc<SessionManager>) {
    let idle = manager.config.idle_session;
    let every = (idle / 2).clamp(Duration::from_millis(100), Duration::from_secs(60));
    let manager: Weak<SessionManager> = Arc::downgrade(manager);
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return; // no runtime (a test building the manager alone): nothing is evicted
    };
    runtime.spawn(async move {
        let mut tick = tokio::time::interval(every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let Some(manager) = manager.upgrade() else {
                return;
            };
            if manager.shutting_down.is_cancelled() {
                return;
            }
            let idle_ms = i64::try_from(idle.as_millis()).unwrap_or(i64::MAX);
            let evicted = manager
                .sessions()
                .evict_idle(now_ms().saturating_sub(idle_ms));
            if evicted > 0 {
                tracing::info!(
                    evicted,
                    replay_bytes = manager.replay_bytes(),
                    "unloaded idle sessions"
                );
            }
        }
    });
}
