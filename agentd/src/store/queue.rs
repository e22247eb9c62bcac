//! Messages sent into a busy agent (`sendMessage {whenBusy}`): queued as the agent's next
//! turns, or steers waiting to join the running turn. A row leaves when its message is
//! stored (the send's own statements, then [`Store::drop_queued`]) or is cancelled; rows a
//! crash left after their message was stored are dropped at start-up.

use agent_proto::{Block, QueuedMessage, WhenBusy};

use super::messages::blocks_json;
use super::{Store, StoreError, corrupt};

/// A queued row as read.
type Row = (String, String, String, String, Option<String>, i64);

const COLUMNS: &str = "id, assistant_id, kind, blocks, turn, created_at";

fn kind_name(kind: WhenBusy) -> &'static str {
    match kind {
        WhenBusy::Steer => "steer",
        // Only `queue` and `steer` are stored; `refuse` never is.
        WhenBusy::Queue | WhenBusy::Refuse => "queue",
    }
}

fn from_row(
    (id, assistant_id, kind, blocks, turn, created_at): Row,
) -> Result<QueuedMessage, StoreError> {
    let when_busy = match kind.as_str() {
        "queue" => WhenBusy::Queue,
        "steer" => WhenBusy::Steer,
        other => return Err(corrupt("queued_messages", format!("kind {other:?}"))),
    };
    let content: Vec<Block> =
        serde_json::from_str(&blocks).map_err(|e| corrupt("queued_messages", e))?;
    let turn = turn
        .map(|t| serde_json::from_str::<agent_proto::TurnOptions>(&t))
        .transpose()
        .map_err(|e| corrupt("queued_messages", e))?;
    Ok(QueuedMessage {
        user_message_id: id,
        assistant_message_id: assistant_id,
        when_busy,
        content,
        turn,
        created_at,
    })
}

