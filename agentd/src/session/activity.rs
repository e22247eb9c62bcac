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
}
