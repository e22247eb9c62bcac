//! File tools: `read_file` (pages, never offloaded), `write_file`, `edit_file` (exact
//! replacement, returns a diff), `list_directory` and `directory_tree`.

use std::fmt::Write as _;
use std::io::{BufRead, Read, Seek, Write as _};
use std::path::Path;

use agent_proto::PermissionLevel;
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;

use super::args::TypedTool;
use super::{checked_path, resolve_path};
use crate::tools::sandbox::{OpenFor, Sandbox, open_resolved};
use crate::tools::{Access, ToolContext, ToolOutput};

const DEFAULT_LINES: u64 = 2000;
const MAX_LINE_CHARS: usize = 2000;
/// Most output of one `read_file` call.
const MAX_READ_BYTES: usize = 256 * 1024;
const MAX_LIST_ENTRIES: usize = 1000;
const MAX_TREE_ENTRIES: usize = 500;
const MAX_TREE_DEPTH: u64 = 3;

fn paths_access(
    level: PermissionLevel,
    path: Option<&str>,
    ctx: &ToolContext,
) -> Result<Access, String> {
    Ok(Access::Paths {
        level,
        paths: vec![resolve_path(path, ctx)?],
    })
}

/// Runs blocking file work off the async threads.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T, String> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| format!("the file operation failed: {e}"))
}

#[derive(Debug)]
pub(super) struct ReadFile;

/// `read_file`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ReadFileArgs {
    /// File path (relative to the workspace or absolute).
    path: String,
    /// First line to read (1-based).
    #[schemars(range(min = 1))]
    offset: Option<u64>,
    /// Number of lines to read (default 2000).
    #[schemars(range(min = 1))]
    limit: Option<u64>,
}

impl TypedTool for ReadFile {
    type Args = ReadFileArgs;

    fn name(&self) -> &'static str {
        "read_file"
    }

    fn description(&self) -> &'static str {
        "Read a text file, with line numbers. Reads `limit` lines (default 2000) from line \
         `offset` (1-based, default 1); lines over 2000 characters are cut. Says what was \
         left out and how to read on. Use it to page through offloaded tool output too."
    }

    fn level(&self) -> PermissionLevel {
        PermissionLevel::Read
    }

    fn offloadable(&self) -> bool {
        false
    }

    fn access(&self, args: &ReadFileArgs, ctx: &ToolContext) -> Result<Access, String> {
        paths_access(PermissionLevel::Read, Some(&args.path), ctx)
    }

    fn run<'a>(&'a self, args: ReadFileArgs, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let path = match checked_path(ctx) {
                Ok(p) => p,
                Err(e) => return ToolOutput::error(e),
            };
            let offset = args.offset.unwrap_or(1).max(1);
            let limit = args.limit.unwrap_or(DEFAULT_LINES).max(1);
            match blocking(move || read_lines(&path, offset, limit)).await {
                Ok(Ok(text)) => ToolOutput::ok(text),
                Ok(Err(e)) | Err(e) => ToolOutput::error(e),
            }
        })
    }
}

