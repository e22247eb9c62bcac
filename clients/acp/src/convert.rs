//! The pure mappings between agentd's wire and ACP's: prompt content to a `sendMessage`
//! content, tool calls to ACP tool calls (kind, title, locations, diffs), run ends to stop
//! reasons, permission prompts to options and back, stored history to `session/update`s,
//! daemon errors to ACP errors.
//!
//! Nothing here does I/O or holds state beyond what it is handed; `session.rs` drives it.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use agent_client_protocol::Error;
use agent_client_protocol::v1::schema::{
    self as acp, ContentBlock, ContentChunk, Diff, EmbeddedResourceResource, ImageContent,
    PermissionOption, PermissionOptionKind, PlanEntry, PlanEntryPriority, PlanEntryStatus,
    SessionUpdate, StopReason, ToolCall, ToolCallContent, ToolCallLocation, ToolCallUpdate,
    ToolCallUpdateFields, ToolKind,
};
use agent_proto::{
    AgentMode, Block, ContentPart, ErrorKind, EventKind, LoopFinishReason, Message, MessageContent,
    MessageStatus, PlanItem, PlanStatus, Question, QuestionAnswer, Remember, Role, ToolCallBlock,
    ToolCallStatus,
};
use serde_json::Value;

/// ACP's kind for one of agentd's tools (by its name; MCP tools are `other`).
pub fn tool_kind(name: &str) -> ToolKind {
    match name {
        "read_file" | "list_directory" | "directory_tree" => ToolKind::Read,
        "write_file" | "edit_file" => ToolKind::Edit,
        "bash" => ToolKind::Execute,
        "glob" | "grep" => ToolKind::Search,
        "web_fetch" => ToolKind::Fetch,
        "todo_write" => ToolKind::Think,
        _ => ToolKind::Other,
    }
}

/// A string argument of a call, if it has one.
fn arg<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

/// What an editor shows as the call's title: the tool with its main argument.
pub fn tool_title(name: &str, args: &Value) -> String {
    let with = |verb: &str, key: &str, default: &str| match arg(args, key) {
        Some(v) => format!("{verb} {v}"),
        None => format!("{verb} {default}"),
    };
    match name {
        "bash" => match arg(args, "command") {
            Some(c) => format!("Run `{}`", first_line(c)),
            None => "Run a command".to_owned(),
        },
        "read_file" => with("Read", "path", "a file"),
        "write_file" => with("Write", "path", "a file"),
        "edit_file" => with("Edit", "path", "a file"),
        "list_directory" => with("List", "path", "the workspace"),
        "directory_tree" => with("Tree of", "path", "the workspace"),
        "glob" => with("Find", "pattern", "files"),
        "grep" => with("Search for", "pattern", "a pattern"),
        "web_fetch" => with("Fetch", "url", "a page"),
        _ => name.to_owned(),
    }
}

fn first_line(s: &str) -> String {
    let line = s.lines().next().unwrap_or("");
    if line.len() < s.trim_end().len() {
        format!("{line} …")
    } else {
        line.to_owned()
    }
}

/// `path` made absolute against the workspace (agentd resolves relative paths there).
fn absolute(path: &str, workspace: Option<&Path>) -> PathBuf {
    let p = Path::new(path);
    match workspace {
        Some(ws) if p.is_relative() => ws.join(p),
        _ => p.to_owned(),
    }
}

/// The files a call works on, for an editor to follow: the `path` argument of the file
/// and search tools (the workspace when they default to it), with the first line read.
pub fn tool_locations(name: &str, args: &Value, workspace: Option<&Path>) -> Vec<ToolCallLocation> {
    let path = match (name, arg(args, "path")) {
        (_, Some(p)) => absolute(p, workspace),
        ("list_directory" | "directory_tree" | "glob" | "grep", None) => match workspace {
            Some(ws) => ws.to_owned(),
            None => return Vec::new(),
        },
        _ => return Vec::new(),
    };
    let mut location = ToolCallLocation::new(path);
    if name == "read_file"
        && let Some(line) = args.get("offset").and_then(Value::as_u64)
    {
        location = location.line(u32::try_from(line).ok());
    }
    vec![location]
}

