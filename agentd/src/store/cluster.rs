//! Several daemons on one PostgreSQL database: what the store offers them (docs/scale-out.md).
//!
//! - **Membership.** A daemon joins with a row in `daemons` and keeps it alive with a
//!   heartbeat on the database's clock (`now()`): daemons' clocks may disagree, the
//!   database is one.
//! - **Homes.** An agent runs on the daemon that holds its advisory lock
//!   (`pg_try_advisory_lock(hashtextextended(agent_id, 0))`, the key computed by the
//!   database so every daemon computes the same one). Locks live on one connection per
//!   daemon kept for them: when the daemon dies, the connection closes and its locks go at
//!   once. `agent_homes` says who holds which lock, for the others.
//! - **Reaping.** A daemon whose heartbeat is older than a limit (alive but cut off: its
//!   connection may look open to the server for a long time) has its lock connection
//!   terminated (`pg_terminate_backend`), so its locks go too, and its rows deleted.
//! - **Notices.** `pg_notify` on a channel, and a listener of every channel of the
//!   cluster, which says when its connection was lost (notices may have been missed).
//! - **Events.** A home daemon stores the events it numbered (`events`, bounded) and
//!   notifies them in the same transaction, so a daemon hearing the notice finds the rows;
//!   a daemon replays from there what its own ring does not hold.
//!
//! Nothing here decides what a daemon does with these; the session layer does.

use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgConnection, PgListener, PgPool};
use sqlx::{Connection, Row};
use tokio::sync::Mutex;

use super::conn::Options;
use super::db::Pool;
use super::{Store, StoreError, now_ms};

/// The notice channels of the cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channel {
    /// An agent's events, published by its home.
    Events,
    /// A request for another daemon, and its answer.
    Commands,
}

impl Channel {
    const ALL: [Channel; 2] = [Channel::Events, Channel::Commands];

    fn name(self) -> &'static str {
        match self {
            Channel::Events => "agentd_events",
            Channel::Commands => "agentd_commands",
        }
    }

    fn parse(name: &str) -> Option<Channel> {
        Channel::ALL.into_iter().find(|c| c.name() == name)
    }
}

/// The start-up lock's keys: `agnd`, 1 (0 was the one-daemon-per-database lock).
const START_KEYS: (i32, i32) = (0x6167_6e64, 1);

/// The most a notice may carry: PostgreSQL refuses a payload of 8000 bytes or more.
pub const MAX_NOTICE_BYTES: usize = 7999;

/// One daemon's membership of the cluster: its row, its lock connection.
#[derive(Debug)]
pub struct Member {
    id: String,
    /// The connection every advisory lock of this daemon lives on (and its heartbeat, so a
    /// lost lock connection shows as a failed heartbeat).
    lock: Mutex<PgConnection>,
    pool: PgPool,
    options: PgConnectOptions,
}

/// Who is an agent's home after [`Member::try_home`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Home {
    /// This daemon (now).
    Here,
    /// Another daemon holds its lock.
    Elsewhere,
    /// There is no such agent (nothing was taken).
    NoAgent,
}

/// A daemon of the cluster, as its row says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Daemon {
    pub id: String,
    pub host_label: String,
    pub hostname: String,
    pub pid: i64,
    /// Milliseconds since its last heartbeat, by the database's clock.
    pub silent_ms: i64,
}

/// A daemon reaped for silence, and the agents it was home to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reaped {
    pub daemon_id: String,
    pub agents: Vec<String>,
}

/// What the listener heard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notice {
    Heard {
        channel: Channel,
        payload: String,
    },
    /// The listening connection was lost (and is being made again): notices sent meanwhile
    /// are missed; whoever relies on them reads what they would have said from the store.
    Lost,
}

/// The listening connection of a daemon.
#[derive(Debug)]
pub struct Listener {
    inner: PgListener,
}

