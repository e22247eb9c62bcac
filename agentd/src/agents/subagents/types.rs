//! Subagent types and the `[subagents]` section of the config.
//!
//! Built in: `explore` (read-only tools, for finding things out) and `general` (the
//! parent's tools less `task`). `[[subagents.types]]` adds more.

use crate::config::SubagentsConfig;

/// Read-only builtin tools, the `explore` type's.
const EXPLORE_TOOLS: &[&str] = &[
    "read_file",
    "glob",
    "grep",
    "list_directory",
    "directory_tree",
];

const EXPLORE_PROMPT: &str = "You are a subagent: another agent gave you one task, to find something out. You have read-only tools: search and read, never change anything. Work efficiently (search before you read, read only what you need). Your final message is your report and the only thing the other agent sees: answer the task precisely, with the paths, names and short excerpts that support it, and say what you could not find.";

const GENERAL_PROMPT: &str = "You are a subagent: another agent gave you one self-contained task. Do it with the tools you have, in the same workspace as that agent. Your final message is your report and the only thing the other agent sees: say what you did, what you found or changed (paths), and anything left undone or uncertain. Be concise.";

/// A subagent type, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubagentType {
    pub name: String,
    pub system_prompt: String,
    /// `None`: the parent's tools less `task`.
    pub tools: Option<Vec<String>>,
    pub mcp: Option<Vec<String>>,
    pub provider: Option<String>,
    pub model: Option<String>,
    pub max_steps: Option<u32>,
}

impl SubagentsConfig {
    /// Refuses what cannot work, naming the field.
    pub fn validate(&self) -> Result<(), String> {
        if self.max_depth > 8 {
            return Err(format!(
                "subagents.max_depth is at most 8, got {}",
                self.max_depth
            ));
        }
        if !(1..=32).contains(&self.max_parallel) {
            return Err(format!(
                "subagents.max_parallel must be 1 to 32, got {}",
                self.max_parallel
            ));
        }
        for (i, t) in self.types.iter().enumerate() {
            let at = format!("subagents.types[{i}]");
            if t.name.trim().is_empty() {
                return Err(format!("{at}.name is empty"));
            }
            if matches!(t.name.as_str(), "explore" | "general") {
                return Err(format!(
                    "{at}.name {:?} is a built-in type; choose another name",
                    t.name
                ));
            }
            if self.types[..i].iter().any(|o| o.name == t.name) {
                return Err(format!("{at}.name {:?} is used twice", t.name));
            }
            if t.tools
                .as_ref()
                .is_some_and(|tools| tools.iter().any(|n| n == "task"))
                && self.max_depth < 2
            {
                return Err(format!(
                    "{at}.tools names task but subagents.max_depth ({}) leaves no room for its subagents",
                    self.max_depth
                ));
            }
            if t.mcp.is_some() && t.tools.is_none() {
                return Err(format!(
                    "{at}.mcp needs tools: without tools the type takes the parent's tools, MCP ones included"
                ));
            }
            if t.max_steps == Some(0) {
                return Err(format!("{at}.max_steps must be at least 1"));
            }
        }
        Ok(())
    }

    /// The type of this name, or why there is none.
    pub fn kind(&self, name: &str) -> Result<SubagentType, String> {
        match name {
            "explore" => Ok(SubagentType {
                name: name.to_owned(),
                system_prompt: EXPLORE_PROMPT.to_owned(),
                tools: Some(EXPLORE_TOOLS.iter().map(|t| (*t).to_owned()).collect()),
                mcp: Some(Vec::new()),
                provider: None,
                model: None,
                max_steps: None,
            }),
            "general" => Ok(SubagentType {
                name: name.to_owned(),
                system_prompt: GENERAL_PROMPT.to_owned(),
                tools: None,
                mcp: None,
                provider: None,
                model: None,
                max_steps: None,
            }),
            _ => {
                let t = self.types.iter().find(|t| t.name == name).ok_or_else(|| {
                    format!(
                        "unknown subagentType {name:?}; the types are: {}",
                        self.names().join(", ")
                    )
                })?;
                Ok(SubagentType {
                    name: t.name.clone(),
                    system_prompt: t
                        .system_prompt
                        .clone()
                        .unwrap_or_else(|| GENERAL_PROMPT.to_owned()),
                    tools: t.tools.clone(),
                    mcp: if t.tools.is_some() {
                        Some(t.mcp.clone().unwrap_or_default())
                    } else {
                        None
                    },
                    provider: t.provider.clone(),
                    model: t.model.clone(),
                    max_steps: t.max_steps,
                })
            }
        }
    }

    /// Every type's name, built-in ones first.
    pub fn names(&self) -> Vec<String> {
        ["explore", "general"]
            .into_iter()
            .map(str::to_owned)
            .chain(self.types.iter().map(|t| t.name.clone()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<SubagentsConfig, String> {
        let config: SubagentsConfig = toml::from_str(text).map_err(|e| e.to_string())?;
        config.validate()?;
        Ok(config)
    }

    #[test]
    fn the_section_is_read_and_checked() {
        let config = parse(
            "max_depth = 1\nmax_parallel = 2\n[[types]]\nname = \"reviewer\"\ntools = [\"read_file\", \"grep\"]\nmcp = [\"git\"]\nmax_steps = 5\n",
        )
        .unwrap();
        assert_eq!((config.max_depth, config.max_parallel), (1, 2));
        let reviewer = config.kind("reviewer").unwrap();
        assert_eq!(
            reviewer.tools,
            Some(vec!["read_file".to_owned(), "grep".to_owned()])
        );
        assert_eq!(reviewer.mcp, Some(vec!["git".to_owned()]));
        assert_eq!(reviewer.system_prompt, GENERAL_PROMPT);
        assert_eq!(config.kind("explore").unwrap().mcp, Some(Vec::new()));
        assert_eq!(config.kind("general").unwrap().tools, None);
        assert_eq!(
            config.kind("nope").unwrap_err(),
            "unknown subagentType \"nope\"; the types are: explore, general, reviewer"
        );
        let defaults = parse("").unwrap();
        assert_eq!((defaults.max_depth, defaults.max_parallel), (2, 4));
        for (text, start) in [
            ("max_depth = 9", "subagents.max_depth is at most 8"),
            ("max_parallel = 0", "subagents.max_parallel must be 1 to 32"),
            (
                "[[types]]\nname = \"explore\"",
                "subagents.types[0].name \"explore\" is a built-in",
            ),
            (
                "[[types]]\nname = \"a\"\n[[types]]\nname = \"a\"",
                "subagents.types[1].name \"a\" is used twice",
            ),
            (
                "[[types]]\nname = \" \"",
                "subagents.types[0].name is empty",
            ),
            (
                "[[types]]\nname = \"a\"\nmcp = [\"x\"]",
                "subagents.types[0].mcp needs tools",
            ),
            (
                "[[types]]\nname = \"a\"\nmax_steps = 0",
                "subagents.types[0].max_steps must be at least 1",
            ),
            ("[[types]]\nname = \"a\"\ncolour = \"red\"", "unknown field"),
        ] {
            let e = parse(text).unwrap_err();
            assert!(e.contains(start), "{text}: {e}");
        }
    }
}
