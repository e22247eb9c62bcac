//! Copies of agents (fork, import): a new agent with a whole history, stored in one
//! transaction, and a history read back with the links between its messages.

use agent_proto::{Agent, Message, PlanItem};

use super::agents::{AGENT_COLUMNS, Lineage, NewAgent, agent_from_row, insert_agent_row};
use super::context::summaries_on;
use super::db::OnConn;
use super::messages::{MESSAGE_COLUMNS, blocks_json, message_from_row, tokens};
use super::plans::{plan_on, set_plan_on};
use super::{Store, StoreError, Summary, corrupt};

/// A message with the stored link the wire shape does not carry.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredMessage {
    pub message: Message,
    /// The user message an assistant message answers.
    pub parent_id: Option<String>,
}

/// A new agent and everything it starts with. Ids are already new and every link
/// (parent, variant, summary, edge) already names messages of `messages`.
#[derive(Debug, Clone)]
pub struct AgentCopy<'a> {
    pub agent: &'a NewAgent,
    pub parent_agent_id: Option<String>,
    pub fork_message_id: Option<String>,
    pub context_edge: Option<String>,
    /// In order: the first gets `ord` 1.
    pub messages: &'a [StoredMessage],
    pub summaries: &'a [Summary],
    /// The plan (`todo_write`) it starts with; empty: none.
    pub plan: &'a [PlanItem],
}

/// An agent with its whole history and summaries, as of one instant.
#[derive(Debug, Clone)]
pub struct AgentSnapshot {
    pub agent: Agent,
    pub messages: Vec<StoredMessage>,
    pub summaries: Vec<Summary>,
    /// The agent's plan (empty when it has none).
    pub plan: Vec<PlanItem>,
}

