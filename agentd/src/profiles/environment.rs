//! The environment section every agent's system prompt ends with, and the rendering of a
//! profile's prompt template: text from facts gathered at request time (`tools::git`
//! probes the workspace). Pure: no clock, no file system.

use std::time::{SystemTime, UNIX_EPOCH};

/// The facts of one request's environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Environment {
    /// The UTC date, ISO 8601 (`2026-11-23`).
    pub date: String,
    /// Operating system and architecture (`linux x86_64`).
    pub os: String,
    /// The agent's workspace (absolute); `None` for an agent without one.
    pub workspace: Option<String>,
    pub git: Git,
    /// The agent's profile; `None` without one.
    pub profile: Option<String>,
}

/// Whether the workspace is in a git repository, and its state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Git {
    NotARepository,
    Repository { head: Head, dirty: Dirty },
}

/// What the repository's `HEAD` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Head {
    Branch(String),
    /// A detached `HEAD`: the commit, abbreviated.
    Detached(String),
    /// `HEAD` could not be read, or names something else.
    Unknown,
}

/// Whether the work tree has changes (`git status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dirty {
    Clean,
    Dirty,
    /// Not checked: git is missing or failed, or the repository's configuration could make
    /// `git status` run a program (see `tools::git`).
    Unknown,
}

/// The heading the environment section starts with.
pub const SECTION_HEADING: &str = "# Environment";

impl Environment {
    /// The facts of now: today's UTC date and this machine's OS.
    pub fn now(workspace: Option<String>, git: Git, profile: Option<String>) -> Environment {
        let secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        Environment {
            date: iso_date(secs),
            os: format!("{} {}", std::env::consts::OS, std::env::consts::ARCH),
            workspace,
            git,
            profile,
        }
    }

    /// The section, as the system prompt ends with it.
    pub fn section(&self) -> String {
        let git = match &self.git {
            Git::NotARepository => "no".to_owned(),
            Git::Repository { head, dirty } => {
                let head = match head {
                    Head::Branch(name) => format!("branch {name}"),
                    Head::Detached(commit) => format!("detached HEAD at {commit}"),
                    Head::Unknown => "branch unknown".to_owned(),
                };
                let dirty = match dirty {
                    Dirty::Clean => "clean",
                    Dirty::Dirty => "uncommitted changes",
                    Dirty::Unknown => "changes unknown",
                };
                format!("yes ({head}; {dirty})")
            }
        };
        format!(
            "{SECTION_HEADING}\n- Date: {} (UTC)\n- OS: {}\n- Workspace: {}\n- Git repository: \
             {git}\n- Profile: {}",
            self.date,
            self.os,
            self.workspace.as_deref().unwrap_or("none"),
            self.profile.as_deref().unwrap_or("none"),
        )
    }
}

/// A prompt template with `{{workspace}}`, `{{date}}`, `{{os}}` and `{{profile}}` (spaces
/// inside the braces allowed) filled in from `env`; any other `{{...}}` stays as it is.
pub fn render_template(template: &str, env: &Environment) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find("{{") {
        out.push_str(&rest[..open]);
        let after = &rest[open + 2..];
        let value = after.find("}}").and_then(|close| {
            let value = match after[..close].trim() {
                "workspace" => env.workspace.as_deref().unwrap_or("none"),
                "date" => &env.date,
                "os" => &env.os,
                "profile" => env.profile.as_deref().unwrap_or("none"),
                _ => return None,
            };
            Some((value, close))
        });
        match value {
            Some((value, close)) => {
                out.push_str(value);
                rest = &after[close + 2..];
            }
            None => {
                out.push_str("{{");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// The UTC date of a unix time, `YYYY-MM-DD` (the proleptic Gregorian calendar).
pub fn iso_date(unix_secs: i64) -> String {
    // Days to civil date, after Howard Hinnant's `civil_from_days`.
    let days = unix_secs.div_euclid(86_400) + 719_468;
    let era = days.div_euclid(146_097);
    let day_of_era = days.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}
