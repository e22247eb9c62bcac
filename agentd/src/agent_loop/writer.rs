//! The assistant message being written: how streamed pieces become blocks, and when the
//! message is saved (at most every 250 ms while streaming, and at every block boundary
//! that matters: a tool call's status change, the end of the run).

use std::time::Duration;

use agent_proto::{
    Block, Message, MessageStatus, PermissionPrompt, PermissionResolution, ToolCallResult,
    ToolCallStatus, Usage,
};
use serde_json::Value;
use tokio::time::Instant;

use crate::store::{Store, StoreError, now_ms};

/// Longest time streamed text stays only in memory.
pub const FLUSH_INTERVAL: Duration = Duration::from_millis(250);

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Piece {
    Text,
    Reasoning,
}

/// The fields of one tool call block, to change in place.
pub struct CallMut<'a> {
    pub name: &'a mut String,
    pub arguments: &'a mut Value,
    pub raw_arguments: &'a mut Option<String>,
    pub status: &'a mut ToolCallStatus,
    pub result: &'a mut Option<ToolCallResult>,
    pub permission_paths: &'a mut Option<Vec<String>>,
    pub prompt: &'a mut Option<Box<PermissionPrompt>>,
    pub resolution: &'a mut Option<PermissionResolution>,
}

pub struct MessageWriter {
    pub message: Message,
    store: Store,
    dirty: bool,
    last_flush: Instant,
    /// Index of the first block of the current step (model call).
    step_start: usize,
}

impl MessageWriter {
    pub fn new(message: Message, store: Store) -> Self {
        let step_start = message.blocks.len();
        MessageWriter {
            message,
            store,
            dirty: false,
            last_flush: Instant::now(),
            step_start,
        }
    }

    pub fn id(&self) -> &str {
        &self.message.id
    }

    /// Marks the start of a new model call: its pieces go after everything so far.
    pub fn begin_step(&mut self) {
        self.step_start = self.message.blocks.len();
    }

    pub fn set_status(&mut self, status: MessageStatus) {
        if self.message.status != status {
            self.message.status = status;
            self.dirty = true;
        }
    }

    /// Appends streamed text or reasoning to the current step. Pieces of a step stay
    /// before its tool calls, so a step always reads as "what the model said, then what
    /// it called" (which is how it goes back to the model).
    pub fn append(&mut self, piece: Piece, delta: &str) {
        if self.message.status == MessageStatus::Pending {
            self.message.status = MessageStatus::Streaming;
        }
        let blocks = &mut self.message.blocks;
        let first_call = blocks[self.step_start..]
            .iter()
            .position(|b| matches!(b, Block::ToolCall { .. }))
            .map_or(blocks.len(), |i| i + self.step_start);
        let target = blocks[self.step_start..first_call]
            .iter()
            .rposition(|b| {
                matches!(
                    (b, piece),
                    (Block::Text { .. }, Piece::Text) | (Block::Reasoning { .. }, Piece::Reasoning)
                )
            })
            .map(|i| i + self.step_start);
        // Only extend the last piece before the calls, so text, reasoning, text keeps order.
        let extend = target.filter(|&i| i + 1 == first_call);
        match extend.map(|i| &mut blocks[i]) {
            Some(Block::Text { text }) | Some(Block::Reasoning { text }) => text.push_str(delta),
            _ => {
                let text = delta.to_owned();
                let block = match piece {
                    Piece::Text => Block::Text { text },
                    Piece::Reasoning => Block::Reasoning { text },
                };
                blocks.insert(first_call, block);
            }
        }
        self.dirty = true;
    }

    /// Adds a tool call whose arguments are about to stream. A step that opens with a
    /// call right after the calls of the step before gets an empty text block first, so
    /// the two steps stay two model turns when replayed (not one turn with all the calls).
    pub fn start_call(&mut self, tool_call_id: &str, name: &str) {
        if self.message.status == MessageStatus::Pending {
            self.message.status = MessageStatus::Streaming;
        }
        let blocks = &self.message.blocks;
        let step_has_text = blocks[self.step_start..]
            .iter()
            .any(|b| matches!(b, Block::Text { .. }));
        let after_calls = self.step_start > 0
            && matches!(
                blocks.get(self.step_start - 1),
                Some(Block::ToolCall { .. })
            );
        if !step_has_text && after_calls {
            self.message.blocks.insert(
                self.step_start,
                Block::Text {
                    text: String::new(),
                },
            );
        }
        self.message.blocks.push(Block::ToolCall {
            tool_call_id: tool_call_id.to_owned(),
            name: name.to_owned(),
            arguments: Value::Null,
            raw_arguments: None,
            status: ToolCallStatus::Streaming,
            result: None,
            permission_paths: None,
            prompt: None,
            resolution: None,
        });
        self.dirty = true;
    }

