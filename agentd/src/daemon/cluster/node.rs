//! One daemon of a cluster on a shared PostgreSQL store: its membership, the agents it is
//! home to, the events it publishes and relays, the requests it forwards and serves, and
//! the upkeep that takes over a dead daemon's agents.
//!
//! - **Homes.** An agent is served by the daemon holding its lock (`store::cluster`). A
//!   request about an agent ([`Router::route`]) is served here when this daemon is its home
//!   or becomes it (the lock was free), else forwarded to its home. A daemon stays home to
//!   an agent until it stops.
//! - **Events.** Every event this daemon numbers for an agent it is home to is stored and
//!   notified in batches ([`notices::MAX_BATCH`]); events heard from other homes are relayed
//!   into the local logs of the agents they name (their subscribers here see the home's
//!   stream) and the store's caches of those agents are dropped. When the listening
//!   connection was lost, every log here catches up from the events table.
//! - **Commands.** A forwarded request travels as a notice to its home, which runs it as
//!   its own clients' (`Dispatcher::execute_forwarded`) and answers the same way.
//! - **Upkeep**, every [`UPKEEP`]: a heartbeat; daemons silent for [`SILENCE`] reaped (their
//!   locks go); agents left busy with no home taken over and settled as a restart does.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use futures::future::BoxFuture;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::notices::{self, CommandNotice, EventsNotice};
use crate::rpc::dispatch::Dispatcher;
use crate::rpc::route::{Address, ForwardError, Route, Router};
use crate::session::SessionManager;
use crate::session::events::{EmittedEvent, Outbox};
use crate::store::cluster::{Channel, Home, Listener, Member, Notice};
use crate::store::{Store, StoreError};

/// How often a daemon says it is alive and looks for agents to take over.
pub(super) const UPKEEP: Duration = Duration::from_secs(2);
/// A daemon silent this long is taken for dead: its locks are ended, its agents taken over.
pub(super) const SILENCE: Duration = Duration::from_secs(10);
/// How long the events table keeps an event (what another daemon can replay from it).
const EVENTS_KEPT_MS: i64 = 3_600_000;
/// Every this many upkeeps, the events older than [`EVENTS_KEPT_MS`] go.
const PRUNE_EVERY: u64 = 30;
/// Events replayed from the events table into a log at most (more is a gap: resync).
const REPLAY_MAX: u32 = 10_000;
/// How long a forwarded request waits for its home's answer.
const FORWARD_WAIT: Duration = Duration::from_secs(60);

/// This daemon in its cluster.
pub struct Node {
    member: Arc<Member>,
    store: Store,
    sessions: Arc<SessionManager>,
    /// Agents this daemon holds the lock of.
    homes: Mutex<HashSet<String>>,
    /// Forwarded requests waiting for their answer, by id.
    pending: Mutex<HashMap<String, oneshot::Sender<String>>>,
    /// Runs the requests forwarded here; set once the method table is built (it holds this
    /// node as its router).
    dispatcher: OnceLock<Dispatcher>,
    /// The host label of this daemon: agents with a folder of another label are not run here.
    label: String,
    stop: CancellationToken,
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Node")
            .field("id", &self.member.id())
            .finish()
    }
}

impl Node {
    /// Joins the cluster on `store` (PostgreSQL) as a daemon of `host_label`.
    pub async fn join(
        store: &Store,
        sessions: Arc<SessionManager>,
        host_label: &str,
    ) -> Result<Arc<Node>, StoreError> {
        let hostname = super::hostname();
        let member = Arc::new(store.join_cluster(host_label, &hostname).await?);
        tracing::info!(
            daemon = member.id(),
            host_label,
            "joined the daemons on this database"
        );
        Ok(Arc::new(Node {
            member,
            store: store.clone(),
            sessions,
            homes: Mutex::default(),
            pending: Mutex::default(),
            dispatcher: OnceLock::new(),
            label: host_label.to_owned(),
            stop: CancellationToken::new(),
        }))
    }

    /// This daemon's id in the cluster.
    pub fn id(&self) -> &str {
        self.member.id()
    }

