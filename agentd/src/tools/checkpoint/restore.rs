//! Putting a workspace back to a snapshot: only the paths the agent's runs changed, and of
//! those only the ones nobody changed since.
//!
//! Three manifests decide: `target` (before the first reverted turn), `latest` (after the
//! agent's last step) and `current` (the workspace now). A path whose `target` and
//! `latest` agree was not changed by the runs and is left alone. A path the runs changed
//! whose current state is not `latest` was changed by someone else since: a conflict,
//! named and left alone. The rest go back to `target`: contents and permission bits
//! written back, what the runs created removed, what they deleted recreated with its
//! folders.
//!
//! Every write goes through folders opened one component at a time from `/` with
//! `O_NOFOLLOW` (as `sandbox::open_resolved`), and a file is written under a temporary
//! name and renamed over its path: a link swapped in anywhere on the way fails the path
//! (named as a conflict) instead of leading out of the workspace, and a hard link is
//! replaced, never written through.

use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::path::Path;

use nix::errno::Errno;
use nix::fcntl::{AT_FDCWD, OFlag, openat, renameat};
use nix::sys::stat::{Mode, fchmod, mkdirat};
use nix::unistd::{UnlinkatFlags, symlinkat, unlinkat};

use super::manifest::{Entry, Kind, Manifest, same};
use super::{CheckpointError, Checkpoints};

/// A path a revert left alone, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    pub path: String,
    pub reason: String,
}

/// What a revert did to the files.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reverted {
    /// The paths put back (written, recreated or removed), sorted.
    pub restored: Vec<String>,
    pub conflicts: Vec<Conflict>,
}

/// What to do with one path.
#[derive(Debug)]
struct Change<'a> {
    path: &'a str,
    target: Option<&'a Entry>,
    current: Option<&'a Entry>,
}

const CHANGED_SINCE: &str = "changed since the agent's last step (by someone else); left as it is";

/// The paths to put back and the conflicts, in path order.
fn plan<'a>(
    target: &'a Manifest,
    latest: &'a Manifest,
    current: &'a Manifest,
) -> (Vec<Change<'a>>, Vec<Conflict>) {
    let mut paths: Vec<&str> = target
        .entries
        .keys()
        .chain(latest.entries.keys())
        .chain(current.entries.keys())
        .map(String::as_str)
        .collect();
    paths.sort_unstable();
    paths.dedup();
    let mut changes = Vec::new();
    let mut conflicts = Vec::new();
    for path in paths {
        let (t, l, c) = (
            target.entries.get(path),
            latest.entries.get(path),
            current.entries.get(path),
        );
        if same(t, l) || same(t, c) {
            continue;
        }
        if !same(c, l) {
            conflicts.push(Conflict {
                path: path.to_owned(),
                reason: CHANGED_SINCE.to_owned(),
            });
        } else if let Some(why) = t.and_then(|t| t.not_kept.as_deref()) {
            conflicts.push(Conflict {
                path: path.to_owned(),
                reason: format!("its content before was not kept ({why}); left as it is"),
            });
        } else if !plain(path) {
            conflicts.push(Conflict {
                path: path.to_owned(),
                reason: "not a plain relative path; left as it is".to_owned(),
            });
        } else {
            changes.push(Change {
                path,
                target: t,
                current: c,
            });
        }
    }
    (changes, conflicts)
}

/// A path of plain names only (no `.`, `..`, empty part or NUL).
fn plain(path: &str) -> bool {
    !path.is_empty()
        && !path.contains('\0')
        && path
            .split('/')
            .all(|p| !p.is_empty() && p != "." && p != "..")
}

impl Checkpoints {
    /// Puts the workspace back to `target` where the runs (up to `latest`) changed it
    /// and nobody did since. `latest`: `None` when the last step's snapshot is missing;
    /// then the current state counts as the runs' (no conflict can be seen).
    pub fn revert(
        &self,
        target: &Manifest,
        latest: Option<&Manifest>,
    ) -> Result<Reverted, CheckpointError> {
        let current = self.scan(latest.or(Some(target)))?;
        let latest = latest.unwrap_or(&current);
        let (changes, conflicts) = plan(target, latest, &current);
        let mut done = Reverted {
            restored: Vec::new(),
            conflicts,
        };
        let root = open_dir(self.workspace())
            .map_err(|e| CheckpointError::Io(format!("cannot open the workspace: {e}")))?;
        // Removals first, children before their folder (reverse path order).
        for change in changes.iter().rev() {
            let Some(c) = change.current else { continue };
            if change.target.is_some_and(|t| t.kind == c.kind) {
                continue;
            }
            let outcome = remove(&root, change.path, c.kind);
            self.record(&mut done, change.path, outcome, change.target.is_none());
        }
        // Then what the target has, folders before what they hold (path order).
        for change in &changes {
            let Some(t) = change.target else { continue };
            let outcome = self.put(&root, change.path, t, change.current);
            self.record(&mut done, change.path, outcome, true);
        }
        done.restored.sort();
        done.restored.dedup();
        done.conflicts.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(done)
    }

    fn record(&self, done: &mut Reverted, path: &str, outcome: Result<(), String>, last: bool) {
        match outcome {
            Ok(()) if last => done.restored.push(path.to_owned()),
            Ok(()) => {}
            Err(reason) => done.conflicts.push(Conflict {
                path: path.to_owned(),
                reason,
            }),
        }
    }

