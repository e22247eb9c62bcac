//! Sockets handed over by a service manager (socket activation).
//!
//! systemd passes listening sockets as descriptors 3, 4, ... and says so in `LISTEN_FDS`
//! and `LISTEN_PID`; [`passed_fd_count`] applies the `sd_listen_fds(3)` rules to those
//! variables, and [`take_passed_socket`] takes the one socket agentd expects (ownership of
//! the descriptor comes from the `listenfd` crate: this crate has no `unsafe`). What can
//! be checked of a socket the daemon did not bind is checked before it serves on it: a
//! Unix stream socket, listening, bound to a path whose folder is this user's with mode
//! 0700 (as for a socket the daemon binds itself), the socket file this user's and not
//! writable by anyone else (connecting takes write permission; systemd's `SocketMode=0600`
//! gives exactly that, `systemd-socket-activate` makes 0644). Every connection's peer is
//! still checked (`transport::serve`).
//!
//! launchd (macOS) passes sockets through `launch_activate_socket`, a C call the `raunch`
//! crate makes; see [`take_launchd_socket`] for how the descriptor is owned without
//! `unsafe`.
//!
//! This module decides nothing about serving; it only hands a checked listener to it.

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};

use super::listener::{ListenError, check_directory};

/// The first descriptor systemd passes (`SD_LISTEN_FDS_START`).
const FIRST_FD: &str = "3";

/// A listening socket a service manager passed, checked.
#[derive(Debug)]
pub struct PassedSocket {
    pub listener: UnixListener,
    /// The path it is bound to.
    pub path: PathBuf,
}

/// Why a passed socket cannot be used; start-up stops with the message.
#[derive(Debug, thiserror::Error)]
pub enum ActivationError {
    /// A variable of the protocol is not what `sd_listen_fds` accepts.
    #[error("{name}={value:?} is not valid for socket activation ({expected})")]
    BadVariable {
        name: &'static str,
        value: String,
        expected: &'static str,
    },
    #[error(
        "the service manager passed {0} sockets; agentd takes exactly one (one ListenStream= \
         in agentd.socket)"
    )]
    NotOne(usize),
    #[error("the descriptor passed by the service manager is not usable: {0}")]
    Descriptor(std::io::Error),
    #[error(
        "the socket passed by the service manager is not listening; it must be a stream \
         socket with Accept=no (the default) in agentd.socket"
    )]
    NotListening,
    #[error(
        "the socket passed by the service manager is not bound to a path (abstract or \
         unnamed); agentd serves only on a socket file (ListenStream=%t/agentd/agentd.sock)"
    )]
    NoPath,
    #[error(
        "{0} is not a socket file, but the service manager passed a socket bound to that path; \
         something replaced it"
    )]
    NotASocketFile(PathBuf),
    #[error(
        "the socket file {path} belongs to uid {owner}, not to this user (uid {me}); agentd \
         serves only on its user's own socket"
    )]
    ForeignSocketFile { path: PathBuf, owner: u32, me: u32 },
    #[error(
        "the socket file {path} has mode {mode:04o}; others could connect to it (write \
         permission). Set SocketMode=0600 in agentd.socket"
    )]
    OpenSocketFile { path: PathBuf, mode: u32 },
    /// The folder check of a socket the daemon binds, applied to a passed one.
    #[error(
        "the folder of the socket passed by the service manager: {0} (set DirectoryMode=0700 in agentd.socket)"
    )]
    Folder(Box<ListenError>),
    #[error(
        "the service manager passed the socket {passed}, but --socket (or AGENTD_SOCKET) says \
         {asked}; make them name the same path, or drop --socket"
    )]
    OtherPath { passed: PathBuf, asked: PathBuf },
    /// `--launchd-socket` where it cannot work.
    #[error("{0}")]
    Launchd(String),
}

