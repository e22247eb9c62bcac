//! Reading skill folders from the disk: a root folder's direct subfolders, each one's
//! `SKILL.md` opened without following a symbolic link and read up to a cap, and the other
//! files beside it. Blocking I/O: callers run it off the async threads.

use std::collections::HashMap;
use std::fs::File;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use agent_proto::SkillProblem;
use nix::errno::Errno;
use nix::fcntl::{AT_FDCWD, OFlag, openat};
use nix::sys::stat::{Mode, SFlag, fstat};

use super::parse;

/// The file that makes a folder a skill.
pub const SKILL_FILE: &str = "SKILL.md";
/// Bytes of one `SKILL.md`.
pub const MAX_SKILL_BYTES: u64 = 256 * 1024;
/// Subfolders of one root folder that are looked at (in name order).
pub const MAX_FOLDERS: usize = 256;
/// Names of other files the `skill` tool lists.
pub const MAX_FILES_LISTED: usize = 50;

/// How a root folder's links are treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Links {
    /// The user's own folders (config, `~/.config`): a skill folder may be a link to one
    /// kept elsewhere.
    FollowFolders,
    /// A workspace's: whoever can write the workspace chose what is there, so no link is
    /// followed out of it (the folders on the way and the skill folders are refused when
    /// they are links).
    Never,
}

/// A valid skill of a root folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub name: String,
    pub description: String,
    /// Its folder (absolute).
    pub dir: PathBuf,
}

/// What one root folder holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scan {
    /// In folder-name order, names unique.
    pub skills: Vec<Found>,
    pub problems: Vec<SkillProblem>,
}

fn problem(path: &Path, reason: impl Into<String>) -> SkillProblem {
    SkillProblem {
        path: path.display().to_string(),
        reason: reason.into(),
    }
}

/// The skills of a workspace: `<workspace>/.agentd/skills/`, none of it a link.
pub fn scan_workspace(workspace: &Path) -> Scan {
    let mut at = workspace.to_owned();
    for part in [".agentd", "skills"] {
        at.push(part);
        match std::fs::symlink_metadata(&at) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Scan {
                    skills: Vec::new(),
                    problems: vec![problem(
                        &at,
                        "symlink: a symbolic link in a workspace's skill folders is not followed",
                    )],
                };
            }
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => {
                return Scan {
                    skills: Vec::new(),
                    problems: vec![problem(&at, "not a folder")],
                };
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Scan::default(),
            Err(e) => {
                return Scan {
                    skills: Vec::new(),
                    problems: vec![problem(&at, format!("cannot read it: {e}"))],
                };
            }
        }
    }
    scan_root(&at, Links::Never)
}

/// The skills of a root folder: its direct subfolders (not those starting with `.`) that
/// hold a `SKILL.md`. A missing root holds none; a malformed `SKILL.md` is a problem with
/// its reason; a folder without one is not a skill. Of two folders with the same skill
/// name, the first in name order is kept.
pub fn scan_root(root: &Path, links: Links) -> Scan {
    let mut scan = Scan::default();
    let entries = match std::fs::read_dir(root) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return scan,
        Err(e) => {
            scan.problems
                .push(problem(root, format!("cannot read the folder: {e}")));
            return scan;
        }
    };
    let mut names: Vec<(std::ffi::OsString, std::fs::FileType)> = entries
        .filter_map(Result::ok)
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .filter_map(|e| Some((e.file_name(), e.file_type().ok()?)))
        .filter(|(_, kind)| kind.is_dir() || kind.is_symlink())
        .collect();
    names.sort_by(|a, b| a.0.cmp(&b.0));
    if names.len() > MAX_FOLDERS {
        scan.problems.push(problem(
            root,
            format!(
                "{} more folders are not read: at most {MAX_FOLDERS} skills in one folder",
                names.len() - MAX_FOLDERS
            ),
        ));
        names.truncate(MAX_FOLDERS);
    }
    let mut seen: HashMap<String, PathBuf> = HashMap::new();
    for (name, kind) in names {
        let dir = root.join(&name);
        if kind.is_symlink() {
            if links == Links::Never {
                scan.problems.push(problem(
                    &dir,
                    "symlink: a skill folder in a workspace that is a symbolic link is not \
                     followed",
                ));
                continue;
            }
            if !dir.is_dir() {
                continue;
            }
        }
        let file = dir.join(SKILL_FILE);
        let text = match read_skill_file(&dir, links) {
            Ok(Some(text)) => text,
            Ok(None) => continue,
            Err(reason) => {
                scan.problems.push(problem(&file, reason));
                continue;
            }
        };
        match parse::parse(&text) {
            Ok(parsed) => {
                if let Some(first) = seen.get(&parsed.name) {
                    scan.problems.push(problem(
                        &file,
                        format!(
                            "duplicate name {:?}: {} has it too and is used",
                            parsed.name,
                            first.display()
                        ),
                    ));
                    continue;
                }
                seen.insert(parsed.name.clone(), dir.clone());
                scan.skills.push(Found {
                    name: parsed.name,
                    description: parsed.description,
                    dir,
                });
            }
            Err(reason) => scan.problems.push(problem(&file, reason)),
        }
    }
    scan
}

