//! The listening socket: a private directory (this user's, mode 0700, checked whoever made
//! it; never changed unless the daemon made it), a 0600 socket file, stale-file cleanup and
//! detection of a live daemon on the same path. A socket a service manager passed
//! (`activation`) becomes the same [`BoundSocket`], whose file the daemon then never removes.

use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use tokio::net::UnixListener;

#[derive(Debug, thiserror::Error)]
pub enum ListenError {
    #[error("another agentd is already listening on {0}; stop it first or pass another --socket")]
    AlreadyRunning(PathBuf),
    #[error("{0} exists and is not a socket; refusing to replace it")]
    NotASocket(PathBuf),
    /// Someone else made the folder: they could swap the socket. The user must remove it.
    #[error(
        "socket directory {path} belongs to uid {owner}, not to this user (uid {me}); another \
         user may have made it to take over the socket. Remove it (ask its owner or root) and \
         start again, or pass another --socket"
    )]
    ForeignDirectory { path: PathBuf, owner: u32, me: u32 },
    /// The folder is ours but others may enter it. agentd never changes a folder it did not
    /// create: the user fixes the mode or picks another path.
    #[error(
        "socket directory {path} has mode {mode:04o}; it must be exactly 0700 so that nobody \
         else can reach or swap the socket. agentd does not change a folder it did not create: \
         run `chmod 0700 {path}` if it is yours and meant for this, or pass another --socket"
    )]
    OpenDirectory { path: PathBuf, mode: u32 },
    /// A link another user owns could be pointed elsewhere at any time.
    #[error(
        "socket directory {path} is a symbolic link owned by uid {owner}, not by this user \
         (uid {me}) or root; another user could point it elsewhere. Remove it, or pass another \
         --socket"
    )]
    ForeignLink { path: PathBuf, owner: u32, me: u32 },
    #[error("socket directory {0} is not a directory; pass another --socket")]
    NotADirectory(PathBuf),
    #[error("socket path {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ListenError + '_ {
    move |source| ListenError::Io {
        path: path.to_owned(),
        source,
    }
}

/// The listening socket; removes its file on `remove` if the daemon bound it and the file
/// is still the one it bound.
#[derive(Debug)]
pub struct BoundSocket {
    pub listener: UnixListener,
    pub path: PathBuf,
    /// The inode of the file the daemon bound; `None` for a socket a service manager
    /// passed: its file belongs to the manager, which keeps listening after the daemon exits.
    inode: Option<u64>,
}

impl BoundSocket {
    /// A socket a service manager passed (already checked by `activation`).
    pub fn passed(socket: super::activation::PassedSocket) -> std::io::Result<BoundSocket> {
        socket.listener.set_nonblocking(true)?;
        Ok(BoundSocket {
            listener: UnixListener::from_std(socket.listener)?,
            path: socket.path,
            inode: None,
        })
    }

    /// Whether a service manager passed this socket (and keeps it).
    pub fn is_passed(&self) -> bool {
        self.inode.is_none()
    }

    /// Removes the socket file, unless a service manager owns it or another daemon has
    /// replaced it meanwhile.
    pub fn remove(&self) {
        let Some(inode) = self.inode else {
            return;
        };
        match std::fs::symlink_metadata(&self.path) {
            Ok(meta) if meta.ino() == inode => {
                if let Err(e) = std::fs::remove_file(&self.path) {
                    tracing::warn!("cannot remove {}: {e}", self.path.display());
                }
            }
            _ => {}
        }
    }
}

/// Binds the daemon's socket at `path`.
///
/// The parent directory is created 0700 if missing; whoever made it, it must then belong to
/// this user and have mode 0700 exactly, else binding fails (see [`check_directory`]). A
/// socket file nobody answers on is stale and replaced; one a live daemon answers on is an
/// error.
pub fn bind(path: &Path, uid: u32) -> Result<BoundSocket, ListenError> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    prepare_directory(dir, uid)?;
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => {
            match std::os::unix::net::UnixStream::connect(path) {
                Ok(_) => return Err(ListenError::AlreadyRunning(path.to_owned())),
                Err(_) => {
                    tracing::info!("removing stale socket {}", path.display());
                    std::fs::remove_file(path).map_err(io(path))?;
                }
            }
        }
        Ok(_) => return Err(ListenError::NotASocket(path.to_owned())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(io(path)(e)),
    }
    let listener = UnixListener::bind(path).map_err(io(path))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).map_err(io(path))?;
    let inode = std::fs::symlink_metadata(path).map_err(io(path))?.ino();
    Ok(BoundSocket {
        listener,
        path: path.to_owned(),
        inode: Some(inode),
    })
}

