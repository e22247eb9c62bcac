//! Background tasks: subagents a `task` call started with `background: true`, and their
//! results waiting for the parent's next user message.

use agent_proto::LoopFinishReason;

use super::db::OnConn;
use super::{Store, StoreError};

/// A background task as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackgroundTask {
    pub child_agent_id: String,
    pub parent_agent_id: String,
    pub tool_call_id: String,
    pub description: String,
    /// `None` while it runs; how its last run ended once finished.
    pub status: Option<String>,
    pub result: Option<String>,
}

impl Store {
    /// Records a background task that just started.
    pub async fn insert_background_task(
        &self,
        task: &BackgroundTask,
        now: i64,
    ) -> Result<(), StoreError> {
        let written = self
            .query(
                "INSERT INTO background_tasks (child_agent_id, parent_agent_id, tool_call_id, \
             description, status, started_at) VALUES ($1, $2, $3, $4, 'running', $5)",
            )
            .bind(&task.child_agent_id)
            .bind(&task.parent_agent_id)
            .bind(&task.tool_call_id)
            .bind(&task.description)
            .bind(now)
            .execute(&mut *self.write.acquire().await?)
            .await;
        self.kept.background.forget(&task.parent_agent_id);
        written?;
        Ok(())
    }

    /// Records how a background task ended and what its parent's model gets. False when
    /// there is no such running task (its parent was deleted, or it ended already).
    pub async fn finish_background_task(
        &self,
        child_agent_id: &str,
        status: LoopFinishReason,
        result: &str,
        now: i64,
    ) -> Result<bool, StoreError> {
        let status = serde_json::to_value(status)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_else(|| "error".into());
        let done = self
            .query(
                "UPDATE background_tasks SET status = $2, result = $3, finished_at = $4 \
             WHERE child_agent_id = $1 AND status = 'running'",
            )
            .bind(child_agent_id)
            .bind(status)
            .bind(result)
            .bind(now)
            .execute(&mut *self.write.acquire().await?)
            .await;
        // Only the child is known here; finishing is rare.
        self.kept.background.clear();
        Ok(done?.rows_affected() > 0)
    }

    /// The finished results of an agent's background tasks no user message carried yet,
    /// oldest first.
    pub async fn undelivered_background_results(
        &self,
        parent_agent_id: &str,
    ) -> Result<Vec<BackgroundTask>, StoreError> {
        if let Some(results) = self.kept.background.get(parent_agent_id) {
            return Ok(results);
        }
        let version = self.kept.background.version();
        let rows: Vec<(String, String, String, String, Option<String>)> = self
            .query_as(
                "SELECT child_agent_id, tool_call_id, description, status, result \
             FROM background_tasks WHERE parent_agent_id = $1 AND delivered = FALSE \
               AND status <> 'running' ORDER BY finished_at, child_agent_id",
            )
            .bind(parent_agent_id)
            .fetch_all(&self.read)
            .await?;
        let results: Vec<BackgroundTask> = rows
            .into_iter()
            .map(
                |(child_agent_id, tool_call_id, description, status, result)| BackgroundTask {
                    child_agent_id,
                    parent_agent_id: parent_agent_id.to_owned(),
                    tool_call_id,
                    description,
                    status: Some(status),
                    result,
                },
            )
            .collect();
        self.kept
            .background
            .keep(parent_agent_id, version, results.clone());
        Ok(results)
    }

    /// Marks results as carried to the parent's model.
    pub async fn mark_background_delivered(&self, child_ids: &[&str]) -> Result<(), StoreError> {
        let mut conn = self.write.acquire().await?;
        let mut tx = conn.conn().begin().await?;
        for id in child_ids {
            self.query("UPDATE background_tasks SET delivered = TRUE WHERE child_agent_id = $1")
                .bind(id)
                .execute(&mut tx)
                .await?;
        }
        let committed = tx.commit().await;
        self.kept.background.clear();
        committed?;
        Ok(())
    }

    /// At start-up: background tasks that were running when the daemon stopped, which no
    /// one watches any more.
    pub async fn running_background_tasks(&self) -> Result<Vec<BackgroundTask>, StoreError> {
        let rows: Vec<(String, String, String, String)> = self
            .query_as(
                "SELECT child_agent_id, parent_agent_id, tool_call_id, description \
             FROM background_tasks WHERE status = 'running' ORDER BY started_at",
            )
            .fetch_all(&self.read)
            .await?;
        Ok(rows
            .into_iter()
            .map(
                |(child_agent_id, parent_agent_id, tool_call_id, description)| BackgroundTask {
                    child_agent_id,
                    parent_agent_id,
                    tool_call_id,
                    description,
                    status: None,
                    result: None,
                },
            )
            .collect())
    }
}