impl Store {
    /// The agent, its history (with parent links) and its summaries, read in one
    /// transaction: a delete racing the read leaves either all of it or `None`, never an
    /// agent with part of its history.
    pub async fn agent_snapshot(
        &self,
        agent_id: &str,
    ) -> Result<Option<AgentSnapshot>, StoreError> {
        let mut tx = self.read.begin().await?;
        if self.backend() == super::Backend::Postgres {
            // One snapshot for every read of the copy, as SQLite's read transaction is
            // (PostgreSQL's default gives each statement its own).
            self.query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                .execute(&mut tx)
                .await?;
        }
        let sql = sqlx::AssertSqlSafe(format!("SELECT {AGENT_COLUMNS} FROM agents WHERE id = $1"));
        let Some(row) = self
            .query(sql)
            .bind(agent_id)
            .fetch_optional(&mut tx)
            .await?
        else {
            return Ok(None);
        };
        let agent = agent_from_row(&row)?;
        let sql = sqlx::AssertSqlSafe(format!(
            "SELECT {MESSAGE_COLUMNS}, parent_id FROM messages WHERE agent_id = $1 ORDER BY ord ASC"
        ));
        let rows = self.query(sql).bind(agent_id).fetch_all(&mut tx).await?;
        let messages = rows
            .iter()
            .map(|row| {
                Ok(StoredMessage {
                    message: message_from_row(row)?,
                    parent_id: row.try_get("parent_id")?,
                })
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        let summaries = summaries_on(&mut tx, agent_id).await?;
        let plan = plan_on(&mut tx, agent_id)
            .await?
            .map(|(items, _)| items)
            .unwrap_or_default();
        tx.commit().await?;
        Ok(Some(AgentSnapshot {
            agent,
            messages,
            summaries,
            plan,
        }))
    }

    /// Stores the agent, its messages and its summaries, all or nothing.
    pub async fn insert_agent_copy(&self, copy: &AgentCopy<'_>) -> Result<Agent, StoreError> {
        let new = copy.agent;
        let mut conn = self.write.acquire().await?;
        let mut tx = conn.conn().begin().await?;
        let lineage = Lineage {
            parent_agent_id: copy.parent_agent_id.as_deref(),
            fork_message_id: copy.fork_message_id.as_deref(),
            context_edge: copy.context_edge.as_deref(),
            subagent: None,
        };
        insert_agent_row(&mut tx, new, &lineage, self.host_label()).await?;
        for (ord, stored) in (1_i64..).zip(copy.messages) {
            let m = &stored.message;
            if m.agent_id != new.id {
                return Err(corrupt("messages", "a copied message names another agent"));
            }
            self.query(
                "INSERT INTO messages (id, agent_id, ord, role, blocks, status, parent_id, \
                 input_tokens, output_tokens, created_at, updated_at, variant_of, superseded, \
                 turn, structured_output) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)",
            )
            .bind(&m.id)
            .bind(&m.agent_id)
            .bind(ord)
            .bind(m.role.as_str())
            .bind(blocks_json(&m.blocks)?)
            .bind(m.status.as_str())
            .bind(&stored.parent_id)
            .bind(m.usage.map(|u| tokens(u.input_tokens)))
            .bind(m.usage.map(|u| tokens(u.output_tokens)))
            .bind(m.created_at)
            .bind(m.updated_at)
            .bind(&m.variant_of)
            .bind(m.superseded)
            .bind(super::messages::json_text(m.turn.as_ref())?)
            .bind(super::messages::json_text(m.structured_output.as_ref())?)
            .execute(&mut tx)
            .await?;
        }
        for summary in copy.summaries {
            self.query(
                "INSERT INTO summaries (agent_id, through_message_id, text, summarized_messages, \
                 before_tokens, after_tokens, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
            )
            .bind(&new.id)
            .bind(&summary.through_message_id)
            .bind(&summary.text)
            .bind(tokens(summary.summarized_messages))
            .bind(tokens(summary.before_tokens))
            .bind(tokens(summary.after_tokens))
            .bind(summary.created_at)
            .execute(&mut tx)
            .await?;
        }
        if !copy.plan.is_empty() {
            set_plan_on(&mut tx, &new.id, copy.plan, new.created_at).await?;
        }
        tx.commit().await?;
        self.histories.forget(&new.id);
        self.kept.forget_agent(&new.id);
        drop(conn);
        self.get_agent(&new.id)
            .await?
            .ok_or_else(|| corrupt("agents", "inserted agent vanished"))
    }
}

#[cfg(test)]
mod tests {
    use agent_proto::{Block, MessageStatus, Role, Usage};

    use super::*;
    use crate::store::tests::new_agent;

    fn stored(id: &str, role: Role, parent: Option<&str>) -> StoredMessage {
        StoredMessage {
            message: Message {
                id: id.into(),
                agent_id: "b".into(),
                role,
                blocks: vec![Block::Text { text: id.into() }],
                status: MessageStatus::Done,
                created_at: 3,
                updated_at: 4,
                usage: (role == Role::Assistant).then_some(Usage {
                    input_tokens: 10,
                    output_tokens: 2,
                }),
                variant_of: None,
                superseded: false,
                turn: None,
                structured_output: None,
            },
            parent_id: parent.map(str::to_owned),
        }
    }

    #[tokio::test]
    async fn a_copy_is_stored_whole_and_reads_back_with_its_links() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("agentd.db")).await.unwrap();
        let messages = vec![
            stored("u1", Role::User, None),
            stored("a1", Role::Assistant, Some("u1")),
        ];
        let summaries = vec![Summary {
            agent_id: "b".into(),
            through_message_id: "a1".into(),
            text: "earlier".into(),
            summarized_messages: 2,
            before_tokens: 100,
            after_tokens: 10,
            created_at: 5,
        }];
        let plan = vec![PlanItem {
            content: "copy it".into(),
            status: agent_proto::PlanStatus::Pending,
            active_form: None,
        }];
        let agent = store
            .insert_agent_copy(&AgentCopy {
                agent: &new_agent("b", "copy", 7),
                parent_agent_id: Some("a".into()),
                fork_message_id: Some("x".into()),
                context_edge: Some("u1".into()),
                messages: &messages,
                summaries: &summaries,
                plan: &plan,
            })
            .await
            .unwrap();
        assert_eq!(agent.parent_agent_id.as_deref(), Some("a"));
        assert_eq!(agent.fork_message_id.as_deref(), Some("x"));
        assert_eq!(agent.context_edge.as_deref(), Some("u1"));
        let snapshot = store.agent_snapshot("b").await.unwrap().unwrap();
        assert_eq!(snapshot.agent.id, "b");
        assert_eq!(snapshot.messages, messages);
        assert_eq!(snapshot.summaries, summaries);
        assert_eq!(snapshot.plan, plan);
        assert!(store.agent_snapshot("nobody").await.unwrap().is_none());

        // A failure stores nothing: no half agent.
        let wrong = vec![stored("u2", Role::User, None)];
        let other = new_agent("c", "copy", 7);
        assert!(
            store
                .insert_agent_copy(&AgentCopy {
                    agent: &other,
                    parent_agent_id: None,
                    fork_message_id: None,
                    context_edge: None,
                    messages: &wrong,
                    summaries: &[],
                    plan: &[],
                })
                .await
                .is_err()
        );
        assert!(store.get_agent("c").await.unwrap().is_none());
    }
}
