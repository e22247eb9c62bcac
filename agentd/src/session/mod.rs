//! Sessions: the runtime side of agents.
//!
//! [`SessionManager`] is the registry of loaded sessions and the entry point for everything
//! that changes an agent at run time: creating, updating and deleting agents (which emit
//! events), starting runs (`sendMessage`), cancelling them, and subscribing to events. A
//! [`Session`] holds one agent's status, its run slot (at most one run at a time) and its
//! [`EventLog`]. Runs are tasks owned by the manager's `TaskTracker`; a panicking run
//! becomes an `error` event for its agent, never a crash of the daemon.

mod activity;
mod answers;
mod attach;
mod compact;
pub mod events;
mod evict;
mod history;
mod hooks;
mod info;
mod input;
mod mirror;
mod queue;
mod runs;
mod task_slots;
mod undo;
mod web_images;

pub use task_slots::{TaskSlot, TaskSlots};

use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError, Weak};
use std::time::Duration;

use agent_proto::{Agent, EventKind, Message, RequestPreview, SessionStatus};
use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::agent_loop::{self, RunControl, StopReason};
use crate::config::{ContextConfig, Defaults};
use crate::context;
use crate::provider::ProviderRegistry;
use crate::store::{Store, StoreError, now_ms};
use crate::tools::center::ToolCenter;
use events::{EventHub, EventLog, LogContext, PendingSubscription, ReplayBudget, ReplayLimits};
use evict::Registry;
pub use input::merge_settings;
pub use input::parse_settings;
pub use runs::DEFAULT_MAX_STEPS;

/// Title of an agent created without one.
pub const DEFAULT_TITLE: &str = "New agent";

/// Why a session operation failed; `rpc::error` maps each to its wire kind.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// No agent has this id: check it with `listAgents`.
    #[error("no agent with id {0:?}")]
    AgentNotFound(String),
    /// A run is active: wait for its `loopFinished` or cancel it.
    #[error(
        "agent {agent_id} is busy with a run (assistant message {message_id}); wait for loopFinished or call cancelLoop"
    )]
    AgentBusy {
        agent_id: String,
        message_id: String,
    },
    #[error("the message has {chars} characters; the limit is {max}")]
    InputTooLarge { chars: usize, max: usize },
    /// Something other than user text is over a limit (an import's message count, an
    /// export over the frame size); the message says which.
    #[error("{0}")]
    TooLarge(String),
    #[error("{0}")]
    ProviderNotConfigured(String),
    #[error("{0}")]
    InvalidParams(String),
    #[error("not supported yet: {0}")]
    NotSupported(String),
    #[error("the daemon is shutting down; reconnect when it is back")]
    ShuttingDown,
    #[error("no message with id {0:?}")]
    MessageNotFound(String),
    /// The prompt was answered already (the first answer wins), or cancelled.
    #[error("{0}")]
    PermissionNotPending(String),
    /// The question was answered already (the first answer wins), or cancelled.
    #[error("{0}")]
    QuestionNotPending(String),
    /// The agent is not in a state where this works; the message says what to do.
    #[error("{0}")]
    InvalidState(String),
    /// A model call made for the caller failed; the message is the provider's.
    #[error("{0}")]
    ProviderFailed(String),
    /// The daemon failed at something that is not the store (a file it keeps).
    #[error("internal error: {0}")]
    Internal(String),
    /// The store failed; the daemon logs it. Retry later.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Settings of the session layer.
#[derive(Debug, Clone)]
pub struct SessionConfig {
    pub defaults: Defaults,
    pub replay: ReplayLimits,
    /// Bytes the replay rings of all agents may hold together.
    pub replay_budget: usize,
    /// A session with no run and no subscriber is unloaded after this long without
    /// activity (its replay ring goes with it).
    pub idle_session: Duration,
    pub context: ContextConfig,
    /// `task` calls of one answer run this many at a time.
    pub max_parallel_tasks: usize,
    /// What a model (or ACP agent) may write into one answer.
    pub answer_caps: crate::agent_loop::AnswerCaps,
    /// Attached text files up to this size are read into the message.
    pub max_attached_text_bytes: usize,
    /// Attached PDFs up to this size are kept with the message.
    pub max_attached_document_bytes: usize,
    /// The external agents of agents of mode `acp`.
    pub acp_agents: Arc<crate::acp_backend::AcpAgents>,
    /// The config's `[[hooks]]`, and how every hook is run (an agent's own come with it).
    pub hooks: Arc<crate::hooks::Hooks>,
    /// Where runs, their tokens and tool calls are counted.
    pub metrics: crate::metrics::Metrics,
}

