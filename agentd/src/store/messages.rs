//! Message rows. A message's blocks are stored as one JSON array; its position in the
//! agent's history is `ord` (1, 2, ...), assigned by the single writer.

use agent_proto::{Block, ListOrder, Message, MessageStatus, Role, Usage};
use sqlx::Row;
use sqlx::sqlite::SqliteRow;

use super::{Store, StoreError, corrupt};

pub(super) const MESSAGE_COLUMNS: &str = "id, agent_id, role, blocks, status, input_tokens, output_tokens, \
     created_at, updated_at, variant_of, superseded";

/// The two messages a `sendMessage` creates, stored together or not at all.
#[derive(Debug, Clone)]
pub struct RunMessages {
    pub user: Message,
    pub assistant: Message,
    pub client_request_id: Option<String>,
}

/// One page of `list_messages`.
#[derive(Debug, Clone)]
pub struct MessagePage {
    pub messages: Vec<Message>,
    pub next_cursor: Option<String>,
}

pub(super) fn message_from_row(row: &SqliteRow) -> Result<Message, StoreError> {
    let role: String = row.try_get("role")?;
    let status: String = row.try_get("status")?;
    let blocks: String = row.try_get("blocks")?;
    let input: Option<i64> = row.try_get("input_tokens")?;
    let output: Option<i64> = row.try_get("output_tokens")?;
    let usage = match (input, output) {
        (None, None) => None,
        (i, o) => Some(Usage {
            input_tokens: i.and_then(|v| u64::try_from(v).ok()).unwrap_or(0),
            output_tokens: o.and_then(|v| u64::try_from(v).ok()).unwrap_or(0),
        }),
    };
    Ok(Message {
        id: row.try_get("id")?,
        agent_id: row.try_get("agent_id")?,
        role: Role::parse(&role).ok_or_else(|| corrupt("messages", format!("role {role:?}")))?,
        blocks: serde_json::from_str::<Vec<Block>>(&blocks).map_err(|e| corrupt("messages", e))?,
        status: MessageStatus::parse(&status)
            .ok_or_else(|| corrupt("messages", format!("status {status:?}")))?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
        usage,
        variant_of: row.try_get("variant_of")?,
        superseded: row.try_get("superseded")?,
    })
}

pub(super) fn blocks_json(blocks: &[Block]) -> Result<String, StoreError> {
    serde_json::to_string(blocks).map_err(|e| corrupt("messages", e))
}