/// An edit's change as ACP `diff` content: `edit_file` replaces `old_string` by
/// `new_string`; `write_file` writes the whole file.
pub fn tool_diff(name: &str, args: &Value, workspace: Option<&Path>) -> Option<Diff> {
    let path = absolute(arg(args, "path")?, workspace);
    match name {
        "edit_file" => Some(
            Diff::new(path, arg(args, "new_string")?).old_text(arg(args, "old_string")?.to_owned()),
        ),
        "write_file" => Some(Diff::new(path, arg(args, "content")?)),
        _ => None,
    }
}

/// ACP's status of a call in agentd's.
pub fn tool_status(status: ToolCallStatus) -> acp::ToolCallStatus {
    match status {
        ToolCallStatus::Streaming
        | ToolCallStatus::Ready
        | ToolCallStatus::WaitingPermission
        | ToolCallStatus::WaitingAnswer => acp::ToolCallStatus::Pending,
        ToolCallStatus::Approved | ToolCallStatus::Running => acp::ToolCallStatus::InProgress,
        ToolCallStatus::Success => acp::ToolCallStatus::Completed,
        ToolCallStatus::Error
        | ToolCallStatus::Denied
        | ToolCallStatus::Cancelled
        | ToolCallStatus::Interrupted => acp::ToolCallStatus::Failed,
    }
}

/// The fields a call's complete arguments give it: title, kind, input, locations, and the
/// diff of an edit.
pub fn ready_fields(name: &str, args: &Value, workspace: Option<&Path>) -> ToolCallUpdateFields {
    let mut fields = ToolCallUpdateFields::new()
        .title(tool_title(name, args))
        .kind(tool_kind(name))
        .raw_input(args.clone())
        .locations(tool_locations(name, args, workspace));
    if let Some(diff) = tool_diff(name, args, workspace) {
        fields = fields.content(vec![ToolCallContent::Diff(diff)]);
    }
    fields
}

/// The content of a finished call: what the model got, after the diff of an edit that
/// went through.
pub fn result_content(
    name: &str,
    args: &Value,
    status: ToolCallStatus,
    text: &str,
    workspace: Option<&Path>,
) -> Vec<ToolCallContent> {
    let mut content = Vec::new();
    if status == ToolCallStatus::Success
        && let Some(diff) = tool_diff(name, args, workspace)
    {
        content.push(ToolCallContent::Diff(diff));
    }
    if !text.is_empty() {
        content.push(ToolCallContent::from(ContentBlock::from(text.to_owned())));
    }
    content
}

/// How a prompt turn ends for a run's end; `None`: the turn goes on (the run waits for
/// a permission or a question's answer) or ended in an error (answered as an ACP error).
pub fn stop_reason(reason: LoopFinishReason) -> Option<StopReason> {
    match reason {
        LoopFinishReason::Completed | LoopFinishReason::Paused => Some(StopReason::EndTurn),
        LoopFinishReason::Cancelled => Some(StopReason::Cancelled),
        LoopFinishReason::MaxTokens => Some(StopReason::MaxTokens),
        LoopFinishReason::MaxSteps => Some(StopReason::MaxTurnRequests),
        LoopFinishReason::Refused => Some(StopReason::Refusal),
        LoopFinishReason::WaitingPermission
        | LoopFinishReason::WaitingQuestion
        | LoopFinishReason::Error => None,
    }
}

/// Option ids of a permission prompt.
pub const ALLOW_ONCE: &str = "allow_once";
pub const ALLOW_SESSION: &str = "allow_session";
pub const ALLOW_ALWAYS: &str = "allow_always";
pub const REJECT: &str = "reject";

/// The options of a permission prompt: allow once, reject, and (only where agentd would
/// honour it) allow for this agent from now on, or for every agent.
pub fn permission_options(rememberable: bool) -> Vec<PermissionOption> {
    let mut options = vec![PermissionOption::new(
        ALLOW_ONCE,
        "Allow once",
        PermissionOptionKind::AllowOnce,
    )];
    if rememberable {
        options.push(PermissionOption::new(
            ALLOW_SESSION,
            "Always allow for this agent",
            PermissionOptionKind::AllowAlways,
        ));
        options.push(PermissionOption::new(
            ALLOW_ALWAYS,
            "Always allow (every agent)",
            PermissionOptionKind::AllowAlways,
        ));
    }
    options.push(PermissionOption::new(
        REJECT,
        "Reject",
        PermissionOptionKind::RejectOnce,
    ));
    options
}