/// The end of an agent's latest run, as [`SessionManager::watch_runs`] tells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RunEnd {
    /// Runs ended since the session was loaded.
    pub count: u64,
    /// How the latest one ended.
    pub reason: Option<agent_proto::LoopFinishReason>,
    /// The agent was deleted.
    pub deleted: bool,
}

/// The run slot of a session.
#[derive(Debug)]
pub(crate) struct RunSlot {
    message_id: String,
    control: Arc<RunControl>,
    /// The run is emitting its last events; a new send waits for `done` instead of failing.
    finishing: bool,
    /// Cancelled when the slot is freed.
    done: CancellationToken,
    /// The `clientRequestId` of the send that took the slot, with the ids it answers: the
    /// same request sent again meanwhile gets them.
    request: Option<(String, agent_proto::SendMessageResult)>,
}

#[derive(Debug, Default)]
pub(crate) struct SessionState {
    status: SessionStatus,
    run: Option<RunSlot>,
    /// The agent was deleted: no run slot is handed out any more.
    deleted: bool,
}

/// The runtime of one agent.
#[derive(Debug)]
pub struct Session {
    agent_id: String,
    events: Arc<EventLog>,
    state: Mutex<SessionState>,
    /// What the agent's model calls taught us (calibration, last reported size).
    tracker: Arc<Mutex<context::Tracker>>,
    /// What the messages of the agent's history cost in a request, kept between calls.
    prices: Arc<Mutex<context::Prices>>,
    /// Told the end of every run (and the agent's deletion).
    ended: tokio::sync::watch::Sender<RunEnd>,
    /// When the session was last looked up (unix ms), for eviction.
    touched: std::sync::atomic::AtomicI64,
    /// Held from a change of the agent's row to its `agentUpdated` (see
    /// [`SessionManager::update_agent_row`]).
    updates: tokio::sync::Mutex<()>,
    /// A steer may be waiting to join the running turn: set when one is stored (and when
    /// the session is loaded: one may be stored from before), taken by the run's loop,
    /// which then reads the store.
    steering: Arc<std::sync::atomic::AtomicBool>,
    /// The agent's queue may hold messages: set when one is stored (and at load), cleared
    /// by the end of a run that found none, so a run's end reads the store only when
    /// something was sent into the busy agent.
    queued: std::sync::atomic::AtomicBool,
}

impl Session {
    fn touch(&self) {
        self.touched
            .store(now_ms(), std::sync::atomic::Ordering::Relaxed);
    }

    fn lock(&self) -> MutexGuard<'_, SessionState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn status(&self) -> SessionStatus {
        self.lock().status
    }

    pub fn events(&self) -> &Arc<EventLog> {
        &self.events
    }

    /// How the agent's token estimates are corrected, as its model calls taught it.
    fn calibration(&self) -> context::tokens::Calibration {
        self.tracker
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .calibration
    }

    /// Records the end of a run (after its `loopFinished`) for those watching.
    fn run_ended(&self, reason: agent_proto::LoopFinishReason) {
        self.ended.send_modify(|end| {
            end.count += 1;
            end.reason = Some(reason);
        });
    }

    /// Sets the status and tells the subscribers, if it changed.
    async fn set_status(&self, status: SessionStatus) {
        let changed = {
            let mut st = self.lock();
            std::mem::replace(&mut st.status, status) != status
        };
        if changed {
            self.emit(EventKind::StatusChanged { status }).await;
        }
    }

    /// Emits an event; a failure (the store cannot reserve seqs) is logged, since the
    /// state it reports is already saved.
    async fn emit(&self, kind: EventKind) {
        if let Err(e) = self.events.emit(kind).await {
            tracing::error!(agent_id = self.agent_id, "cannot emit an event: {e}");
        }
    }
}

