//! Assistant messages rebuilt from events the way docs/protocol.md (4.6) tells clients to,
//! written apart from the daemon's own fold (`session::mirror`), so a test comparing the
//! result with what `listMessages` stores checks the documented rules, not the daemon
//! against itself.

use std::collections::HashMap;

use agent_proto::{
    Block, Event, EventKind, LoopFinishReason, Message, MessageStatus, Role, ToolCallBlock,
    ToolCallResult, ToolCallStatus, run_error,
};

/// One message being rebuilt, with where its current step starts.
struct Building {
    message: Message,
    step_start: usize,
    /// A `toolResult` came: the next piece starts a new step.
    step_over: bool,
}

/// Messages rebuilt from a stream of events (optionally starting from a snapshot).
#[derive(Default)]
pub struct Rebuild {
    messages: HashMap<String, Building>,
}

impl Rebuild {
    pub fn new() -> Rebuild {
        Rebuild::default()
    }

    /// Starts from a `snapshot` event's message.
    pub fn from_snapshot(event: &Event) -> Rebuild {
        let mut rebuild = Rebuild::new();
        if let EventKind::Snapshot {
            message: Some(message),
            step_start,
            ..
        } = &event.kind
        {
            rebuild.start(message.clone());
            // Mid-step, the next delta may extend the last block.
            if let (Some(b), Some(start)) = (rebuild.messages.get_mut(&message.id), step_start) {
                b.step_start = (*start as usize).min(b.message.blocks.len());
            }
        }
        rebuild
    }

    fn start(&mut self, message: Message) {
        let step_start = message.blocks.len();
        self.messages.insert(
            message.id.clone(),
            Building {
                message,
                step_start,
                step_over: false,
            },
        );
    }

    pub fn message(&self, id: &str) -> Option<&Message> {
        self.messages.get(id).map(|b| &b.message)
    }

    pub fn apply(&mut self, event: &Event) {
        if let EventKind::MessageStarted {
            message_id,
            message,
        } = &event.kind
        {
            if !self.messages.contains_key(message_id) {
                let message = message.as_deref().cloned().unwrap_or_else(|| {
                    Message::new(
                        message_id.as_str(),
                        event.agent_id.as_str(),
                        Role::Assistant,
                        Vec::new(),
                        MessageStatus::Pending,
                        event.at,
                    )
                });
                self.start(message);
            }
            // Rule 1: a run's first piece begins a new block.
            if let Some(b) = self.messages.get_mut(message_id) {
                b.step_start = b.message.blocks.len();
                b.step_over = false;
            }
            return;
        }
        let Some(id) = message_id(&event.kind) else {
            return;
        };
        let Some(b) = self.messages.get_mut(id) else {
            return;
        };
        match &event.kind {
            EventKind::TextDelta { delta, .. } => b.piece(delta, true),
            EventKind::ReasoningDelta { delta, .. } => b.piece(delta, false),
            EventKind::ToolCallStarted {
                tool_call_id, name, ..
            } => {
                b.new_step_if_over();
                b.message.blocks.push(Block::ToolCall(ToolCallBlock::new(
                    tool_call_id.clone(),
                    name.clone(),
                    serde_json::Value::Null,
                    ToolCallStatus::Streaming,
                )));
            }
            EventKind::ToolCallReady {
                tool_call_id,
                arguments,
                ..
            } => {
                if let Some(Block::ToolCall(ToolCallBlock {
                    arguments: a,
                    status,
                    ..
                })) = b.call(tool_call_id)
                {
                    *a = arguments.clone();
                    *status = ToolCallStatus::Ready;
                }
            }
            EventKind::PermissionRequested { tool_call_id, .. } => {
                if let Some(Block::ToolCall(ToolCallBlock { status, .. })) = b.call(tool_call_id) {
                    *status = ToolCallStatus::WaitingPermission;
                }
            }
            EventKind::QuestionRequested { tool_call_id, .. } => {
                if let Some(Block::ToolCall(ToolCallBlock { status, .. })) = b.call(tool_call_id) {
                    *status = ToolCallStatus::WaitingAnswer;
                }
            }
            EventKind::ToolResult {
                tool_call_id,
                status,
                content,
                offload_path,
                duration_ms,
                ..
            } => {
                if let Some(Block::ToolCall(ToolCallBlock {
                    status: s, result, ..
                })) = b.call(tool_call_id)
                {
                    *s = *status;
                    *result = Some(ToolCallResult {
                        content: content.clone(),
                        is_error: *status != ToolCallStatus::Success,
                        offload_path: offload_path.clone(),
                        duration_ms: Some(*duration_ms),
                    });
                }
                b.step_over = true;
            }
            EventKind::Error {
                message,
                kind,
                retry: None,
                ..
            } if kind != run_error::TOOLS_LEFT_OUT => b.message.blocks.push(Block::Error {
                message: message.clone(),
                kind: kind.clone(),
            }),
            EventKind::MessageCompleted { status, .. } => b.message.status = *status,
            EventKind::Steered { id, text, .. } => {
                b.message.blocks.push(Block::Steer {
                    id: id.clone(),
                    text: text.clone(),
                });
                b.step_over = true;
            }
            EventKind::LoopFinished { reason, .. }
                if *reason != LoopFinishReason::Completed
                    && *reason != LoopFinishReason::Cancelled
                    && *reason != LoopFinishReason::Error
                    && *reason != LoopFinishReason::Refused =>
            {
                b.message.status = MessageStatus::Waiting;
            }
            _ => {}
        }
    }
}