/// How many descriptors the service manager passed to the process `pid`, by the rules of
/// `sd_listen_fds(3)`: none unless `LISTEN_PID` names this very process (a variable
/// inherited from a parent is not for us), then `LISTEN_FDS`. A malformed value is an
/// error. `LISTEN_FDS_FIRST_FD` is not systemd's; the `listenfd` crate honours it, so any
/// value but 3 is refused rather than read differently than systemd meant.
pub fn passed_fd_count(
    env: impl Fn(&str) -> Option<String>,
    pid: u32,
) -> Result<usize, ActivationError> {
    let Some(listen_pid) = env("LISTEN_PID") else {
        return Ok(0);
    };
    let listen_pid: u32 = listen_pid
        .trim()
        .parse()
        .map_err(|_| ActivationError::BadVariable {
            name: "LISTEN_PID",
            value: listen_pid.clone(),
            expected: "a process id",
        })?;
    if listen_pid != pid {
        return Ok(0);
    }
    let Some(count) = env("LISTEN_FDS") else {
        return Ok(0);
    };
    let count: usize = count
        .trim()
        .parse()
        .map_err(|_| ActivationError::BadVariable {
            name: "LISTEN_FDS",
            value: count.clone(),
            expected: "a number of descriptors",
        })?;
    if let Some(first) = env("LISTEN_FDS_FIRST_FD").filter(|f| f.trim() != FIRST_FD) {
        return Err(ActivationError::BadVariable {
            name: "LISTEN_FDS_FIRST_FD",
            value: first,
            expected: "unset, or 3 as systemd passes them",
        });
    }
    Ok(count)
}

/// Takes the socket systemd passed, if it passed one to this process, and checks it.
///
/// Clears `LISTEN_PID` and `LISTEN_FDS` from the environment whatever they said, so no
/// child inherits them; it must therefore run before any other thread starts (in `main`,
/// before the runtime). The descriptor becomes close-on-exec.
pub fn take_passed_socket(uid: u32) -> Result<Option<PassedSocket>, ActivationError> {
    let count = passed_fd_count(|k| std::env::var(k).ok(), std::process::id());
    // Reads the same variables and removes them (the crate's own rules are looser than
    // systemd's; only what `passed_fd_count` accepted is taken).
    let mut fds = listenfd::ListenFd::from_env();
    match count? {
        0 => Ok(None),
        1 => {
            let listener = fds
                .take_unix_listener(0)
                .map_err(ActivationError::Descriptor)?
                .ok_or_else(|| {
                    ActivationError::Descriptor(std::io::Error::other("descriptor 3 is not there"))
                })?;
            let path = check_passed(&listener, uid)?;
            Ok(Some(PassedSocket { listener, path }))
        }
        n => Err(ActivationError::NotOne(n)),
    }
}

/// The checks a passed listener gets (the `listenfd` crate has made sure it is a Unix
/// stream socket); returns the path it is bound to.
pub fn check_passed(listener: &UnixListener, uid: u32) -> Result<PathBuf, ActivationError> {
    let listening = nix::sys::socket::getsockopt(listener, nix::sys::socket::sockopt::AcceptConn)
        .map_err(|e| ActivationError::Descriptor(e.into()))?;
    if !listening {
        return Err(ActivationError::NotListening);
    }
    let address = listener.local_addr().map_err(ActivationError::Descriptor)?;
    let path = address
        .as_pathname()
        .filter(|p| !p.as_os_str().is_empty())
        .ok_or(ActivationError::NoPath)?
        .to_owned();
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    check_directory(dir, uid).map_err(|e| ActivationError::Folder(Box::new(e)))?;
    let meta = std::fs::symlink_metadata(&path).map_err(ActivationError::Descriptor)?;
    if !meta.file_type().is_socket() {
        return Err(ActivationError::NotASocketFile(path));
    }
    if meta.uid() != uid {
        return Err(ActivationError::ForeignSocketFile {
            path,
            owner: meta.uid(),
            me: uid,
        });
    }
    let mode = meta.mode() & 0o7777;
    if mode & 0o022 != 0 {
        return Err(ActivationError::OpenSocketFile { path, mode });
    }
    Ok(path)
}

