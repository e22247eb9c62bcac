//! The pure core of a copy: from a source history to the new agent's rows and the files to
//! put in its session folder. No I/O: the caller writes the files and stores the rows.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use agent_proto::{Block, MessageStatus, ToolCallBlock, ToolCallResult, ToolCallStatus};
use serde_json::Value;

use crate::store::{StoredMessage, Summary};
use crate::tools::offload;

/// The result a tool call gets when it had not finished in the source.
pub(super) const UNFINISHED_CALL: &str =
    "interrupted: the call had not finished when this history was copied";

/// A source history to copy.
#[derive(Debug, Clone, Default)]
pub(super) struct CopySource {
    /// Oldest first; exactly the messages to copy.
    pub messages: Vec<StoredMessage>,
    pub summaries: Vec<Summary>,
    pub context_edge: Option<String>,
}

/// What a copied file is, which says where its content comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum FileKind {
    /// The full text of an offloaded tool result.
    Offload { tool_call_id: String },
    /// An image attached to a user message.
    Image,
    /// A document (PDF) attached to a user message.
    Document,
}

/// A file of the source (named by the path its blocks hold) and where the copy goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct PlannedFile {
    pub kind: FileKind,
    pub from: String,
    pub to: PathBuf,
}

/// The new agent's history and the files to write for it.
#[derive(Debug, Clone)]
pub(super) struct CopyPlan {
    pub messages: Vec<StoredMessage>,
    pub summaries: Vec<Summary>,
    pub context_edge: Option<String>,
    pub files: Vec<PlannedFile>,
}

/// Copies `source` for agent `agent_id`, whose session folder is `session_dir`:
///
/// - every message gets a new id (UUID v7, in order) and `agent_id`; parent and variant
///   links, summaries and the context edge follow the new ids (a link to a message that
///   is not copied is dropped, and so is a summary of one);
/// - a message stays `superseded` only if the variant that replaced it is copied too;
/// - a message no run finished (`pending`, `streaming`, `waiting`) becomes `interrupted`,
///   and a tool call without a result gets an interrupted one, so the copy never holds a
///   half-written answer as if a run were still writing it;
/// - each offload and image file gets a path in `session_dir`; a field holding its old
///   path (`offloadPath`, an image's `path`) gets the new one, and so does every
///   occurrence of an absolute old path inside text (the stub that names the file,
///   arguments that read it, prose, summaries).
pub(super) fn plan_copy(source: CopySource, agent_id: &str, session_dir: &Path) -> CopyPlan {
    let CopySource {
        messages,
        summaries,
        context_edge,
    } = source;
    let new_ids: Vec<String> = messages
        .iter()
        .map(|_| uuid::Uuid::now_v7().to_string())
        .collect();
    let ids: HashMap<String, String> = messages
        .iter()
        .zip(&new_ids)
        .map(|(m, new)| (m.message.id.clone(), new.clone()))
        .collect();
    let remap = |id: &Option<String>| id.as_ref().and_then(|id| ids.get(id).cloned());
    let keep_superseded = still_superseded(&messages);
    let files = plan_files(&messages, session_dir);
    let rewrites = Rewrites::new(&files);
    let mut copied = Vec::with_capacity(messages.len());
    for ((stored, superseded), id) in messages.iter().zip(keep_superseded).zip(new_ids) {
        let mut message = stored.message.clone();
        message.id = id;
        message.agent_id = agent_id.to_owned();
        message.variant_of = remap(&message.variant_of);
        message.superseded = superseded;
        if matches!(
            message.status,
            MessageStatus::Pending | MessageStatus::Streaming | MessageStatus::Waiting
        ) {
            message.status = MessageStatus::Interrupted;
        }
        for block in &mut message.blocks {
            close_unfinished_call(block);
            rewrites.block(block);
        }
        copied.push(StoredMessage {
            message,
            parent_id: remap(&stored.parent_id),
        });
    }
    let summaries = summaries
        .into_iter()
        .filter_map(|s| {
            Some(Summary {
                agent_id: agent_id.to_owned(),
                through_message_id: ids.get(&s.through_message_id)?.clone(),
                text: rewrites.text(&s.text),
                ..s
            })
        })
        .collect();
    CopyPlan {
        messages: copied,
        summaries,
        context_edge: remap(&context_edge),
        files,
    }
}

/// For each message, whether it stays superseded in the copy: only if a later copied
/// message is a variant of the same answer.
fn still_superseded(messages: &[StoredMessage]) -> Vec<bool> {
    let mut later_variants: HashSet<&str> = HashSet::new();
    let mut keep = vec![false; messages.len()];
    for (i, stored) in messages.iter().enumerate().rev() {
        let m = &stored.message;
        let root = m.variant_of.as_deref().unwrap_or(&m.id);
        keep[i] = m.superseded && later_variants.contains(root);
        if let Some(of) = &m.variant_of {
            later_variants.insert(of);
        }
    }
    keep
}