impl Building {
    fn new_step_if_over(&mut self) {
        if self.step_over {
            self.step_over = false;
            self.step_start = self.message.blocks.len();
        }
    }

    fn call(&mut self, id: &str) -> Option<&mut Block> {
        self.message
            .blocks
            .iter_mut()
            .find(|b| matches!(b, Block::ToolCall(ToolCallBlock { tool_call_id, .. }) if tool_call_id == id))
    }

    /// Rule 2: a piece extends the last block of its step when it is of its kind and no
    /// call of the step came after that block; the pieces of a step stay before that
    /// step's tool calls.
    fn piece(&mut self, delta: &str, text: bool) {
        self.new_step_if_over();
        if self.message.status == MessageStatus::Pending {
            self.message.status = MessageStatus::Streaming;
        }
        let blocks = &mut self.message.blocks;
        let end = blocks[self.step_start..]
            .iter()
            .position(|b| matches!(b, Block::ToolCall(ToolCallBlock { .. })))
            .map_or(blocks.len(), |i| i + self.step_start);
        let call_after_last_piece = blocks[end..].iter().any(|b| {
            matches!(
                b,
                Block::ToolCall(ToolCallBlock {
                    pieces_after: None,
                    ..
                })
            )
        });
        if end > self.step_start && !call_after_last_piece {
            match (&mut blocks[end - 1], text) {
                (Block::Text { text: t }, true)
                | (
                    Block::Reasoning {
                        text: t,
                        signature: None,
                        redacted: None,
                        details: None,
                    },
                    false,
                ) => {
                    t.push_str(delta);
                    return;
                }
                _ => {}
            }
        }
        let block = if text {
            Block::Text {
                text: delta.to_owned(),
            }
        } else {
            Block::reasoning(delta)
        };
        blocks.insert(end, block);
        for b in &mut blocks[end + 1..] {
            if let Block::ToolCall(call) = b {
                call.pieces_after = Some(call.pieces_after.unwrap_or(0) + 1);
            }
        }
    }
}

fn message_id(kind: &EventKind) -> Option<&str> {
    match kind {
        EventKind::TextDelta { message_id, .. }
        | EventKind::ReasoningDelta { message_id, .. }
        | EventKind::ToolCallStarted { message_id, .. }
        | EventKind::ToolCallReady { message_id, .. }
        | EventKind::PermissionRequested { message_id, .. }
        | EventKind::QuestionRequested { message_id, .. }
        | EventKind::ToolResult { message_id, .. }
        | EventKind::MessageCompleted { message_id, .. }
        | EventKind::Steered { message_id, .. }
        | EventKind::LoopFinished { message_id, .. } => Some(message_id),
        EventKind::Error {
            message_id: Some(message_id),
            ..
        } => Some(message_id),
        _ => None,
    }
}

/// What a person sees of a message, block by block: text, reasoning, each call with its
/// status and result, errors. Empty text blocks (the daemon keeps one between two steps of
/// only calls, which clients may leave out) are not shown.
pub fn visible(message: &Message) -> Vec<String> {
    message
        .blocks
        .iter()
        .filter_map(|b| match b {
            Block::Text { text } if text.is_empty() => None,
            Block::Text { text } => Some(format!("text:{text}")),
            Block::Reasoning { text, .. } if text.is_empty() => None,
            Block::Reasoning { text, .. } => Some(format!("reasoning:{text}")),
            Block::ToolCall(ToolCallBlock {
                tool_call_id,
                name,
                arguments,
                status,
                result,
                ..
            }) => Some(format!(
                "call:{tool_call_id}:{name}:{arguments}:{status:?}:{:?}",
                result.as_ref().map(|r| &r.content)
            )),
            Block::Error { message, kind } => Some(format!("error:{kind}:{message}")),
            Block::Steer { text, .. } => Some(format!("steer:{text}")),
            Block::Image { mime_type, .. } => Some(format!("image:{mime_type}")),
            Block::Document {
                mime_type, name, ..
            } => Some(format!("document:{mime_type}:{name}")),
        })
        .collect()
}