/// The registry of loaded sessions.
#[derive(Debug)]
pub struct SessionManager {
    store: Store,
    providers: Arc<ProviderRegistry>,
    hub: Arc<EventHub>,
    budget: Arc<ReplayBudget>,
    config: SessionConfig,
    tools: Arc<ToolCenter>,
    sessions: Mutex<Registry>,
    runs: TaskTracker,
    shutting_down: CancellationToken,
    /// Told about user messages and completed runs (the agents service, for titles).
    observer: OnceLock<Weak<dyn RunObserver>>,
    /// How many subagents of one parent work at once.
    task_slots: TaskSlots,
    /// With several daemons on one store: which agents this daemon is home to (the others'
    /// logs only relay their home's events, and their seqs are the home's to store).
    homes: OnceLock<Weak<dyn Homes>>,
    /// Held by each relayed event, and by a log catching up from the events table, so no
    /// event heard live lands in between (it would look like a gap).
    relaying: tokio::sync::Mutex<()>,
}

/// Which agents this daemon runs, when several daemons share one store (the cluster node
/// above the session layer says). Without one, every agent is this daemon's.
pub trait Homes: Send + Sync {
    /// This daemon holds the agent's lock.
    fn is_home(&self, agent_id: &str) -> bool;
    /// Takes the agent's lock if no daemon holds it: true when this daemon holds it (now).
    /// False when another does (or the store cannot say): the agent is not run here.
    fn take<'a>(&'a self, agent_id: &'a str) -> BoxFuture<'a, bool>;
    /// The last seq another daemon, the agent's home, published of it: where a log here
    /// starts (the store's mark may be a reservation ahead of it). `None`: none published.
    fn published<'a>(&'a self, agent_id: &'a str) -> BoxFuture<'a, Option<u64>>;
    /// The events of the agent its home published after seq `after` that the store still
    /// holds, oldest first (seq, JSON as sent).
    fn replay<'a>(&'a self, agent_id: &'a str, after: u64) -> BoxFuture<'a, Vec<(u64, String)>>;
}

/// What the session tells a service above it about runs. Called in the run's order: a
/// user message before its run starts, a completed run after its `loopFinished`.
pub trait RunObserver: Send + Sync {
    /// `message` was stored for `agent`; its run starts next.
    fn user_message<'a>(&'a self, agent: &'a Agent, message: &'a Message) -> BoxFuture<'a, ()>;
    /// The run writing `message_id` completed.
    fn run_completed<'a>(&'a self, agent_id: &'a str, message_id: &'a str) -> BoxFuture<'a, ()>;
}

impl SessionManager {
    /// The external agents of agents of mode `acp`.
    pub fn acp_agents(&self) -> &Arc<crate::acp_backend::AcpAgents> {
        &self.config.acp_agents
    }

    pub fn new(
        store: Store,
        providers: Arc<ProviderRegistry>,
        tools: Arc<ToolCenter>,
        config: SessionConfig,
    ) -> Arc<Self> {
        let hub = Arc::new(EventHub::new());
        // MCP server status changes go to the subscribers of all agents.
        let mut mcp_events = tools.mcp().events();
        let forward_to = hub.clone();
        tokio::spawn(async move {
            loop {
                match mcp_events.recv().await {
                    Ok(kind) => forward_to.publish_daemon(kind),
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => break,
                }
            }
        });
        let manager = Arc::new(SessionManager {
            store,
            providers,
            hub,
            budget: ReplayBudget::new(config.replay_budget),
            task_slots: TaskSlots::new(config.max_parallel_tasks),
            config,
            tools,
            sessions: Mutex::new(Registry::default()),
            runs: TaskTracker::new(),
            shutting_down: CancellationToken::new(),
            observer: OnceLock::new(),
            homes: OnceLock::new(),
            relaying: tokio::sync::Mutex::new(()),
        });
        evict::spawn_sweeper(&manager);
        manager
    }

    /// Registers the observer of runs (once; later calls are ignored).
    pub fn set_observer(&self, observer: Weak<dyn RunObserver>) {
        let _ = self.observer.set(observer);
    }

    fn observer(&self) -> Option<Arc<dyn RunObserver>> {
        self.observer.get().and_then(Weak::upgrade)
    }

    /// Registers what says which agents are this daemon's (once; with several daemons on
    /// one store).
    pub fn set_homes(&self, homes: Weak<dyn Homes>) {
        let _ = self.homes.set(homes);
    }

