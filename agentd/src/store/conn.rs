//! The store's one write connection, held by the store itself.
//!
//! Not a sqlx pool of one connection: a pool takes a connection back through a task it
//! spawns, which first pings the connection on its worker thread (a round trip that tells
//! nothing about a file in this process) and only then frees it, so the next write waited
//! for a task and two more thread hops. Here taking the connection is taking a lock, and a
//! write's statements go to the connection's worker thread and nothing else.
//!
//! A statement dropped half-way (its task cancelled) leaves nothing behind: the worker
//! runs commands in order and a dropped transaction queues its rollback. A statement list
//! that failed inside its own `BEGIN` may leave the transaction open: `renew` swaps in a
//! fresh connection and closes the old one (SQLite rolls back), as the pool did.
//!
//! On PostgreSQL the store keeps the same shape: one write connection per daemon, so what
//! one daemon writes is ordered as on SQLite; daemons beside it write on their own.

use sqlx::ConnectOptions;
use sqlx::postgres::PgConnectOptions;
use sqlx::sqlite::SqliteConnectOptions;
use tokio::sync::{MappedMutexGuard, Mutex, MutexGuard};

use super::db::{OnConn, Owned};

/// How to open a connection of either backend.
#[derive(Debug, Clone)]
pub(super) enum Options {
    Sqlite(SqliteConnectOptions),
    Postgres(PgConnectOptions),
}

impl Options {
    pub(super) async fn connect(&self) -> Result<Owned, sqlx::Error> {
        Ok(match self {
            Options::Sqlite(o) => Owned::Sqlite(o.connect().await?),
            Options::Postgres(o) => Owned::Postgres(o.connect().await?),
        })
    }
}

/// The write connection; `None` once closed (or never opened, in unit tests).
#[derive(Debug)]
pub(super) struct WriteConn {
    conn: Mutex<Option<Owned>>,
    options: Options,
}

impl WriteConn {
    pub(super) async fn open(options: Options) -> Result<WriteConn, sqlx::Error> {
        let conn = options.connect().await?;
        Ok(WriteConn {
            conn: Mutex::new(Some(conn)),
            options,
        })
    }

    /// A connection that is already closed: every use fails.
    #[cfg(test)]
    pub(super) fn closed(options: SqliteConnectOptions) -> WriteConn {
        WriteConn {
            conn: Mutex::new(None),
            options: Options::Sqlite(options),
        }
    }

    /// How this store's connections are opened.
    pub(super) fn options(&self) -> &Options {
        &self.options
    }

    /// The connection, once every earlier writer is done with it. Fails after `close`
    /// (as a closed pool did).
    pub(super) async fn acquire(&self) -> Result<MappedMutexGuard<'_, Owned>, sqlx::Error> {
        MutexGuard::try_map(self.conn.lock().await, Option::as_mut)
            .map_err(|_| sqlx::Error::PoolClosed)
    }

    /// Replaces the held connection `conn` (from `acquire`) with a fresh one and closes
    /// it, rolling back whatever it left open. If no fresh connection opens, it stays and
    /// gets a `ROLLBACK` (refused, harmlessly, when nothing is open).
    pub(super) async fn renew(&self, conn: &mut Owned) {
        match self.options.connect().await {
            Ok(fresh) => {
                let old = std::mem::replace(conn, fresh);
                if let Err(e) = old.close().await {
                    tracing::warn!("cannot close a failed write connection cleanly: {e}");
                }
            }
            Err(e) => {
                tracing::warn!("cannot open a fresh write connection: {e}");
                let _ = conn.query("ROLLBACK").execute(&mut *conn).await;
            }
        }
    }

    /// Waits for the writer in progress, then closes the connection (flushing what its
    /// worker still has queued).
    pub(super) async fn close(&self) {
        let conn = self.conn.lock().await.take();
        if let Some(conn) = conn
            && let Err(e) = conn.close().await
        {
            tracing::warn!("cannot close the write connection cleanly: {e}");
        }
    }
}