impl Store {
    /// Joins the cluster of daemons on this database: a row in `daemons` and a connection
    /// for locks. Only on PostgreSQL.
    pub async fn join_cluster(
        &self,
        host_label: &str,
        hostname: &str,
    ) -> Result<Member, StoreError> {
        let (Options::Postgres(options), Pool::Postgres(pool)) = (self.write.options(), &self.read)
        else {
            return Err(StoreError::NotSupported(
                "several daemons share a PostgreSQL store only; this one is SQLite",
            ));
        };
        let mut lock = PgConnection::connect_with(options).await?;
        let id = uuid::Uuid::now_v7().to_string();
        sqlx::query(
            "INSERT INTO daemons (id, host_label, hostname, pid, lock_backend_pid, started_at) \
             VALUES ($1, $2, $3, $4, pg_backend_pid(), $5)",
        )
        .bind(&id)
        .bind(host_label)
        .bind(hostname)
        .bind(i64::from(std::process::id()))
        .bind(now_ms())
        .execute(&mut lock)
        .await?;
        Ok(Member {
            id,
            lock: Mutex::new(lock),
            pool: pool.clone(),
            options: options.clone(),
        })
    }
}

impl Member {
    /// This daemon's id in the cluster.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Says this daemon is alive. Fails when its lock connection is lost (its locks with
    /// it) or its row was deleted by another daemon that found it silent too long: either
    /// way it holds nothing any more.
    pub async fn heartbeat(&self) -> Result<(), StoreError> {
        let done = sqlx::query("UPDATE daemons SET heartbeat_at = now() WHERE id = $1")
            .bind(&self.id)
            .execute(&mut *self.lock.lock().await)
            .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotSupported(
                "this daemon was dropped from the cluster (silent too long)",
            ));
        }
        Ok(())
    }

    /// Waits for the cluster's start-up lock (one daemon at a time settles what a stopped
    /// cluster left) and says how many other daemons are alive (heard from within
    /// `within`, and their lock connection still open): none means this one starts the
    /// cluster and recovers everything.
    pub async fn begin_start(&self, within: Duration) -> Result<usize, StoreError> {
        let mut lock = self.lock.lock().await;
        sqlx::query("SELECT pg_advisory_lock($1, $2)")
            .bind(START_KEYS.0)
            .bind(START_KEYS.1)
            .execute(&mut *lock)
            .await?;
        let (others,): (i64,) = sqlx::query_as(
            "SELECT COUNT(*) FROM daemons WHERE id <> $1 \
             AND heartbeat_at >= now() - make_interval(secs => $2) \
             AND lock_backend_pid IN (SELECT pid FROM pg_stat_activity)",
        )
        .bind(&self.id)
        .bind(within.as_secs_f64())
        .fetch_one(&mut *lock)
        .await?;
        Ok(usize::try_from(others).unwrap_or(usize::MAX))
    }

    /// Lets the next daemon start ([`Member::begin_start`]).
    pub async fn end_start(&self) -> Result<(), StoreError> {
        sqlx::query("SELECT pg_advisory_unlock($1, $2)")
            .bind(START_KEYS.0)
            .bind(START_KEYS.1)
            .execute(&mut *self.lock.lock().await)
            .await?;
        Ok(())
    }

    /// Takes agent `agent_id`'s lock for this daemon. Taking it again is harmless (the
    /// lock counts, [`Member::leave_home`] releases all).
    pub async fn try_home(&self, agent_id: &str) -> Result<Home, StoreError> {
        let mut lock = self.lock.lock().await;
        let (taken,): (bool,) =
            sqlx::query_as("SELECT pg_try_advisory_lock(hashtextextended($1, 0))")
                .bind(agent_id)
                .fetch_one(&mut *lock)
                .await?;
        if !taken {
            return Ok(Home::Elsewhere);
        }
        let written = sqlx::query(
            "INSERT INTO agent_homes (agent_id, daemon_id, since) \
             SELECT $1, $2, $3 WHERE EXISTS (SELECT 1 FROM agents WHERE id = $1) \
             ON CONFLICT (agent_id) DO UPDATE SET daemon_id = $2, since = $3",
        )
        .bind(agent_id)
        .bind(&self.id)
        .bind(now_ms())
        .execute(&mut *lock)
        .await?;
        if written.rows_affected() == 0 {
            sqlx::query("SELECT pg_advisory_unlock(hashtextextended($1, 0))")
                .bind(agent_id)
                .execute(&mut *lock)
                .await?;
            return Ok(Home::NoAgent);
        }
        Ok(Home::Here)
    }

    /// Gives up agent `agent_id`: another daemon may take it.
    pub async fn leave_home(&self, agent_id: &str) -> Result<(), StoreError> {
        let mut lock = self.lock.lock().await;
        sqlx::query("DELETE FROM agent_homes WHERE agent_id = $1 AND daemon_id = $2")
            .bind(agent_id)
            .bind(&self.id)
            .execute(&mut *lock)
            .await?;
        // Every hold of this session's, however often it was taken.
        while sqlx::query_as::<_, (bool,)>("SELECT pg_advisory_unlock(hashtextextended($1, 0))")
            .bind(agent_id)
            .fetch_one(&mut *lock)
            .await?
            .0
        {}
        Ok(())
    }

    /// The daemon home to agent `agent_id`, if one is.
    pub async fn home_of(&self, agent_id: &str) -> Result<Option<Daemon>, StoreError> {
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "{DAEMON_SELECT} JOIN agent_homes h ON h.daemon_id = d.id WHERE h.agent_id = $1"
        )))
        .bind(agent_id)
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(daemon_from_row).transpose()
    }

    /// Every daemon of the cluster, this one included, oldest first.
    pub async fn daemons(&self) -> Result<Vec<Daemon>, StoreError> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "{DAEMON_SELECT} ORDER BY d.started_at, d.id"
        )))
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(daemon_from_row).collect()
    }

    /// Drops the daemons silent for longer than `after` (by the database's clock), or whose
    /// lock connection is gone (killed): their lock connections are terminated (their
    /// locks go) and their rows deleted. Returns
    /// them with the agents each was home to.
    pub async fn reap(&self, after: Duration) -> Result<Vec<Reaped>, StoreError> {
        let mut conn = self.pool.acquire().await?;
        let mut tx = conn.begin().await?;
        let silent: Vec<(String, i32)> = sqlx::query_as(
            "SELECT id, lock_backend_pid FROM daemons \
             WHERE (heartbeat_at < now() - make_interval(secs => $1) \
             OR lock_backend_pid NOT IN (SELECT pid FROM pg_stat_activity)) AND id <> $2 \
             FOR UPDATE SKIP LOCKED",
        )
        .bind(after.as_secs_f64())
        .bind(&self.id)
        .fetch_all(&mut *tx)
        .await?;
        let mut reaped = Vec::with_capacity(silent.len());
        for (daemon_id, backend) in silent {
            // A connection that still looks open (a daemon cut off, not dead) keeps its
            // locks until the server notices: end it now. Refused (it is gone already)
            // is the same.
            sqlx::query("SELECT pg_terminate_backend($1)")
                .bind(backend)
                .execute(&mut *tx)
                .await?;
            let agents: Vec<(String,)> =
                sqlx::query_as("DELETE FROM agent_homes WHERE daemon_id = $1 RETURNING agent_id")
                    .bind(&daemon_id)
                    .fetch_all(&mut *tx)
                    .await?;
            sqlx::query("DELETE FROM daemons WHERE id = $1")
                .bind(&daemon_id)
                .execute(&mut *tx)
                .await?;
            let mut agents: Vec<String> = agents.into_iter().map(|(a,)| a).collect();
            agents.sort();
            reaped.push(Reaped { daemon_id, agents });
        }
        tx.commit().await?;
        Ok(reaped)
    }

    /// Sends `payload` to every daemon listening on `channel` (this one too).
    pub async fn notify(&self, channel: Channel, payload: &str) -> Result<(), StoreError> {
        fits(payload)?;
        sqlx::query("SELECT pg_notify($1, $2)")
            .bind(channel.name())
            .bind(payload)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Stores `events` (agent, seq, JSON) and sends `notice` on the events channel, in one
    /// transaction: whoever hears the notice finds the rows.
    pub async fn publish_events(
        &self,
        events: &[(&str, u64, &str)],
        notice: &str,
    ) -> Result<(), StoreError> {
        fits(notice)?;
        let at = now_ms();
        let mut agents = Vec::with_capacity(events.len());
        let mut seqs = Vec::with_capacity(events.len());
        let mut texts = Vec::with_capacity(events.len());
        for (agent, seq, json) in events {
            agents.push(*agent);
            seqs.push(i64::try_from(*seq).unwrap_or(i64::MAX));
            texts.push(*json);
        }
        let mut conn = self.pool.acquire().await?;
        let mut tx = conn.begin().await?;
        sqlx::query(
            "INSERT INTO events (agent_id, seq, event, at) \
             SELECT agent_id, seq, event, $4 FROM UNNEST($1::text[], $2::bigint[], $3::text[]) \
             AS e (agent_id, seq, event) ON CONFLICT (agent_id, seq) DO NOTHING",
        )
        .bind(&agents)
        .bind(&seqs)
        .bind(&texts)
        .bind(at)
        .execute(&mut *tx)
        .await?;
        sqlx::query("SELECT pg_notify($1, $2)")
            .bind(Channel::Events.name())
            .bind(notice)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Agent `agent_id`'s stored events after seq `after`, oldest first, at most `limit`.
    pub async fn events_after(
        &self,
        agent_id: &str,
        after: u64,
        limit: u32,
    ) -> Result<Vec<(u64, String)>, StoreError> {
        let rows: Vec<(i64, String)> = sqlx::query_as(
            "SELECT seq, event FROM events WHERE agent_id = $1 AND seq > $2 \
             ORDER BY seq LIMIT $3",
        )
        .bind(agent_id)
        .bind(i64::try_from(after).unwrap_or(i64::MAX))
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .into_iter()
            .map(|(seq, json)| (u64::try_from(seq).unwrap_or(0), json))
            .collect())
    }

    /// The last seq of agent `agent_id`'s stored events (what its home published last), if
    /// any.
    pub async fn last_event_seq(&self, agent_id: &str) -> Result<Option<u64>, StoreError> {
        let (seq,): (Option<i64>,) =
            sqlx::query_as("SELECT MAX(seq) FROM events WHERE agent_id = $1")
                .bind(agent_id)
                .fetch_one(&self.pool)
                .await?;
        Ok(seq.and_then(|s| u64::try_from(s).ok()))
    }

    /// Drops the stored events older than `before` (unix ms); returns how many.
    pub async fn prune_events(&self, before: i64) -> Result<u64, StoreError> {
        let done = sqlx::query("DELETE FROM events WHERE at < $1")
            .bind(before)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected())
    }

    /// Keeps `body` (a request or answer too large for a notice) under `id` until taken.
    pub async fn put_body(&self, id: &str, body: &str) -> Result<(), StoreError> {
        sqlx::query("INSERT INTO cluster_bodies (id, body, created_at) VALUES ($1, $2, $3)")
            .bind(id)
            .bind(body)
            .bind(now_ms())
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Takes (and deletes) the body kept under `id`; `None` when there is none.
    pub async fn take_body(&self, id: &str) -> Result<Option<String>, StoreError> {
        let row: Option<(String,)> =
            sqlx::query_as("DELETE FROM cluster_bodies WHERE id = $1 RETURNING body")
                .bind(id)
                .fetch_optional(&self.pool)
                .await?;
        Ok(row.map(|(body,)| body))
    }

    /// A listener of every channel of the cluster, on a connection of its own.
    pub async fn listen(&self) -> Result<Listener, StoreError> {
        let pool = sqlx::postgres::PgPoolOptions::new()
            .max_connections(1)
            .max_lifetime(None)
            .idle_timeout(None)
            .connect_lazy_with(self.options.clone());
        let mut inner = PgListener::connect_with(&pool).await?;
        inner.ignore_pool_close_event(true);
        inner
            .listen_all(Channel::ALL.iter().map(|c| c.name()))
            .await?;
        Ok(Listener { inner })
    }

    /// Leaves the cluster: the row goes (and the homes with it) and every lock is let go
    /// (the lock connection itself closes with the daemon).
    pub async fn leave(&self) -> Result<(), StoreError> {
        let mut lock = self.lock.lock().await;
        sqlx::query("DELETE FROM daemons WHERE id = $1")
            .bind(&self.id)
            .execute(&mut *lock)
            .await?;
        sqlx::query("SELECT pg_advisory_unlock_all()")
            .execute(&mut *lock)
            .await?;
        Ok(())
    }
}

