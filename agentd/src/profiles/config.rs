//! `[[profiles]]` of the config file: the shape (unknown keys are errors) and the checks
//! that turn an entry into a [`Profile`], naming the entry and the key that is wrong.

use agent_proto::{PermissionRules, ProfileSource};

use super::{Profile, Profiles};
use crate::config::ProfileConfig;

/// Largest accepted temperature (OpenAI's range; other APIs accept less, and say so).
const MAX_TEMPERATURE: f64 = 2.0;

/// Whether `name` can be a tool name (what a model accepts: `^[a-zA-Z0-9_-]{1,64}$`).
fn is_tool_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

impl ProfileConfig {
    /// The profile this entry (the `index`th) defines, given the profiles there are before
    /// it and the entries before it. `Err` names the key, as `profiles[i].key`. By phase:
    /// its name, the profile it extends, its tools and MCP tools, its numbers, then every
    /// field its own or inherited.
    pub(super) fn resolve(
        &self,
        index: usize,
        known: &Profiles,
        earlier: &[ProfileConfig],
    ) -> Result<Profile, String> {
        let at = |key: &str| format!("profiles[{index}].{key}");
        self.check_name(earlier, &at)?;
        let base = self.base(index, known, &at)?;
        let tools = self.tools(base, &at)?;
        let mcp = self.mcp(base, &at)?;
        self.check_numbers(&at)?;
        let inherited = base.map(|b| b.permissions).unwrap_or_default();
        let own = self.permissions.unwrap_or_default();
        Ok(Profile {
            name: self.name.clone(),
            description: self
                .description
                .clone()
                .or_else(|| base.map(|b| b.description.clone()))
                .unwrap_or_default(),
            prompt: self
                .system_prompt
                .clone()
                .or_else(|| base.map(|b| b.prompt.clone()))
                .unwrap_or_default(),
            tools,
            mcp,
            permissions: PermissionRules {
                read: own.read.or(inherited.read),
                write: own.write.or(inherited.write),
                execute: own.execute.or(inherited.execute),
                network: own.network.or(inherited.network),
            },
            temperature: self
                .temperature
                .or_else(|| base.and_then(|b| b.temperature)),
            max_output_tokens: self
                .max_output_tokens
                .or_else(|| base.and_then(|b| b.max_output_tokens)),
            sandbox: self.sandbox.or_else(|| base.and_then(|b| b.sandbox)),
            source: ProfileSource::Config,
        })
    }

    /// The name is one (letters, digits, `_`, `-`, `.`, at most 64) and no earlier entry's.
    fn check_name(
        &self,
        earlier: &[ProfileConfig],
        at: &impl Fn(&str) -> String,
    ) -> Result<(), String> {
        let name = self.name.as_str();
        let name_ok = (1..=64).contains(&name.len())
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
        if !name_ok {
            return Err(format!(
                "{}: {name:?} is not a profile name (letters, digits, `_`, `-` and `.`, at \
                 most 64)",
                at("name")
            ));
        }
        if let Some(first) = earlier.iter().position(|e| e.name == name) {
            return Err(format!(
                "{}: {name:?} is defined twice (also profiles[{first}])",
                at("name")
            ));
        }
        Ok(())
    }

    /// The profile this one extends, if any; an entry that extends none must list its tools.
    fn base<'p>(
        &self,
        index: usize,
        known: &'p Profiles,
        at: &impl Fn(&str) -> String,
    ) -> Result<Option<&'p Profile>, String> {
        match &self.extends {
            Some(parent) => known.get(parent).map(Some).ok_or_else(|| {
                format!(
                    "{}: {parent:?} is neither a built-in profile nor one defined before this \
                     one (there are: {})",
                    at("extends"),
                    known.names()
                )
            }),
            None if self.tools.is_none() => Err(format!(
                "profiles[{index}] ({}): give `tools` (its builtin tools, [] for none) or \
                 `extends` (a profile to start from)",
                self.name
            )),
            None => Ok(None),
        }
    }

    /// Its builtin tools: its own list or the base's, with `add_tools` added and
    /// `remove_tools` (each of which must be there) taken away.
    fn tools(
        &self,
        base: Option<&Profile>,
        at: &impl Fn(&str) -> String,
    ) -> Result<Vec<String>, String> {
        let mut tools: Vec<String> = match (&self.tools, base) {
            (Some(tools), _) => check_tools(tools, &at("tools"))?,
            (None, Some(base)) => base.tools.clone(),
            (None, None) => Vec::new(),
        };
        for tool in check_tools(&self.add_tools, &at("add_tools"))? {
            if !tools.contains(&tool) {
                tools.push(tool);
            }
        }
        for tool in check_tools(&self.remove_tools, &at("remove_tools"))? {
            let Some(i) = tools.iter().position(|t| *t == tool) else {
                return Err(format!(
                    "{}: {tool:?} is not among its tools ({})",
                    at("remove_tools"),
                    tools.join(", ")
                ));
            };
            tools.remove(i);
        }
        Ok(tools)
    }

    /// Its MCP tools (`server` or `server/tool`), its own or the base's.
    fn mcp(
        &self,
        base: Option<&Profile>,
        at: &impl Fn(&str) -> String,
    ) -> Result<Option<Vec<String>>, String> {
        let Some(names) = &self.mcp else {
            return Ok(base.and_then(|b| b.mcp.clone()));
        };
        for n in names {
            let parts_ok = match n.split_once('/') {
                Some((server, tool)) => {
                    !server.is_empty() && !tool.is_empty() && !tool.contains('/')
                }
                None => !n.is_empty(),
            };
            if !parts_ok {
                return Err(format!(
                    "{}: {n:?} is neither a server name nor server/tool",
                    at("mcp")
                ));
            }
        }
        Ok(Some(names.clone()))
    }

    /// Its temperature is in range and its output limit is at least 1.
    fn check_numbers(&self, at: &impl Fn(&str) -> String) -> Result<(), String> {
        if let Some(t) = self.temperature
            && !(t.is_finite() && (0.0..=MAX_TEMPERATURE).contains(&t))
        {
            return Err(format!(
                "{} must be between 0 and {MAX_TEMPERATURE}, got {t}",
                at("temperature")
            ));
        }
        if self.max_output_tokens == Some(0) {
            return Err(format!(
                "{} must be at least 1, got 0",
                at("max_output_tokens")
            ));
        }
        Ok(())
    }
}

/// The names of a tool list, each once, in order; `Err` names the first that cannot be a
/// tool name.
fn check_tools(names: &[String], key: &str) -> Result<Vec<String>, String> {
    let mut out: Vec<String> = Vec::new();
    for name in names {
        if !is_tool_name(name) {
            return Err(format!(
                "{key}: {name:?} is not a tool name (letters, digits, `_` and `-`, at most 64)"
            ));
        }
        if !out.contains(name) {
            out.push(name.clone());
        }
    }
    Ok(out)
}
