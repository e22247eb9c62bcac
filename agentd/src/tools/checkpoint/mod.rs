//! Snapshots of an agent's workspace, so a turn's changes can be shown (`getTurnDiff`) and
//! undone (`revertTo`), whatever made them: `write_file`, `edit_file`, a bash command, an
//! MCP tool.
//!
//! Our own small content-addressed store, not git: git may be absent, a user's repository
//! must never be touched (its index, its objects, its hooks), and a workspace need not be a
//! repository at all. A snapshot walks the workspace the way the search tools do (the
//! `ignore` crate: `.gitignore`, `.ignore` and `.git/info/exclude` honoured even without
//! a repository, hidden files included, `.git` skipped, links never followed, the daemon's
//! data dir never entered) and records per path its kind, permission bits and content
//! hash (SHA-256), the content stored once per hash. A file whose size, times and inode
//! match the previous snapshot keeps its hash without being read, so a snapshot of an
//! unchanged tree costs one `lstat` per path; a tree equal to the previous snapshot reuses
//! its id and writes nothing.
//!
//! Layout, in the agent's own folder (`<data_dir>/sessions/<agent>/checkpoints/`, removed
//! with the agent): `blobs/<2 hex>/<hash>` and `snapshots/<id>.json` (a [`Manifest`];
//! ids are UUID v7, so their names sort by age). Bounds: a file over
//! [`MAX_FILE_BYTES`] is recorded without its content (named in a diff and a revert as
//! not restorable); a workspace of more than [`MAX_ENTRIES`] tracked paths is not
//! snapshotted (undo answers why); past [`MAX_STORE_BYTES`] the oldest snapshots are
//! dropped (undo past them answers [`CheckpointError::Dropped`]). Which snapshot belongs
//! to which message is the store's (`store::checkpoints`); the loop takes them
//! (`agent_loop::checkpoint`); this module does file I/O only and is blocking: callers run
//! it on the blocking pool.

mod diff;
mod manifest;
mod restore;

use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

pub use diff::{ChangeStatus, FileChange};
pub use manifest::{Entry, Kind, Manifest};
pub use restore::{Conflict, Reverted, TurnChanges};

use super::sandbox::{OpenFor, Sandbox, open_resolved};

/// A file bigger than this is recorded without its content: it cannot be restored.
pub const MAX_FILE_BYTES: u64 = 4 << 20;
/// A workspace with more tracked paths than this is not snapshotted.
pub const MAX_ENTRIES: usize = 20_000;
/// What one agent's snapshots may take on disk (contents and manifests); past it the
/// oldest snapshots are dropped.
pub const MAX_STORE_BYTES: u64 = 512 << 20;

/// Why a snapshot could not be taken or read. Each says what the user can do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckpointError {
    /// The snapshot was dropped to keep the storage bound: changes before it cannot be
    /// undone any more.
    #[error(
        "the snapshot {0} was dropped to keep this agent's undo storage under {MAX_STORE_BYTES} bytes (oldest first); changes from then cannot be undone"
    )]
    Dropped(String),
    /// The workspace is too big to track.
    #[error(
        "the workspace has more than {MAX_ENTRIES} files and folders that are not ignored; undo does not track it (add the bulk to .gitignore)"
    )]
    TooManyFiles,
    #[error("{0}")]
    Io(String),
}

fn io(what: impl std::fmt::Display, e: impl std::fmt::Display) -> CheckpointError {
    CheckpointError::Io(format!("{what}: {e}"))
}

/// The snapshots of one agent's workspace.
#[derive(Debug, Clone)]
pub struct Checkpoints {
    root: PathBuf,
    sandbox: Sandbox,
    /// [`MAX_STORE_BYTES`], smaller in tests.
    max_store_bytes: u64,
}

impl Checkpoints {
    /// The snapshots of the agent whose path rules are `sandbox`.
    pub fn new(sandbox: &Sandbox) -> Checkpoints {
        Checkpoints {
            root: sandbox.own_offloads().join("checkpoints"),
            sandbox: sandbox.clone(),
            max_store_bytes: MAX_STORE_BYTES,
        }
    }

    pub fn workspace(&self) -> &Path {
        self.sandbox.workspace()
    }