/// Creates `dir` (0700) if it is missing, then checks it whoever made it.
fn prepare_directory(dir: &Path, uid: u32) -> Result<(), ListenError> {
    if let Some(parent) = dir
        .parent()
        .filter(|p| !p.as_os_str().is_empty() && !p.exists())
    {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(parent)
            .map_err(io(parent))?;
    }
    // Not recursive: `AlreadyExists` tells a folder someone else made from ours.
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {
            // Ours: a umask may have taken bits away; put them back.
            let mode = std::fs::metadata(dir).map_err(io(dir))?.mode() & 0o7777;
            if mode != 0o700 {
                std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
                    .map_err(io(dir))?;
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(io(dir)(e)),
    }
    check_directory(dir, uid)
}

/// The socket's folder must be this user's and closed to everyone else (mode 0700), so no
/// other user can put their own socket in its place. A symbolic link to it must be ours or
/// root's. Nothing is changed here: a folder that fails is the user's to fix.
pub(super) fn check_directory(dir: &Path, uid: u32) -> Result<(), ListenError> {
    let link = std::fs::symlink_metadata(dir).map_err(io(dir))?;
    if link.file_type().is_symlink() && link.uid() != uid && link.uid() != 0 {
        return Err(ListenError::ForeignLink {
            path: dir.to_owned(),
            owner: link.uid(),
            me: uid,
        });
    }
    let meta = std::fs::metadata(dir).map_err(io(dir))?;
    if !meta.is_dir() {
        return Err(ListenError::NotADirectory(dir.to_owned()));
    }
    if meta.uid() != uid {
        return Err(ListenError::ForeignDirectory {
            path: dir.to_owned(),
            owner: meta.uid(),
            me: uid,
        });
    }
    let mode = meta.mode() & 0o7777;
    if mode != 0o700 {
        return Err(ListenError::OpenDirectory {
            path: dir.to_owned(),
            mode,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uid() -> u32 {
        nix::unistd::geteuid().as_raw()
    }

    #[tokio::test]
    async fn creates_private_dir_and_socket() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("run/deep/agentd.sock");
        let bound = bind(&path, uid()).unwrap();
        let dir_mode = std::fs::metadata(path.parent().unwrap()).unwrap().mode() & 0o777;
        let sock_mode = std::fs::symlink_metadata(&path).unwrap().mode() & 0o777;
        assert_eq!((dir_mode, sock_mode), (0o700, 0o600));
        // A live daemon on the path is an error.
        let err = bind(&path, uid()).unwrap_err();
        assert!(matches!(err, ListenError::AlreadyRunning(_)), "{err}");
        // Once it is gone, the stale file is replaced.
        drop(bound.listener);
        let again = bind(&path, uid()).unwrap();
        again.remove();
        assert!(!path.exists());
    }

    #[tokio::test]
    async fn refuses_to_replace_a_regular_file() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("run/agentd.sock");
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(tmp.path().join("run"))
            .unwrap();
        std::fs::write(&path, "data").unwrap();
        assert!(matches!(
            bind(&path, uid()),
            Err(ListenError::NotASocket(_))
        ));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "data");
    }

    /// A folder someone else made is refused, whatever its path, and left as it was.
    #[tokio::test]
    async fn folders_others_could_enter_are_refused_and_left_alone() {
        let tmp = tempfile::tempdir().unwrap();
        let cases: &[(&str, u32, &str)] = &[
            ("sticky", 0o1777, "mode 1777"),
            ("open", 0o777, "mode 0777"),
            ("group", 0o750, "mode 0750"),
            ("readable", 0o744, "mode 0744"),
            ("setgid", 0o2700, "mode 2700"),
            ("private", 0o700, ""),
        ];
        for (name, mode, error) in cases {
            let dir = tmp.path().join(name);
            std::fs::create_dir(&dir).unwrap();
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(*mode)).unwrap();
            let result = bind(&dir.join("agentd.sock"), uid());
            match result {
                Ok(bound) => {
                    assert!(error.is_empty(), "{name}: bound");
                    bound.remove();
                }
                Err(e) => {
                    let text = e.to_string();
                    assert!(!error.is_empty(), "{name}: {text}");
                    assert!(text.contains(error), "{name}: {text}");
                    assert!(text.contains(&dir.display().to_string()), "{text}");
                    assert!(text.contains("0700"), "{text}");
                    assert!(!dir.join("agentd.sock").exists(), "{name}");
                }
            }
            let after = std::fs::metadata(&dir).unwrap().mode() & 0o7777;
            assert_eq!(after, *mode, "{name}: the mode was changed");
        }
    }

    #[tokio::test]
    async fn odd_folders_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        // A file where the folder should be.
        let file = tmp.path().join("file");
        std::fs::write(&file, "").unwrap();
        let err = bind(&file.join("agentd.sock"), uid()).unwrap_err();
        assert!(matches!(err, ListenError::NotADirectory(_)), "{err}");
        // A link of ours to a private folder of ours is fine.
        let target = tmp.path().join("target");
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&target)
            .unwrap();
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        bind(&link.join("agentd.sock"), uid()).unwrap().remove();
        // A private folder of another user (only root can make one to test with).
        if !nix::unistd::geteuid().is_root() {
            eprintln!("skipped: a folder of another uid needs root to make (this is not a pass)");
            return;
        }
        let foreign = tmp.path().join("foreign");
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&foreign)
            .unwrap();
        std::os::unix::fs::chown(&foreign, Some(65534), Some(65534)).unwrap();
        let err = bind(&foreign.join("agentd.sock"), uid()).unwrap_err();
        assert!(
            matches!(err, ListenError::ForeignDirectory { owner: 65534, .. }),
            "{err}"
        );
        assert!(err.to_string().contains("uid 65534"), "{err}");
        // A link another user owns, even to our own folder.
        let foreign_link = tmp.path().join("foreign-link");
        std::os::unix::fs::symlink(&target, &foreign_link).unwrap();
        std::os::unix::fs::lchown(&foreign_link, Some(65534), Some(65534)).unwrap();
        let err = bind(&foreign_link.join("agentd.sock"), uid()).unwrap_err();
        assert!(matches!(err, ListenError::ForeignLink { .. }), "{err}");
        let meta = std::fs::metadata(&foreign).unwrap();
        assert_eq!((meta.uid(), meta.mode() & 0o7777), (65534, 0o700));
    }
}
