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
use crate::metrics::Metrics;
use crate::process::ProcessLauncher;
use crate::process::env::EnvPolicy;
use crate::provider::{ProviderRegistry, install_tls_provider};
use crate::rpc::dispatch::{DispatchLimits, Dispatcher};
use crate::session::events::ReplayLimits;
use crate::session::{SessionConfig, SessionManager};
use crate::store::Store;
use crate::tools::center::ToolCenter;
use crate::tools::mcp::McpManager;
use crate::transport::web::WebListener;
use crate::transport::{
    self, Admission, BoundSocket, IdleExit, PassedSocket, ServeEnd, ServeOptions,
};

/// The data dir, checked and locked at start.
pub mod cluster;
mod data_dir;
/// SIGHUP: the config read again, what can change live applied.
mod reload;

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
    /// The config file was named explicitly: on SIGHUP a missing file is an error (a
    /// missing default file means the defaults).
    pub config_required: bool,
    /// `--listen`: the WebSocket listener's address, over `[listen] address`.
    pub listen: Option<String>,
    /// `--store`: the PostgreSQL database's URL, over `[store] url`.
    pub store: Option<String>,
}

/// Runs the daemon until SIGTERM or SIGINT (or until idle, see [`RunOptions`]), then shuts
/// down cleanly: the store opened, every part wired, the socket bound, served, stopped.
pub async fn run(paths: Paths, config: ConfigFile, options: RunOptions) -> anyhow::Result<()> {
    install_tls_provider();
    let uid = nix::unistd::geteuid().as_raw();
    let _data_lock = data_dir::lock(&paths.data_dir, uid)?;
    let (store, cluster) = open_store(&paths, &config.store, options.store.as_deref()).await?;
    let daemon = Daemon::wire(&paths, &config, store, cluster).await?;
    let mut signals = Signals::new()?;
    let mut reloader = daemon.reloader(&paths, options.config_required);
    // Before the socket: once the socket accepts, everything the daemon listens on is
    // bound (and logged), and a port already taken fails the start before a socket exists.
    let web = WebListener::bind(
        &config.listen,
        options.listen.as_deref(),
        &paths.data_dir,
        uid,
    )
    .await?;
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
    let connections = daemon
        .serve(
            Doors {
                socket: &socket,
                uid,
                web,
            },
            &config.limits,
            options.exit_when_idle,
            &mut signals,
            &mut reloader,
        )
        .await;
    daemon
        .shut_down(
            socket,
            connections,
            Duration::from_secs(config.limits.shutdown_grace_secs),
            signals,
        )
        .await;
    tracing::info!("agentd stopped");
    Ok(())
}

/// The store where `[store]` (or `--store`) says: the PostgreSQL database, connected and
/// migrated, with the host label this daemon joins its cluster with; else the SQLite file,
/// opened (and migrated) and made private to the user.
async fn open_store(
    paths: &Paths,
    config: &crate::config::StoreConfig,
    flag: Option<&str>,
) -> anyhow::Result<(Store, Option<String>)> {
    use crate::config::{StoreUrl, redacted_store_url};
    let hostname = cluster::hostname();
    let label = config.label(&hostname);
    if let StoreUrl::Postgres(url) = config.resolve(flag).map_err(anyhow::Error::msg)? {
        let shown = redacted_store_url(&url);
        let store = Store::connect(&url)
            .await
            .with_context(|| format!("cannot open the store {shown}"))?
            .labelled(&label);
        tracing::info!("store: PostgreSQL at {shown}");
        return Ok((store, Some(label)));
    }
    let store = Store::open(&paths.database())
        .await
        .with_context(|| format!("cannot open the store {}", paths.database().display()))?
        .labelled(&label);
    use std::os::unix::fs::PermissionsExt;
    // The owner only (SQLite gives its -wal and -shm files the same mode).
    std::fs::set_permissions(paths.database(), std::fs::Permissions::from_mode(0o600))
        .with_context(|| format!("cannot make {} private", paths.database().display()))?;
    Ok((store, None))
}

/// Where clients come in: the socket (for `uid` only) and the WebSocket listener if any.
struct Doors<'a> {
    socket: &'a BoundSocket,
    uid: u32,
    web: Option<WebListener>,
}

/// SIGTERM and SIGINT: the first stops the daemon, a second during the shutdown exits at
/// once. SIGHUP reloads the config (`reload`); during the shutdown it is ignored.
struct Signals {
    terminate: tokio::signal::unix::Signal,
    interrupt: tokio::signal::unix::Signal,
    hangup: tokio::signal::unix::Signal,
}

