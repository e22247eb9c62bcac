//! Plans (`todo_write`): one per agent, the whole list replaced at each write.

use super::db::OnConn;
use agent_proto::PlanItem;

use super::{Store, StoreError, corrupt};

/// The agent's plan and when it was written, read on `conn` (inside a snapshot's
/// transaction).
pub(super) async fn plan_on(
    conn: &mut impl OnConn,
    agent_id: &str,
) -> Result<Option<(Vec<PlanItem>, i64)>, StoreError> {
    let row: Option<(String, i64)> = conn
        .query_as("SELECT items, updated_at FROM plans WHERE agent_id = $1")
        .bind(agent_id)
        .fetch_optional(&mut *conn)
        .await?;
    row.map(|(items, at)| {
        serde_json::from_str(&items)
            .map(|items| (items, at))
            .map_err(|e| corrupt("plans", e))
    })
    .transpose()
}

/// Replaces the agent's plan, on `conn`.
pub(super) async fn set_plan_on(
    conn: &mut impl OnConn,
    agent_id: &str,
    items: &[PlanItem],
    now: i64,
) -> Result<(), StoreError> {
    let json = serde_json::to_string(items).map_err(|e| corrupt("plans", e))?;
    conn.query(
        "INSERT INTO plans (agent_id, items, updated_at) VALUES ($1, $2, $3) \
         ON CONFLICT (agent_id) DO UPDATE SET items = $2, updated_at = $3",
    )
    .bind(agent_id)
    .bind(json)
    .bind(now)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

impl Store {
    /// The agent's plan and when it was last written; `None` when it never wrote one.
    pub async fn plan(&self, agent_id: &str) -> Result<Option<(Vec<PlanItem>, i64)>, StoreError> {
        let mut conn = self.read.acquire().await?;
        plan_on(&mut conn, agent_id).await
    }

    /// Replaces the agent's plan. False when the agent does not exist.
    pub async fn set_plan(
        &self,
        agent_id: &str,
        items: &[PlanItem],
        now: i64,
    ) -> Result<bool, StoreError> {
        let mut conn = self.write.acquire().await?;
        let (exists,): (bool,) = self
            .query_as("SELECT EXISTS (SELECT 1 FROM agents WHERE id = $1)")
            .bind(agent_id)
            .fetch_one(&mut *conn)
            .await?;
        if !exists {
            return Ok(false);
        }
        set_plan_on(&mut conn, agent_id, items, now).await?;
        Ok(true)
    }
}
