//! The assistant message being written: how streamed pieces become blocks, and when the
//! message is saved: at most every 250 ms while it changes (streamed pieces, tool calls
//! starting and ending), before the first call of a step runs (so a crash while a tool
//! runs leaves its call in the stored message), and at once where the run stops for a
//! client or ends (a prompt, a question, the end of the run). A tool call's start and end
//! are recorded in the store at once, each on its own (a few small statements), with the
//! message only then or when its timed save is due ([`MessageWriter::record`]): saving
//! the whole message per call made an answer of many calls quadratic. After a crash, the
//! calls the last save of the message missed get their results back from those records
//! (`restore_results`).
//!
//! A timed save while streaming runs beside the stream ([`MessageWriter::save_soon`]): the
//! run never waits for the store's single writer there, so many agents streaming at once
//! do not hold each other's deltas up behind their saves. One save per message is in
//! flight at a time (a newer one waits for the next interval), and every awaited save
//! first waits for it, so saves land in order.

use std::collections::HashMap;
use std::time::Duration;

use agent_proto::{
    Block, Message, MessageStatus, SessionStatus, ToolCallBlock, ToolCallStatus, Usage,
};
use serde_json::Value;
use tokio::time::Instant;

use tokio::sync::oneshot;

use crate::store::{SaveDone, Store, StoreError, ToolRecord, now_ms};

/// Longest time streamed text stays only in memory.
pub const FLUSH_INTERVAL: Duration = Duration::from_millis(250);

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Piece {
    Text,
    Reasoning,
}

/// Adds a streamed piece to the step whose pieces are `blocks[start..end]` (its tool calls
/// follow): the last piece is extended when it is of the same kind and no call of the step
/// came after it, else a new block goes at `end`. Only the last piece before the calls is
/// extended, so text, reasoning, text keeps its order; signed, redacted or detailed
/// reasoning is complete and never extended. A new piece after calls of its step (interleaved thinking)
/// is counted in their `piecesAfter`, so the step goes back in the order it came. The
/// message writer and the session's mirror both build blocks by this one rule
/// (docs/protocol.md 4.6).
pub(crate) fn append_piece(
    blocks: &mut Vec<Block>,
    start: usize,
    end: usize,
    piece: Piece,
    delta: &str,
) {
    let after_call = call_after_last_piece(blocks, end);
    let last = (end > start && !after_call).then(|| &mut blocks[end - 1]);
    match (last, piece) {
        (Some(Block::Text { text }), Piece::Text)
        | (
            Some(Block::Reasoning {
                text,
                signature: None,
                redacted: None,
                details: None,
            }),
            Piece::Reasoning,
        ) => text.push_str(delta),
        _ => {
            let block = match piece {
                Piece::Text => Block::Text {
                    text: delta.to_owned(),
                },
                Piece::Reasoning => Block::reasoning(delta),
            };
            insert_piece(blocks, end, block);
        }
    }
}

/// Whether a call of the step whose calls start at `end` came after its last piece: one
/// that no piece has followed yet.
fn call_after_last_piece(blocks: &[Block], end: usize) -> bool {
    blocks[end.min(blocks.len())..].iter().any(|b| {
        matches!(
            b,
            Block::ToolCall(ToolCallBlock {
                pieces_after: None,
                ..
            })
        )
    })
}

/// Inserts a new piece at `end`, the end of its step's pieces: every call of the step (the
/// blocks after it) came before it.
fn insert_piece(blocks: &mut Vec<Block>, end: usize, block: Block) {
    blocks.insert(end, block);
    for b in &mut blocks[end + 1..] {
        if let Block::ToolCall(call) = b {
            call.pieces_after = Some(call.pieces_after.unwrap_or(0).saturating_add(1));
        }
    }
}

/// Where each tool call block of a message is, by call id, so a call is found in a step
/// or two however many the message has and in whatever order calls are looked up (an
/// external agent's calls end in any order; a scan of the blocks per lookup made a turn of
/// thousands of calls quadratic). Blocks are only inserted, never removed (a step's pieces
/// go before its calls, an empty text at a step's start), so a call only moves toward the
/// end: the search starts where it was last seen and goes forward. The message writer and
/// the session's mirror both keep one.
#[derive(Debug, Default)]
pub(crate) struct CallIndex {
    at: HashMap<String, usize>,
}

