//! Moving an agent's history: `forkAgent` (a copy on this daemon), `exportAgent` (markdown
//! for people, JSON for import) and `importAgent`.
//!
//! Fork and import share one path, [`AgentService::create_copy`]: the pure
//! [`remap::plan_copy`] gives the agent and every message new ids, remaps the links between
//! messages, closes what no run finished, and rewrites the paths of the agent's files
//! (offloaded tool results, images, documents) into the new agent's session folder; then the files are
//! written, the agent and its history stored in one transaction, and `agentCreated`
//! emitted. A copy never changes its source, and never reads a file outside the source
//! agent's own session folder.

mod markdown;
mod remap;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashSet};
use std::path::{Component, Path, PathBuf};

use agent_proto::{
    Agent, AgentExport, AgentMode, AgentSettings, Block, EXPORT_FORMAT, EXPORT_VERSION,
    ExportFormat, ExportResult, ExportedAgent, ExportedImage, ExportedMessage, ExportedSummary,
    MAX_FRAME_BYTES, MAX_IMPORT_MESSAGES, Message, PlanItem, ToolCallBlock, ToolCallResult,
};
use base64::Engine as _;
use serde_json::{Map, Value};

use super::AgentService;
use crate::session::{DEFAULT_TITLE, SessionError};
use crate::store::{AgentCopy, NewAgent, StoredMessage, Summary, now_ms};
use remap::{CopySource, FileKind, PlannedFile};

/// Where an imported agent works: `given` (an existing absolute folder), else the exported
/// folder when the caller keeps it (it must exist here), else a folder of its own (agents
/// with tools) or none (chat).
fn import_workspace(
    mode: AgentMode,
    exported: Option<&str>,
    given: Option<String>,
    keep: bool,
    is_dir: impl Fn(&Path) -> bool,
) -> Result<WorkspaceChoice, SessionError> {
    let usable = |w: &str| Path::new(w).is_absolute() && is_dir(Path::new(w));
    match (given, keep, exported) {
        (Some(_), true, _) => Err(SessionError::InvalidParams(
            "give either workspace or keepWorkspace, not both".into(),
        )),
        (Some(w), false, _) if usable(&w) => Ok(WorkspaceChoice::Shared(w)),
        (Some(w), false, _) => Err(SessionError::InvalidParams(format!(
            "workspace {w:?} must be an absolute path of an existing directory"
        ))),
        (None, true, Some(w)) if usable(w) => Ok(WorkspaceChoice::Shared(w.to_owned())),
        (None, true, Some(w)) => Err(SessionError::InvalidParams(format!(
            "keepWorkspace: the exported workspace {w:?} is not an existing directory here; \
             give workspace, or leave both out for a folder of the agent's own"
        ))),
        (None, _, _) if mode == AgentMode::Agent => Ok(WorkspaceChoice::Own),
        (None, _, _) => Ok(WorkspaceChoice::None),
    }
}

/// Where a copy's workspace comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
enum WorkspaceChoice {
    /// A new folder of its own under the data dir (as `createAgent` makes).
    Own,
    /// A folder the user chose, shared with the source.
    Shared(String),
    None,
}

/// The settings of a new agent made by a copy.
#[derive(Debug, Clone)]
struct NewCopy {
    title: String,
    mode: AgentMode,
    provider: String,
    model: String,
    system_prompt: Option<String>,
    profile: Option<String>,
    settings: AgentSettings,
    workspace: WorkspaceChoice,
    parent_agent_id: Option<String>,
    fork_message_id: Option<String>,
    /// The plan the copy starts with.
    plan: Vec<PlanItem>,
}

/// Where the contents of the copied files come from.
#[derive(Debug)]
enum FileContents {
    /// A fork: the source agent's files on this machine; only those inside its session
    /// folder are read.
    Disk { source_dir: PathBuf },
    /// An import: the texts (by tool call id) and the bytes of images and documents (by
    /// path) the export carries.
    Carried {
        offloads: BTreeMap<String, String>,
        files: BTreeMap<String, Vec<u8>>,
    },
}

