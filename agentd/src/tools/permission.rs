//! The permission policy: may this call run, must a client be asked, or is it refused?
//!
//! Pure: it looks at what a call will touch (`Access`), the rules per level (config, then
//! the agent's overrides), the blocked command patterns and the remembered grants, and
//! returns a [`Decision`]. Rules of thumb it keeps:
//! - the daemon's data dir (database, WAL, lock, other agents' folders and workspaces) is
//!   never accessible by any path; the agent's own folder in it (its offloads) is readable;
//! - a path outside the workspace is asked for, with the path, even when the level is
//!   allowed (unless a grant covers its directory);
//! - a command matching `blocked_commands` is denied without asking;
//! - every part of a compound command must be covered by a grant of its signature;
//! - a risky command is always asked, and a remembered grant never covers it.

use agent_proto::{PermissionLevel, PermissionRule, PermissionRules};

use super::Access;
use super::command::{self, CommandAnalysis};
use super::sandbox::{ResolvedPath, Zone};
use crate::store::Grant;

/// The rules that apply to one agent.
#[derive(Debug, Clone)]
pub struct Policy<'a> {
    pub rules: PermissionRules,
    pub blocked_commands: &'a [String],
    pub grants: &'a [Grant],
}

/// The default rule of a level.
pub fn default_rule(level: PermissionLevel) -> PermissionRule {
    match level {
        PermissionLevel::Read => PermissionRule::Allow,
        PermissionLevel::Write | PermissionLevel::Execute | PermissionLevel::Network => {
            PermissionRule::Ask
        }
    }
}

/// Layers rules: `over` wins where it says something, then `base`.
pub fn layered(base: PermissionRules, over: Option<PermissionRules>) -> PermissionRules {
    let over = over.unwrap_or_default();
    PermissionRules {
        read: over.read.or(base.read),
        write: over.write.or(base.write),
        execute: over.execute.or(base.execute),
        network: over.network.or(base.network),
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Allow,
    /// Refused; the reason goes to the model as the call's result.
    Deny(String),
    Ask(Ask),
}

/// What a permission prompt shows and what an answer would remember.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ask {
    pub level: PermissionLevel,
    pub description: String,
    pub command: Option<String>,
    /// Command signatures (execute only).
    pub signatures: Vec<String>,
    pub paths: Vec<String>,
    pub risk: Option<String>,
    /// Keys a `session`/`always` answer stores (empty when not rememberable).
    pub grant_keys: Vec<String>,
}

impl Ask {
    pub fn rememberable(&self) -> bool {
        !self.grant_keys.is_empty()
    }
}

