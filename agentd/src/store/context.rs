//! What context building keeps besides messages: the context edge, the summaries the model
//! wrote, and answer variants made by `regenerate`.

use agent_proto::Message;

use super::db::OnConn;
use super::{Store, StoreError};

/// A stored summary of earlier rounds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    pub agent_id: String,
    /// The last message it covers; everything up to it is replaced, for the model.
    pub through_message_id: String,
    pub text: String,
    pub summarized_messages: u64,
    pub before_tokens: u64,
    pub after_tokens: u64,
    pub created_at: i64,
}

fn int(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

impl Store {
    /// Sets (or clears) the agent's context edge. False when the agent does not exist.
    pub async fn set_context_edge(
        &self,
        agent_id: &str,
        message_id: Option<&str>,
        now: i64,
    ) -> Result<bool, StoreError> {
        let mut conn = self.write.acquire().await?;
        let done = self
            .query("UPDATE agents SET context_edge = $2, updated_at = $3 WHERE id = $1")
            .bind(agent_id)
            .bind(message_id)
            .bind(now)
            .execute(&mut *conn)
            .await;
        self.kept.agents.forget(agent_id);
        drop(conn);
        Ok(done?.rows_affected() == 1)
    }

    pub async fn insert_summary(&self, summary: &Summary) -> Result<(), StoreError> {
        let written = self
            .query(
                "INSERT INTO summaries (agent_id, through_message_id, text, summarized_messages, \
             before_tokens, after_tokens, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
            )
            .bind(&summary.agent_id)
            .bind(&summary.through_message_id)
            .bind(&summary.text)
            .bind(int(summary.summarized_messages))
            .bind(int(summary.before_tokens))
            .bind(int(summary.after_tokens))
            .bind(summary.created_at)
            .execute(&mut *self.write.acquire().await?)
            .await;
        self.kept.summaries.forget(&summary.agent_id);
        written?;
        Ok(())
    }

    /// The agent's summaries, oldest first.
    /// From memory when read lately (`kept.rs`).
    pub async fn summaries(&self, agent_id: &str) -> Result<Vec<Summary>, StoreError> {
        if let Some(summaries) = self.kept.summaries.get(agent_id) {
            return Ok(summaries);
        }
        let version = self.kept.summaries.version();
        let mut conn = self.read.acquire().await?;
        let summaries = summaries_on(&mut conn, agent_id).await?;
        self.kept
            .summaries
            .keep(agent_id, version, summaries.clone());
        Ok(summaries)
    }

    /// Stores `variant` as a new answer replacing `old` (the agent's latest message): `old`
    /// is marked superseded and the variant goes at the end of the history, answering the
    /// same user message.
    pub async fn insert_variant(&self, old: &Message, variant: &Message) -> Result<(), StoreError> {
        let mut conn = self.write.acquire().await?;
        let mut tx = conn.conn().begin().await?;
        let (next, parent): (i64, Option<String>) = self
            .query_as(
                "SELECT (SELECT COALESCE(MAX(ord), 0) + 1 FROM messages WHERE agent_id = $1), \
             (SELECT parent_id FROM messages WHERE id = $2)",
            )
            .bind(&old.agent_id)
            .bind(&old.id)
            .fetch_one(&mut tx)
            .await?;
        self.query("UPDATE messages SET superseded = TRUE WHERE id = $1")
            .bind(&old.id)
            .execute(&mut tx)
            .await?;
        self.query(
            "INSERT INTO messages (id, agent_id, ord, role, blocks, status, parent_id, \
             created_at, updated_at, variant_of, turn, provider, model) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
        )
        .bind(&variant.id)
        .bind(&variant.agent_id)
        .bind(next)
        .bind(variant.role.as_str())
        .bind(serde_json::to_string(&variant.blocks).map_err(|e| super::corrupt("messages", e))?)
        .bind(variant.status.as_str())
        .bind(parent)
        .bind(variant.created_at)
        .bind(variant.updated_at)
        .bind(&variant.variant_of)
        .bind(super::messages::json_text(variant.turn.as_ref())?)
        .bind(variant.turn.as_ref().and_then(|t| t.provider.as_deref()))
        .bind(variant.turn.as_ref().and_then(|t| t.model.as_deref()))
        .execute(&mut tx)
        .await?;
        tx.commit().await?;
        self.histories.forget(&old.agent_id);
        drop(conn);
        Ok(())
    }
}

/// The agent's summaries, oldest first, on a connection (or inside a transaction).
pub(super) async fn summaries_on(
    conn: &mut impl OnConn,
    agent_id: &str,
) -> Result<Vec<Summary>, StoreError> {
    let rows: Vec<(String, String, i64, i64, i64, i64)> = conn
        .query_as(
            "SELECT through_message_id, text, summarized_messages, before_tokens, after_tokens, \
         created_at FROM summaries WHERE agent_id = $1 ORDER BY id ASC",
        )
        .bind(agent_id)
        .fetch_all(&mut *conn)
        .await?;
    Ok(rows
        .into_iter()
        .map(
            |(through_message_id, text, summarized, before, after, created_at)| Summary {
                agent_id: agent_id.to_owned(),
                through_message_id,
                text,
                summarized_messages: u64::try_from(summarized).unwrap_or(0),
                before_tokens: u64::try_from(before).unwrap_or(0),
                after_tokens: u64::try_from(after).unwrap_or(0),
                created_at,
            },
        )
        .collect())
}
