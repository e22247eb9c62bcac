//! The agent's latest assistant message as its events build it: what a `snapshot` event
//! (`subscribe` with `snapshot: true`) carries.
//!
//! The event log applies every event it numbers to its [`Mirror`] under the same lock that
//! hands out the seq, so the mirror is always exactly "the events up to the log's last seq"
//! and a snapshot taken under that lock is consistent with the stream that follows it.
//! A run hands the mirror the message it starts from (as stored, [`Mirror::begin`]); the
//! run's events are then folded in by the rules clients follow (docs/protocol.md 4.6), the
//! same rules the loop's writer stores blocks by:
//!
//! - a delta extends the last block when it is of its kind and of the same step; the first
//!   piece after `messageStarted` or after a `toolResult` begins a new step, so a continued
//!   answer's text is a block of its own;
//! - the pieces of a step go before that step's tool calls;
//! - a step that opens with a call right after the calls of the step before gets an empty
//!   text block first (the two steps stay two model turns).
//!
//! It owns no I/O and never fails: events about another message are ignored.

use crate::agent_loop::{CallIndex, Piece, append_piece, step_has_text};
use agent_proto::{
    Block, Event, EventKind, LoopFinishReason, Message, MessageStatus, PermissionPrompt,
    PermissionResolution, QuestionResolution, Role, SessionStatus, ToolCallBlock, ToolCallResult,
    ToolCallStatus, Usage, run_error,
};

/// The fold of one agent's events.
#[derive(Debug, Default)]
pub(crate) struct Mirror {
    /// The status the last `statusChanged` set (none seen yet: the session's).
    status: Option<SessionStatus>,
    /// Whether `message` is known (from a run's start, or seeded from the store).
    known: bool,
    message: Option<Message>,
    /// Index of the first block of the current step.
    step_start: usize,
    /// A `toolResult` came after the step's pieces: the next piece begins a new step.
    step_over: bool,
    /// Where the message's calls are.
    calls: CallIndex,
}

impl Mirror {
    /// Whether the latest message is known (else it must be seeded from the store).
    pub(crate) fn is_known(&self) -> bool {
        self.known && self.status.is_some()
    }

    /// A run starts writing `message` (as stored now).
    pub(crate) fn begin(&mut self, message: &Message) {
        self.step_start = message.blocks.len();
        self.step_over = false;
        self.calls = CallIndex::of(&message.blocks);
        self.message = Some(message.clone());
        self.known = true;
    }

    /// The latest message is no longer known (the history was cut): the next snapshot
    /// seeds it from the store. The status stays.
    pub(crate) fn forget_message(&mut self) {
        self.known = false;
        self.message = None;
        self.step_start = 0;
        self.step_over = false;
        self.calls = CallIndex::default();
    }

    /// The agent's status and latest assistant message read from the store (none: it has
    /// none), for what no event told yet.
    pub(crate) fn seed(&mut self, status: SessionStatus, message: Option<Message>) {
        self.status.get_or_insert(status);
        if !self.known {
            self.step_start = message.as_ref().map_or(0, |m| m.blocks.len());
            self.step_over = false;
            self.calls = message
                .as_ref()
                .map_or_else(CallIndex::default, |m| CallIndex::of(&m.blocks));
            self.message = message;
            self.known = true;
        }
    }

    /// The `snapshot` event's payload.
    pub(crate) fn snapshot(&self) -> EventKind {
        let step_start = self.message.as_ref().map(|m| {
            let next = if self.step_over {
                m.blocks.len()
            } else {
                self.step_start.min(m.blocks.len())
            };
            u32::try_from(next).unwrap_or(u32::MAX)
        });
        EventKind::Snapshot {
            status: self.status.unwrap_or(SessionStatus::Idle),
            message: self.message.clone(),
            step_start,
        }
    }

    /// Folds one event in.
    pub(crate) fn apply(&mut self, event: &Event) {
        match &event.kind {
            EventKind::StatusChanged { status } => self.status = Some(*status),
            EventKind::MessageStarted {
                message_id,
                message,
            } => self.message_started(event, message_id, message.as_deref()),
            kind => self.apply_to_message(event.at, kind),
        }
    }

