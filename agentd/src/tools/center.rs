//! The tool center: the one place that decides which tools an agent has, turns a model's
//! tool call into something runnable (arguments parsed, repaired, validated; what it will
//! touch worked out), asks the permission policy, runs it with a timeout, and shapes the
//! result (offloading large ones). Nothing here knows about runs, events or RPC.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant};

use agent_proto::{
    Agent, AgentMode, PermissionLevel, PermissionRules, SandboxMode, ToolCallStatus, ToolInfo,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::git::{GitProbe, find_git};
use super::host::AgentHost;
use super::mcp::{CatalogTool, McpManager, Progress};
use super::offload;
use super::permission::{Decision, Policy, layered};
use super::sandbox::{ResolvedPath, Sandbox};
use super::wall::SandboxPlan;
use super::{Access, BuiltinTool, Checked, Permits, ToolContext, ToolOutput, builtin};
use crate::config::{PermissionsConfig, ToolsConfig};
use crate::process::ProcessLauncher;
use crate::profiles::{Environment, Profile, ProfileError, Profiles, PromptFrame};
use crate::provider::ToolSpec;
use crate::store::Grant;

mod access;
mod arguments;

use arguments::check_schema;
pub use arguments::{ParsedArguments, parse_arguments};

/// How long a tool gets to stop after its call was cancelled or timed out.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// Tools left out by the per-request cap that its `error` event names (the rest counted).
const LEFT_OUT_NAMED: usize = 50;

/// What one model request carries.
#[derive(Debug, Clone)]
pub struct Offer {
    pub specs: Vec<ToolSpec>,
    /// When the per-request cap left MCP tools out: the `error` event's text naming them.
    pub left_out: Option<String>,
}

/// The tools of a request, before they become specs.
struct Selection<'a> {
    builtins: Vec<&'a Entry>,
    mcp: Vec<CatalogTool>,
    left_out: Vec<CatalogTool>,
}

/// What a call runs: a builtin tool, or a tool of an MCP server.
#[derive(Debug, Clone)]
pub enum Callable {
    Builtin(Arc<dyn BuiltinTool>),
    Mcp {
        server: String,
        /// The server's name for the tool.
        tool: String,
        /// The name the model used.
        exposed: String,
        level: PermissionLevel,
    },
}

impl Callable {
    /// The name the model sees.
    pub fn name(&self) -> &str {
        match self {
            Callable::Builtin(tool) => tool.name(),
            Callable::Mcp { exposed, .. } => exposed,
        }
    }

    pub fn level(&self) -> PermissionLevel {
        match self {
            Callable::Builtin(tool) => tool.level(),
            Callable::Mcp { level, .. } => *level,
        }
    }
}

/// A call ready for the policy and for running.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub tool: Callable,
    pub args: Value,
    pub access: Access,
}

impl Prepared {
    /// The resolved paths the call touches (`None` when its access is not about paths):
    /// what a permission prompt for it binds (`Block::ToolCall::permission_paths`).
    pub fn resolved_paths(&self) -> Option<Vec<String>> {
        match &self.access {
            Access::Paths { paths, .. } => {
                Some(paths.iter().map(|p| p.path.display().to_string()).collect())
            }
            _ => None,
        }
    }

    /// Checks that the call, about to run on a client's answer, touches exactly what its
    /// permission prompt showed (`shown`, as [`Prepared::resolved_paths`] gave it then).
    /// Other accesses (a command, a host, an MCP tool) come from the arguments alone and
    /// cannot change. `Err` is the call's result for the model.
    pub fn check_prompted(&self, shown: Option<&[String]>) -> Result<(), String> {
        let Some(now) = self.resolved_paths() else {
            return Ok(());
        };
        let Some(shown) = shown else {
            return Err(
                "the permission prompt of this call did not record the paths it was about, so \
                 the answer cannot be applied; nothing was done: call the tool again"
                    .into(),
            );
        };
        if now == shown {
            return Ok(());
        }
        Err(format!(
            "{} changed after the permission prompt: it now resolves to {} (a symbolic link \
             or a moved folder took its place), so nothing was done; the answer applies only \
             to what the prompt showed. Look at what is there now and call the tool again if \
             needed",
            shown.join(", "),
            now.join(", ")
        ))
    }
}

