//! `[skills]`: more folders of skills (checked and read by `skills`).

use std::path::PathBuf;

/// The `[skills]` section of the config.
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SkillsConfig {
    /// Folders whose subfolders are skills, absolute, in order of precedence (after the
    /// workspace's, before the user's).
    #[serde(default)]
    pub folders: Vec<PathBuf>,
}
