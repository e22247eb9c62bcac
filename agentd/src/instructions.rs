//! Project instructions: the `AGENTS.md` files (in a folder without one, its `CLAUDE.md`)
//! that tell an agent how a project is built, tested and written, as the system prompt of
//! agent-mode agents carries them. The user's own file
//! (`$XDG_CONFIG_HOME/agentd/AGENTS.md`) comes first, then each folder's from the
//! repository root (the nearest ancestor of the workspace with a `.git`; outside a
//! repository, the workspace alone) down to the workspace, each under a heading with its
//! path; capped per file ([`MAX_FILE_BYTES`]) and in all ([`MAX_TOTAL_BYTES`]), cut with a
//! visible marker.
//!
//! A repository's files are written by whoever wrote the repository (and by the agent), so
//! they are opened without following a link: a link named `AGENTS.md` is skipped (logged),
//! as if the folder had none, and no folder above the repository root is read. The user's
//! own file may be a link (dotfile managers make them; agents cannot write there). A FIFO
//! or a device is never read. What one workspace gives is kept [`CACHE_TTL`], so a turn does
//! not read every folder again and a change shows in the next turn after that.
//!
//! It decides nothing about agents: the tool center asks for the section for agent-mode
//! agents only and puts it in the prompt's frame.

use std::collections::HashMap;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// A folder's file, and the one read where it has none.
pub const FILE_NAMES: [&str; 2] = ["AGENTS.md", "CLAUDE.md"];
/// Bytes of one file the prompt carries at most.
pub const MAX_FILE_BYTES: usize = 32 * 1024;
/// Bytes of all files the prompt carries at most.
pub const MAX_TOTAL_BYTES: usize = 64 * 1024;
/// How long one workspace's section is kept before its files are read again.
pub const CACHE_TTL: Duration = Duration::from_secs(2);
/// The heading the system prompt's section starts with.
pub const SECTION_HEADING: &str = "# Project instructions";

/// One file found: where it is, its text (at most [`MAX_FILE_BYTES`] of it) and its size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub path: PathBuf,
    pub text: String,
    pub size: u64,
    /// The text is only the file's start.
    pub cut: bool,
}

/// A workspace's section as read at that instant.
type Kept = (Instant, Option<Arc<str>>);

/// Where the user's own file is, and the sections read lately.
#[derive(Debug, Default)]
pub struct Instructions {
    user: Option<PathBuf>,
    cache: Mutex<HashMap<PathBuf, Kept>>,
}