/// The permission policy one call runs under, owned so the running tool can consult it
/// for accesses it finds on the way (`web_fetch`: a redirect to another host).
#[derive(Debug, Clone)]
pub struct CallPolicy {
    tool: String,
    rules: PermissionRules,
    blocked_commands: Vec<String>,
    grants: Vec<Grant>,
}

impl CallPolicy {
    pub fn new(
        tool: &str,
        rules: PermissionRules,
        blocked_commands: Vec<String>,
        grants: Vec<Grant>,
    ) -> CallPolicy {
        CallPolicy {
            tool: tool.to_owned(),
            rules,
            blocked_commands,
            grants,
        }
    }

    fn policy(&self) -> Policy<'_> {
        Policy {
            rules: self.rules,
            blocked_commands: &self.blocked_commands,
            grants: &self.grants,
        }
    }

    /// What the policy says about `access` for this call's tool, as if it were a new call.
    pub fn decide(&self, access: &Access) -> Decision {
        self.policy().decide(&self.tool, access)
    }

    /// Whether a command this call runs gets the network without having asked (see
    /// [`Policy::command_network`]); false for anything but a command.
    pub fn command_network(&self, access: &Access) -> bool {
        match access {
            Access::Command(command) => self.policy().command_network(command),
            _ => false,
        }
    }
}

/// The end of a call, as the model and the clients get it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub status: ToolCallStatus,
    pub content: String,
    pub is_error: bool,
    pub offload_path: Option<String>,
    pub duration_ms: u64,
}

impl Outcome {
    /// A call settled without running (invalid, denied, cancelled).
    pub fn settled(status: ToolCallStatus, content: impl Into<String>) -> Outcome {
        Outcome {
            status,
            content: content.into(),
            is_error: true,
            offload_path: None,
            duration_ms: 0,
        }
    }
}

#[derive(Debug)]
struct Entry {
    tool: Arc<dyn BuiltinTool>,
    /// The tool's schema, generated once (what a model is offered and calls are checked
    /// against).
    schema: Value,
    validator: Option<Arc<jsonschema::Validator>>,
}

/// Every tool of the daemon and the rules around them.
#[derive(Debug)]
pub struct ToolCenter {
    tools: Vec<Entry>,
    by_name: HashMap<&'static str, usize>,
    data_dir: PathBuf,
    offload_threshold: usize,
    /// The permission rules, blocked commands and profiles: replaced whole when the
    /// daemon reloads its config; a call decided before keeps what it was decided by.
    live: RwLock<Arc<LiveRules>>,
    http: reqwest::Client,
    mcp: Arc<McpManager>,
    processes: Arc<ProcessLauncher>,
    git: GitProbe,
    /// Where skills are found (the `skill` tool's, the system prompt's section's).
    skills: Arc<crate::skills::Skills>,
    /// The project instructions (`AGENTS.md`) of agent-mode agents' prompts.
    instructions: Arc<crate::instructions::Instructions>,
    /// The agent layer (`todo_write`, `task`), registered once the daemon has built it.
    host: std::sync::OnceLock<std::sync::Weak<dyn AgentHost>>,
    /// The OS sandbox of commands: the config's mode and paths, what the machine can do.
    sandbox: Arc<SandboxPlan>,
}

/// The parts of the tool center a config reload replaces.
#[derive(Debug)]
struct LiveRules {
    rules: PermissionRules,
    blocked_commands: Vec<String>,
    /// What an agent's profile offers and sets (tools, permissions).
    profiles: Arc<Profiles>,
}

impl LiveRules {
    /// See [`ToolCenter::rules_for`].
    fn rules_for(&self, agent: &Agent) -> PermissionRules {
        let profile = self.profiles.resolve(agent).ok().flatten();
        layered(
            layered(self.rules, profile.map(|p| p.permissions)),
            agent.settings.permissions,
        )
    }
}

/// What the tool center is built from besides the config's sections.
pub struct ToolSetup {
    pub mcp: Arc<McpManager>,
    pub processes: Arc<ProcessLauncher>,
    /// The `web_search` backend (`None`: the tool is not offered).
    pub web_search: Option<builtin::web_search::SearchBackend>,
    pub profiles: Arc<Profiles>,
    /// The config's and the user's skill folders.
    pub skills: Arc<crate::skills::Skills>,
    /// Where the user's own project instructions are.
    pub instructions: Arc<crate::instructions::Instructions>,
    /// The OS sandbox of commands.
    pub sandbox: SandboxPlan,
}