impl Listener {
    /// The next notice, or [`Notice::Lost`] once when the connection was lost (it is made
    /// again before this returns).
    pub async fn next(&mut self) -> Result<Notice, StoreError> {
        loop {
            match self.inner.try_recv().await? {
                None => return Ok(Notice::Lost),
                Some(heard) => {
                    // A channel of ours only: `listen_all` named them.
                    if let Some(channel) = Channel::parse(heard.channel()) {
                        return Ok(Notice::Heard {
                            channel,
                            payload: heard.payload().to_owned(),
                        });
                    }
                }
            }
        }
    }
}

/// Refuses a notice PostgreSQL would refuse, before anything is sent or stored.
fn fits(notice: &str) -> Result<(), StoreError> {
    if notice.len() > MAX_NOTICE_BYTES {
        return Err(StoreError::NotSupported(
            "a notice of 8000 bytes or more (store it and notify its key)",
        ));
    }
    Ok(())
}

const DAEMON_SELECT: &str = "SELECT d.id, d.host_label, d.hostname, d.pid, \
     CAST(EXTRACT(EPOCH FROM (now() - d.heartbeat_at)) * 1000 AS BIGINT) AS silent_ms \
     FROM daemons d";

fn daemon_from_row(row: &sqlx::postgres::PgRow) -> Result<Daemon, StoreError> {
    Ok(Daemon {
        id: row.try_get("id")?,
        host_label: row.try_get("host_label")?,
        hostname: row.try_get("hostname")?,
        pid: row.try_get("pid")?,
        silent_ms: row.try_get("silent_ms")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::tests::new_agent;

    /// Two stores on one fresh database of the test cluster (two daemons' worth), with
    /// agents "a" and "b"; `None` when the test is skipped.
    async fn two_stores(test: &str) -> Option<(Store, Store)> {
        let url = agentd_testkit::postgres::cluster(test)?.database().await;
        let one = Store::connect(&url).await.unwrap();
        let two = Store::connect(&url).await.unwrap();
        one.insert_agent(&new_agent("a", "A", 1)).await.unwrap();
        one.insert_agent(&new_agent("b", "B", 2)).await.unwrap();
        Some((one, two))
    }

    #[tokio::test]
    async fn one_home_per_agent_and_it_goes_with_its_daemon() {
        let Some((one, two)) = two_stores("cluster::one_home_per_agent").await else {
            return;
        };
        let a = one.join_cluster("alpha", "host-a").await.unwrap();
        // The first to start finds nobody else alive; the next waits for it, then finds it.
        assert_eq!(a.begin_start(Duration::from_secs(10)).await.unwrap(), 0);
        let b = two.join_cluster("beta", "host-b").await.unwrap();
        let starting = tokio::spawn({
            let b_store = two.clone();
            async move {
                let c = b_store.join_cluster("gamma", "host-c").await.unwrap();
                let others = c.begin_start(Duration::from_secs(10)).await.unwrap();
                c.end_start().await.unwrap();
                c.leave().await.unwrap();
                others
            }
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(
            !starting.is_finished(),
            "the second start waits for the first"
        );
        a.end_start().await.unwrap();
        assert_eq!(starting.await.unwrap(), 2);
        assert_ne!(a.id(), b.id());
        let daemons = a.daemons().await.unwrap();
        assert_eq!(
            daemons.iter().map(|d| d.id.as_str()).collect::<Vec<_>>(),
            [a.id(), b.id()]
        );
        assert_eq!(daemons[1].host_label, "beta");
        assert_eq!(daemons[1].hostname, "host-b");

        // One home per agent; taking it again is harmless.
        assert_eq!(a.try_home("a").await.unwrap(), Home::Here);
        assert_eq!(a.try_home("a").await.unwrap(), Home::Here);
        assert_eq!(b.try_home("a").await.unwrap(), Home::Elsewhere);
        assert_eq!(b.try_home("b").await.unwrap(), Home::Here);
        assert_eq!(b.home_of("a").await.unwrap().unwrap().id, a.id());
        // No such agent: nothing taken, nothing held.
        assert_eq!(a.try_home("ghost").await.unwrap(), Home::NoAgent);
        assert_eq!(b.try_home("ghost").await.unwrap(), Home::NoAgent);
        assert_eq!(a.home_of("b").await.unwrap().unwrap().id, b.id());

        // Left (however often it was taken): the other daemon takes it.
        a.leave_home("a").await.unwrap();
        assert_eq!(b.home_of("a").await.unwrap(), None);
        assert_eq!(b.try_home("a").await.unwrap(), Home::Here);
        assert_eq!(a.try_home("a").await.unwrap(), Home::Elsewhere);

        // A daemon gone without a word (its connection closed, as by kill -9): its locks go
        // with it at once; its rows stay until it is reaped.
        drop(b);
        assert!(
            agentd_testkit::wait::eventually(
                Duration::from_secs(10),
                "the dropped daemon's locks to go",
                async || match a.try_home("a").await {
                    Ok(Home::Here) => Ok(true),
                    other => Err(format!("{other:?}")),
                },
            )
            .await
        );
        assert_eq!(a.try_home("b").await.unwrap(), Home::Here);
        // Left cleanly: its row and its locks go at once.
        let c = two.join_cluster("gamma", "host-c").await.unwrap();
        assert_eq!(c.try_home("a").await.unwrap(), Home::Elsewhere);
        a.leave().await.unwrap();
        assert_eq!(c.try_home("a").await.unwrap(), Home::Here);
        assert_eq!(c.try_home("b").await.unwrap(), Home::Here);
        let ids: Vec<String> = c
            .daemons()
            .await
            .unwrap()
            .into_iter()
            .map(|d| d.id)
            .collect();
        assert!(!ids.contains(&a.id().to_owned()), "{ids:?}");
    }

    #[tokio::test]
    async fn a_silent_daemon_is_reaped_with_its_locks_and_knows_it() {
        let Some((one, two)) = two_stores("cluster::a_silent_daemon_is_reaped").await else {
            return;
        };
        let a = one.join_cluster("alpha", "host-a").await.unwrap();
        let b = two.join_cluster("beta", "host-b").await.unwrap();
        assert_eq!(b.try_home("a").await.unwrap(), Home::Here);
        assert_eq!(b.try_home("b").await.unwrap(), Home::Here);
        a.heartbeat().await.unwrap();
        b.heartbeat().await.unwrap();
        // Nobody is silent for a minute yet.
        assert!(a.reap(Duration::from_secs(60)).await.unwrap().is_empty());
        // `b` stays silent (it is cut off, its connection still open); `a` reaps it.
        tokio::time::sleep(Duration::from_millis(50)).await;
        let reaped = a.reap(Duration::from_millis(10)).await.unwrap();
        assert_eq!(
            reaped,
            [Reaped {
                daemon_id: b.id().to_owned(),
                agents: vec!["a".into(), "b".into()],
            }]
        );
        // Its lock connection was ended (the server ends it a moment later), so its locks
        // are free; it finds out at its next heartbeat, which fails.
        for agent in ["a", "b"] {
            agentd_testkit::wait::eventually(
                Duration::from_secs(10),
                "the reaped daemon's locks to go",
                async || match a.try_home(agent).await {
                    Ok(Home::Here) => Ok(()),
                    other => Err(format!("{other:?}")),
                },
            )
            .await;
        }
        assert!(b.heartbeat().await.is_err());
        assert_eq!(a.daemons().await.unwrap().len(), 1);
        a.leave().await.unwrap();
    }

    #[tokio::test]
    async fn notices_reach_every_listener_and_a_lost_connection_is_said() {
        let Some((one, two)) = two_stores("cluster::notices").await else {
            return;
        };
        let a = one.join_cluster("alpha", "host-a").await.unwrap();
        let b = two.join_cluster("beta", "host-b").await.unwrap();
        let mut heard_by_b = b.listen().await.unwrap();
        let mut heard_by_a = a.listen().await.unwrap();
        a.notify(Channel::Events, "first").await.unwrap();
        a.notify(Channel::Commands, "second").await.unwrap();
        for listener in [&mut heard_by_b, &mut heard_by_a] {
            assert_eq!(
                listener.next().await.unwrap(),
                Notice::Heard {
                    channel: Channel::Events,
                    payload: "first".into()
                }
            );
            assert_eq!(
                listener.next().await.unwrap(),
                Notice::Heard {
                    channel: Channel::Commands,
                    payload: "second".into()
                }
            );
        }
        // The most a notice carries, and one byte more is refused before it is sent.
        let largest = "x".repeat(MAX_NOTICE_BYTES);
        a.notify(Channel::Events, &largest).await.unwrap();
        assert!(matches!(
            a.notify(Channel::Events, &format!("{largest}x")).await,
            Err(StoreError::NotSupported(_))
        ));
        assert_eq!(
            heard_by_b.next().await.unwrap(),
            Notice::Heard {
                channel: Channel::Events,
                payload: largest
            }
        );
        // The listening connection ended by the server: said once, then heard again.
        let (pid,): (i32,) = sqlx::query_as(
            "SELECT pid FROM pg_stat_activity WHERE query LIKE 'LISTEN%' \
             AND pid <> pg_backend_pid() ORDER BY backend_start LIMIT 1",
        )
        .fetch_one(&a.pool)
        .await
        .unwrap();
        sqlx::query("SELECT pg_terminate_backend($1)")
            .bind(pid)
            .execute(&a.pool)
            .await
            .unwrap();
        assert_eq!(heard_by_b.next().await.unwrap(), Notice::Lost);
        a.notify(Channel::Events, "after").await.unwrap();
        assert_eq!(
            heard_by_b.next().await.unwrap(),
            Notice::Heard {
                channel: Channel::Events,
                payload: "after".into()
            }
        );
    }

    #[tokio::test]
    async fn events_are_stored_and_notified_together_read_back_in_order_and_pruned() {
        let Some((one, two)) = two_stores("cluster::events").await else {
            return;
        };
        let a = one.join_cluster("alpha", "host-a").await.unwrap();
        let b = two.join_cluster("beta", "host-b").await.unwrap();
        let mut heard = b.listen().await.unwrap();
        a.publish_events(
            &[
                ("a", 1, r#"{"seq":1}"#),
                ("a", 2, r#"{"seq":2}"#),
                ("b", 7, r#"{"seq":7}"#),
            ],
            "a:1-2 b:7",
        )
        .await
        .unwrap();
        assert_eq!(
            heard.next().await.unwrap(),
            Notice::Heard {
                channel: Channel::Events,
                payload: "a:1-2 b:7".into()
            }
        );
        // Heard after the commit: the rows are there.
        assert_eq!(
            b.events_after("a", 0, 10).await.unwrap(),
            [
                (1, r#"{"seq":1}"#.to_owned()),
                (2, r#"{"seq":2}"#.to_owned())
            ]
        );
        assert_eq!(b.events_after("a", 1, 10).await.unwrap().len(), 1);
        assert_eq!(b.events_after("a", 0, 1).await.unwrap().len(), 1);
        assert_eq!(b.events_after("b", 0, 10).await.unwrap()[0].0, 7);
        assert_eq!(b.last_event_seq("a").await.unwrap(), Some(2));
        assert_eq!(b.last_event_seq("nobody").await.unwrap(), None);
        // Published again (a retry): kept once.
        a.publish_events(&[("a", 2, r#"{"seq":2}"#)], "again")
            .await
            .unwrap();
        assert_eq!(b.events_after("a", 0, 10).await.unwrap().len(), 2);
        // A notice too large is refused before anything is stored.
        let large = "x".repeat(MAX_NOTICE_BYTES + 1);
        assert!(a.publish_events(&[("a", 3, "{}")], &large).await.is_err());
        assert_eq!(b.events_after("a", 2, 10).await.unwrap(), []);
        assert_eq!(a.prune_events(now_ms() + 1).await.unwrap(), 3);
        assert_eq!(b.events_after("a", 0, 10).await.unwrap(), []);

        // A body too large for a notice: kept by one, taken once by another.
        let body = "y".repeat(3 * MAX_NOTICE_BYTES);
        a.put_body("req-1", &body).await.unwrap();
        assert_eq!(b.take_body("req-1").await.unwrap(), Some(body));
        assert_eq!(b.take_body("req-1").await.unwrap(), None);
    }

    #[tokio::test]
    async fn a_sqlite_store_joins_no_cluster() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("agentd.db")).await.unwrap();
        assert!(matches!(
            store.join_cluster("x", "y").await,
            Err(StoreError::NotSupported(_))
        ));
    }
}
