//! A throwaway PostgreSQL cluster for the tests of the store's PostgreSQL backend and of
//! several daemons on one database: Debian's `postgresql` binaries (`initdb`, `postgres`),
//! a cluster in a temp folder reached by its Unix socket only (no TCP port), started once
//! per test process and gone with it. Each test gets a database of its own
//! ([`Cluster::database`]).
//!
//! `initdb` refuses to run as root: as root the cluster runs as the `postgres` user (else
//! `nobody`). When the binaries are missing a test says it is skipped and why, unless `CI`
//! is set: then it fails, so CI never passes by skipping.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use sqlx::Connection;

/// The cluster's superuser (trust authentication on its socket).
pub const USER: &str = "agentd";

/// A running cluster.
pub struct Cluster {
    /// The folder of its socket (and of its data, in `data/`).
    dir: PathBuf,
    /// The shell that runs `postgres` and stops it when its stdin closes: with this
    /// process, however it ends.
    _keeper: Child,
    next: AtomicU32,
}

/// The cluster of this test process, started at the first call; `None` (with the reason
/// printed) when PostgreSQL is not installed and this is not CI. Panics in CI, or when the
/// binaries are there but the cluster does not start.
pub fn cluster(test: &str) -> Option<&'static Cluster> {
    static CLUSTER: OnceLock<Result<Cluster, String>> = OnceLock::new();
    match CLUSTER.get_or_init(start) {
        Ok(cluster) => Some(cluster),
        Err(missing) if std::env::var_os("CI").is_none() => {
            eprintln!("skipped {test}: {missing} (this is not a pass)");
            None
        }
        Err(missing) => panic!("{test} needs PostgreSQL: {missing}"),
    }
}

/// The folder of Debian's PostgreSQL binaries (the newest installed), or why there is none.
pub fn bin_dir() -> Result<PathBuf, String> {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|dir| {
            dir.filter_map(|e| e.ok().map(|e| e.path().join("bin")))
                .filter(|bin| bin.join("initdb").is_file() && bin.join("postgres").is_file())
                .collect()
        })
        .unwrap_or_default();
    // Versions as numbers: 9.6 < 15.
    found.sort_by_key(|bin| {
        bin.parent()
            .and_then(|v| v.file_name())
            .and_then(|v| v.to_str())
            .and_then(|v| v.split('.').next())
            .and_then(|v| v.parse::<u32>().ok())
            .unwrap_or(0)
    });
    found.pop().ok_or_else(|| {
        "no PostgreSQL server in /usr/lib/postgresql (apt-get install -y postgresql)".to_owned()
    })
}

fn start() -> Result<Cluster, String> {
    let bin = bin_dir()?;
    let dir = tempfile::Builder::new()
        .prefix("agentd-pg-")
        .tempdir()
        .map_err(|e| format!("temp dir: {e}"))?
        .keep();
    let owner = owner();
    if let Some((uid, gid)) = owner {
        std::os::unix::fs::chown(&dir, Some(uid), Some(gid)).map_err(|e| format!("chown: {e}"))?;
    }
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))
        .map_err(|e| format!("chmod: {e}"))?;
    let data = dir.join("data");
    let mut initdb = Command::new(bin.join("initdb"));
    initdb
        .args(["--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync"])
        .arg(format!("--username={USER}"))
        .arg("-D")
        .arg(&data)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    as_owner(&mut initdb, owner);
    let out = initdb.output().map_err(|e| format!("initdb: {e}"))?;
    if !out.status.success() {
        panic!(
            "initdb failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    // The keeper runs the server and stops it (fast shutdown, then the folder goes) when
    // its stdin reaches end of file: when this test process exits.
    let script = r#"
        "$1/postgres" -D "$2/data" -k "$2" -c listen_addresses= -c fsync=off \
            -c synchronous_commit=off -c full_page_writes=off -c max_connections=300 \
            >"$2/log" 2>&1 &
        pid=$!
        cat >/dev/null
        kill -INT "$pid"; wait "$pid"; rm -rf "$2"
    "#;
    let mut keeper = Command::new("sh");
    keeper
        .args(["-c", script, "pg-keeper"])
        .arg(&bin)
        .arg(&dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0);
    as_owner(&mut keeper, owner);
    let keeper = keeper.spawn().map_err(|e| format!("sh: {e}"))?;
    let cluster = Cluster {
        dir,
        next: AtomicU32::new(0),
        _keeper: keeper,
    };
    cluster.wait_ready();
    Ok(cluster)
}

/// Who runs the cluster: the `postgres` user (else `nobody`) when this process is root.
fn owner() -> Option<(u32, u32)> {
    if !nix::unistd::geteuid().is_root() {
        return None;
    }
    let user = nix::unistd::User::from_name("postgres")
        .ok()
        .flatten()
        .or_else(|| nix::unistd::User::from_name("nobody").ok().flatten())?;
    Some((user.uid.as_raw(), user.gid.as_raw()))
}

fn as_owner(command: &mut Command, owner: Option<(u32, u32)>) {
    if let Some((uid, gid)) = owner {
        command.uid(uid).gid(gid).env("HOME", "/tmp");
    }
}

impl Cluster {
    /// The folder of the cluster's socket (a URL's `host`).
    pub fn socket_dir(&self) -> &Path {
        &self.dir
    }

    /// The URL of database `name` on this cluster.
    pub fn url(&self, name: &str) -> String {
        format!(
            "postgres://{USER}@localhost/{name}?host={}",
            self.dir.display()
        )
    }

    /// A new, empty database of its own for one test; its URL.
    pub async fn database(&self) -> String {
        let name = format!(
            "t{}_{}",
            std::process::id(),
            self.next.fetch_add(1, Ordering::Relaxed)
        );
        // The socket is there a moment before the server takes connections.
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut admin = loop {
            match sqlx::PgConnection::connect(&self.url("postgres")).await {
                Ok(conn) => break conn,
                Err(e) if Instant::now() > deadline => {
                    panic!("cannot reach the test cluster: {e}")
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        };
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&mut admin)
            .await
            .unwrap();
        admin.close().await.unwrap();
        self.url(&name)
    }

    /// Waits for the server to accept connections (its socket appears, then answers).
    fn wait_ready(&self) {
        let socket = self.dir.join(".s.PGSQL.5432");
        let deadline = Instant::now() + Duration::from_secs(60);
        while !socket.exists() {
            if Instant::now() > deadline {
                panic!(
                    "the test PostgreSQL did not start within 60 s; its log:\n{}",
                    std::fs::read_to_string(self.dir.join("log")).unwrap_or_default()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}
