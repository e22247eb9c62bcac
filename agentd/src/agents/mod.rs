//! Agents as configuration: creating, reading, listing, updating and deleting them,
//! copying them (`transfer`: fork, export, import) and naming them (`titles`).
//!
//! This is the service `rpc` calls for an agent's settings; what happens at run time (the
//! registry of sessions, run slots, events, runs) is `session`'s, which this service uses
//! to announce changes (`agentCreated`, `agentUpdated`) and to stop a deleted agent's run.
//! The session knows nothing of this service but what it asks through [`RunObserver`].

mod subagents;
mod titles;
mod transfer;
mod usage;

use std::sync::{Arc, Weak};

use agent_proto::{Agent, AgentMode, AgentSettings, EventKind, Plan, ToolInfo};

use crate::config::Defaults;
use crate::provider::ProviderRegistry;
use crate::session::{
    DEFAULT_TITLE, RunObserver, SessionError, SessionManager, merge_settings, parse_settings,
    provider_not_configured,
};
use crate::store::{AgentFilter, AgentPatch, MessagePage, NewAgent, Store, now_ms};
use crate::tools::center::ToolCenter;
use crate::tools::host::AgentHost;

pub use subagents::{SubagentTypeConfig, SubagentsConfig};

/// The agents' configuration service, and the agent layer the agent tools (`todo_write`,
/// `task`) act through.
#[derive(Debug)]
pub struct AgentService {
    store: Store,
    providers: Arc<ProviderRegistry>,
    tools: Arc<ToolCenter>,
    sessions: Arc<SessionManager>,
    defaults: Defaults,
    subagents: SubagentsConfig,
    /// Itself, for the tasks it spawns (watching background subagents).
    this: Weak<AgentService>,
}

impl AgentService {
    /// The service, registered with `sessions` as the observer of its runs (titles) and
    /// with the tool center as the agent tools' host.
    pub fn new(
        store: Store,
        providers: Arc<ProviderRegistry>,
        tools: Arc<ToolCenter>,
        sessions: Arc<SessionManager>,
        defaults: Defaults,
        subagents: SubagentsConfig,
    ) -> Arc<AgentService> {
        let service = Arc::new_cyclic(|this| AgentService {
            store,
            providers,
            tools: tools.clone(),
            sessions: sessions.clone(),
            defaults,
            subagents,
            this: this.clone(),
        });
        let observer: Arc<dyn RunObserver> = service.clone();
        sessions.set_observer(Arc::downgrade(&observer));
        let host: Arc<dyn AgentHost> = service.clone();
        tools.set_host(Arc::downgrade(&host));
        service
    }

    /// The agent's plan (empty when it never wrote one).
    pub async fn plan(&self, agent_id: &str) -> Result<Plan, SessionError> {
        self.get_agent(agent_id).await?;
        let plan = self.store.plan(agent_id).await?;
        Ok(Plan {
            agent_id: agent_id.to_owned(),
            updated_at: plan.as_ref().map(|(_, at)| *at),
            items: plan.map(|(items, _)| items).unwrap_or_default(),
        })
    }

    pub async fn get_agent(&self, agent_id: &str) -> Result<Agent, SessionError> {
        self.sessions.get_agent(agent_id).await
    }

    pub async fn list_agents(
        &self,
        filter: &AgentFilter,
    ) -> Result<(Vec<Agent>, Option<String>), SessionError> {
        let (agents, next) = self.store.list_agents(filter).await?;
        Ok((
            agents
                .into_iter()
                .map(|a| self.sessions.with_status(a))
                .collect(),
            next,
        ))
    }

