//! Agent rows.

use agent_proto::{AcpBackend, Agent, AgentMode, AgentSettings, SessionStatus};

/// What a session is loaded from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionRow {
    pub last_seq: u64,
    pub status: SessionStatus,
}

fn parse_status(s: &str) -> SessionStatus {
    match s {
        "generating" => SessionStatus::Generating,
        "waiting_permission" => SessionStatus::WaitingPermission,
        "waiting_question" => SessionStatus::WaitingQuestion,
        "paused" => SessionStatus::Paused,
        "error" => SessionStatus::Error,
        _ => SessionStatus::Idle,
    }
}
use super::db::{OnConn, Row};

use super::{Store, StoreError, corrupt};

pub(super) const AGENT_COLUMNS: &str = "id, title, mode, provider, model, system_prompt, workspace, profile, \
     settings, pinned, archived, created_at, updated_at, context_edge, session_status, parent_agent_id, fork_message_id, \
     subagent_type, parent_tool_call_id, acp";

/// A new agent, fully resolved (defaults applied by the caller).
#[derive(Debug, Clone)]
pub struct NewAgent {
    pub id: String,
    pub title: String,
    pub mode: AgentMode,
    pub provider: String,
    pub model: String,
    pub system_prompt: Option<String>,
    pub workspace: Option<String>,
    pub profile: Option<String>,
    pub settings: AgentSettings,
    /// The external agent of an agent of mode `acp`.
    pub acp: Option<AcpBackend>,
    pub created_at: i64,
}

/// Which agents `list_agents` returns.
#[derive(Debug, Clone, Default)]
pub struct AgentFilter {
    /// Id of the last agent of the previous page.
    pub cursor: Option<String>,
    pub limit: u32,
    /// Case-insensitive substring of the title.
    pub search: Option<String>,
    pub pinned: Option<bool>,
    pub archived: bool,
}

/// Fields to change; `None` leaves a field as it is.
#[derive(Debug, Clone, Default)]
pub struct AgentPatch {
    pub title: Option<String>,
    pub pinned: Option<bool>,
    pub archived: Option<bool>,
    pub provider: Option<String>,
    pub model: Option<String>,
    /// `Some(None)` clears the system prompt.
    pub system_prompt: Option<Option<String>>,
    /// `Some(None)` removes the profile.
    pub profile: Option<Option<String>>,
    /// The complete new settings (already merged by the caller).
    pub settings: Option<AgentSettings>,
    /// Set `title` only if the title is still this one (a title the daemon chose never
    /// overwrites one a client set meanwhile).
    pub title_was: Option<String>,
    pub mode: Option<AgentMode>,
    /// Set only where the agent has none.
    pub workspace: Option<String>,
}

pub(super) fn agent_from_row(row: &Row) -> Result<Agent, StoreError> {
    let mode: String = row.try_get("mode")?;
    let settings: String = row.try_get("settings")?;
    Ok(Agent {
        id: row.try_get("id")?,
        title: row.try_get("title")?,
        mode: AgentMode::parse(&mode).ok_or_else(|| corrupt("agents", format!("mode {mode:?}")))?,
        provider: row.try_get("provider")?,
        model: row.try_get("model")?,
        system_prompt: row.try_get("system_prompt")?,
        workspace: row.try_get("workspace")?,
        profile: row.try_get("profile")?,
        settings: serde_json::from_str(&settings).map_err(|e| corrupt("agents", e))?,
        pinned: row.try_get("pinned")?,
        archived: row.try_get("archived")?,
        // As last saved; the session layer replaces it with the live one when loaded.
        status: parse_status(&row.try_get::<String, _>("session_status")?),
        context_edge: row.try_get("context_edge")?,
        parent_agent_id: row.try_get("parent_agent_id")?,
        fork_message_id: row.try_get("fork_message_id")?,
        subagent_type: row.try_get("subagent_type")?,
        parent_tool_call_id: row.try_get("parent_tool_call_id")?,
        // Clients see it with its env values masked; the daemon reads the real one with
        // `Store::acp_backend`.
        acp: parse_acp(row.try_get("acp")?)?.map(|a| a.masked()),
        // Decided by the tool center when the agent is shown (`SessionManager::with_status`).
        sandbox: None,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
    })
}