fn read_lines(path: &Path, offset: u64, limit: u64) -> Result<String, String> {
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()) {
        return Err(format!(
            "{} is a directory; use list_directory",
            path.display()
        ));
    }
    let file = open_resolved(path, OpenFor::Read)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?
        .file;
    let mut reader = std::io::BufReader::new(file);
    {
        let head = reader
            .fill_buf()
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let probe = &head[..head.len().min(8192)];
        if probe.contains(&0) {
            return Err(format!(
                "{} is a binary file; read_file reads text",
                path.display()
            ));
        }
    }
    let mut out = String::new();
    let mut line = Vec::new();
    let mut number: u64 = 0;
    let mut shown = 0u64;
    let mut cut_lines = 0u64;
    let mut stopped_at: Option<u64> = None;
    let last = offset.saturating_add(limit) - 1;
    loop {
        line.clear();
        let n = reader
            .read_until(b'\n', &mut line)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        if n == 0 {
            break;
        }
        number += 1;
        if number < offset || number > last || stopped_at.is_some() {
            continue;
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\n', '\r']);
        let chars = text.chars().count();
        let shown_text: String = if chars > MAX_LINE_CHARS {
            cut_lines += 1;
            let head: String = text.chars().take(MAX_LINE_CHARS).collect();
            format!("{head}... [line cut: {chars} chars]")
        } else {
            text.to_owned()
        };
        if out.len() + shown_text.len() > MAX_READ_BYTES {
            stopped_at = Some(number);
            continue;
        }
        let _ = writeln!(out, "{number:>6}\t{shown_text}");
        shown += 1;
    }
    let total = number;
    if total == 0 {
        return Ok(format!("[{} is empty]", path.display()));
    }
    if offset > total {
        return Err(format!(
            "offset {offset} is past the end of {} ({total} lines)",
            path.display()
        ));
    }
    let first = offset;
    let end = first + shown - 1;
    let mut footer = format!("[lines {first}-{end} of {total}");
    if let Some(next) = stopped_at {
        let _ = write!(
            footer,
            "; output cut at 256 KiB, continue with offset={next}"
        );
    } else if end < total {
        let _ = write!(footer, "; continue with offset={}", end + 1);
    }
    if cut_lines > 0 {
        let _ = write!(
            footer,
            "; {cut_lines} long lines cut at {MAX_LINE_CHARS} chars"
        );
    }
    footer.push(']');
    out.push_str(&footer);
    Ok(out)
}

#[derive(Debug)]
pub(super) struct WriteFile;

/// `write_file`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct WriteFileArgs {
    /// File path (relative to the workspace or absolute).
    path: String,
    /// The whole new content.
    content: String,
}

impl TypedTool for WriteFile {
    type Args = WriteFileArgs;

    fn name(&self) -> &'static str {
        "write_file"
    }

    fn description(&self) -> &'static str {
        "Write a text file (created with its parent folders, or overwritten)."
    }

    fn level(&self) -> PermissionLevel {
        PermissionLevel::Write
    }

    fn access(&self, args: &WriteFileArgs, ctx: &ToolContext) -> Result<Access, String> {
        paths_access(PermissionLevel::Write, Some(&args.path), ctx)
    }

    fn run<'a>(&'a self, args: WriteFileArgs, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let path = match checked_path(ctx) {
                Ok(p) => p,
                Err(e) => return ToolOutput::error(e),
            };
            let content = args.content;
            let result = blocking(move || {
                let cannot = |e: String| format!("cannot write {}: {e}", path.display());
                let opened = open_resolved(&path, OpenFor::Write).map_err(cannot)?;
                let mut file = opened.file;
                file.set_len(0)
                    .and_then(|()| file.write_all(content.as_bytes()))
                    .map_err(|e| cannot(e.to_string()))?;
                let verb = if opened.created {
                    "created"
                } else {
                    "overwrote"
                };
                Ok(format!(
                    "{verb} {} ({} bytes)",
                    path.display(),
                    content.len()
                ))
            })
            .await;
            match result {
                Ok(Ok(text)) => ToolOutput::ok(text),
                Ok(Err(e)) | Err(e) => ToolOutput::error(e),
            }
        })
    }
}

#[derive(Debug)]
pub(super) struct EditFile;

/// `edit_file`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct EditFileArgs {
    /// File path (relative to the workspace or absolute).
    path: String,
    /// The exact text to replace.
    old_string: String,
    /// The text to put in its place.
    new_string: String,
    /// Replace every occurrence (default false).
    #[serde(default)]
    replace_all: bool,
}

impl TypedTool for EditFile {
    type Args = EditFileArgs;

    fn name(&self) -> &'static str {
        "edit_file"
    }

    fn description(&self) -> &'static str {
        "Replace exact text in a file. `old_string` must occur exactly once (include enough \
         surrounding lines to make it unique) unless `replace_all` is true. Returns the diff."
    }

    fn level(&self) -> PermissionLevel {
        PermissionLevel::Write
    }

    fn access(&self, args: &EditFileArgs, ctx: &ToolContext) -> Result<Access, String> {
        paths_access(PermissionLevel::Write, Some(&args.path), ctx)
    }

    fn run<'a>(&'a self, args: EditFileArgs, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let path = match checked_path(ctx) {
                Ok(p) => p,
                Err(e) => return ToolOutput::error(e),
            };
            let EditFileArgs {
                old_string,
                new_string,
                replace_all,
                ..
            } = args;
            match blocking(move || edit(&path, &old_string, &new_string, replace_all)).await {
                Ok(Ok(text)) => ToolOutput::ok(text),
                Ok(Err(e)) | Err(e) => ToolOutput::error(e),
            }
        })
    }
}