    fn snapshot_path(&self, id: &str) -> Result<PathBuf, CheckpointError> {
        if id.is_empty() || !id.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
            return Err(CheckpointError::Io(format!("{id:?} is not a snapshot id")));
        }
        Ok(self.root.join("snapshots").join(format!("{id}.json")))
    }

    fn blob_path(&self, hash: &str) -> Result<PathBuf, CheckpointError> {
        if hash.len() != 64 || !hash.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(CheckpointError::Io(format!(
                "{hash:?} is not a content hash"
            )));
        }
        Ok(self.root.join("blobs").join(&hash[..2]).join(hash))
    }

    /// Takes a snapshot of the workspace now and returns its id: `previous` itself when
    /// the tree is what it recorded (nothing written), else a new one.
    pub fn take(&self, previous: Option<&str>) -> Result<String, CheckpointError> {
        let before = previous.and_then(|id| self.load(id).ok());
        let manifest = self.collect(before.as_ref(), true)?;
        if let (Some(id), Some(before)) = (previous, &before)
            && before.same_tree(&manifest)
        {
            return Ok(id.to_owned());
        }
        let id = uuid::Uuid::now_v7().to_string();
        let text = serde_json::to_vec(&manifest).map_err(|e| io("a manifest", e))?;
        write_new(&self.snapshot_path(&id)?, &text)?;
        self.enforce_cap(&id);
        Ok(id)
    }

    /// The workspace as it is now, without keeping any content (hashes reused from
    /// `reuse` where the stat fields match).
    pub fn scan(&self, reuse: Option<&Manifest>) -> Result<Manifest, CheckpointError> {
        self.collect(reuse, false)
    }

    /// A snapshot's manifest.
    pub fn load(&self, id: &str) -> Result<Manifest, CheckpointError> {
        let path = self.snapshot_path(id)?;
        let text = match std::fs::read(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(CheckpointError::Dropped(id.to_owned()));
            }
            Err(e) => return Err(io(path.display(), e)),
        };
        let manifest: Manifest =
            serde_json::from_slice(&text).map_err(|e| io(path.display(), e))?;
        if manifest.format != manifest::FORMAT {
            return Err(CheckpointError::Io(format!(
                "{} has format {}, this daemon reads {}",
                path.display(),
                manifest.format,
                manifest::FORMAT
            )));
        }
        Ok(manifest)
    }

    /// What a run of turns changed: each turn its "before" snapshot and its "after" one
    /// (`None` when a crash cut it: then the next turn's "before", or for the last turn
    /// the workspace as it is now).
    pub fn turn_changes(
        &self,
        turns: &[(String, Option<String>)],
    ) -> Result<TurnChanges, CheckpointError> {
        let mut changes = TurnChanges::default();
        for (i, (before, after)) in turns.iter().enumerate() {
            let before = self.load(before)?;
            let after = match (after, turns.get(i + 1)) {
                (Some(id), _) | (None, Some((id, _))) => self.load(id)?,
                (None, None) => self.scan(Some(&before))?,
            };
            changes.add(&before, after);
        }
        Ok(changes)
    }

    /// A kept content.
    pub fn blob(&self, hash: &str) -> Result<Vec<u8>, CheckpointError> {
        let path = self.blob_path(hash)?;
        std::fs::read(&path).map_err(|e| io(path.display(), e))
    }

    /// Walks the workspace into a manifest; `keep`: store each content not stored yet.
    fn collect(&self, reuse: Option<&Manifest>, keep: bool) -> Result<Manifest, CheckpointError> {
        let base = self.sandbox.workspace().to_path_buf();
        let sandbox = self.sandbox.clone();
        let walk_base = base.clone();
        let walker = ignore::WalkBuilder::new(&base)
            .hidden(false)
            .git_ignore(true)
            .git_exclude(true)
            .git_global(false)
            .require_git(false)
            .follow_links(false)
            .filter_entry(move |e| {
                e.file_name() != ".git" && !sandbox.walk_skips(&walk_base, e.path())
            })
            .build();
        let mut manifest = Manifest {
            format: manifest::FORMAT,
            created_at: crate::store::now_ms(),
            entries: Default::default(),
        };
        for item in walker {
            let Ok(item) = item else { continue };
            if item.depth() == 0 {
                continue;
            }
            let Some(rel) = item
                .path()
                .strip_prefix(&base)
                .ok()
                .and_then(|p| p.to_str())
                .map(str::to_owned)
            else {
                continue;
            };
            if manifest.entries.len() >= MAX_ENTRIES {
                return Err(CheckpointError::TooManyFiles);
            }
            let old = reuse.and_then(|m| m.entries.get(&rel));
            if let Some(entry) = self.entry(item.path(), old, keep)? {
                manifest.entries.insert(rel, entry);
            }
        }
        Ok(manifest)
    }

    /// The record of one path (`None`: gone meanwhile, or not a file, link or folder).
    fn entry(
        &self,
        path: &Path,
        old: Option<&Entry>,
        keep: bool,
    ) -> Result<Option<Entry>, CheckpointError> {
        let Ok(meta) = std::fs::symlink_metadata(path) else {
            return Ok(None);
        };
        let ft = meta.file_type();
        let kind = if ft.is_symlink() {
            Kind::Symlink
        } else if ft.is_dir() {
            Kind::Dir
        } else if ft.is_file() {
            Kind::File
        } else {
            return Ok(None);
        };
        let mut entry = Entry {
            kind,
            mode: meta.mode() & 0o777,
            size: meta.size(),
            mtime_ns: meta.mtime() * 1_000_000_000 + meta.mtime_nsec(),
            ctime_ns: meta.ctime() * 1_000_000_000 + meta.ctime_nsec(),
            ino: meta.ino(),
            hash: None,
            target: None,
            not_kept: None,
        };
        match kind {
            Kind::Dir => {}
            Kind::Symlink => match std::fs::read_link(path) {
                Ok(t) => entry.target = t.to_str().map(str::to_owned),
                Err(_) => return Ok(None),
            },
            Kind::File => {
                if let Some(old) = old.filter(|o| unchanged(o, &entry)) {
                    entry.hash.clone_from(&old.hash);
                    entry.not_kept.clone_from(&old.not_kept);
                } else {
                    self.hash_file(path, &mut entry, keep)?;
                }
            }
        }
        Ok(Some(entry))
    }

    /// Reads a file (without following a link) into its hash, stored when `keep`.
    fn hash_file(&self, path: &Path, entry: &mut Entry, keep: bool) -> Result<(), CheckpointError> {
        if entry.size > MAX_FILE_BYTES {
            entry.not_kept = Some(format!("larger than {MAX_FILE_BYTES} bytes"));
            return Ok(());
        }
        // Opened one component at a time from `/` without following any link: a folder
        // on the way swapped for a link while the walk runs (the agent's commands run
        // meanwhile in other agents' runs, or raced in this one) must not make the daemon
        // read a file outside the workspace into a store the agent can read.
        let mut data = Vec::new();
        let read = open_resolved(path, OpenFor::Read)
            .map_err(std::io::Error::other)
            .and_then(|o| o.file.take(MAX_FILE_BYTES + 1).read_to_end(&mut data));
        if let Err(e) = read {
            entry.not_kept = Some(format!("unreadable: {e}"));
            return Ok(());
        }
        if data.len() as u64 > MAX_FILE_BYTES {
            entry.not_kept = Some(format!("larger than {MAX_FILE_BYTES} bytes"));
            return Ok(());
        }
        let hash = hex(&Sha256::digest(&data));
        if keep {
            let blob = self.blob_path(&hash)?;
            if !blob.exists() {
                write_new(&blob, &data)?;
            }
        }
        entry.hash = Some(hash);
        Ok(())
    }

    /// Drops the oldest snapshots (never `newest`) while the store is over its bound,
    /// and the contents no snapshot left names.
    fn enforce_cap(&self, newest: &str) {
        loop {
            let usage = dir_bytes(&self.root);
            if usage <= self.max_store_bytes {
                return;
            }
            let ids = self.snapshot_ids();
            let Some(oldest) = ids.iter().find(|id| id.as_str() != newest) else {
                return;
            };
            tracing::info!(
                snapshot = oldest,
                usage,
                "undo storage over its bound: dropping the oldest snapshot"
            );
            if let Ok(path) = self.snapshot_path(oldest) {
                let _ = std::fs::remove_file(path);
            }
            self.sweep();
        }
    }

    /// Every snapshot id, oldest first.
    fn snapshot_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = std::fs::read_dir(self.root.join("snapshots"))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                e.file_name()
                    .to_str()
                    .and_then(|n| n.strip_suffix(".json"))
                    .map(str::to_owned)
            })
            .collect();
        ids.sort();
        ids
    }

    /// Removes the contents no snapshot names.
    fn sweep(&self) {
        let mut named = std::collections::HashSet::new();
        for id in self.snapshot_ids() {
            let Ok(m) = self.load(&id) else { return };
            named.extend(m.entries.into_values().filter_map(|e| e.hash));
        }
        for shard in std::fs::read_dir(self.root.join("blobs"))
            .into_iter()
            .flatten()
            .flatten()
        {
            for blob in std::fs::read_dir(shard.path())
                .into_iter()
                .flatten()
                .flatten()
            {
                let name = blob.file_name();
                if !name.to_str().is_some_and(|n| named.contains(n)) {
                    let _ = std::fs::remove_file(blob.path());
                }
            }
        }
    }
}