    /// Whether agent `agent_id` is run by this daemon: always, unless a cluster says not.
    fn is_home(&self, agent_id: &str) -> bool {
        match self.homes.get() {
            None => true,
            Some(homes) => homes.upgrade().is_some_and(|h| h.is_home(agent_id)),
        }
    }

    /// Makes this daemon the home of agent `agent_id` if no daemon is: true when it is
    /// (always, with no cluster). A run starts only where this holds.
    async fn take_home(&self, agent_id: &str) -> bool {
        match self.homes.get().map(Weak::upgrade) {
            None => true,
            Some(Some(homes)) => homes.take(agent_id).await,
            Some(None) => false,
        }
    }

    /// An event of agent `agent_id` numbered by its home, another daemon (`json` as that
    /// daemon sent it): into the agent's log here if it is loaded (its subscribers see the
    /// home's stream), and what the store keeps of the agent is read again.
    pub async fn relay(&self, agent_id: &str, seq: u64, json: &str) {
        let _relaying = self.relaying.lock().await;
        self.relay_held(agent_id, seq, json);
    }

    /// [`SessionManager::relay`], under `relaying`.
    fn relay_held(&self, agent_id: &str, seq: u64, json: &str) {
        self.store.forget_agent_caches(agent_id);
        let loaded = self.sessions().loaded.get(agent_id).cloned();
        let Some(session) = loaded else {
            return;
        };
        let event: agent_proto::Event = match serde_json::from_str(json) {
            Ok(event) => event,
            Err(e) => {
                return tracing::warn!(
                    agent_id,
                    seq,
                    "a relayed event this daemon cannot read: {e}"
                );
            }
        };
        if event.seq != seq {
            return tracing::warn!(
                agent_id,
                seq,
                "a relayed event whose seq is not its notice's"
            );
        }
        if let EventKind::StatusChanged { status } = &event.kind {
            session.lock().status = *status;
        }
        session.events.relay(event, json.into());
    }

    /// This daemon just became agent `agent_id`'s home: what it knew of the agent came
    /// from another home, so its status and seqs are taken from the store (the last home
    /// stored its exact last seq, or its reservation if it died) and what was kept is read
    /// again.
    pub async fn became_home(&self, agent_id: &str) {
        self.store.forget_agent_caches(agent_id);
        self.sessions().evicted.remove(agent_id);
        let loaded = self.sessions().loaded.get(agent_id).cloned();
        let Some(session) = loaded else {
            return;
        };
        match self.store.session_row(agent_id).await {
            Ok(Some(row)) => {
                session.lock().status = row.status;
                session.events.take_over(row.last_seq);
            }
            Ok(None) => {}
            Err(e) => tracing::warn!(
                agent_id,
                "cannot read the agent's session as its new home: {e}"
            ),
        }
    }

    /// The agents whose logs are loaded here, with their last seq.
    pub fn loaded_logs(&self) -> Vec<(String, u64)> {
        self.sessions()
            .loaded
            .iter()
            .map(|(id, session)| (id.clone(), session.events.last_seq()))
            .collect()
    }

    /// The slots subagents take to work (`[subagents] max_parallel` per parent).
    pub fn task_slots(&self) -> &TaskSlots {
        &self.task_slots
    }

    /// Cancelled when the daemon starts shutting down.
    pub fn shutting_down(&self) -> &CancellationToken {
        &self.shutting_down
    }

    /// Watches the ends of an agent's runs: the receiver sees each run's end (and the
    /// agent's deletion) after its `loopFinished`. Take it before starting the run to
    /// watch.
    pub async fn watch_runs(
        &self,
        agent_id: &str,
    ) -> Result<tokio::sync::watch::Receiver<RunEnd>, SessionError> {
        Ok(self.session(agent_id).await?.ended.subscribe())
    }

    /// Emits an event of an agent (loading its session if needed).
    pub async fn emit_for(&self, agent_id: &str, kind: EventKind) -> Result<(), SessionError> {
        self.session(agent_id).await?.emit(kind).await;
        Ok(())
    }

