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
//! - a risky or not plain command is always asked, and never rememberable;
//! - the OS sandbox is the wall under all this (`wall.rs`): a command that asks to run
//!   outside it, or that would run unconfined because this machine cannot confine it,
//!   is always asked, even under `allow`, and never rememberable; a confined command
//!   gets the network only under an `allow` network rule, a remembered grant of its
//!   signatures, or an answer to a prompt that said so.

use agent_proto::{PermissionLevel, PermissionRule, PermissionRules};

use super::command;
use super::command::display::display_form;
use super::sandbox::{ResolvedPath, Zone};
use super::wall::WallState;
use super::{Access, CommandAccess};
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
    /// Grants (level and key) a `session`/`always` answer stores (empty when not
    /// rememberable).
    pub grant_keys: Vec<(PermissionLevel, String)>,
    /// A granted command gets the network in its sandbox.
    pub network_access: bool,
    /// A granted command runs outside the OS sandbox.
    pub outside_sandbox: bool,
}

impl Ask {
    /// A prompt about one level with nothing to do with commands.
    fn simple(
        level: PermissionLevel,
        description: String,
        paths: Vec<String>,
        keys: Vec<String>,
    ) -> Ask {
        Ask {
            level,
            description,
            command: None,
            signatures: Vec::new(),
            paths,
            risk: None,
            grant_keys: keys.into_iter().map(|k| (level, k)).collect(),
            network_access: false,
            outside_sandbox: false,
        }
    }
}

/// The key of a remembered network grant for a command signature (`command:git fetch`),
/// kept apart from the host keys of `web_fetch`.
pub fn command_network_key(signature: &str) -> String {
    format!("command:{signature}")
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
            Access::Command(access) => self.decide_command(access),
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
            PermissionRule::Ask => Decision::Ask(Ask::simple(
                level,
                format!(
                    "{exposed} (tool {tool:?} of the MCP server {server:?}, {} level)",
                    level.as_str()
                ),
                Vec::new(),
                vec![key],
            )),
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
        Decision::Ask(Ask::simple(
            level,
            format!("{tool} wants to {verb}{where_}: {}", shown.join(", ")),
            shown,
            keys,
        ))
    }

    /// A shell command: blocked patterns deny (a word only known at run time counts as
    /// matching); a grant or an `allow` level covers only a plain line whose parts are not
    /// risky, and only when it runs confined; everything else asks, and only a plain,
    /// riskless, confined line is rememberable. A confined command that wants the network
    /// asks for it unless the network rule allows it or grants cover its signatures.
    fn decide_command(&self, access: &CommandAccess) -> Decision {
        if let Some(denied) = self.refuse_command(access) {
            return Decision::Deny(denied);
        }
        let analysis = &access.analysis;
        let rule = self.rule(PermissionLevel::Execute);
        let network_rule = self.rule(PermissionLevel::Network);
        let unconfined = unconfined_reason(access);
        let signatures = analysis.signatures();
        let rememberable = analysis.plain()
            && analysis.risk.is_none()
            && !signatures.is_empty()
            && unconfined.is_none();
        // The network: only a confined command is given it or not.
        let confined = matches!(access.wall, WallState::Enforced(_)) && unconfined.is_none();
        let network_keys: Vec<String> = signatures.iter().map(|s| command_network_key(s)).collect();
        let network_asked = confined
            && access.wants_network()
            && network_rule == PermissionRule::Ask
            && !(rememberable && self.network_granted(&network_keys));
        let covered = rememberable
            && (rule == PermissionRule::Allow
                || signatures
                    .iter()
                    .all(|sig| self.granted(PermissionLevel::Execute, |key| key == sig)));
        let network_grants = network_keys
            .into_iter()
            .map(|k| (PermissionLevel::Network, k));
        match (covered, network_asked) {
            (true, false) => Decision::Allow,
            // Only the network is asked.
            (true, true) => Decision::Ask(Ask {
                level: PermissionLevel::Network,
                description: format!("run with network access: {}", analysis.command),
                command: Some(analysis.command.clone()),
                signatures,
                paths: Vec::new(),
                risk: None,
                grant_keys: network_grants.collect(),
                network_access: true,
                outside_sandbox: false,
            }),
            (false, _) => {
                let mut grant_keys: Vec<(PermissionLevel, String)> = Vec::new();
                if rememberable {
                    grant_keys.extend(
                        signatures
                            .iter()
                            .map(|s| (PermissionLevel::Execute, s.clone())),
                    );
                    if network_asked {
                        grant_keys.extend(network_grants);
                    }
                }
                Decision::Ask(command_ask(
                    analysis,
                    unconfined,
                    network_asked,
                    signatures,
                    grant_keys,
                ))
            }
        }
    }

    /// Why a command is refused outright, if it is: a blocked pattern matches (or may match
    /// a part not fully understood), the policy denies running commands, or the command
    /// asks for the network the policy denies.
    fn refuse_command(&self, access: &CommandAccess) -> Option<String> {
        let analysis = &access.analysis;
        if let Some(pattern) = command::blocked_by(analysis, self.blocked_commands) {
            let how = if analysis.plain() {
                ""
            } else {
                " (the command is not fully understood, so a part of it may be that)"
            };
            return Some(format!(
                "the command is blocked by the configured pattern {pattern:?}{how}"
            ));
        }
        if self.rule(PermissionLevel::Execute) == PermissionRule::Deny {
            return Some("the permission policy denies running commands for this agent".into());
        }
        if access.network_requested && self.rule(PermissionLevel::Network) == PermissionRule::Deny {
            return Some(
                "the permission policy denies network access for this agent; run the command \
                 without `network`"
                    .into(),
            );
        }
        None
    }

    /// Whether remembered grants give every signature of a command the network.
    fn network_granted(&self, keys: &[String]) -> bool {
        !keys.is_empty()
            && keys
                .iter()
                .all(|k| self.granted(PermissionLevel::Network, |key| key == k))
    }

    /// Whether a command the policy let run (or a client approved) gets the network in its
    /// sandbox without having asked for it: the network rule allows it, or remembered
    /// grants cover every part of a plain, riskless line.
    pub fn command_network(&self, access: &CommandAccess) -> bool {
        let analysis = &access.analysis;
        match self.rule(PermissionLevel::Network) {
            PermissionRule::Allow => true,
            PermissionRule::Deny => false,
            PermissionRule::Ask => {
                let keys: Vec<String> = analysis
                    .signatures()
                    .iter()
                    .map(|s| command_network_key(s))
                    .collect();
                analysis.plain() && analysis.risk.is_none() && self.network_granted(&keys)
            }
        }
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
            PermissionRule::Ask => Decision::Ask(Ask::simple(
                PermissionLevel::Network,
                format!("{tool} wants to connect to {host}"),
                Vec::new(),
                vec![host.to_owned()],
            )),
        }
    }
}