impl Instructions {
    /// Instructions with the user's own file at `user` (`None`: none).
    pub fn new(user: Option<PathBuf>) -> Instructions {
        Instructions {
            user,
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// The section for an agent working in `workspace` (blocking I/O), kept
    /// [`CACHE_TTL`]; `None` when no file applies.
    pub fn section_blocking(&self, workspace: &Path) -> Option<Arc<str>> {
        let now = Instant::now();
        {
            let cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some((at, section)) = cache.get(workspace)
                && now.duration_since(*at) < CACHE_TTL
            {
                return section.clone();
            }
        }
        let section = render(&discover(workspace, self.user.as_deref())).map(Arc::from);
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        cache.retain(|_, (at, _)| now.duration_since(*at) < CACHE_TTL);
        cache.insert(workspace.to_owned(), (now, section.clone()));
        section
    }

    /// [`Instructions::section_blocking`], off the async threads.
    pub async fn section(self: &Arc<Self>, workspace: PathBuf) -> Option<Arc<str>> {
        let me = self.clone();
        tokio::task::spawn_blocking(move || me.section_blocking(&workspace))
            .await
            .unwrap_or_else(|e| {
                tracing::warn!("reading the project instructions failed: {e}");
                None
            })
    }
}

/// The folders whose files apply to `workspace`, outermost first: the repository root
/// (the nearest ancestor with a `.git`, a folder or a file) down to the workspace; the
/// workspace alone outside a repository.
pub fn folders(workspace: &Path) -> Vec<PathBuf> {
    let root = workspace
        .ancestors()
        .find(|dir| std::fs::symlink_metadata(dir.join(".git")).is_ok());
    let Some(root) = root else {
        return vec![workspace.to_owned()];
    };
    let mut folders: Vec<PathBuf> = workspace
        .ancestors()
        .take_while(|dir| *dir != root)
        .map(Path::to_owned)
        .collect();
    folders.push(root.to_owned());
    folders.reverse();
    folders
}

/// The files that apply to `workspace`, in the order the prompt carries them: the user's
/// own (`user`), then each folder's `AGENTS.md`, else its `CLAUDE.md`.
pub fn discover(workspace: &Path, user: Option<&Path>) -> Vec<Found> {
    let mut found = Vec::new();
    if let Some(user) = user
        && let Some(file) = read_logged(user, Links::Follow)
    {
        found.push(file);
    }
    for folder in folders(workspace) {
        let file = FILE_NAMES
            .iter()
            .find_map(|name| read_logged(&folder.join(name), Links::Never));
        found.extend(file);
    }
    found
}

/// Whether a file may be a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Links {
    Follow,
    Never,
}

/// [`read`], what cannot be read logged and counted as absent.
fn read_logged(path: &Path, links: Links) -> Option<Found> {
    match read(path, links) {
        Ok(found) => found,
        Err(reason) => {
            tracing::debug!(path = %path.display(), "project instructions skipped: {reason}");
            None
        }
    }
}

/// The file at `path`: its first [`MAX_FILE_BYTES`] (cut on a character boundary, bytes
/// that are not UTF-8 replaced) and its size. `Ok(None)` when there is none; `Err` for a
/// link (unless `links` follows them), or anything but a regular file.
fn read(path: &Path, links: Links) -> Result<Option<Found>, String> {
    let mut flags = nix::libc::O_NONBLOCK;
    if links == Links::Never {
        flags |= nix::libc::O_NOFOLLOW;
    }
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(path)
    {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(nix::libc::ELOOP) => {
            return Err("it is a link, not followed".into());
        }
        Err(e) => return Err(e.to_string()),
    };
    let meta = file.metadata().map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a regular file".into());
    }
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES as u64)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    let cut = meta.len() > bytes.len() as u64;
    if cut {
        // A character cut at the cap is left out, not replaced.
        if let Err(e) = std::str::from_utf8(&bytes)
            && e.error_len().is_none()
        {
            bytes.truncate(e.valid_up_to());
        }
    }
    Ok(Some(Found {
        path: path.to_owned(),
        text: String::from_utf8_lossy(&bytes).into_owned(),
        size: meta.len(),
        cut,
    }))
}

/// The section for `found` (`None` when it is empty): each file under a heading with its
/// path, a file cut at [`MAX_FILE_BYTES`] and the whole at [`MAX_TOTAL_BYTES`] marked.
pub fn render(found: &[Found]) -> Option<String> {
    if found.is_empty() {
        return None;
    }
    let mut out = format!(
        "{SECTION_HEADING}\nInstructions for working here, from the user and the project's \
         AGENTS.md files, outermost first; where they disagree, the later (nearer the \
         workspace) win.\n"
    );
    let mut room = MAX_TOTAL_BYTES;
    let mut left_out = Vec::new();
    for file in found {
        if room == 0 {
            left_out.push(file.path.display().to_string());
            continue;
        }
        let mut text = file.text.trim_end();
        let mut cut_in_all = false;
        if text.len() > room {
            let mut end = room;
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            text = &text[..end];
            cut_in_all = true;
        }
        room -= text.len();
        out.push_str(&format!("\n## {}\n{text}\n", file.path.display()));
        if cut_in_all {
            out.push_str(&format!(
                "[… cut: project instructions are capped at {} KiB in all]\n",
                MAX_TOTAL_BYTES / 1024
            ));
            room = 0;
        } else if file.cut {
            out.push_str(&format!(
                "[… cut: this file has {} bytes; only its first {} KiB are included]\n",
                file.size,
                MAX_FILE_BYTES / 1024
            ));
        }
    }
    if !left_out.is_empty() {
        out.push_str(&format!(
            "\n[… left out, past the {} KiB cap: {}]\n",
            MAX_TOTAL_BYTES / 1024,
            left_out.join(", ")
        ));
    }
    Some(out.trim_end().to_owned())
}

#[cfg(test)]
mod tests;