fn parse_acp(json: Option<String>) -> Result<Option<AcpBackend>, StoreError> {
    json.map(|j| serde_json::from_str(&j).map_err(|e| corrupt("agents", format!("acp: {e}"))))
        .transpose()
}

pub(super) fn settings_json(settings: &AgentSettings) -> Result<String, StoreError> {
    serde_json::to_string(settings).map_err(|e| corrupt("agents", e))
}

/// Where a copied agent comes from (fork, import); all empty for a new agent.
#[derive(Debug, Clone, Default)]
pub(super) struct Lineage<'a> {
    pub parent_agent_id: Option<&'a str>,
    pub fork_message_id: Option<&'a str>,
    pub context_edge: Option<&'a str>,
    /// A subagent's link to the `task` call that started it.
    pub subagent: Option<SubagentLink<'a>>,
}

/// What makes an agent a subagent (see [`Store::insert_subagent`]).
#[derive(Debug, Clone, Copy)]
pub struct SubagentLink<'a> {
    pub parent_agent_id: &'a str,
    pub parent_tool_call_id: &'a str,
    pub subagent_type: &'a str,
    /// The parent's depth plus one.
    pub depth: u32,
}

/// Writes an agent's row: the one statement behind `insert_agent` and `insert_agent_copy`.
pub(super) async fn insert_agent_row(
    conn: &mut impl OnConn,
    new: &NewAgent,
    lineage: &Lineage<'_>,
    host_label: Option<&str>,
) -> Result<(), StoreError> {
    conn.query(
        "INSERT INTO agents (id, title, mode, provider, model, system_prompt, workspace, \
         profile, settings, parent_agent_id, fork_message_id, context_edge, created_at, \
         updated_at, subagent_type, parent_tool_call_id, depth, acp, host_label) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, \
         $18, $19)",
    )
    .bind(&new.id)
    .bind(&new.title)
    .bind(new.mode.as_str())
    .bind(&new.provider)
    .bind(&new.model)
    .bind(&new.system_prompt)
    .bind(&new.workspace)
    .bind(&new.profile)
    .bind(settings_json(&new.settings)?)
    .bind(
        lineage
            .parent_agent_id
            .or(lineage.subagent.map(|s| s.parent_agent_id)),
    )
    .bind(lineage.fork_message_id)
    .bind(lineage.context_edge)
    .bind(new.created_at)
    .bind(new.created_at)
    .bind(lineage.subagent.map(|s| s.subagent_type))
    .bind(lineage.subagent.map(|s| s.parent_tool_call_id))
    .bind(lineage.subagent.map_or(0, |s| i64::from(s.depth)))
    .bind(
        new.acp
            .as_ref()
            .map(|a| serde_json::to_string(a).map_err(|e| corrupt("agents", e)))
            .transpose()?,
    )
    // The machine its folder is on; an agent with no folder runs anywhere.
    .bind(new.workspace.as_ref().and(host_label))
    .execute(conn)
    .await?;
    Ok(())
}

impl Store {
    pub async fn insert_agent(&self, new: &NewAgent) -> Result<Agent, StoreError> {
        let mut conn = self.write.acquire().await?;
        insert_agent_row(&mut conn, new, &Lineage::default(), self.host_label()).await?;
        self.kept.forget_agent(&new.id);
        drop(conn);
        self.get_agent(&new.id)
            .await?
            .ok_or_else(|| corrupt("agents", "inserted agent vanished"))
    }

    /// Inserts a subagent: an agent started by its parent's `task` call.
    pub async fn insert_subagent(
        &self,
        new: &NewAgent,
        link: SubagentLink<'_>,
    ) -> Result<Agent, StoreError> {
        let mut conn = self.write.acquire().await?;
        let lineage = Lineage {
            subagent: Some(link),
            ..Lineage::default()
        };
        insert_agent_row(&mut conn, new, &lineage, self.host_label()).await?;
        self.kept.forget_agent(&new.id);
        drop(conn);
        self.get_agent(&new.id)
            .await?
            .ok_or_else(|| corrupt("agents", "inserted agent vanished"))
    }

