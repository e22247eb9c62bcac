//! Message rows. A message's blocks are stored as one JSON array; its position in the
//! agent's history is `ord` (1, 2, ...), assigned by the single writer.

use std::sync::Arc;

use super::db::Row;
use agent_proto::{
    Block, ListOrder, Message, MessageStatus, Role, SessionStatus, TurnOptions, Usage,
};
use serde::Deserialize;

use super::db::{Backend, Bind, Statements};
use super::{Store, StoreError, corrupt};

pub(super) const MESSAGE_COLUMNS: &str = "id, agent_id, role, blocks, status, input_tokens, output_tokens, \
     created_at, updated_at, variant_of, superseded, turn, structured_output";

/// Tokens of one agent's answers with one provider and model ([`Store::usage`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageRow {
    pub agent_id: String,
    pub provider: String,
    pub model: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub answers: u64,
}

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

pub(super) fn message_from_row(row: &Row) -> Result<Message, StoreError> {
    MessageRow {
        id: row.try_get("id")?,
        agent_id: row.try_get("agent_id")?,
        role: row.try_get("role")?,
        blocks: serde_json::from_str(row.try_get("blocks")?).map_err(|e| corrupt("messages", e))?,
        status: row.try_get("status")?,
        input_tokens: row.try_get("input_tokens")?,
        output_tokens: row.try_get("output_tokens")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
        variant_of: row.try_get("variant_of")?,
        superseded: i64::from(row.try_get::<bool, _>("superseded")?),
        turn: json_column(row, "turn")?,
        structured_output: json_column(row, "structured_output")?,
    }
    .into_message()
}

/// A column holding JSON text or NULL, read as `T`.
fn json_column<T: serde::de::DeserializeOwned>(
    row: &Row,
    name: &str,
) -> Result<Option<T>, StoreError> {
    let text: Option<String> = row.try_get(name)?;
    text.map(|t| serde_json::from_str(&t).map_err(|e| corrupt("messages", e)))
        .transpose()
}

/// A value as the JSON text of a column (`None`: NULL).
pub(super) fn json_text<T: serde::Serialize>(
    value: Option<&T>,
) -> Result<Option<String>, StoreError> {
    value
        .map(|v| serde_json::to_string(v).map_err(|e| corrupt("messages", e)))
        .transpose()
}

/// A message as SQLite builds it into one JSON array, in the order of [`MessageRow`]'s
/// fields. Reads of many messages ask SQLite for a single JSON text of all of them
/// (`json_group_array`) instead of one row each: sqlx hands every row over from its worker
/// thread one by one, which cost ~14 µs per message, 2.9 ms for a 200-message history
/// before each model call (docs/performance.md).
pub(super) const MESSAGE_JSON: &str = "json_array(id, agent_id, role, json(blocks), status, \
     input_tokens, output_tokens, created_at, updated_at, variant_of, superseded, json(turn), \
     json(structured_output))";

/// [`MESSAGE_JSON`] on PostgreSQL: the stored JSON texts are embedded as they are (`::json`
/// keeps the text), the flag as 0 or 1.
const MESSAGE_JSON_PG: &str = "json_build_array(id, agent_id, role, blocks::json, status, \
     input_tokens, output_tokens, created_at, updated_at, variant_of, superseded::int, \
     turn::json, structured_output::json)";

/// A select list of one JSON text: the array of `item` (a JSON value built from a row, see
/// [`MESSAGE_JSON`]) over the rows, in `order`; `[]` when there are none.
fn json_rows(backend: Backend, item: &str, order: &str) -> String {
    match backend {
        Backend::Sqlite => format!("json_group_array({item} ORDER BY {order})"),
        Backend::Postgres => format!("COALESCE(json_agg({item} ORDER BY {order})::text, '[]')"),
    }
}

/// A message as one JSON array on `backend` (see [`MESSAGE_JSON`]).
fn message_json(backend: Backend) -> &'static str {
    backend.pick(MESSAGE_JSON, MESSAGE_JSON_PG)
}

/// The columns of a message, read from a row or from [`MESSAGE_JSON`] (serde reads a
/// struct from an array in field order).
#[derive(Debug, Deserialize)]
pub(super) struct MessageRow {
    id: String,
    agent_id: String,
    role: String,
    blocks: Vec<Block>,
    status: String,
    input_tokens: Option<i64>,
    output_tokens: Option<i64>,
    created_at: i64,
    updated_at: i64,
    variant_of: Option<String>,
    superseded: i64,
    turn: Option<TurnOptions>,
    structured_output: Option<serde_json::Value>,
}

