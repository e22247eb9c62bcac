//! A harness that runs the real `agentd` binary on a temp socket, data dir and config.
//!
//! Everything of one daemon lives in one temp dir: `config.toml`, `data/` (created by the
//! daemon itself), `run/agentd.sock` (in a 0700 dir) and `daemon.log`, which collects stdout
//! and stderr at debug level and is kept across restarts so a failing test can show it. The
//! harness owns the process: dropping it kills the daemon, so no daemon outlives its test,
//! and a test that panics prints the end of the log.

use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use agent_proto::client::Client;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use tokio::process::{Child, Command};

/// How long the daemon may take to accept connections, and to exit after SIGTERM.
pub const DAEMON_WAIT: Duration = Duration::from_secs(10);

/// The API key written into [`openai_config`]; tests check it never leaks into logs or RPC
/// results.
pub const TEST_API_KEY: &str = "sk-test-secret-key";

/// How much of the log a failing test prints.
const LOG_TAIL_BYTES: usize = 64 * 1024;

/// Environment the daemon must not inherit: its own settings (the harness passes flags) and
/// proxies, which would send the mock model's traffic elsewhere.
const SCRUBBED_ENV: &[&str] = &[
    "AGENTD_SOCKET",
    "AGENTD_DATA_DIR",
    "AGENTD_CONFIG",
    "AGENTD_STORE",
    "AGENTD_LISTEN",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
];

/// [`openai_config`] followed by more TOML (e.g. a `[permissions]` section or another
/// provider).
pub fn openai_config_with(mock_url: &str, extra: &str) -> String {
    format!("{}\n{extra}\n", openai_config(mock_url))
}

/// A config whose default provider `mock` is an OpenAI-compatible server at `mock_url`
/// (model `mock-model`, API key [`TEST_API_KEY`]).
pub fn openai_config(mock_url: &str) -> String {
    openai_config_with_window(mock_url, 32_768)
}

/// [`openai_config`] with a model of this context window.
pub fn openai_config_with_window(mock_url: &str, context_window: u32) -> String {
    format!(
        r#"[defaults]
provider = "mock"
model = "mock-model"

[[providers]]
id = "mock"
kind = "openai"
base_url = "{mock_url}"
api_key = "{TEST_API_KEY}"
# Failures are what most scenarios test: no retries unless a test asks for them.
max_retries = 0
models = [{{ id = "mock-model", context_window = {context_window}, max_output_tokens = 4096 }}]
"#
    )
}

/// How to start a daemon.
#[derive(Debug, Clone, Default)]
pub struct DaemonOptions {
    /// Written to `config.toml` once, at start (rewrite [`TestDaemon::config_path`] before a
    /// restart to change it).
    pub config_toml: String,
    /// Extra environment, applied after `AGENTD_LOG=debug` (so it can override it).
    pub env: Vec<(String, String)>,
}

/// The daemon exited before it accepted connections.
#[derive(Debug)]
pub struct StartFailure {
    pub status: ExitStatus,
    /// Everything it logged.
    pub log: String,
}

/// A running (or stopped, between `kill9`/`terminate` and `restart`) daemon.
pub struct TestDaemon {
    bin: PathBuf,
    env: Vec<(String, String)>,
    socket: PathBuf,
    data_dir: PathBuf,
    config: PathBuf,
    log: PathBuf,
    child: Option<Child>,
    // Last, so it is deleted after the child is killed.
    dir: tempfile::TempDir,
}

/// The environment variable that runs every test daemon on PostgreSQL: with
/// `AGENTD_TEST_STORE=postgres` each gets a database of its own on the test cluster
/// (`crate::postgres`), kept across its restarts.
pub const TEST_STORE_ENV: &str = "AGENTD_TEST_STORE";

/// A fresh database's URL when this run puts test daemons on PostgreSQL and the test did
/// not name a store itself.
async fn store_of_this_run(env: &[(String, String)]) -> Option<String> {
    if env.iter().any(|(k, _)| k == "AGENTD_STORE") {
        return None;
    }
    match std::env::var(TEST_STORE_ENV).as_deref() {
        Ok("postgres") => {
            let cluster = crate::postgres::cluster(TEST_STORE_ENV)
                .unwrap_or_else(|| panic!("{TEST_STORE_ENV}=postgres needs PostgreSQL"));
            Some(cluster.database().await)
        }
        Ok("") | Ok("sqlite") | Err(_) => None,
        Ok(other) => panic!("{TEST_STORE_ENV}={other:?}: postgres or sqlite"),
    }
}

