//! A harness that runs the real `agentd` binary on a temp socket and data dir.
//!
//! Its log (stdout and stderr, at debug level) goes to `daemon.log` in the temp dir and is
//! kept across restarts, so a failing test can print it. Dropping the harness kills the
//! daemon: no daemon outlives its test.

use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use agent_proto::client::Client;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tokio::process::{Child, Command};

/// The API key written into [`openai_config`]; tests check it never leaks.
pub const TEST_API_KEY: &str = "sk-test-secret-key";

/// A config whose default provider `mock` is an OpenAI-compatible server at `mock_url`.
pub fn openai_config(mock_url: &str) -> String {
    format!(
        r#"[defaults]
provider = "mock"
model = "mock-model"

[[providers]]
id = "mock"
kind = "openai"
base_url = "{mock_url}"
api_key = "{TEST_API_KEY}"
models = [{{ id = "mock-model", context_window = 32768, max_output_tokens = 4096 }}]
"#
    )
}

/// How to start a daemon.
#[derive(Debug, Clone, Default)]
pub struct DaemonOptions {
    pub config_toml: String,
    pub env: Vec<(String, String)>,
}

pub struct TestDaemon {
    bin: PathBuf,
    options: DaemonOptions,
    dir: tempfile::TempDir,
    socket: PathBuf,
    data_dir: PathBuf,
    config: PathBuf,
    log: PathBuf,
    child: Option<Child>,
}

impl TestDaemon {
    pub async fn start(bin: &Path, config_toml: &str) -> TestDaemon {
        TestDaemon::start_with(
            bin,
            DaemonOptions {
                config_toml: config_toml.into(),
                env: Vec::new(),
            },
        )
        .await
    }

    pub async fn start_with(bin: &Path, options: DaemonOptions) -> TestDaemon {
        let dir = tempfile::tempdir().unwrap();
        let run = dir.path().join("run");
        std::fs::DirBuilder::new().mode(0o700).create(&run).unwrap();
        let config = dir.path().join("config.toml");
        std::fs::write(&config, &options.config_toml).unwrap();
        let mut daemon = TestDaemon {
            bin: bin.to_owned(),
            options,
            socket: run.join("agentd.sock"),
            data_dir: dir.path().join("data"),
            log: dir.path().join("daemon.log"),
            config,
            dir,
            child: None,
        };
        daemon.spawn().await;
        daemon
    }

    async fn spawn(&mut self) {
        assert!(self.child.is_none(), "the daemon is already running");
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .unwrap();
        let mut command = Command::new(&self.bin);
        command
            .arg("--socket")
            .arg(&self.socket)
            .arg("--data-dir")
            .arg(&self.data_dir)
            .arg("--config")
            .arg(&self.config)
            .env("AGENTD_LOG", "debug")
            .env_remove("AGENTD_SOCKET")
            .env_remove("AGENTD_DATA_DIR")
            .env_remove("AGENTD_CONFIG")
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .kill_on_drop(true);
        for (k, v) in &self.options.env {
            command.env(k, v);
        }
        let mut child = command.spawn().unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if tokio::net::UnixStream::connect(&self.socket).await.is_ok() {
                break;
            }
            if let Some(status) = child.try_wait().unwrap() {
                panic!(
                    "agentd exited before it was ready ({status}); log:\n{}",
                    self.log()
                );
            }
            assert!(
                Instant::now() < deadline,
                "agentd was not ready within 10 s; log:\n{}",
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        self.child = Some(child);
    }

    pub fn socket(&self) -> &Path {
        &self.socket
    }

    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    pub fn db_path(&self) -> PathBuf {
        self.data_dir.join("agentd.db")
    }

    /// The temp dir holding everything of this daemon.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().and_then(Child::id)
    }

    /// A typed client connected to the daemon.
    pub async fn client(&self) -> Client {
        agent_proto::client::connect(&self.socket)
            .await
            .unwrap_or_else(|e| panic!("cannot connect to agentd: {e}; log:\n{}", self.log()))
    }

    /// SIGKILL, then waits for the process to be gone.
    pub async fn kill9(&mut self) {
        let mut child = self.child.take().expect("the daemon is not running");
        child.kill().await.unwrap();
    }

    /// SIGTERM, then waits (up to 10 s) for the exit status.
    pub async fn terminate(&mut self) -> ExitStatus {
        let mut child = self.child.take().expect("the daemon is not running");
        let pid = child.id().expect("a pid") as i32;
        kill(Pid::from_raw(pid), Signal::SIGTERM).unwrap();
        match tokio::time::timeout(Duration::from_secs(10), child.wait()).await {
            Ok(status) => status.unwrap(),
            Err(_) => {
                let _ = child.kill().await;
                panic!(
                    "agentd did not exit within 10 s of SIGTERM; log:\n{}",
                    self.log()
                );
            }
        }
    }

    /// Starts the daemon again on the same socket, data dir and config.
    pub async fn restart(&mut self) {
        self.spawn().await;
    }

    /// Everything the daemon logged so far (all runs).
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for TestDaemon {
    fn drop(&mut self) {
        if let Some(child) = self.child.as_mut() {
            let _ = child.start_kill();
        }
        if std::thread::panicking() {
            eprintln!(
                "---- agentd log ({}) ----\n{}",
                self.log.display(),
                self.log()
            );
        }
    }
}