    /// Creates an agent; absent fields take the configured defaults.
    pub async fn create_agent(&self, spec: AgentSpec) -> Result<Agent, SessionError> {
        let mode = spec.mode.or(self.defaults.mode).unwrap_or(AgentMode::Chat);
        if mode == AgentMode::Acp {
            return self.create_acp_agent(spec).await;
        }
        if spec.acp.is_some() {
            return Err(SessionError::InvalidParams(
                "acp is only for agents of mode \"acp\"".into(),
            ));
        }
        let provider = match spec.provider {
            Some(p) => p,
            None => self.providers.default_provider(),
        };
        let model = match spec.model {
            Some(m) if !m.trim().is_empty() => m,
            Some(_) => return Err(SessionError::InvalidParams("model is empty".into())),
            None => self
                .providers
                .default_model_for(&provider)
                .ok_or_else(|| provider_not_configured(&self.providers, &provider))?,
        };
        self.check_provider(&provider, &model)?;
        let settings = match spec.settings {
            Some(value) => parse_settings(value)?,
            None => AgentSettings::default(),
        };
        if let Some(workspace) = &spec.workspace {
            check_workspace(workspace)?;
        }
        let profile = self.profile_param(spec.profile.or_else(|| self.defaults.profile.clone()))?;
        let id = uuid::Uuid::now_v7().to_string();
        // An agent with tools gets a workspace of its own unless it names one.
        let workspace = match (spec.workspace, mode) {
            (Some(w), _) => Some(w),
            (None, AgentMode::Agent) => Some(self.create_default_workspace(&id)?),
            (None, _) => None,
        };
        let title = spec
            .title
            .map(|t| t.trim().to_owned())
            .filter(|t| !t.is_empty())
            .unwrap_or_else(|| DEFAULT_TITLE.to_owned());
        let new = NewAgent {
            id,
            title,
            mode,
            provider,
            model,
            system_prompt: spec
                .system_prompt
                .or_else(|| self.defaults.system_prompt.clone()),
            workspace,
            profile: profile.flatten(),
            settings,
            acp: None,
            created_at: now_ms(),
        };
        let agent = self.store.insert_agent(&new).await?;
        self.announce_created(agent).await
    }

    /// Creates an agent of mode `acp`: answered by the external agent `spec.acp` names,
    /// which brings its own model, prompt and tools.
    async fn create_acp_agent(&self, spec: AgentSpec) -> Result<Agent, SessionError> {
        let Some(backend) = spec.acp else {
            return Err(SessionError::InvalidParams(
                "mode \"acp\" needs acp: {name} (one of the config's [[acp_agents]]) or {command, args?, env?}".into(),
            ));
        };
        let command = self
            .sessions
            .acp_agents()
            .command(&backend)
            .map_err(SessionError::InvalidParams)?;
        refuse_model_fields([
            ("provider", spec.provider.is_some()),
            ("model", spec.model.is_some()),
            ("systemPrompt", spec.system_prompt.is_some()),
            ("profile", spec.profile.is_some()),
        ])?;
        let settings = match spec.settings {
            Some(value) => parse_settings(value)?,
            None => AgentSettings::default(),
        };
        let id = uuid::Uuid::now_v7().to_string();
        let workspace = match spec.workspace {
            Some(w) => {
                check_workspace(&w)?;
                w
            }
            None => self.create_default_workspace(&id)?,
        };
        // The entry's name, or the program's file name.
        let model = command.name.clone();
        let title = spec
            .title
            .map(|t| t.trim().to_owned())
            .filter(|t| !t.is_empty())
            .unwrap_or_else(|| DEFAULT_TITLE.to_owned());
        let new = NewAgent {
            id,
            title,
            mode: AgentMode::Acp,
            provider: ACP_PROVIDER.to_owned(),
            model,
            system_prompt: None,
            workspace: Some(workspace),
            profile: None,
            settings,
            acp: Some(backend),
            created_at: now_ms(),
        };
        let agent = self.store.insert_agent(&new).await?;
        self.announce_created(agent).await
    }

    /// Tells subscribers a new agent exists (`agentCreated` on its own event log).
    async fn announce_created(&self, agent: Agent) -> Result<Agent, SessionError> {
        let agent = self.sessions.with_status(agent);
        self.sessions
            .emit_for(
                &agent.id,
                EventKind::AgentCreated {
                    agent: agent.clone(),
                },
            )
            .await?;
        Ok(agent)
    }