/// The answer (`granted`, `remember`) an option stands for; `None` for an id we never
/// offered.
pub fn permission_answer(option_id: &str) -> Option<(bool, Remember)> {
    match option_id {
        ALLOW_ONCE => Some((true, Remember::Once)),
        ALLOW_SESSION => Some((true, Remember::Session)),
        ALLOW_ALWAYS => Some((true, Remember::Always)),
        REJECT => Some((false, Remember::Once)),
        _ => None,
    }
}

/// ACP's plan for agentd's: every item in order (agentd has no priorities: all medium;
/// an item in progress shows what is being done, its `activeForm`).
pub fn plan(items: &[PlanItem]) -> acp::Plan {
    acp::Plan::new(
        items
            .iter()
            .map(|item| {
                let (status, content) = match item.status {
                    PlanStatus::Pending => (PlanEntryStatus::Pending, &item.content),
                    PlanStatus::InProgress => (
                        PlanEntryStatus::InProgress,
                        item.active_form.as_ref().unwrap_or(&item.content),
                    ),
                    PlanStatus::Completed => (PlanEntryStatus::Completed, &item.content),
                };
                PlanEntry::new(content.clone(), PlanEntryPriority::Medium, status)
            })
            .collect(),
    )
}

/// Option id of a question's "decline" choice; a choice's id is `choice-<index>`.
pub const DECLINE: &str = "decline";

/// Whether ACP can carry the answers to `questions`: a permission request offers only
/// fixed choices, so every question needs options. (A multi-select question is answered
/// with one choice.)
pub fn questions_askable(questions: &[Question]) -> bool {
    questions.iter().all(|q| !q.options.is_empty())
}

/// The options of one question put as a permission request: one per choice, then
/// "decline".
pub fn question_options(question: &Question) -> Vec<PermissionOption> {
    let mut options: Vec<PermissionOption> = question
        .options
        .iter()
        .enumerate()
        .map(|(i, o)| {
            PermissionOption::new(
                format!("choice-{i}"),
                o.label.clone(),
                PermissionOptionKind::AllowOnce,
            )
        })
        .collect();
    options.push(PermissionOption::new(
        DECLINE,
        "Decline to answer",
        PermissionOptionKind::RejectOnce,
    ));
    options
}

/// The answer an option of [`question_options`] stands for: `Some(None)` declines;
/// `None` for an id never offered.
pub fn question_answer(question: &Question, option_id: &str) -> Option<Option<QuestionAnswer>> {
    if option_id == DECLINE {
        return Some(None);
    }
    let index: usize = option_id.strip_prefix("choice-")?.parse().ok()?;
    let option = question.options.get(index)?;
    Some(Some(QuestionAnswer {
        selected: vec![option.label.clone()],
        text: None,
    }))
}

/// The tool call shown with one question (`n` of `total`): the question as its title,
/// the question and what each choice means as its content.
pub fn question_fields(question: &Question, n: usize, total: usize) -> ToolCallUpdateFields {
    let mut text = question.question.clone();
    for o in &question.options {
        if let Some(d) = &o.description {
            text.push_str(&format!("\n- {}: {d}", o.label));
        }
    }
    let title = match (&question.header, total) {
        (Some(h), 1) => format!("{h}: {}", question.question),
        (Some(h), _) => format!("{h} ({n}/{total}): {}", question.question),
        (None, 1) => question.question.clone(),
        (None, _) => format!("({n}/{total}) {}", question.question),
    };
    ToolCallUpdateFields::new()
        .title(title)
        .kind(ToolKind::Other)
        .status(acp::ToolCallStatus::Pending)
        .content(vec![ToolCallContent::from(ContentBlock::from(text))])
}

/// What the editor is told when it cannot answer the questions (one has no choices):
/// the questions, and where to answer them.
pub fn unaskable_questions_text(questions: &[Question]) -> String {
    let mut text = String::from("\n\nThe agent asks:");
    for q in questions {
        text.push_str(&format!("\n- {}", q.question));
        for o in &q.options {
            text.push_str(&format!("\n  - {}", o.label));
        }
    }
    text.push_str(
        "\n\nThis editor cannot answer in free text over ACP: answer from another agentd \
         client (`agentctl answer` or the Neovim plugin); the run goes on from there.",
    );
    text
}