pub(super) fn tokens(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

impl Store {
    /// Stores a user message and the assistant message that will answer it, at the end of
    /// the agent's history, in one transaction.
    pub async fn insert_run_messages(&self, run: &RunMessages) -> Result<(), StoreError> {
        let mut tx = self.write.begin().await?;
        let (next,): (i64,) =
            sqlx::query_as("SELECT COALESCE(MAX(ord), 0) + 1 FROM messages WHERE agent_id = ?")
                .bind(&run.user.agent_id)
                .fetch_one(&mut *tx)
                .await?;
        let rows = [
            (&run.user, next, None, run.client_request_id.as_deref()),
            (&run.assistant, next + 1, Some(run.user.id.as_str()), None),
        ];
        for (message, ord, parent, request_id) in rows {
            sqlx::query(
                "INSERT INTO messages (id, agent_id, ord, role, blocks, status, parent_id, \
                 client_request_id, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            )
            .bind(&message.id)
            .bind(&message.agent_id)
            .bind(ord)
            .bind(message.role.as_str())
            .bind(blocks_json(&message.blocks)?)
            .bind(message.status.as_str())
            .bind(parent)
            .bind(request_id)
            .bind(message.created_at)
            .bind(message.updated_at)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// The (user, assistant) message ids of an earlier `sendMessage` with this request id.
    pub async fn find_client_request(
        &self,
        agent_id: &str,
        client_request_id: &str,
    ) -> Result<Option<(String, String)>, StoreError> {
        let row: Option<(String, String)> = sqlx::query_as(
            "SELECT u.id, a.id FROM messages u JOIN messages a ON a.parent_id = u.id \
             WHERE u.agent_id = ? AND u.client_request_id = ?",
        )
        .bind(agent_id)
        .bind(client_request_id)
        .fetch_optional(&self.read)
        .await?;
        Ok(row)
    }

    pub async fn get_message(&self, id: &str) -> Result<Option<Message>, StoreError> {
        let sql = sqlx::AssertSqlSafe(format!(
            "SELECT {MESSAGE_COLUMNS} FROM messages WHERE id = ?"
        ));
        let row = sqlx::query(sql).bind(id).fetch_optional(&self.read).await?;
        row.as_ref().map(message_from_row).transpose()
    }

    /// One page of an agent's messages. The cursor is the `ord` of the last message of the
    /// previous page, as a string.
    pub async fn list_messages(
        &self,
        agent_id: &str,
        cursor: Option<i64>,
        limit: u32,
        order: ListOrder,
    ) -> Result<MessagePage, StoreError> {
        let limit = limit.max(1);
        let sql = match order {
            ListOrder::Asc => format!(
                "SELECT ord, {MESSAGE_COLUMNS} FROM messages \
                 WHERE agent_id = ?1 AND (?2 IS NULL OR ord > ?2) ORDER BY ord ASC LIMIT ?3"
            ),
            ListOrder::Desc => format!(
                "SELECT ord, {MESSAGE_COLUMNS} FROM messages \
                 WHERE agent_id = ?1 AND (?2 IS NULL OR ord < ?2) ORDER BY ord DESC LIMIT ?3"
            ),
        };
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(agent_id)
            .bind(cursor)
            .bind(i64::from(limit) + 1)
            .fetch_all(&self.read)
            .await?;
        let more = rows.len() > limit as usize;
        let rows = &rows[..rows.len().min(limit as usize)];
        let messages = rows
            .iter()
            .map(message_from_row)
            .collect::<Result<Vec<_>, _>>()?;
        let next_cursor = match (more, rows.last()) {
            (true, Some(last)) => Some(last.try_get::<i64, _>("ord")?.to_string()),
            _ => None,
        };
        Ok(MessagePage {
            messages,
            next_cursor,
        })
    }

    /// Every message of the agent, oldest first (the input of context building).
    pub async fn history(&self, agent_id: &str) -> Result<Vec<Message>, StoreError> {
        let sql = sqlx::AssertSqlSafe(format!(
            "SELECT {MESSAGE_COLUMNS} FROM messages WHERE agent_id = ? ORDER BY ord ASC"
        ));
        let rows = sqlx::query(sql)
            .bind(agent_id)
            .fetch_all(&self.read)
            .await?;
        rows.iter().map(message_from_row).collect()
    }

    /// The agent's latest assistant message.
    pub async fn last_assistant_message(
        &self,
        agent_id: &str,
    ) -> Result<Option<Message>, StoreError> {
        let sql = sqlx::AssertSqlSafe(format!(
            "SELECT {MESSAGE_COLUMNS} FROM messages WHERE agent_id = ? AND role = 'assistant' \
             ORDER BY ord DESC LIMIT 1"
        ));
        let row = sqlx::query(sql)
            .bind(agent_id)
            .fetch_optional(&self.read)
            .await?;
        row.as_ref().map(message_from_row).transpose()
    }

    /// Writes a message's blocks, status and usage.
    pub async fn update_message(&self, message: &Message) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE messages SET blocks = ?2, status = ?3, input_tokens = ?4, output_tokens = ?5, \
             updated_at = ?6 WHERE id = ?1",
        )
        .bind(&message.id)
        .bind(blocks_json(&message.blocks)?)
        .bind(message.status.as_str())
        .bind(message.usage.map(|u| tokens(u.input_tokens)))
        .bind(message.usage.map(|u| tokens(u.output_tokens)))
        .bind(message.updated_at)
        .execute(&self.write)
        .await?;
        Ok(())
    }

    /// Marks every message a crash or kill left `pending` or `streaming` as `interrupted`
    /// (its blocks, i.e. the partial text, stay). Returns (agent id, message id) of each.
    pub async fn interrupt_unfinished(
        &self,
        now: i64,
    ) -> Result<Vec<(String, String)>, StoreError> {
        let rows: Vec<(String, String)> = sqlx::query_as(
            "UPDATE messages SET status = 'interrupted', updated_at = ? \
             WHERE status IN ('pending', 'streaming') RETURNING agent_id, id",
        )
        .bind(now)
        .fetch_all(&self.write)
        .await?;
        Ok(rows)
    }
}
