//! Wiring and shutdown: builds every part from the configuration, serves until a signal
//! (or, with `--exit-when-idle`, until nothing has used it for that long), then stops in
//! order: stop accepting, let runs reach a checkpoint (their messages become `interrupted`,
//! seqs are saved), close connections, flush the store, remove the socket (unless a service
//! manager passed it: then it stays with the manager, which queues the next connections and
//! starts the daemon again). A second signal during shutdown exits at once.
//!
//! Under systemd (`Type=notify`) the daemon reports `READY=1` once it serves and
//! `STOPPING=1` when it begins to stop; API keys may come as systemd credentials
//! (`config::Credentials`).

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio::signal::unix::{SignalKind, signal};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::agents::AgentService;
use crate::config::{ConfigError, ConfigFile, Credentials, Paths};
use crate::process::ProcessLauncher;
use crate::process::env::EnvPolicy;
use crate::provider::{ProviderRegistry, install_tls_provider};
use crate::rpc::dispatch::{DispatchLimits, Dispatcher};
use crate::session::events::ReplayLimits;
use crate::session::{SessionConfig, SessionManager};
use crate::store::Store;
use crate::tools::center::ToolCenter;
use crate::tools::mcp::McpManager;
use crate::transport::{self, BoundSocket, IdleExit, PassedSocket, ServeEnd, ServeOptions};

/// The data dir, checked and locked at start.
mod data_dir;

/// Exit status after a second signal cut the shutdown short.
pub const EXIT_FORCED: i32 = 130;

/// How the daemon runs, beyond its paths and config.
#[derive(Debug, Default)]
pub struct RunOptions {
    /// The socket a service manager passed (socket activation), already checked; without
    /// one the daemon binds `paths.socket` itself.
    pub passed_socket: Option<PassedSocket>,
    /// Exit once idle this long (`--exit-when-idle`): no connection, run or waiting prompt.
    pub exit_when_idle: Option<Duration>,
}