    /// Changes the agent's row with `write` (which gives the agent as written, `None` for
    /// no change to announce) and announces it (`agentUpdated`, with its live status).
    /// Changes of one agent are written and announced one at a time, so their events come
    /// in the order of their writes and the last one carries what is stored (two updates
    /// racing used to announce in the other order now and then).
    pub async fn update_agent_row<F>(
        &self,
        agent_id: &str,
        write: F,
    ) -> Result<Option<Agent>, SessionError>
    where
        F: AsyncFnOnce() -> Result<Option<Agent>, SessionError>,
    {
        let session = self.session(agent_id).await?;
        let _one_at_a_time = session.updates.lock().await;
        let Some(agent) = write().await? else {
            return Ok(None);
        };
        let agent = self.with_status(agent);
        session
            .emit(EventKind::AgentUpdated {
                agent: agent.clone(),
            })
            .await;
        Ok(Some(agent))
    }

    fn sessions(&self) -> MutexGuard<'_, Registry> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The loaded session of an agent, loading it from the store if needed.
    pub async fn session(&self, agent_id: &str) -> Result<Arc<Session>, SessionError> {
        self.session_from(agent_id, None).await
    }

    /// [`SessionManager::session`]; a log made here for another daemon's agent starts
    /// after `anchor` when given (a replay from the events table follows), else after the
    /// last event its home published.
    async fn session_from(
        &self,
        agent_id: &str,
        anchor: Option<u64>,
    ) -> Result<Arc<Session>, SessionError> {
        if let Some(session) = self.sessions().loaded.get(agent_id) {
            session.touch();
            return Ok(session.clone());
        }
        // With several daemons on one store, a daemon that loads an agent no daemon is home
        // to becomes its home: one daemon numbers an agent's events, whoever asked first.
        let home = self.is_home(agent_id) || self.take_home(agent_id).await;
        let mut row = self
            .store
            .session_row(agent_id)
            .await?
            .ok_or_else(|| SessionError::AgentNotFound(agent_id.to_owned()))?;
        // Another daemon's agent: its log here relays the home's events, from the last one
        // the home published (the stored mark may be a reservation ahead).
        let mut floating = false;
        // Another daemon's agent: no event heard live is relayed between reading where the
        // home is and the log being in the registry (it would be dropped, then a gap). A
        // caller catching up from the table holds this already.
        let _relaying = match (home, self.homes.get(), anchor) {
            (false, Some(_), None) => Some(self.relaying.lock().await),
            _ => None,
        };
        if !home && let Some(homes) = self.homes.get().and_then(Weak::upgrade) {
            match anchor {
                Some(anchor) => row.last_seq = anchor,
                None => match homes.published(agent_id).await {
                    Some(published) => row.last_seq = published,
                    // Nothing published yet (or on its way): the first event heard says.
                    None => floating = true,
                },
            }
        }
        let cx = LogContext {
            store: self.store.clone(),
            hub: self.hub.clone(),
            limits: self.config.replay,
            budget: self.budget.clone(),
        };
        // Two loads may race: the first one in wins, so there is one event log per agent.
        // Built under the lock, so the exact seq an evicted session left is taken once.
        let mut registry = self.sessions();
        let Registry { loaded, evicted } = &mut *registry;
        let session = loaded.entry(agent_id.to_owned()).or_insert_with(|| {
            // The exact seq an evicted log left, if this daemon numbers the agent's events.
            let last_seq = evicted
                .remove(agent_id)
                .filter(|_| home)
                .unwrap_or(row.last_seq);
            Arc::new(Session {
                agent_id: agent_id.to_owned(),
                tracker: Arc::default(),
                prices: Arc::default(),
                events: Arc::new({
                    let log = EventLog::new(agent_id, last_seq, row.last_seq, &cx);
                    if floating {
                        log.float();
                    }
                    log
                }),
                state: Mutex::new(SessionState {
                    status: row.status,
                    run: None,
                    deleted: false,
                }),
                touched: std::sync::atomic::AtomicI64::new(now_ms()),
                ended: tokio::sync::watch::Sender::new(RunEnd::default()),
                updates: tokio::sync::Mutex::new(()),
                steering: Arc::new(std::sync::atomic::AtomicBool::new(true)),
                queued: std::sync::atomic::AtomicBool::new(true),
            })
        });
        session.touch();
        Ok(session.clone())
    }