impl TestDaemon {
    /// The web listener's origin (`http://127.0.0.1:PORT`, or https), from the log's
    /// latest `web listener on ...` line (a port 0 listener gets a new port at each start).
    pub fn web_origin(&self) -> String {
        let log = self.log();
        let Some(at) = log.rfind("web listener on ") else {
            panic!("agentd logged no web listener; log:\n{log}");
        };
        let rest = &log[at + "web listener on ".len()..];
        rest.split(|c: char| c == ';' || c.is_whitespace())
            .next()
            .unwrap_or_default()
            .to_owned()
    }

    /// The web listener's WebSocket URL (`ws://127.0.0.1:PORT/`).
    pub fn ws_url(&self) -> String {
        format!("{}/", self.web_origin().replacen("http", "ws", 1))
    }

    /// The listener's token, from its default file in the data dir.
    pub fn listen_token(&self) -> String {
        let path = self.data_dir.join("listen.token");
        std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
            .trim()
            .to_owned()
    }

    /// A client over the WebSocket listener, with the listener's token.
    pub async fn ws_client(&self) -> Client {
        let target = agent_proto::websocket::Target::new(self.ws_url(), self.listen_token());
        agent_proto::websocket::connect(&target, Default::default())
            .await
            .unwrap_or_else(|e| panic!("cannot connect over WebSocket: {e}; log:\n{}", self.log()))
    }

    /// Starts `bin` with this config; panics (with the log) if it does not become ready.
    pub async fn start(bin: &Path, config_toml: &str) -> TestDaemon {
        let options = DaemonOptions {
            config_toml: config_toml.into(),
            env: Vec::new(),
        };
        TestDaemon::start_with(bin, options).await
    }

    /// Starts `bin` with these options; panics (with the log) if it does not become ready.
    pub async fn start_with(bin: &Path, options: DaemonOptions) -> TestDaemon {
        TestDaemon::try_start_with(bin, options)
            .await
            .unwrap_or_else(|f| {
                panic!(
                    "agentd exited before it was ready ({}); log:\n{}",
                    f.status, f.log
                )
            })
    }

