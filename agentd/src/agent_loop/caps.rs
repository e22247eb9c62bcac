//! What a model (or an external ACP agent) may write into one assistant message
//! (`[limits]`): bytes of the message (text, reasoning, tool-call arguments; an ACP
//! agent's tool results too), bytes of one call's arguments, tool calls per answer.
//!
//! The run passes every piece it is about to apply through the message's [`Budget`]: a
//! piece that fits is applied whole; one that does not is cut to what fits (at a character
//! boundary), that part applied, and the answer stopped: the run drops the stream and ends
//! with an error naming the cap, its value and the key that raises it ([`Exceeded`]). The
//! calls the stop leaves without a result get one saying why. Pure: no I/O, no events.

use std::io::Write;

use agent_proto::{Block, Message, ToolCallBlock};

use crate::config::Limits;

/// The caps of a run, from `[limits]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnswerCaps {
    /// Bytes a message may hold of what the model wrote (`max_message_bytes`).
    pub message_bytes: usize,
    /// Bytes of one call's arguments (`max_tool_arguments_bytes`).
    pub tool_arguments_bytes: usize,
    /// Tool calls of one answer (`max_tool_calls_per_answer`).
    pub tool_calls: usize,
}

impl AnswerCaps {
    pub fn from_limits(limits: &Limits) -> AnswerCaps {
        AnswerCaps {
            message_bytes: limits.max_message_bytes,
            tool_arguments_bytes: limits.max_tool_arguments_bytes,
            tool_calls: limits.max_tool_calls_per_answer,
        }
    }
}

impl Default for AnswerCaps {
    fn default() -> Self {
        AnswerCaps::from_limits(&Limits::default())
    }
}

/// Which cap an answer went past.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Cap {
    MessageBytes,
    ToolArgumentsBytes,
    ToolCalls,
}

/// An answer went past a cap: what the run's error and the stopped calls' results say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Exceeded {
    pub cap: Cap,
    /// The cap's value.
    pub limit: usize,
}

impl Exceeded {
    /// The config key that raises the cap.
    pub(super) fn key(&self) -> &'static str {
        match self.cap {
            Cap::MessageBytes => "max_message_bytes",
            Cap::ToolArgumentsBytes => "max_tool_arguments_bytes",
            Cap::ToolCalls => "max_tool_calls_per_answer",
        }
    }

    /// What went past the cap, e.g. "more than 256 tool calls in one answer".
    fn what(&self) -> String {
        let limit = self.limit;
        match self.cap {
            Cap::MessageBytes => format!(
                "more than {limit} bytes{} of text, reasoning and tool-call arguments in one message",
                mib(limit)
            ),
            Cap::ToolArgumentsBytes => format!(
                "more than {limit} bytes{} of arguments for one tool call",
                mib(limit)
            ),
            Cap::ToolCalls => format!("more than {limit} tool calls in one answer"),
        }
    }

    /// The run's error: who went past which cap, what is kept, and how to allow more.
    /// `writer`: "the model", "the ACP agent".
    pub(super) fn message(&self, writer: &str) -> String {
        let verb = match self.cap {
            Cap::MessageBytes | Cap::ToolArgumentsBytes => "wrote",
            Cap::ToolCalls => "made",
        };
        format!(
            "{writer} {verb} {}, past the daemon's limit ([limits] {} = {}): its answer was \
             stopped there, what came before is kept, and the tool calls it left unfinished \
             got no answer but this. To allow more, raise {} in the [limits] section of the \
             config",
            self.what(),
            self.key(),
            self.limit,
            self.key()
        )
    }

    /// The result of a call the stop left without one. `external`: an ACP agent's call,
    /// which that agent may have started (it is told to stop); else the model's, which
    /// never ran.
    pub(super) fn call_result(&self, external: bool) -> String {
        let (what, advice) = if external {
            ("stopped: the external agent's turn was stopped", "")
        } else {
            (
                "not run: your answer was stopped",
                ". Make fewer and smaller calls per answer (write a large file in parts)",
            )
        };
        format!(
            "{what} because it had {} (the daemon's limit, [limits] {} = {}){advice}",
            self.what(),
            self.key(),
            self.limit
        )
    }
}

/// " (16 MiB)" for a whole number of MiB, else nothing.
fn mib(bytes: usize) -> String {
    const MIB: usize = 1024 * 1024;
    if bytes >= MIB && bytes.is_multiple_of(MIB) {
        format!(" ({} MiB)", bytes / MIB)
    } else {
        String::new()
    }
}

/// Counts bytes written through it, keeping none.
struct Counter(usize);

impl Write for Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Bytes of a value written as JSON, counted without building the text.
pub(super) fn json_len(value: &serde_json::Value) -> usize {
    let mut counter = Counter(0);
    // Writing a `Value` to a writer that never fails cannot fail.
    let _ = serde_json::to_writer(&mut counter, value);
    counter.0
}