impl CallIndex {
    /// The index of the calls of `blocks`.
    pub(crate) fn of(blocks: &[Block]) -> CallIndex {
        let at = blocks
            .iter()
            .enumerate()
            .filter_map(|(i, b)| match b {
                Block::ToolCall(ToolCallBlock { tool_call_id, .. }) => {
                    Some((tool_call_id.clone(), i))
                }
                _ => None,
            })
            .collect();
        CallIndex { at }
    }

    /// Whether a call has this id.
    pub(crate) fn contains(&self, id: &str) -> bool {
        self.at.contains_key(id)
    }

    /// A call block was just put at `index`.
    pub(crate) fn note(&mut self, id: &str, index: usize) {
        self.at.insert(id.to_owned(), index);
    }

    /// The index of the call block `id` in `blocks`, without noting where it was found.
    pub(crate) fn locate(&self, blocks: &[Block], id: &str) -> Option<usize> {
        let is = |i: &usize| matches!(&blocks[*i], Block::ToolCall(ToolCallBlock { tool_call_id, .. }) if tool_call_id == id);
        let from = self.at.get(id).copied().unwrap_or(0).min(blocks.len());
        // Not where it could be (a message this index was not built from): all of it.
        (from..blocks.len()).find(is).or_else(|| (0..from).find(is))
    }

    /// The index of the call block `id` in `blocks`, noted for the next look-up.
    pub(crate) fn find(&mut self, blocks: &[Block], id: &str) -> Option<usize> {
        let found = self.locate(blocks, id)?;
        match self.at.get_mut(id) {
            Some(at) => *at = found,
            None => self.note(id, found),
        }
        Some(found)
    }
}

/// Whether the step whose blocks start at `start` has a text block: among its pieces,
/// which come before its calls (so the calls are not looked through).
pub(crate) fn step_has_text(blocks: &[Block], start: usize) -> bool {
    blocks[start.min(blocks.len())..]
        .iter()
        .take_while(|b| !matches!(b, Block::ToolCall(ToolCallBlock { .. })))
        .any(|b| matches!(b, Block::Text { .. }))
}

pub(super) struct MessageWriter {
    pub message: Message,
    store: Store,
    dirty: bool,
    last_flush: Instant,
    /// Index of the first block of the current step (model call).
    step_start: usize,
    /// A timed save still being written.
    saving: Option<SaveDone>,
    /// Where the message's calls are, by id (each id is unique in it).
    calls: CallIndex,
    /// How many blocks the message had when it was last saved (or read).
    saved_blocks: usize,
    /// A call of the current step got its result: the next piece or call begins a new
    /// step (the rule clients rebuild messages by, docs/protocol.md 4.6). An external ACP
    /// agent's turn is one model call whose text and calls alternate: without it, every
    /// piece went before all the turn's calls, found and inserted there at a cost that grew
    /// with the turn.
    step_over: bool,
}

impl MessageWriter {
    pub(super) fn new(message: Message, store: Store) -> Self {
        let step_start = message.blocks.len();
        let calls = CallIndex::of(&message.blocks);
        MessageWriter {
            message,
            store,
            dirty: false,
            last_flush: Instant::now(),
            step_start,
            saving: None,
            calls,
            saved_blocks: step_start,
            step_over: false,
        }
    }

    pub(super) fn id(&self) -> &str {
        &self.message.id
    }

    /// Marks the start of a new model call: its pieces go after everything so far.
    pub(super) fn begin_step(&mut self) {
        self.step_start = self.message.blocks.len();
        self.step_over = false;
    }

    /// A call of the current step got its result (see `step_over`).
    pub(super) fn result_given(&mut self) {
        self.step_over = true;
    }

    /// A piece or a call comes: after a result, it begins a new step.
    fn new_step_if_over(&mut self) {
        if self.step_over {
            self.begin_step();
        }
    }

    pub(super) fn set_status(&mut self, status: MessageStatus) {
        if self.message.status != status {
            self.message.status = status;
            self.dirty = true;
        }
    }

