//! Running part of a test as another user (uid [`OTHER_UID`], `nobody`), for the checks of
//! who may talk to whom. Switching users needs root: a test that cannot prints that it is
//! skipped and why ([`can_switch_user`]), so a skip is never mistaken for a pass.
//!
//! The other user runs a copy of the test binary itself, on one of its ignored tests: a
//! checkout may sit in a 0700 folder that `nobody` cannot enter, so the copy lives in a
//! folder open to all.

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout};

/// The uid (and gid) the other user runs as.
pub const OTHER_UID: u32 = 65534;

/// Environment variable naming the socket path [`listen_and_report`] serves.
pub const LISTEN_ENV: &str = "AGENTD_PROBE_LISTEN";

/// How long to wait for the other user's process to say something.
const WAIT: Duration = Duration::from_secs(10);

/// True when this process can run things as another user (it is root); otherwise prints
/// that `test` is skipped and why.
pub fn can_switch_user(test: &str) -> bool {
    if nix::unistd::geteuid().is_root() {
        return true;
    }
    eprintln!("skipped {test}: running a process as another uid needs root (this is not a pass)");
    false
}

/// A copy of the running test binary that another user can run.
pub struct SelfCopy {
    exe: PathBuf,
    _dir: tempfile::TempDir,
}

impl SelfCopy {
    pub fn new() -> SelfCopy {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let exe = dir.path().join("probe");
        std::fs::copy(std::env::current_exe().unwrap(), &exe).unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        SelfCopy { exe, _dir: dir }
    }

    /// A command that runs the ignored test `test` (its full path in the test binary) as
    /// [`OTHER_UID`].
    pub fn command(&self, test: &str) -> std::process::Command {
        let mut command = std::process::Command::new(&self.exe);
        command
            .args([
                "--exact",
                test,
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .uid(OTHER_UID)
            .gid(OTHER_UID);
        command
    }
}

/// Runs `attempt` again while it fails with ETXTBSY: a copy just written may still be open
/// for writing in a child another test thread forked meanwhile (until that child execs).
pub fn retry_busy<T>(mut attempt: impl FnMut() -> std::io::Result<T>) -> std::io::Result<T> {
    const ETXTBSY: i32 = 26;
    let mut tries = 0;
    loop {
        match attempt() {
            Err(e) if e.raw_os_error() == Some(ETXTBSY) && tries < 200 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            other => return other,
        }
    }
}

impl Default for SelfCopy {
    fn default() -> Self {
        SelfCopy::new()
    }
}

/// A Unix socket served by a process of [`OTHER_UID`] that answers nothing and reports how
/// many bytes its one client sent.
pub struct ForeignListener {
    path: PathBuf,
    child: Child,
    lines: Lines<BufReader<ChildStdout>>,
    _copy: SelfCopy,
    _dir: tempfile::TempDir,
}

impl ForeignListener {
    /// Starts `test`, an ignored test of this binary that calls [`listen_and_report`], as
    /// [`OTHER_UID`], and waits until it listens.
    pub async fn start(test: &str) -> ForeignListener {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("run");
        std::fs::create_dir(&folder).unwrap();
        std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::os::unix::fs::chown(&folder, Some(OTHER_UID), Some(OTHER_UID)).unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = folder.join("agentd.sock");
        let copy = SelfCopy::new();
        let mut command = tokio::process::Command::from(copy.command(test));
        command
            .env(LISTEN_ENV, &path)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        let mut child = retry_busy(|| command.spawn()).unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut listener = ForeignListener {
            path,
            child,
            lines,
            _copy: copy,
            _dir: dir,
        };
        let line = listener.next_report().await;
        assert_eq!(line, "LISTENING", "the other user's listener did not start");
        listener
    }

    /// The socket path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How many bytes the one client sent before it closed its end.
    pub async fn received(mut self) -> usize {
        let line = self.next_report().await;
        let n = line
            .strip_prefix("RECEIVED ")
            .unwrap_or_else(|| panic!("the listener said {line:?}"));
        let _ = self.child.wait().await;
        n.parse().unwrap()
    }

    /// The next `PROBE ...` line of the listener's output.
    async fn next_report(&mut self) -> String {
        loop {
            let line = tokio::time::timeout(WAIT, self.lines.next_line())
                .await
                .unwrap_or_else(|_| panic!("the other user's listener said nothing in {WAIT:?}"))
                .unwrap()
                .unwrap_or_else(|| panic!("the other user's listener exited"));
            // libtest may print the test's name on the same line first.
            if let Some((_, report)) = line.split_once("PROBE ") {
                return report.to_owned();
            }
        }
    }
}

/// The body of the listener's ignored test: serves the socket at `$AGENTD_PROBE_LISTEN`,
/// prints `PROBE LISTENING`, accepts one connection, reads it to its end (sending nothing)
/// and prints `PROBE RECEIVED <bytes>`. Does nothing without the variable (a plain
/// `--ignored` run).
pub fn listen_and_report() {
    let Some(path) = std::env::var_os(LISTEN_ENV) else {
        return;
    };
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    println!("PROBE LISTENING");
    std::io::stdout().flush().unwrap();
    let (mut stream, _) = listener.accept().unwrap();
    stream.set_read_timeout(Some(WAIT / 2)).unwrap();
    let mut received = Vec::new();
    // A client that never closes shows up as a timeout: count what came.
    let _ = stream.read_to_end(&mut received);
    println!("PROBE RECEIVED {}", received.len());
    std::io::stdout().flush().unwrap();
}