    /// A step of a message begins (the message itself, when it is new to the mirror).
    fn message_started(&mut self, event: &Event, message_id: &str, message: Option<&Message>) {
        if self.message.as_ref().is_none_or(|m| m.id != message_id) {
            let started = message.cloned().unwrap_or_else(|| {
                Message::new(
                    message_id,
                    event.agent_id.as_str(),
                    Role::Assistant,
                    Vec::new(),
                    MessageStatus::Pending,
                    event.at,
                )
            });
            self.begin(&started);
        }
        self.step_start = self.message.as_ref().map_or(0, |m| m.blocks.len());
        self.step_over = false;
        if let Some(m) = self.message.as_mut()
            && m.status != MessageStatus::Pending
        {
            m.status = MessageStatus::Streaming;
        }
    }

    /// An event about the latest message (events about another one are left out).
    fn apply_to_message(&mut self, at: i64, kind: &EventKind) {
        let Some(message_id) = message_of(kind) else {
            return;
        };
        let Some(message) = self.message.as_mut().filter(|m| m.id == message_id) else {
            return;
        };
        message.updated_at = at;
        match kind {
            EventKind::TextDelta { delta, .. } => {
                self.new_step_if_over();
                self.append(Piece::Text, delta);
            }
            EventKind::ReasoningDelta { delta, .. } => {
                self.new_step_if_over();
                self.append(Piece::Reasoning, delta);
            }
            EventKind::ToolCallStarted {
                tool_call_id, name, ..
            } => {
                self.new_step_if_over();
                self.start_call(tool_call_id, name);
            }
            EventKind::Usage {
                input_tokens,
                output_tokens,
                ..
            } => {
                let usage = message.usage.get_or_insert_with(Usage::default);
                usage.input_tokens += input_tokens;
                usage.output_tokens += output_tokens;
            }
            // The run's final error (retry notices and notices of tools left out are not
            // kept with the message).
            EventKind::Error {
                message: text,
                kind,
                retry: None,
                ..
            } if kind != run_error::TOOLS_LEFT_OUT => {
                message.blocks.push(Block::Error {
                    message: text.clone(),
                    kind: kind.clone(),
                });
            }
            EventKind::MessageCompleted { status, .. } => message.status = *status,
            // A steer ends the step: what the model writes next begins another.
            EventKind::Steered { id, text, .. } => {
                message.blocks.push(Block::Steer {
                    id: id.clone(),
                    text: text.clone(),
                });
                self.step_over = true;
            }
            EventKind::LoopFinished { reason, .. } => {
                if matches!(
                    reason,
                    LoopFinishReason::MaxSteps
                        | LoopFinishReason::MaxTokens
                        | LoopFinishReason::Paused
                        | LoopFinishReason::WaitingPermission
                        | LoopFinishReason::WaitingQuestion
                ) {
                    message.status = MessageStatus::Waiting;
                }
            }
            kind => {
                if let Some(id) = call_of(kind)
                    && let Some(call) = call_mut(message, &mut self.calls, id)
                {
                    fold_into_call(call, kind);
                }
                match kind {
                    EventKind::PermissionRequested { .. } | EventKind::QuestionRequested { .. } => {
                        message.status = MessageStatus::Waiting;
                    }
                    EventKind::ToolResult { .. } => self.step_over = true,
                    _ => {}
                }
            }
        }
    }

    fn new_step_if_over(&mut self) {
        if self.step_over {
            self.step_over = false;
            self.step_start = self.message.as_ref().map_or(0, |m| m.blocks.len());
        }
    }

    /// Where the current step's pieces end: its first tool call, or the end.
    fn pieces_end(&self, message: &Message) -> usize {
        let start = self.step_start.min(message.blocks.len());
        message.blocks[start..]
            .iter()
            .position(|b| matches!(b, Block::ToolCall(ToolCallBlock { .. })))
            .map_or(message.blocks.len(), |i| i + start)
    }

    fn append(&mut self, piece: Piece, delta: &str) {
        let Some(message) = self.message.as_ref() else {
            return;
        };
        let end = self.pieces_end(message);
        let start = self.step_start.min(end);
        let Some(message) = self.message.as_mut() else {
            return;
        };
        if message.status == MessageStatus::Pending {
            message.status = MessageStatus::Streaming;
        }
        append_piece(&mut message.blocks, start, end, piece, delta);
    }

