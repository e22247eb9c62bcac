//! The session store: the only module that runs SQL.
//!
//! Plain CRUD over agents and messages, no runtime state and no knowledge of sessions or
//! events. Two backends behind one API (`db`): SQLite, embedded and the default, and
//! PostgreSQL, which several daemons can share. One writer connection (SQLite allows one
//! writer; waiting for it is cheaper than `SQLITE_BUSY` retries), held by the store itself
//! (`conn`), and a pool of reader connections; SQLite's in WAL mode, foreign keys on
//! everywhere, so deleting an agent cascades to its messages.

mod agents;
mod background;
mod checkpoints;
pub mod cluster;
mod conn;
mod context;
mod copies;
mod db;
mod grants;
mod history_cache;
mod kept;
mod mcp;
mod messages;
mod plans;
mod queue;
mod saves;
mod tools;

use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{FromRow, SqlSafeStr};

use db::{Pool, Query, QueryAs, Statements};

pub use agents::{AgentFilter, AgentPatch, NewAgent, SubagentLink};
pub use background::BackgroundTask;
pub use checkpoints::{Checkpoint, Truncated};
pub use context::Summary;
pub use copies::{AgentCopy, AgentSnapshot, StoredMessage};
pub use db::Backend;
pub use grants::{Grant, GrantScope};
pub use messages::{MessagePage, RunMessages, UsageRow};
pub use saves::SaveDone;
pub use tools::{EndedTool, ToolExecution, ToolExecutionEnd, ToolRecord};