/// The text of `dir/SKILL.md`: `None` when there is none; `Err` is the reason it cannot be
/// used (a symbolic link, not a regular file, too large, not UTF-8).
pub fn read_skill_file(dir: &Path, links: Links) -> Result<Option<String>, String> {
    let mut dir_flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
    if links == Links::Never {
        dir_flags |= OFlag::O_NOFOLLOW;
    }
    let folder: OwnedFd = match openat(AT_FDCWD, dir, dir_flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(Errno::ELOOP | Errno::ENOTDIR) if links == Links::Never => {
            return Err("symlink: the skill folder is a symbolic link, not followed".into());
        }
        Err(e) => return Err(format!("cannot open the folder: {e}")),
    };
    let flags = OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC | OFlag::O_NONBLOCK;
    let fd = match openat(&folder, SKILL_FILE, flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(Errno::ENOENT) => return Ok(None),
        Err(Errno::ELOOP) => {
            return Err(format!(
                "symlink: {SKILL_FILE} is a symbolic link, which is not followed (put the \
                 file itself in the skill's folder)"
            ));
        }
        Err(e) => return Err(format!("cannot open it: {e}")),
    };
    let stat = fstat(&fd).map_err(|e| format!("cannot inspect it: {e}"))?;
    if SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT != SFlag::S_IFREG {
        return Err("not a regular file".into());
    }
    let too_large = |size: u64| format!("too large: {size} bytes, at most {MAX_SKILL_BYTES}");
    let size = u64::try_from(stat.st_size).unwrap_or(u64::MAX);
    if size > MAX_SKILL_BYTES {
        return Err(too_large(size));
    }
    let mut bytes = Vec::new();
    File::from(fd)
        .take(MAX_SKILL_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read it: {e}"))?;
    let read = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
    if read > MAX_SKILL_BYTES {
        return Err(too_large(read));
    }
    String::from_utf8(bytes).map(Some).map_err(|e| {
        format!(
            "not UTF-8: invalid bytes at offset {}",
            e.utf8_error().valid_up_to()
        )
    })
}

/// The names of the files beside `SKILL.md` (folders with a `/`), in name order, at most
/// [`MAX_FILES_LISTED`], and how many more there are.
pub fn other_files(dir: &Path) -> Result<(Vec<String>, usize), String> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_name() != SKILL_FILE)
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                format!("{name}/")
            } else {
                name
            }
        })
        .collect();
    names.sort();
    let more = names.len().saturating_sub(MAX_FILES_LISTED);
    names.truncate(MAX_FILES_LISTED);
    Ok((names, more))
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;

    fn skill(root: &Path, folder: &str, text: &str) {
        std::fs::create_dir_all(root.join(folder)).unwrap();
        std::fs::write(root.join(folder).join(SKILL_FILE), text).unwrap();
    }

    fn md(name: &str) -> String {
        format!("---\nname: {name}\ndescription: about {name}\n---\nbody of {name}\n")
    }

    #[test]
    fn a_root_folder_yields_its_skills_and_the_reasons_others_are_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("skills");
        skill(&root, "b-skill", &md("bee"));
        skill(&root, "a-skill", &md("ant"));
        skill(&root, "dup", &md("ant"));
        skill(&root, "bad", "no front matter");
        skill(&root, ".hidden", &md("hidden"));
        std::fs::create_dir_all(root.join("empty")).unwrap();
        std::fs::write(root.join("README.md"), "not a skill").unwrap();
        std::fs::create_dir_all(root.join("big")).unwrap();
        let big = format!(
            "{}{}",
            md("big"),
            "x".repeat(usize::try_from(MAX_SKILL_BYTES).unwrap())
        );
        std::fs::write(root.join("big").join(SKILL_FILE), big).unwrap();
        std::fs::create_dir_all(root.join("latin1")).unwrap();
        std::fs::write(
            root.join("latin1").join(SKILL_FILE),
            b"---\nname: l\ndescription: caf\xe9\n---\n",
        )
        .unwrap();
        // A SKILL.md that is a link (to a real skill elsewhere) is refused.
        skill(dir.path(), "elsewhere", &md("linked"));
        std::fs::create_dir_all(root.join("link-file")).unwrap();
        symlink(
            dir.path().join("elsewhere").join(SKILL_FILE),
            root.join("link-file").join(SKILL_FILE),
        )
        .unwrap();
        // A linked skill folder: followed in the user's folders only.
        symlink(dir.path().join("elsewhere"), root.join("linked-dir")).unwrap();

        let scan = scan_root(&root, Links::FollowFolders);
        let names: Vec<(&str, PathBuf)> = scan
            .skills
            .iter()
            .map(|s| (s.name.as_str(), s.dir.clone()))
            .collect();
        assert_eq!(
            names,
            [
                ("ant", root.join("a-skill")),
                ("bee", root.join("b-skill")),
                ("linked", root.join("linked-dir")),
            ]
        );
        assert_eq!(scan.skills[0].description, "about ant");
        let reasons: Vec<(String, String)> = scan
            .problems
            .iter()
            .map(|p| {
                let folder = Path::new(&p.path).parent().unwrap().file_name().unwrap();
                (folder.to_string_lossy().into_owned(), p.reason.clone())
            })
            .collect();
        let expected_starts = [
            ("bad", "no front matter"),
            ("big", "too large: 262"),
            ("dup", "duplicate name \"ant\""),
            ("latin1", "not UTF-8"),
            ("link-file", "symlink: SKILL.md is a symbolic link"),
        ];
        assert_eq!(reasons.len(), expected_starts.len(), "{reasons:#?}");
        for ((folder, reason), (want_folder, start)) in reasons.iter().zip(expected_starts) {
            assert_eq!(folder, want_folder);
            assert!(reason.starts_with(start), "{folder}: {reason}");
        }

        // In a workspace, the linked folder is refused too.
        let strict = scan_root(&root, Links::Never);
        assert_eq!(strict.skills.len(), 2);
        assert!(
            strict
                .problems
                .iter()
                .any(|p| p.path.ends_with("linked-dir") && p.reason.starts_with("symlink:"))
        );
        // A missing root holds nothing and is no problem.
        assert_eq!(
            scan_root(&dir.path().join("none"), Links::Never),
            Scan::default()
        );
    }

    #[test]
    fn a_workspace_whose_skill_folder_is_a_link_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        let outside = dir.path().join("outside");
        skill(&outside.join("skills"), "s", &md("s"));
        std::fs::create_dir_all(&ws).unwrap();
        assert_eq!(scan_workspace(&ws), Scan::default());
        symlink(&outside, ws.join(".agentd")).unwrap();
        let scan = scan_workspace(&ws);
        assert!(scan.skills.is_empty());
        assert_eq!(scan.problems.len(), 1);
        assert_eq!(
            scan.problems[0].path,
            ws.join(".agentd").display().to_string()
        );
        assert!(scan.problems[0].reason.starts_with("symlink:"));
        std::fs::remove_file(ws.join(".agentd")).unwrap();
        std::fs::create_dir_all(ws.join(".agentd")).unwrap();
        symlink(outside.join("skills"), ws.join(".agentd/skills")).unwrap();
        assert!(
            scan_workspace(&ws).problems[0]
                .reason
                .starts_with("symlink:")
        );
        std::fs::remove_file(ws.join(".agentd/skills")).unwrap();
        skill(&ws.join(".agentd/skills"), "s", &md("s"));
        let scan = scan_workspace(&ws);
        assert_eq!(scan.skills.len(), 1);
        assert_eq!(scan.skills[0].dir, ws.join(".agentd/skills/s"));
    }

    #[test]
    fn other_files_are_named_up_to_a_cap() {
        let dir = tempfile::tempdir().unwrap();
        skill(dir.path(), "s", &md("s"));
        let s = dir.path().join("s");
        std::fs::create_dir_all(s.join("scripts")).unwrap();
        std::fs::write(s.join("ref.md"), "r").unwrap();
        assert_eq!(
            other_files(&s).unwrap(),
            (vec!["ref.md".to_owned(), "scripts/".to_owned()], 0)
        );
        for i in 0..60 {
            std::fs::write(s.join(format!("f{i:02}")), "").unwrap();
        }
        let (names, more) = other_files(&s).unwrap();
        assert_eq!((names.len(), more), (MAX_FILES_LISTED, 12));
        assert_eq!(names[0], "f00");
    }
}