impl AgentService {
    /// A new agent with the source's settings and its history up to and including
    /// `message_id` (all of it when `None`).
    pub async fn fork_agent(
        &self,
        agent_id: &str,
        message_id: Option<&str>,
    ) -> Result<Agent, SessionError> {
        let snapshot = self
            .store
            .agent_snapshot(agent_id)
            .await?
            .ok_or_else(|| SessionError::AgentNotFound(agent_id.to_owned()))?;
        let source = snapshot.agent;
        if source.mode == AgentMode::Acp {
            // The external agent's own session (what it remembers) cannot be copied.
            return Err(SessionError::NotSupported(
                "forking an agent of mode \"acp\" (the external agent's session cannot be copied)"
                    .into(),
            ));
        }
        let mut messages = snapshot.messages;
        if let Some(id) = message_id {
            let at = messages
                .iter()
                .position(|m| m.message.id == id)
                .ok_or_else(|| SessionError::MessageNotFound(id.to_owned()))?;
            messages.truncate(at + 1);
        }
        let summaries = snapshot.summaries;
        let workspace = match &source.workspace {
            Some(w) if Path::new(w) != self.tools.default_workspace(&source.id) => {
                WorkspaceChoice::Shared(w.clone())
            }
            Some(_) => WorkspaceChoice::Own,
            None if source.mode == AgentMode::Agent => WorkspaceChoice::Own,
            None => WorkspaceChoice::None,
        };
        let copy = NewCopy {
            title: format!("{} (fork)", source.title),
            mode: source.mode,
            provider: source.provider,
            model: source.model,
            system_prompt: source.system_prompt,
            profile: source.profile,
            settings: source.settings,
            workspace,
            parent_agent_id: Some(source.id.clone()),
            fork_message_id: messages.last().map(|m| m.message.id.clone()),
            plan: snapshot.plan,
        };
        let contents = FileContents::Disk {
            source_dir: self.tools.offload_dir(&source.id),
        };
        let source = CopySource {
            messages,
            summaries,
            context_edge: source.context_edge,
        };
        self.create_copy(copy, source, contents).await
    }

    /// The agent as a markdown transcript or as a JSON export.
    pub async fn export_agent(
        &self,
        agent_id: &str,
        format: ExportFormat,
    ) -> Result<ExportResult, SessionError> {
        let snapshot = self
            .store
            .agent_snapshot(agent_id)
            .await?
            .ok_or_else(|| SessionError::AgentNotFound(agent_id.to_owned()))?;
        let (agent, history, summaries) = (snapshot.agent, snapshot.messages, snapshot.summaries);
        let now = now_ms();
        let content = match format {
            ExportFormat::Markdown => {
                let messages: Vec<Message> = history.into_iter().map(|m| m.message).collect();
                markdown::render(&agent, &messages, &summaries, now)
            }
            ExportFormat::Json => {
                let mut export = self.json_export(agent, history, summaries, now).await?;
                export.plan = snapshot.plan;
                serde_json::to_string(&export)
                    .map_err(|e| SessionError::Internal(format!("cannot write the export: {e}")))?
            }
        };
        // The answer carries the content as a JSON string: it must fit in one frame.
        let size = serde_json::to_string(&content).map_or(usize::MAX, |s| s.len());
        if size > MAX_FRAME_BYTES - 1024 {
            return Err(SessionError::TooLarge(format!(
                "the export is {size} bytes, over the {} MiB frame limit (large images and offloaded results count)",
                MAX_FRAME_BYTES / (1024 * 1024)
            )));
        }
        Ok(ExportResult { format, content })
    }