impl ToolCenter {
    pub fn new(
        data_dir: &Path,
        permissions: &PermissionsConfig,
        tools: &ToolsConfig,
        setup: ToolSetup,
    ) -> Result<ToolCenter, String> {
        let ToolSetup {
            mcp,
            processes,
            web_search,
            profiles,
            skills,
            instructions,
            sandbox,
        } = setup;
        crate::provider::install_tls_provider();
        let http = builtin::http_client()
            .map_err(|e| format!("cannot build the HTTP client of the tools: {e}"))?;
        let mut entries = Vec::new();
        let mut by_name = HashMap::new();
        for tool in builtin::all_with(web_search, skills.clone()) {
            let schema = tool.schema();
            let validator = jsonschema::validator_for(&schema)
                .map_err(|e| format!("tool {} has an invalid schema: {e}", tool.name()))?;
            by_name.insert(tool.name(), entries.len());
            entries.push(Entry {
                tool,
                schema,
                validator: Some(Arc::new(validator)),
            });
        }
        warn_of_unknown_tools(&profiles, &by_name);
        let git = find_git();
        if git.is_none() {
            tracing::info!(
                "git is not installed (looked for {}): system prompts say whether a workspace \
                 has changes as unknown",
                super::git::GIT_PATHS.join(", ")
            );
        }
        Ok(ToolCenter {
            git: GitProbe::new(git, processes.clone()),
            live: RwLock::new(Arc::new(LiveRules {
                rules: permissions.rules(),
                blocked_commands: permissions.blocked_commands.clone(),
                profiles,
            })),
            skills,
            instructions,
            tools: entries,
            by_name,
            data_dir: data_dir.to_owned(),
            offload_threshold: tools
                .offload_threshold_chars
                .unwrap_or(offload::DEFAULT_THRESHOLD),
            http,
            mcp,
            processes,
            host: std::sync::OnceLock::new(),
            sandbox: Arc::new(sandbox),
        })
    }

    /// The OS sandbox as this daemon has it (`initialize`).
    pub fn sandbox_info(&self) -> agent_proto::SandboxInfo {
        let support = &self.sandbox.support;
        agent_proto::SandboxInfo {
            available: support.available,
            abi: support.abi,
            mode: self.sandbox.mode,
            enforced: support.available && self.sandbox.mode != SandboxMode::Off,
            reason: support.reason.clone(),
        }
    }

    /// The sandbox mode of an agent's commands: its settings', else its profile's, else
    /// the config's. An agent whose profile is missing gets the config's (its commands are
    /// refused anyway).
    pub fn sandbox_mode_of(&self, agent: &Agent) -> SandboxMode {
        let profiles = self.profiles();
        let profile = profiles.resolve(agent).ok().flatten();
        agent
            .settings
            .sandbox
            .or_else(|| profile.and_then(|p| p.sandbox))
            .unwrap_or(self.sandbox.mode)
    }

    /// Registers the agent layer the agent tools act through (once; later calls are
    /// ignored).
    pub fn set_host(&self, host: std::sync::Weak<dyn AgentHost>) {
        let _ = self.host.set(host);
    }

    /// The MCP side (servers, their status, their tools).
    pub fn mcp(&self) -> &Arc<McpManager> {
        &self.mcp
    }

    /// The profiles agents can have, as of now.
    pub fn profiles(&self) -> Arc<Profiles> {
        self.live().profiles.clone()
    }

