//! The `agentd` command: parse arguments, set up logging, run the daemon.

use std::path::{Path, PathBuf};
use std::time::Duration;

use agentd::config::{ConfigFile, Paths, default_config_file, default_data_dir};
use agentd::daemon::RunOptions;
use agentd::transport::activation::{self, ActivationError};
use clap::Parser;
use tracing_subscriber::EnvFilter;

/// A headless AI-agent daemon: JSON-RPC 2.0 over a Unix socket.
#[derive(Debug, Parser)]
#[command(version, about, after_long_help = AFTER_HELP)]
struct Cli {
    /// Socket path [default: $XDG_RUNTIME_DIR/agentd/agentd.sock, else $TMPDIR/agentd-$UID/agentd.sock]
    #[arg(long, global = true, env = "AGENTD_SOCKET")]
    socket: Option<PathBuf>,
    /// Data directory (database, offloads) [default: $XDG_DATA_HOME/agentd]
    #[arg(long, global = true, env = "AGENTD_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// Config file [default: $XDG_CONFIG_HOME/agentd/config.toml; a missing default is fine]
    #[arg(long, global = true, env = "AGENTD_CONFIG")]
    config: Option<PathBuf>,
    /// Log filter (tracing EnvFilter syntax), e.g. "info" or "agentd=debug"
    #[arg(long, env = "AGENTD_LOG", default_value = "info")]
    log: String,
    /// Append the log to FILE (created private, 0600) instead of writing it to stderr
    #[arg(long, env = "AGENTD_LOG_FILE", value_name = "FILE")]
    log_file: Option<PathBuf>,
    /// Exit cleanly once no client has been connected, no run under way and no permission
    /// prompt waiting for this many seconds. Meant for socket activation (packaging/): the
    /// socket stays with the service manager, which starts agentd again on the next
    /// connection. Off while the WebSocket listener is on (--listen). 1 to 31536000 (a year)
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..=31_536_000))]
    exit_when_idle: Option<u64>,
    /// Also serve the protocol over WebSocket, the web page and /metrics on ADDR (IP:PORT,
    /// e.g. 127.0.0.1:7800), over `[listen] address`. Every request needs the token of
    /// `[listen] token_file` (default DATA_DIR/listen.token, made at first start)
    #[arg(long, env = "AGENTD_LISTEN", value_name = "ADDR")]
    listen: Option<String>,
    /// Keep sessions in the PostgreSQL database at URL (postgres://user@host/database)
    /// instead of the SQLite file in the data directory, over `[store] url`
    #[arg(long, env = "AGENTD_STORE", value_name = "URL", hide_env_values = true)]
    store: Option<String>,
    /// macOS: take the listening socket launchd passes under this name (a key of the
    /// LaunchAgent's Sockets). Not supported yet: see packaging/README.md. A socket systemd
    /// passes (LISTEN_FDS) is taken without any flag
    #[arg(long, value_name = "NAME")]
    launchd_socket: Option<String>,
    /// Print a manual page (roff) and exit: agentd(1), or with `acp` agentd-acp(1):
    /// `agentd --man | man -l -`
    #[arg(long, value_name = "PAGE", num_args = 0..=1, default_missing_value = "agentd",
        value_parser = ["agentd", "acp"])]
    man: Option<String>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, clap::Subcommand)]
enum Command {
    /// Speak the Agent Client Protocol on stdin/stdout for an editor (Zed, JetBrains,
    /// CodeCompanion, ...), bridged to the daemon on the socket; starts the daemon in the
    /// background when none answers
    Acp(agentd_acp::Args),
}

/// The end of `--help` and of the manual page.
const AFTER_HELP: &str = "\
Socket activation: started by systemd with a socket (agentd.socket; LISTEN_FDS and LISTEN_PID \
by the sd_listen_fds rules), agentd serves on that socket instead of binding its own, tells \
systemd when it is ready (Type=notify) and leaves the socket to systemd when it exits.