    /// Where the current step's pieces end: its first tool call, or the end.
    fn pieces_end(&self) -> usize {
        let blocks = &self.message.blocks;
        blocks[self.step_start..]
            .iter()
            .position(|b| matches!(b, Block::ToolCall(ToolCallBlock { .. })))
            .map_or(blocks.len(), |i| i + self.step_start)
    }

    fn streaming(&mut self) {
        if self.message.status == MessageStatus::Pending {
            self.message.status = MessageStatus::Streaming;
        }
        self.dirty = true;
    }

    /// Appends streamed text or reasoning to the current step. Pieces of a step stay
    /// before its tool calls, so a step always reads as "what the model said, then what
    /// it called" (which is how it goes back to the model).
    pub(super) fn append(&mut self, piece: Piece, delta: &str) {
        self.new_step_if_over();
        self.streaming();
        let end = self.pieces_end();
        append_piece(&mut self.message.blocks, self.step_start, end, piece, delta);
    }

    /// The provider's signature for the reasoning just streamed: it closes that reasoning
    /// block (a signature with no reasoning before it gets an empty block of its own).
    pub(super) fn sign_reasoning(&mut self, signature: String) {
        self.streaming();
        let end = self.pieces_end();
        let after_call = call_after_last_piece(&self.message.blocks, end);
        let blocks = &mut self.message.blocks;
        let last = (end > self.step_start && !after_call).then(|| &mut blocks[end - 1]);
        if let Some(Block::Reasoning {
            signature: slot @ None,
            redacted: None,
            details: None,
            ..
        }) = last
        {
            *slot = Some(signature);
            return;
        }
        insert_piece(
            blocks,
            end,
            Block::Reasoning {
                text: String::new(),
                signature: Some(signature),
                redacted: None,
                details: None,
            },
        );
    }

    /// Reasoning the provider sent encrypted: a block of its own, kept to be sent back.
    pub(super) fn push_redacted_reasoning(&mut self, data: String) {
        self.streaming();
        let end = self.pieces_end();
        insert_piece(
            &mut self.message.blocks,
            end,
            Block::Reasoning {
                text: String::new(),
                signature: None,
                redacted: Some(data),
                details: None,
            },
        );
    }

    /// The structured reasoning of this step (OpenRouter's `reasoning_details`), kept to be
    /// sent back: on the step's last reasoning block that has nothing of the provider's
    /// yet, else on an empty reasoning block of its own after the step's pieces. It goes
    /// back with the step whatever its place, so it is not counted as a piece after calls.
    pub(super) fn add_reasoning_details(&mut self, value: Value) {
        self.streaming();
        let end = self.pieces_end();
        let blocks = &mut self.message.blocks;
        let last_reasoning = blocks[self.step_start.min(end)..end]
            .iter_mut()
            .rev()
            .find_map(|b| match b {
                Block::Reasoning {
                    signature: None,
                    redacted: None,
                    details: slot @ None,
                    ..
                } => Some(slot),
                _ => None,
            });
        match last_reasoning {
            Some(slot) => *slot = Some(value),
            None => blocks.insert(
                end,
                Block::Reasoning {
                    text: String::new(),
                    signature: None,
                    redacted: None,
                    details: Some(value),
                },
            ),
        }
    }

