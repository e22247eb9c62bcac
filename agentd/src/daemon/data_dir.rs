//! The data dir: checked and locked at start. It holds the database, and with it what the
//! daemon runs (MCP servers, hooks, ACP agents come from the store too) and every agent's
//! conversations and files, so, like the socket's folder (`transport::listener`), it must
//! be this user's and closed to writes by anyone else: owned by the daemon's uid (or a
//! link to it owned by that uid or root), not writable by group or others (0700 as the
//! daemon makes it, 0755 is fine, 0775 or 0777 are not). The database files in it, if they
//! exist, are checked the same way. Nothing is changed: a folder or file that fails is the
//! user's to fix, and the error says how.

use std::fs::File;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

use nix::fcntl::{Flock, FlockArg};

/// The database and the files SQLite keeps beside it.
const DATABASE_FILES: &[&str] = &["agentd.db", "agentd.db-wal", "agentd.db-shm"];

/// Why the data dir (or a database file in it) is refused.
#[derive(Debug, thiserror::Error)]
pub(super) enum DataDirError {
    /// Someone else owns it: they could replace the database, and with it what the daemon
    /// runs. The user gives it to themselves or picks another data dir.
    #[error(
        "the {what} {path} belongs to uid {owner}, not to this user (uid {me}): its owner could \
         replace agentd's database, and with it the programs agentd starts (MCP servers, \
         hooks). If it is yours, run `chown {me} {path}`; else {instead}"
    )]
    Foreign {
        what: &'static str,
        path: PathBuf,
        owner: u32,
        me: u32,
        instead: &'static str,
    },
    /// Group or others may write it. The user takes the write bits away.
    #[error(
        "the {what} {path} has mode {mode:04o}: group or others may write {it}, and so replace \
         agentd's database (and with it the programs agentd starts). Run `chmod {fix} {path}`, \
         or {instead}"
    )]
    Writable {
        what: &'static str,
        path: PathBuf,
        mode: u32,
        it: &'static str,
        fix: &'static str,
        instead: &'static str,
    },
    /// A link another user owns could be pointed elsewhere at any time.
    #[error(
        "the {what} {path} is a symbolic link owned by uid {owner}, not by this user (uid \
         {me}) or root; another user could point it elsewhere. Replace it with a link of \
         your own, or {instead}"
    )]
    ForeignLink {
        what: &'static str,
        path: PathBuf,
        owner: u32,
        me: u32,
        instead: &'static str,
    },
    #[error("the data dir {0} is not a directory; pass another --data-dir")]
    NotADirectory(PathBuf),
    #[error("the database file {0} is not a regular file; move it away")]
    NotAFile(PathBuf),
    #[error(
        "another agentd is using the data dir {path} ({errno}); stop it or pass another --data-dir"
    )]
    Locked { path: PathBuf, errno: nix::Error },
    #[error("cannot {doing} {path}: {source}")]
    Io {
        doing: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
}

fn io<'a>(doing: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> DataDirError + 'a {
    move |source| DataDirError::Io {
        doing,
        path: path.to_owned(),
        source,
    }
}

/// What is checked: the folder, or a database file in it.
#[derive(Clone, Copy)]
enum Entry {
    Dir,
    Database,
}

impl Entry {
    fn what(self) -> &'static str {
        match self {
            Entry::Dir => "data dir",
            Entry::Database => "database file",
        }
    }

    fn instead(self) -> &'static str {
        match self {
            Entry::Dir => "pass another --data-dir",
            Entry::Database => "move it away",
        }
    }
}

