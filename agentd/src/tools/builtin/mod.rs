//! The builtin tools: a shell, files, search, the web, the agent tools (a plan, a
//! question to the user, subagents) and skills.
//!
//! Each tool resolves every path through the agent's sandbox (`access`) and operates on the
//! path the policy checked (`ToolContext::checked`), never on a new resolution: what the
//! policy checked is what is touched. Failures are results for the model
//! (`ToolOutput::error`), never panics. Each declares its arguments once, as a typed struct
//! the model's schema is generated from (`args.rs`).

pub mod args;
pub mod bash;
mod files;
mod plan;
pub mod question;
mod search;
pub mod skill;
pub mod task;
mod web;
pub mod web_search;

use std::sync::Arc;

use super::sandbox::ResolvedPath;
use super::{BuiltinTool, ToolContext};

pub use plan::parse_plan;
pub use web::{http_client, read_body};

/// Every builtin tool, in the order they are offered to the model (`web_search` without a
/// backend: listed, never offered; `skill` with the workspace's skills only).
pub fn all() -> Vec<Arc<dyn BuiltinTool>> {
    all_with(None, Arc::default())
}

/// [`all`], with the daemon's web search backend and skill folders.
pub fn all_with(
    web_search: Option<web_search::SearchBackend>,
    skills: Arc<crate::skills::Skills>,
) -> Vec<Arc<dyn BuiltinTool>> {
    vec![
        Arc::new(bash::Bash),
        Arc::new(files::ReadFile),
        Arc::new(files::WriteFile),
        Arc::new(files::EditFile),
        Arc::new(search::Glob),
        Arc::new(search::Grep),
        Arc::new(files::ListDirectory),
        Arc::new(files::DirectoryTree),
        Arc::new(web::WebFetch),
        Arc::new(web_search::WebSearch::new(web_search)),
        Arc::new(plan::TodoWrite),
        Arc::new(question::AskUserQuestion),
        Arc::new(task::Task),
        Arc::new(skill::Skill::new(skills)),
    ]
}

/// Resolves a path argument (the workspace when absent), for `access`.
fn resolve_path(raw: Option<&str>, ctx: &ToolContext) -> Result<ResolvedPath, String> {
    ctx.sandbox.resolve(raw.unwrap_or("."))
}

/// The path the policy checked for this call (the only one of a one-path tool), for `run`.
fn checked_path(ctx: &ToolContext) -> Result<std::path::PathBuf, String> {
    match ctx.checked.paths.as_slice() {
        [only] => Ok(only.path.clone()),
        _ => Err("internal error: the call's path was not checked before it ran".into()),
    }
}

#[cfg(test)]
pub(crate) mod testing {
    //! A workspace and a context for the tools' tests.

    use std::path::PathBuf;

    use serde_json::Value;
    use tokio_util::sync::CancellationToken;

    use super::super::sandbox::Sandbox;
    use super::super::{Access, BuiltinTool, Checked, ToolContext, ToolOutput};

    pub(crate) struct TestWorld {
        pub dir: tempfile::TempDir,
        pub ws: PathBuf,
        pub ctx: ToolContext,
    }

    pub(crate) fn world() -> TestWorld {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let ws = root.join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        crate::provider::install_tls_provider();
        let ctx = ToolContext {
            agent_id: "agent".into(),
            sandbox: Sandbox::new(&ws, &root.join("data"), "agent").unwrap(),
            cancel: CancellationToken::new(),
            http: super::http_client().unwrap(),
            checked: Checked::default(),
            processes: std::sync::Arc::new(crate::process::ProcessLauncher::for_tests()),
            host: None,
            tool_call_id: String::new(),
            progress: None,
            // Unit tests run without the daemon's binary, so without the sandbox: their
            // commands run unconfined (the sandbox is tested end to end).
            wall: std::sync::Arc::new(crate::tools::wall::SandboxPlan::unavailable(
                agent_proto::SandboxMode::Off,
            ))
            .wall(agent_proto::SandboxMode::Off, root.join("data/tmp/agent")),
        };
        TestWorld { dir, ws, ctx }
    }

    /// Runs a call as the tool center does: its access worked out, then run on what was
    /// checked. An access that fails is the result.
    pub(crate) async fn call(tool: &dyn BuiltinTool, ctx: &ToolContext, args: Value) -> ToolOutput {
        let mut ctx = ctx.clone();
        match tool.access(&args, &ctx) {
            Ok(Access::Paths { paths, .. }) => ctx.checked.paths = paths,
            Ok(_) => {}
            Err(e) => return ToolOutput::error(e),
        }
        tool.run(args, &ctx).await
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::testing::{call, world};
    use super::*;
    use crate::tools::sandbox::Sandbox;

    #[tokio::test]
    async fn walks_never_enter_the_data_dir() {
        let w = world();
        // The workspace is the folder that holds the data dir.
        let root = w.ws.parent().unwrap().to_owned();
        let data = root.join("data");
        let own = data.join("sessions/agent");
        for dir in [
            own.clone(),
            data.join("sessions/other"),
            data.join("workspaces/other"),
        ] {
            std::fs::create_dir_all(dir).unwrap();
        }
        std::fs::write(data.join("agentd.db"), "needle db").unwrap();
        std::fs::write(data.join("sessions/other/tool_x.offload"), "needle other").unwrap();
        std::fs::write(data.join("workspaces/other/w.txt"), "needle other ws").unwrap();
        std::fs::write(own.join("tool_y.offload"), "needle own").unwrap();
        std::fs::write(w.ws.join("a.txt"), "needle ws").unwrap();
        let mut ctx = w.ctx.clone();
        ctx.sandbox = Sandbox::new(&root, &data, "agent").unwrap();
        let tools = all();
        let tool = |name: &str| tools.iter().find(|t| t.name() == name).unwrap().clone();
        let cases: Vec<(&str, Value, &str)> = vec![
            ("glob", json!({"pattern": "**/*"}), "ws/a.txt"),
            (
                "grep",
                json!({"pattern": "needle"}),
                "ws/a.txt:1: needle ws",
            ),
            ("list_directory", json!({}), "ws/"),
            ("directory_tree", json!({"depth": 3}), "a.txt"),
        ];
        for (name, args, expected) in cases {
            let out = call(tool(name).as_ref(), &ctx, args).await;
            assert!(!out.is_error, "{name}: {}", out.content);
            assert!(out.content.contains(expected), "{name}: {}", out.content);
            for hidden in ["agentd.db", "offload", "sessions", "workspaces", "data/"] {
                assert!(
                    !out.content.contains(hidden),
                    "{name} shows {hidden}: {}",
                    out.content
                );
            }
        }
        // The agent's own folder is still listed when asked for.
        let listed = call(
            tool("list_directory").as_ref(),
            &ctx,
            json!({"path": own.display().to_string()}),
        )
        .await;
        assert_eq!(listed.content, "tool_y.offload");
    }
}
