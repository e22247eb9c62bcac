//! The builtin tools: a shell, files, search, and the web.
//!
//! Each tool resolves every path through the agent's sandbox and operates on the resolved
//! path (what the policy checked is what is touched). Failures are results for the model
//! (`ToolOutput::error`), never panics.

mod bash;
mod files;
mod search;
mod web;

use std::sync::Arc;

use serde_json::Value;

use super::sandbox::ResolvedPath;
use super::{BuiltinTool, ToolContext};

/// Every builtin tool, in the order they are offered to the model.
pub fn all() -> Vec<Arc<dyn BuiltinTool>> {
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
    ]
}

/// A string argument.
fn str_arg<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

/// An integer argument.
fn int_arg(args: &Value, key: &str) -> Option<u64> {
    args.get(key).and_then(Value::as_u64)
}

/// Resolves the path argument `key` (the workspace when absent).
fn path_arg(args: &Value, key: &str, ctx: &ToolContext) -> Result<ResolvedPath, String> {
    match str_arg(args, key) {
        Some(raw) => ctx.sandbox.resolve(raw),
        None => ctx.sandbox.resolve("."),
    }
}

#[cfg(test)]
pub(crate) mod testing {
    //! A workspace and a context for the tools' tests.

    use std::path::PathBuf;

    use tokio_util::sync::CancellationToken;

    use super::super::ToolContext;
    use super::super::sandbox::Sandbox;

    pub struct TestWorld {
        pub dir: tempfile::TempDir,
        pub ws: PathBuf,
        pub ctx: ToolContext,
    }

    pub fn world() -> TestWorld {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let ws = root.join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        crate::provider::install_tls_provider();
        let ctx = ToolContext {
            agent_id: "agent".into(),
            sandbox: Sandbox::new(&ws, &root.join("data/sessions"), "agent").unwrap(),
            cancel: CancellationToken::new(),
            http: reqwest::Client::new(),
            processes: std::sync::Arc::new(super::super::process::ProcessLauncher::for_tests()),
        };
        TestWorld { dir, ws, ctx }
    }
}
