//! A stand-in for a socket-activating service manager, as systemd's `agentd.socket` is: it
//! holds the listening socket for as long as it lives, and whenever a connection waits and
//! no daemon runs, it starts one, handing it the socket as descriptor 3 with
//! `LISTEN_FDS=1` and `LISTEN_PID` (by the `sd_listen_fds` rules). A daemon that exits
//! leaves the socket here, so connections made meanwhile wait in its queue for the next
//! daemon. Each start and exit is reported as a [`Life`].
//!
//! (`systemd-socket-activate` does the first start only: it execs the daemon in its own
//! place, so the socket goes away with it.)

use std::ffi::OsString;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use command_fds::{CommandFdExt, FdMapping};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// One start or exit of the daemon.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Life {
    Started { pid: u32 },
    Exited { pid: u32, status: ExitStatus },
}

/// What the activator starts.
#[derive(Debug, Clone)]
pub struct Activated {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    pub env: Vec<(String, String)>,
    /// Appended with the daemon's stdout and stderr, across lives.
    pub log: PathBuf,
}

/// The socket holder; dropping it kills a running daemon and closes the socket.
pub struct SocketActivator {
    path: PathBuf,
    lives: mpsc::Receiver<Life>,
    task: JoinHandle<()>,
    /// Dropped with the activator: its pipe's other end then reports a hang-up, which ends
    /// a wait for a connection.
    _stop: OwnedFd,
}

impl SocketActivator {
    /// Binds `path` with mode 0600 (its folder must exist; make it 0700, as systemd's
    /// `DirectoryMode=0700` does) and starts watching it.
    pub fn start(path: &Path, activated: Activated) -> SocketActivator {
        let listener = UnixListener::bind(path)
            .unwrap_or_else(|e| panic!("cannot bind {}: {e}", path.display()));
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let (tx, lives) = mpsc::channel(64);
        let (stopped, stop) = nix::unistd::pipe().unwrap();
        let task = tokio::spawn(watch(OwnedFd::from(listener), stopped, activated, tx));
        SocketActivator {
            path: path.to_owned(),
            lives,
            task,
            _stop: stop,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The next start or exit; panics after `timeout`.
    pub async fn next_life(&mut self, timeout: Duration) -> Life {
        match tokio::time::timeout(timeout, self.lives.recv()).await {
            Ok(Some(life)) => life,
            Ok(None) => panic!("the socket activator stopped"),
            Err(_) => panic!("no daemon started or exited within {timeout:?}"),
        }
    }
}

impl Drop for SocketActivator {
    fn drop(&mut self) {
        // The daemon is a `kill_on_drop` child of the task.
        self.task.abort();
    }
}

/// Waits until a connection waits in the socket's queue (true), or until the activator is
/// dropped (false).
fn wait_for_connection(socket: &OwnedFd, stopped: &OwnedFd) -> bool {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    loop {
        let mut fds = [
            PollFd::new(socket.as_fd(), PollFlags::POLLIN),
            PollFd::new(stopped.as_fd(), PollFlags::POLLIN),
        ];
        match poll(&mut fds, PollTimeout::NONE) {
            Ok(_) => {}
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => panic!("cannot wait for a connection: {e}"),
        }
        let has = |fd: &PollFd, flags| fd.revents().is_some_and(|r| r.intersects(flags));
        if has(&fds[1], PollFlags::POLLIN | PollFlags::POLLHUP) {
            return false;
        }
        if has(&fds[0], PollFlags::POLLIN) {
            return true;
        }
    }
}

async fn watch(socket: OwnedFd, stopped: OwnedFd, activated: Activated, lives: mpsc::Sender<Life>) {
    loop {
        let (waiting, watched) = (socket.try_clone().unwrap(), stopped.try_clone().unwrap());
        let connection =
            tokio::task::spawn_blocking(move || wait_for_connection(&waiting, &watched))
                .await
                .unwrap();
        if !connection {
            return;
        }
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&activated.log)
            .unwrap();
        // `sh` learns its own pid ($$) and keeps it across `exec`: LISTEN_PID names the
        // daemon itself, as the rules require.
        let mut command = tokio::process::Command::new("/bin/sh");
        command
            .arg("-c")
            .arg("LISTEN_PID=$$ LISTEN_FDS=1 exec \"$0\" \"$@\"")
            .arg(&activated.program)
            .args(&activated.args)
            .envs(activated.env.iter().map(|(k, v)| (k, v)))
            .env_remove("LISTEN_FDNAMES")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .kill_on_drop(true);
        command
            .fd_mappings(vec![FdMapping {
                parent_fd: socket.try_clone().unwrap(),
                child_fd: 3,
            }])
            .unwrap();
        let mut child = command.spawn().expect("cannot start the daemon");
        drop(command); // closes the parent's copy made for the child
        let pid = child.id().unwrap();
        if lives.send(Life::Started { pid }).await.is_err() {
            return;
        }
        let status = child.wait().await.unwrap();
        if lives.send(Life::Exited { pid, status }).await.is_err() {
            return;
        }
    }
}