    /// The tool center the sessions' runs use.
    pub fn tools(&self) -> &ToolCenter {
        &self.tools
    }

    /// Bytes the replay rings of all agents hold now.
    pub fn replay_bytes(&self) -> usize {
        self.budget.used()
    }

    /// The agent with its live session status (the stored one when its session is not
    /// loaded: a prompt left waiting across a restart still shows).
    pub fn with_status(&self, mut agent: Agent) -> Agent {
        if let Some(session) = self.sessions().loaded.get(&agent.id) {
            agent.status = session.status();
        }
        agent.sandbox = (agent.mode == agent_proto::AgentMode::Agent)
            .then(|| self.tools.sandbox_mode_of(&agent));
        agent
    }

    pub async fn get_agent(&self, agent_id: &str) -> Result<Agent, SessionError> {
        let agent = self
            .store
            .get_agent(agent_id)
            .await?
            .ok_or_else(|| SessionError::AgentNotFound(agent_id.to_owned()))?;
        Ok(self.with_status(agent))
    }

    /// Stops the agent's run, tells the subscribers (`agentDeleted`), deletes the agent and
    /// its messages, and ends its subscriptions.
    pub async fn delete_agent(&self, agent_id: &str) -> Result<(), SessionError> {
        let session = self.session(agent_id).await?;
        // Hold the run slot until the agent is gone: a send, an answer or a continue racing
        // the delete either ran before (and was stopped) or finds the agent gone.
        let slot = loop {
            match self.claim_run_slot(&session, "").await {
                Ok(slot) => break Some(slot),
                Err(SessionError::AgentBusy { .. }) => {
                    let done = {
                        let st = session.lock();
                        st.run.as_ref().map(|run| {
                            run.control.stop(StopReason::User);
                            run.done.clone()
                        })
                    };
                    if let Some(done) = done
                        && tokio::time::timeout(Duration::from_secs(10), done.cancelled())
                            .await
                            .is_err()
                    {
                        tracing::warn!(
                            agent_id,
                            "the run did not stop within 10 s; deleting anyway"
                        );
                        break None;
                    }
                    continue;
                }
                Err(e) => return Err(e),
            }
        };
        {
            let mut st = session.lock();
            if st.deleted {
                return Err(SessionError::AgentNotFound(agent_id.to_owned()));
            }
            st.deleted = true;
        }
        let deleted = self.store.delete_agent(agent_id).await;
        if !matches!(deleted, Ok(true)) {
            // Not deleted after all (gone already, or the store failed): usable again.
            session.lock().deleted = false;
        }
        if !deleted? {
            self.sessions().remove(agent_id);
            return Err(SessionError::AgentNotFound(agent_id.to_owned()));
        }
        // Its subagents still waiting for a slot never start.
        self.task_slots.drop_waiting(agent_id);
        session.emit(EventKind::AgentDeleted {}).await;
        session.ended.send_modify(|end| end.deleted = true);
        self.sessions().remove(agent_id);
        session.events.close();
        self.tools.remove_agent_files(agent_id);
        drop(slot);
        Ok(())
    }

    /// What a request of the agent is framed with besides its history, as a run frames it:
    /// the tools offered and the profile's prompt frame.
    async fn request_frame(
        &self,
        agent: &Agent,
    ) -> Result<(Vec<crate::provider::ToolSpec>, crate::profiles::PromptFrame), SessionError> {
        let specs = self.tools.specs_for(agent);
        let frame = self
            .tools
            .frame(agent)
            .await
            .map_err(|e| SessionError::InvalidState(e.to_string()))?;
        Ok((specs, frame))
    }