impl MessageRow {
    pub(super) fn into_message(self) -> Result<Message, StoreError> {
        let usage = match (self.input_tokens, self.output_tokens) {
            (None, None) => None,
            (i, o) => Some(Usage {
                input_tokens: i.and_then(|v| u64::try_from(v).ok()).unwrap_or(0),
                output_tokens: o.and_then(|v| u64::try_from(v).ok()).unwrap_or(0),
            }),
        };
        let (role, status) = (self.role, self.status);
        Ok(Message {
            id: self.id,
            agent_id: self.agent_id,
            role: Role::parse(&role)
                .ok_or_else(|| corrupt("messages", format!("role {role:?}")))?,
            blocks: self.blocks,
            status: MessageStatus::parse(&status)
                .ok_or_else(|| corrupt("messages", format!("status {status:?}")))?,
            created_at: self.created_at,
            updated_at: self.updated_at,
            usage,
            variant_of: self.variant_of,
            superseded: self.superseded != 0,
            turn: self.turn,
            structured_output: self.structured_output,
        })
    }
}

/// Parses the single JSON text of a `json_group_array` read.
pub(super) fn parse_json_rows<T: serde::de::DeserializeOwned>(
    json: &str,
) -> Result<Vec<T>, StoreError> {
    serde_json::from_str(json).map_err(|e| corrupt("messages", e))
}

pub(super) fn blocks_json(blocks: &[Block]) -> Result<String, StoreError> {
    serde_json::to_string(blocks).map_err(|e| corrupt("messages", e))
}