    /// A new agent from a JSON export. What the export says about where the agent works and
    /// what it may do without asking is not trusted: its permission rules are dropped (the
    /// daemon's apply) and its workspace is used only when the caller asks for it
    /// (`keep_workspace`) and it exists here; `workspace` names another.
    pub async fn import_agent(
        &self,
        data: Value,
        workspace: Option<String>,
        keep_workspace: bool,
    ) -> Result<Agent, SessionError> {
        let export = parse_export(data)?;
        let AgentExport {
            mut agent,
            messages,
            summaries,
            offloads,
            images,
            documents,
            plan,
            ..
        } = export;
        if agent.mode == AgentMode::Acp {
            return Err(SessionError::NotSupported(
                "mode \"acp\" (agents driven over the Agent Client Protocol)".into(),
            ));
        }
        let workspace = import_workspace(
            agent.mode,
            agent.workspace.as_deref(),
            workspace,
            keep_workspace,
            |p| p.is_dir(),
        )?;
        agent.settings.permissions = None;
        // A profile carries permission rules too: the export does not choose them either.
        agent.profile = None;
        // Nor does it bring commands to run.
        agent.settings.hooks = None;
        let mut decoded = BTreeMap::new();
        let carried = images
            .into_iter()
            .map(|f| ("images", f))
            .chain(documents.into_iter().map(|f| ("documents", f)));
        for (map, (path, file)) in carried {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(file.data.as_bytes())
                .map_err(|e| {
                    SessionError::InvalidParams(format!(
                        "data.{map}[{path:?}].data is not base64: {e}"
                    ))
                })?;
            decoded.insert(path, bytes);
        }
        let title = agent.title.trim();
        let copy = NewCopy {
            title: if title.is_empty() {
                DEFAULT_TITLE.to_owned()
            } else {
                title.to_owned()
            },
            mode: agent.mode,
            provider: agent.provider,
            model: agent.model,
            system_prompt: agent.system_prompt,
            profile: agent.profile,
            settings: agent.settings,
            workspace,
            // Ids of the exporting daemon mean nothing here.
            parent_agent_id: None,
            fork_message_id: None,
            plan,
        };
        let source = CopySource {
            messages: messages.into_iter().map(stored_of).collect(),
            summaries: summaries
                .into_iter()
                .map(|s| Summary {
                    agent_id: String::new(),
                    through_message_id: s.through_message_id,
                    text: s.text,
                    summarized_messages: s.summarized_messages,
                    before_tokens: s.before_tokens,
                    after_tokens: s.after_tokens,
                    created_at: s.created_at,
                })
                .collect(),
            context_edge: agent.context_edge,
        };
        let contents = FileContents::Carried {
            offloads,
            files: decoded,
        };
        self.create_copy(copy, source, contents).await
    }

    /// Creates a new agent holding a copy of `source`: the one path of fork and import.
    async fn create_copy(
        &self,
        copy: NewCopy,
        source: CopySource,
        contents: FileContents,
    ) -> Result<Agent, SessionError> {
        let id = uuid::Uuid::now_v7().to_string();
        let session_dir = self.tools.offload_dir(&id);
        let plan = remap::plan_copy(source, &id, &session_dir);
        let own_workspace = copy.workspace == WorkspaceChoice::Own;
        let workspace = match copy.workspace {
            WorkspaceChoice::Own => Some(self.create_default_workspace(&id)?),
            WorkspaceChoice::Shared(w) => Some(w),
            WorkspaceChoice::None => None,
        };
        let undo = |manager: &AgentService| {
            manager.tools.remove_agent_files(&id);
            if own_workspace {
                let _ = std::fs::remove_dir(manager.tools.default_workspace(&id));
            }
        };
        let files = plan.files.clone();
        let written = tokio::task::spawn_blocking(move || write_files(&files, &contents))
            .await
            .map_err(|e| SessionError::Internal(format!("the file copy failed: {e}")))
            .and_then(|r| {
                r.map_err(|e| {
                    SessionError::Internal(format!(
                        "cannot write the copy's files to {}: {e}",
                        session_dir.display()
                    ))
                })
            });
        if let Err(e) = written {
            undo(self);
            return Err(e);
        }
        let new = NewAgent {
            id: id.clone(),
            title: copy.title,
            mode: copy.mode,
            provider: copy.provider,
            model: copy.model,
            system_prompt: copy.system_prompt,
            workspace,
            profile: copy.profile,
            settings: copy.settings,
            acp: None,
            created_at: now_ms(),
        };
        let stored = self
            .store
            .insert_agent_copy(&AgentCopy {
                agent: &new,
                parent_agent_id: copy.parent_agent_id,
                fork_message_id: copy.fork_message_id,
                context_edge: plan.context_edge,
                messages: &plan.messages,
                summaries: &plan.summaries,
                plan: &copy.plan,
            })
            .await;
        let agent = match stored {
            Ok(agent) => self.sessions.with_status(agent),
            Err(e) => {
                undo(self);
                return Err(e.into());
            }
        };
        self.announce_created(agent).await
    }