/// What a signal asks for.
enum Asked {
    /// Stop (the signal's name).
    Stop(&'static str),
    Reload,
}

impl Signals {
    fn new() -> anyhow::Result<Signals> {
        Ok(Signals {
            terminate: signal(SignalKind::terminate())?,
            interrupt: signal(SignalKind::interrupt())?,
            hangup: signal(SignalKind::hangup())?,
        })
    }

    /// Waits for the next signal.
    async fn next(&mut self) -> Asked {
        tokio::select! {
            _ = self.terminate.recv() => Asked::Stop("SIGTERM"),
            _ = self.interrupt.recv() => Asked::Stop("SIGINT"),
            _ = self.hangup.recv() => Asked::Reload,
        }
    }

    /// Waits for the next signal that stops; returns its name.
    async fn next_stop(&mut self) -> &'static str {
        loop {
            if let Asked::Stop(name) = self.next().await {
                return name;
            }
            tracing::info!("SIGHUP while stopping: ignored");
        }
    }
}

/// The connections being served, for the shutdown to close.
struct Connections {
    close: CancellationToken,
    tasks: TaskTracker,
}

/// The wired daemon: what serving and the shutdown need.
struct Daemon {
    store: Store,
    processes: Arc<ProcessLauncher>,
    providers: Arc<ProviderRegistry>,
    tools: Arc<ToolCenter>,
    mcp: Arc<McpManager>,
    acp_agents: Arc<crate::acp_backend::AcpAgents>,
    manager: Arc<SessionManager>,
    dispatcher: Dispatcher,
    metrics: Metrics,
    /// This daemon in the cluster of daemons sharing its PostgreSQL store, if it is one.
    node: Option<Arc<cluster::Node>>,
}

