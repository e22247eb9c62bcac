//! What one snapshot records of a workspace: per relative path its kind, mode, size, the
//! stat fields that say it is unchanged, and the hash of its content (a file), its target
//! (a symlink) or nothing (a folder). Plain data, serialized as one JSON file per snapshot.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The format of a manifest file; another number is refused, never guessed at.
pub(super) const FORMAT: u32 = 1;

/// One snapshot of a workspace: every path it tracked, by its path relative to the
/// workspace (`/`-separated, UTF-8; a name that is not UTF-8 is not tracked).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    pub format: u32,
    pub created_at: i64,
    pub entries: BTreeMap<String, Entry>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Kind {
    File,
    Symlink,
    Dir,
}

/// One path of a snapshot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    pub kind: Kind,
    /// The permission bits (`0o777`); set-id bits are never recorded nor restored.
    pub mode: u32,
    pub size: u64,
    /// Stat fields that let the next snapshot reuse `hash` without reading the file.
    pub mtime_ns: i64,
    pub ctime_ns: i64,
    pub ino: u64,
    /// A file's content hash (SHA-256, hex) when its content is kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hash: Option<String>,
    /// A symlink's target, as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// Why a file's content is not kept (too big, unreadable): it cannot be restored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_kept: Option<String>,
}

impl Entry {
    /// Whether two records describe the same thing on disk: same kind, and the same
    /// content (hash, or target) and permission bits. A file whose content is not kept
    /// compares by size and modification time, the best there is without its bytes.
    pub fn same(&self, other: &Entry) -> bool {
        if self.kind != other.kind {
            return false;
        }
        match self.kind {
            Kind::Dir => true,
            Kind::Symlink => self.target == other.target,
            Kind::File => {
                self.mode == other.mode
                    && match (&self.hash, &other.hash) {
                        (Some(a), Some(b)) => a == b,
                        (None, None) => self.size == other.size && self.mtime_ns == other.mtime_ns,
                        _ => false,
                    }
            }
        }
    }
}

/// Whether two optional records are the same (both absent counts as the same).
pub(super) fn same(a: Option<&Entry>, b: Option<&Entry>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => a.same(b),
        _ => false,
    }
}

impl Manifest {
    /// Whether `other` records the same tree (what a reused snapshot needs).
    pub fn same_tree(&self, other: &Manifest) -> bool {
        self.entries.len() == other.entries.len()
            && self
                .entries
                .iter()
                .zip(&other.entries)
                .all(|((pa, a), (pb, b))| pa == pb && a.same(b) && a.ino == b.ino)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(hash: Option<&str>, mode: u32) -> Entry {
        Entry {
            kind: Kind::File,
            mode,
            size: 3,
            mtime_ns: 1,
            ctime_ns: 1,
            ino: 1,
            hash: hash.map(str::to_owned),
            target: None,
            not_kept: None,
        }
    }

    #[test]
    fn entries_compare_by_content_and_mode() {
        let a = file(Some("h1"), 0o644);
        let cases = [
            (file(Some("h1"), 0o644), true),
            (file(Some("h2"), 0o644), false),
            (file(Some("h1"), 0o755), false),
            (file(None, 0o644), false),
            (
                Entry {
                    kind: Kind::Dir,
                    ..file(Some("h1"), 0o644)
                },
                false,
            ),
        ];
        for (b, expected) in cases {
            assert_eq!(a.same(&b), expected, "{b:?}");
        }
        assert!(same(None, None));
        assert!(!same(Some(&a), None));
    }
}