/// A prompt's content as a `sendMessage` content: text as is, images as data URLs,
/// embedded text resources as fenced text naming their URI, links to local files as
/// attached files, other links as their URI. Audio and binary resources other than images
/// are refused (the agent does not announce them).
pub fn prompt_content(blocks: &[ContentBlock]) -> Result<MessageContent, Error> {
    let mut parts = Vec::new();
    for block in blocks {
        match block {
            ContentBlock::Text(t) => parts.push(ContentPart::Text {
                text: t.text.clone(),
            }),
            ContentBlock::Image(image) => parts.push(image_part(image)),
            ContentBlock::Resource(resource) => match &resource.resource {
                EmbeddedResourceResource::TextResourceContents(r) => {
                    parts.push(ContentPart::Text {
                        text: format!("Context from {}:\n```\n{}\n```", r.uri, r.text),
                    });
                }
                EmbeddedResourceResource::BlobResourceContents(r) => match r.mime_type.as_deref() {
                    Some(mime) if mime.starts_with("image/") => parts.push(ContentPart::Image {
                        data: Some(r.blob.clone()),
                        path: None,
                        mime_type: Some(mime.to_owned()),
                        uri: None,
                    }),
                    other => {
                        return Err(Error::invalid_params().data(format!(
                            "binary resource {} ({}) is not supported: only text and images",
                            r.uri,
                            other.unwrap_or("no MIME type")
                        )));
                    }
                },
                _ => {
                    return Err(Error::invalid_params()
                        .data("a resource of an unknown kind is not supported"));
                }
            },
            ContentBlock::ResourceLink(link) => match link.uri.strip_prefix("file://") {
                Some(path) if path.starts_with('/') => parts.push(ContentPart::File {
                    path: percent_decode(path),
                }),
                _ => parts.push(ContentPart::Text {
                    text: format!("[{}]({})", link.name, link.uri),
                }),
            },
            ContentBlock::Audio(_) => {
                return Err(Error::invalid_params().data("audio prompts are not supported"));
            }
            _ => {
                return Err(Error::invalid_params()
                    .data("a content block of an unknown kind is not supported"));
            }
        }
    }
    if parts.is_empty() {
        return Err(Error::invalid_params().data("the prompt is empty"));
    }
    Ok(match parts.as_slice() {
        [ContentPart::Text { text }] => MessageContent::Text(text.clone()),
        _ => MessageContent::Parts(parts),
    })
}

/// An ACP image as the daemon takes it: its base64 `data` with its type, else its `uri`
/// (a `file://` URI as the decoded path; a `data:` URL as is; a web URL is the daemon's to
/// refuse, with its reason).
fn image_part(image: &ImageContent) -> ContentPart {
    let mime_type = Some(image.mime_type.clone());
    if !image.data.is_empty() {
        return ContentPart::Image {
            data: Some(image.data.clone()),
            path: None,
            mime_type,
            uri: None,
        };
    }
    match image.uri.as_deref() {
        Some(uri) => match uri.strip_prefix("file://") {
            Some(path) => ContentPart::Image {
                data: None,
                path: Some(percent_decode(path)),
                mime_type,
                uri: None,
            },
            None => ContentPart::Image {
                data: None,
                path: None,
                mime_type,
                uri: Some(uri.to_owned()),
            },
        },
        None => ContentPart::Image {
            data: None,
            path: None,
            mime_type,
            uri: None,
        },
    }
}

/// `%XX` escapes of a file URI's path decoded (invalid ones kept as they are).
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = s.get(i + 1..i + 3)
            && let Ok(b) = u8::from_str_radix(hex, 16)
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// What the live mapping remembers of each call between its events: its name and
/// arguments, and whether the editor has been told of it (a call is announced once, with
/// `tool_call`; everything after is a `tool_call_update`).
#[derive(Debug, Default)]
pub struct ToolCalls {
    calls: HashMap<String, (String, Value)>,
    announced: HashSet<String>,
    /// The output of running commands so far, by call (until its result).
    live: HashMap<String, LiveText>,
}