    /// Writes `t` at `path` (its folders created as needed).
    fn put(
        &self,
        root: &OwnedFd,
        path: &str,
        t: &Entry,
        current: Option<&Entry>,
    ) -> Result<(), String> {
        let (dir, name) = parent_of(root, path)?;
        let mode = Mode::from_bits_truncate(t.mode & 0o777);
        match t.kind {
            Kind::Dir => {
                match mkdirat(&dir, name, mode) {
                    Ok(()) | Err(Errno::EEXIST) => {}
                    Err(e) => return Err(format!("cannot create the folder: {e}")),
                }
                let fd = openat(&dir, name, dir_flags(), Mode::empty())
                    .map_err(|e| format!("cannot open the folder: {e}"))?;
                fchmod(&fd, mode).map_err(|e| format!("cannot set its mode: {e}"))
            }
            Kind::File => {
                let hash = t.hash.as_deref().ok_or("its content was not kept")?;
                let data = self.blob(hash).map_err(|e| e.to_string())?;
                let tmp = temp_name();
                let created = OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL;
                let fd = openat(&dir, tmp.as_str(), created | OFlag::O_CLOEXEC, mode)
                    .map_err(|e| format!("cannot write it: {e}"))?;
                let mut file = std::fs::File::from(fd);
                let written = std::io::Write::write_all(&mut file, &data)
                    .map_err(|e| e.to_string())
                    .and_then(|()| fchmod(&file, mode).map_err(|e| e.to_string()))
                    .and_then(|()| {
                        renameat(&dir, tmp.as_str(), &dir, name).map_err(|e| e.to_string())
                    });
                if let Err(e) = written {
                    let _ = unlinkat(&dir, tmp.as_str(), UnlinkatFlags::NoRemoveDir);
                    return Err(format!("cannot write it: {e}"));
                }
                Ok(())
            }
            Kind::Symlink => {
                let target = t.target.as_deref().ok_or("its link target was not kept")?;
                if current.is_some_and(|c| c.kind == Kind::Dir) {
                    return Err("a folder is where the link was; left as it is".into());
                }
                let tmp = temp_name();
                symlinkat(target, &dir, tmp.as_str())
                    .map_err(|e| format!("cannot create the link: {e}"))?;
                renameat(&dir, tmp.as_str(), &dir, name).map_err(|e| {
                    let _ = unlinkat(&dir, tmp.as_str(), UnlinkatFlags::NoRemoveDir);
                    format!("cannot create the link: {e}")
                })
            }
        }
    }
}

/// Removes what is at `path` (a folder only when empty).
fn remove(root: &OwnedFd, path: &str, kind: Kind) -> Result<(), String> {
    let (dir, name) = parent_of(root, path)?;
    let how = if kind == Kind::Dir {
        UnlinkatFlags::RemoveDir
    } else {
        UnlinkatFlags::NoRemoveDir
    };
    match unlinkat(&dir, name, how) {
        Ok(()) | Err(Errno::ENOENT) => Ok(()),
        Err(Errno::ENOTEMPTY | Errno::EEXIST) => {
            Err("a folder the runs created still holds files undo does not track (ignored ones); left as it is".into())
        }
        Err(e) => Err(format!("cannot remove it: {e}")),
    }
}

fn dir_flags() -> OFlag {
    OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC
}

fn temp_name() -> String {
    format!(".agentd-undo-{}", uuid::Uuid::new_v4())
}

/// Opens an absolute path of folders from `/`, one component at a time, following no
/// link (the workspace is canonical: a link in it now was swapped in).
fn open_dir(path: &Path) -> Result<OwnedFd, String> {
    let mut fd = openat(AT_FDCWD, "/", dir_flags(), Mode::empty()).map_err(|e| e.to_string())?;
    for part in path.components().skip(1) {
        let std::path::Component::Normal(name) = part else {
            return Err(format!("{} is not a resolved path", path.display()));
        };
        fd = openat(&fd, name, dir_flags(), Mode::empty())
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(fd)
}

/// The folder holding `path` (created as needed, never through a link) and its name.
fn parent_of<'p>(root: &OwnedFd, path: &'p str) -> Result<(OwnedFd, &'p OsStr), String> {
    let mut parts: Vec<&str> = path.split('/').collect();
    let name = parts.pop().ok_or("an empty path")?;
    let mut dir = nix::unistd::dup(root).map_err(|e| e.to_string())?;
    for part in parts {
        dir = match openat(&dir, part, dir_flags(), Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::ENOENT) => {
                match mkdirat(&dir, part, Mode::from_bits_truncate(0o755)) {
                    Ok(()) | Err(Errno::EEXIST) => {}
                    Err(e) => return Err(format!("cannot create the folder {part}: {e}")),
                }
                openat(&dir, part, dir_flags(), Mode::empty())
                    .map_err(|e| format!("cannot open the folder {part}: {e}"))?
            }
            Err(Errno::ELOOP | Errno::ENOTDIR) => {
                return Err(format!(
                    "{part} on the way is a link or not a folder now; not followed, left as it is"
                ));
            }
            Err(e) => return Err(format!("cannot open the folder {part}: {e}")),
        };
    }
    Ok((dir, OsStr::new(name)))
}
