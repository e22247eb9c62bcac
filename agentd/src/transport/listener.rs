//! The listening socket: a private directory, a 0600 socket file, stale-file cleanup and
//! detection of a live daemon on the same path.

use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use tokio::net::UnixListener;

#[derive(Debug, thiserror::Error)]
pub enum ListenError {
    #[error("another agentd is already listening on {0}; stop it first or pass another --socket")]
    AlreadyRunning(PathBuf),
    #[error("{0} exists and is not a socket; refusing to replace it")]
    NotASocket(PathBuf),
    #[error("socket directory {path} belongs to uid {owner}, not to this user ({me})")]
    ForeignDirectory { path: PathBuf, owner: u32, me: u32 },
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

/// The bound socket; removes its file on `remove` if the file is still the one it bound.
#[derive(Debug)]
pub struct BoundSocket {
    pub listener: UnixListener,
    pub path: PathBuf,
    inode: u64,
}

impl BoundSocket {
    /// Removes the socket file, unless another daemon has replaced it meanwhile.
    pub fn remove(&self) {
        match std::fs::symlink_metadata(&self.path) {
            Ok(meta) if meta.ino() == self.inode => {
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
/// The parent directory is created 0700 if missing; an existing directory must belong to
/// this user. A socket file nobody answers on is stale and replaced; one a live daemon
/// answers on is an error.
pub fn bind(path: &Path, uid: u32) -> Result<BoundSocket, ListenError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        prepare_directory(dir, uid)?;
    }
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
        inode,
    })
}

fn prepare_directory(dir: &Path, uid: u32) -> Result<(), ListenError> {
    match std::fs::metadata(dir) {
        Ok(meta) => {
            // A shared directory like /tmp (sticky, root's) is acceptable for an explicit
            // --socket: the socket's own mode and the peer uid check protect it.
            if meta.uid() != uid && meta.mode() & 0o1000 == 0 {
                return Err(ListenError::ForeignDirectory {
                    path: dir.to_owned(),
                    owner: meta.uid(),
                    me: uid,
                });
            }
            if meta.uid() == uid && meta.mode() & 0o077 != 0 {
                tracing::warn!(
                    "socket directory {} is accessible to other users (mode {:o}); the socket itself is 0600",
                    dir.display(),
                    meta.mode() & 0o777
                );
            }
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(io(dir)),
        Err(e) => Err(io(dir)(e)),
    }
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
        let path = tmp.path().join("agentd.sock");
        std::fs::write(&path, "data").unwrap();
        assert!(matches!(
            bind(&path, uid()),
            Err(ListenError::NotASocket(_))
        ));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "data");
    }
}