    /// Creates the folder an agent gets when it names no workspace; returns its path.
    fn create_default_workspace(&self, agent_id: &str) -> Result<String, SessionError> {
        let path = self.tools.default_workspace(agent_id);
        std::fs::create_dir_all(&path).map_err(|e| {
            SessionError::InvalidParams(format!(
                "cannot create the workspace {}: {e}",
                path.display()
            ))
        })?;
        Ok(path.display().to_string())
    }

    /// A `profile` param: `Some(None)` for `""` (none), `Some(Some(name))` for a profile
    /// the daemon has; another name is `invalidParams` naming the profiles there are.
    fn profile_param(
        &self,
        profile: Option<String>,
    ) -> Result<Option<Option<String>>, SessionError> {
        match profile {
            None => Ok(None),
            Some(name) if name.is_empty() => Ok(Some(None)),
            Some(name) => {
                self.tools
                    .profiles()
                    .check(&name)
                    .map_err(SessionError::InvalidParams)?;
                Ok(Some(Some(name)))
            }
        }
    }

    /// The profiles agents can be given.
    pub fn list_profiles(&self) -> Vec<agent_proto::ProfileInfo> {
        self.tools.profiles().list()
    }

    fn check_provider(&self, provider: &str, model: &str) -> Result<(), SessionError> {
        if self.providers.resolve(provider, model).is_none() {
            return Err(provider_not_configured(&self.providers, provider));
        }
        Ok(())
    }

    /// Changes an agent and tells the subscribers (`agentUpdated`).
    pub async fn update_agent(
        &self,
        agent_id: &str,
        update: AgentUpdate,
    ) -> Result<Agent, SessionError> {
        let current = self.get_agent(agent_id).await?;
        if current.mode == AgentMode::Acp {
            refuse_model_fields([
                ("provider", update.provider.is_some()),
                ("model", update.model.is_some()),
                ("systemPrompt", update.system_prompt.is_some()),
                ("profile", update.profile.is_some()),
            ])?;
        }
        let provider = update.provider.clone().unwrap_or(current.provider.clone());
        let model = match (&update.model, &update.provider) {
            (Some(m), _) => m.clone(),
            // A new provider without a model: that provider's default model.
            (None, Some(p)) if *p != current.provider => self
                .providers
                .default_model_for(p)
                .ok_or_else(|| provider_not_configured(&self.providers, p))?,
            (None, _) => current.model.clone(),
        };
        if update.provider.is_some() || update.model.is_some() {
            self.check_provider(&provider, &model)?;
        }
        // Checked now (a clear error before anything is written), merged again under the
        // write connection so a racing update of another field is not lost.
        if let Some(patch) = &update.settings {
            merge_settings(&current.settings, patch.clone())?;
        }
        let title = match update.title {
            Some(t) if t.trim().is_empty() => {
                return Err(SessionError::InvalidParams("title is empty".into()));
            }
            Some(t) => Some(t.trim().to_owned()),
            None => None,
        };
        let profile = self.profile_param(update.profile)?;
        let provider_changed = update.provider.is_some();
        let patch = AgentPatch {
            title,
            pinned: update.pinned,
            archived: update.archived,
            provider: provider_changed.then_some(provider),
            model: (update.model.is_some() || provider_changed).then_some(model),
            system_prompt: update
                .system_prompt
                .map(|s| Some(s).filter(|s| !s.is_empty())),
            profile,
            settings: None,
            title_was: None,
            ..AgentPatch::default()
        };
        let write = async || -> Result<Option<Agent>, SessionError> {
            let updated = match update.settings {
                Some(settings) => {
                    self.store
                        .update_agent_merging(
                            agent_id,
                            &patch,
                            |current| merge_settings(current, settings),
                            now_ms(),
                        )
                        .await?
                }
                None => self.store.update_agent(agent_id, &patch, now_ms()).await?,
            };
            Ok(Some(updated.ok_or_else(|| {
                SessionError::AgentNotFound(agent_id.to_owned())
            })?))
        };
        let updated = self.sessions.update_agent_row(agent_id, write).await?;
        updated.ok_or_else(|| SessionError::AgentNotFound(agent_id.to_owned()))
    }