impl Store {
    /// Adds a message at the end of the agent's queue.
    pub async fn insert_queued(
        &self,
        agent_id: &str,
        message: &QueuedMessage,
        client_request_id: Option<&str>,
    ) -> Result<(), StoreError> {
        let blocks = blocks_json(&message.content)?;
        let turn = message
            .turn
            .as_ref()
            .map(serde_json::to_string)
            .transpose()
            .map_err(|e| corrupt("queued_messages", e))?;
        let mut conn = self.write.acquire().await?;
        self.query(
            "INSERT INTO queued_messages \
             (id, agent_id, assistant_id, kind, blocks, client_request_id, turn, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        )
        .bind(&message.user_message_id)
        .bind(agent_id)
        .bind(&message.assistant_message_id)
        .bind(kind_name(message.when_busy))
        .bind(blocks)
        .bind(client_request_id)
        .bind(turn)
        .bind(message.created_at)
        .execute(&mut *conn)
        .await?;
        Ok(())
    }

    /// The agent's queue, in the order it runs (the order it was sent).
    pub async fn queued(&self, agent_id: &str) -> Result<Vec<QueuedMessage>, StoreError> {
        let sql = sqlx::AssertSqlSafe(format!(
            "SELECT {COLUMNS} FROM queued_messages WHERE agent_id = $1 ORDER BY rowid"
        ));
        let rows: Vec<Row> = self
            .query_as(sql)
            .bind(agent_id)
            .fetch_all(&self.read)
            .await?;
        rows.into_iter().map(from_row).collect()
    }

    /// The agent's steers waiting to join its running turn (`assistant_id`), in order.
    /// They stay queued until the message holding them is saved ([`Store::drop_queued`]).
    pub async fn steers(
        &self,
        agent_id: &str,
        assistant_id: &str,
    ) -> Result<Vec<QueuedMessage>, StoreError> {
        let sql = sqlx::AssertSqlSafe(format!(
            "SELECT {COLUMNS} FROM queued_messages WHERE agent_id = $1 AND kind = 'steer' \
             AND assistant_id = $2 ORDER BY rowid"
        ));
        let rows: Vec<Row> = self
            .query_as(sql)
            .bind(agent_id)
            .bind(assistant_id)
            .fetch_all(&self.read)
            .await?;
        rows.into_iter().map(from_row).collect()
    }

    /// Steers that did not join a turn (it ended first) become queued messages: each gets
    /// the id of the answer it will have (`new_answer_id`). True when there were any.
    pub async fn queue_leftover_steers(
        &self,
        agent_id: &str,
        new_answer_id: impl Fn() -> String,
    ) -> Result<bool, StoreError> {
        let mut conn = self.write.acquire().await?;
        let ids: Vec<(String,)> = self.query_as(
            "SELECT id FROM queued_messages WHERE agent_id = $1 AND kind = 'steer' ORDER BY rowid",
        )
        .bind(agent_id)
        .fetch_all(&mut *conn)
        .await?;
        for (id,) in &ids {
            self.query(
                "UPDATE queued_messages SET kind = 'queue', assistant_id = $1 WHERE id = $2",
            )
            .bind(new_answer_id())
            .bind(id)
            .execute(&mut *conn)
            .await?;
        }
        Ok(!ids.is_empty())
    }

    /// The first message of the agent's queue with the `clientRequestId` it was sent
    /// with, or none.
    pub async fn first_queued(
        &self,
        agent_id: &str,
    ) -> Result<Option<(QueuedMessage, Option<String>)>, StoreError> {
        let sql = sqlx::AssertSqlSafe(format!(
            "SELECT {COLUMNS}, client_request_id FROM queued_messages \
             WHERE agent_id = $1 AND kind = 'queue' ORDER BY rowid LIMIT 1"
        ));
        #[allow(clippy::type_complexity)]
        let row: Option<(
            String,
            String,
            String,
            String,
            Option<String>,
            i64,
            Option<String>,
        )> = self
            .query_as(sql)
            .bind(agent_id)
            .fetch_optional(&self.read)
            .await?;
        row.map(|(id, a, k, b, t, at, request)| {
            from_row((id, a, k, b, t, at)).map(|m| (m, request))
        })
        .transpose()
    }

    /// Drops queued messages of the agent: the one with this user message id, or all.
    /// Returns how many.
    pub async fn drop_queued(&self, agent_id: &str, id: Option<&str>) -> Result<u64, StoreError> {
        let mut conn = self.write.acquire().await?;
        let done = match id {
            Some(id) => {
                self.query("DELETE FROM queued_messages WHERE agent_id = $1 AND id = $2")
                    .bind(agent_id)
                    .bind(id)
                    .execute(&mut *conn)
                    .await?
            }
            None => {
                self.query("DELETE FROM queued_messages WHERE agent_id = $1")
                    .bind(agent_id)
                    .execute(&mut *conn)
                    .await?
            }
        };
        Ok(done.rows_affected())
    }

    /// The ids a queued send with this `clientRequestId` was given, if it is still queued.
    pub async fn find_queued_request(
        &self,
        agent_id: &str,
        client_request_id: &str,
    ) -> Result<Option<QueuedMessage>, StoreError> {
        let sql = sqlx::AssertSqlSafe(format!(
            "SELECT {COLUMNS} FROM queued_messages WHERE agent_id = $1 AND client_request_id = $2"
        ));
        let row: Option<Row> = self
            .query_as(sql)
            .bind(agent_id)
            .bind(client_request_id)
            .fetch_optional(&self.read)
            .await?;
        row.map(from_row).transpose()
    }

    /// Start-up: drops the rows whose message (or steer) was stored before a crash took
    /// them out,
    /// and returns the agents that still have a queue.
    pub async fn agents_with_queue(&self) -> Result<Vec<String>, StoreError> {
        let mut conn = self.write.acquire().await?;
        // A queued message stored as a message, a steer saved in its answer's blocks.
        self.query(self.backend().pick(
            "DELETE FROM queued_messages WHERE id IN (SELECT id FROM messages) \
             OR (kind = 'steer' AND EXISTS (SELECT 1 FROM messages m, json_each(m.blocks) b \
             WHERE m.id = queued_messages.assistant_id \
             AND json_extract(b.value, '$.type') = 'steer' \
             AND json_extract(b.value, '$.id') = queued_messages.id))",
            "DELETE FROM queued_messages WHERE id IN (SELECT id FROM messages) \
             OR (kind = 'steer' AND EXISTS (SELECT 1 FROM messages m, \
             json_array_elements(m.blocks::json) b \
             WHERE m.id = queued_messages.assistant_id \
             AND b.value ->> 'type' = 'steer' \
             AND b.value ->> 'id' = queued_messages.id))",
        ))
        .execute(&mut *conn)
        .await?;
        drop(conn);
        let rows: Vec<(String,)> = self
            .query_as("SELECT DISTINCT agent_id FROM queued_messages ORDER BY agent_id")
            .fetch_all(&self.read)
            .await?;
        Ok(rows.into_iter().map(|(id,)| id).collect())
    }
}