/// Whether a file is as `old` recorded it, by its stat fields alone.
fn unchanged(old: &Entry, now: &Entry) -> bool {
    old.kind == Kind::File
        && old.size == now.size
        && old.mtime_ns == now.mtime_ns
        && old.ctime_ns == now.ctime_ns
        && old.ino == now.ino
        && old.mode == now.mode
        && (old.hash.is_some()
            || old
                .not_kept
                .as_deref()
                .is_some_and(|w| w.starts_with("larger")))
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::with_capacity(64), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// Writes a file of the store whole: a temporary name in its folder, then renamed.
fn write_new(path: &Path, data: &[u8]) -> Result<(), CheckpointError> {
    let dir = path
        .parent()
        .ok_or_else(|| CheckpointError::Io(format!("{} has no folder", path.display())))?;
    std::fs::create_dir_all(dir).map_err(|e| io(dir.display(), e))?;
    let tmp = dir.join(format!(".tmp-{}", uuid::Uuid::new_v4()));
    let written = File::create(&tmp)
        .and_then(|mut f| f.write_all(data))
        .and_then(|()| std::fs::rename(&tmp, path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(io(path.display(), e));
    }
    Ok(())
}

/// Bytes of the regular files under `dir` (two levels of folders, as the store has).
fn dir_bytes(dir: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![(dir.to_path_buf(), 0)];
    while let Some((d, depth)) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let Ok(meta) = e.metadata() else { continue };
            if meta.is_dir() && depth < 3 {
                stack.push((e.path(), depth + 1));
            } else if meta.is_file() {
                total += meta.len();
            }
        }
    }
    total
}

#[cfg(test)]
mod tests;