    fn live(&self) -> Arc<LiveRules> {
        self.live
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Takes the permission rules, blocked commands and profiles of a config read again
    /// (SIGHUP): calls decided from now on follow them.
    pub fn reload_rules(&self, permissions: &PermissionsConfig, profiles: Arc<Profiles>) {
        warn_of_unknown_tools(&profiles, &self.by_name);
        let next = LiveRules {
            rules: permissions.rules(),
            blocked_commands: permissions.blocked_commands.clone(),
            profiles,
        };
        *self.live.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(next);
    }

    /// Whether the agent's profile offers a tool (`offers` asks the profile); an agent
    /// without a profile gets every tool, one whose profile is missing none.
    fn profile_offers(&self, agent: &Agent, offers: impl FnOnce(&Profile) -> bool) -> bool {
        match self.profiles().resolve(agent) {
            Ok(profile) => profile.is_none_or(offers),
            Err(_) => false,
        }
    }

    /// Whether an agent may use an MCP tool: its mode has tools, the server is not kept
    /// for other agents (`agents`), its profile offers it, and `enabledMcpTools` (when set)
    /// names the server or `server/tool`.
    fn mcp_enabled_for(&self, agent: &Agent, tool: &CatalogTool) -> bool {
        agent.mode == AgentMode::Agent
            && (tool.agents.is_empty() || tool.agents.contains(&agent.id))
            && self.profile_offers(agent, |p| p.offers_mcp(&tool.server, &tool.def.name))
            && agent
                .settings
                .enabled_mcp_tools
                .as_ref()
                .is_none_or(|names| {
                    names.iter().any(|n| {
                        *n == tool.server || *n == format!("{}/{}", tool.server, tool.def.name)
                    })
                })
    }

    /// Whether an agent may get tools of the MCP server `spec` (as [`Self::mcp_enabled_for`]
    /// asks of each tool, for a server whose tools are not known yet).
    fn mcp_server_for(&self, agent: &Agent, spec: &agent_proto::McpServerSpec) -> bool {
        let server = spec.name.as_str();
        let names = |n: &String| n == server || n.split_once('/').is_some_and(|(s, _)| s == server);
        agent.mode == AgentMode::Agent
            && (spec.agents.is_empty() || spec.agents.contains(&agent.id))
            && self.profile_offers(agent, |p| p.offers_mcp_server(server))
            && agent
                .settings
                .enabled_mcp_tools
                .as_ref()
                .is_none_or(|list| list.iter().any(names))
    }

    /// Before a run's first request: waits (`[mcp] wait_for_tools_ms`) for the MCP servers
    /// the agent may get tools from that are still starting with no tools listed or
    /// cached, and names those still without tools then (the `toolsLeftOut` notice's
    /// text; `None`: nothing is missing). Starts lazy servers.
    pub async fn wait_for_mcp(&self, agent: &Agent) -> Option<String> {
        if agent.mode != AgentMode::Agent {
            return None;
        }
        self.mcp.ensure_started();
        let limit = self.mcp.limits().wait_for_tools;
        let missing = self
            .mcp
            .wait_for_tools(|spec| self.mcp_server_for(agent, spec), limit)
            .await;
        (!missing.is_empty()).then(|| {
            let each: Vec<String> = missing
                .iter()
                .map(|u| format!("the MCP server {:?} {}", u.server, u.why))
                .collect();
            format!(
                "tools of MCP servers are missing from this run's requests (waited {} ms, \
                 mcp.wait_for_tools_ms): {}",
                limit.as_millis(),
                each.join("; ")
            )
        })
    }

    /// Whether an agent may use `tool`: its mode has tools, its profile offers it, and its
    /// settings enable it.
    fn enabled_for(&self, agent: &Agent, tool: &str) -> bool {
        agent.mode == AgentMode::Agent
            && self.profile_offers(agent, |p| p.offers_tool(tool))
            && agent
                .settings
                .enabled_tools
                .as_ref()
                .is_none_or(|names| names.iter().any(|n| n == tool))
    }

    /// The permission rules of an agent's calls: the config file's, then its profile's,
    /// then its own settings' (a level none of them names has its default rule).
    pub fn rules_for(&self, agent: &Agent) -> PermissionRules {
        self.live().rules_for(agent)
    }

    /// Whether something the user sent for this agent (an image URL in a message) may be
    /// fetched: not when the agent's `network` rule is `deny`, nor when its profile is
    /// missing (its rules are unknown). `Err` says why not.
    pub fn may_fetch_for_user(&self, agent: &Agent) -> Result<(), String> {
        if let Err(e) = self.profiles().resolve(agent) {
            return Err(e.to_string());
        }
        match self.rules_for(agent).network {
            Some(agent_proto::PermissionRule::Deny) => {
                Err("the agent's network permission is deny".into())
            }
            _ => Ok(()),
        }
    }

    /// The HTTP client of the tools (no redirects followed, bounded times).
    pub fn http(&self) -> &reqwest::Client {
        &self.http
    }

    /// What frames the agent's system prompt in a request made now: its profile, the
    /// project instructions (an agent-mode agent's: `crate::instructions`), its skills
    /// (when it is offered the `skill` tool) and the environment (today's date, the OS,
    /// its workspace and that workspace's git state). `Err` for an agent whose profile the
    /// daemon does not have.
    pub async fn frame(&self, agent: &Agent) -> Result<PromptFrame, ProfileError> {
        let profile = self.profiles().resolve(agent)?.cloned();
        let git = match &agent.workspace {
            Some(workspace) => self.git.probe(Path::new(workspace)).await,
            None => crate::profiles::Git::NotARepository,
        };
        let offers_skill = (self.select(Some(agent)).builtins.iter())
            .any(|e| e.tool.name() == builtin::skill::NAME);
        let skills = match offers_skill {
            true => self.skills(agent).await.section(),
            false => None,
        };
        let instructions = match (agent.mode, &agent.workspace) {
            (agent_proto::AgentMode::Agent, Some(workspace)) => {
                self.instructions.section(PathBuf::from(workspace)).await
            }
            _ => None,
        };
        Ok(PromptFrame {
            environment: Environment::now(agent.workspace.clone(), git, agent.profile.clone()),
            profile,
            instructions,
            skills,
        })
    }

    /// The skills of an agent (`listSkills`): its workspace's, the config's, the user's.
    pub async fn skills(&self, agent: &Agent) -> crate::skills::Catalog {
        self.skills.catalog(self.workspace_of(agent)).await
    }

    /// The tools a request carries for `agent` (for any agent: every tool), in order:
    /// builtins less those an MCP tool of the same name replaces, then MCP tools up to
    /// the per-request cap; and the MCP tools the cap left out.
    fn select(&self, agent: Option<&Agent>) -> Selection<'_> {
        let catalog = self.mcp.catalog();
        let mut mcp: Vec<CatalogTool> = catalog
            .tools
            .iter()
            .filter(|t| agent.is_none_or(|a| self.mcp_enabled_for(a, t)))
            .cloned()
            .collect();
        let builtins: Vec<&Entry> = self
            .tools
            .iter()
            .filter(|e| e.tool.available())
            .filter(|e| agent.is_none_or(|a| self.enabled_for(a, e.tool.name())))
            .filter(|e| !mcp.iter().any(|t| t.exposed == e.tool.name()))
            .collect();
        let room = self
            .mcp
            .limits()
            .max_tools_per_request
            .saturating_sub(builtins.len());
        let left_out = mcp.split_off(room.min(mcp.len()));
        Selection {
            builtins,
            mcp,
            left_out,
        }
    }