/// What one message has used of its caps.
#[derive(Debug)]
pub(super) struct Budget {
    caps: AnswerCaps,
    /// Bytes the model wrote into the message so far (what it held when the run began
    /// included).
    message: usize,
    /// Calls of the answer being read.
    calls: usize,
}

impl Budget {
    /// The budget of `message`, counting what it holds already (a continued answer).
    pub(super) fn new(caps: AnswerCaps, message: &Message) -> Budget {
        let message = message
            .blocks
            .iter()
            .map(|b| match b {
                Block::Text { text } => text.len(),
                Block::Reasoning {
                    text,
                    signature,
                    redacted,
                    details,
                } => {
                    text.len()
                        + signature.as_ref().map_or(0, String::len)
                        + redacted.as_ref().map_or(0, String::len)
                        + details.as_ref().map_or(0, json_len)
                }
                Block::ToolCall(ToolCallBlock {
                    arguments,
                    raw_arguments,
                    ..
                }) => json_len(arguments) + raw_arguments.as_ref().map_or(0, String::len),
                // The user's words, not the model's.
                Block::Error { .. }
                | Block::Image { .. }
                | Block::Document { .. }
                | Block::Steer { .. } => 0,
            })
            .sum();
        Budget {
            caps,
            message,
            calls: 0,
        }
    }

    /// A new answer begins (a model call): its calls are counted from none.
    pub(super) fn new_answer(&mut self) {
        self.calls = 0;
    }

    /// An answer that goes on (an ACP turn resumed after a prompt) has made `calls` calls.
    pub(super) fn answer_goes_on(&mut self, calls: usize) {
        self.calls = calls;
    }

    /// Takes a piece of text or reasoning (or opaque reasoning data) into the message. What
    /// does not fit is cut off `piece` (at a character boundary); `Err` when anything was.
    pub(super) fn text(&mut self, piece: &mut String) -> Result<(), Exceeded> {
        let room = self.caps.message_bytes.saturating_sub(self.message);
        self.take(piece, room, Cap::MessageBytes)
    }

    /// Takes a piece of a call's arguments, of which `so_far` bytes arrived before: cut
    /// to what fits the call's cap and the message's; `Err` (the cap that bound) when
    /// anything was cut.
    pub(super) fn arguments(&mut self, so_far: usize, piece: &mut String) -> Result<(), Exceeded> {
        let call_room = self.caps.tool_arguments_bytes.saturating_sub(so_far);
        let message_room = self.caps.message_bytes.saturating_sub(self.message);
        if call_room <= message_room {
            self.take(piece, call_room, Cap::ToolArgumentsBytes)
        } else {
            self.take(piece, message_room, Cap::MessageBytes)
        }
    }

    /// Checks the arguments of a call still being written, `bytes` so far (they are
    /// counted as the message's text); `Err` when they are over the call's cap.
    pub(super) fn open_arguments(&self, bytes: usize) -> Result<(), Exceeded> {
        if bytes > self.caps.tool_arguments_bytes {
            return Err(self.exceeded(Cap::ToolArgumentsBytes));
        }
        Ok(())
    }

    /// Takes a whole thing of `bytes` that cannot be cut (an ACP agent's tool input or
    /// result): counted when it fits, `Err` when not (then nothing is counted). `arguments`:
    /// it is one call's arguments, so that cap applies too.
    pub(super) fn whole(&mut self, bytes: usize, arguments: bool) -> Result<(), Exceeded> {
        if arguments && bytes > self.caps.tool_arguments_bytes {
            return Err(self.exceeded(Cap::ToolArgumentsBytes));
        }
        if bytes > self.caps.message_bytes.saturating_sub(self.message) {
            return Err(self.exceeded(Cap::MessageBytes));
        }
        self.message += bytes;
        Ok(())
    }

    /// Counts one more call of the answer; `Err` when it is one too many (it is not
    /// counted, and must not be added to the message).
    pub(super) fn call(&mut self) -> Result<(), Exceeded> {
        if self.calls >= self.caps.tool_calls {
            return Err(self.exceeded(Cap::ToolCalls));
        }
        self.calls += 1;
        Ok(())
    }

    fn take(&mut self, piece: &mut String, room: usize, cap: Cap) -> Result<(), Exceeded> {
        if piece.len() <= room {
            self.message += piece.len();
            return Ok(());
        }
        piece.truncate(piece.floor_char_boundary(room));
        self.message += piece.len();
        Err(self.exceeded(cap))
    }

