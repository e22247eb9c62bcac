//! The policy asked about an access that is no call of a tool of agentd's: what an
//! external ACP agent's `fs/*` requests touch (agents of mode `acp`).

use agent_proto::Agent;

use super::ToolCenter;
use crate::store::Grant;
use crate::tools::Access;
use crate::tools::permission::{Decision, Policy};

impl ToolCenter {
    /// What the agent's rules (config, profile, its own settings) and its grants say
    /// about `access`, decided as for the builtin tool `tool` (`read_file`,
    /// `write_file`).
    pub fn decide_access(
        &self,
        agent: &Agent,
        tool: &str,
        access: &Access,
        grants: &[Grant],
    ) -> Decision {
        // One reading of the rules for the whole decision (a reload may swap them).
        let live = self.live();
        let policy = Policy {
            rules: live.rules_for(agent),
            blocked_commands: &live.blocked_commands,
            grants,
        };
        policy.decide(tool, access)
    }
}
