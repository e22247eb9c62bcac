//! Search tools: `glob` (paths by pattern) and `grep` (lines by regex), walking like
//! ripgrep does (its crates: .gitignore respected, `.git/` skipped, links not followed).
//! A walk never enters the daemon's data dir (`Sandbox::walk_skips`).

use std::path::{Path, PathBuf};

use agent_proto::PermissionLevel;
use futures::future::BoxFuture;
use grep_regex::RegexMatcherBuilder;
use grep_searcher::sinks::UTF8;
use grep_searcher::{BinaryDetection, SearcherBuilder};
use schemars::JsonSchema;
use serde::Deserialize;

use super::args::TypedTool;
use super::{checked_path, resolve_path};
use crate::tools::sandbox::Sandbox;
use crate::tools::{Access, ToolContext, ToolOutput};

const MAX_GLOB_PATHS: usize = 1000;
const MAX_GREP_MATCHES: usize = 100;
const MAX_MATCH_LINE_CHARS: usize = 500;

fn walker(base: &Path, sandbox: &Sandbox) -> ignore::Walk {
    let (base_owned, sandbox) = (base.to_owned(), sandbox.clone());
    ignore::WalkBuilder::new(base)
        .hidden(false)
        .git_ignore(true)
        .require_git(false)
        .follow_links(false)
        .filter_entry(move |e| {
            e.file_name() != ".git" && !sandbox.walk_skips(&base_owned, e.path())
        })
        .build()
}

/// A path as shown: relative to the base when under it.
fn shown(path: &Path, base: &Path) -> String {
    path.strip_prefix(base)
        .map_or_else(|_| path.display().to_string(), |p| p.display().to_string())
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T, String> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| format!("the search failed: {e}"))
}

#[derive(Debug)]
pub(super) struct Glob;

/// `glob`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct GlobArgs {
    /// Glob pattern, e.g. **/*.rs
    pattern: String,
    /// Directory to search (default: the workspace).
    path: Option<String>,
}

impl TypedTool for Glob {
    type Args = GlobArgs;

    fn name(&self) -> &'static str {
        "glob"
    }

    fn description(&self) -> &'static str {
        "Find files whose path (relative to `path`, default the workspace) matches a glob \
         pattern such as `**/*.rs` or `src/*.toml`. Respects .gitignore; at most 1000 paths."
    }

    fn level(&self) -> PermissionLevel {
        PermissionLevel::Read
    }

    fn access(&self, args: &GlobArgs, ctx: &ToolContext) -> Result<Access, String> {
        Ok(Access::Paths {
            level: PermissionLevel::Read,
            paths: vec![resolve_path(args.path.as_deref(), ctx)?],
        })
    }

    fn run<'a>(&'a self, args: GlobArgs, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let base = match checked_path(ctx) {
                Ok(p) => p,
                Err(e) => return ToolOutput::error(e),
            };
            let sandbox = ctx.sandbox.clone();
            let pattern = args.pattern;
            match blocking(move || glob(&base, &pattern, &sandbox)).await {
                Ok(Ok(text)) => ToolOutput::ok(text),
                Ok(Err(e)) | Err(e) => ToolOutput::error(e),
            }
        })
    }
}

fn glob(base: &Path, pattern: &str, sandbox: &Sandbox) -> Result<String, String> {
    if !base.is_dir() {
        return Err(format!("{} is not a directory", base.display()));
    }
    let matcher = globset::Glob::new(pattern)
        .map_err(|e| format!("invalid glob pattern {pattern:?}: {e}"))?
        .compile_matcher();
    let mut found: Vec<PathBuf> = Vec::new();
    let mut more = 0usize;
    for entry in walker(base, sandbox).flatten() {
        let path = entry.path();
        if path == base || !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let rel = path.strip_prefix(base).unwrap_or(path);
        if matcher.is_match(rel) {
            if found.len() < MAX_GLOB_PATHS {
                found.push(rel.to_owned());
            } else {
                more += 1;
            }
        }
    }
    if found.is_empty() {
        return Ok(format!(
            "no files match {pattern:?} under {}",
            base.display()
        ));
    }
    found.sort();
    let mut out: Vec<String> = found.iter().map(|p| p.display().to_string()).collect();
    if more > 0 {
        out.push(format!("[{more} more paths not shown; narrow the pattern]"));
    }
    Ok(out.join("\n"))
}