    /// The JSON export document, with the contents of the agent's files.
    async fn json_export(
        &self,
        agent: Agent,
        history: Vec<StoredMessage>,
        summaries: Vec<Summary>,
        now: i64,
    ) -> Result<AgentExport, SessionError> {
        let own_dir = self.tools.offload_dir(&agent.id);
        let Carried {
            offloads,
            images,
            documents,
        } = {
            let blocks: Vec<Block> = history
                .iter()
                .flat_map(|m| m.message.blocks.iter().cloned())
                .collect();
            tokio::task::spawn_blocking(move || read_files(&blocks, &own_dir))
                .await
                .map_err(|e| SessionError::Internal(format!("reading the files failed: {e}")))?
        };
        let default_workspace = self.tools.default_workspace(&agent.id);
        let exported_agent = ExportedAgent {
            workspace: agent
                .workspace
                .filter(|w| Path::new(w) != default_workspace),
            id: Some(agent.id),
            title: agent.title,
            mode: agent.mode,
            provider: agent.provider,
            model: agent.model,
            system_prompt: agent.system_prompt,
            profile: agent.profile,
            settings: agent.settings,
            pinned: agent.pinned,
            archived: agent.archived,
            context_edge: agent.context_edge,
            parent_agent_id: agent.parent_agent_id,
            fork_message_id: agent.fork_message_id,
            created_at: agent.created_at,
            updated_at: agent.updated_at,
        };
        Ok(AgentExport {
            format: EXPORT_FORMAT.to_owned(),
            version: EXPORT_VERSION,
            exported_at: now,
            agent: exported_agent,
            messages: history
                .into_iter()
                .map(|s| ExportedMessage {
                    id: s.message.id,
                    parent_id: s.parent_id,
                    role: s.message.role,
                    blocks: s.message.blocks,
                    status: s.message.status,
                    created_at: s.message.created_at,
                    updated_at: s.message.updated_at,
                    usage: s.message.usage,
                    variant_of: s.message.variant_of,
                    superseded: s.message.superseded,
                })
                .collect(),
            summaries: summaries
                .into_iter()
                .map(|s| ExportedSummary {
                    through_message_id: s.through_message_id,
                    text: s.text,
                    summarized_messages: s.summarized_messages,
                    before_tokens: s.before_tokens,
                    after_tokens: s.after_tokens,
                    created_at: s.created_at,
                })
                .collect(),
            offloads,
            images,
            documents,
            plan: Vec::new(),
        })
    }
}

fn stored_of(m: ExportedMessage) -> StoredMessage {
    StoredMessage {
        message: Message {
            id: m.id,
            agent_id: String::new(),
            role: m.role,
            blocks: m.blocks,
            status: m.status,
            created_at: m.created_at,
            updated_at: m.updated_at,
            usage: m.usage,
            variant_of: m.variant_of,
            superseded: m.superseded,
            turn: None,
            structured_output: None,
        },
        parent_id: m.parent_id,
    }
}

/// Whether `path` is a plain absolute path inside `dir` (no `..` to climb out).
fn is_inside(path: &Path, dir: &Path) -> bool {
    path.is_absolute()
        && path.starts_with(dir)
        && !path.components().any(|c| matches!(c, Component::ParentDir))
}