    /// Adds a tool call whose arguments are about to stream; returns its id in the
    /// message. A step that opens with a call right after the calls of the step before gets
    /// an empty text block first, so the two steps stay two model turns when replayed (not
    /// one turn with all the calls). An id an earlier call of the message has already (some
    /// providers number calls per answer) gets a suffix, `~2`, `~3`..., and the provider's
    /// id is kept in `providerCallId` to be sent back to it.
    pub(super) fn start_call(&mut self, provider_id: &str, name: &str) -> String {
        self.new_step_if_over();
        self.streaming();
        let blocks = &self.message.blocks;
        let step_has_text = step_has_text(blocks, self.step_start);
        let after_calls = self.step_start > 0
            && matches!(
                blocks.get(self.step_start - 1),
                Some(Block::ToolCall(ToolCallBlock { .. }))
            );
        if !step_has_text && after_calls {
            self.message.blocks.insert(
                self.step_start,
                Block::Text {
                    text: String::new(),
                },
            );
        }
        let taken = |id: &str| self.calls.contains(id);
        let (id, provider_call_id) = if taken(provider_id) {
            let unique = (2..)
                .map(|n| format!("{provider_id}~{n}"))
                .find(|id| !taken(id))
                .unwrap_or_else(|| format!("call_{}", uuid::Uuid::new_v4().simple()));
            (unique, Some(provider_id.to_owned()))
        } else {
            (provider_id.to_owned(), None)
        };
        self.calls.note(&id, self.message.blocks.len());
        self.message.blocks.push(Block::ToolCall(ToolCallBlock {
            provider_call_id,
            ..ToolCallBlock::new(id.clone(), name, Value::Null, ToolCallStatus::Streaming)
        }));
        id
    }

    /// The tool call block with this id.
    pub(super) fn call_mut(&mut self, tool_call_id: &str) -> Option<&mut ToolCallBlock> {
        self.dirty = true;
        let index = self.calls.find(&self.message.blocks, tool_call_id)?;
        match &mut self.message.blocks[index] {
            Block::ToolCall(call) => Some(call),
            _ => None,
        }
    }

    /// The name of a call, read without marking the message changed.
    pub(super) fn call_name(&self, tool_call_id: &str) -> Option<&str> {
        match &self.message.blocks[self.calls.locate(&self.message.blocks, tool_call_id)?] {
            Block::ToolCall(ToolCallBlock { name, .. }) => Some(name.as_str()),
            _ => None,
        }
    }

    /// Ids of the calls that have no result yet, in order, with their status.
    pub(super) fn unfinished_calls(&self) -> Vec<(String, ToolCallStatus)> {
        self.message
            .blocks
            .iter()
            .filter_map(|b| match b {
                Block::ToolCall(ToolCallBlock {
                    tool_call_id,
                    status,
                    ..
                }) if !status.is_finished() => Some((tool_call_id.clone(), *status)),
                _ => None,
            })
            .collect()
    }

    /// Adds one call's token counts to the message's.
    pub(super) fn add_usage(&mut self, usage: Usage) {
        let total = self.message.usage.get_or_insert_with(Usage::default);
        total.input_tokens += usage.input_tokens;
        total.output_tokens += usage.output_tokens;
        self.dirty = true;
    }

    pub(super) fn push_block(&mut self, block: Block) {
        self.message.blocks.push(block);
        self.dirty = true;
    }