impl Policy<'_> {
    fn rule(&self, level: PermissionLevel) -> PermissionRule {
        self.rules.get(level).unwrap_or_else(|| default_rule(level))
    }

    fn granted(&self, level: PermissionLevel, covers: impl Fn(&str) -> bool) -> bool {
        self.grants
            .iter()
            .any(|g| g.level == level && covers(&g.key))
    }

    pub fn decide(&self, tool: &str, access: &Access) -> Decision {
        match access {
            Access::Paths { level, paths } => self.decide_paths(tool, *level, paths),
            Access::Command(command) => self.decide_command(command),
            Access::Host(host) => self.decide_host(tool, host),
            Access::Mcp {
                server,
                tool: name,
                level,
                auto_approved,
            } => self.decide_mcp(tool, server, name, *level, *auto_approved),
        }
    }

    /// An MCP tool: the rule of its level; `autoApprove` and remembered grants (keyed by
    /// server and tool) skip the prompt, never a `deny`.
    fn decide_mcp(
        &self,
        exposed: &str,
        server: &str,
        tool: &str,
        level: PermissionLevel,
        auto_approved: bool,
    ) -> Decision {
        let key = mcp_grant_key(server, tool);
        match self.rule(level) {
            PermissionRule::Deny => Decision::Deny(format!(
                "the permission policy denies {} access for this agent",
                level.as_str()
            )),
            PermissionRule::Allow => Decision::Allow,
            PermissionRule::Ask if auto_approved || self.granted(level, |k| k == key) => {
                Decision::Allow
            }
            PermissionRule::Ask => Decision::Ask(Ask {
                level,
                description: format!(
                    "{exposed} (tool {tool:?} of the MCP server {server:?}, {} level)",
                    level.as_str()
                ),
                command: None,
                signatures: Vec::new(),
                paths: Vec::new(),
                risk: None,
                grant_keys: vec![key],
            }),
        }
    }

    fn decide_paths(&self, tool: &str, level: PermissionLevel, paths: &[ResolvedPath]) -> Decision {
        for p in paths {
            let why = match p.zone {
                Zone::ForeignOffloads => "belongs to another agent's offloaded tool output",
                Zone::DataDir => "is in agentd's data folder (its database and agents' files)",
                Zone::OwnOffloads if level != PermissionLevel::Read => {
                    "is in this agent's offload folder, which tools may read but never change"
                }
                Zone::OwnOffloads | Zone::Workspace | Zone::Outside => continue,
            };
            return Decision::Deny(format!(
                "{} {why}, which this agent cannot access",
                p.path.display()
            ));
        }
        let rule = self.rule(level);
        if rule == PermissionRule::Deny {
            return Decision::Deny(format!(
                "the permission policy denies {} access for this agent",
                level.as_str()
            ));
        }
        // Reading its own offloads is always fine (writing them was denied above).
        let outside: Vec<&ResolvedPath> = paths
            .iter()
            .filter(|p| match p.zone {
                Zone::Workspace | Zone::OwnOffloads => false,
                Zone::ForeignOffloads | Zone::DataDir | Zone::Outside => true,
            })
            .collect();
        let to_check: Vec<&ResolvedPath> = if !outside.is_empty() {
            outside
        } else if rule == PermissionRule::Allow {
            return Decision::Allow;
        } else {
            paths.iter().collect()
        };
        let covered = to_check
            .iter()
            .all(|p| self.granted(level, |key| p.path.starts_with(key)));
        if covered {
            return Decision::Allow;
        }
        let shown: Vec<String> = to_check
            .iter()
            .map(|p| p.path.display().to_string())
            .collect();
        let mut keys: Vec<String> = to_check.iter().map(|p| grant_dir(&p.path)).collect();
        keys.dedup();
        let where_ = if to_check.iter().any(|p| p.zone != Zone::Workspace) {
            " outside the workspace"
        } else {
            ""
        };
        let verb = if level == PermissionLevel::Write {
            "write"
        } else {
            "read"
        };
        Decision::Ask(Ask {
            level,
            description: format!("{tool} wants to {verb}{where_}: {}", shown.join(", ")),
            command: None,
            signatures: Vec::new(),
            paths: shown,
            risk: None,
            grant_keys: keys,
        })
    }

    fn decide_command(&self, command: &str) -> Decision {
        let analysis: CommandAnalysis = command::analyze(command);
        if let Some(pattern) = command::blocked_by(&analysis, self.blocked_commands) {
            return Decision::Deny(format!(
                "the command is blocked by the configured pattern {pattern:?}"
            ));
        }
        let rule = self.rule(PermissionLevel::Execute);
        if rule == PermissionRule::Deny {
            return Decision::Deny(
                "the permission policy denies running commands for this agent".into(),
            );
        }
        let mut signatures: Vec<String> = Vec::new();
        for part in &analysis.parts {
            if !signatures.contains(&part.signature) {
                signatures.push(part.signature.clone());
            }
        }
        let risk = analysis.risk.clone();
        if risk.is_none() {
            if rule == PermissionRule::Allow {
                return Decision::Allow;
            }
            let covered = !signatures.is_empty()
                && signatures
                    .iter()
                    .all(|sig| self.granted(PermissionLevel::Execute, |key| key == sig));
            if covered {
                return Decision::Allow;
            }
        }
        let description = match &risk {
            Some(reason) => format!("run a risky command ({reason}): {command}"),
            None => format!("run: {command}"),
        };
        Decision::Ask(Ask {
            level: PermissionLevel::Execute,
            description,
            command: Some(command.to_owned()),
            grant_keys: if risk.is_some() {
                Vec::new()
            } else {
                signatures.clone()
            },
            signatures,
            paths: Vec::new(),
            risk,
        })
    }

    fn decide_host(&self, tool: &str, host: &str) -> Decision {
        match self.rule(PermissionLevel::Network) {
            PermissionRule::Deny => {
                Decision::Deny("the permission policy denies network access for this agent".into())
            }
            PermissionRule::Allow => Decision::Allow,
            PermissionRule::Ask if self.granted(PermissionLevel::Network, |key| key == host) => {
                Decision::Allow
            }
            PermissionRule::Ask => Decision::Ask(Ask {
                level: PermissionLevel::Network,
                description: format!("{tool} wants to connect to {host}"),
                command: None,
                signatures: Vec::new(),
                paths: Vec::new(),
                risk: None,
                grant_keys: vec![host.to_owned()],
            }),
        }
    }
}

/// The grant key of an MCP tool.
pub fn mcp_grant_key(server: &str, tool: &str) -> String {
    format!("mcp:{server}/{tool}")
}

/// The directory a path grant is keyed by: the path itself for a directory, else its
/// parent. A symlink is never a directory here (the key is the path shown, not where a
/// link now points).
fn grant_dir(path: &std::path::Path) -> String {
    let dir = if std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()) {
        path
    } else {
        path.parent().unwrap_or(path)
    };
    dir.display().to_string()
}

#[cfg(test)]
mod tests;