    /// Starts the listener, the publisher and the upkeep; `dispatcher` runs the requests
    /// forwarded here.
    pub async fn start(self: &Arc<Self>, dispatcher: Dispatcher) -> anyhow::Result<()> {
        let _ = self.dispatcher.set(dispatcher);
        let listener = self.member.listen().await?;
        tokio::spawn(self.clone().listen(listener));
        let (tx, rx) = mpsc::unbounded_channel();
        let outbox: Arc<dyn Outbox> = Arc::new(Published(tx));
        let every_agent = self
            .sessions
            .subscribe(None, None, false)
            .await
            .map_err(|e| anyhow::anyhow!("cannot follow this daemon's events: {e}"))?;
        let subscription = every_agent.bind(outbox, 0);
        subscription.attach();
        tokio::spawn(self.clone().publish(rx, subscription));
        tokio::spawn(self.clone().upkeep());
        Ok(())
    }

    /// Leaves the cluster: the tasks stop, this daemon's row and locks go (the others may
    /// take its agents at once).
    pub async fn leave(&self) {
        self.stop.cancel();
        if let Err(e) = self.member.leave().await {
            tracing::warn!("cannot leave the cluster cleanly (the others reap this daemon): {e}");
        }
    }

    /// Waits for the cluster's start-up lock; how many other daemons are alive (none: this
    /// one settles what a stopped cluster left, as a lone daemon's start does).
    pub async fn begin_start(&self) -> Result<usize, StoreError> {
        self.member.begin_start(SILENCE).await
    }

    /// Lets the next daemon start.
    pub async fn end_start(&self) -> Result<(), StoreError> {
        self.member.end_start().await
    }