/// A failure of the store. Callers log it and answer `internal` (the message says what
/// failed); nothing here is retryable by the client except by trying again later.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The database refused or failed the statement (disk full, locked for too long, I/O
    /// error, connection lost).
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    /// The schema could not be brought up to date: the database is from a newer agentd or
    /// damaged. Start-up aborts.
    #[error("database migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// A row holds something this version cannot read (bad JSON, unknown enum value).
    #[error("corrupt row in {table}: {detail}")]
    Corrupt { table: &'static str, detail: String },
    /// A queued write was dropped before it ran: its writer stopped (the runtime is
    /// shutting down), so whether it reached the database is unknown to the caller.
    #[error("a queued write of {what} was dropped before it ran")]
    WriteLost { what: &'static str },
    /// What this store cannot do (a cluster on SQLite, a notice too large); the text says
    /// what.
    #[error("not supported: {0}")]
    NotSupported(&'static str),
    /// The data directory could not be created.
    #[error("cannot create {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
}

/// The embedded, forward-only migrations, one folder per backend: every
/// `<version>_<name>.sql` in `migrations/sqlite/` and `migrations/postgres/`, read at compile
/// time (`build.rs` makes cargo rebuild when a file is added). A released file is never
/// edited: its checksum is recorded in every database it migrated, and a changed one makes
/// those databases refuse to open.
static SQLITE_MIGRATOR: Migrator = sqlx::migrate!("../migrations/sqlite");
static POSTGRES_MIGRATOR: Migrator = sqlx::migrate!("../migrations/postgres");

/// Handle to the database; cheap to clone.
#[derive(Clone, Debug)]
pub struct Store {
    read: Pool,
    write: Arc<conn::WriteConn>,
    histories: Arc<history_cache::HistoryCache>,
    kept: Arc<kept::KeptRows>,
    saves: Arc<saves::SaveQueue>,
    /// The host label written on the agents with a workspace this store creates
    /// ([`Store::labelled`]).
    host_label: Option<Arc<str>>,
}

impl Store {
    /// Opens (creating if needed) the database at `path` and applies pending migrations.
    pub async fn open(path: &Path) -> Result<Store, StoreError> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::Io {
                path: dir.display().to_string(),
                source,
            })?;
        }
        let options = SqliteConnectOptions::from_str("sqlite:")?
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            // WAL + NORMAL: a crash loses no committed transaction that reached the WAL;
            // only a power cut may lose the last ones. The right trade for a chat log.
            .synchronous(SqliteSynchronous::Normal)
            .foreign_keys(true)
            .busy_timeout(Duration::from_secs(10));
        let write = conn::WriteConn::open(conn::Options::Sqlite(options.clone())).await?;
        if let db::Owned::Sqlite(conn) = &mut *write.acquire().await? {
            SQLITE_MIGRATOR.run(conn).await?;
        }
        // No ping before each acquire (sqlx's default): for SQLite it is a round trip to the
        // connection's worker thread that tells nothing (the database is a file in this
        // process), and it doubled the thread hops of every statement.
        let read = SqlitePoolOptions::new()
            .max_connections(4)
            .min_connections(0)
            .test_before_acquire(false)
            .connect_with(options.read_only(true))
            .await?;
        Ok(Store::with(Pool::Sqlite(read), write))
    }

    /// Connects to the PostgreSQL database at `url` (`postgres://...`) and applies pending
    /// migrations (sqlx holds an advisory lock while it does, so daemons starting together
    /// migrate once).
    pub async fn connect(url: &str) -> Result<Store, StoreError> {
        let options: PgConnectOptions = url.parse()?;
        let write = conn::WriteConn::open(conn::Options::Postgres(options.clone())).await?;
        if let db::Owned::Postgres(conn) = &mut *write.acquire().await? {
            POSTGRES_MIGRATOR.run(conn).await?;
        }
        let read = PgPoolOptions::new()
            .max_connections(4)
            .min_connections(0)
            .connect_with(options)
            .await?;
        Ok(Store::with(Pool::Postgres(read), write))
    }

    fn with(read: Pool, write: conn::WriteConn) -> Store {
        Store {
            read,
            write: Arc::new(write),
            histories: Arc::default(),
            kept: Arc::default(),
            saves: Arc::default(),
            host_label: None,
        }
    }

    /// This store, writing `label` as the host of every agent with a workspace it creates
    /// (its folder is on this machine: `[store] host_label`).
    pub fn labelled(mut self, label: &str) -> Store {
        self.host_label = Some(Arc::from(label));
        self
    }

    fn host_label(&self) -> Option<&str> {
        self.host_label.as_deref()
    }

    /// The host label of agent `agent_id` (`None` when it has no folder, or no such
    /// agent): only daemons of that label run it.
    pub async fn host_label_of(&self, agent_id: &str) -> Result<Option<String>, StoreError> {
        let row: Option<(Option<String>,)> = self
            .query_as("SELECT host_label FROM agents WHERE id = $1")
            .bind(agent_id)
            .fetch_optional(&self.read)
            .await?;
        Ok(row.and_then(|(label,)| label))
    }

    /// Which database this store runs on.
    pub fn backend(&self) -> Backend {
        self.read.backend()
    }

    /// A statement for this store's backend (run it on `&self.read` or the write connection).
    fn query(&self, sql: impl SqlSafeStr) -> Query {
        Query::new(self.backend(), sql)
    }

    /// Statements with plain `?` arguments sent as one (see [`Statements`]).
    fn statements(&self, texts: &[&'static str], transaction: bool) -> Statements {
        Statements::new(self.backend(), texts, transaction)
    }

    fn query_as<O>(&self, sql: impl SqlSafeStr) -> QueryAs<O>
    where
        O: for<'r> FromRow<'r, sqlx::sqlite::SqliteRow>
            + for<'r> FromRow<'r, sqlx::postgres::PgRow>,
    {
        QueryAs::new(self.backend(), sql)
    }

    /// A store that never connects, for unit tests of code that holds one but does not
    /// use it.
    #[cfg(test)]
    pub fn detached_for_tests() -> Store {
        let options = SqliteConnectOptions::new().filename("/nonexistent/agentd-test.db");
        Store {
            read: Pool::Sqlite(SqlitePoolOptions::new().connect_lazy_with(options.clone())),
            write: Arc::new(conn::WriteConn::closed(options)),
            histories: Arc::default(),
            kept: Arc::default(),
            saves: Arc::default(),
            host_label: None,
        }
    }

    /// Another daemon on the database wrote rows of the agent: everything kept in memory
    /// about it (its history, its row, summaries, session grants and background results)
    /// is dropped, so the next read goes to the database. Like a local write, it also
    /// keeps no read that was running meanwhile (it may have read the rows before the other
    /// daemon's write). An `always` grant stored elsewhere reaches the agents of this
    /// daemon whose grants are kept only with [`Store::forget_all_caches`]; until then they
    /// ask again.
    pub fn forget_agent_caches(&self, agent_id: &str) {
        self.histories.forget(agent_id);
        self.kept.forget_agent(agent_id);
    }

    /// Other daemons may have written anything (their notices were lost): everything kept
    /// in memory is dropped, and no read running meanwhile is kept.
    pub fn forget_all_caches(&self) {
        self.histories.clear();
        self.kept.clear();
    }

    /// Flushes and closes every connection (the last close checkpoints the WAL).
    pub async fn close(&self) {
        self.read.close().await;
        self.write.close().await;
    }
}

/// Unix time in milliseconds.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

fn corrupt(table: &'static str, detail: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt {
        table,
        detail: detail.to_string(),
    }
}

#[cfg(test)]
pub(crate) mod tests;
