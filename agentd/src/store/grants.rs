//! Remembered answers to permission prompts.

use agent_proto::PermissionLevel;

use super::{Store, StoreError, corrupt, now_ms};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GrantScope {
    /// One agent.
    Session,
    /// Every agent.
    Always,
}

impl GrantScope {
    fn as_str(self) -> &'static str {
        match self {
            GrantScope::Session => "session",
            GrantScope::Always => "always",
        }
    }
}

/// A remembered "yes": calls of `level` covered by `key` (a command signature, a directory,
/// a host) are allowed without asking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    pub scope: GrantScope,
    pub level: PermissionLevel,
    pub key: String,
}

impl Store {
    /// Stores a grant (`agent_id` for session grants); storing one twice is a no-op.
    pub async fn add_grant(&self, agent_id: &str, grant: &Grant) -> Result<(), StoreError> {
        let agent = match grant.scope {
            GrantScope::Session => Some(agent_id),
            GrantScope::Always => None,
        };
        let written = self
            .query(
                "INSERT INTO permission_grants (scope, agent_id, level, grant_key, created_at) \
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
            )
            .bind(grant.scope.as_str())
            .bind(agent)
            .bind(grant.level.as_str())
            .bind(&grant.key)
            .bind(now_ms())
            .execute(&mut *self.write.acquire().await?)
            .await;
        match grant.scope {
            GrantScope::Session => self.kept.grants.forget(agent_id),
            GrantScope::Always => self.kept.grants.clear(),
        }
        written?;
        Ok(())
    }

    /// The grants that apply to an agent: its own and the global ones. From memory when
    /// read lately (`kept.rs`).
    pub async fn grants_for(&self, agent_id: &str) -> Result<Vec<Grant>, StoreError> {
        if let Some(grants) = self.kept.grants.get(agent_id) {
            return Ok(grants);
        }
        let version = self.kept.grants.version();
        let rows: Vec<(String, String, String)> = self
            .query_as(
                "SELECT scope, level, grant_key FROM permission_grants \
             WHERE scope = 'always' OR (scope = 'session' AND agent_id = $1) ORDER BY id",
            )
            .bind(agent_id)
            .fetch_all(&self.read)
            .await?;
        rows.into_iter()
            .map(|(scope, level, key)| {
                Ok(Grant {
                    scope: match scope.as_str() {
                        "always" => GrantScope::Always,
                        _ => GrantScope::Session,
                    },
                    level: PermissionLevel::parse(&level)
                        .ok_or_else(|| corrupt("permission_grants", format!("level {level:?}")))?,
                    key,
                })
            })
            .collect::<Result<Vec<_>, StoreError>>()
            .inspect(|grants| self.kept.grants.keep(agent_id, version, grants.clone()))
    }
}