/// How much of a running command's output the editor is shown (its end): ACP's content
/// of a call is replaced whole by each update, so it is sent again each time.
pub const LIVE_SHOWN: usize = 64 * 1024;

/// A running command's output as the editor is shown it: the text so far (its last
/// [`LIVE_SHOWN`] bytes), a `[stderr]`/`[stdout]` line where the stream changes.
#[derive(Debug, Default)]
struct LiveText {
    text: String,
    stream: Option<agent_proto::OutputStream>,
    cut: bool,
}

impl LiveText {
    fn add(&mut self, stream: agent_proto::OutputStream, text: &str) {
        if self.stream != Some(stream) {
            let first = self.stream.is_none();
            if !self.text.is_empty() && !self.text.ends_with('\n') {
                self.text.push('\n');
            }
            if !(first && stream == agent_proto::OutputStream::Stdout) {
                self.text.push_str(match stream {
                    agent_proto::OutputStream::Stdout => "[stdout]\n",
                    agent_proto::OutputStream::Stderr => "[stderr]\n",
                });
            }
            self.stream = Some(stream);
        }
        self.text.push_str(text);
        self.keep_end();
    }

    fn note(&mut self, note: &str) {
        if !self.text.is_empty() && !self.text.ends_with('\n') {
            self.text.push('\n');
        }
        self.text.push_str(&format!("[{note}]\n"));
        self.keep_end();
    }

    fn keep_end(&mut self) {
        if self.text.len() > LIVE_SHOWN {
            let mut start = self.text.len() - LIVE_SHOWN;
            while !self.text.is_char_boundary(start) {
                start += 1;
            }
            self.text.drain(..start);
            self.cut = true;
        }
    }

    fn shown(&self) -> String {
        if self.cut {
            format!("…{}", self.text)
        } else {
            self.text.clone()
        }
    }
}

impl ToolCalls {
    /// A mapping that knows these calls were announced already (a replayed history).
    pub fn announced(ids: impl IntoIterator<Item = String>) -> ToolCalls {
        ToolCalls {
            calls: HashMap::new(),
            announced: ids.into_iter().collect(),
            live: HashMap::new(),
        }
    }

    /// `fields` for call `id` as an update, or as the call's announcement when the editor
    /// has not seen it yet (a call begun before this session subscribed).
    fn emit(&mut self, id: &str, fields: ToolCallUpdateFields) -> SessionUpdate {
        if self.announced.insert(id.to_owned()) {
            let name = self.calls.get(id).map_or("tool call", |(n, _)| n.as_str());
            let mut call = ToolCall::new(id.to_owned(), name.to_owned()).kind(tool_kind(name));
            call.update(fields);
            SessionUpdate::ToolCall(call)
        } else {
            SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(id.to_owned(), fields))
        }
    }

    /// The `session/update`s an event of the agent becomes, in order. Events that are not
    /// part of the conversation (status, usage, agent updates, ...) become none; user
    /// messages and run ends are the session's business.
    pub fn updates(&mut self, event: &EventKind, workspace: Option<&Path>) -> Vec<SessionUpdate> {
        match event {
            EventKind::TextDelta { delta, .. } => vec![SessionUpdate::AgentMessageChunk(
                ContentChunk::new(delta.clone().into()),
            )],
            EventKind::ReasoningDelta { delta, .. } => vec![SessionUpdate::AgentThoughtChunk(
                ContentChunk::new(delta.clone().into()),
            )],
            EventKind::ToolCallStarted {
                tool_call_id, name, ..
            } => {
                self.calls
                    .insert(tool_call_id.clone(), (name.clone(), Value::Null));
                let fields = ToolCallUpdateFields::new()
                    .title(name.clone())
                    .kind(tool_kind(name))
                    .status(acp::ToolCallStatus::Pending);
                vec![self.emit(tool_call_id, fields)]
            }
            EventKind::ToolCallReady {
                tool_call_id,
                name,
                arguments,
                ..
            } => {
                self.calls
                    .insert(tool_call_id.clone(), (name.clone(), arguments.clone()));
                vec![self.emit(tool_call_id, ready_fields(name, arguments, workspace))]
            }
            EventKind::PermissionResolved {
                tool_call_id,
                granted: true,
                ..
            } => vec![self.emit(
                tool_call_id,
                ToolCallUpdateFields::new().status(acp::ToolCallStatus::InProgress),
            )],
            EventKind::PlanUpdated { items } => vec![SessionUpdate::Plan(plan(items))],
            EventKind::ToolProgress {
                tool_call_id,
                output,
                message,
                ..
            } => {
                match (output, message) {
                    (Some(output), _) => self
                        .live
                        .entry(tool_call_id.clone())
                        .or_default()
                        .add(output.stream, &output.text),
                    // The end of a command's live output (an MCP server's progress alone
                    // shows nothing).
                    (None, Some(note)) => match self.live.get_mut(tool_call_id) {
                        Some(live) => live.note(note),
                        None => return Vec::new(),
                    },
                    (None, None) => return Vec::new(),
                }
                let Some(live) = self.live.get(tool_call_id) else {
                    return Vec::new();
                };
                let content = ContentBlock::from(live.shown());
                let fields = ToolCallUpdateFields::new()
                    .status(acp::ToolCallStatus::InProgress)
                    .content(vec![ToolCallContent::from(content)]);
                vec![self.emit(tool_call_id, fields)]
            }
            EventKind::ToolResult {
                tool_call_id,
                status,
                content,
                ..
            } => {
                let (name, args) = self
                    .calls
                    .get(tool_call_id)
                    .cloned()
                    .unwrap_or((String::new(), Value::Null));
                let fields = ToolCallUpdateFields::new()
                    .status(tool_status(*status))
                    .content(result_content(&name, &args, *status, content, workspace))
                    .raw_output(Value::String(content.clone()));
                let update = self.emit(tool_call_id, fields);
                self.calls.remove(tool_call_id);
                self.live.remove(tool_call_id);
                vec![update]
            }
            _ => Vec::new(),
        }
    }
}