/// The owner and the mode of what `path` names (`meta`), for the daemon of `uid`: ours (or
/// root's, for root), and not writable by group or others.
fn check_owner_and_mode(
    entry: Entry,
    path: &Path,
    meta: &std::fs::Metadata,
    uid: u32,
) -> Result<(), DataDirError> {
    if meta.uid() != uid {
        return Err(DataDirError::Foreign {
            what: entry.what(),
            path: path.to_owned(),
            owner: meta.uid(),
            me: uid,
            instead: entry.instead(),
        });
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o022 != 0 {
        let (it, fix) = match entry {
            Entry::Dir => ("in it", "700"),
            Entry::Database => ("it", "600"),
        };
        return Err(DataDirError::Writable {
            what: entry.what(),
            path: path.to_owned(),
            mode,
            it,
            fix,
            instead: entry.instead(),
        });
    }
    Ok(())
}

/// A symbolic link at `path` must be ours or root's (what it points to is checked apart).
fn check_link(entry: Entry, path: &Path, uid: u32) -> Result<(), DataDirError> {
    let link = std::fs::symlink_metadata(path).map_err(io("look at", path))?;
    if link.file_type().is_symlink() && link.uid() != uid && link.uid() != 0 {
        return Err(DataDirError::ForeignLink {
            what: entry.what(),
            path: path.to_owned(),
            owner: link.uid(),
            me: uid,
            instead: entry.instead(),
        });
    }
    Ok(())
}

/// Creates the data dir (0700) if it is missing, checks it and the database files in it,
/// and holds an exclusive lock on it for the daemon's lifetime, so two daemons never share
/// one store.
///
/// The lock is on the directory itself (an `flock` on its own descriptor), not on a file in
/// it: a lock file can be deleted under a running daemon, after which a second daemon would
/// lock a new file and open the same store. The directory cannot be removed while the store
/// is in it. The descriptor is close-on-exec, so no child process keeps the lock alive. The
/// folder is checked through that descriptor, so what is checked is what is locked.
pub(super) fn lock(dir: &Path, uid: u32) -> Result<Flock<File>, DataDirError> {
    // Private when the daemon creates it: it holds conversations, tool output and MCP
    // server settings (which may carry tokens).
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(io("create the data dir", dir))?;
    check_link(Entry::Dir, dir, uid)?;
    let file = File::open(dir).map_err(io("open the data dir", dir))?;
    let meta = file.metadata().map_err(io("look at the data dir", dir))?;
    if !meta.is_dir() {
        return Err(DataDirError::NotADirectory(dir.to_owned()));
    }
    check_owner_and_mode(Entry::Dir, dir, &meta, uid)?;
    // The folder is ours and closed: nobody else can put or swap a file in it now.
    for name in DATABASE_FILES {
        let path = dir.join(name);
        match std::fs::symlink_metadata(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(io("look at", &path)(e)),
            Ok(_) => {}
        }
        check_link(Entry::Database, &path, uid)?;
        let meta = std::fs::metadata(&path).map_err(io("look at", &path))?;
        if !meta.is_file() {
            return Err(DataDirError::NotAFile(path));
        }
        check_owner_and_mode(Entry::Database, &path, &meta, uid)?;
    }
    Flock::lock(file, FlockArg::LockExclusiveNonblock).map_err(|(_, errno)| DataDirError::Locked {
        path: dir.to_owned(),
        errno,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn uid() -> u32 {
        nix::unistd::geteuid().as_raw()
    }

    fn chmod(path: &Path, mode: u32) {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn folders_and_databases_others_could_write_are_refused_and_left_alone() {
        let root = tempfile::tempdir().unwrap();
        // (folder mode, database mode (none: no database yet), what the error says)
        let cases: &[(u32, Option<u32>, &str)] = &[
            (0o700, None, ""),
            (0o755, Some(0o644), ""),
            (0o750, Some(0o600), ""),
            (0o775, None, "data dir {dir} has mode 0775"),
            (0o777, Some(0o600), "data dir {dir} has mode 0777"),
            (0o1777, None, "data dir {dir} has mode 1777"),
            (0o700, Some(0o664), "database file {db} has mode 0664"),
            (0o700, Some(0o666), "database file {db} has mode 0666"),
        ];
        for (i, (dir_mode, db_mode, error)) in cases.iter().enumerate() {
            let dir = root.path().join(format!("data-{i}"));
            std::fs::create_dir(&dir).unwrap();
            let db = dir.join("agentd.db");
            if let Some(mode) = db_mode {
                std::fs::write(&db, b"").unwrap();
                chmod(&db, *mode);
            }
            chmod(&dir, *dir_mode);
            let result = lock(&dir, uid());
            let expected = error
                .replace("{dir}", &dir.display().to_string())
                .replace("{db}", &db.display().to_string());
            match result {
                Ok(_) => assert!(expected.is_empty(), "{i}: accepted, expected {expected}"),
                Err(e) => {
                    let e = e.to_string();
                    assert!(!expected.is_empty(), "{i}: refused: {e}");
                    assert!(e.contains(&expected), "{i}: {e}");
                    let fix = if expected.starts_with("data dir") {
                        format!("chmod 700 {}", dir.display())
                    } else {
                        format!("chmod 600 {}", db.display())
                    };
                    assert!(e.contains(&fix), "{i}: {e}");
                }
            }
            let after = std::fs::metadata(&dir).unwrap().mode() & 0o7777;
            assert_eq!(after, *dir_mode, "{i}: the folder's mode was changed");
        }
        // A missing folder is made private.
        let fresh = root.path().join("a/b/data");
        let _lock = lock(&fresh, uid()).unwrap();
        assert_eq!(std::fs::metadata(&fresh).unwrap().mode() & 0o7777, 0o700);
        // Locked: a second daemon is refused.
        let e = lock(&fresh, uid()).unwrap_err().to_string();
        assert!(e.contains("another agentd is using the data dir"), "{e}");
    }

    #[test]
    fn what_another_user_owns_is_refused() {
        if !nix::unistd::geteuid().is_root() {
            eprintln!("skipped: a file of another uid needs root to make (this is not a pass)");
            return;
        }
        let root = tempfile::tempdir().unwrap();
        let foreign = root.path().join("foreign");
        std::fs::create_dir(&foreign).unwrap();
        chmod(&foreign, 0o700);
        std::os::unix::fs::chown(&foreign, Some(65534), Some(65534)).unwrap();
        let e = lock(&foreign, uid()).unwrap_err().to_string();
        assert!(
            e.contains("data dir") && e.contains("belongs to uid 65534") && e.contains("chown"),
            "{e}"
        );
        let ours = root.path().join("ours");
        std::fs::create_dir(&ours).unwrap();
        chmod(&ours, 0o700);
        let db = ours.join("agentd.db");
        std::fs::write(&db, b"").unwrap();
        chmod(&db, 0o600);
        std::os::unix::fs::chown(&db, Some(65534), Some(65534)).unwrap();
        let e = lock(&ours, uid()).unwrap_err().to_string();
        assert!(
            e.contains(&format!(
                "database file {} belongs to uid 65534",
                db.display()
            )),
            "{e}"
        );
        // A link another user owns, to our own folder, is refused too.
        let target = root.path().join("target");
        std::fs::create_dir(&target).unwrap();
        chmod(&target, 0o700);
        let link = root.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        std::os::unix::fs::lchown(&link, Some(65534), Some(65534)).unwrap();
        let e = lock(&link, uid()).unwrap_err().to_string();
        assert!(e.contains("symbolic link owned by uid 65534"), "{e}");
    }
}