fn edit(path: &Path, old: &str, new: &str, all: bool) -> Result<String, String> {
    if old.is_empty() {
        return Err("old_string is empty; use write_file to write a whole file".into());
    }
    if old == new {
        return Err("old_string and new_string are the same: nothing to change".into());
    }
    let mut file = open_resolved(path, OpenFor::Edit)
        .map_err(|e| format!("cannot edit {}: {e}", path.display()))?
        .file;
    let mut before = String::new();
    file.read_to_string(&mut before)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let count = before.matches(old).count();
    let after = match (count, all) {
        (0, _) => {
            return Err(format!(
                "old_string was not found in {}; read the file and copy the text exactly",
                path.display()
            ));
        }
        (1, _) | (_, true) => before.replace(old, new),
        (n, false) => {
            return Err(format!(
                "old_string occurs {n} times in {}; include more surrounding text to make it unique, or set replace_all",
                path.display()
            ));
        }
    };
    file.rewind()
        .and_then(|()| file.set_len(0))
        .and_then(|()| file.write_all(after.as_bytes()))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    let name = path.display().to_string();
    let diff = similar::TextDiff::from_lines(&before, &after)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{name}"), &format!("b/{name}"))
        .to_string();
    let what = if count == 1 {
        "1 replacement".to_owned()
    } else {
        format!("{count} replacements")
    };
    Ok(format!("edited {name} ({what})\n{diff}"))
}

#[derive(Debug)]
pub(super) struct ListDirectory;

/// `list_directory`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ListDirectoryArgs {
    /// Directory (default: the workspace).
    path: Option<String>,
}

impl TypedTool for ListDirectory {
    type Args = ListDirectoryArgs;

    fn name(&self) -> &'static str {
        "list_directory"
    }

    fn description(&self) -> &'static str {
        "List a directory's entries (directories end with `/`, symlinks show their target)."
    }

    fn level(&self) -> PermissionLevel {
        PermissionLevel::Read
    }

    fn access(&self, args: &ListDirectoryArgs, ctx: &ToolContext) -> Result<Access, String> {
        paths_access(PermissionLevel::Read, args.path.as_deref(), ctx)
    }

    fn run<'a>(
        &'a self,
        _args: ListDirectoryArgs,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let path = match checked_path(ctx) {
                Ok(p) => p,
                Err(e) => return ToolOutput::error(e),
            };
            let sandbox = ctx.sandbox.clone();
            match blocking(move || list(&path, &sandbox)).await {
                Ok(Ok(text)) => ToolOutput::ok(text),
                Ok(Err(e)) | Err(e) => ToolOutput::error(e),
            }
        })
    }
}