    /// Starts `bin`; `Err` if it exits before accepting connections (e.g. a config it
    /// refuses). Panics if it neither exits nor becomes ready within 10 s.
    pub async fn try_start_with(
        bin: &Path,
        options: DaemonOptions,
    ) -> Result<TestDaemon, StartFailure> {
        let dir = temp_dir();
        let run = dir.path().join("run");
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&run)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", run.display()));
        let config = dir.path().join("config.toml");
        std::fs::write(&config, &options.config_toml).unwrap();
        let mut env = options.env;
        if let Some(url) = store_of_this_run(&env).await {
            env.push(("AGENTD_STORE".into(), url));
        }
        let mut daemon = TestDaemon {
            bin: bin.to_owned(),
            env,
            socket: run.join("agentd.sock"),
            data_dir: dir.path().join("data"),
            log: dir.path().join("daemon.log"),
            config,
            child: None,
            dir,
        };
        daemon.spawn().await?;
        Ok(daemon)
    }

    /// Spawns the daemon and waits until its socket accepts a connection.
    async fn spawn(&mut self) -> Result<(), StartFailure> {
        assert!(self.child.is_none(), "agentd is already running");
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
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .kill_on_drop(true);
        for name in SCRUBBED_ENV.iter().chain([&TEST_STORE_ENV]) {
            command.env_remove(name);
        }
        // The user's own config folder (skills) is not the developer's: an empty one of
        // the test's, unless the options name another.
        command.env("XDG_CONFIG_HOME", self.dir.path().join("xdg-config"));
        command.envs(self.env.iter().map(|(k, v)| (k, v)));
        let mut child = command
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", self.bin.display()));
        let deadline = tokio::time::Instant::now() + DAEMON_WAIT;
        loop {
            if tokio::net::UnixStream::connect(&self.socket).await.is_ok() {
                self.child = Some(child);
                return Ok(());
            }
            if let Some(status) = child.try_wait().unwrap() {
                let log = self.log();
                return Err(StartFailure { status, log });
            }
            if tokio::time::Instant::now() >= deadline {
                let _ = child.kill().await;
                panic!(
                    "agentd did not accept connections on {} within {DAEMON_WAIT:?}; log:\n{}",
                    self.socket.display(),
                    self.log()
                );
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    pub fn socket(&self) -> &Path {
        &self.socket
    }

    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// The SQLite database: `data_dir/agentd.db`.
    /// The SQLite file of a daemon on the embedded store (see [`TestDaemon::store_url`]).
    pub fn db_path(&self) -> PathBuf {
        self.data_dir.join("agentd.db")
    }

    /// The PostgreSQL database's URL when this daemon keeps its store there (see
    /// [`TEST_STORE_ENV`]), else `None` (the SQLite file of [`TestDaemon::db_path`]).
    pub fn postgres_url(&self) -> Option<&str> {
        self.env
            .iter()
            .find(|(k, _)| k == "AGENTD_STORE")
            .map(|(_, v)| v.as_str())
    }

    /// The daemon's store as a URL sqlx opens: the PostgreSQL database, or `sqlite://` and
    /// the file.
    pub fn store_url(&self) -> String {
        match self.postgres_url() {
            Some(url) => url.to_owned(),
            None => format!("sqlite://{}", self.db_path().display()),
        }
    }

    pub fn config_path(&self) -> &Path {
        &self.config
    }

    /// The temp dir holding everything of this daemon.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The process id while the daemon runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().and_then(Child::id)
    }

    /// A typed client connected to the daemon; panics (with the log) if it cannot connect.
    pub async fn client(&self) -> Client {
        agent_proto::client::connect(&self.socket)
            .await
            .unwrap_or_else(|e| panic!("cannot connect to agentd: {e}; log:\n{}", self.log()))
    }

    /// Sends `signal` to the running daemon.
    pub fn signal(&self, signal: Signal) {
        let pid = self.pid().expect("agentd is not running");
        let pid = Pid::from_raw(i32::try_from(pid).unwrap());
        kill(pid, signal).unwrap_or_else(|e| panic!("cannot send {signal} to agentd: {e}"));
    }

    /// Waits for the daemon to exit by itself (e.g. after [`TestDaemon::signal`]); panics,
    /// with the log, if it is still running after `timeout`.
    pub async fn wait_exit(&mut self, timeout: Duration) -> ExitStatus {
        let child = self.child.as_mut().expect("agentd is not running");
        match tokio::time::timeout(timeout, child.wait()).await {
            Ok(status) => {
                self.child = None;
                status.unwrap()
            }
            Err(_) => panic!(
                "agentd did not exit within {timeout:?}; log:\n{}",
                self.log()
            ),
        }
    }

    /// SIGKILL, then waits for the process to be gone (the socket file stays, as after a
    /// crash).
    pub async fn kill9(&mut self) {
        self.signal(Signal::SIGKILL);
        self.wait_exit(DAEMON_WAIT).await;
    }

    /// SIGTERM, then waits (up to 10 s) for the exit status.
    pub async fn terminate(&mut self) -> ExitStatus {
        self.signal(Signal::SIGTERM);
        self.wait_exit(DAEMON_WAIT).await
    }

    /// Starts the daemon again on the same socket, data dir, config file and log (after
    /// `kill9`, `terminate` or `wait_exit`); panics if it does not become ready.
    pub async fn restart(&mut self) {
        if let Err(f) = self.spawn().await {
            panic!(
                "agentd exited on restart before it was ready ({}); log:\n{}",
                f.status, f.log
            );
        }
    }

    /// Everything the daemon logged so far, across restarts.
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
            let log = self.log();
            let mut start = log.len().saturating_sub(LOG_TAIL_BYTES);
            while !log.is_char_boundary(start) {
                start += 1;
            }
            eprintln!(
                "---- agentd log ({} bytes, last {}) ----\n{}\n---- end of agentd log ----",
                log.len(),
                log.len() - start,
                &log[start..]
            );
        }
    }
}