/// The socket launchd passes under `name` (a key of the `Sockets` dictionary of the
/// LaunchAgent plist), checked like a socket systemd passes.
///
/// launchd hands sockets over only through `launch_activate_socket`, a C function; the
/// `raunch` crate calls it and returns the descriptor numbers. agentd has no `unsafe` code,
/// so it does not take ownership of those numbers: it opens `/dev/fd/N`, which on macOS
/// duplicates descriptor N (fd(4)), and owns that duplicate as a `File`, then a listener.
/// The original descriptor stays open for the process's life (one socket).
#[cfg(target_os = "macos")]
pub fn take_launchd_socket(name: &str) -> Result<PassedSocket, ActivationError> {
    let fds = raunch::activate_socket(name).map_err(|e| {
        ActivationError::Launchd(format!(
            "launchd has no socket {name:?} for agentd ({e}); check the Sockets key of the \
             LaunchAgent plist (packaging/launchd/)"
        ))
    })?;
    let [fd] = fds.as_slice() else {
        return Err(ActivationError::NotOne(fds.len()));
    };
    let duplicate = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(format!("/dev/fd/{fd}"))
        .map_err(ActivationError::Descriptor)?;
    let listener = UnixListener::from(std::os::fd::OwnedFd::from(duplicate));
    let path = check_passed(&listener, nix::unistd::geteuid().as_raw())?;
    Ok(PassedSocket { listener, path })
}

