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
//! - every part of a compound command must be covered by a grant of its signature, and
//!   only a plain command (see `command`) can be covered, by a grant or an `allow` level;
//! - a risky or not plain command is always asked, and never rememberable.

use agent_proto::{PermissionLevel, PermissionRule, PermissionRules};

use super::Access;
use super::command::display::display_form;
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

impl Policy<'_> {
    fn rule(&self, level: PermissionLevel) -> PermissionRule {
        self.rules.get(level).unwrap_or_else(|| default_rule(level))
    }

    fn granted(&self, level: PermissionLevel, covers: impl Fn(&str) -> bool) -> bool {
        self.grants
            .iter()
            .any(|g| g.level == level && covers(&g.key))
    }

    /// The decision for one call. A prompt's description and reason are in display form
    /// (control and invisible characters escaped), so a client shows what will run.
    pub fn decide(&self, tool: &str, access: &Access) -> Decision {
        match self.decide_raw(tool, access) {
            Decision::Ask(mut ask) => {
                ask.description = display_form(&ask.description);
                ask.risk = ask.risk.as_deref().map(display_form);
                Decision::Ask(ask)
            }
            other => other,
        }
    }

    fn decide_raw(&self, tool: &str, access: &Access) -> Decision {
        match access {
            Access::Paths { level, paths } => self.decide_paths(tool, *level, paths),
            Access::Command(analysis) => self.decide_command(analysis),
            Access::Host(host) => self.decide_host(tool, host),
            Access::Mcp {
                server,
                tool: name,
                level,
                auto_approved,
            } => self.decide_mcp(tool, server, name, *level, *auto_approved),
            // Nothing outside the daemon is touched and nothing runs with the user's
            // rights: a read-level call that never asks (a `deny` still denies).
            Access::Agent => match self.rule(PermissionLevel::Read) {
                PermissionRule::Deny => {
                    Decision::Deny("the permission policy denies read access for this agent".into())
                }
                PermissionRule::Allow | PermissionRule::Ask => Decision::Allow,
            },
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

    /// A shell command: blocked patterns deny (a word only known at run time counts as
    /// matching); a grant or an `allow` level covers only a plain line whose parts are not
    /// risky; everything else asks, and only a plain, riskless line is rememberable.
    fn decide_command(&self, analysis: &CommandAnalysis) -> Decision {
        let command = &analysis.command;
        if let Some(pattern) = command::blocked_by(analysis, self.blocked_commands) {
            let how = if analysis.plain() {
                ""
            } else {
                " (the command is not fully understood, so a part of it may be that)"
            };
            return Decision::Deny(format!(
                "the command is blocked by the configured pattern {pattern:?}{how}"
            ));
        }
        let rule = self.rule(PermissionLevel::Execute);
        if rule == PermissionRule::Deny {
            return Decision::Deny(
                "the permission policy denies running commands for this agent".into(),
            );
        }
        let signatures = analysis.signatures();
        let rememberable = analysis.plain() && analysis.risk.is_none() && !signatures.is_empty();
        if rememberable {
            if rule == PermissionRule::Allow {
                return Decision::Allow;
            }
            let covered = signatures
                .iter()
                .all(|sig| self.granted(PermissionLevel::Execute, |key| key == sig));
            if covered {
                return Decision::Allow;
            }
        }
        let reason = match (&analysis.risk, analysis.plain()) {
            (Some(risk), _) => Some(risk.clone()),
            (None, false) => Some(format!(
                "asked every time: the command {}",
                unclear_summary(&analysis.unclear)
            )),
            (None, true) => None,
        };
        let description = match (&analysis.risk, &reason) {
            (Some(risk), _) => format!("run a risky command ({risk}): {command}"),
            (None, Some(reason)) => format!("run ({reason}): {command}"),
            (None, None) => format!("run: {command}"),
        };
        Decision::Ask(Ask {
            level: PermissionLevel::Execute,
            description,
            command: Some(command.clone()),
            grant_keys: if rememberable {
                signatures.clone()
            } else {
                Vec::new()
            },
            signatures,
            paths: Vec::new(),
            risk: reason,
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

/// The reasons a command is not plain, for a prompt: the first three, and how many more.
fn unclear_summary(reasons: &[String]) -> String {
    let mut text = reasons
        .iter()
        .take(3)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join("; ");
    if reasons.len() > 3 {
        text.push_str(&format!("; and {} more", reasons.len() - 3));
    }
    text
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
