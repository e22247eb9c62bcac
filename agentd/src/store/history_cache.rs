//! The histories read last, kept in memory so the model call of a warm agent does not
//! read its whole history from SQLite again (2.9 ms for 200 messages through sqlx; see
//! docs/performance.md).
//!
//! Coherence rests on two rules, both kept by `Store`:
//! - every write of a message row tells the cache after it commits and before it gives the
//!   single write connection back ([`HistoryCache::append`], [`HistoryCache::update`],
//!   [`HistoryCache::forget`]), so
//!   the cache sees writes in commit order; applying a write is idempotent (by message id);
//! - a history read from the database is kept only if no write touched the cache while
//!   it was read ([`HistoryCache::version`] before the read, [`HistoryCache::keep`]
//!   after): a read that missed a write is never stored.
//!
//! Bounded: a few agents (the least recently used go first) and no history longer than
//! [`MAX_MESSAGES`], so a long-idle daemon with thousands of agents holds nothing extra.

use std::sync::{Arc, Mutex, PoisonError};

use agent_proto::Message;

/// Agents whose histories are kept.
const CAPACITY: usize = 16;

/// Longer histories are not kept (a 100,000-message agent would hold ~50 MB).
const MAX_MESSAGES: usize = 5_000;

#[derive(Debug, Default)]
pub(super) struct HistoryCache {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// Bumped by every write; see the module doc.
    version: u64,
    /// Most recently used last.
    entries: Vec<(String, Arc<Vec<Message>>)>,
}

impl Inner {
    fn position(&self, agent_id: &str) -> Option<usize> {
        self.entries.iter().position(|(id, _)| id == agent_id)
    }
}

impl HistoryCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The agent's kept history, oldest first.
    pub(super) fn get(&self, agent_id: &str) -> Option<Arc<Vec<Message>>> {
        let mut inner = self.lock();
        let at = inner.position(agent_id)?;
        let entry = inner.entries.remove(at);
        let history = entry.1.clone();
        inner.entries.push(entry);
        Some(history)
    }

    /// Taken before reading a history from the database; see [`HistoryCache::keep`].
    pub(super) fn version(&self) -> u64 {
        self.lock().version
    }

    /// Keeps a history read from the database, unless a write came since `version`.
    pub(super) fn keep(&self, agent_id: &str, version: u64, history: Arc<Vec<Message>>) {
        if history.len() > MAX_MESSAGES {
            return;
        }
        let mut inner = self.lock();
        if inner.version != version {
            return;
        }
        if let Some(at) = inner.position(agent_id) {
            inner.entries.remove(at);
        }
        if inner.entries.len() >= CAPACITY {
            inner.entries.remove(0);
        }
        inner.entries.push((agent_id.to_owned(), history));
    }

    /// A new message was stored at the end of its agent's history. Call after the commit,
    /// holding the write connection.
    pub(super) fn append(&self, message: &Message) {
        self.apply(&message.agent_id, |history| {
            match history.iter().rposition(|m| m.id == message.id) {
                Some(i) => history[i] = message.clone(),
                None => history.push(message.clone()),
            }
            true
        });
    }

    /// A message's blocks, status, usage and update time were written (what
    /// `update_message` stores; the other fields never change there). Call after the
    /// commit, holding the write connection.
    pub(super) fn update(&self, message: &Message) {
        self.apply(&message.agent_id, |history| {
            let Some(kept) = history.iter_mut().rev().find(|m| m.id == message.id) else {
                // Not in the kept history: it is not what the database holds; drop it.
                return false;
            };
            // A fresh clone, not `clone_from`: a streaming message is saved many times as
            // its text grows, and reusing the kept strings grew them by doubling, so a
            // finished message kept up to twice its text (heaptrack: 5 of 20 MiB after 10
            // agents x 400 turns).
            kept.blocks = message.blocks.clone();
            kept.status = message.status;
            kept.usage = message.usage;
            kept.updated_at = message.updated_at;
            true
        });
    }

    /// Bumps the version and edits the agent's kept history, if any; the edit returns
    /// false when the history cannot be kept.
    fn apply(&self, agent_id: &str, edit: impl FnOnce(&mut Vec<Message>) -> bool) {
        let mut inner = self.lock();
        inner.version += 1;
        let Some(at) = inner.position(agent_id) else {
            return;
        };
        let history = Arc::make_mut(&mut inner.entries[at].1);
        if !edit(history) || history.len() > MAX_MESSAGES {
            inner.entries.remove(at);
        }
    }

    /// The agent's messages changed in a way not worth mirroring (a variant, a delete):
    /// the next read goes to the database.
    pub(super) fn forget(&self, agent_id: &str) {
        let mut inner = self.lock();
        inner.version += 1;
        if let Some(at) = inner.position(agent_id) {
            inner.entries.remove(at);
        }
    }

    /// Many agents changed at once (start-up repairs).
    pub(super) fn clear(&self) {
        let mut inner = self.lock();
        inner.version += 1;
        inner.entries.clear();
    }
}

#[cfg(test)]
mod tests {
    use agent_proto::{Block, MessageStatus, Role};

    use super::*;

    fn message(agent: &str, id: &str, text: &str) -> Message {
        Message::new(
            id,
            agent,
            Role::User,
            vec![Block::Text { text: text.into() }],
            MessageStatus::Done,
            1,
        )
    }

    fn ids(history: &[Message]) -> Vec<&str> {
        history.iter().map(|m| m.id.as_str()).collect()
    }

    #[test]
    fn writes_are_mirrored_in_kept_histories_and_applied_once() {
        let cache = HistoryCache::default();
        let v = cache.version();
        cache.keep("a", v, Arc::new(vec![message("a", "1", "hi")]));
        cache.append(&message("a", "2", "there"));
        cache.append(&message("a", "2", "there"));
        cache.update(&message("a", "2", "there!"));
        cache.append(&message("b", "3", "elsewhere"));
        let history = cache.get("a").unwrap();
        assert_eq!(ids(&history), ["1", "2"]);
        assert_eq!(history[1].text(), "there!");
        assert!(
            cache.get("b").is_none(),
            "b was never read, so it is not kept"
        );
        cache.update(&message("a", "9", "not kept here"));
        assert!(
            cache.get("a").is_none(),
            "an update of an unknown message drops the copy"
        );
    }

    #[test]
    fn a_read_that_overlapped_a_write_is_not_kept() {
        let cache = HistoryCache::default();
        let before = cache.version();
        cache.append(&message("a", "2", "written while the read ran"));
        cache.keep("a", before, Arc::new(vec![message("a", "1", "stale")]));
        assert!(cache.get("a").is_none());
        cache.keep(
            "a",
            cache.version(),
            Arc::new(vec![message("a", "1", "fresh")]),
        );
        assert!(cache.get("a").is_some());
    }

    #[test]
    fn forget_clear_and_the_bounds() {
        let cache = HistoryCache::default();
        for n in 0..=CAPACITY {
            let agent = format!("agent{n}");
            cache.keep(&agent, cache.version(), Arc::new(vec![]));
        }
        assert!(
            cache.get("agent0").is_none(),
            "the least recently used went first"
        );
        assert!(cache.get(&format!("agent{CAPACITY}")).is_some());
        cache.forget("agent1");
        assert!(cache.get("agent1").is_none());
        cache.clear();
        assert!(cache.get("agent2").is_none());
        let long = vec![message("x", "1", ""); MAX_MESSAGES + 1];
        cache.keep("x", cache.version(), Arc::new(long));
        assert!(cache.get("x").is_none(), "too long to keep");
    }
}