/// Why a command would run unconfined, if it would: the sandbox is unavailable here, or
/// the command asks to run outside it.
fn unconfined_reason(access: &CommandAccess) -> Option<String> {
    match (&access.wall, &access.outside_sandbox) {
        (WallState::Off, _) | (WallState::Enforced(_), None) => None,
        (WallState::Unavailable(why), _) => Some(format!(
            "the OS sandbox is not available here ({why}), so it would run with your full rights"
        )),
        (WallState::Enforced(_), Some(reason)) => Some(format!(
            "it asks to run outside the OS sandbox, with your full rights: {reason}"
        )),
    }
}

/// The question for a command no grant covers: what it is asked for (running it
/// unconfined, a risk, a part not fully understood) and whether the network comes with it.
fn command_ask(
    analysis: &command::CommandAnalysis,
    unconfined: Option<String>,
    network_asked: bool,
    signatures: Vec<String>,
    grant_keys: Vec<(PermissionLevel, String)>,
) -> Ask {
    let command = &analysis.command;
    let with_network = if network_asked {
        " with network access"
    } else {
        ""
    };
    let reason = match (&unconfined, &analysis.risk, analysis.plain()) {
        (Some(why), _, _) => Some(why.clone()),
        (None, Some(risk), _) => Some(risk.clone()),
        (None, None, false) => Some(format!(
            "asked every time: the command {}",
            unclear_summary(&analysis.unclear)
        )),
        (None, None, true) => None,
    };
    let description = match (&unconfined, &analysis.risk, &reason) {
        (Some(_), _, _) => format!("run outside the sandbox{with_network}: {command}"),
        (None, Some(risk), _) => format!("run a risky command{with_network} ({risk}): {command}"),
        (None, None, Some(reason)) => format!("run{with_network} ({reason}): {command}"),
        (None, None, None) => format!("run{with_network}: {command}"),
    };
    Ask {
        level: PermissionLevel::Execute,
        description,
        command: Some(command.clone()),
        grant_keys,
        signatures,
        paths: Vec::new(),
        risk: reason,
        network_access: network_asked,
        outside_sandbox: unconfined.is_some(),
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