    fn homes(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        self.homes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, HashMap<String, oneshot::Sender<String>>> {
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Makes this daemon agent `agent_id`'s home if no daemon is and its folder (if any) is
    /// on this daemon's host: true when it is (now), and for an agent that does not exist
    /// (served here: it is not found here either).
    async fn take_home(&self, agent_id: &str) -> Result<bool, StoreError> {
        if self.homes().contains(agent_id) {
            return Ok(true);
        }
        // An agent whose folder is on another host is never this daemon's.
        if let Some(label) = self.store.host_label_of(agent_id).await?
            && label != self.label
        {
            return Ok(false);
        }
        match self.member.try_home(agent_id).await? {
            Home::Elsewhere => Ok(false),
            Home::NoAgent => Ok(true),
            Home::Here => {
                self.homes().insert(agent_id.to_owned());
                self.sessions.became_home(agent_id).await;
                Ok(true)
            }
        }
    }

    /// Publishes the events of the agents this daemon is home to, in batches.
    async fn publish(
        self: Arc<Self>,
        mut rx: mpsc::UnboundedReceiver<Arc<EmittedEvent>>,
        _subscription: crate::session::events::Subscription,
    ) {
        let mut batch: Vec<Arc<EmittedEvent>> = Vec::with_capacity(notices::MAX_BATCH);
        loop {
            let first = tokio::select! {
                _ = self.stop.cancelled() => return,
                event = rx.recv() => match event {
                    Some(event) => event,
                    None => return,
                },
            };
            batch.push(first);
            while batch.len() < notices::MAX_BATCH {
                match rx.try_recv() {
                    Ok(event) => batch.push(event),
                    Err(_) => break,
                }
            }
            {
                let homes = self.homes();
                batch.retain(|e| e.seq > 0 && homes.contains(&*e.agent_id));
            }
            if batch.is_empty() {
                continue;
            }
            let rows: Vec<(&str, u64, &str)> = batch
                .iter()
                .map(|e| (&*e.agent_id, e.seq, &*e.json))
                .collect();
            let notice = notices::events_notice(self.id(), &rows);
            if let Err(e) = self.member.publish_events(&rows, &notice).await {
                // The others see a gap at the next event and catch up or resync.
                tracing::warn!(
                    "cannot publish {} events to the other daemons: {e}",
                    rows.len()
                );
            }
            drop(rows);
            batch.clear();
        }
    }

    /// Hears the other daemons: their events, requests and answers.
    async fn listen(self: Arc<Self>, mut listener: Listener) {
        loop {
            let heard = tokio::select! {
                _ = self.stop.cancelled() => return,
                heard = listener.next() => heard,
            };
            match heard {
                Ok(Notice::Heard {
                    channel: Channel::Events,
                    payload,
                }) => self.heard_events(&payload).await,
                Ok(Notice::Heard {
                    channel: Channel::Commands,
                    payload,
                }) => self.heard_command(&payload).await,
                Ok(Notice::Lost) => self.catch_up().await,
                Err(e) => {
                    tracing::warn!("the cluster's listener failed: {e}");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        }
    }

    async fn heard_events(&self, payload: &str) {
        let notice: EventsNotice = match serde_json::from_str(payload) {
            Ok(notice) => notice,
            Err(e) => return tracing::warn!("an events notice this daemon cannot read: {e}"),
        };
        if notice.from == self.id() {
            return;
        }
        for event in &notice.events {
            self.relay(event.agent_id, event.seq, event.event.get())
                .await;
        }
        for range in &notice.ranges {
            let count =
                u32::try_from(range.last.saturating_sub(range.first) + 1).unwrap_or(u32::MAX);
            match self
                .member
                .events_after(range.agent_id, range.first.saturating_sub(1), count)
                .await
            {
                Ok(events) => {
                    for (seq, json) in events {
                        self.relay(range.agent_id, seq, &json).await;
                    }
                }
                Err(e) => tracing::warn!(agent_id = range.agent_id, "cannot read events: {e}"),
            }
        }
    }

    async fn relay(&self, agent_id: &str, seq: u64, json: &str) {
        if self.homes().contains(agent_id) {
            return;
        }
        self.sessions.relay(agent_id, seq, json).await;
    }

    /// The listening connection was lost: what was missed is read from the events table
    /// for every agent whose log is loaded here, and the store forgets what it kept.
    async fn catch_up(&self) {
        tracing::warn!("the cluster's listening connection was lost; catching up");
        self.store.forget_all_caches();
        for (agent_id, last) in self.sessions.loaded_logs() {
            if self.homes().contains(&agent_id) {
                continue;
            }
            match self.member.events_after(&agent_id, last, 10_000).await {
                Ok(events) => {
                    for (seq, json) in events {
                        self.sessions.relay(&agent_id, seq, &json).await;
                    }
                }
                Err(e) => tracing::warn!(agent_id, "cannot catch up: {e}"),
            }
        }
    }

    async fn heard_command(self: &Arc<Self>, payload: &str) {
        let notice: CommandNotice = match serde_json::from_str(payload) {
            Ok(notice) => notice,
            Err(e) => return tracing::warn!("a command notice this daemon cannot read: {e}"),
        };
        if notice.to != self.id() {
            return;
        }
        let body = match notice.body {
            Some(body) => body.into_owned(),
            None => match self.member.take_body(notice.id).await {
                Ok(Some(body)) => body,
                Ok(None) => return tracing::warn!(id = notice.id, "a stored body is gone"),
                Err(e) => return tracing::warn!(id = notice.id, "cannot read a stored body: {e}"),
            },
        };
        if !notice.request {
            if let Some(waiting) = self.pending().remove(notice.id) {
                let _ = waiting.send(body);
            }
            return;
        }
        // Served in its own task: a long request must not hold up the listener.
        let (node, from, id) = (self.clone(), notice.from.to_owned(), notice.id.to_owned());
        tokio::spawn(async move {
            let Some(dispatcher) = node.dispatcher.get() else {
                return;
            };
            let response = dispatcher.execute_forwarded(&body).await;
            if let Err(e) = node.send(&from, &id, false, &response).await {
                tracing::warn!(to = from, "cannot answer a forwarded request: {e}");
            }
        });
    }

    /// Sends a request or an answer to daemon `to`.
    async fn send(&self, to: &str, id: &str, request: bool, body: &str) -> Result<(), StoreError> {
        let notice = match notices::command_notice(to, self.id(), id, request, body) {
            Some(notice) => notice,
            None => {
                self.member
                    .put_body(id_of(id, request).as_str(), body)
                    .await?;
                notices::command_notice_stored(to, self.id(), &id_of(id, request), request)
            }
        };
        self.member.notify(Channel::Commands, &notice).await
    }

    /// Every [`UPKEEP`]: the heartbeat, the dead reaped, the orphans taken over.
    async fn upkeep(self: Arc<Self>) {
        let mut tick = tokio::time::interval(UPKEEP);
        let mut ticks: u64 = 0;
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = self.stop.cancelled() => return,
                _ = tick.tick() => {}
            }
            if let Err(e) = self.member.heartbeat().await {
                tracing::error!("this daemon's hold on the cluster is lost: {e}");
                continue;
            }
            if let Err(e) = self.member.reap(SILENCE).await.map(|reaped| {
                for dead in reaped {
                    tracing::warn!(
                        daemon = dead.daemon_id,
                        agents = dead.agents.len(),
                        "a daemon fell silent; its agents are free"
                    );
                }
            }) {
                tracing::warn!("cannot reap silent daemons: {e}");
            }
            if let Err(e) = self.take_over_orphans().await {
                tracing::warn!("cannot take over agents left busy: {e}");
            }
            ticks += 1;
            if ticks.is_multiple_of(PRUNE_EVERY)
                && let Err(e) = self
                    .member
                    .prune_events(crate::store::now_ms() - EVENTS_KEPT_MS)
                    .await
            {
                tracing::warn!("cannot prune the events table: {e}");
            }
        }
    }

    /// Agents left running with no home (their daemon died): taken here and settled. One
    /// waiting for a prompt or a question ran nothing: it waits here as it did there.
    pub async fn take_over_orphans(&self) -> Result<(), StoreError> {
        for agent_id in self.store.agents_left_busy(None).await? {
            if self.homes().contains(&agent_id) || !self.take_home(&agent_id).await? {
                continue;
            }
            let running = self
                .store
                .session_row(&agent_id)
                .await?
                .is_some_and(|row| row.status == agent_proto::SessionStatus::Generating);
            if !running {
                continue;
            }
            match self.sessions.recover_agent(&agent_id).await {
                Ok(n) => {
                    tracing::info!(
                        agent_id,
                        interrupted = n,
                        "took over an agent whose daemon died"
                    );
                    // What was queued behind the lost turn goes on here.
                    self.sessions.resume_queue(&agent_id).await;
                }
                Err(e) => tracing::warn!(agent_id, "cannot settle an agent taken over: {e}"),
            }
        }
        Ok(())
    }
}

/// The key a body is stored under: a request's and its answer's must differ.
fn id_of(id: &str, request: bool) -> String {
    format!("{id}:{}", if request { "q" } else { "a" })
}

/// The publisher's outbox: every event of this daemon, queued for [`Node::publish`].
struct Published(mpsc::UnboundedSender<Arc<EmittedEvent>>);

impl Outbox for Published {
    fn deliver(&self, _: u64, event: &Arc<EmittedEvent>) -> bool {
        let _ = self.0.send(event.clone());
        true
    }
    fn behind(&self, _: u64) {}
    fn ended(&self, _: u64) {}
    fn notify(&self, _: String) {}
}

impl Node {
    /// Where a request about an agent whose folder is on host `label` (not this one's)
    /// goes: its home if it has one, else a live daemon of that host, else nowhere.
    async fn route_to_host(&self, agent_id: &str, label: &str) -> Route {
        match self.member.home_of(agent_id).await {
            Ok(Some(home)) => return Route::Forward(home.id),
            Ok(None) => {}
            Err(e) => return Route::Refuse(agent_proto::ErrorKind::Internal, e.to_string()),
        }
        let live = match self.member.daemons().await {
            Ok(daemons) => daemons.into_iter().find(|d| {
                d.host_label == label
                    && d.silent_ms < i64::try_from(SILENCE.as_millis()).unwrap_or(i64::MAX)
            }),
            Err(e) => return Route::Refuse(agent_proto::ErrorKind::Internal, e.to_string()),
        };
        match live {
            Some(daemon) => Route::Forward(daemon.id),
            None => Route::Refuse(
                agent_proto::ErrorKind::InvalidState,
                format!(
                    "agent {agent_id} works in a folder on host {label:?}, and no daemon of that \
                     host is running: start agentd there (with [store] host_label = {label:?})"
                ),
            ),
        }
    }
}

impl crate::session::Homes for Node {
    fn is_home(&self, agent_id: &str) -> bool {
        self.homes().contains(agent_id)
    }

    fn published<'a>(&'a self, agent_id: &'a str) -> BoxFuture<'a, Option<u64>> {
        Box::pin(async move {
            self.member
                .last_event_seq(agent_id)
                .await
                .unwrap_or_else(|e| {
                    tracing::warn!(agent_id, "cannot read the agent's last published seq: {e}");
                    None
                })
        })
    }

    fn replay<'a>(&'a self, agent_id: &'a str, after: u64) -> BoxFuture<'a, Vec<(u64, String)>> {
        Box::pin(async move {
            self.member
                .events_after(agent_id, after, REPLAY_MAX)
                .await
                .unwrap_or_else(|e| {
                    tracing::warn!(agent_id, "cannot read the agent's stored events: {e}");
                    Vec::new()
                })
        })
    }

    fn take<'a>(&'a self, agent_id: &'a str) -> BoxFuture<'a, bool> {
        Box::pin(async move {
            self.take_home(agent_id).await.unwrap_or_else(|e| {
                tracing::warn!(agent_id, "cannot take the agent's lock: {e}");
                false
            })
        })
    }
}

impl Router for Node {
    fn route<'a>(&'a self, method: &'a str, address: &'a Address) -> BoxFuture<'a, Route> {
        Box::pin(async move {
            let agent_id = match address {
                Address::Agent(id) => id.clone(),
                Address::Message(id) => match self.store.get_message(id).await {
                    Ok(Some(message)) => message.agent_id,
                    // Not found here is not found anywhere: the method says so.
                    _ => return Route::Local,
                },
            };
            if reads_only(method) || self.homes().contains(&agent_id) {
                return Route::Local;
            }
            match self.store.host_label_of(&agent_id).await {
                Ok(Some(label)) if label != self.label => {
                    return self.route_to_host(&agent_id, &label).await;
                }
                Ok(_) => {}
                Err(e) => return Route::Refuse(agent_proto::ErrorKind::Internal, e.to_string()),
            }
            // The lock is taken before the home is written down: look twice.
            for _ in 0..50 {
                match self.take_home(&agent_id).await {
                    Ok(true) => return Route::Local,
                    Ok(false) => {}
                    Err(e) => {
                        return Route::Refuse(agent_proto::ErrorKind::Internal, e.to_string());
                    }
                }
                match self.member.home_of(&agent_id).await {
                    Ok(Some(home)) if home.id != self.id() => return Route::Forward(home.id),
                    Ok(_) => tokio::time::sleep(Duration::from_millis(20)).await,
                    Err(e) => {
                        return Route::Refuse(agent_proto::ErrorKind::Internal, e.to_string());
                    }
                }
            }
            Route::Refuse(
                agent_proto::ErrorKind::Internal,
                format!("agent {agent_id} is held by a daemon that does not say which"),
            )
        })
    }

    fn forward<'a>(
        &'a self,
        to: &'a str,
        request: String,
    ) -> BoxFuture<'a, Result<String, ForwardError>> {
        Box::pin(async move {
            let id = uuid::Uuid::now_v7().to_string();
            let (tx, rx) = oneshot::channel();
            self.pending().insert(id.clone(), tx);
            if let Err(e) = self.send(to, &id, true, &request).await {
                self.pending().remove(&id);
                return Err(ForwardError::NotSent(e.to_string()));
            }
            match tokio::time::timeout(FORWARD_WAIT, rx).await {
                Ok(Ok(response)) => Ok(response),
                Ok(Err(_)) => Err(ForwardError::HomeGone),
                Err(_) => {
                    self.pending().remove(&id);
                    Err(ForwardError::NoAnswer(FORWARD_WAIT))
                }
            }
        })
    }
}

/// Methods that only read what the store holds: served by any daemon, never taking a home.
fn reads_only(method: &str) -> bool {
    matches!(
        method,
        "getAgent" | "listMessages" | "getMessage" | "searchMessages" | "getUsage" | "exportAgent"
    )
}