    /// The tool call block with this id.
    pub fn call_mut(&mut self, tool_call_id: &str) -> Option<CallMut<'_>> {
        self.dirty = true;
        self.message.blocks.iter_mut().find_map(|b| match b {
            Block::ToolCall {
                tool_call_id: id,
                name,
                arguments,
                raw_arguments,
                status,
                result,
                permission_paths,
                prompt,
                resolution,
            } if id == tool_call_id => Some(CallMut {
                name,
                arguments,
                raw_arguments,
                status,
                result,
                permission_paths,
                prompt,
                resolution,
            }),
            _ => None,
        })
    }

    /// Ids of the calls that have no result yet, in order, with their status.
    pub fn unfinished_calls(&self) -> Vec<(String, ToolCallStatus)> {
        self.message
            .blocks
            .iter()
            .filter_map(|b| match b {
                Block::ToolCall {
                    tool_call_id,
                    status,
                    ..
                } if !status.is_finished() => Some((tool_call_id.clone(), *status)),
                _ => None,
            })
            .collect()
    }

    /// Adds one call's token counts to the message's.
    pub fn add_usage(&mut self, usage: Usage) {
        let total = self.message.usage.get_or_insert_with(Usage::default);
        total.input_tokens += usage.input_tokens;
        total.output_tokens += usage.output_tokens;
        self.dirty = true;
    }

    pub fn push_block(&mut self, block: Block) {
        self.message.blocks.push(block);
        self.dirty = true;
    }

    /// When the next timed save is due, if there is something to save.
    pub fn flush_due(&self) -> Option<Instant> {
        self.dirty.then(|| self.last_flush + FLUSH_INTERVAL)
    }

    /// Saves the message now.
    pub async fn flush(&mut self) -> Result<(), StoreError> {
        self.message.updated_at = now_ms();
        self.store.update_message(&self.message).await?;
        self.dirty = false;
        self.last_flush = Instant::now();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_proto::Role;

    fn writer() -> MessageWriter {
        // The store is never touched by these tests (no flush).
        let message = Message {
            id: "m".into(),
            agent_id: "a".into(),
            role: Role::Assistant,
            blocks: vec![],
            status: MessageStatus::Pending,
            created_at: 0,
            updated_at: 0,
            usage: None,
            variant_of: None,
            superseded: false,
        };
        MessageWriter {
            message,
            store: crate::store::Store::detached_for_tests(),
            dirty: false,
            last_flush: Instant::now(),
            step_start: 0,
        }
    }

    fn kinds(w: &MessageWriter) -> Vec<String> {
        w.message
            .blocks
            .iter()
            .map(|b| match b {
                Block::Text { text } => format!("text:{text}"),
                Block::Reasoning { text } => format!("reasoning:{text}"),
                Block::ToolCall { tool_call_id, .. } => format!("call:{tool_call_id}"),
                Block::Error { .. } => "error".into(),
                Block::Image { .. } => "image".into(),
            })
            .collect()
    }

    #[tokio::test]
    async fn steps_of_only_calls_stay_apart() {
        let mut w = writer();
        w.start_call("c1", "bash");
        w.begin_step();
        w.start_call("c2", "bash");
        w.start_call("c3", "bash");
        assert_eq!(kinds(&w), ["call:c1", "text:", "call:c2", "call:c3"]);
        let steps = crate::context::steps(&w.message);
        let calls: Vec<usize> = steps.iter().map(|s| s.calls.len()).collect();
        assert_eq!(
            calls,
            [1, 2],
            "two turns, the second with two parallel calls"
        );
        // text that arrives after all joins the marker, before the step's calls
        w.append(Piece::Text, "late");
        assert_eq!(kinds(&w), ["call:c1", "text:late", "call:c2", "call:c3"]);
    }

    #[tokio::test]
    async fn pieces_of_a_step_stay_before_its_calls() {
        let mut w = writer();
        w.append(Piece::Reasoning, "think");
        w.append(Piece::Text, "Hel");
        w.append(Piece::Text, "lo");
        w.start_call("c1", "bash");
        w.append(Piece::Text, " more");
        w.start_call("c2", "bash");
        assert_eq!(
            kinds(&w),
            ["reasoning:think", "text:Hello more", "call:c1", "call:c2"]
        );
        assert_eq!(w.message.status, MessageStatus::Streaming);
        w.begin_step();
        w.append(Piece::Text, "next");
        assert_eq!(
            kinds(&w),
            [
                "reasoning:think",
                "text:Hello more",
                "call:c1",
                "call:c2",
                "text:next"
            ]
        );
        assert_eq!(w.unfinished_calls().len(), 2);
    }

    #[tokio::test]
    async fn interleaved_reasoning_keeps_its_order() {
        let mut w = writer();
        w.append(Piece::Text, "a");
        w.append(Piece::Reasoning, "r");
        w.append(Piece::Text, "b");
        assert_eq!(kinds(&w), ["text:a", "reasoning:r", "text:b"]);
    }
}