    /// Switches an agent between `chat` and `agent` (an agent without a workspace gets
    /// its own folder) and tells the subscribers (`agentUpdated`). The run in progress, if
    /// any, keeps the mode it started with.
    pub async fn set_mode(&self, agent_id: &str, mode: AgentMode) -> Result<Agent, SessionError> {
        let current = self.get_agent(agent_id).await?;
        if mode == AgentMode::Acp || current.mode == AgentMode::Acp {
            return Err(SessionError::InvalidParams(format!(
                "an agent switches between \"chat\" and \"agent\" only (it is {:?}, asked {:?})",
                current.mode.as_str(),
                mode.as_str()
            )));
        }
        let workspace = match (mode, &current.workspace) {
            (AgentMode::Agent, None) => Some(self.create_default_workspace(agent_id)?),
            _ => None,
        };
        let patch = AgentPatch {
            mode: Some(mode),
            workspace,
            ..AgentPatch::default()
        };
        let write = async || -> Result<Option<Agent>, SessionError> {
            let updated = self.store.update_agent(agent_id, &patch, now_ms()).await?;
            Ok(Some(updated.ok_or_else(|| {
                SessionError::AgentNotFound(agent_id.to_owned())
            })?))
        };
        let updated = self.sessions.update_agent_row(agent_id, write).await?;
        updated.ok_or_else(|| SessionError::AgentNotFound(agent_id.to_owned()))
    }

    /// One page of an agent's messages; an unknown agent is an error, not an empty page.
    pub async fn list_messages(
        &self,
        agent_id: &str,
        cursor: Option<i64>,
        limit: u32,
        order: agent_proto::ListOrder,
    ) -> Result<MessagePage, SessionError> {
        self.get_agent(agent_id).await?;
        Ok(self
            .store
            .list_messages(agent_id, cursor, limit, order)
            .await?)
    }

    /// Messages whose text contains `query` (case-insensitive), newest first, with the
    /// text around the match; of one agent (which must exist) or of all.
    pub async fn search_messages(
        &self,
        query: &str,
        agent_id: Option<&str>,
        limit: usize,
    ) -> Result<Vec<agent_proto::MessageHit>, SessionError> {
        if let Some(id) = agent_id {
            self.get_agent(id).await?;
        }
        let found = self.store.search_messages(query, agent_id, limit).await?;
        Ok(found
            .into_iter()
            .map(|m| agent_proto::MessageHit {
                snippet: snippet(&m.text(), query),
                agent_id: m.agent_id,
                message_id: m.id,
                role: m.role,
                created_at: m.created_at,
            })
            .collect())
    }

    /// Stops the agent's run, tells the subscribers (`agentDeleted`), deletes the agent, its
    /// messages and its files, and ends its subscriptions; then its subagents the same way
    /// (its forks stay).
    pub async fn delete_agent(&self, agent_id: &str) -> Result<(), SessionError> {
        self.sessions.delete_agent(agent_id).await?;
        // Its external ACP agent, if it had one, goes with it.
        self.sessions.acp_agents().stop(agent_id).await;
        // So do its subagents (theirs too), each announced with its own `agentDeleted`.
        // Looked up once the parent is gone: its stopped run starts no more of them.
        for child in self.store.subagents(agent_id).await? {
            match Box::pin(self.delete_agent(&child)).await {
                Ok(()) | Err(SessionError::AgentNotFound(_)) => {}
                Err(e) => tracing::warn!(agent_id, child, "cannot delete a subagent: {e}"),
            }
        }
        Ok(())
    }