    /// The exact body of the agent's next model call, or of the first call of an assistant
    /// message.
    pub async fn request_preview(
        &self,
        agent_id: &str,
        message_id: Option<&str>,
    ) -> Result<RequestPreview, SessionError> {
        let agent = self.get_agent(agent_id).await?;
        if agent.mode == agent_proto::AgentMode::Acp {
            return Err(SessionError::NotSupported(
                "a request preview for agents of mode \"acp\" (the external agent builds its own requests)".into(),
            ));
        }
        let resolved = self
            .providers
            .resolve(&agent.provider, &agent.model)
            .ok_or_else(|| provider_not_configured(&self.providers, &agent.provider))?;
        let history = self.store.history(agent_id).await?;
        let summaries = self.store.summaries(agent_id).await?;
        let point = match message_id {
            Some(id) => context::Point::Began(id),
            None => context::Point::Next,
        };
        let selection =
            context::select(&history, summaries, point).map_err(SessionError::MessageNotFound)?;
        let (before, current, summary) = (selection.before, selection.current, selection.summary);
        let (specs, frame) = self.request_frame(&agent).await?;
        let calibration = self.session(agent_id).await?.calibration();
        let prepared = context::prepare(
            context::ContextInput {
                agent: &agent,
                history: before,
                current,
                model: &resolved.model,
                tools: &specs,
                summary: summary.as_ref(),
                frame: Some(&frame),
                prices: None,
            },
            calibration,
        );
        let body = resolved.provider.request_body(&prepared.request);
        Ok(RequestPreview {
            provider: agent.provider,
            model: agent.model,
            request: body,
            estimated_tokens: prepared.report.system_tokens
                + prepared.report.tools_tokens
                + prepared.report.messages_tokens,
            context: prepared.report,
        })
    }

    /// Start-up recovery: messages a crash left unfinished become `interrupted` (their
    /// running tool calls get an "interrupted" result), running executions are closed,
    /// and a session left busy waits for what its last message waits for, or is idle.
    pub async fn recover(&self) -> Result<usize, StoreError> {
        Ok(self.recover_left(None).await?.len())
    }

    /// [`SessionManager::recover`] of one agent only: its run was lost with the daemon
    /// that ran it (another daemon on a shared store), and this daemon, its new home, takes
    /// it over. The agent must not be running here. Its subscribers, wherever they are,
    /// hear the end: each interrupted answer completed as `interrupted`, its run finished
    /// with an error saying why, and the settled status. Returns how many answers were
    /// interrupted.
    pub async fn recover_agent(&self, agent_id: &str) -> Result<usize, SessionError> {
        let interrupted = self.recover_left(Some(agent_id)).await?;
        let session = self.session(agent_id).await?;
        for (_, message_id) in &interrupted {
            session
                .emit(EventKind::MessageCompleted {
                    message_id: message_id.clone(),
                    status: agent_proto::MessageStatus::Interrupted,
                    structured_output: None,
                })
                .await;
            session
                .emit(EventKind::LoopFinished {
                    message_id: message_id.clone(),
                    reason: agent_proto::LoopFinishReason::Error,
                    error: Some(
                        "the daemon running this turn stopped; the answer so far is kept \
                         (continueLoop goes on from it)"
                            .into(),
                    ),
                })
                .await;
        }
        if let Some(row) = self.store.session_row(agent_id).await? {
            session.lock().status = row.status;
            session
                .emit(EventKind::StatusChanged { status: row.status })
                .await;
        }
        Ok(interrupted.len())
    }

    /// Returns the (agent, message) ids of the messages interrupted.
    async fn recover_left(&self, only: Option<&str>) -> Result<Vec<(String, String)>, StoreError> {
        let now = now_ms();
        let unfinished = self.store.interrupt_unfinished(now, only).await?;
        for (_, message_id) in &unfinished {
            let Some(mut message) = self.store.get_message(message_id).await? else {
                continue;
            };
            // Calls that ended before the message's last save get their recorded result;
            // the rest are interrupted.
            let ended = self.store.ended_tools(message_id).await?;
            let restored = agent_loop::restore_results(&mut message, &ended);
            if agent_loop::recover_calls(&mut message) || restored {
                self.store.update_message(&message).await?;
            }
        }
        self.store.interrupt_running_tools(now, only).await?;
        // The session follows what its stored calls wait for. A run saves its message
        // (the call waiting, the prompt or question in it) before it announces it, and its
        // session status after: a daemon killed in between left `generating` with a prompt
        // a client may have seen and answered. And a prompt answered just before the
        // daemon stopped (the answer is saved with the call first) leaves nothing to
        // answer: such an agent is idle, its message goes on with continueLoop.
        for agent_id in self.store.agents_left_busy(only).await? {
            let status = self
                .store
                .last_assistant_message(&agent_id)
                .await?
                .and_then(|m| agent_loop::waiting_for(&m))
                .unwrap_or(SessionStatus::Idle);
            self.store.set_session_status(&agent_id, status).await?;
        }
        Ok(unfinished)
    }