impl Daemon {
    /// Every part built from the configuration, bottom up: children's launcher, providers,
    /// MCP servers, tools, sessions (recovered from the last run), agents, the method
    /// table.
    async fn wire(
        paths: &Paths,
        config: &ConfigFile,
        store: Store,
        cluster: Option<String>,
    ) -> anyhow::Result<Daemon> {
        let metrics = Metrics::new();
        let processes = start_processes(paths, config)?;
        let credentials = Credentials::from_env(|k| std::env::var(k).ok());
        let providers = Arc::new(ProviderRegistry::from_config(
            config,
            credentials.lookup(|k| std::env::var(k).ok()),
            &metrics,
        )?);
        tracing::info!(
            default_provider = %providers.default_provider(),
            providers = providers.list_providers().len(),
            "providers ready"
        );
        let mcp = start_mcp(config, &store, &processes).await?;
        let tools = Arc::new(tool_center(paths, config, &credentials, &mcp, &processes)?);
        let acp_agents = Arc::new(crate::acp_backend::AcpAgents::new(
            &config.acp_agents,
            processes.clone(),
        ));
        let manager = sessions(
            config,
            &store,
            &providers,
            &tools,
            &acp_agents,
            &processes,
            &metrics,
        );
        metrics.count_agents_with(agents_by_status(&manager));
        let kept = (providers.clone(), tools.clone());
        let node = join_cluster(&store, &manager, cluster.as_deref()).await?;
        let first = settle_last_run(node.as_deref(), &manager).await?;
        let agents = AgentService::new(
            store.clone(),
            providers.clone(),
            tools,
            manager.clone(),
            config.defaults.clone(),
            config.subagents.clone(),
        );
        if first {
            agents.resume_background_tasks().await?;
            // Messages queued behind runs the last daemon did not finish go on now.
            manager.resume_queues().await?;
        }
        if let Some(node) = &node {
            node.end_start().await?;
        }
        let limits = &config.limits;
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
            metrics.clone(),
        );
        let dispatcher = route_through(node.as_ref(), dispatcher).await?;
        Ok(Daemon {
            store,
            processes,
            providers: kept.0,
            tools: kept.1,
            mcp,
            acp_agents,
            manager,
            dispatcher,
            metrics,
            node,
        })
    }

    /// What SIGHUP reloads, with the config file's sections as in force now.
    fn reloader(&self, paths: &Paths, required: bool) -> reload::Reloader {
        let in_force = match &paths.config_file {
            Some(file) => reload::read_table(file, required).unwrap_or_else(|e| {
                tracing::warn!("cannot read the config file's sections to compare on SIGHUP: {e}");
                toml::Table::new()
            }),
            None => toml::Table::new(),
        };
        reload::Reloader {
            file: paths.config_file.clone(),
            required,
            in_force,
            providers: self.providers.clone(),
            tools: self.tools.clone(),
            mcp: self.mcp.clone(),
            metrics: self.metrics.clone(),
        }
    }

    /// Serves `socket` until a signal that stops, or until idle that long
    /// (`exit_when_idle`); SIGHUP meanwhile reloads the config.
    async fn serve(
        &self,
        doors: Doors<'_>,
        limits: &crate::config::Limits,
        exit_when_idle: Option<Duration>,
        signals: &mut Signals,
        reloader: &mut reload::Reloader,
    ) -> Connections {
        let Doors { socket, uid, web } = doors;
        // Nothing would start the daemon again for a browser or a client over the network.
        let exit_when_idle = exit_when_idle.filter(|_| {
            if web.is_some() {
                tracing::info!("--exit-when-idle is off while the web listener is on");
            }
            web.is_none()
        });
        let idle = exit_when_idle.map(|after| idle_exit(self.manager.clone(), after));
        let stop_accepting = CancellationToken::new();
        let connections = Connections {
            close: CancellationToken::new(),
            tasks: TaskTracker::new(),
        };
        let processes = self.processes.clone();
        // One set of slots and one input budget for both doors.
        let admission = Admission::new(
            self.dispatcher.clone(),
            transport::TransportLimits {
                max_connections: limits.max_connections,
                max_buffered_input: limits.max_buffered_input_bytes,
            },
        );
        if let Some(web) = web {
            connections.tasks.spawn(web.serve(
                admission.clone(),
                stop_accepting.clone(),
                connections.close.clone(),
                connections.tasks.clone(),
            ));
        }
        let serving = transport::serve(
            socket,
            admission,
            uid,
            ServeOptions {
                idle,
                refused_peer: Some(transport::PeerFilter(Arc::new(move |pid| {
                    processes.is_confined(pid)
                }))),
            },
            stop_accepting.clone(),
            connections.close.clone(),
            &connections.tasks,
        );
        // The socket listens and every part is wired: connections made from now on are
        // served.
        notify(&[
            sd_notify::NotifyState::Ready,
            sd_notify::NotifyState::Status("serving"),
        ]);
        // In a block of its own: serving borrows the connections, which are returned.
        {
            tokio::pin!(serving);
            loop {
                tokio::select! {
                    end = &mut serving => {
                        if let (ServeEnd::Idle, Some(after)) = (end, exit_when_idle) {
                            tracing::info!(
                                idle_secs = after.as_secs(),
                                "no client, run or waiting prompt for the idle time: exiting{}",
                                if socket.is_passed() { " (the service manager keeps the socket)" } else { "" }
                            );
                        }
                        break;
                    }
                    asked = signals.next() => match asked {
                        Asked::Stop(name) => {
                            tracing::info!("{name}: shutting down");
                            break;
                        }
                        Asked::Reload => reloader.reload().await,
                    },
                }
            }
        }
        stop_accepting.cancel();
        connections
    }

    /// Stops in order: runs reach a checkpoint (within `grace`), MCP servers and external
    /// ACP agents stop, connections close, the store is flushed, the socket goes (unless a
    /// service manager passed it). A second signal meanwhile exits at once.
    async fn shut_down(
        self,
        socket: BoundSocket,
        connections: Connections,
        grace: Duration,
        mut signals: Signals,
    ) {
        notify(&[
            sd_notify::NotifyState::Stopping,
            sd_notify::NotifyState::Status("stopping"),
        ]);
        let mcp_to_kill = self.mcp.clone();
        let forced = tokio::spawn(async move {
            signals.next_stop().await;
            tracing::warn!("second signal: exiting at once");
            mcp_to_kill.kill_all_now();
            std::process::exit(EXIT_FORCED);
        });
        self.manager.shutdown(grace).await;
        // The runs are stopped and their seqs stored: the agents are free for the others.
        if let Some(node) = self.node {
            node.leave().await;
        }
        self.mcp.shutdown().await;
        self.acp_agents.shutdown().await;
        connections.close.cancel();
        connections.tasks.close();
        if tokio::time::timeout(Duration::from_secs(2), connections.tasks.wait())
            .await
            .is_err()
        {
            tracing::warn!("some connections did not close within 2 s");
        }
        self.store.close().await;
        socket.remove();
        forced.abort();
    }
}

/// Joins the daemons sharing a PostgreSQL store as a daemon of host `label` (none on
/// SQLite); the sessions learn which agents are this daemon's from it.
async fn join_cluster(
    store: &Store,
    manager: &Arc<SessionManager>,
    label: Option<&str>,
) -> anyhow::Result<Option<Arc<cluster::Node>>> {
    let Some(label) = label else {
        return Ok(None);
    };
    let node = cluster::Node::join(store, manager.clone(), label)
        .await
        .context("cannot join the daemons on this database")?;
    let homes: Arc<dyn crate::session::Homes> = node.clone();
    manager.set_homes(Arc::downgrade(&homes));
    Ok(Some(node))
}