    /// What an agent's model requests carry: the tools, and what the cap left out. Starts
    /// lazy MCP servers.
    pub fn offer(&self, agent: &Agent) -> Offer {
        if agent.mode == AgentMode::Agent {
            self.mcp.ensure_started();
        }
        let selection = self.select(Some(agent));
        let builtins = selection.builtins.iter().map(|e| ToolSpec {
            name: e.tool.name().to_owned(),
            description: e.tool.description().to_owned(),
            parameters: e.schema.clone(),
        });
        let mcp = selection.mcp.iter().map(|t| ToolSpec {
            name: t.exposed.clone(),
            description: t.def.description.clone(),
            parameters: t.def.schema.clone(),
        });
        let left_out = (!selection.left_out.is_empty()).then(|| {
            let total = selection.builtins.len() + selection.mcp.len() + selection.left_out.len();
            let names: Vec<String> = selection
                .left_out
                .iter()
                .take(LEFT_OUT_NAMED)
                .map(|t| format!("{}/{}", t.server, t.def.name))
                .collect();
            let more = selection.left_out.len().saturating_sub(LEFT_OUT_NAMED);
            format!(
                "this agent has {total} tools and a request carries at most {} \
                 (mcp.max_tools_per_request); left out: {}{}. Limit the agent's MCP tools \
                 (settings.enabledMcpTools) to choose which ones it gets",
                self.mcp.limits().max_tools_per_request,
                names.join(", "),
                if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                }
            )
        });
        Offer {
            specs: builtins.chain(mcp).collect(),
            left_out,
        }
    }

    /// The tools offered to an agent's model (see [`ToolCenter::offer`]).
    pub fn specs_for(&self, agent: &Agent) -> Vec<ToolSpec> {
        self.offer(agent).specs
    }

    /// A tool's name as the metrics count it, from a bounded set: a builtin's own name,
    /// `mcp` for every MCP tool (one of the same name replaces the builtin), `unknown` for
    /// a name no tool has (the model made it up).
    pub fn metric_name<'n>(&self, name: &'n str) -> &'n str {
        if self.mcp.catalog().get(name).is_some() {
            "mcp"
        } else if self.by_name.contains_key(name) {
            name
        } else {
            "unknown"
        }
    }

    /// The permission level of a tool (an MCP tool's when one has the name).
    pub fn level_of(&self, name: &str) -> Option<PermissionLevel> {
        if let Some(tool) = self.mcp.catalog().get(name) {
            return Some(tool.def.level);
        }
        self.by_name.get(name).map(|&i| self.tools[i].tool.level())
    }

    /// Every tool, with `enabled`: offered to the agent's model (without an agent: to a
    /// model that has every tool). A builtin that an MCP tool of the same name replaces,
    /// and an MCP tool the per-request cap leaves out, show as not enabled.
    pub fn list(&self, agent: Option<&Agent>) -> Vec<ToolInfo> {
        let catalog = self.mcp.catalog();
        let selection = self.select(agent);
        let offered: HashSet<&str> = selection.mcp.iter().map(|t| t.exposed.as_str()).collect();
        let builtins = self.tools.iter().map(|e| ToolInfo {
            name: e.tool.name().to_owned(),
            description: e.tool.description().to_owned(),
            schema: e.schema.clone(),
            source: "builtin".into(),
            permission_level: e.tool.level(),
            enabled: selection
                .builtins
                .iter()
                .any(|b| b.tool.name() == e.tool.name()),
            original_name: None,
            sandbox: e.tool.runs_commands().then(|| match agent {
                Some(agent) => self.sandbox_mode_of(agent),
                None => self.sandbox.mode,
            }),
        });
        let mcp = catalog.tools.iter().map(|t| ToolInfo {
            name: t.exposed.clone(),
            description: t.def.description.clone(),
            schema: t.def.schema.clone(),
            source: format!("mcp:{}", t.server),
            permission_level: t.def.level,
            enabled: offered.contains(t.exposed.as_str()),
            original_name: Some(t.def.name.clone()),
            sandbox: None,
        });
        builtins.chain(mcp).collect()
    }

    /// The folder an agent gets when it names no workspace.
    pub fn default_workspace(&self, agent_id: &str) -> PathBuf {
        self.data_dir.join("workspaces").join(agent_id)
    }

    /// The agent's workspace: the one it was created with, or its own folder under the
    /// data dir.
    pub fn workspace_of(&self, agent: &Agent) -> PathBuf {
        agent
            .workspace
            .as_ref()
            .map_or_else(|| self.default_workspace(&agent.id), PathBuf::from)
    }

    /// Where the agent's offloads go.
    pub fn offload_dir(&self, agent_id: &str) -> PathBuf {
        super::offload_dir(&self.data_dir, agent_id)
    }

    /// The agent's undo snapshots (kept in its folder, removed with it). `Err`: its
    /// workspace is not usable (a default one not created yet has no changes to undo).
    pub fn checkpoints(&self, agent: &Agent) -> Result<super::checkpoint::Checkpoints, String> {
        let workspace = self.workspace_of(agent);
        let sandbox = Sandbox::new(&workspace, &self.data_dir, &agent.id)
            .map_err(|e| format!("the workspace {} is not usable: {e}", workspace.display()))?;
        Ok(super::checkpoint::Checkpoints::new(&sandbox))
    }

    /// Removes what the daemon keeps for a deleted agent: its folder (offloads, images),
    /// its commands' temp folder and the workspace the daemon created for it. A workspace
    /// the user named is theirs and stays.
    pub fn remove_agent_files(&self, agent_id: &str) {
        for dir in [
            self.offload_dir(agent_id),
            super::wall::tmpdir(&self.data_dir, agent_id),
            self.default_workspace(agent_id),
        ] {
            match std::fs::remove_dir_all(&dir) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => tracing::warn!("cannot remove {}: {e}", dir.display()),
            }
        }
    }

    /// What a run's tool calls run with. Creates the default workspace if needed.
    pub fn context(&self, agent: &Agent, cancel: CancellationToken) -> Result<ToolContext, String> {
        let workspace = self.workspace_of(agent);
        if agent.workspace.is_none() {
            std::fs::create_dir_all(&workspace)
                .map_err(|e| format!("cannot create the workspace {}: {e}", workspace.display()))?;
        }
        let sandbox = Sandbox::new(&workspace, &self.data_dir, &agent.id)
            .map_err(|e| format!("the workspace {} is not usable: {e}", workspace.display()))?;
        Ok(ToolContext {
            agent_id: agent.id.clone(),
            sandbox,
            cancel,
            http: self.http.clone(),
            checked: Checked::default(),
            processes: self.processes.clone(),
            host: self.host.get().and_then(std::sync::Weak::upgrade),
            tool_call_id: String::new(),
            progress: None,
            wall: self.sandbox.wall(
                self.sandbox_mode_of(agent),
                super::wall::tmpdir(&self.data_dir, &agent.id),
            ),
        })
    }

    /// Checks a call: the tool exists and is enabled, the arguments fit its schema, and
    /// what it will touch can be worked out (a shell command's reading on the blocking
    /// pool, off the runtime's workers: a long line costs milliseconds). `Err` is the
    /// result text for the model.
    pub async fn prepare(
        &self,
        agent: &Agent,
        name: &str,
        args: &Value,
        ctx: &ToolContext,
    ) -> Result<Prepared, String> {
        if let Some(tool) = self
            .mcp
            .catalog()
            .get(name)
            .filter(|t| self.mcp_enabled_for(agent, t))
        {
            check_schema(&tool.validator, args, name, &tool.def.schema)?;
            return Ok(Prepared {
                tool: Callable::Mcp {
                    server: tool.server.clone(),
                    tool: tool.def.name.clone(),
                    exposed: tool.exposed.clone(),
                    level: tool.def.level,
                },
                args: args.clone(),
                access: Access::Mcp {
                    server: tool.server.clone(),
                    tool: tool.def.name.clone(),
                    level: tool.def.level,
                    auto_approved: tool.auto_approved,
                },
            });
        }
        let entry = self
            .by_name
            .get(name)
            .map(|&i| &self.tools[i])
            .filter(|e| self.enabled_for(agent, e.tool.name()));
        let Some(entry) = entry else {
            let available: Vec<String> =
                self.specs_for(agent).into_iter().map(|s| s.name).collect();
            return Err(format!(
                "unknown tool {name:?}; the tools available are: {}",
                available.join(", ")
            ));
        };
        if let Some(validator) = &entry.validator {
            check_schema(validator, args, name, &entry.schema)?;
        }
        let access = if entry.tool.runs_commands() {
            let (tool, args, ctx) = (entry.tool.clone(), args.clone(), ctx.clone());
            tokio::task::spawn_blocking(move || tool.access(&args, &ctx))
                .await
                .map_err(|e| format!("the command could not be checked: {e}"))??
        } else {
            entry.tool.access(args, ctx)?
        };
        Ok(Prepared {
            tool: Callable::Builtin(entry.tool.clone()),
            args: args.clone(),
            access,
        })
    }

    /// What the policy says about a prepared call for this agent.
    pub fn decide(&self, agent: &Agent, prepared: &Prepared, grants: &[Grant]) -> Decision {
        self.decide_access(agent, prepared.tool.name(), &prepared.access, grants)
    }

    /// The call as its permission prompt showed it: its paths replaced by `shown` (the
    /// prompt's, see [`Prepared::resolved_paths`]), so an answer is applied to (and a
    /// remembered grant keyed by) what the client saw, not what the arguments resolve to
    /// now. `None` when the call is about paths and the prompt recorded none.
    pub fn as_prompted(
        &self,
        prepared: &Prepared,
        shown: Option<&[String]>,
        ctx: &ToolContext,
    ) -> Option<Prepared> {
        let Access::Paths { level, .. } = &prepared.access else {
            return Some(prepared.clone());
        };
        let paths = shown?
            .iter()
            .map(|p| {
                let path = PathBuf::from(p);
                ResolvedPath {
                    zone: ctx.sandbox.zone_of(&path),
                    path,
                }
            })
            .collect();
        Some(Prepared {
            access: Access::Paths {
                level: *level,
                paths,
            },
            ..prepared.clone()
        })
    }

    /// Runs a prepared call to its end: timeout, cancellation (the tool stops what it
    /// started), result shaping and offload. MCP progress goes to `progress`. The tool
    /// operates on the paths the policy checked, and checks what it finds on the way
    /// (redirects) against the agent's policy with the grants of `permits`. A command gets
    /// the network when the policy gives it or the approval of `permits` (a client's
    /// answer) does, and runs outside the sandbox only when that approval says so.
    pub async fn execute(
        &self,
        agent: &Agent,
        prepared: &Prepared,
        ctx: &ToolContext,
        permits: Permits,
        tool_call_id: &str,
        progress: Option<tokio::sync::mpsc::Sender<Progress>>,
    ) -> Outcome {
        let started = Instant::now();
        let mut ctx = ctx.clone();
        tool_call_id.clone_into(&mut ctx.tool_call_id);
        if matches!(prepared.tool, Callable::Builtin(_)) {
            ctx.progress.clone_from(&progress);
        }
        let Permits { grants, approval } = permits;
        // One reading of the rules: a reload between two would mix two configs.
        let live = self.live();
        let policy = Arc::new(CallPolicy::new(
            prepared.tool.name(),
            live.rules_for(agent),
            live.blocked_commands.clone(),
            grants,
        ));
        ctx.checked = Checked {
            paths: match &prepared.access {
                Access::Paths { paths, .. } => paths.clone(),
                _ => Vec::new(),
            },
            network: approval.network || policy.command_network(&prepared.access),
            outside_sandbox: approval.outside_sandbox,
            policy: Some(policy),
        };
        let ctx = &ctx;
        let output = match &prepared.tool {
            Callable::Builtin(tool) => {
                let limit = tool.default_timeout();
                let run = tool.run(prepared.args.clone(), ctx);
                tokio::pin!(run);
                tokio::select! {
                    output = &mut run => output,
                    _ = tokio::time::sleep(limit) => {
                        ctx.cancel.cancel();
                        let _ = tokio::time::timeout(STOP_GRACE, &mut run).await;
                        ToolOutput::error(format!("{} timed out after {} s", tool.name(), limit.as_secs()))
                    }
                }
            }
            Callable::Mcp { server, tool, .. } => {
                let saved = ctx.sandbox.own_offloads().to_owned();
                match self
                    .mcp
                    .call(
                        server,
                        tool,
                        prepared.args.clone(),
                        &ctx.cancel,
                        progress,
                        &saved,
                    )
                    .await
                {
                    Ok((content, is_error)) => ToolOutput { content, is_error },
                    Err(message) => ToolOutput::error(message),
                }
            }
        };
        let offloadable = match &prepared.tool {
            Callable::Builtin(tool) => tool.offloadable(),
            Callable::Mcp { .. } => true,
        };
        let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        let status = if ctx.cancel.is_cancelled() && output.is_error {
            ToolCallStatus::Cancelled
        } else if output.is_error {
            ToolCallStatus::Error
        } else {
            ToolCallStatus::Success
        };
        let mut outcome = Outcome {
            status,
            content: output.content,
            is_error: output.is_error,
            offload_path: None,
            duration_ms,
        };
        if offloadable && outcome.content.chars().count() > self.offload_threshold {
            let dir = ctx.sandbox.own_offloads().to_owned();
            match offload::write(&dir, tool_call_id, &outcome.content) {
                Ok(path) => {
                    outcome.content = offload::stub(&outcome.content, &path);
                    outcome.offload_path = Some(path.display().to_string());
                }
                Err(e) => tracing::warn!("cannot offload a tool result to {}: {e}", dir.display()),
            }
        }
        outcome
    }
}

#[cfg(test)]
mod tests;

/// Logs the config's profiles that name tools this daemon does not have.
fn warn_of_unknown_tools(profiles: &Profiles, tools: &HashMap<&'static str, usize>) {
    for profile in profiles.all() {
        let unknown: Vec<&str> = profile
            .tools
            .iter()
            .filter(|t| !tools.contains_key(t.as_str()))
            .map(String::as_str)
            .collect();
        if profile.source == agent_proto::ProfileSource::Config && !unknown.is_empty() {
            tracing::warn!(
                profile = profile.name,
                "the profile names tools this daemon does not have, offered to no model: {}",
                unknown.join(", ")
            );
        }
    }
}
