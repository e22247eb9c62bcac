//! One daemon per PostgreSQL database, for now: several daemons sharing one (ownership of
//! runs, events and commands across daemons) is not built yet, so the first daemon holds
//! an advisory lock for as long as it runs, and a second one is refused at start with
//! that said. The lock is the connection's: it goes when the daemon does, however it ends.

use sqlx::Connection;
use sqlx::postgres::PgConnection;

use super::conn::Options;
use super::{Store, StoreError};

/// The advisory lock's two keys: `agnd`, and 0 for "the whole database".
const LOCK_KEYS: (i32, i32) = (0x6167_6e64, 0);

/// The held lock: the connection it lives on (none on SQLite).
#[derive(Debug)]
pub struct SoleDaemon {
    _conn: Option<PgConnection>,
}

impl Store {
    /// On PostgreSQL, takes the database for this daemon alone: `Ok(None)` when another
    /// daemon has it. On SQLite there is nothing to take (the data directory's lock keeps
    /// one daemon per file): a hold on nothing.
    pub async fn take_sole_daemon(&self) -> Result<Option<SoleDaemon>, StoreError> {
        let Options::Postgres(options) = self.write.options() else {
            return Ok(Some(SoleDaemon { _conn: None }));
        };
        let mut conn = PgConnection::connect_with(options).await?;
        let (taken,): (bool,) = sqlx::query_as("SELECT pg_try_advisory_lock($1, $2)")
            .bind(LOCK_KEYS.0)
            .bind(LOCK_KEYS.1)
            .fetch_one(&mut conn)
            .await?;
        if !taken {
            conn.close().await?;
            return Ok(None);
        }
        Ok(Some(SoleDaemon { _conn: Some(conn) }))
    }
}