/// `--launchd-socket` off macOS: launchd exists only there.
#[cfg(not(target_os = "macos"))]
pub fn take_launchd_socket(name: &str) -> Result<PassedSocket, ActivationError> {
    Err(ActivationError::Launchd(format!(
        "--launchd-socket {name:?}: launchd exists only on macOS; under systemd, agentd \
         takes the socket agentd.socket passes without any flag"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};

    fn uid() -> u32 {
        nix::unistd::geteuid().as_raw()
    }

    /// The `sd_listen_fds` rules, case by case.
    #[test]
    fn listen_variables() {
        type Case = (
            &'static [(&'static str, &'static str)],
            Result<usize, &'static str>,
        );
        let cases: &[Case] = &[
            (&[], Ok(0)),
            (&[("LISTEN_FDS", "1")], Ok(0)), // no LISTEN_PID: not for us
            (&[("LISTEN_PID", "77"), ("LISTEN_FDS", "1")], Ok(1)),
            (&[("LISTEN_PID", "78"), ("LISTEN_FDS", "1")], Ok(0)), // another process's
            (&[("LISTEN_PID", "77")], Ok(0)),
            (&[("LISTEN_PID", "77"), ("LISTEN_FDS", "0")], Ok(0)),
            (&[("LISTEN_PID", "77"), ("LISTEN_FDS", "2")], Ok(2)),
            (
                &[("LISTEN_PID", "x"), ("LISTEN_FDS", "1")],
                Err("LISTEN_PID"),
            ),
            (
                &[("LISTEN_PID", "77"), ("LISTEN_FDS", "-1")],
                Err("LISTEN_FDS"),
            ),
            (
                &[
                    ("LISTEN_PID", "77"),
                    ("LISTEN_FDS", "1"),
                    ("LISTEN_FDS_FIRST_FD", "5"),
                ],
                Err("LISTEN_FDS_FIRST_FD"),
            ),
            (
                &[
                    ("LISTEN_PID", "77"),
                    ("LISTEN_FDS", "1"),
                    ("LISTEN_FDS_FIRST_FD", "3"),
                ],
                Ok(1),
            ),
        ];
        for (vars, expected) in cases {
            let env = |k: &str| {
                vars.iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            };
            match (passed_fd_count(env, 77), expected) {
                (Ok(n), Ok(want)) => assert_eq!(n, *want, "{vars:?}"),
                (Err(e), Err(name)) => assert!(e.to_string().contains(name), "{vars:?}: {e}"),
                (got, want) => panic!("{vars:?}: {got:?}, expected {want:?}"),
            }
        }
    }

    fn private_dir(root: &Path) -> PathBuf {
        let dir = root.join("run");
        std::fs::DirBuilder::new().mode(0o700).create(&dir).unwrap();
        dir
    }

    /// Only write permission lets a process connect: 0600 and 0644 pass, a socket others
    /// can write is refused.
    #[test]
    fn the_socket_file_must_not_be_writable_by_others() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = private_dir(tmp.path());
        for (mode, ok) in [
            (0o600, true),
            (0o644, true),
            (0o700, true),
            (0o620, false),
            (0o602, false),
            (0o666, false),
        ] {
            let path = dir.join(format!("{mode:o}.sock"));
            let listener = UnixListener::bind(&path).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
            match check_passed(&listener, uid()) {
                Ok(p) => {
                    assert!(ok, "{mode:o} passed");
                    assert_eq!(p, path);
                }
                Err(e) => {
                    assert!(!ok, "{mode:o}: {e}");
                    assert!(
                        matches!(e, ActivationError::OpenSocketFile { mode: m, .. } if m == mode),
                        "{e}"
                    );
                    assert!(e.to_string().contains("SocketMode=0600"), "{e}");
                }
            }
        }
    }

    #[test]
    fn what_a_passed_socket_must_not_be() {
        let tmp = tempfile::tempdir().unwrap();
        private_dir(tmp.path());
        // A folder others may enter.
        let open = tmp.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = open.join("s.sock");
        let listener = UnixListener::bind(&path).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let err = check_passed(&listener, uid()).unwrap_err();
        assert!(matches!(err, ActivationError::Folder(_)), "{err}");
        assert!(err.to_string().contains("DirectoryMode=0700"), "{err}");

        // A socket whose file was replaced by something else.
        let path = tmp.path().join("run/gone.sock");
        let listener = UnixListener::bind(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, "not a socket").unwrap();
        let err = check_passed(&listener, uid()).unwrap_err();
        assert!(matches!(err, ActivationError::NotASocketFile(_)), "{err}");
    }

    #[test]
    fn abstract_and_non_listening_sockets_are_refused() {
        use std::os::linux::net::SocketAddrExt;
        let name = format!("agentd-test-{}", std::process::id());
        let address = std::os::unix::net::SocketAddr::from_abstract_name(name).unwrap();
        let listener = UnixListener::bind_addr(&address).unwrap();
        let err = check_passed(&listener, uid()).unwrap_err();
        assert!(matches!(err, ActivationError::NoPath), "{err}");

        // A bound socket that never listened: made with nix, turned into a listener type.
        use nix::sys::socket::{AddressFamily, SockFlag, SockType, UnixAddr, bind, socket};
        let tmp = tempfile::tempdir().unwrap();
        let path = private_dir(tmp.path()).join("quiet.sock");
        let fd = socket(
            AddressFamily::Unix,
            SockType::Stream,
            SockFlag::SOCK_CLOEXEC,
            None,
        )
        .unwrap();
        bind(
            std::os::fd::AsRawFd::as_raw_fd(&fd),
            &UnixAddr::new(&path).unwrap(),
        )
        .unwrap();
        let quiet = UnixListener::from(fd);
        let err = check_passed(&quiet, uid()).unwrap_err();
        assert!(matches!(err, ActivationError::NotListening), "{err}");
    }

    #[test]
    #[cfg(not(target_os = "macos"))]
    fn launchd_sockets_are_refused_off_macos() {
        let err = take_launchd_socket("Listeners").unwrap_err().to_string();
        assert!(err.contains("only on macOS"), "{err}");
    }
}
