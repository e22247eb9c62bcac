//! A turn's changes as unified diffs: the files and links that differ between two
//! snapshots (folders are implied by their files and left out).

use similar::TextDiff;

use super::manifest::{Entry, Kind, Manifest, same};
use super::{CheckpointError, Checkpoints};

/// A diff of one file longer than this is cut (the rest named, not shown).
const MAX_DIFF_BYTES: usize = 256 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeStatus {
    Added,
    Modified,
    Deleted,
}

/// One changed path of a turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    pub path: String,
    pub status: ChangeStatus,
    pub diff: String,
}

/// What a diff shows of one side of a path.
enum Side {
    Absent,
    Text(String),
    /// Not shown as lines: binary content, or content not kept (the reason).
    Opaque(String),
}

impl Checkpoints {
    /// The paths that differ from `before` to `after`, in path order.
    pub fn diff(
        &self,
        before: &Manifest,
        after: &Manifest,
    ) -> Result<Vec<FileChange>, CheckpointError> {
        let mut paths: Vec<&String> = before.entries.keys().chain(after.entries.keys()).collect();
        paths.sort_unstable();
        paths.dedup();
        let mut changes = Vec::new();
        for path in paths {
            let (b, a) = (
                before.entries.get(path).filter(|e| e.kind != Kind::Dir),
                after.entries.get(path).filter(|e| e.kind != Kind::Dir),
            );
            if same(b, a) {
                continue;
            }
            let status = match (b, a) {
                (None, _) => ChangeStatus::Added,
                (_, None) => ChangeStatus::Deleted,
                _ => ChangeStatus::Modified,
            };
            let diff = self.file_diff(path, b, a)?;
            changes.push(FileChange {
                path: path.clone(),
                status,
                diff,
            });
        }
        Ok(changes)
    }

    fn side(&self, entry: Option<&Entry>) -> Result<Side, CheckpointError> {
        let Some(entry) = entry else {
            return Ok(Side::Absent);
        };
        Ok(match entry.kind {
            Kind::Dir => Side::Absent,
            Kind::Symlink => Side::Text(format!(
                "symbolic link to {}\n",
                entry.target.as_deref().unwrap_or("?")
            )),
            Kind::File => match (&entry.hash, &entry.not_kept) {
                (Some(hash), _) => {
                    let bytes = self.blob(hash)?;
                    match String::from_utf8(bytes) {
                        Ok(text) if !text.contains('\0') => Side::Text(text),
                        _ => Side::Opaque("binary".into()),
                    }
                }
                (None, why) => Side::Opaque(why.clone().unwrap_or_else(|| "not kept".into())),
            },
        })
    }

    /// The unified diff of one path (git's headers; `/dev/null` for a missing side).
    fn file_diff(
        &self,
        path: &str,
        before: Option<&Entry>,
        after: Option<&Entry>,
    ) -> Result<String, CheckpointError> {
        let old_name = before.map_or("/dev/null".to_owned(), |_| format!("a/{path}"));
        let new_name = after.map_or("/dev/null".to_owned(), |_| format!("b/{path}"));
        let mut out = String::new();
        if let (Some(b), Some(a)) = (before, after)
            && b.kind == Kind::File
            && a.kind == Kind::File
            && b.mode != a.mode
        {
            out.push_str(&format!("old mode {:o}\nnew mode {:o}\n", b.mode, a.mode));
        }
        let text = |s: &Side| match s {
            Side::Absent => Some(String::new()),
            Side::Text(t) => Some(t.clone()),
            Side::Opaque(_) => None,
        };
        let (old, new) = (self.side(before)?, self.side(after)?);
        match (text(&old), text(&new)) {
            (Some(o), Some(n)) if o != n => {
                let diff = TextDiff::from_lines(&o, &n);
                out.push_str(
                    &diff
                        .unified_diff()
                        .context_radius(3)
                        .header(&old_name, &new_name)
                        .to_string(),
                );
            }
            (Some(_), Some(_)) => {}
            _ => {
                let why = [old, new]
                    .into_iter()
                    .find_map(|s| match s {
                        Side::Opaque(w) => Some(w),
                        _ => None,
                    })
                    .unwrap_or_default();
                out.push_str(&format!("Files {old_name} and {new_name} differ ({why})\n"));
            }
        }
        if out.len() > MAX_DIFF_BYTES {
            let mut cut = MAX_DIFF_BYTES;
            while !out.is_char_boundary(cut) {
                cut -= 1;
            }
            let total = out.len();
            out.truncate(cut);
            out.push_str(&format!("\n[diff cut: {total} bytes, {cut} shown]\n"));
        }
        Ok(out)
    }
}
