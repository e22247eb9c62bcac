//! Where a path really points, and which zone that is.
//!
//! Every path a tool receives is resolved before any check: relative paths against the
//! agent's workspace, `~` against the home directory, then component by component the way
//! the kernel would, following symlinks (so `link/..` goes to the link target's parent) and
//! `..`. Parts that do not exist yet are appended as written. The tool then operates on the
//! resolved path, so what was checked is what is touched.
//!
//! Zones: the workspace; the agent's own offload folder; other agents' offload folders
//! (never readable); everything else ("outside", which needs a permission).

use std::path::{Component, Path, PathBuf};

/// Symlinks followed in one resolution before giving up (as the kernel's ELOOP).
const MAX_SYMLINKS: usize = 40;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Zone {
    Workspace,
    OwnOffloads,
    ForeignOffloads,
    Outside,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedPath {
    pub path: PathBuf,
    pub zone: Zone,
}

/// The path rules of one agent.
#[derive(Debug, Clone)]
pub struct Sandbox {
    workspace: PathBuf,
    own_offloads: PathBuf,
    offload_root: PathBuf,
    home: Option<PathBuf>,
}

impl Sandbox {
    /// `workspace` must exist; `offload_root` is `<data_dir>/sessions`.
    pub fn new(workspace: &Path, offload_root: &Path, agent_id: &str) -> std::io::Result<Sandbox> {
        let workspace = std::fs::canonicalize(workspace)?;
        let offload_root = resolve(&workspace, offload_root, None)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
        Ok(Sandbox {
            own_offloads: offload_root.join(agent_id),
            offload_root,
            workspace,
            home: std::env::var_os("HOME").map(PathBuf::from),
        })
    }

    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// The agent's own offload folder.
    pub fn own_offloads(&self) -> &Path {
        &self.own_offloads
    }

    /// Resolves `raw` (as a tool received it) and classifies it.
    pub fn resolve(&self, raw: &str) -> Result<ResolvedPath, String> {
        if raw.is_empty() {
            return Err("the path is empty".into());
        }
        if raw.contains('\0') {
            return Err("the path contains a NUL byte".into());
        }
        let path = resolve(&self.workspace, Path::new(raw), self.home.as_deref())?;
        Ok(ResolvedPath {
            zone: self.zone_of(&path),
            path,
        })
    }

    /// The zone of an already resolved path.
    pub fn zone_of(&self, path: &Path) -> Zone {
        // Offload folders first: they are off limits even inside a workspace.
        if path.starts_with(&self.own_offloads) {
            Zone::OwnOffloads
        } else if path.starts_with(&self.offload_root) {
            Zone::ForeignOffloads
        } else if path.starts_with(&self.workspace) {
            Zone::Workspace
        } else {
            Zone::Outside
        }
    }
}

/// Resolves `raw` against `base` (an absolute, resolved directory), following symlinks.
pub fn resolve(base: &Path, raw: &Path, home: Option<&Path>) -> Result<PathBuf, String> {
    let raw = match (raw.strip_prefix("~"), home) {
        (Ok(rest), Some(home)) => home.join(rest),
        _ => raw.to_owned(),
    };
    let mut out = if raw.is_absolute() {
        PathBuf::from("/")
    } else {
        base.to_owned()
    };
    let mut pending: Vec<PathBuf> = raw
        .components()
        .rev()
        .map(|c| PathBuf::from(c.as_os_str()))
        .collect();
    let mut links = 0;
    while let Some(part) = pending.pop() {
        match part.components().next() {
            Some(Component::RootDir) => out = PathBuf::from("/"),
            Some(Component::CurDir) | None => {}
            Some(Component::ParentDir) => {
                out.pop();
            }
            Some(Component::Prefix(_)) => return Err("path prefixes are not supported".into()),
            Some(Component::Normal(name)) => {
                out.push(name);
                let Ok(meta) = std::fs::symlink_metadata(&out) else {
                    continue; // does not exist (yet): taken as written
                };
                if !meta.file_type().is_symlink() {
                    continue;
                }
                links += 1;
                if links > MAX_SYMLINKS {
                    return Err(format!("too many symlinks resolving {}", raw.display()));
                }
                let target = std::fs::read_link(&out)
                    .map_err(|e| format!("cannot read symlink {}: {e}", out.display()))?;
                out.pop();
                if target.is_absolute() {
                    out = PathBuf::from("/");
                }
                // Resolve the target's components next, before the rest of the path.
                for c in target.components().rev() {
                    pending.push(PathBuf::from(c.as_os_str()));
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    struct World {
        _dir: tempfile::TempDir,
        root: PathBuf,
        sandbox: Sandbox,
    }

    fn world() -> World {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let ws = root.join("ws");
        std::fs::create_dir_all(ws.join("src")).unwrap();
        std::fs::create_dir_all(root.join("data/sessions/me")).unwrap();
        std::fs::create_dir_all(root.join("data/sessions/other")).unwrap();
        std::fs::create_dir_all(root.join("outside/deep")).unwrap();
        symlink(root.join("outside"), ws.join("escape")).unwrap();
        symlink("src", ws.join("inner")).unwrap();
        symlink(root.join("data/sessions/other"), ws.join("peek")).unwrap();
        symlink(root.join("nowhere/new"), ws.join("dangling")).unwrap();
        let sandbox = Sandbox::new(&ws, &root.join("data/sessions"), "me").unwrap();
        World {
            _dir: dir,
            root,
            sandbox,
        }
    }

    #[test]
    fn paths_resolve_and_classify() {
        let w = world();
        let ws = w.root.join("ws");
        let cases: Vec<(String, PathBuf, Zone)> = vec![
            ("a.txt".into(), ws.join("a.txt"), Zone::Workspace),
            ("./src/../b".into(), ws.join("b"), Zone::Workspace),
            (
                "new/dir/file".into(),
                ws.join("new/dir/file"),
                Zone::Workspace,
            ),
            ("../ws/src".into(), ws.join("src"), Zone::Workspace),
            ("..".into(), w.root.clone(), Zone::Outside),
            (
                "../outside/x".into(),
                w.root.join("outside/x"),
                Zone::Outside,
            ),
            // a symlink out of the workspace is outside, and `..` after it follows the target
            (
                "escape/deep".into(),
                w.root.join("outside/deep"),
                Zone::Outside,
            ),
            ("escape/..".into(), w.root.clone(), Zone::Outside),
            ("inner/x.rs".into(), ws.join("src/x.rs"), Zone::Workspace),
            (
                "peek/tool_1.offload".into(),
                w.root.join("data/sessions/other/tool_1.offload"),
                Zone::ForeignOffloads,
            ),
            (
                w.root
                    .join("data/sessions/me/tool_2.offload")
                    .display()
                    .to_string(),
                w.root.join("data/sessions/me/tool_2.offload"),
                Zone::OwnOffloads,
            ),
            (
                "dangling/f".into(),
                w.root.join("nowhere/new/f"),
                Zone::Outside,
            ),
            (
                "/etc/../etc/passwd".into(),
                PathBuf::from("/etc/passwd"),
                Zone::Outside,
            ),
        ];
        for (raw, path, zone) in cases {
            let got = w.sandbox.resolve(&raw).unwrap();
            assert_eq!(got, ResolvedPath { path, zone }, "{raw}");
        }
    }

    #[test]
    fn bad_paths_and_loops_are_errors() {
        let w = world();
        let ws = w.root.join("ws");
        symlink(ws.join("loop_b"), ws.join("loop_a")).unwrap();
        symlink(ws.join("loop_a"), ws.join("loop_b")).unwrap();
        assert!(
            w.sandbox
                .resolve("loop_a/x")
                .unwrap_err()
                .contains("too many symlinks")
        );
        assert!(w.sandbox.resolve("").is_err());
        assert!(w.sandbox.resolve("a\0b").is_err());
    }
}
