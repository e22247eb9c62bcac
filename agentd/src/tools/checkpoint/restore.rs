//! Putting a workspace back to before a run of turns: only the paths those turns changed,
//! and of those only the ones nobody changed since.
//!
//! Each turn is a pair of snapshots (before its first call that could change files, after
//! its last step). A path is the turns' when some turn's pair differs on it; its target is
//! its state in the "before" of the first turn that changed it, and its expected state is
//! its state in the "after" of the last turn that changed it. A path whose current state is
//! not the expected one was changed by someone else since (by hand, between two turns or
//! after them): a conflict, named and left alone. The rest go back to their target:
//! contents and permission bits written back, what the turns created removed, what they
//! deleted recreated with its folders. Paths the turns never changed are never touched.
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

use std::collections::BTreeMap;

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

const CHANGED_SINCE: &str =
    "changed since the agent's turns changed it (by someone else); left as it is";

/// What a run of turns changed: per path, its state before the first turn that changed it
/// and after the last one.
#[derive(Debug, Default)]
pub struct TurnChanges {
    paths: BTreeMap<String, (Option<Entry>, Option<Entry>)>,
    /// The newest manifest seen (its hashes are reused when the workspace is scanned).
    last: Option<Manifest>,
}

impl TurnChanges {
    /// Adds the next turn, its snapshots before and after.
    pub fn add(&mut self, before: &Manifest, after: Manifest) {
        let mut keys: Vec<&String> = before.entries.keys().chain(after.entries.keys()).collect();
        keys.sort_unstable();
        keys.dedup();
        for path in keys {
            let (b, a) = (before.entries.get(path), after.entries.get(path));
            if same(b, a) {
                continue;
            }
            let first = b.cloned();
            let slot = self.paths.entry(path.clone()).or_insert((first, None));
            slot.1 = a.cloned();
        }
        self.last = Some(after);
    }
}

/// The paths to put back and the conflicts, in path order.
fn plan<'a>(changes: &'a TurnChanges, current: &'a Manifest) -> (Vec<Change<'a>>, Vec<Conflict>) {
    let mut todo = Vec::new();
    let mut conflicts = Vec::new();
    for (path, (target, expected)) in &changes.paths {
        let (t, e, c) = (
            target.as_ref(),
            expected.as_ref(),
            current.entries.get(path),
        );
        if same(t, c) {
            continue;
        }
        let conflict = if !same(c, e) {
            Some(CHANGED_SINCE.to_owned())
        } else if let Some(why) = t.and_then(|t| t.not_kept.as_deref()) {
            Some(format!(
                "its content before was not kept ({why}); left as it is"
            ))
        } else if !plain(path) {
            Some("not a plain relative path; left as it is".to_owned())
        } else {
            None
        };
        match conflict {
            Some(reason) => conflicts.push(Conflict {
                path: path.clone(),
                reason,
            }),
            None => todo.push(Change {
                path,
                target: t,
                current: c,
            }),
        }
    }
    (todo, conflicts)
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
    /// Puts back what `changes` says the turns changed, where nobody changed it since.
    pub fn revert(&self, changes: &TurnChanges) -> Result<Reverted, CheckpointError> {
        let current = self.scan(changes.last.as_ref())?;
        let (changes, conflicts) = plan(changes, &current);
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