/// The ids of the tool calls in a history (announced by its replay).
pub fn history_call_ids(messages: &[Message]) -> Vec<String> {
    messages
        .iter()
        .filter(|m| !m.superseded)
        .flat_map(|m| &m.blocks)
        .filter_map(|b| match b {
            Block::ToolCall(ToolCallBlock { tool_call_id, .. }) => Some(tool_call_id.clone()),
            _ => None,
        })
        .collect()
}

/// The `session/update`s that replay an agent's stored history, oldest first: user text,
/// images and documents, reasoning, answers, tool calls with their status and result, and errors.
/// Answers a later variant replaced (`regenerate`) are left out.
pub fn history_updates(messages: &[Message], workspace: Option<&Path>) -> Vec<SessionUpdate> {
    let mut updates = Vec::new();
    for message in messages.iter().filter(|m| !m.superseded) {
        for block in &message.blocks {
            let chunk = |c: ContentBlock| ContentChunk::new(c);
            match (message.role, block) {
                (Role::User, Block::Text { text }) => {
                    updates.push(SessionUpdate::UserMessageChunk(chunk(text.clone().into())));
                }
                (Role::User, Block::Image { mime_type, path }) => {
                    updates.push(SessionUpdate::UserMessageChunk(chunk(ContentBlock::Image(
                        ImageContent::new("", mime_type.clone()).uri(format!("file://{path}")),
                    ))));
                }
                // A document goes back as a link to the daemon's copy (the editor opens it).
                (
                    Role::User,
                    Block::Document {
                        mime_type,
                        path,
                        name,
                        size,
                    },
                ) => {
                    updates.push(SessionUpdate::UserMessageChunk(chunk(
                        ContentBlock::ResourceLink(
                            acp::ResourceLink::new(name.clone(), format!("file://{path}"))
                                .mime_type(mime_type.clone())
                                .size(i64::try_from(*size).ok()),
                        ),
                    )));
                }
                (Role::Assistant, Block::Text { text }) if !text.is_empty() => {
                    updates.push(SessionUpdate::AgentMessageChunk(chunk(text.clone().into())));
                }
                (Role::Assistant, Block::Reasoning { text, .. }) if !text.is_empty() => {
                    updates.push(SessionUpdate::AgentThoughtChunk(chunk(text.clone().into())));
                }
                (
                    Role::Assistant,
                    Block::ToolCall(ToolCallBlock {
                        tool_call_id,
                        name,
                        arguments,
                        status,
                        result,
                        ..
                    }),
                ) => {
                    let text = result.as_ref().map_or("", |r| r.content.as_str());
                    let mut content = match tool_diff(name, arguments, workspace) {
                        Some(diff) if *status != ToolCallStatus::Success && result.is_none() => {
                            vec![ToolCallContent::Diff(diff)]
                        }
                        _ => Vec::new(),
                    };
                    content.extend(result_content(name, arguments, *status, text, workspace));
                    updates.push(SessionUpdate::ToolCall(
                        ToolCall::new(tool_call_id.clone(), tool_title(name, arguments))
                            .kind(tool_kind(name))
                            .status(tool_status(*status))
                            .locations(tool_locations(name, arguments, workspace))
                            .raw_input(arguments.clone())
                            .content(content),
                    ));
                }
                (Role::Assistant, Block::Error { message: text, .. }) => {
                    updates.push(SessionUpdate::AgentMessageChunk(chunk(
                        format!("\n\n[error: {text}]").into(),
                    )));
                }
                _ => {}
            }
        }
        if message.role == Role::Assistant && message.status == MessageStatus::Cancelled {
            updates.push(SessionUpdate::AgentMessageChunk(ContentChunk::new(
                "\n\n[cancelled]".to_owned().into(),
            )));
        }
    }
    updates
}