/// Runs the daemon until SIGTERM or SIGINT (or until idle, see [`RunOptions`]), then shuts
/// down cleanly.
pub async fn run(paths: Paths, config: ConfigFile, options: RunOptions) -> anyhow::Result<()> {
    install_tls_provider();
    let uid = nix::unistd::geteuid().as_raw();

    let _data_lock = data_dir::lock(&paths.data_dir, uid)?;
    let store = Store::open(&paths.database())
        .await
        .with_context(|| format!("cannot open the store {}", paths.database().display()))?;
    {
        use std::os::unix::fs::PermissionsExt;
        // The owner only (SQLite gives its -wal and -shm files the same mode).
        std::fs::set_permissions(paths.database(), std::fs::Permissions::from_mode(0o600))
            .with_context(|| format!("cannot make {} private", paths.database().display()))?;
    }
    let env_policy = EnvPolicy::from_config(&config, crate::provider::key_variables())
        .map_err(|e| anyhow::anyhow!(e))?;
    let processes = Arc::new(
        ProcessLauncher::new(&paths.data_dir, env_policy).map_err(|e| anyhow::anyhow!(e))?,
    );
    let leftovers = processes.kill_leftover_groups();
    if leftovers > 0 {
        tracing::info!(
            count = leftovers,
            "killed process groups the last run left behind"
        );
    }
    let credentials = Credentials::from_env(|k| std::env::var(k).ok());
    let providers = Arc::new(ProviderRegistry::from_config(
        &config,
        credentials.lookup(|k| std::env::var(k).ok()),
    )?);
    tracing::info!(
        default_provider = providers.default_provider(),
        providers = providers.list_providers().len(),
        "providers ready"
    );
    let mcp_http = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .build()
        .context("cannot build the HTTP client for MCP servers")?;
    let mcp = McpManager::new(
        store.clone(),
        mcp_http,
        processes.clone(),
        (&config.mcp).into(),
    );
    mcp.load(&config.mcp_servers)
        .await
        .context("cannot load the MCP servers")?;
    let web_search = config
        .web_search
        .as_ref()
        .map(|c| {
            crate::tools::builtin::web_search::SearchBackend::new(
                c,
                credentials.lookup(|k| std::env::var(k).ok()),
            )
        })
        .transpose()
        .map_err(|e| anyhow::anyhow!(e))?;
    let profiles = Arc::new(profiles_of(&config)?);
    let tools = Arc::new(
        ToolCenter::new(
            &paths.data_dir,
            &config.permissions,
            &config.tools,
            crate::tools::center::ToolSetup {
                mcp: mcp.clone(),
                processes: processes.clone(),
                web_search,
                profiles,
                skills: Arc::new(crate::skills::Skills::new(
                    config.skills.folders.clone(),
                    crate::config::default_skills_dir(|k| std::env::var(k).ok()),
                )),
                sandbox: sandbox_plan(&paths, &config, processes.sandbox().clone())?,
            },
        )
        .map_err(|e| anyhow::anyhow!(e))?,
    );
    let acp_agents = Arc::new(crate::acp_backend::AcpAgents::new(
        &config.acp_agents,
        processes.clone(),
    ));
    let limits = &config.limits;
    let manager = SessionManager::new(
        store.clone(),
        providers.clone(),
        tools.clone(),
        SessionConfig {
            defaults: config.defaults.clone(),
            context: config.context,
            replay: ReplayLimits {
                events: limits.replay_events,
                bytes: limits.replay_bytes,
            },
            max_parallel_tasks: config.subagents.max_parallel,
            answer_caps: crate::agent_loop::AnswerCaps::from_limits(limits),
            max_attached_text_bytes: limits.max_attached_text_bytes,
            max_attached_document_bytes: limits.max_attached_document_bytes,
            replay_budget: limits.replay_budget_bytes,
            idle_session: Duration::from_secs(limits.idle_session_secs),
            acp_agents: acp_agents.clone(),
            hooks: Arc::new(crate::hooks::Hooks::new(
                config.hooks.iter().map(|h| h.spec()).collect(),
                processes.clone(),
            )),
        },
    );
    let interrupted = manager.recover().await?;
    if interrupted > 0 {
        tracing::info!(
            count = interrupted,
            "marked messages left unfinished by the last run as interrupted"
        );
    }
    let agents = AgentService::new(
        store.clone(),
        providers.clone(),
        tools,
        manager.clone(),
        config.defaults.clone(),
        config.subagents.clone(),
    );
    agents.resume_background_tasks().await?;
    let dispatcher = Dispatcher::new(
        crate::rpc::methods(
            crate::rpc::Services {
                agents,
                sessions: manager.clone(),
                mcp: mcp.clone(),
                providers,
            },
            limits.replay_events,
        ),
        manager.clone(),
        DispatchLimits {
            max_in_flight: limits.max_in_flight_requests,
            request_timeout: Duration::from_secs(limits.request_timeout_secs),
            max_batch: limits.max_batch_requests,
            max_subscriptions: limits.max_subscriptions_per_connection,
        },
    );

    let mut terminate = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    let socket = match options.passed_socket {
        Some(passed) => BoundSocket::passed(passed)
            .context("cannot serve on the socket the service manager passed")?,
        None => transport::bind(&paths.socket, uid)?,
    };
    tracing::info!(
        socket = %socket.path.display(),
        passed = socket.is_passed(),
        data_dir = %paths.data_dir.display(),
        "agentd listening"
    );
    let idle = options
        .exit_when_idle
        .map(|after| idle_exit(manager.clone(), after));

    let stop_accepting = CancellationToken::new();
    let close_connections = CancellationToken::new();
    let connections = TaskTracker::new();
    let serving = transport::serve(
        &socket,
        dispatcher,
        uid,
        ServeOptions {
            limits: transport::TransportLimits {
                max_connections: limits.max_connections,
                max_buffered_input: limits.max_buffered_input_bytes,
            },
            idle,
            refused_peer: Some(transport::PeerFilter({
                let processes = processes.clone();
                Arc::new(move |pid| processes.is_confined(pid))
            })),
        },
        stop_accepting.clone(),
        close_connections.clone(),
        &connections,
    );
    // The socket listens and every part is wired: connections made from now on are served.
    notify(&[
        sd_notify::NotifyState::Ready,
        sd_notify::NotifyState::Status("serving"),
    ]);
    tokio::select! {
        end = serving => if let (ServeEnd::Idle, Some(after)) = (end, options.exit_when_idle) {
            tracing::info!(
                idle_secs = after.as_secs(),
                "no client, run or waiting prompt for the idle time: exiting{}",
                if socket.is_passed() { " (the service manager keeps the socket)" } else { "" }
            );
        },
        _ = terminate.recv() => tracing::info!("SIGTERM: shutting down"),
        _ = interrupt.recv() => tracing::info!("SIGINT: shutting down"),
    }
    stop_accepting.cancel();
    notify(&[
        sd_notify::NotifyState::Stopping,
        sd_notify::NotifyState::Status("stopping"),
    ]);

    let mcp_to_kill = mcp.clone();
    let forced = tokio::spawn(async move {
        tokio::select! {
            _ = terminate.recv() => {}
            _ = interrupt.recv() => {}
        }
        tracing::warn!("second signal: exiting at once");
        mcp_to_kill.kill_all_now();
        std::process::exit(EXIT_FORCED);
    });

    manager
        .shutdown(Duration::from_secs(limits.shutdown_grace_secs))
        .await;
    mcp.shutdown().await;
    acp_agents.shutdown().await;
    close_connections.cancel();
    connections.close();
    if tokio::time::timeout(Duration::from_secs(2), connections.wait())
        .await
        .is_err()
    {
        tracing::warn!("some connections did not close within 2 s");
    }
    store.close().await;
    socket.remove();
    forced.abort();
    tracing::info!("agentd stopped");
    Ok(())
}

