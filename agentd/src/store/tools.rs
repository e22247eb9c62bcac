//! Tool execution records: what ran, with what, for how long, and how it ended.

use agent_proto::Message;

use super::db::Bind;
use super::messages::{SAVE_MESSAGE, bind_save, blocks_json};
use super::{Store, StoreError};

/// The start of a tool execution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolExecution {
    pub agent_id: String,
    pub message_id: String,
    pub tool_call_id: String,
    pub tool_name: String,
    /// The arguments as JSON.
    pub input: String,
    pub started_at: i64,
}

/// How a tool execution ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolExecutionEnd {
    pub status: &'static str,
    pub output: String,
    pub offload_path: Option<String>,
    pub finished_at: i64,
    pub duration_ms: u64,
}

/// A call's end as its execution record keeps it: what the message's block gets back
/// when a crash came before the message's save ([`Store::ended_tools`]).
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct EndedTool {
    pub tool_call_id: String,
    /// `success`, `error`, `denied`, `cancelled`, `interrupted`.
    pub status: String,
    pub output: Option<String>,
    pub offload_path: Option<String>,
    pub duration_ms: Option<i64>,
}

/// What a save of a message records of one of its tool calls
/// ([`Store::update_message_and_tool`]).
#[derive(Debug, Clone, Copy)]
pub enum ToolRecord<'a> {
    /// The call starts running.
    Start(&'a ToolExecution),
    /// The call ended; `start` when it never ran (settled without running, e.g. denied).
    End {
        tool_call_id: &'a str,
        start: Option<&'a ToolExecution>,
        end: &'a ToolExecutionEnd,
    },
}

/// The statements [`Store::update_message_and_tool`] adds to the message's save, with
/// plain `?` arguments (see `SAVE_MESSAGE`): a start (agent, message, call, tool, input,
/// start time) and an end (status, output, offload path, end time, duration, message,
/// call).
const RECORD_START: &str = "INSERT INTO tool_executions (agent_id, message_id, tool_call_id, \
     tool_name, input, status, started_at) VALUES (?, ?, ?, ?, ?, 'running', ?) \
     ON CONFLICT (message_id, tool_call_id) DO UPDATE SET \
     status = 'running', started_at = excluded.started_at, input = excluded.input;";
const RECORD_END: &str = "UPDATE tool_executions SET status = ?, output = ?, \
     offload_path = ?, finished_at = ?, duration_ms = ? \
     WHERE message_id = ? AND tool_call_id = ?;";

/// Binds the arguments of [`RECORD_START`].
fn bind_start<Q: Bind>(query: Q, run: &ToolExecution) -> Q {
    query
        .bind(&run.agent_id)
        .bind(&run.message_id)
        .bind(&run.tool_call_id)
        .bind(&run.tool_name)
        .bind(&run.input)
        .bind(run.started_at)
}

/// Binds the arguments of [`RECORD_END`].
fn bind_end<Q: Bind>(query: Q, end: &ToolExecutionEnd, message_id: &str, tool_call_id: &str) -> Q {
    query
        .bind(end.status)
        .bind(&end.output)
        .bind(&end.offload_path)
        .bind(end.finished_at)
        .bind(i64::try_from(end.duration_ms).unwrap_or(i64::MAX))
        .bind(message_id)
        .bind(tool_call_id)
}

impl Store {
    /// Saves a message (as [`Store::update_message`]) and records a tool call's start or
    /// end, in one round trip to SQLite's thread: the statements run in order, each
    /// committed as it ends, as if written one after the other (tool_gap in
    /// docs/performance.md).
    pub async fn update_message_and_tool(
        &self,
        message: &Message,
        record: ToolRecord<'_>,
    ) -> Result<(), StoreError> {
        let (start, end) = match record {
            ToolRecord::Start(start) => (Some(start), None),
            ToolRecord::End {
                tool_call_id,
                start,
                end,
            } => (start, Some((tool_call_id, end))),
        };
        let texts = match (start.is_some(), end.is_some()) {
            (true, true) => &[SAVE_MESSAGE, RECORD_START, RECORD_END][..],
            (true, false) => &[SAVE_MESSAGE, RECORD_START],
            (false, true) => &[SAVE_MESSAGE, RECORD_END],
            (false, false) => &[SAVE_MESSAGE],
        };
        let blocks = blocks_json(&message.blocks)?;
        let mut query = bind_save(self.statements(texts, false), message, blocks);
        if let Some(run) = start {
            query = bind_start(query, run);
        }
        if let Some((tool_call_id, end)) = end {
            query = bind_end(query, end, &message.id, tool_call_id);
        }
        let mut conn = self.write.acquire().await?;
        let written = query.execute(&mut *conn).await;
        // The message statement runs first: when a later one failed, it may have landed.
        match &written {
            Ok(_) => self.histories.update(message),
            Err(_) => self.histories.forget(&message.agent_id),
        }
        drop(conn);
        written?;
        Ok(())
    }

    /// Records that a call starts running, without a message save.
    pub async fn record_tool_start(&self, run: &ToolExecution) -> Result<(), StoreError> {
        self.record_tool(&run.message_id, ToolRecord::Start(run))
            .await
    }

    /// Records a tool call's start or end of the message `message_id` without saving the
    /// message: a few small statements, whatever the message's size (the loop saves the
    /// message itself at most every 250 ms, `agent_loop::writer`).
    pub async fn record_tool(
        &self,
        message_id: &str,
        record: ToolRecord<'_>,
    ) -> Result<(), StoreError> {
        let (start, end) = match record {
            ToolRecord::Start(start) => (Some(start), None),
            ToolRecord::End {
                tool_call_id,
                start,
                end,
            } => (start, Some((tool_call_id, end))),
        };
        let texts = match (start.is_some(), end.is_some()) {
            (true, true) => &[RECORD_START, RECORD_END][..],
            (true, false) => &[RECORD_START],
            (false, true) => &[RECORD_END],
            (false, false) => return Ok(()),
        };
        let mut query = self.statements(texts, false);
        if let Some(run) = start {
            query = bind_start(query, run);
        }
        if let Some((tool_call_id, end)) = end {
            query = bind_end(query, end, message_id, tool_call_id);
        }
        query.execute(&mut *self.write.acquire().await?).await?;
        Ok(())
    }

    /// The calls of a message whose execution record says they ended (start-up recovery:
    /// a call's end is recorded at once, the message with it at most 250 ms later).
    pub async fn ended_tools(&self, message_id: &str) -> Result<Vec<EndedTool>, StoreError> {
        let rows = self
            .query_as(
                "SELECT tool_call_id, status, output, offload_path, duration_ms \
             FROM tool_executions WHERE message_id = $1 AND status <> 'running' ORDER BY id",
            )
            .bind(message_id)
            .fetch_all(&self.read)
            .await?;
        Ok(rows)
    }

    /// At start-up (or when another daemon's run of agent `only` was lost): executions a
    /// crash left running are `interrupted`. Returns how many.
    pub async fn interrupt_running_tools(
        &self,
        now: i64,
        only: Option<&str>,
    ) -> Result<u64, StoreError> {
        let result = self
            .query(
                "UPDATE tool_executions SET status = 'interrupted', finished_at = $1, \
             output = COALESCE(output, 'interrupted: the daemon stopped while the tool ran') \
             WHERE status = 'running' AND ($2 IS NULL OR agent_id = $2)",
            )
            .bind(now)
            .bind(only)
            .execute(&mut *self.write.acquire().await?)
            .await?;
        Ok(result.rows_affected())
    }
}
