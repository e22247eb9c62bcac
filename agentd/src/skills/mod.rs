//! Skills: knowledge an agent loads when a task needs it. A skill is a folder with a
//! `SKILL.md` (YAML front matter with `name` and `description`, a Markdown body) and any
//! other files beside it, the format the major coding agents share.
//!
//! This module owns where skills are found and which one wins: `<workspace>/.agentd/skills/`,
//! then the config's `[skills] folders` in their order, then the user's
//! `$XDG_CONFIG_HOME/agentd/skills/` (the first of a name wins). It reads them at request
//! time, each root folder kept [`CACHE_TTL`], reports what it cannot use (`listSkills`)
//! instead of failing, and writes the system prompt's skills section. It decides nothing
//! about tools: the tool center offers the `skill` tool (`tools/builtin/skill.rs`) and
//! asks for the section only for agents that have it. It reads skill files only; the model
//! reads the other files with `read_file`, under the permission policy.

pub mod parse;
pub mod scan;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use agent_proto::{SkillInfo, SkillProblem, SkillSource};

pub use crate::config::SkillsConfig;
pub use scan::{Links, MAX_SKILL_BYTES};

/// How long one root folder's skills are kept before it is read again.
pub const CACHE_TTL: Duration = Duration::from_secs(2);
/// Skills the system prompt lists (the rest are counted, and the `skill` tool loads them).
pub const MAX_LISTED: usize = 100;
/// The heading the system prompt's skills section starts with.
pub const SECTION_HEADING: &str = "# Skills";

impl SkillsConfig {
    /// Every folder absolute and an existing folder; `Err` names the entry.
    pub fn validate(&self) -> Result<(), String> {
        for (i, folder) in self.folders.iter().enumerate() {
            if !folder.is_absolute() {
                return Err(format!(
                    "skills.folders[{i}] {:?} must be an absolute path",
                    folder.display().to_string()
                ));
            }
            if !folder.is_dir() {
                return Err(format!(
                    "skills.folders[{i}] {:?} is not an existing folder",
                    folder.display().to_string()
                ));
            }
        }
        Ok(())
    }
}

/// The skills one agent has.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Catalog {
    /// In precedence order (workspace, config, user; then folder-name order), names
    /// unique.
    pub skills: Vec<SkillInfo>,
    /// What could not be used, with the reason.
    pub problems: Vec<SkillProblem>,
}

impl Catalog {
    pub fn get(&self, name: &str) -> Option<&SkillInfo> {
        self.skills.iter().find(|s| s.name == name)
    }

    /// The names of every skill, comma-separated (for messages).
    pub fn names(&self) -> String {
        let names: Vec<&str> = self.skills.iter().map(|s| s.name.as_str()).collect();
        names.join(", ")
    }

    /// The system prompt's skills section: each skill's name and description (at most
    /// [`MAX_LISTED`], the rest counted); `None` without skills.
    pub fn section(&self) -> Option<String> {
        if self.skills.is_empty() {
            return None;
        }
        let mut out = format!(
            "{SECTION_HEADING}\nSkills are instructions for particular tasks, each in a folder \
             with files beside it. When a task matches a skill's description, load the skill \
             with the skill tool (by its name) before you start, and follow it.\n"
        );
        for skill in self.skills.iter().take(MAX_LISTED) {
            out.push_str(&format!("- {}: {}\n", skill.name, skill.description));
        }
        let more = self.skills.len().saturating_sub(MAX_LISTED);
        if more > 0 {
            out.push_str(&format!(
                "- ({more} more skills are not listed here; the skill tool names them all when \
                 asked for one that does not exist)\n"
            ));
        }
        Some(out.trim_end().to_owned())
    }
}

/// The skills of root folders merged, the first folder of a name winning: `scans` in
/// precedence order. Pure.
fn merge(scans: &[(SkillSource, Arc<scan::Scan>)]) -> Catalog {
    let mut catalog = Catalog::default();
    let mut taken: HashSet<&str> = HashSet::new();
    for (source, scan) in scans {
        for found in &scan.skills {
            if taken.insert(found.name.as_str()) {
                catalog.skills.push(SkillInfo {
                    name: found.name.clone(),
                    description: found.description.clone(),
                    path: found.dir.display().to_string(),
                    source: *source,
                });
            }
        }
        catalog.problems.extend(scan.problems.iter().cloned());
    }
    catalog
}

/// A root folder's skills as read at that instant.
type Kept = (Instant, Arc<scan::Scan>);