    /// Events of one agent (replaying after `since`, or starting with a snapshot) or of all
    /// agents; attach the result once the answer to `subscribe` is on its way.
    pub async fn subscribe(
        &self,
        agent_id: Option<&str>,
        since: Option<u64>,
        snapshot: bool,
    ) -> Result<PendingSubscription, SessionError> {
        match agent_id {
            Some(_) if snapshot && since.is_some() => Err(SessionError::InvalidParams(
                "snapshot and sinceSeq do not go together: a snapshot starts at the agent's latest seq".into(),
            )),
            Some(id) if snapshot => {
                let session = self.session(id).await?;
                session.events.seed_mirror(|| session.status()).await?;
                Ok(session.events.subscribe_snapshot())
            }
            Some(id) => Ok(self.session_replaying(id, since).await?.events.subscribe(since)),
            None if since.is_some() || snapshot => Err(SessionError::InvalidParams(
                "sinceSeq and snapshot need agentId: seqs are per agent".into(),
            )),
            None => Ok(self.hub.subscribe_all()),
        }
    }

    /// The session of a subscription from `since`. For another daemon's agent whose log is
    /// not loaded here yet (a client reconnecting to this daemon), the log starts at `since`
    /// and what the home published after it is replayed from the events table into it; what
    /// the table no longer holds (or an event heard live before the table was read) is a
    /// gap, told as `resyncRequired`.
    async fn session_replaying(
        &self,
        agent_id: &str,
        since: Option<u64>,
    ) -> Result<Arc<Session>, SessionError> {
        let homes = self.homes.get().and_then(Weak::upgrade);
        let (Some(since), Some(homes)) = (since, homes) else {
            return self.session(agent_id).await;
        };
        if self.sessions().loaded.contains_key(agent_id) || self.is_home(agent_id) {
            return self.session(agent_id).await;
        }
        // No event heard live is relayed meanwhile: what was published before is in the
        // table, what comes after waits and finds the log loaded.
        let _relaying = self.relaying.lock().await;
        let session = self.session_from(agent_id, Some(since)).await?;
        if !self.is_home(agent_id) {
            for (seq, json) in homes.replay(agent_id, since).await {
                self.relay_held(agent_id, seq, &json);
            }
        }
        Ok(session)
    }

    /// Stops every run (their messages become `interrupted`), waits up to `grace` for them
    /// to save their state, then stores each agent's exact last seq.
    pub async fn shutdown(&self, grace: Duration) {
        self.shutting_down.cancel();
        let sessions: Vec<Arc<Session>> = self.sessions().loaded.values().cloned().collect();
        for session in &sessions {
            if let Some(run) = &session.lock().run {
                // A run already ending at a prompt keeps it: it is saved either way.
                let _ = run.control.stop(StopReason::Shutdown);
            }
        }
        self.runs.close();
        if tokio::time::timeout(grace, self.runs.wait()).await.is_err() {
            tracing::warn!(
                "runs did not stop within {grace:?}; their messages are recovered at the next start"
            );
        }
        // Only an agent's home stores its seq: another daemon's log of it only relayed.
        for session in sessions.iter().filter(|s| self.is_home(&s.agent_id)) {
            if let Err(e) = session.events.persist_last_seq().await {
                tracing::warn!(agent_id = session.agent_id, "cannot save the last seq: {e}");
            }
        }
        // Sessions unloaded while idle left their exact last seq here.
        let evicted: Vec<(String, u64)> = self.sessions().evicted.drain().collect();
        for (agent_id, seq) in evicted.into_iter().filter(|(id, _)| self.is_home(id)) {
            if let Err(e) = self.store.set_last_seq(&agent_id, seq).await {
                tracing::warn!(agent_id, "cannot save the last seq: {e}");
            }
        }
    }
}

pub(crate) fn provider_not_configured(
    providers: &ProviderRegistry,
    provider: &str,
) -> SessionError {
    let known: Vec<String> = providers
        .list_providers()
        .into_iter()
        .map(|p| p.id)
        .collect();
    SessionError::ProviderNotConfigured(format!(
        "provider {provider:?} is not configured (configured: {}); see listProviders",
        known.join(", ")
    ))
}
