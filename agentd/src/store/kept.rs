//! Small rows read on every turn, kept in memory by agent id: the agent row, its
//! summaries, the grants that apply to it, its undelivered background results. Each was a
//! round trip to sqlx's SQLite thread (~0.1 ms of a turn's latency, and two thread
//! switches) on every `sendMessage`, model call or tool call (docs/performance.md).
//!
//! Coherence rests on the history cache's two rules (`history_cache.rs`), kept by `Store`:
//! - every write of a kept table tells its [`Kept`] after it commits: [`Kept::forget`] (or
//!   [`Kept::clear`]) drops what the write may have changed, and [`Kept::edit`], which
//!   changes a kept value in place, is called while the write connection is still held,
//!   so edits apply in commit order;
//! - a value read from the database is kept only if no write came while it was read
//!   ([`Kept::version`] before the read, [`Kept::keep`] after).
//!
//! Bounded by a number of entries: when full, an arbitrary entry goes (these are cheap to
//! read again; a daemon with 10,000 idle agents does not hold a row for each).

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use agent_proto::Agent;

use super::{BackgroundTask, Grant, Summary};

/// Entries kept per table.
const CAPACITY: usize = 1024;

/// Everything kept, one [`Kept`] per kind of row, each by agent id.
#[derive(Debug, Default)]
pub(super) struct KeptRows {
    /// Agent rows (`Store::get_agent`).
    pub agents: Kept<Agent>,
    pub summaries: Kept<Vec<Summary>>,
    /// The grants that apply to an agent: its session grants and every `always` grant.
    pub grants: Kept<Vec<Grant>>,
    /// Undelivered background results, by parent agent.
    pub background: Kept<Vec<BackgroundTask>>,
}

impl KeptRows {
    /// The agent was deleted or written as a whole (a copy, an import).
    pub(super) fn forget_agent(&self, agent_id: &str) {
        self.agents.forget(agent_id);
        self.summaries.forget(agent_id);
        self.grants.forget(agent_id);
        self.background.forget(agent_id);
    }

    /// Rows of many agents may have changed.
    pub(super) fn clear(&self) {
        self.agents.clear();
        self.summaries.clear();
        self.grants.clear();
        self.background.clear();
    }
}

#[derive(Debug)]
pub(super) struct Kept<V> {
    inner: Mutex<Inner<V>>,
}

#[derive(Debug)]
struct Inner<V> {
    /// Bumped by every write; see the module doc.
    version: u64,
    entries: HashMap<String, V>,
}

impl<V> Default for Kept<V> {
    fn default() -> Self {
        Kept {
            inner: Mutex::new(Inner {
                version: 0,
                entries: HashMap::new(),
            }),
        }
    }
}

impl<V: Clone> Kept<V> {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner<V>> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn get(&self, key: &str) -> Option<V> {
        self.lock().entries.get(key).cloned()
    }

    /// Whether the value of `key` is kept and `test` holds for it (without a copy).
    pub(super) fn holds(&self, key: &str, test: impl FnOnce(&V) -> bool) -> bool {
        self.lock().entries.get(key).is_some_and(test)
    }

    /// Taken before reading a value from the database; see [`Kept::keep`].
    pub(super) fn version(&self) -> u64 {
        self.lock().version
    }

    /// Keeps a value read from the database, unless a write came since `version`.
    pub(super) fn keep(&self, key: &str, version: u64, value: V) {
        let mut inner = self.lock();
        if inner.version != version {
            return;
        }
        if inner.entries.len() >= CAPACITY
            && !inner.entries.contains_key(key)
            && let Some(any) = inner.entries.keys().next().cloned()
        {
            inner.entries.remove(&any);
        }
        inner.entries.insert(key.to_owned(), value);
    }

    /// A write changed (or may have changed) the value of `key`.
    pub(super) fn forget(&self, key: &str) {
        let mut inner = self.lock();
        inner.version += 1;
        inner.entries.remove(key);
    }

    /// A write changed the value of `key` as `change` does; call it holding the write
    /// connection, after the commit.
    pub(super) fn edit(&self, key: &str, change: impl FnOnce(&mut V)) {
        let mut inner = self.lock();
        inner.version += 1;
        if let Some(value) = inner.entries.get_mut(key) {
            change(value);
        }
    }

    /// A write changed values of many keys.
    pub(super) fn clear(&self) {
        let mut inner = self.lock();
        inner.version += 1;
        inner.entries.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_that_overlapped_a_write_is_not_kept() {
        let kept = Kept::<u32>::default();
        let before = kept.version();
        kept.forget("a");
        kept.keep("a", before, 1);
        assert_eq!(kept.get("a"), None);
        let before = kept.version();
        kept.edit("b", |v| *v = 7);
        kept.keep("a", before, 1);
        assert_eq!(kept.get("a"), None, "an edit of another key is a write too");
        kept.keep("a", kept.version(), 2);
        assert_eq!(kept.get("a"), Some(2));
    }

    #[test]
    fn writes_change_or_drop_what_is_kept() {
        let kept = Kept::<u32>::default();
        kept.keep("a", kept.version(), 1);
        kept.keep("b", kept.version(), 1);
        kept.edit("a", |v| *v += 1);
        assert_eq!(kept.get("a"), Some(2));
        kept.forget("a");
        assert_eq!(kept.get("a"), None);
        assert_eq!(kept.get("b"), Some(1));
        kept.clear();
        assert_eq!(kept.get("b"), None);
    }

    #[test]
    fn bounded() {
        let kept = Kept::<usize>::default();
        for n in 0..CAPACITY + 10 {
            kept.keep(&n.to_string(), kept.version(), n);
        }
        let inner = kept.lock();
        assert_eq!(inner.entries.len(), CAPACITY);
        assert!(inner.entries.contains_key(&(CAPACITY + 9).to_string()));
    }
}

/// What another daemon writes reaches this one's reads once it forgets the agent's caches
/// (`Store::forget_agent_caches`, `Store::forget_all_caches`).
#[cfg(test)]
mod forget_tests {
    use std::sync::Arc;