pub(super) fn tokens(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// The save of [`Store::update_message`] for a list of statements sent as one query: its
/// arguments are plain `?`, bound by [`bind_save`]. (sqlx numbers plain `?` across the
/// statements of a query; with `?NNN` it counts the numbers a statement skips as plain
/// ones, and past a few statements binds nothing to the named ones.)
pub(super) const SAVE_MESSAGE: &str = "UPDATE messages SET blocks = ?, status = ?, \
     input_tokens = ?, output_tokens = ?, updated_at = ?, structured_output = ? WHERE id = ?;";

/// Binds the arguments of [`SAVE_MESSAGE`] (`blocks` is the message's blocks as JSON).
pub(super) fn bind_save<Q: Bind>(query: Q, message: &Message, blocks: String) -> Q {
    query
        .bind(blocks)
        .bind(message.status.as_str())
        .bind(message.usage.map(|u| tokens(u.input_tokens)))
        .bind(message.usage.map(|u| tokens(u.output_tokens)))
        .bind(message.updated_at)
        .bind(
            message
                .structured_output
                .as_ref()
                .map(serde_json::Value::to_string),
        )
        .bind(&message.id)
}

/// Stores a `sendMessage`'s two messages after the agent's last one and marks the agent's
/// session `generating` (the run they start), as one transaction in one round trip (see
/// [`Store::execute_transaction`]). Plain `?` arguments (see [`SAVE_MESSAGE`]), bound by
/// [`bind_run_messages`] and then the agent id.
const INSERT_RUN_MESSAGES: &str = "WITH next(n) AS (SELECT COALESCE(MAX(ord), 0) + 1 FROM messages WHERE agent_id = ?) \
     INSERT INTO messages (id, agent_id, ord, role, blocks, status, parent_id, \
     client_request_id, created_at, updated_at, provider, model, turn) \
     SELECT ?, ?, n, ?, ?, ?, NULL, ?, ?, ?, NULL, NULL, NULL FROM next \
     UNION ALL \
     SELECT ?, ?, n + 1, ?, ?, ?, ?, NULL, ?, ?, \
     COALESCE(?, (SELECT provider FROM agents WHERE id = ?)), \
     COALESCE(?, (SELECT model FROM agents WHERE id = ?)), ? \
     FROM next;";

/// Marks the agent's session `generating`: follows [`INSERT_RUN_MESSAGES`], bound with the
/// agent id.
const MARK_GENERATING: &str = "UPDATE agents SET session_status = 'generating' WHERE id = ?;";

/// Binds the arguments of [`INSERT_RUN_MESSAGES`].
fn bind_run_messages<Q: Bind>(query: Q, run: &RunMessages) -> Result<Q, StoreError> {
    let (user, assistant) = (&run.user, &run.assistant);
    let turn = assistant.turn.as_ref();
    Ok(query
        .bind(&user.agent_id)
        .bind(&user.id)
        .bind(&user.agent_id)
        .bind(user.role.as_str())
        .bind(blocks_json(&user.blocks)?)
        .bind(user.status.as_str())
        .bind(run.client_request_id.as_deref())
        .bind(user.created_at)
        .bind(user.updated_at)
        .bind(&assistant.id)
        .bind(&user.agent_id)
        .bind(assistant.role.as_str())
        .bind(blocks_json(&assistant.blocks)?)
        .bind(assistant.status.as_str())
        .bind(&user.id)
        .bind(assistant.created_at)
        .bind(assistant.updated_at)
        // The answer's provider and model: the turn's own, else the agent's as it starts.
        .bind(turn.and_then(|t| t.provider.as_deref()))
        .bind(&user.agent_id)
        .bind(turn.and_then(|t| t.model.as_deref()))
        .bind(&user.agent_id)
        .bind(json_text(turn)?))
}

impl Store {
    /// Stores a user message and the assistant message that will answer it, at the end of
    /// the agent's history, and marks the agent's session `generating`: all of it or
    /// nothing, in one round trip to SQLite's thread (a transaction of separate statements
    /// would cost one trip each before the first token).
    pub async fn insert_run_messages(&self, run: &RunMessages) -> Result<(), StoreError> {
        let agent_id = &run.user.agent_id;
        let statements = self.statements(&[INSERT_RUN_MESSAGES, MARK_GENERATING], true);
        let query = bind_run_messages(statements, run)?.bind(agent_id);
        self.execute_transaction(query, || {
            self.histories.append(&run.user);
            self.histories.append(&run.assistant);
            self.kept
                .agents
                .edit(agent_id, |agent| agent.status = SessionStatus::Generating);
        })
        .await
    }

    /// Runs `query`, a statement list that opens a transaction (`BEGIN IMMEDIATE`) and
    /// commits it, on the write connection: one round trip where sqlx's `begin` and
    /// `commit` add two. `landed` runs once it committed, while the connection is still
    /// held (the caches' rules). If a statement fails the transaction may still be open,
    /// so the connection is renewed (the old one closed: SQLite rolls back).
    pub(super) async fn execute_transaction(
        &self,
        query: Statements,
        landed: impl FnOnce(),
    ) -> Result<(), StoreError> {
        let mut conn = self.write.acquire().await?;
        if let Err(e) = query.execute(&mut *conn).await {
            self.write.renew(&mut conn).await;
            return Err(e.into());
        }
        landed();
        drop(conn);
        Ok(())
    }

    /// The (user, assistant) message ids of an earlier `sendMessage` with this request id.
    pub async fn find_client_request(
        &self,
        agent_id: &str,
        client_request_id: &str,
    ) -> Result<Option<(String, String)>, StoreError> {
        let row: Option<(String, String)> = self
            .query_as(
                "SELECT u.id, a.id FROM messages u JOIN messages a ON a.parent_id = u.id \
             WHERE u.agent_id = $1 AND u.client_request_id = $2",
            )
            .bind(agent_id)
            .bind(client_request_id)
            .fetch_optional(&self.read)
            .await?;
        Ok(row)
    }

    pub async fn get_message(&self, id: &str) -> Result<Option<Message>, StoreError> {
        let sql = sqlx::AssertSqlSafe(format!(
            "SELECT {MESSAGE_COLUMNS} FROM messages WHERE id = $1"
        ));
        let row = self.query(sql).bind(id).fetch_optional(&self.read).await?;
        row.as_ref().map(message_from_row).transpose()
    }

    /// Tokens the answers used, by agent, provider and model (the answer's, else its
    /// agent's): of one agent or of all. Answers with no usage reported are left out.
    pub async fn usage(&self, agent_id: Option<&str>) -> Result<Vec<UsageRow>, StoreError> {
        let rows: Vec<(String, String, String, i64, i64, i64)> = self
            .query_as(
                "SELECT m.agent_id, COALESCE(m.provider, a.provider), COALESCE(m.model, a.model), \
             CAST(SUM(COALESCE(m.input_tokens, 0)) AS BIGINT), \
             CAST(SUM(COALESCE(m.output_tokens, 0)) AS BIGINT), COUNT(*) \
             FROM messages m JOIN agents a ON a.id = m.agent_id \
             WHERE m.role = 'assistant' \
             AND (m.input_tokens IS NOT NULL OR m.output_tokens IS NOT NULL) \
             AND ($1 IS NULL OR m.agent_id = $1) \
             GROUP BY 1, 2, 3 ORDER BY 1, 2, 3",
            )
            .bind(agent_id)
            .fetch_all(&self.read)
            .await?;
        let count = |n: i64| u64::try_from(n).unwrap_or(0);
        Ok(rows
            .into_iter()
            .map(
                |(agent_id, provider, model, input, output, answers)| UsageRow {
                    agent_id,
                    provider,
                    model,
                    input_tokens: count(input),
                    output_tokens: count(output),
                    answers: count(answers),
                },
            )
            .collect())
    }

    /// Messages whose text contains `query` (case-insensitive), newest first, of one agent
    /// or of all; at most `limit`. The JSON of the blocks is narrowed with `LIKE`, then
    /// each message's text is checked (the JSON also holds keys, ids and tool output).
    pub async fn search_messages(
        &self,
        query: &str,
        agent_id: Option<&str>,
        limit: usize,
    ) -> Result<Vec<Message>, StoreError> {
        const BATCH: i64 = 500;
        let needle = query.to_lowercase();
        // As the text is in the blocks' JSON: escaped the JSON way, then for LIKE.
        let json = serde_json::to_string(query).unwrap_or_default();
        let encoded = json
            .strip_prefix('"')
            .and_then(|j| j.strip_suffix('"'))
            .unwrap_or_default();
        let pattern = format!(
            "%{}%",
            encoded
                .replace('\\', "\\\\")
                .replace('%', "\\%")
                .replace('_', "\\_")
        );
        // SQLite's LIKE ignores ASCII case; PostgreSQL's needs asking.
        let like = self.backend().pick("LIKE", "ILIKE");
        let sql = format!(
            "SELECT {MESSAGE_COLUMNS} FROM messages \
             WHERE blocks {like} $1 ESCAPE '\\' AND ($2 IS NULL OR agent_id = $2) \
             AND ($3 IS NULL OR created_at < $3 OR (created_at = $3 AND id < $4)) \
             ORDER BY created_at DESC, id DESC LIMIT $5"
        );
        let mut hits = Vec::new();
        let mut after: Option<(i64, String)> = None;
        loop {
            let rows = self
                .query(sqlx::AssertSqlSafe(sql.clone()))
                .bind(&pattern)
                .bind(agent_id)
                .bind(after.as_ref().map(|(at, _)| *at))
                .bind(after.as_ref().map(|(_, id)| id.clone()))
                .bind(BATCH)
                .fetch_all(&self.read)
                .await?;
            let done = rows.len() < BATCH as usize;
            for row in &rows {
                let message = message_from_row(row)?;
                after = Some((message.created_at, message.id.clone()));
                if message.text().to_lowercase().contains(&needle) {
                    hits.push(message);
                    if hits.len() == limit {
                        return Ok(hits);
                    }
                }
            }
            if done {
                return Ok(hits);
            }
        }
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
        // One more than asked: whether there is a next page.
        let (compare, direction) = match order {
            ListOrder::Asc => (">", "ASC"),
            ListOrder::Desc => ("<", "DESC"),
        };
        // No `?2 IS NULL OR ...`: that hides the range from the (agent_id, ord) index, and
        // the last page of 100,000 messages took 12 ms instead of 1.
        let after = if cursor.is_some() {
            format!("AND ord {compare} $2")
        } else {
            String::new()
        };
        let backend = self.backend();
        let item = match backend {
            Backend::Sqlite => format!("json_array(ord, {MESSAGE_JSON})"),
            Backend::Postgres => format!("json_build_array(ord, {MESSAGE_JSON_PG})"),
        };
        let rows = json_rows(backend, &item, &format!("ord {direction}"));
        let sql = format!(
            "SELECT {rows} FROM (SELECT * FROM messages WHERE agent_id = $1 {after} \
             ORDER BY ord {direction} LIMIT $3) AS page"
        );
        let (json,): (String,) = self
            .query_as(sqlx::AssertSqlSafe(sql))
            .bind(agent_id)
            .bind(cursor)
            .bind(i64::from(limit) + 1)
            .fetch_one(&self.read)
            .await?;
        let mut rows: Vec<(i64, MessageRow)> = parse_json_rows(&json)?;
        let more = rows.len() > limit as usize;
        rows.truncate(limit as usize);
        let next_cursor = match (more, rows.last()) {
            (true, Some((ord, _))) => Some(ord.to_string()),
            _ => None,
        };
        let messages = rows
            .into_iter()
            .map(|(_, row)| row.into_message())
            .collect::<Result<Vec<_>, _>>()?;
        Ok(MessagePage {
            messages,
            next_cursor,
        })
    }

    /// Every message of the agent, oldest first (the input of context building).
    pub async fn history(&self, agent_id: &str) -> Result<Arc<Vec<Message>>, StoreError> {
        if let Some(history) = self.histories.get(agent_id) {
            return Ok(history);
        }
        let version = self.histories.version();
        let rows = json_rows(self.backend(), message_json(self.backend()), "ord");
        let sql = sqlx::AssertSqlSafe(format!("SELECT {rows} FROM messages WHERE agent_id = $1"));
        let (json,): (String,) = self
            .query_as(sql)
            .bind(agent_id)
            .fetch_one(&self.read)
            .await?;
        let history = Arc::new(
            parse_json_rows::<MessageRow>(&json)?
                .into_iter()
                .map(MessageRow::into_message)
                .collect::<Result<Vec<_>, _>>()?,
        );
        self.histories.keep(agent_id, version, history.clone());
        Ok(history)
    }

    /// The agent's latest assistant message.
    pub async fn last_assistant_message(
        &self,
        agent_id: &str,
    ) -> Result<Option<Message>, StoreError> {
        if let Some(history) = self.histories.get(agent_id) {
            return Ok(history
                .iter()
                .rev()
                .find(|m| m.role == Role::Assistant)
                .cloned());
        }
        let sql = sqlx::AssertSqlSafe(format!(
            "SELECT {MESSAGE_COLUMNS} FROM messages WHERE agent_id = $1 AND role = 'assistant' \
             ORDER BY ord DESC LIMIT 1"
        ));
        let row = self
            .query(sql)
            .bind(agent_id)
            .fetch_optional(&self.read)
            .await?;
        row.as_ref().map(message_from_row).transpose()
    }

    /// Writes a message's blocks, status and usage.
    pub async fn update_message(&self, message: &Message) -> Result<(), StoreError> {
        // Serialized before the single write connection is taken, not while holding it.
        let blocks = blocks_json(&message.blocks)?;
        let mut conn = self.write.acquire().await?;
        bind_save(self.statements(&[SAVE_MESSAGE], false), message, blocks)
            .execute(&mut *conn)
            .await?;
        self.histories.update(message);
        drop(conn);
        Ok(())
    }

    /// Saves a run's last state of its message and the agent's session status after the
    /// run, in one round trip (the message first, each statement committed as it ends).
    pub async fn update_message_and_status(
        &self,
        message: &Message,
        status: SessionStatus,
    ) -> Result<(), StoreError> {
        let statements = self.statements(
            &[
                SAVE_MESSAGE,
                "UPDATE agents SET session_status = ? WHERE id = ?;",
            ],
            false,
        );
        let blocks = blocks_json(&message.blocks)?;
        let mut conn = self.write.acquire().await?;
        let written = bind_save(statements, message, blocks)
            .bind(status.as_str())
            .bind(&message.agent_id)
            .execute(&mut *conn)
            .await;
        match &written {
            Ok(_) => {
                self.histories.update(message);
                self.kept
                    .agents
                    .edit(&message.agent_id, |agent| agent.status = status);
            }
            // The message statement runs first: it may have landed.
            Err(_) => {
                self.histories.forget(&message.agent_id);
                self.kept.agents.forget(&message.agent_id);
            }
        }
        drop(conn);
        written?;
        Ok(())
    }

    /// Marks every message a crash or kill left `pending` or `streaming` as `interrupted`
    /// (its blocks, i.e. the partial text, stay): of agent `only`, or of all agents.
    /// Returns (agent id, message id) of each.
    pub async fn interrupt_unfinished(
        &self,
        now: i64,
        only: Option<&str>,
    ) -> Result<Vec<(String, String)>, StoreError> {
        let rows: Vec<(String, String)> = self
            .query_as(
                "UPDATE messages SET status = 'interrupted', updated_at = $1 \
             WHERE status IN ('pending', 'streaming') AND ($2 IS NULL OR agent_id = $2) \
             RETURNING agent_id, id",
            )
            .bind(now)
            .bind(only)
            .fetch_all(&mut *self.write.acquire().await?)
            .await?;
        match only {
            Some(agent_id) => self.histories.forget(agent_id),
            None => self.histories.clear(),
        }
        Ok(rows)
    }
}