/// Writes the planned files; a file whose content is missing (deleted in the source, or
/// not carried by the export) is skipped: the copy is as complete as its source.
fn write_files(files: &[PlannedFile], contents: &FileContents) -> std::io::Result<()> {
    for file in files {
        if let Some(dir) = file.to.parent() {
            std::fs::create_dir_all(dir)?;
        }
        match contents {
            FileContents::Disk { source_dir } => {
                let from = Path::new(&file.from);
                if !is_inside(from, source_dir) {
                    tracing::warn!(
                        "not copying {}: it is outside the source agent's folder",
                        file.from
                    );
                    continue;
                }
                match std::fs::copy(from, &file.to) {
                    Ok(_) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        tracing::warn!("not copying {}: it no longer exists", file.from);
                    }
                    Err(e) => return Err(e),
                }
            }
            FileContents::Carried { offloads, files } => {
                let data = match &file.kind {
                    FileKind::Offload { tool_call_id } => {
                        offloads.get(tool_call_id).map(String::as_bytes)
                    }
                    FileKind::Image | FileKind::Document => {
                        files.get(&file.from).map(Vec::as_slice)
                    }
                };
                match data {
                    Some(data) => std::fs::write(&file.to, data)?,
                    None => tracing::warn!("the export carries no content for {}", file.from),
                }
            }
        }
    }
    Ok(())
}

/// The files an export carries.
struct Carried {
    /// Full texts of offloaded results, by tool call id.
    offloads: BTreeMap<String, String>,
    /// Images and documents, by path.
    images: BTreeMap<String, ExportedImage>,
    documents: BTreeMap<String, ExportedImage>,
}

/// The full texts of the offloads (by tool call id), the images and the documents (by
/// path) the blocks refer to, read from the agent's own folder only.
fn read_files(blocks: &[Block], own_dir: &Path) -> Carried {
    let mut offloads = BTreeMap::new();
    let mut images = BTreeMap::new();
    let mut documents = BTreeMap::new();
    let encoded = |mime_type: &str, bytes: Vec<u8>| ExportedImage {
        mime_type: mime_type.to_owned(),
        data: base64::engine::general_purpose::STANDARD.encode(bytes),
    };
    let read = |path: &str| -> Option<Vec<u8>> {
        if !is_inside(Path::new(path), own_dir) {
            tracing::warn!("not exporting {path}: it is outside the agent's folder");
            return None;
        }
        std::fs::read(path)
            .inspect_err(|e| tracing::warn!("not exporting {path}: {e}"))
            .ok()
    };
    for block in blocks {
        match block {
            Block::ToolCall(ToolCallBlock {
                tool_call_id,
                result:
                    Some(ToolCallResult {
                        offload_path: Some(path),
                        ..
                    }),
                ..
            }) if !offloads.contains_key(tool_call_id) => {
                if let Some(bytes) = read(path) {
                    offloads.insert(
                        tool_call_id.clone(),
                        String::from_utf8_lossy(&bytes).into_owned(),
                    );
                }
            }
            Block::Image { mime_type, path } if !images.contains_key(path) => {
                if let Some(bytes) = read(path) {
                    images.insert(path.clone(), encoded(mime_type, bytes));
                }
            }
            Block::Document {
                mime_type, path, ..
            } if !documents.contains_key(path) => {
                if let Some(bytes) = read(path) {
                    documents.insert(path.clone(), encoded(mime_type, bytes));
                }
            }
            _ => {}
        }
    }
    Carried {
        offloads,
        images,
        documents,
    }
}

