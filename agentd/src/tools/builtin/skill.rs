//! `skill`: loads one of the agent's skills (`crate::skills`): the body of its `SKILL.md`,
//! its folder's absolute path and the names of the files beside it. Read level and never
//! asks: what it reads is the user's own skills (and the workspace's); the other files are
//! for the model to read with `read_file`, under the usual policy.

use std::sync::Arc;

use agent_proto::{PermissionLevel, SkillSource};
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;

use super::args::TypedTool;
use crate::skills::Skills;
use crate::tools::{Access, ToolContext, ToolOutput};

pub const NAME: &str = "skill";

#[derive(Debug)]
pub struct Skill {
    skills: Arc<Skills>,
}

impl Skill {
    pub fn new(skills: Arc<Skills>) -> Skill {
        Skill { skills }
    }
}

/// `skill`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SkillArgs {
    /// The skill's name, as the system prompt lists it
    #[schemars(length(min = 1, max = 64))]
    name: String,
}

impl TypedTool for Skill {
    type Args = SkillArgs;

    fn name(&self) -> &'static str {
        NAME
    }

    fn description(&self) -> &'static str {
        "Load a skill by name: its instructions (the body of its SKILL.md), the absolute path of its folder and the names of the other files there. The system prompt lists the skills with what each is for; load one when the task matches it, then follow its instructions and read the files it points to with read_file (paths relative to the skill's folder)."
    }

    fn level(&self) -> PermissionLevel {
        PermissionLevel::Read
    }

    fn access(&self, _args: &SkillArgs, _ctx: &ToolContext) -> Result<Access, String> {
        Ok(Access::Agent)
    }

    fn run<'a>(&'a self, args: SkillArgs, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let name = args.name;
            let workspace = ctx.sandbox.workspace().to_owned();
            match self.skills.load(workspace, name).await {
                Ok(loaded) => ToolOutput::ok(render(&loaded)),
                Err(e) => ToolOutput::error(e),
            }
        })
    }
}

/// What the model reads.
fn render(loaded: &crate::skills::Loaded) -> String {
    let source = match loaded.info.source {
        SkillSource::Workspace => "the workspace's",
        SkillSource::Config => "from the config's folders",
        SkillSource::User => "the user's",
    };
    let mut out = format!(
        "Skill {} ({source}). Its folder: {}\n",
        loaded.info.name, loaded.info.path
    );
    if loaded.files.is_empty() {
        out.push_str("Other files in the folder: none.\n");
    } else {
        out.push_str(&format!(
            "Other files in the folder (read them with read_file when the instructions \
             point to them): {}",
            loaded.files.join(", ")
        ));
        if loaded.more_files > 0 {
            out.push_str(&format!(" and {} more", loaded.more_files));
        }
        out.push_str(".\n");
    }
    out.push('\n');
    out.push_str(&loaded.body);
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::testing::{call, world};
    use super::*;
    use crate::tools::BuiltinTool;

    #[tokio::test]
    async fn the_skill_tool_returns_the_body_the_folder_and_its_files() {
        let w = world();
        let dir = w.ws.join(".agentd/skills/pdf");
        std::fs::create_dir_all(dir.join("scripts")).unwrap();
        std::fs::write(
            dir.join("SKILL.md"),
            "---\nname: pdf-forms\ndescription: Fill PDF forms.\n---\n# Filling\nRun scripts/fill.py.\n",
        )
        .unwrap();
        std::fs::write(dir.join("reference.md"), "r").unwrap();
        let tool = Skill::new(Arc::new(Skills::default()));
        assert_eq!(
            BuiltinTool::access(&tool, &json!({"name": "x"}), &w.ctx),
            Ok(Access::Agent)
        );
        let out = call(&tool, &w.ctx, json!({"name": "pdf-forms"})).await;
        assert!(!out.is_error, "{}", out.content);
        assert_eq!(
            out.content,
            format!(
                "Skill pdf-forms (the workspace's). Its folder: {}\nOther files in the folder \
                 (read them with read_file when the instructions point to them): reference.md, \
                 scripts/.\n\n# Filling\nRun scripts/fill.py.\n",
                dir.display()
            )
        );
        let out = call(&tool, &w.ctx, json!({"name": "nope"})).await;
        assert!(out.is_error);
        assert_eq!(
            out.content,
            "unknown skill \"nope\"; the skills are: pdf-forms"
        );
    }
}