/// What an ACP mode id stands for: `chat`, `agent` (no profile), or `profile:<name>` (agent
/// mode with that profile).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModeChoice {
    Chat,
    Agent,
    Profile(String),
}

/// The ACP mode id of an agent: `chat`, `agent`, or `profile:<name>` for an agent in agent
/// mode with a profile. (`acp` agents show as `acp`, a mode they cannot leave.)
pub fn mode_id(mode: AgentMode, profile: Option<&str>) -> String {
    match (mode, profile) {
        (AgentMode::Agent, Some(p)) if !p.is_empty() => format!("profile:{p}"),
        (mode, _) => mode.as_str().to_owned(),
    }
}

/// The choice a mode id names; `None` for anything else.
pub fn parse_mode_id(id: &str) -> Option<ModeChoice> {
    match id {
        "chat" => Some(ModeChoice::Chat),
        "agent" => Some(ModeChoice::Agent),
        _ => id
            .strip_prefix("profile:")
            .filter(|p| !p.is_empty())
            .map(|p| ModeChoice::Profile(p.to_owned())),
    }
}

/// The value id of a model in the model selector: `provider/model` (a provider id has no
/// `/`; a model id may).
pub fn model_value(provider: &str, model: &str) -> String {
    format!("{provider}/{model}")
}

/// The provider and model of a selector value.
pub fn parse_model_value(value: &str) -> Option<(&str, &str)> {
    value
        .split_once('/')
        .filter(|(p, m)| !p.is_empty() && !m.is_empty())
}

/// An ACP error for a failed daemon call: agentd's message, with its `data.kind`. Codes
/// inside the range JSON-RPC and ACP reserve keep their meaning only where it is the
/// same: bad params stay `-32602`; an unknown agent is ACP's "session not found"; the
/// rest are internal errors (`-32603`) whose data says agentd's kind.
pub fn rpc_error(error: &agent_proto::client::Error, session_id: Option<&str>) -> Error {
    match error {
        agent_proto::client::Error::Call(obj) => {
            let kind = ErrorKind::from_code(obj.code());
            let data = serde_json::json!({
                "kind": kind.map_or("unknown", ErrorKind::as_str),
                "agentdCode": obj.code(),
            });
            match (kind, session_id) {
                (Some(ErrorKind::AgentNotFound), Some(id)) => {
                    let mut e: Error = acp::Error::session_not_found(id.to_owned()).into();
                    e.message = obj.message().to_owned();
                    e
                }
                (Some(ErrorKind::InvalidParams), _) => {
                    Error::new(-32602, obj.message().to_owned()).data(data)
                }
                _ => Error::new(-32603, obj.message().to_owned()).data(data),
            }
        }
        other => Error::new(-32603, format!("agentd: {other}"))
            .data(serde_json::json!({"kind": "daemonUnreachable"})),
    }
}

#[cfg(test)]
mod tests;