    fn start_call(&mut self, tool_call_id: &str, name: &str) {
        let start = self.step_start;
        let Some(message) = self.message.as_mut() else {
            return;
        };
        if message.status == MessageStatus::Pending {
            message.status = MessageStatus::Streaming;
        }
        let blocks = &mut message.blocks;
        let start = start.min(blocks.len());
        let step_has_text = step_has_text(blocks, start);
        let after_calls = start > 0
            && matches!(
                blocks.get(start - 1),
                Some(Block::ToolCall(ToolCallBlock { .. }))
            );
        if !step_has_text && after_calls {
            blocks.insert(
                start,
                Block::Text {
                    text: String::new(),
                },
            );
        }
        self.calls.note(tool_call_id, blocks.len());
        blocks.push(Block::ToolCall(ToolCallBlock::new(
            tool_call_id.to_owned(),
            name.to_owned(),
            serde_json::Value::Null,
            ToolCallStatus::Streaming,
        )));
    }
}

/// The message an event is about, for the events that change one.
fn message_of(kind: &EventKind) -> Option<&str> {
    match kind {
        EventKind::TextDelta { message_id, .. }
        | EventKind::ReasoningDelta { message_id, .. }
        | EventKind::ToolCallStarted { message_id, .. }
        | EventKind::ToolCallReady { message_id, .. }
        | EventKind::Usage { message_id, .. }
        | EventKind::PermissionRequested { message_id, .. }
        | EventKind::PermissionResolved { message_id, .. }
        | EventKind::ToolResult { message_id, .. }
        | EventKind::QuestionRequested { message_id, .. }
        | EventKind::QuestionResolved { message_id, .. }
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

/// The call an event about one tool call is about.
fn call_of(kind: &EventKind) -> Option<&str> {
    match kind {
        EventKind::ToolCallReady { tool_call_id, .. }
        | EventKind::PermissionRequested { tool_call_id, .. }
        | EventKind::PermissionResolved { tool_call_id, .. }
        | EventKind::QuestionRequested { tool_call_id, .. }
        | EventKind::QuestionResolved { tool_call_id, .. }
        | EventKind::ToolResult { tool_call_id, .. } => Some(tool_call_id),
        _ => None,
    }
}

/// Folds an event about one tool call into its block.
fn fold_into_call(call: &mut ToolCallBlock, kind: &EventKind) {
    match kind {
        EventKind::ToolCallReady { arguments, .. } => {
            call.arguments = arguments.clone();
            call.status = ToolCallStatus::Ready;
        }
        EventKind::PermissionRequested {
            permission_type,
            description,
            command,
            command_display,
            signature,
            paths,
            risk,
            rememberable,
            network_access,
            outside_sandbox,
            ..
        } => {
            call.status = ToolCallStatus::WaitingPermission;
            call.prompt = Some(Box::new(PermissionPrompt {
                permission_type: *permission_type,
                description: description.clone(),
                command: command.clone(),
                command_display: command_display.clone(),
                signature: signature.clone(),
                paths: paths.clone(),
                risk: risk.clone(),
                rememberable: *rememberable,
                network_access: *network_access,
                outside_sandbox: *outside_sandbox,
            }));
        }
        EventKind::PermissionResolved {
            granted,
            remember,
            cancelled,
            ..
        } => {
            call.resolution = Some(PermissionResolution {
                granted: *granted,
                remember: *remember,
                cancelled: *cancelled,
            });
        }
        EventKind::QuestionRequested { questions, .. } => {
            call.status = ToolCallStatus::WaitingAnswer;
            call.questions = Some(questions.clone());
        }
        EventKind::QuestionResolved {
            answers,
            declined,
            cancelled,
            ..
        } => {
            call.answer = Some(Box::new(QuestionResolution {
                answers: answers.clone(),
                declined: *declined,
                cancelled: *cancelled,
            }));
        }
        EventKind::ToolResult {
            status,
            content,
            offload_path,
            duration_ms,
            ..
        } => {
            call.status = *status;
            call.result = Some(ToolCallResult {
                content: content.clone(),
                is_error: *status != ToolCallStatus::Success,
                offload_path: offload_path.clone(),
                duration_ms: Some(*duration_ms),
            });
        }
        _ => {}
    }
}

fn call_mut<'a>(
    message: &'a mut Message,
    calls: &mut CallIndex,
    id: &str,
) -> Option<&'a mut ToolCallBlock> {
    let index = calls.find(&message.blocks, id)?;
    match &mut message.blocks[index] {
        Block::ToolCall(call) => Some(call),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