#[derive(Debug)]
pub(super) struct Grep;

/// `grep`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct GrepArgs {
    /// Regular expression.
    pattern: String,
    /// File or directory (default: the workspace).
    path: Option<String>,
    /// Only files whose path matches this glob, e.g. *.rs
    glob: Option<String>,
    /// Ignore case (default false).
    #[serde(default)]
    case_insensitive: bool,
}

impl TypedTool for Grep {
    type Args = GrepArgs;

    fn name(&self) -> &'static str {
        "grep"
    }

    fn description(&self) -> &'static str {
        "Search file contents with a regular expression (Rust regex syntax) under `path` \
         (a file or directory, default the workspace), optionally only in files matching \
         `glob`. Prints `path:line: text`; at most 100 matches."
    }

    fn level(&self) -> PermissionLevel {
        PermissionLevel::Read
    }

    fn access(&self, args: &GrepArgs, ctx: &ToolContext) -> Result<Access, String> {
        Ok(Access::Paths {
            level: PermissionLevel::Read,
            paths: vec![resolve_path(args.path.as_deref(), ctx)?],
        })
    }

    fn run<'a>(&'a self, args: GrepArgs, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let base = match checked_path(ctx) {
                Ok(p) => p,
                Err(e) => return ToolOutput::error(e),
            };
            let sandbox = ctx.sandbox.clone();
            let GrepArgs {
                pattern,
                glob: filter,
                case_insensitive,
                ..
            } = args;
            match blocking(move || {
                grep(
                    &base,
                    &sandbox,
                    &pattern,
                    filter.as_deref(),
                    case_insensitive,
                )
            })
            .await
            {
                Ok(Ok(text)) => ToolOutput::ok(text),
                Ok(Err(e)) | Err(e) => ToolOutput::error(e),
            }
        })
    }
}