    use agent_proto::{Block, Message, MessageStatus, Role};

    use super::super::tests::new_agent;
    use super::super::{AgentPatch, Grant, GrantScope, RunMessages, Store, Summary};

    fn run(n: u32) -> RunMessages {
        let message = |id: String, role, status| {
            Message::new(
                id,
                "a",
                role,
                vec![Block::Text { text: "q".into() }],
                status,
                1,
            )
        };
        RunMessages {
            user: message(format!("u{n}"), Role::User, MessageStatus::Done),
            assistant: message(format!("m{n}"), Role::Assistant, MessageStatus::Done),
            client_request_id: None,
        }
    }

    fn titled(title: &str) -> AgentPatch {
        AgentPatch {
            title: Some(title.into()),
            ..AgentPatch::default()
        }
    }

    fn summary(text: &str) -> Summary {
        Summary {
            agent_id: "a".into(),
            through_message_id: "m1".into(),
            text: text.into(),
            summarized_messages: 2,
            before_tokens: 10,
            after_tokens: 1,
            created_at: 1,
        }
    }

    /// This daemon's store with agent "a" (one run, its rows read so they are kept), and
    /// another daemon's store on the same database.
    async fn two_daemons(dir: &tempfile::TempDir) -> (Store, Store) {
        let path = dir.path().join("agentd.db");
        let here = Store::open(&path).await.unwrap();
        here.insert_agent(&new_agent("a", "Old", 1)).await.unwrap();
        here.insert_run_messages(&run(1)).await.unwrap();
        let other = Store::open(&path).await.unwrap();
        (here, other)
    }

    /// What `here` reads of agent "a": title, history length, summaries, grants.
    async fn reads(here: &Store) -> (String, usize, usize, usize) {
        (
            here.get_agent("a").await.unwrap().unwrap().title,
            here.history("a").await.unwrap().len(),
            here.summaries("a").await.unwrap().len(),
            here.grants_for("a").await.unwrap().len(),
        )
    }

    async fn write_elsewhere(other: &Store, title: &str, n: u32) {
        other.update_agent("a", &titled(title), 2).await.unwrap();
        other.insert_run_messages(&run(n)).await.unwrap();
        other.insert_summary(&summary(title)).await.unwrap();
        let grant = Grant {
            scope: GrantScope::Session,
            level: agent_proto::PermissionLevel::Execute,
            key: format!("cmd{n}"),
        };
        other.add_grant("a", &grant).await.unwrap();
    }

    #[tokio::test]
    async fn another_daemons_writes_are_read_after_a_forget() {
        let dir = tempfile::tempdir().unwrap();
        let (here, other) = two_daemons(&dir).await;
        assert_eq!(reads(&here).await, ("Old".into(), 2, 0, 0));

        write_elsewhere(&other, "New", 2).await;
        assert_eq!(
            reads(&here).await,
            ("Old".into(), 2, 0, 0),
            "kept in memory: the database is not read"
        );
        here.forget_agent_caches("a");
        assert_eq!(reads(&here).await, ("New".into(), 4, 1, 1));

        write_elsewhere(&other, "Newer", 3).await;
        assert_eq!(reads(&here).await, ("New".into(), 4, 1, 1));
        here.forget_agent_caches("another agent");
        assert_eq!(reads(&here).await, ("New".into(), 4, 1, 1));
        here.forget_all_caches();
        assert_eq!(reads(&here).await, ("Newer".into(), 6, 2, 2));
    }

    /// A read that began before a forget may have read the rows before the other
    /// daemon's write: it is not kept. Played step by step as `get_agent` and `history`
    /// run (the version taken before the read, `keep` after), since no store call can be
    /// paused between its read and its keep.
    #[tokio::test]
    async fn a_read_overlapping_a_forget_is_not_kept() {
        let dir = tempfile::tempdir().unwrap();
        let (here, _other) = two_daemons(&dir).await;
        let stale = here.get_agent("a").await.unwrap().unwrap();
        let history = here.history("a").await.unwrap();
        for forget in [
            &(|s: &Store| s.forget_agent_caches("a")) as &dyn Fn(&Store),
            &|s: &Store| s.forget_all_caches(),
        ] {
            forget(&here);
            let agents = here.kept.agents.version();
            let histories = here.histories.version();
            // ... the reads run here, and meanwhile the other daemon's notice comes:
            forget(&here);
            here.kept.agents.keep("a", agents, stale.clone());
            here.histories
                .keep("a", histories, Arc::new(history.to_vec()));
            assert!(here.kept.agents.get("a").is_none());
            assert!(here.histories.get("a").is_none());
        }
        // Without a forget between, the same steps keep the read.
        let agents = here.kept.agents.version();
        here.kept.agents.keep("a", agents, stale);
        assert!(here.kept.agents.get("a").is_some());
    }
}