    /// How many parents are above an agent (0 for one a client created).
    pub async fn agent_depth(&self, id: &str) -> Result<u32, StoreError> {
        let depth: Option<(i64,)> = self
            .query_as("SELECT depth FROM agents WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.read)
            .await?;
        Ok(depth.map_or(0, |(d,)| u32::try_from(d).unwrap_or(u32::MAX)))
    }

    /// Ids of the subagents of an agent that may still be running or waiting (their saved
    /// status is not idle), oldest first.
    pub async fn active_subagents(&self, parent_id: &str) -> Result<Vec<String>, StoreError> {
        let rows: Vec<(String,)> = self
            .query_as(
                "SELECT id FROM agents WHERE parent_agent_id = $1 AND subagent_type IS NOT NULL \
             AND session_status <> 'idle' ORDER BY id",
            )
            .bind(parent_id)
            .fetch_all(&self.read)
            .await?;
        Ok(rows.into_iter().map(|(id,)| id).collect())
    }

    /// Ids of all the subagents an agent started (not its forks), oldest first.
    pub async fn subagents(&self, parent_id: &str) -> Result<Vec<String>, StoreError> {
        let rows: Vec<(String,)> = self
            .query_as(
                "SELECT id FROM agents WHERE parent_agent_id = $1 AND subagent_type IS NOT NULL \
             ORDER BY id",
            )
            .bind(parent_id)
            .fetch_all(&self.read)
            .await?;
        Ok(rows.into_iter().map(|(id,)| id).collect())
    }

    /// The external agent of an agent of mode `acp`, its env unmasked (for starting it).
    pub async fn acp_backend(&self, id: &str) -> Result<Option<AcpBackend>, StoreError> {
        let row: Option<(Option<String>,)> = self
            .query_as("SELECT acp FROM agents WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.read)
            .await?;
        parse_acp(row.and_then(|(json,)| json))
    }

    /// The agent's row, from memory when it was read lately (`kept.rs`).
    pub async fn get_agent(&self, id: &str) -> Result<Option<Agent>, StoreError> {
        if let Some(agent) = self.kept.agents.get(id) {
            return Ok(Some(agent));
        }
        let version = self.kept.agents.version();
        let sql = sqlx::AssertSqlSafe(format!("SELECT {AGENT_COLUMNS} FROM agents WHERE id = $1"));
        let row = self.query(sql).bind(id).fetch_optional(&self.read).await?;
        let agent = row.as_ref().map(agent_from_row).transpose()?;
        if let Some(agent) = &agent {
            self.kept.agents.keep(id, version, agent.clone());
        }
        Ok(agent)
    }

    /// One page of agents, newest first, and the cursor of the next page if there is one.
    pub async fn list_agents(
        &self,
        filter: &AgentFilter,
    ) -> Result<(Vec<Agent>, Option<String>), StoreError> {
        let limit = filter.limit.max(1);
        let contains = self.backend().pick("instr", "strpos");
        let sql = sqlx::AssertSqlSafe(format!(
            "SELECT {AGENT_COLUMNS} FROM agents \
             WHERE ($1 IS NULL OR id < $1) \
               AND ($2 IS NULL OR {contains}(lower(title), lower($2)) > 0) \
               AND ($3 IS NULL OR pinned = $3) \
               AND archived = $4 \
             ORDER BY id DESC LIMIT $5"
        ));
        let rows = self
            .query(sql)
            .bind(&filter.cursor)
            .bind(&filter.search)
            .bind(filter.pinned)
            .bind(filter.archived)
            .bind(i64::from(limit) + 1)
            .fetch_all(&self.read)
            .await?;
        let mut agents = rows
            .iter()
            .map(agent_from_row)
            .collect::<Result<Vec<_>, _>>()?;
        let next = if agents.len() > limit as usize {
            agents.truncate(limit as usize);
            agents.last().map(|a| a.id.clone())
        } else {
            None
        };
        Ok((agents, next))
    }

    /// Applies `patch`; `None` when the agent does not exist.
    pub async fn update_agent(
        &self,
        id: &str,
        patch: &AgentPatch,
        now: i64,
    ) -> Result<Option<Agent>, StoreError> {
        let mut conn = self.write.acquire().await?;
        let updated = update_agent_on(&mut conn, id, patch, now).await;
        self.kept.agents.forget(id);
        if updated? {
            drop(conn);
            self.get_agent(id).await
        } else {
            Ok(None)
        }
    }

    /// Updates an agent whose new settings depend on its current ones: `merge` gets the
    /// settings as they are under the single write connection, so two updates of
    /// different fields racing each other both land.
    pub async fn update_agent_merging<E: From<StoreError>>(
        &self,
        id: &str,
        patch: &AgentPatch,
        merge: impl FnOnce(&AgentSettings) -> Result<AgentSettings, E>,
        now: i64,
    ) -> Result<Option<Agent>, E> {
        let mut conn = self.write.acquire().await.map_err(StoreError::from)?;
        let mut tx = conn.conn().begin().await.map_err(StoreError::from)?;
        let current: Option<(String,)> = self
            .query_as("SELECT settings FROM agents WHERE id = $1")
            .bind(id)
            .fetch_optional(&mut tx)
            .await
            .map_err(StoreError::from)?;
        let Some((current,)) = current else {
            return Ok(None);
        };
        let current: AgentSettings = serde_json::from_str(&current)
            .map_err(|e| corrupt("agents", format!("settings: {e}")))?;
        let patch = AgentPatch {
            settings: Some(merge(&current)?),
            ..patch.clone()
        };
        let updated = update_agent_on(&mut tx, id, &patch, now).await?;
        let committed = tx.commit().await;
        self.kept.agents.forget(id);
        committed.map_err(StoreError::from)?;
        drop(conn);
        if !updated {
            return Ok(None);
        }
        Ok(self.get_agent(id).await?)
    }
}

/// The UPDATE of [`Store::update_agent`] on a connection; false if there is no such agent.
async fn update_agent_on(
    conn: &mut impl OnConn,
    id: &str,
    patch: &AgentPatch,
    now: i64,
) -> Result<bool, StoreError> {
    {
        let settings = patch.settings.as_ref().map(settings_json).transpose()?;
        let result = conn.query(
            "UPDATE agents SET \
               title = CASE WHEN $11 IS NULL OR title = $11 THEN COALESCE($2, title) ELSE title END, \
               pinned = COALESCE($3, pinned), \
               archived = COALESCE($4, archived), \
               provider = COALESCE($5, provider), \
               model = COALESCE($6, model), \
               system_prompt = CASE WHEN $7 THEN $8 ELSE system_prompt END, \
               settings = COALESCE($9, settings), \
               updated_at = $10, \
               profile = CASE WHEN $12 THEN $13 ELSE profile END, \
               mode = COALESCE($14, mode), \
               workspace = COALESCE(workspace, $15) \
             WHERE id = $1",
        )
        .bind(id)
        .bind(&patch.title)
        .bind(patch.pinned)
        .bind(patch.archived)
        .bind(&patch.provider)
        .bind(&patch.model)
        .bind(patch.system_prompt.is_some())
        .bind(patch.system_prompt.clone().flatten())
        .bind(settings)
        .bind(now)
        .bind(&patch.title_was)
        .bind(patch.profile.is_some())
        .bind(patch.profile.clone().flatten())
        .bind(patch.mode.map(AgentMode::as_str))
        .bind(&patch.workspace)
        .execute(&mut *conn)
        .await?;
        Ok(result.rows_affected() > 0)
    }
}

impl Store {
    /// Deletes the agent and (by cascade) its messages; false if it did not exist.
    pub async fn delete_agent(&self, id: &str) -> Result<bool, StoreError> {
        let mut conn = self.write.acquire().await?;
        let result = self
            .query("DELETE FROM agents WHERE id = $1")
            .bind(id)
            .execute(&mut *conn)
            .await?;
        self.histories.forget(id);
        self.kept.forget_agent(id);
        drop(conn);
        Ok(result.rows_affected() > 0)
    }

    /// The seq mark and stored session status of an agent, `None` if no such agent.
    pub async fn session_row(&self, id: &str) -> Result<Option<SessionRow>, StoreError> {
        let row: Option<(i64, String)> = self
            .query_as("SELECT last_seq, session_status FROM agents WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.read)
            .await?;
        Ok(row.map(|(seq, status)| SessionRow {
            last_seq: u64::try_from(seq).unwrap_or(0),
            status: parse_status(&status),
        }))
    }

    pub async fn set_session_status(
        &self,
        id: &str,
        status: SessionStatus,
    ) -> Result<(), StoreError> {
        let mut conn = self.write.acquire().await?;
        // The kept row is what the database holds (its rules, checked with the write
        // connection held): when it already has this status there is nothing to write. A
        // `sendMessage` saves `generating` with its messages; its run then sets it again.
        if self.kept.agents.holds(id, |agent| agent.status == status) {
            return Ok(());
        }
        let written = self
            .query("UPDATE agents SET session_status = $2 WHERE id = $1")
            .bind(id)
            .bind(status.as_str())
            .execute(&mut *conn)
            .await;
        match written {
            Ok(_) => self.kept.agents.edit(id, |agent| agent.status = status),
            Err(_) => self.kept.agents.forget(id),
        }
        drop(conn);
        written?;
        Ok(())
    }

    /// Ids of the agents a stopped daemon left `generating`, `waiting_permission` or
    /// `waiting_question` (of agent `only`, or of all): at start-up, their status is
    /// settled from their messages.
    pub async fn agents_left_busy(&self, only: Option<&str>) -> Result<Vec<String>, StoreError> {
        let rows: Vec<(String,)> = self
            .query_as(
                "SELECT id FROM agents \
             WHERE session_status IN ('generating', 'waiting_permission', 'waiting_question') \
             AND ($1 IS NULL OR id = $1) ORDER BY id",
            )
            .bind(only)
            .fetch_all(&self.read)
            .await?;
        Ok(rows.into_iter().map(|(id,)| id).collect())
    }

    /// How many agents there are, and those whose saved session status is not idle with
    /// that status (for the metrics' agents by status).
    pub async fn saved_statuses(&self) -> Result<(u64, Vec<(String, SessionStatus)>), StoreError> {
        let (total,): (i64,) = self
            .query_as("SELECT COUNT(*) FROM agents")
            .fetch_one(&self.read)
            .await?;
        let rows: Vec<(String, String)> = self
            .query_as("SELECT id, session_status FROM agents WHERE session_status <> 'idle'")
            .fetch_all(&self.read)
            .await?;
        let busy = rows
            .into_iter()
            .map(|(id, status)| (id, parse_status(&status)))
            .collect();
        Ok((u64::try_from(total).unwrap_or(0), busy))
    }

    /// Ids of the agents whose saved session status is `waiting_permission` or
    /// `waiting_question`.
    pub async fn agents_waiting_permission(&self) -> Result<Vec<String>, StoreError> {
        let rows: Vec<(String,)> = self
            .query_as(
                "SELECT id FROM agents \
             WHERE session_status IN ('waiting_permission', 'waiting_question')",
            )
            .fetch_all(&self.read)
            .await?;
        Ok(rows.into_iter().map(|(id,)| id).collect())
    }

    /// Raises the agent's seq mark to at least `upto` (a reservation before handing out
    /// seqs up to it). Returns false if the agent does not exist.
    pub async fn reserve_seq(&self, id: &str, upto: u64) -> Result<bool, StoreError> {
        let result = self
            .query(self.backend().pick(
                "UPDATE agents SET last_seq = MAX(last_seq, $2) WHERE id = $1",
                "UPDATE agents SET last_seq = GREATEST(last_seq, $2) WHERE id = $1",
            ))
            .bind(id)
            .bind(i64::try_from(upto).unwrap_or(i64::MAX))
            .execute(&mut *self.write.acquire().await?)
            .await?;
        Ok(result.rows_affected() > 0)
    }

    /// Sets the seq mark to exactly `seq` (at a clean shutdown, so the next start continues
    /// with `seq + 1` instead of after the reserved block).
    pub async fn set_last_seq(&self, id: &str, seq: u64) -> Result<(), StoreError> {
        self.query("UPDATE agents SET last_seq = $2 WHERE id = $1")
            .bind(id)
            .bind(i64::try_from(seq).unwrap_or(i64::MAX))
            .execute(&mut *self.write.acquire().await?)
            .await?;
        Ok(())
    }
}