    fn exceeded(&self, cap: Cap) -> Exceeded {
        let limit = match cap {
            Cap::MessageBytes => self.caps.message_bytes,
            Cap::ToolArgumentsBytes => self.caps.tool_arguments_bytes,
            Cap::ToolCalls => self.caps.tool_calls,
        };
        Exceeded { cap, limit }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_proto::{MessageStatus, Role, ToolCallStatus};

    fn message(blocks: Vec<Block>) -> Message {
        Message::new(
            "m",
            "a",
            Role::Assistant,
            blocks,
            MessageStatus::Streaming,
            0,
        )
    }

    const CAPS: AnswerCaps = AnswerCaps {
        message_bytes: 10,
        tool_arguments_bytes: 4,
        tool_calls: 2,
    };

    #[test]
    fn pieces_are_kept_up_to_the_cap_and_cut_at_a_character_boundary() {
        // (pieces, what is kept of each, the cap that stopped them)
        let cases: &[(&[&str], &[&str], Option<Cap>)] = &[
            (&["hello", "world"], &["hello", "world"], None),
            (
                &["hello", "world!"],
                &["hello", "world"],
                Some(Cap::MessageBytes),
            ),
            // "é" is two bytes: the 10th byte is inside it, so it goes whole.
            (
                &["123456789", "é"],
                &["123456789", ""],
                Some(Cap::MessageBytes),
            ),
            (
                &["0123456789", "x"],
                &["0123456789", ""],
                Some(Cap::MessageBytes),
            ),
        ];
        for (pieces, kept, stopped) in cases {
            let mut budget = Budget::new(CAPS, &message(vec![]));
            let mut got = Vec::new();
            let mut cap = None;
            for piece in *pieces {
                let mut piece = (*piece).to_owned();
                let result = budget.text(&mut piece);
                got.push(piece);
                if let Err(e) = result {
                    cap = Some(e.cap);
                    break;
                }
            }
            assert_eq!(got, *kept, "{pieces:?}");
            assert_eq!(cap, *stopped, "{pieces:?}");
        }
    }

    #[test]
    fn arguments_answer_to_their_own_cap_and_the_messages() {
        let mut budget = Budget::new(CAPS, &message(vec![]));
        let mut piece = "{\"a\":1}".to_owned();
        let e = budget.arguments(0, &mut piece).unwrap_err();
        assert_eq!(
            (piece.as_str(), e.cap, e.limit),
            ("{\"a\"", Cap::ToolArgumentsBytes, 4)
        );
        // The message has 4 of 10 bytes; a second call's 4 fit, a third's are cut by the
        // message's cap.
        let mut piece = "[1,2".to_owned();
        budget.arguments(0, &mut piece).unwrap();
        let mut piece = "[3,4".to_owned();
        let e = budget.arguments(0, &mut piece).unwrap_err();
        assert_eq!((piece.as_str(), e.cap), ("[3", Cap::MessageBytes));
    }

    #[test]
    fn calls_are_counted_per_answer_and_wholes_fit_or_not() {
        let mut budget = Budget::new(CAPS, &message(vec![]));
        budget.call().unwrap();
        budget.call().unwrap();
        assert_eq!(budget.call().unwrap_err().cap, Cap::ToolCalls);
        budget.new_answer();
        budget.call().unwrap();
        assert_eq!(
            budget.whole(5, true).unwrap_err().cap,
            Cap::ToolArgumentsBytes
        );
        budget.whole(9, false).unwrap();
        assert_eq!(budget.whole(2, false).unwrap_err().cap, Cap::MessageBytes);
        budget.whole(1, false).unwrap();
    }

    #[test]
    fn a_continued_message_counts_what_it_holds() {
        let held = message(vec![
            Block::reasoning("abc"),
            Block::Text { text: "de".into() },
            Block::ToolCall(ToolCallBlock::new(
                "c",
                "bash",
                serde_json::json!({"a": 1}),
                ToolCallStatus::Success,
            )),
        ]);
        // 3 + 2 + 7 (`{"a":1}`): 12 bytes, over the 10 already.
        let mut budget = Budget::new(CAPS, &held);
        let mut piece = "x".to_owned();
        assert_eq!(budget.text(&mut piece).unwrap_err().cap, Cap::MessageBytes);
        assert_eq!(piece, "");
    }

    #[test]
    fn the_error_names_the_cap_its_value_and_the_key() {
        let e = Exceeded {
            cap: Cap::MessageBytes,
            limit: 16 * 1024 * 1024,
        };
        assert_eq!(
            e.message("the model"),
            "the model wrote more than 16777216 bytes (16 MiB) of text, reasoning and tool-call \
             arguments in one message, past the daemon's limit ([limits] max_message_bytes = \
             16777216): its answer was stopped there, what came before is kept, and the tool \
             calls it left unfinished got no answer but this. To allow more, raise \
             max_message_bytes in the [limits] section of the config"
        );
        let e = Exceeded {
            cap: Cap::ToolCalls,
            limit: 256,
        };
        assert_eq!(
            e.call_result(false),
            "not run: your answer was stopped because it had more than 256 tool calls in one \
             answer (the daemon's limit, [limits] max_tool_calls_per_answer = 256). Make fewer \
             and smaller calls per answer (write a large file in parts)"
        );
        assert!(
            e.message("the ACP agent")
                .starts_with("the ACP agent made more than 256")
        );
        assert!(
            e.call_result(true)
                .starts_with("stopped: the external agent's turn")
        );
        assert_eq!(json_len(&serde_json::json!({"path": "é"})), 13);
    }
}