/// Settles what the last run left (messages it did not finish become `interrupted`): with
/// other daemons alive on the store what they run is theirs, so only the first daemon of a
/// cluster (or a lone one) does, under the cluster's start-up lock (released by the caller,
/// `Node::end_start`, once the queues and background tasks went on too). True when this
/// daemon did.
async fn settle_last_run(
    node: Option<&cluster::Node>,
    manager: &SessionManager,
) -> anyhow::Result<bool> {
    let first = match node {
        Some(node) => node.begin_start().await? == 0,
        None => true,
    };
    if first {
        let interrupted = manager.recover().await?;
        if interrupted > 0 {
            tracing::info!(
                count = interrupted,
                "marked messages left unfinished by the last run as interrupted"
            );
        }
    } else if let Some(node) = node {
        // The agents a dead daemon left busy are settled before this one serves.
        node.take_over_orphans().await?;
    }
    Ok(first)
}

/// The dispatcher with requests about agents routed to their home daemon, and the node
/// started (it serves the requests other daemons forward here), when in a cluster.
async fn route_through(
    node: Option<&Arc<cluster::Node>>,
    dispatcher: Dispatcher,
) -> anyhow::Result<Dispatcher> {
    let Some(node) = node else {
        return Ok(dispatcher);
    };
    let router: Arc<dyn crate::rpc::route::Router> = node.clone();
    let dispatcher = dispatcher.with_router(router);
    node.start(dispatcher.clone()).await?;
    Ok(dispatcher)
}

/// The launcher of children, with the config's environment policy; kills what the last
/// run left behind.
fn start_processes(paths: &Paths, config: &ConfigFile) -> anyhow::Result<Arc<ProcessLauncher>> {
    let env_policy = EnvPolicy::from_config(config, crate::provider::key_variables())
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
    Ok(processes)
}

/// The MCP servers of the config and the store, loaded (and started as they are asked for).
async fn start_mcp(
    config: &ConfigFile,
    store: &Store,
    processes: &Arc<ProcessLauncher>,
) -> anyhow::Result<Arc<McpManager>> {
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
    Ok(mcp)
}

/// The tool center: builtin tools (web search with its backend's key), MCP tools,
/// profiles, skills, the OS sandbox of commands.
fn tool_center(
    paths: &Paths,
    config: &ConfigFile,
    credentials: &Credentials,
    mcp: &Arc<McpManager>,
    processes: &Arc<ProcessLauncher>,
) -> anyhow::Result<ToolCenter> {
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
    ToolCenter::new(
        &paths.data_dir,
        &config.permissions,
        &config.tools,
        crate::tools::center::ToolSetup {
            mcp: mcp.clone(),
            processes: processes.clone(),
            web_search,
            profiles: Arc::new(profiles_of(config)?),
            skills: Arc::new(crate::skills::Skills::new(
                config.skills.folders.clone(),
                crate::config::default_skills_dir(|k| std::env::var(k).ok()),
            )),
            instructions: Arc::new(crate::instructions::Instructions::new(
                crate::config::default_instructions_file(|k| std::env::var(k).ok()),
            )),
            sandbox: sandbox_plan(paths, config, processes.sandbox().clone())?,
        },
    )
    .map_err(|e| anyhow::anyhow!(e))
}

/// The session manager, with the config's limits and the parts runs use.
fn sessions(
    config: &ConfigFile,
    store: &Store,
    providers: &Arc<ProviderRegistry>,
    tools: &Arc<ToolCenter>,
    acp_agents: &Arc<crate::acp_backend::AcpAgents>,
    processes: &Arc<ProcessLauncher>,
    metrics: &Metrics,
) -> Arc<SessionManager> {
    let limits = &config.limits;
    SessionManager::new(
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
            metrics: metrics.clone(),
        },
    )
}

/// The agents by status for the metrics, asked of the sessions at each scrape. The manager
/// is held weakly: it holds the metrics, which hold this (no cycle of `Arc`s).
fn agents_by_status(manager: &Arc<SessionManager>) -> crate::metrics::AgentStatuses {
    let manager = Arc::downgrade(manager);
    Arc::new(move || {
        let manager = manager.clone();
        Box::pin(async move {
            let manager = manager
                .upgrade()
                .ok_or_else(|| "the daemon is stopping".to_owned())?;
            manager.agents_by_status().await.map_err(|e| e.to_string())
        })
    })
}

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
    crate::transport::web::validate(&config.listen, None).map_err(ConfigError::Invalid)?;
    config.store.validate().map_err(ConfigError::Invalid)?;
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

/// `--exit-when-idle`: what keeps the daemon up besides its connections is asked of the
/// sessions: a run under way, or a prompt waiting for an answer (which a client may come
/// back to answer). A store that cannot tell counts as busy: the daemon stays up rather
/// than guess.
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