/// A temp dir short enough that `run/agentd.sock` fits in a socket address (108 bytes on
/// Linux, 104 on macOS) even when `TMPDIR` is long.
fn temp_dir() -> tempfile::TempDir {
    let builder = || {
        let mut b = tempfile::Builder::new();
        b.prefix("agentd-test-");
        b
    };
    let dir = builder().tempdir().unwrap();
    if dir.path().join("run/agentd.sock").as_os_str().len() < 100 {
        return dir;
    }
    builder().tempdir_in("/tmp").unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// A stand-in for agentd: this test binary, re-run by a shell script with only the
    /// `fake_agentd` entry point selected. It binds the socket (replacing a stale one), logs
    /// a line, exits 3 if `FAKE_AGENTD_FAIL` is set, and exits 0 on SIGTERM.
    #[tokio::test]
    #[ignore = "the entry point of the fake daemon, not a test"]
    async fn fake_agentd() {
        let Ok(socket) = std::env::var("FAKE_AGENTD_SOCKET") else {
            return;
        };
        if std::env::var("FAKE_AGENTD_FAIL").is_ok() {
            eprintln!("fake agentd: bad config");
            std::process::exit(3);
        }
        let _ = std::fs::remove_file(&socket);
        let listener = tokio::net::UnixListener::bind(&socket).unwrap();
        let log = std::env::var("AGENTD_LOG").unwrap_or_default();
        eprintln!("fake agentd: listening, AGENTD_LOG={log}");
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).unwrap();
        loop {
            tokio::select! {
                _ = listener.accept() => {}
                _ = term.recv() => {
                    let _ = std::fs::remove_file(&socket);
                    std::process::exit(0);
                }
            }
        }
    }

    /// A script that runs [`fake_agentd`] with the socket given as `--socket`.
    fn fake_bin(dir: &Path) -> PathBuf {
        let exe = std::env::current_exe().unwrap();
        let script = dir.join("fake-agentd");
        std::fs::write(
            &script,
            format!(
                "#!/bin/sh\n[ \"$1\" = --socket ] || exit 64\nFAKE_AGENTD_SOCKET=\"$2\" exec '{}' \
                 --exact daemon::tests::fake_agentd --ignored --nocapture --test-threads=1\n",
                exe.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        script
    }

    /// Whether `pid` is gone (or a zombie: killed, not yet reaped).
    fn is_dead(pid: u32) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Ok(stat) => stat
                .rsplit_once(") ")
                .is_some_and(|(_, rest)| rest.starts_with('Z')),
            Err(_) => true,
        }
    }

    #[tokio::test]
    async fn the_harness_starts_stops_restarts_and_kills_the_daemon() {
        let bins = tempfile::tempdir().unwrap();
        let bin = fake_bin(bins.path());

        let failing = DaemonOptions {
            config_toml: "x = 1".into(),
            env: vec![("FAKE_AGENTD_FAIL".into(), "1".into())],
        };
        let failure = TestDaemon::try_start_with(&bin, failing)
            .await
            .err()
            .unwrap();
        assert_eq!(failure.status.code(), Some(3));
        assert!(
            failure.log.contains("fake agentd: bad config"),
            "{}",
            failure.log
        );

        let mut daemon = TestDaemon::start(&bin, &openai_config("http://127.0.0.1:1/v1")).await;
        let config = std::fs::read_to_string(daemon.config_path()).unwrap();
        assert!(
            config.contains(r#"base_url = "http://127.0.0.1:1/v1""#),
            "{config}"
        );
        assert!(config.contains(TEST_API_KEY));
        let run = daemon.socket().parent().unwrap();
        assert_eq!(run.metadata().unwrap().permissions().mode() & 0o777, 0o700);
        assert_eq!(daemon.data_dir(), daemon.dir().join("data"));
        assert_eq!(daemon.db_path(), daemon.dir().join("data/agentd.db"));
        assert!(
            daemon.log().contains("listening, AGENTD_LOG=debug"),
            "{}",
            daemon.log()
        );

        assert!(daemon.terminate().await.success());
        assert_eq!(daemon.pid(), None);
        daemon.restart().await;
        daemon.kill9().await;
        assert!(
            daemon.socket().exists(),
            "a killed daemon leaves its socket"
        );
        daemon.restart().await;
        assert_eq!(
            daemon.log().matches("listening").count(),
            3,
            "{}",
            daemon.log()
        );

        let pid = daemon.pid().unwrap();
        drop(daemon);
        let deadline = std::time::Instant::now() + DAEMON_WAIT;
        while !is_dead(pid) {
            assert!(
                std::time::Instant::now() < deadline,
                "dropping the harness must kill agentd"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}