/// A directory's entries, sorted: (display name, is a directory). Leaves out what a walk
/// from `base` must not show (the daemon's data dir, see `Sandbox::walk_skips`).
fn entries(dir: &Path, base: &Path, sandbox: &Sandbox) -> Result<Vec<(String, bool)>, String> {
    let read = std::fs::read_dir(dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
    let mut out = Vec::new();
    for entry in read.flatten() {
        if sandbox.walk_skips(base, &entry.path()) {
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_symlink() {
            let target = std::fs::read_link(entry.path())
                .map(|t| t.display().to_string())
                .unwrap_or_else(|_| "?".into());
            out.push((format!("{name} -> {target}"), false));
        } else if kind.is_dir() {
            out.push((format!("{name}/"), true));
        } else {
            out.push((name, false));
        }
    }
    out.sort();
    Ok(out)
}

fn list(dir: &Path, sandbox: &Sandbox) -> Result<String, String> {
    if !dir.is_dir() {
        return Err(format!("{} is not a directory", dir.display()));
    }
    let all = entries(dir, dir, sandbox)?;
    if all.is_empty() {
        return Ok(format!("[{} is empty]", dir.display()));
    }
    let mut out: Vec<String> = all
        .iter()
        .take(MAX_LIST_ENTRIES)
        .map(|(n, _)| n.clone())
        .collect();
    if all.len() > MAX_LIST_ENTRIES {
        out.push(format!(
            "[{} more entries not shown]",
            all.len() - MAX_LIST_ENTRIES
        ));
    }
    Ok(out.join("\n"))
}

#[derive(Debug)]
pub(super) struct DirectoryTree;

/// `directory_tree`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct DirectoryTreeArgs {
    /// Directory (default: the workspace).
    path: Option<String>,
    /// Levels to show (default 1, at most 3).
    depth: Option<u64>,
}

impl TypedTool for DirectoryTree {
    type Args = DirectoryTreeArgs;

    fn name(&self) -> &'static str {
        "directory_tree"
    }

    fn description(&self) -> &'static str {
        "Show a directory as a tree, `depth` levels deep (default 1, at most 3; 1 lists the \
         directory's entries, 2 also their children). Skips .git."
    }

    fn level(&self) -> PermissionLevel {
        PermissionLevel::Read
    }

    fn access(&self, args: &DirectoryTreeArgs, ctx: &ToolContext) -> Result<Access, String> {
        paths_access(PermissionLevel::Read, args.path.as_deref(), ctx)
    }

    fn run<'a>(
        &'a self,
        args: DirectoryTreeArgs,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let path = match checked_path(ctx) {
                Ok(p) => p,
                Err(e) => return ToolOutput::error(e),
            };
            let asked = args.depth.unwrap_or(1);
            let sandbox = ctx.sandbox.clone();
            match blocking(move || tree(&path, asked, &sandbox)).await {
                Ok(Ok(text)) => ToolOutput::ok(text),
                Ok(Err(e)) | Err(e) => ToolOutput::error(e),
            }
        })
    }
}

fn tree(root: &Path, asked: u64, sandbox: &Sandbox) -> Result<String, String> {
    if !root.is_dir() {
        return Err(format!("{} is not a directory", root.display()));
    }
    let mut walk = TreeWalk {
        root,
        sandbox,
        depth: asked.min(MAX_TREE_DEPTH),
        out: format!("{}/\n", root.display()),
        count: 0,
        cut: false,
    };
    walk.walk(root, 1, "");
    let mut out = walk.out;
    if walk.cut {
        let _ = writeln!(
            out,
            "[stopped at {MAX_TREE_ENTRIES} entries; ask for a smaller depth or a subdirectory]"
        );
    }
    if asked > MAX_TREE_DEPTH {
        let _ = writeln!(
            out,
            "[depth {asked} is over the maximum; showing depth {MAX_TREE_DEPTH}]"
        );
    }
    Ok(out.trim_end().to_owned())
}

/// One `directory_tree` walk: where it started, how deep it goes, what it wrote so far.
struct TreeWalk<'a> {
    root: &'a Path,
    sandbox: &'a Sandbox,
    depth: u64,
    out: String,
    count: usize,
    cut: bool,
}

impl TreeWalk<'_> {
    fn walk(&mut self, dir: &Path, level: u64, prefix: &str) {
        if level > self.depth || self.cut {
            return;
        }
        let Ok(all) = entries(dir, self.root, self.sandbox) else {
            return;
        };
        let all: Vec<(String, bool)> = all.into_iter().filter(|(n, _)| n != ".git/").collect();
        for (i, (name, is_dir)) in all.iter().enumerate() {
            if self.count >= MAX_TREE_ENTRIES {
                self.cut = true;
                return;
            }
            self.count += 1;
            let last = i + 1 == all.len();
            let _ = writeln!(
                self.out,
                "{prefix}{}{name}",
                if last { "└── " } else { "├── " }
            );
            if *is_dir {
                let child_prefix = format!("{prefix}{}", if last { "    " } else { "│   " });
                let child = dir.join(name.trim_end_matches('/'));
                self.walk(&child, level + 1, &child_prefix);
            }
        }
    }
}

#[cfg(test)]
mod tests;
