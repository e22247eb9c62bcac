//! Undo's records: which workspace snapshots belong to which answer (`checkpoints`), and
//! cutting an agent's history back to a user message (`revertTo`).
//!
//! A checkpoint keeps an answer's first "before" snapshot and its latest "after" one (an
//! answer continued after a permission prompt is the same answer). The snapshots are files
//! of `tools::checkpoint`; only their ids are here.

use super::db::OnConn;
use super::{Store, StoreError};

/// The snapshots of one answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    pub message_id: String,
    pub before: Option<String>,
    pub after: Option<String>,
    /// Why a snapshot of the answer could not be taken.
    pub error: Option<String>,
}

type Row = (String, Option<String>, Option<String>, Option<String>);

fn checkpoint((message_id, before, after, error): Row) -> Checkpoint {
    Checkpoint {
        message_id,
        before,
        after,
        error,
    }
}

/// What cutting a history removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Truncated {
    pub messages: u64,
    pub summaries: u64,
}

impl Store {
    /// Records the answer's "before" snapshot, unless it has one (the first is kept).
    pub async fn begin_checkpoint(
        &self,
        agent_id: &str,
        message_id: &str,
        before: Result<&str, &str>,
        now: i64,
    ) -> Result<(), StoreError> {
        let (snapshot, error) = match before {
            Ok(id) => (Some(id), None),
            Err(e) => (None, Some(e)),
        };
        self.query(
            "INSERT INTO checkpoints (message_id, agent_id, before_snapshot, error, updated_at) \
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT (message_id) DO UPDATE SET \
             error = COALESCE(checkpoints.error, excluded.error), updated_at = excluded.updated_at",
        )
        .bind(message_id)
        .bind(agent_id)
        .bind(snapshot)
        .bind(error)
        .bind(now)
        .execute(&mut *self.write.acquire().await?)
        .await?;
        Ok(())
    }

    /// Records the answer's latest "after" snapshot (or why it could not be taken).
    pub async fn end_checkpoint(
        &self,
        message_id: &str,
        after: Result<&str, &str>,
        now: i64,
    ) -> Result<(), StoreError> {
        let (snapshot, error) = match after {
            Ok(id) => (Some(id), None),
            Err(e) => (None, Some(e)),
        };
        self.query(
            "UPDATE checkpoints SET after_snapshot = $1, error = COALESCE(error, $2), \
             updated_at = $3 WHERE message_id = $4",
        )
        .bind(snapshot)
        .bind(error)
        .bind(now)
        .bind(message_id)
        .execute(&mut *self.write.acquire().await?)
        .await?;
        Ok(())
    }

    /// The checkpoint of one answer.
    pub async fn checkpoint(&self, message_id: &str) -> Result<Option<Checkpoint>, StoreError> {
        let row: Option<Row> = self
            .query_as(
                "SELECT message_id, before_snapshot, after_snapshot, error FROM checkpoints \
             WHERE message_id = $1",
            )
            .bind(message_id)
            .fetch_optional(&self.read)
            .await?;
        Ok(row.map(checkpoint))
    }

    /// The agent's checkpoints in history order (of answers at or after position `from`).
    pub async fn checkpoints_from(
        &self,
        agent_id: &str,
        from: i64,
    ) -> Result<Vec<Checkpoint>, StoreError> {
        let rows: Vec<Row> = self
            .query_as(
                "SELECT c.message_id, c.before_snapshot, c.after_snapshot, c.error \
             FROM checkpoints c JOIN messages m ON m.id = c.message_id \
             WHERE c.agent_id = $1 AND m.ord >= $2 ORDER BY m.ord ASC",
            )
            .bind(agent_id)
            .bind(from)
            .fetch_all(&self.read)
            .await?;
        Ok(rows.into_iter().map(checkpoint).collect())
    }

    /// The agent's latest checkpoint (of its latest answer that has one).
    pub async fn last_checkpoint(&self, agent_id: &str) -> Result<Option<Checkpoint>, StoreError> {
        let row: Option<Row> = self
            .query_as(
                "SELECT c.message_id, c.before_snapshot, c.after_snapshot, c.error \
             FROM checkpoints c JOIN messages m ON m.id = c.message_id \
             WHERE c.agent_id = $1 ORDER BY m.ord DESC LIMIT 1",
            )
            .bind(agent_id)
            .fetch_optional(&self.read)
            .await?;
        Ok(row.map(checkpoint))
    }

    /// A message's position in its agent's history.
    pub async fn message_position(&self, message_id: &str) -> Result<Option<i64>, StoreError> {
        let row: Option<(i64,)> = self
            .query_as("SELECT ord FROM messages WHERE id = $1")
            .bind(message_id)
            .fetch_optional(&self.read)
            .await?;
        Ok(row.map(|(ord,)| ord))
    }

    /// Deletes the agent's messages from position `from` on, with what depends on them:
    /// their checkpoints and tool records (by the foreign keys), the summaries that cover
    /// any of them, and the context edge when it was one of them. One transaction; the
    /// kept history and rows are dropped under the write connection.
    pub async fn truncate_history(
        &self,
        agent_id: &str,
        from: i64,
        now: i64,
    ) -> Result<Truncated, StoreError> {
        let mut conn = self.write.acquire().await?;
        let done = truncate_on(&mut conn, agent_id, from, now).await;
        self.histories.forget(agent_id);
        self.kept.summaries.forget(agent_id);
        self.kept.agents.forget(agent_id);
        drop(conn);
        done
    }
}

async fn truncate_on(
    conn: &mut impl OnConn,
    agent_id: &str,
    from: i64,
    now: i64,
) -> Result<Truncated, StoreError> {
    let mut tx = conn.conn().begin().await?;
    let summaries = tx
        .query(
            "DELETE FROM summaries WHERE agent_id = $1 AND through_message_id IN \
         (SELECT id FROM messages WHERE agent_id = $1 AND ord >= $2)",
        )
        .bind(agent_id)
        .bind(from)
        .execute(&mut tx)
        .await?
        .rows_affected();
    tx.query(
        "UPDATE agents SET context_edge = NULL, updated_at = $3 WHERE id = $1 AND context_edge IN \
         (SELECT id FROM messages WHERE agent_id = $1 AND ord >= $2)",
    )
    .bind(agent_id)
    .bind(from)
    .bind(now)
    .execute(&mut tx)
    .await?;
    let messages = tx
        .query("DELETE FROM messages WHERE agent_id = $1 AND ord >= $2")
        .bind(agent_id)
        .bind(from)
        .execute(&mut tx)
        .await?
        .rows_affected();
    tx.commit().await?;
    Ok(Truncated {
        messages,
        summaries,
    })
}