/// `--exit-when-idle`: what keeps the daemon up besides its connections is asked of the
/// sessions: a run under way, or a prompt waiting for an answer (which a client may come
/// back to answer). A store that cannot tell counts as busy: the daemon stays up rather
/// than guess.
/// Checks the sections of the config the daemon's modules own (the config checks its own
/// at load: `ConfigFile::validate`), each by its owner, in the order of the file's
/// documentation; the error names the section and the key.
pub fn check_config(config: &ConfigFile) -> Result<(), ConfigError> {
    profiles_of(config)?;
    config.subagents.validate().map_err(ConfigError::Invalid)?;
    crate::acp_backend::validate(&config.acp_agents).map_err(ConfigError::Invalid)?;
    for (i, hook) in config.hooks.iter().enumerate() {
        crate::hooks::validate(&hook.spec())
            .map_err(|e| ConfigError::Invalid(format!("hooks[{i}]: {e}")))?;
    }
    if let Some(search) = &config.web_search {
        crate::tools::builtin::web_search::validate(search).map_err(ConfigError::Invalid)?;
    }
    config.skills.validate().map_err(ConfigError::Invalid)
}

/// The built-in profiles and the config's `[[profiles]]` (see `Profiles::from_file`).
fn profiles_of(config: &ConfigFile) -> Result<crate::profiles::Profiles, ConfigError> {
    crate::profiles::Profiles::from_file(config).map_err(ConfigError::Invalid)
}

/// The OS sandbox of commands as the config asks for it, with what the machine can do
/// (logged: where it is not available and the mode asks for it, every command asks).
fn sandbox_plan(
    paths: &Paths,
    config: &ConfigFile,
    support: crate::process::SandboxSupport,
) -> anyhow::Result<crate::tools::wall::SandboxPlan> {
    let env = |k: &str| std::env::var(k).ok();
    let home = env("HOME").map(std::path::PathBuf::from);
    let (writable, mut hidden) = config
        .sandbox
        .resolve(home.as_deref())
        .map_err(|e| anyhow::anyhow!("invalid config: {e}"))?;
    hidden.extend(paths.secrets(env));
    let mode = config.sandbox.mode;
    match (&support.reason, mode) {
        (None, _) => tracing::info!(
            mode = mode.as_str(),
            abi = support.abi,
            "commands run in the OS sandbox (Landlock, seccomp)"
        ),
        (Some(_), agent_proto::SandboxMode::Off) => {}
        (Some(why), _) => tracing::warn!(
            mode = mode.as_str(),
            "the OS sandbox is not available here ({why}): every command will ask, and runs              with the user's full rights if granted; set [sandbox] mode = \"off\" to say so"
        ),
    }
    Ok(crate::tools::wall::SandboxPlan::new(
        mode, writable, hidden, support,
    ))
}

fn idle_exit(manager: Arc<SessionManager>, after: Duration) -> IdleExit {
    IdleExit {
        after,
        busy: Box::new(move || {
            let manager = manager.clone();
            Box::pin(async move {
                if manager.active_runs() > 0 {
                    return Some("a run is under way");
                }
                match manager.waiting_prompts().await {
                    Ok(0) => None,
                    Ok(_) => Some("a permission prompt waits for an answer"),
                    Err(e) => {
                        tracing::warn!("cannot tell whether prompts are waiting: {e}");
                        Some("the store cannot tell whether prompts wait")
                    }
                }
            })
        }),
    }
}

/// Tells a service manager that waits for it (`Type=notify`) how the daemon stands; does
/// nothing without `NOTIFY_SOCKET`.
fn notify(states: &[sd_notify::NotifyState]) {
    if let Err(e) = sd_notify::notify(states) {
        tracing::warn!("cannot notify the service manager: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_example_config_is_valid() {
        let text = include_str!("../../docs/examples/config.toml");
        let config = ConfigFile::parse(text).unwrap_or_else(|e| panic!("{e}"));
        config.validate().unwrap_or_else(|e| panic!("{e}"));
        check_config(&config).unwrap_or_else(|e| panic!("{e}"));
        let profiles = profiles_of(&config).unwrap_or_else(|e| panic!("{e}"));
        assert!(
            profiles
                .all()
                .iter()
                .any(|p| p.source == agent_proto::ProfileSource::Config),
            "the example shows a [[profiles]] entry"
        );
    }

    /// The wiring gives the environment policy every preset's key variable.
    #[test]
    fn every_preset_key_is_a_secret() {
        let config = ConfigFile::parse(
            "[[providers]]\nid = \"work\"\nkind = \"openai\"\napi_key_env = \"WORK_LLM\"\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let policy = EnvPolicy::from_config(&config, crate::provider::key_variables())
            .unwrap_or_else(|e| panic!("{e}"));
        let names = [
            "WORK_LLM",
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
            "GEMINI_API_KEY",
            "GOOGLE_API_KEY",
            "DEEPSEEK_API_KEY",
        ];
        let daemon = names
            .iter()
            .map(|n| (std::ffi::OsString::from(n), std::ffi::OsString::from("k")));
        let out = policy.bash_env(daemon);
        for name in names {
            assert!(
                out.iter().all(|(k, _)| k != name),
                "{name} reached bash: {out:?}"
            );
        }
    }
}