/// Where the daemon looks for skills, and what it read lately.
#[derive(Debug, Default)]
pub struct Skills {
    config: Vec<PathBuf>,
    user: Option<PathBuf>,
    /// Per root folder: when it was read and what it held.
    cache: Mutex<HashMap<(PathBuf, Links), Kept>>,
}

/// What the `skill` tool answers for one skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loaded {
    pub info: SkillInfo,
    pub body: String,
    /// The other files in its folder (folders with a `/`), and how many more there are.
    pub files: Vec<String>,
    pub more_files: usize,
}

impl Skills {
    /// Skills from the config's folders (in order) and the user's folder (`None`: none).
    pub fn new(config: Vec<PathBuf>, user: Option<PathBuf>) -> Skills {
        Skills {
            config,
            user,
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// A root folder's skills, read again when the kept copy is older than [`CACHE_TTL`].
    fn root(
        &self,
        root: &Path,
        links: Links,
        read: impl FnOnce() -> scan::Scan,
    ) -> Arc<scan::Scan> {
        let now = Instant::now();
        let key = (root.to_owned(), links);
        {
            let cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some((at, scan)) = cache.get(&key)
                && now.duration_since(*at) < CACHE_TTL
            {
                return scan.clone();
            }
        }
        let scan = Arc::new(read());
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        cache.retain(|_, (at, _)| now.duration_since(*at) < CACHE_TTL);
        cache.insert(key, (now, scan.clone()));
        scan
    }

    /// The skills of an agent working in `workspace` (blocking I/O).
    pub fn catalog_blocking(&self, workspace: &Path) -> Catalog {
        let mut scans = vec![(
            SkillSource::Workspace,
            self.root(&workspace.join(".agentd/skills"), Links::Never, || {
                scan::scan_workspace(workspace)
            }),
        )];
        for folder in &self.config {
            scans.push((
                SkillSource::Config,
                self.root(folder, Links::FollowFolders, || {
                    scan::scan_root(folder, Links::FollowFolders)
                }),
            ));
        }
        if let Some(user) = &self.user {
            scans.push((
                SkillSource::User,
                self.root(user, Links::FollowFolders, || {
                    scan::scan_root(user, Links::FollowFolders)
                }),
            ));
        }
        merge(&scans)
    }

    /// [`Skills::catalog_blocking`], off the async threads.
    pub async fn catalog(self: &Arc<Self>, workspace: PathBuf) -> Catalog {
        let skills = self.clone();
        tokio::task::spawn_blocking(move || skills.catalog_blocking(&workspace))
            .await
            .unwrap_or_else(|e| Catalog {
                skills: Vec::new(),
                problems: vec![SkillProblem {
                    path: String::new(),
                    reason: format!("internal error: reading the skills failed: {e}"),
                }],
            })
    }

    /// One skill of an agent working in `workspace`, read now: its body and the files
    /// beside it. `Err` is the result text for the model (an unknown name lists the names
    /// there are).
    pub async fn load(
        self: &Arc<Self>,
        workspace: PathBuf,
        name: String,
    ) -> Result<Loaded, String> {
        let skills = self.clone();
        tokio::task::spawn_blocking(move || skills.load_blocking(&workspace, &name))
            .await
            .unwrap_or_else(|e| Err(format!("internal error: reading the skill failed: {e}")))
    }

    fn load_blocking(&self, workspace: &Path, name: &str) -> Result<Loaded, String> {
        let catalog = self.catalog_blocking(workspace);
        let Some(info) = catalog.get(name).cloned() else {
            return Err(if catalog.skills.is_empty() {
                format!("unknown skill {name:?}; there are no skills")
            } else {
                format!(
                    "unknown skill {name:?}; the skills are: {}",
                    catalog.names()
                )
            });
        };
        let dir = PathBuf::from(&info.path);
        let links = match info.source {
            SkillSource::Workspace => Links::Never,
            SkillSource::Config | SkillSource::User => Links::FollowFolders,
        };
        let file = dir.join(scan::SKILL_FILE);
        let text = scan::read_skill_file(&dir, links)
            .and_then(|text| text.ok_or_else(|| "it is gone".to_owned()))
            .map_err(|reason| {
                format!(
                    "the skill {name:?} cannot be read ({}): {reason}",
                    file.display()
                )
            })?;
        let parsed = parse::parse(&text).map_err(|reason| {
            format!(
                "the skill {name:?} cannot be read ({}): {reason}",
                file.display()
            )
        })?;
        let (files, more_files) = scan::other_files(&dir)?;
        Ok(Loaded {
            info,
            body: parsed.body.to_owned(),
            files,
            more_files,
        })
    }
}

#[cfg(test)]
mod tests;
