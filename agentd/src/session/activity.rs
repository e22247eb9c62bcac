//! What keeps the daemon busy besides its connections, for `--exit-when-idle`: runs under
//! way and permission prompts or questions waiting for an answer. Read-only: nothing here changes a
//! session.

use agent_proto::SessionStatus;

use super::SessionManager;
use crate::store::StoreError;

impl SessionManager {
    /// Runs spawned and not finished yet (the run tasks the manager owns).
    pub fn active_runs(&self) -> usize {
        self.runs.len()
    }

    /// Agents whose run ended at a permission prompt or a question nobody has answered: loaded sessions
    /// by their live status, the others by the status saved in the store.
    pub async fn waiting_prompts(&self) -> Result<usize, StoreError> {
        let stored = self.store.agents_waiting_permission().await?;
        let sessions = self.sessions();
        let loaded = sessions
            .loaded
            .values()
            .filter(|s| {
                matches!(
                    s.status(),
                    SessionStatus::WaitingPermission | SessionStatus::WaitingQuestion
                )
            })
            .count();
        let unloaded = stored
            .iter()
            .filter(|id| !sessions.loaded.contains_key(id.as_str()))
            .count();
        Ok(loaded + unloaded)
    }

    /// How many agents are in each status: loaded sessions by their live status, the others
    /// by the status saved in the store (for the metrics; idle ones are those not counted
    /// otherwise).
    pub async fn agents_by_status(&self) -> Result<Vec<(SessionStatus, u64)>, StoreError> {
        let (total, saved) = self.store.saved_statuses().await?;
        let mut counts: Vec<(SessionStatus, u64)> = Vec::new();
        let mut count = |status: SessionStatus| match counts.iter_mut().find(|(s, _)| *s == status)
        {
            Some((_, n)) => *n += 1,
            None => counts.push((status, 1)),
        };
        {
            let sessions = self.sessions();
            for session in sessions.loaded.values() {
                let status = session.status();
                if status != SessionStatus::Idle {
                    count(status);
                }
            }
            for (id, status) in &saved {
                if !sessions.loaded.contains_key(id.as_str()) {
                    count(*status);
                }
            }
        }
        let busy: u64 = counts.iter().map(|(_, n)| n).sum();
        counts.push((SessionStatus::Idle, total.saturating_sub(busy)));
        Ok(counts)
    }
}
