//! Tool execution records: what ran, with what, for how long, and how it ended.

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

impl Store {
    /// Records that a call starts running (or, with `end`, one that was settled without
    /// running, e.g. denied).
    pub async fn record_tool_start(&self, run: &ToolExecution) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO tool_executions (agent_id, message_id, tool_call_id, tool_name, input, \
             status, started_at) VALUES (?, ?, ?, ?, ?, 'running', ?) \
             ON CONFLICT (message_id, tool_call_id) DO UPDATE SET \
             status = 'running', started_at = excluded.started_at, input = excluded.input",
        )
        .bind(&run.agent_id)
        .bind(&run.message_id)
        .bind(&run.tool_call_id)
        .bind(&run.tool_name)
        .bind(&run.input)
        .bind(run.started_at)
        .execute(&self.write)
        .await?;
        Ok(())
    }

    pub async fn record_tool_end(
        &self,
        message_id: &str,
        tool_call_id: &str,
        end: &ToolExecutionEnd,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE tool_executions SET status = ?3, output = ?4, offload_path = ?5, \
             finished_at = ?6, duration_ms = ?7 WHERE message_id = ?1 AND tool_call_id = ?2",
        )
        .bind(message_id)
        .bind(tool_call_id)
        .bind(end.status)
        .bind(&end.output)
        .bind(&end.offload_path)
        .bind(end.finished_at)
        .bind(i64::try_from(end.duration_ms).unwrap_or(i64::MAX))
        .execute(&self.write)
        .await?;
        Ok(())
    }

    /// At start-up: executions a crash left running are `interrupted`. Returns how many.
    pub async fn interrupt_running_tools(&self, now: i64) -> Result<u64, StoreError> {
        let result = sqlx::query(
            "UPDATE tool_executions SET status = 'interrupted', finished_at = ?, \
             output = COALESCE(output, 'interrupted: the daemon stopped while the tool ran') \
             WHERE status = 'running'",
        )
        .bind(now)
        .execute(&self.write)
        .await?;
        Ok(result.rows_affected())
    }
}