    /// The text the current step wrote (its text blocks before its calls, joined).
    pub(super) fn step_text(&self) -> String {
        let blocks = &self.message.blocks;
        blocks[self.step_start.min(blocks.len())..]
            .iter()
            .take_while(|b| !matches!(b, Block::ToolCall(ToolCallBlock { .. })))
            .filter_map(|b| match b {
                Block::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The final answer parsed, valid against the turn's output schema.
    pub(super) fn set_structured_output(&mut self, value: serde_json::Value) {
        self.message.structured_output = Some(value);
        self.dirty = true;
    }

    /// When the next timed save is due, if there is something to save.
    pub(super) fn flush_due(&self) -> Option<Instant> {
        self.dirty.then(|| self.last_flush + FLUSH_INTERVAL)
    }

    /// A timed save: started beside the run, which goes on at once. While the previous one
    /// is still being written it waits for the next interval. `Err`: the previous one
    /// failed.
    pub(super) fn save_soon(&mut self) -> Result<(), StoreError> {
        self.last_flush = Instant::now();
        if let Some(mut saving) = self.saving.take() {
            match saving.try_recv() {
                Err(oneshot::error::TryRecvError::Empty) => {
                    self.saving = Some(saving);
                    return Ok(());
                }
                Ok(result) => result?,
                Err(oneshot::error::TryRecvError::Closed) => lost()?,
            }
        }
        self.message.updated_at = now_ms();
        // Queued with the other agents' timed saves (`store/saves.rs`).
        self.saving = Some(self.store.save_soon(self.message.clone()));
        self.dirty = false;
        self.saved_blocks = self.message.blocks.len();
        Ok(())
    }

    /// Saves the message now (after the timed save in flight, if any).
    pub(super) async fn flush(&mut self) -> Result<(), StoreError> {
        self.save_now(With::Nothing).await
    }

    /// Records a tool call's start or end. The message goes with it (one round trip) when
    /// its timed save is due; otherwise the record goes alone and the message waits for
    /// its timed save, which the run keeps while tools run (`Run::saving_while`): after a
    /// crash, the ends recorded give the calls their results back. A save of the whole
    /// message per call cost each call the size of the message: quadratic in the calls of
    /// one answer (4,000 calls took a minute of CPU).
    pub(super) async fn record(&mut self, record: ToolRecord<'_>) -> Result<(), StoreError> {
        if self.flush_due().is_some_and(|due| due <= Instant::now()) {
            return self.save_now(With::Tool(record)).await;
        }
        self.store.record_tool(&self.message.id, record).await
    }

    /// Records that a call starts to run, as [`MessageWriter::record`], but the message goes
    /// too when it has blocks its last save did not have: a call about to run is in the
    /// stored message (with the calls of its step), so a crash while it runs leaves it
    /// there, interrupted. The calls after the first of a step add no block: recorded
    /// alone.
    pub(super) async fn record_start(&mut self, record: ToolRecord<'_>) -> Result<(), StoreError> {
        if self.message.blocks.len() != self.saved_blocks {
            return self.save_now(With::Tool(record)).await;
        }
        self.record(record).await
    }

    /// The run's last save: the message and the agent's session status after the run, in
    /// one round trip.
    pub(super) async fn flush_finished(&mut self, status: SessionStatus) -> Result<(), StoreError> {
        self.save_now(With::Status(status)).await
    }

    async fn save_now(&mut self, with: With<'_>) -> Result<(), StoreError> {
        if let Some(saving) = self.saving.take() {
            settled(saving.await)?;
        }
        self.message.updated_at = now_ms();
        let store = &self.store;
        match with {
            With::Nothing => store.update_message(&self.message).await?,
            With::Tool(record) => store.update_message_and_tool(&self.message, record).await?,
            With::Status(status) => {
                store
                    .update_message_and_status(&self.message, status)
                    .await?
            }
        }
        self.dirty = false;
        self.saved_blocks = self.message.blocks.len();
        self.last_flush = Instant::now();
        Ok(())
    }
}

/// What a save writes besides the message, in the same round trip.
enum With<'a> {
    Nothing,
    Tool(ToolRecord<'a>),
    Status(SessionStatus),
}

/// The outcome of a finished timed save.
fn settled(
    done: Result<Result<(), StoreError>, oneshot::error::RecvError>,
) -> Result<(), StoreError> {
    done.unwrap_or_else(|_| lost())
}

/// A timed save whose writer was cut off (the runtime is stopping) before it answered.
fn lost() -> Result<(), StoreError> {
    tracing::error!("a timed save of the message did not finish");
    Err(StoreError::WriteLost {
        what: "a streaming message",
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_proto::Role;

    fn writer() -> MessageWriter {
        // The store is never touched by these tests (no flush).
        let message = Message::new("m", "a", Role::Assistant, vec![], MessageStatus::Pending, 0);
        MessageWriter {
            message,
            store: crate::store::Store::detached_for_tests(),
            dirty: false,
            last_flush: Instant::now(),
            step_start: 0,
            saving: None,
            calls: CallIndex::default(),
            saved_blocks: 0,
            step_over: false,
        }
    }

    #[tokio::test]
    async fn timed_saves_run_beside_the_stream_and_land_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("agentd.db")).await.unwrap();
        store
            .insert_agent(&crate::store::tests::new_agent("a", "t", 1))
            .await
            .unwrap();
        let mut w = writer();
        w.store = store.clone();
        let user = Message {
            id: "u".into(),
            role: Role::User,
            status: MessageStatus::Done,
            ..w.message.clone()
        };
        store
            .insert_run_messages(&crate::store::RunMessages {
                user,
                assistant: w.message.clone(),
                client_request_id: None,
            })
            .await
            .unwrap();
        let mut expected = String::new();
        for i in 0..200 {
            let piece = format!("{i} ");
            w.append(Piece::Text, &piece);
            expected.push_str(&piece);
            // Never waits: a save still in flight makes this one wait for the next turn.
            w.save_soon().unwrap();
        }
        w.set_status(MessageStatus::Done);
        w.flush().await.unwrap();
        let stored = store.get_message("m").await.unwrap().unwrap();
        assert_eq!(stored.text(), expected);
        assert_eq!(stored.status, MessageStatus::Done);
    }

    fn kinds(w: &MessageWriter) -> Vec<String> {
        w.message
            .blocks
            .iter()
            .map(|b| match b {
                Block::Text { text } => format!("text:{text}"),
                Block::Reasoning {
                    text,
                    signature,
                    redacted,
                    ..
                } => match (signature, redacted) {
                    (_, Some(data)) => format!("redacted:{data}"),
                    (Some(sig), None) => format!("reasoning:{text}#{sig}"),
                    (None, None) => format!("reasoning:{text}"),
                },
                Block::ToolCall(ToolCallBlock {
                    tool_call_id,
                    provider_call_id: Some(original),
                    ..
                }) => format!("call:{tool_call_id}({original})"),
                Block::ToolCall(ToolCallBlock { tool_call_id, .. }) => {
                    format!("call:{tool_call_id}")
                }
                Block::Error { .. } => "error".into(),
                Block::Image { .. } => "image".into(),
                Block::Document { .. } => "document".into(),
                Block::Steer { .. } => "steer".into(),
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
        // text that arrives after all is a block of its own before the step's calls (they
        // came before it)
        w.append(Piece::Text, "late");
        assert_eq!(
            kinds(&w),
            ["call:c1", "text:", "text:late", "call:c2", "call:c3"]
        );
        assert_eq!(pieces_after(&w), [None, Some(1), Some(1)]);
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
            [
                "reasoning:think",
                "text:Hello",
                "text: more",
                "call:c1",
                "call:c2"
            ]
        );
        assert_eq!(w.message.status, MessageStatus::Streaming);
        w.begin_step();
        w.append(Piece::Text, "next");
        assert_eq!(
            kinds(&w),
            [
                "reasoning:think",
                "text:Hello",
                "text: more",
                "call:c1",
                "call:c2",
                "text:next"
            ]
        );
        assert_eq!(w.unfinished_calls().len(), 2);
    }

    #[tokio::test]
    async fn signed_and_redacted_reasoning_are_closed_blocks() {
        let mut w = writer();
        w.append(Piece::Reasoning, "one ");
        w.append(Piece::Reasoning, "two");
        w.sign_reasoning("s1".into());
        w.append(Piece::Reasoning, "three");
        w.push_redacted_reasoning("enc".into());
        w.append(Piece::Reasoning, "four");
        w.append(Piece::Text, "answer");
        w.sign_reasoning("s2".into());
        w.start_call("c1", "bash");
        w.sign_reasoning("s3".into());
        assert_eq!(
            kinds(&w),
            [
                "reasoning:one two#s1",
                "reasoning:three",
                "redacted:enc",
                "reasoning:four",
                "text:answer",
                "reasoning:#s2",
                "reasoning:#s3",
                "call:c1",
            ]
        );
    }

    /// Each call's `piecesAfter`, in order.
    fn pieces_after(w: &MessageWriter) -> Vec<Option<u32>> {
        w.message
            .blocks
            .iter()
            .filter_map(|b| match b {
                Block::ToolCall(ToolCallBlock { pieces_after, .. }) => Some(*pieces_after),
                _ => None,
            })
            .collect()
    }

    #[tokio::test]
    async fn pieces_after_a_call_of_their_step_are_counted_on_it_never_joined_across_it() {
        // Interleaved thinking: thinking, call, thinking, call, then text.
        let mut w = writer();
        w.append(Piece::Reasoning, "a");
        w.sign_reasoning("s1".into());
        w.start_call("c1", "bash");
        w.append(Piece::Reasoning, "b");
        w.sign_reasoning("s2".into());
        w.start_call("c2", "bash");
        w.append(Piece::Text, "done");
        w.append(Piece::Text, " now");
        assert_eq!(
            kinds(&w),
            [
                "reasoning:a#s1",
                "reasoning:b#s2",
                "text:done now",
                "call:c1",
                "call:c2"
            ]
        );
        assert_eq!(pieces_after(&w), [Some(2), Some(1)]);

        // Text, call, text: two blocks, not one text joined across the call.
        let mut w = writer();
        w.append(Piece::Text, "x");
        w.start_call("c1", "bash");
        w.append(Piece::Text, "y");
        w.append(Piece::Reasoning, "r");
        w.push_redacted_reasoning("enc".into());
        assert_eq!(
            kinds(&w),
            ["text:x", "text:y", "reasoning:r", "redacted:enc", "call:c1"]
        );
        assert_eq!(pieces_after(&w), [Some(3)]);

        // The usual step (pieces, then calls) has no count.
        let mut w = writer();
        w.append(Piece::Reasoning, "a");
        w.append(Piece::Text, "x");
        w.start_call("c1", "bash");
        w.start_call("c2", "bash");
        assert_eq!(pieces_after(&w), [None, None]);
    }

    #[tokio::test]
    async fn a_reused_call_id_is_made_unique_and_the_providers_is_kept() {
        let mut w = writer();
        assert_eq!(w.start_call("call_0", "bash"), "call_0");
        w.begin_step();
        assert_eq!(w.start_call("call_0", "bash"), "call_0~2");
        assert_eq!(w.start_call("call_1", "bash"), "call_1");
        w.begin_step();
        assert_eq!(w.start_call("call_0", "bash"), "call_0~3");
        assert_eq!(
            kinds(&w),
            [
                "call:call_0",
                "text:",
                "call:call_0~2(call_0)",
                "call:call_1",
                "text:",
                "call:call_0~3(call_0)"
            ]
        );
        assert!(w.call_mut("call_0~2").is_some());
        let steps = crate::context::steps(&w.message);
        let ids: Vec<Vec<(&str, &str)>> = steps
            .iter()
            .map(|s| s.calls.iter().map(|c| (c.id, c.provider_id)).collect())
            .collect();
        assert_eq!(
            ids,
            [
                vec![("call_0", "call_0")],
                vec![("call_0~2", "call_0"), ("call_1", "call_1")],
                vec![("call_0~3", "call_0")],
            ]
        );
    }

    #[tokio::test]
    async fn a_piece_or_call_after_a_result_begins_a_new_step() {
        let mut w = writer();
        w.append(Piece::Text, "a");
        w.start_call("c1", "t");
        w.result_given();
        w.append(Piece::Reasoning, "r");
        w.append(Piece::Text, "b");
        w.start_call("c2", "t");
        w.result_given();
        w.start_call("c3", "t");
        // A piece after the step's call joins its step, never an earlier one; it stays
        // before the step's calls, and the call says it came first (`piecesAfter`), so the
        // step goes back to the model in the order it came.
        w.append(Piece::Text, "c");
        assert_eq!(
            kinds(&w),
            [
                "text:a",
                "call:c1",
                "reasoning:r",
                "text:b",
                "call:c2",
                "text:",
                "text:c",
                "call:c3"
            ]
        );
        let c3 = w.call_mut("c3").unwrap();
        assert_eq!(c3.pieces_after, Some(1));
    }

    #[tokio::test]
    async fn calls_are_found_in_any_order_after_blocks_moved() {
        let mut w = writer();
        let ids: Vec<String> = (0..50).map(|i| format!("c{i}")).collect();
        for id in &ids {
            w.start_call(id, "t");
        }
        // A piece goes before the step's calls: every call moves one block on.
        w.append(Piece::Text, "before them");
        for id in ids.iter().rev().chain(ids.iter().step_by(7)) {
            assert_eq!(w.call_name(id), Some("t"));
            let found = w.call_mut(id).map(|c| c.tool_call_id.clone());
            assert_eq!(found.as_ref(), Some(id));
        }
        assert!(w.call_mut("nope").is_none());
        assert_eq!(kinds(&w)[..2], ["text:before them", "call:c0"]);
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