/// Reads and checks an export, naming the field that is wrong.
fn parse_export(data: Value) -> Result<AgentExport, SessionError> {
    let invalid = |m: String| SessionError::InvalidParams(m);
    let data = match data {
        Value::String(text) => serde_json::from_str::<Value>(&text)
            .map_err(|e| invalid(format!("data is a string but not JSON text: {e}")))?,
        other => other,
    };
    let Value::Object(mut obj) = data else {
        return Err(invalid(
            "data must be an agentd export: the object exportAgent returns with format \"json\" (or its content string)".into(),
        ));
    };
    match obj.get("format") {
        Some(Value::String(f)) if f == EXPORT_FORMAT => {}
        Some(other) => {
            return Err(invalid(format!(
                "data.format is {other}; an agentd export has \"{EXPORT_FORMAT}\""
            )));
        }
        None => {
            return Err(invalid(format!(
                "data.format is missing; an agentd export has \"{EXPORT_FORMAT}\""
            )));
        }
    }
    match obj.get("version") {
        Some(v) if v.as_u64() == Some(u64::from(EXPORT_VERSION)) => {}
        Some(v) => {
            return Err(invalid(format!(
                "data.version {v} is not supported: this daemon reads version {EXPORT_VERSION}"
            )));
        }
        None => return Err(invalid("data.version is missing".into())),
    }
    let agent: ExportedAgent =
        field(&mut obj, "agent")?.ok_or_else(|| invalid("data.agent is missing".into()))?;
    if agent.provider.trim().is_empty() {
        return Err(invalid("data.agent.provider is empty".into()));
    }
    if agent.model.trim().is_empty() {
        return Err(invalid("data.agent.model is empty".into()));
    }
    let messages = match obj.remove("messages") {
        Some(Value::Array(items)) => items,
        Some(_) => return Err(invalid("data.messages must be an array".into())),
        None => return Err(invalid("data.messages is missing".into())),
    };
    if messages.len() > MAX_IMPORT_MESSAGES {
        return Err(SessionError::TooLarge(format!(
            "the export has {} messages; an import takes at most {MAX_IMPORT_MESSAGES}",
            messages.len()
        )));
    }
    let mut seen = HashSet::new();
    let messages = messages
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            let m: ExportedMessage = serde_json::from_value(v)
                .map_err(|e| invalid(format!("data.messages[{i}]: {e}")))?;
            if !seen.insert(m.id.clone()) {
                return Err(invalid(format!(
                    "data.messages[{i}].id {:?} is used by an earlier message",
                    m.id
                )));
            }
            Ok(m)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let summaries = match obj.remove("summaries") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .into_iter()
            .enumerate()
            .map(|(i, v)| {
                serde_json::from_value(v).map_err(|e| invalid(format!("data.summaries[{i}]: {e}")))
            })
            .collect::<Result<Vec<_>, _>>()?,
        Some(_) => return Err(invalid("data.summaries must be an array".into())),
    };
    Ok(AgentExport {
        format: EXPORT_FORMAT.to_owned(),
        version: EXPORT_VERSION,
        exported_at: field(&mut obj, "exportedAt")?.unwrap_or_default(),
        agent,
        messages,
        summaries,
        offloads: field(&mut obj, "offloads")?.unwrap_or_default(),
        images: field(&mut obj, "images")?.unwrap_or_default(),
        documents: field(&mut obj, "documents")?.unwrap_or_default(),
        plan: import_plan(field(&mut obj, "plan")?.unwrap_or_default())?,
    })
}

/// An exported plan, checked as `todo_write` checks one.
fn import_plan(plan: Vec<PlanItem>) -> Result<Vec<PlanItem>, SessionError> {
    let args = serde_json::json!({ "todos": plan });
    crate::tools::builtin::parse_plan(&args)
        .map_err(|e| SessionError::InvalidParams(format!("data.plan: {e}")))
}

/// Takes `data.<name>` out of the export as a `T` (`None` when absent or null).
fn field<T: serde::de::DeserializeOwned>(
    obj: &mut Map<String, Value>,
    name: &str,
) -> Result<Option<T>, SessionError> {
    match obj.remove(name) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => serde_json::from_value(v)
            .map(Some)
            .map_err(|e| SessionError::InvalidParams(format!("data.{name}: {e}"))),
    }
}
