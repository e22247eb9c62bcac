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

use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};
use sqlx::{ConnectOptions, Connection};
use tokio::sync::{MappedMutexGuard, Mutex, MutexGuard};

/// The write connection; `None` once closed (or never opened, in unit tests).
#[derive(Debug)]
pub(super) struct WriteConn {
    conn: Mutex<Option<SqliteConnection>>,
    options: SqliteConnectOptions,
}

impl WriteConn {
    pub(super) async fn open(options: &SqliteConnectOptions) -> Result<WriteConn, sqlx::Error> {
        let conn = options.connect().await?;
        Ok(WriteConn {
            conn: Mutex::new(Some(conn)),
            options: options.clone(),
        })
    }

    /// A connection that is already closed: every use fails.
    #[cfg(test)]
    pub(super) fn closed(options: SqliteConnectOptions) -> WriteConn {
        WriteConn {
            conn: Mutex::new(None),
            options,
        }
    }

    /// The connection, once every earlier writer is done with it. Fails after `close`
    /// (as a closed pool did).
    pub(super) async fn acquire(
        &self,
    ) -> Result<MappedMutexGuard<'_, SqliteConnection>, sqlx::Error> {
        MutexGuard::try_map(self.conn.lock().await, Option::as_mut)
            .map_err(|_| sqlx::Error::PoolClosed)
    }

    /// Replaces the held connection `conn` (from `acquire`) with a fresh one and closes
    /// it, rolling back whatever it left open. If no fresh connection opens, it stays and
    /// gets a `ROLLBACK` (refused, harmlessly, when nothing is open).
    pub(super) async fn renew(&self, conn: &mut SqliteConnection) {
        match self.options.connect().await {
            Ok(fresh) => {
                let old = std::mem::replace(conn, fresh);
                if let Err(e) = old.close().await {
                    tracing::warn!("cannot close a failed write connection cleanly: {e}");
                }
            }
            Err(e) => {
                tracing::warn!("cannot open a fresh write connection: {e}");
                let _ = sqlx::query("ROLLBACK").execute(&mut *conn).await;
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