/// The files the blocks refer to, each once, with a distinct path in `session_dir`.
fn plan_files(messages: &[StoredMessage], session_dir: &Path) -> Vec<PlannedFile> {
    let mut files: Vec<PlannedFile> = Vec::new();
    let mut seen: HashSet<&str> = HashSet::new();
    let mut taken: HashSet<PathBuf> = HashSet::new();
    for block in messages.iter().flat_map(|m| &m.message.blocks) {
        let (kind, from, name, dir) = match block {
            Block::ToolCall(ToolCallBlock {
                tool_call_id,
                result:
                    Some(ToolCallResult {
                        offload_path: Some(path),
                        ..
                    }),
                ..
            }) => (
                FileKind::Offload {
                    tool_call_id: tool_call_id.clone(),
                },
                path,
                offload::file_name(tool_call_id),
                session_dir.to_owned(),
            ),
            Block::Image { path, .. } => (
                FileKind::Image,
                path,
                image_file_name(path),
                session_dir.join("images"),
            ),
            Block::Document { path, .. } => (
                FileKind::Document,
                path,
                image_file_name(path),
                session_dir.join("documents"),
            ),
            _ => continue,
        };
        if !seen.insert(from.as_str()) {
            continue;
        }
        let mut to = dir.join(&name);
        let mut n = 2;
        while taken.contains(&to) {
            to = dir.join(format!("{n}_{name}"));
            n += 1;
        }
        taken.insert(to.clone());
        files.push(PlannedFile {
            kind,
            from: from.clone(),
            to,
        });
    }
    files
}

/// The name an image or document keeps in the copy: its own file name reduced to safe characters, or
/// a fresh one.
fn image_file_name(path: &str) -> String {
    let name: String = Path::new(path)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .take(128)
        .collect();
    if name.trim_matches('.').is_empty() {
        format!("{}.img", uuid::Uuid::new_v4().simple())
    } else {
        name
    }
}

/// Gives a tool call that has no result an interrupted one.
fn close_unfinished_call(block: &mut Block) {
    if let Block::ToolCall(ToolCallBlock { status, result, .. }) = block
        && !status.is_finished()
    {
        *status = ToolCallStatus::Interrupted;
        *result = Some(ToolCallResult {
            content: UNFINISHED_CALL.into(),
            is_error: true,
            offload_path: None,
            duration_ms: None,
        });
    }
}

/// Old file paths and their new ones.
struct Rewrites<'a> {
    /// Every planned file: a field that holds exactly an old path gets the new one.
    exact: HashMap<&'a str, String>,
    /// The paths also replaced inside other text (stubs, arguments, prose): absolute paths
    /// naming a file, longest first so a path that is a prefix of another never cuts it.
    /// A stray short "path" in an import must not garble every text that contains it.
    within: Vec<(&'a str, String)>,
}

impl<'a> Rewrites<'a> {
    fn new(files: &'a [PlannedFile]) -> Rewrites<'a> {
        let exact: HashMap<&str, String> = files
            .iter()
            .map(|f| (f.from.as_str(), f.to.display().to_string()))
            .collect();
        let mut within: Vec<(&str, String)> = exact
            .iter()
            .filter(|(from, _)| {
                let path = Path::new(from);
                path.is_absolute() && path.file_name().is_some()
            })
            .map(|(from, to)| (*from, to.clone()))
            .collect();
        within.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.0.cmp(b.0)));
        Rewrites { exact, within }
    }

    fn text(&self, text: &str) -> String {
        let mut out = text.to_owned();
        self.in_place(&mut out);
        out
    }

    fn in_place(&self, text: &mut String) {
        for (from, to) in &self.within {
            if text.contains(from) {
                *text = text.replace(from, to);
            }
        }
    }

    fn path(&self, path: &mut String) {
        match self.exact.get(path.as_str()) {
            Some(to) => path.clone_from(to),
            None => self.in_place(path),
        }
    }

    fn json(&self, value: &mut Value) {
        match value {
            Value::String(s) => self.in_place(s),
            Value::Array(items) => items.iter_mut().for_each(|v| self.json(v)),
            Value::Object(map) => map.values_mut().for_each(|v| self.json(v)),
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }

    fn block(&self, block: &mut Block) {
        if self.exact.is_empty() {
            return;
        }
        match block {
            Block::Text { text } | Block::Reasoning { text, .. } | Block::Steer { text, .. } => {
                self.in_place(text)
            }
            Block::Image { path, .. } | Block::Document { path, .. } => self.path(path),
            Block::ToolCall(ToolCallBlock {
                arguments,
                raw_arguments,
                result,
                ..
            }) => {
                self.json(arguments);
                if let Some(raw) = raw_arguments {
                    self.in_place(raw);
                }
                if let Some(result) = result {
                    self.in_place(&mut result.content);
                    if let Some(path) = &mut result.offload_path {
                        self.path(path);
                    }
                }
            }
            Block::Error { message, .. } => self.in_place(message),
        }
    }
}