    /// The tools there are, or an agent's with `enabled` for it.
    /// The skills an agent has, and those that could not be used (`listSkills`).
    pub async fn list_skills(
        &self,
        agent_id: &str,
    ) -> Result<agent_proto::SkillList, SessionError> {
        let agent = self.get_agent(agent_id).await?;
        let catalog = self.tools.skills(&agent).await;
        Ok(agent_proto::SkillList {
            skills: catalog.skills,
            errors: catalog.problems,
        })
    }

    pub async fn list_tools(&self, agent_id: Option<&str>) -> Result<Vec<ToolInfo>, SessionError> {
        let agent = match agent_id {
            Some(id) => Some(self.get_agent(id).await?),
            None => None,
        };
        Ok(self.tools.list(agent.as_ref()))
    }
}

/// What `createAgent` asks for.
#[derive(Debug, Clone, Default)]
pub struct AgentSpec {
    pub title: Option<String>,
    /// With mode `acp`: the external agent.
    pub acp: Option<agent_proto::AcpBackend>,
    pub mode: Option<AgentMode>,
    pub provider: Option<String>,
    pub model: Option<String>,
    pub system_prompt: Option<String>,
    pub workspace: Option<String>,
    pub profile: Option<String>,
    pub settings: Option<serde_json::Value>,
}

/// The `provider` of an agent of mode `acp` (its `model` names the external agent).
pub const ACP_PROVIDER: &str = "acp";

/// Refuses the fields of agentd's own model (given: true) for an agent of mode `acp`.
fn refuse_model_fields(fields: [(&str, bool); 4]) -> Result<(), SessionError> {
    match fields.iter().find(|(_, given)| *given) {
        Some((field, _)) => Err(SessionError::InvalidParams(format!(
            "{field} is not for mode \"acp\": the external agent has its own"
        ))),
        None => Ok(()),
    }
}

/// A workspace a client names: an existing absolute folder.
fn check_workspace(workspace: &str) -> Result<(), SessionError> {
    let path = std::path::Path::new(workspace);
    if !path.is_absolute() {
        return Err(SessionError::InvalidParams(format!(
            "workspace {workspace:?} must be an absolute path"
        )));
    }
    if !path.is_dir() {
        return Err(SessionError::InvalidParams(format!(
            "workspace {workspace:?} is not an existing directory"
        )));
    }
    Ok(())
}

/// What `updateAgent` changes.
#[derive(Debug, Clone, Default)]
pub struct AgentUpdate {
    pub title: Option<String>,
    pub pinned: Option<bool>,
    pub archived: Option<bool>,
    pub provider: Option<String>,
    pub model: Option<String>,
    /// An empty string clears the system prompt.
    pub system_prompt: Option<String>,
    /// A profile the daemon has; an empty string clears it.
    pub profile: Option<String>,
    /// A JSON merge patch of the settings.
    pub settings: Option<serde_json::Value>,
}

/// Characters of a search hit's text shown around the match, each side.
const SNIPPET_SIDE: usize = 70;

/// The text around the first case-insensitive match of `query` in `text`, about
/// `2 * SNIPPET_SIDE` characters and the match, `…` where it was cut, on one line.
fn snippet(text: &str, query: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let lower: Vec<char> = chars.iter().flat_map(|c| c.to_lowercase()).collect();
    let needle: Vec<char> = query.chars().flat_map(char::to_lowercase).collect();
    // Lowercasing may change the length of a few characters: then the match is placed in
    // the lowercased text, which is what is shown.
    let shown = if lower.len() == chars.len() {
        &chars
    } else {
        &lower
    };
    let at = lower
        .windows(needle.len().max(1))
        .position(|w| w == needle.as_slice())
        .unwrap_or(0);
    let start = at.saturating_sub(SNIPPET_SIDE);
    let end = (at + needle.len() + SNIPPET_SIDE).min(shown.len());
    let mut out = String::new();
    if start > 0 {
        out.push('…');
    }
    out.extend(
        shown[start..end]
            .iter()
            .map(|c| if c.is_whitespace() { ' ' } else { *c }),
    );
    if end < shown.len() {
        out.push('…');
    }
    out
}