API keys: from the environment (OPENAI_API_KEY, ANTHROPIC_API_KEY, ..., or a provider's \
api_key_env), from the config file, or as systemd credentials: the file \
$CREDENTIALS_DIRECTORY/NAME for a key variable NAME (LoadCredential=NAME:FILE), which wins \
over the variable.

Signals: SIGTERM or SIGINT stop agentd cleanly (runs are saved as interrupted); a second \
one exits at once.";

fn main() {
    // A child the daemon starts runs through its own binary first (tools::process).
    agentd::process::run_guard_if_asked();
    // ... and a confined command through it once more, as the sandbox launcher.
    agentd::process::run_sandbox_if_asked();
    // No child (nor anything else of the user's) reads the daemon's memory or environment
    // through /proc or attaches to it; confined commands are kept out by Landlock too.
    if let Err(e) = nix::sys::prctl::set_dumpable(false) {
        eprintln!("agentd: cannot make the daemon non-dumpable: {e}");
        std::process::exit(1);
    }
    // Before anything is created: everything the daemon writes (the database and its
    // -wal/-shm, offloads, session folders, workspaces it makes) is private, whatever the
    // data dir's own mode. Tools give the user's own umask back to what they create for
    // the user (`process::child_umask`).
    let user_umask = nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o077));
    agentd::process::set_child_umask(user_umask.bits());
    let cli = Cli::parse();
    if let Some(page) = cli.man.as_deref() {
        print_man(page);
    }
    if let Some(Command::Acp(args)) = cli.command {
        // The bridge writes nothing; a daemon it starts must see the user's own umask (it
        // hands it to the tools' children), not the private one set above.
        nix::sys::stat::umask(user_umask);
        let socket = cli.socket.unwrap_or_else(|| {
            agent_proto::paths::default_socket_path(nix::unistd::geteuid().as_raw())
        });
        let daemon = agentd_acp::DaemonOptions {
            socket,
            data_dir: cli.data_dir,
            config: cli.config,
            start: true,
            program: None,
        };
        std::process::exit(agentd_acp::main(args, daemon));
    }
    let filter = EnvFilter::try_new(agentd::tools::mcp::log_filter(&cli.log)).unwrap_or_else(|e| {
        eprintln!(
            "agentd: invalid --log filter {:?} ({e}); using \"info\"",
            cli.log
        );
        EnvFilter::new(agentd::tools::mcp::log_filter("info"))
    });
    let to_terminal = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let writer = match &cli.log_file {
        Some(path) => match open_log_file(path) {
            Ok(file) => agentd::tools::mcp::redact::MaskedLog::to_file(file),
            Err(e) => {
                eprintln!("agentd: cannot open the log file {}: {e}", path.display());
                std::process::exit(1);
            }
        },
        None => agentd::tools::mcp::redact::MaskedLog::default(),
    };
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer)
        .with_ansi(to_terminal && cli.log_file.is_none())
        .init();
    // Started by hand in a terminal: the log goes nowhere else, so say where it could.
    if to_terminal && cli.log_file.is_none() && std::env::var_os("INVOCATION_ID").is_none() {
        tracing::info!(
            "logging to this terminal only: --log-file FILE (AGENTD_LOG_FILE) keeps the log; \
             run as a systemd user service (packaging/), it goes to the journal \
             (journalctl --user -u agentd)"
        );
    }
    if let Err(e) = run(cli) {
        eprintln!("agentd: {e:#}");
        std::process::exit(1);
    }
}

/// The log file, appended to, created private (0600).
fn open_log_file(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .open(path)
}

fn run(cli: Cli) -> anyhow::Result<()> {
    let env = |k: &str| std::env::var(k).ok();
    let uid = nix::unistd::geteuid().as_raw();
    // Before the runtime starts any thread: taking a socket systemd passed clears
    // LISTEN_PID and LISTEN_FDS from the environment.
    let passed = match &cli.launchd_socket {
        Some(name) => Some(activation::take_launchd_socket(name)?),
        None => activation::take_passed_socket(uid)?,
    };
    let socket = match (&passed, cli.socket) {
        (Some(passed), Some(asked)) if !same_path(&passed.path, &asked) => {
            return Err(ActivationError::OtherPath {
                passed: passed.path.clone(),
                asked,
            }
            .into());
        }
        (Some(passed), _) => passed.path.clone(),
        (None, Some(asked)) => asked,
        (None, None) => agent_proto::paths::default_socket_path(uid),
    };
    let data_dir = match cli.data_dir {
        Some(dir) => dir,
        None => default_data_dir(env).ok_or_else(|| {
            anyhow::anyhow!("no --data-dir and neither XDG_DATA_HOME nor HOME is set")
        })?,
    };
    let (config_file, config_required) = match cli.config {
        Some(path) => (path, true),
        None => (
            default_config_file(env).unwrap_or_else(|| PathBuf::from("/nonexistent/agentd.toml")),
            false,
        ),
    };
    let config = ConfigFile::load(&config_file, config_required)?;
    // The sections the daemon's modules own, each checked by its owner.
    agentd::daemon::check_config(&config)?;
    let paths = Paths {
        socket,
        data_dir,
        config_file: Some(config_file),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("agentd")
        .build()?;
    let options = RunOptions {
        passed_socket: passed,
        exit_when_idle: cli.exit_when_idle.map(Duration::from_secs),
        config_required,
        listen: cli.listen,
        store: cli.store,
    };
    runtime.block_on(agentd::daemon::run(paths, config, options))
}

/// Prints agentd(1), or agentd-acp(1) for `page` "acp", generated from the flags above, and
/// exits.
fn print_man(page: &str) -> ! {
    use clap::CommandFactory;
    use std::io::Write;
    let command = match page {
        "acp" => Cli::command().find_subcommand("acp").cloned().map(|acp| {
            acp.name("agentd-acp")
                .bin_name("agentd acp")
                .version(env!("CARGO_PKG_VERSION"))
        }),
        _ => Some(Cli::command()),
    };
    let Some(command) = command else {
        eprintln!("agentd: no manual page {page:?}");
        std::process::exit(1)
    };
    let mut page = Vec::new();
    let rendered = clap_mangen::Man::new(command).render(&mut page);
    let mut out = std::io::stdout().lock();
    match rendered
        .and_then(|()| out.write_all(&page))
        .and_then(|()| out.flush())
    {
        Ok(()) => std::process::exit(0),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(0),
        Err(e) => {
            eprintln!("agentd: cannot print the manual page: {e}");
            std::process::exit(1)
        }
    }
}

/// Whether two socket paths name the same file (as written, or once their folders are
/// resolved).
fn same_path(a: &Path, b: &Path) -> bool {
    let resolved = |p: &Path| {
        let dir = p.parent()?.canonicalize().ok()?;
        Some(dir.join(p.file_name()?))
    };
    a == b || resolved(a).is_some_and(|a| Some(a) == resolved(b))
}
