//! How an agent's commands are confined: its sandbox mode (its settings, else its
//! profile's, else the config's `[sandbox] mode`), whether this machine can confine at
//! all, and the [`Confinement`] one command gets. The policy (`permission.rs`) reads the
//! [`WallState`] to decide what to ask; the bash tool asks for the confinement; the
//! process launcher applies it (`process/confine.rs`).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_proto::SandboxMode;

use super::sandbox::Sandbox;
use crate::process::{Confinement, SandboxSupport};

/// The daemon-wide part: the config's `[sandbox]` section, resolved, and what the
/// machine can do.
#[derive(Debug, Clone)]
pub struct SandboxPlan {
    /// The config's mode, for agents and profiles that name none.
    pub mode: SandboxMode,
    /// Folders every confined command may write besides its workspace and temp folder.
    pub writable: Vec<PathBuf>,
    /// Paths no confined command may read besides the data dir.
    pub hidden: Vec<PathBuf>,
    pub support: SandboxSupport,
}

impl SandboxPlan {
    /// No sandbox available (unit tests); the mode still says what would be asked.
    pub fn unavailable(mode: SandboxMode) -> SandboxPlan {
        SandboxPlan {
            mode,
            writable: Vec::new(),
            hidden: Vec::new(),
            support: SandboxSupport::unavailable("no sandbox in unit tests"),
        }
    }

    /// The plan with `hidden` and `writable` canonicalized (a path that does not exist is
    /// dropped from `writable`, kept as given in `hidden`: it may appear later).
    pub fn new(
        mode: SandboxMode,
        writable: Vec<PathBuf>,
        hidden: Vec<PathBuf>,
        support: SandboxSupport,
    ) -> SandboxPlan {
        let writable = writable
            .into_iter()
            .filter_map(|p| match std::fs::canonicalize(&p) {
                Ok(p) => Some(p),
                Err(e) => {
                    tracing::warn!(
                        "sandbox.writable: {} is not usable ({e}); left out",
                        p.display()
                    );
                    None
                }
            })
            .collect();
        let hidden = hidden
            .into_iter()
            .map(|p| std::fs::canonicalize(&p).unwrap_or(p))
            .collect();
        SandboxPlan {
            mode,
            writable,
            hidden,
            support,
        }
    }

    /// The wall of an agent in `mode`, whose private temp folder is `tmpdir`.
    pub fn wall(self: &Arc<Self>, mode: SandboxMode, tmpdir: PathBuf) -> Wall {
        Wall {
            mode,
            plan: self.clone(),
            tmpdir,
        }
    }
}

/// What confines one agent's commands.
#[derive(Debug, Clone)]
pub struct Wall {
    pub mode: SandboxMode,
    plan: Arc<SandboxPlan>,
    /// The agent's private temp folder (`TMPDIR` of its commands; writable in every mode).
    pub tmpdir: PathBuf,
}

/// Whether an agent's commands run confined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WallState {
    Enforced(SandboxMode),
    /// The mode asks for a sandbox this machine cannot give (why): every command asks.
    Unavailable(String),
    /// Mode `off`: commands run with the user's full rights.
    Off,
}

impl Wall {
    pub fn state(&self) -> WallState {
        match self.mode {
            SandboxMode::Off => WallState::Off,
            mode if self.plan.support.available => WallState::Enforced(mode),
            _ => WallState::Unavailable(
                self.plan
                    .support
                    .reason
                    .clone()
                    .unwrap_or_else(|| "the kernel cannot confine commands".into()),
            ),
        }
    }

    /// What a command of this agent may do, in `mode`, with or without the network.
    pub fn confinement(&self, paths: &Sandbox, mode: SandboxMode, network: bool) -> Confinement {
        let mut writable = vec![self.tmpdir.clone()];
        if mode == SandboxMode::WorkspaceWrite {
            writable.push(paths.workspace().to_owned());
            writable.extend(self.plan.writable.iter().cloned());
        }
        let mut hidden = vec![paths.data_dir().to_owned()];
        hidden.extend(self.plan.hidden.iter().cloned());
        Confinement {
            writable,
            hidden,
            readable: vec![paths.own_offloads().to_owned()],
            network,
        }
    }

    /// Makes the temp folder (private to the user) if it is missing.
    pub fn make_tmpdir(&self) -> std::io::Result<&Path> {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.tmpdir)?;
        Ok(&self.tmpdir)
    }
}

/// An agent's private temp folder: `<data_dir>/tmp/<agent_id>`.
pub fn tmpdir(data_dir: &Path, agent_id: &str) -> PathBuf {
    data_dir.join("tmp").join(agent_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mode_decides_what_is_writable_and_the_data_dir_is_always_hidden() {
        let root = tempfile::tempdir().unwrap();
        let data = root.path().join("data");
        let ws = root.path().join("ws");
        std::fs::create_dir_all(&data).unwrap();
        std::fs::create_dir_all(&ws).unwrap();
        let paths = Sandbox::new(&ws, &data, "a").unwrap();
        let mut plan = SandboxPlan::unavailable(SandboxMode::WorkspaceWrite);
        plan.writable = vec!["/opt/cache".into()];
        plan.hidden = vec!["/home/u/.ssh".into()];
        let plan = Arc::new(plan);
        let wall = plan.wall(SandboxMode::WorkspaceWrite, tmpdir(paths.data_dir(), "a"));
        let tmp = paths.data_dir().join("tmp/a");
        let c = wall.confinement(&paths, SandboxMode::WorkspaceWrite, false);
        assert_eq!(
            c.writable,
            [
                tmp.clone(),
                paths.workspace().to_owned(),
                "/opt/cache".into()
            ]
        );
        assert_eq!(
            c.hidden,
            [paths.data_dir().to_owned(), PathBuf::from("/home/u/.ssh")]
        );
        assert_eq!(c.readable, [paths.own_offloads().to_owned()]);
        assert!(!c.network);
        let c = wall.confinement(&paths, SandboxMode::ReadOnly, true);
        assert_eq!(c.writable, [tmp]);
        assert!(c.network);
    }

    #[test]
    fn a_mode_that_needs_a_sandbox_the_machine_lacks_is_unavailable() {
        let plan = Arc::new(SandboxPlan::unavailable(SandboxMode::WorkspaceWrite));
        let wall = |mode| plan.wall(mode, PathBuf::from("/tmp/x")).state();
        assert_eq!(wall(SandboxMode::Off), WallState::Off);
        assert!(matches!(
            wall(SandboxMode::ReadOnly),
            WallState::Unavailable(why) if why.contains("unit tests")
        ));
        let mut available = SandboxPlan::unavailable(SandboxMode::WorkspaceWrite);
        available.support = SandboxSupport {
            available: true,
            abi: Some(7),
            reason: None,
        };
        let available = Arc::new(available);
        assert_eq!(
            available
                .wall(SandboxMode::ReadOnly, PathBuf::from("/tmp/x"))
                .state(),
            WallState::Enforced(SandboxMode::ReadOnly)
        );
    }
}