fn grep(
    base: &Path,
    sandbox: &Sandbox,
    pattern: &str,
    filter: Option<&str>,
    case_insensitive: bool,
) -> Result<String, String> {
    let matcher = RegexMatcherBuilder::new()
        .case_insensitive(case_insensitive)
        .build(pattern)
        .map_err(|e| format!("invalid regular expression {pattern:?}: {e}"))?;
    let filter = filter
        .map(|g| {
            globset::Glob::new(g)
                .map(|g| g.compile_matcher())
                .map_err(|e| format!("invalid glob {g:?}: {e}"))
        })
        .transpose()?;
    if !base.exists() {
        return Err(format!("{} does not exist", base.display()));
    }
    let mut searcher = SearcherBuilder::new()
        .line_number(true)
        .binary_detection(BinaryDetection::quit(0))
        .build();
    let shown_base = if base.is_file() {
        base.parent().unwrap_or(base).to_owned()
    } else {
        base.to_owned()
    };
    let mut lines: Vec<String> = Vec::new();
    let mut more = false;
    for entry in walker(base, sandbox).flatten() {
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let path = entry.path();
        let rel = path.strip_prefix(&shown_base).unwrap_or(path);
        if let Some(filter) = &filter
            && !filter.is_match(rel)
            && !path.file_name().is_some_and(|n| filter.is_match(n))
        {
            continue;
        }
        let name = shown(path, &shown_base);
        let result = searcher.search_path(
            &matcher,
            path,
            UTF8(|number, line| {
                if lines.len() >= MAX_GREP_MATCHES {
                    more = true;
                    return Ok(false);
                }
                let line = line.trim_end_matches(['\n', '\r']);
                let text: String = line.chars().take(MAX_MATCH_LINE_CHARS).collect();
                let cut = if line.chars().count() > MAX_MATCH_LINE_CHARS {
                    " [...]"
                } else {
                    ""
                };
                lines.push(format!("{name}:{number}: {text}{cut}"));
                Ok(true)
            }),
        );
        if let Err(e) = result {
            tracing::debug!("grep skipped {}: {e}", path.display());
        }
        if more {
            break;
        }
    }
    if lines.is_empty() {
        return Ok(format!(
            "no matches for {pattern:?} under {}",
            base.display()
        ));
    }
    if more {
        lines.push(format!(
            "[stopped at {MAX_GREP_MATCHES} matches; narrow the pattern or the path]"
        ));
    }
    Ok(lines.join("\n"))
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::tools::builtin::testing::{call, world};

    fn populate(ws: &Path) {
        for dir in ["src/deep", ".git", "target"] {
            std::fs::create_dir_all(ws.join(dir)).unwrap();
        }
        std::fs::write(ws.join(".gitignore"), "target/\n").unwrap();
        std::fs::write(
            ws.join("src/main.rs"),
            "fn main() {\n    println!(\"Hello\");\n}\n",
        )
        .unwrap();
        std::fs::write(
            ws.join("src/deep/lib.rs"),
            "pub fn hello() {}\n// hello again\n",
        )
        .unwrap();
        std::fs::write(ws.join("README.md"), "# Hello\n").unwrap();
        std::fs::write(ws.join("target/out.rs"), "fn hello() {}\n").unwrap();
        std::fs::write(ws.join(".git/config"), "hello").unwrap();
        std::fs::write(ws.join("bin.dat"), b"hello\0world").unwrap();
    }

    #[tokio::test]
    async fn glob_finds_paths() {
        let w = world();
        populate(&w.ws);
        let cases: Vec<(Value, &str)> = vec![
            (
                json!({"pattern": "**/*.rs"}),
                "src/deep/lib.rs\nsrc/main.rs",
            ),
            (json!({"pattern": "*.md"}), "README.md"),
            (json!({"pattern": "*.rs", "path": "src/deep"}), "lib.rs"),
            (json!({"pattern": "*.zig"}), "no files match"),
        ];
        for (args, expected) in cases {
            let out = call(&Glob, &w.ctx, args.clone()).await;
            assert!(out.content.starts_with(expected), "{args}: {}", out.content);
        }
        let out = call(&Glob, &w.ctx, json!({"pattern": "[bad"})).await;
        assert!(out.is_error && out.content.contains("invalid glob"));
    }

    #[tokio::test]
    async fn glob_caps_results() {
        let w = world();
        for i in 0..1005 {
            std::fs::write(w.ws.join(format!("f{i:04}.txt")), "").unwrap();
        }
        let out = call(&Glob, &w.ctx, json!({"pattern": "*.txt"})).await;
        assert_eq!(out.content.lines().count(), 1001);
        assert!(
            out.content
                .ends_with("[5 more paths not shown; narrow the pattern]")
        );
    }

    #[tokio::test]
    async fn grep_finds_lines() {
        let w = world();
        populate(&w.ws);
        let out = call(
            &Grep,
            &w.ctx,
            json!({"pattern": "hello", "case_insensitive": true}),
        )
        .await;
        let mut lines: Vec<&str> = out.content.lines().collect();
        lines.sort();
        assert_eq!(
            lines,
            [
                "README.md:1: # Hello",
                "src/deep/lib.rs:1: pub fn hello() {}",
                "src/deep/lib.rs:2: // hello again",
                "src/main.rs:2:     println!(\"Hello\");",
            ],
            "ignored dirs, .git and binary files are skipped"
        );
        let out = call(&Grep, &w.ctx, json!({"pattern": "hello", "glob": "*.rs"})).await;
        assert_eq!(out.content.lines().count(), 2, "{}", out.content);
        let out = call(
            &Grep,
            &w.ctx,
            json!({"pattern": "fn", "path": "src/main.rs"}),
        )
        .await;
        assert_eq!(out.content, "main.rs:1: fn main() {");
        let out = call(&Grep, &w.ctx, json!({"pattern": "(unclosed"})).await;
        assert!(out.is_error && out.content.contains("invalid regular expression"));
        let out = call(&Grep, &w.ctx, json!({"pattern": "zzz"})).await;
        assert!(!out.is_error && out.content.starts_with("no matches"));
    }

    #[tokio::test]
    async fn grep_caps_matches() {
        let w = world();
        let text: String = (0..150).map(|i| format!("match {i}\n")).collect();
        std::fs::write(w.ws.join("many.txt"), text).unwrap();
        let out = call(&Grep, &w.ctx, json!({"pattern": "match"})).await;
        assert_eq!(out.content.lines().count(), 101);
        assert!(
            out.content
                .ends_with("[stopped at 100 matches; narrow the pattern or the path]")
        );
    }
}
