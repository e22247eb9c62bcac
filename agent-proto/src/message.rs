//! Messages and the blocks they are made of.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    User,
    Assistant,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "user" => Some(Role::User),
            "assistant" => Some(Role::Assistant),
            _ => None,
        }
    }
}

/// Lifecycle of a message. User messages are `done` when stored. An assistant message is
/// `pending` until the model's first byte, `streaming` while its run is active, `waiting`
/// while its run is suspended (a permission prompt, a question, a pause, or `maxSteps`: it
/// goes on with `handlePermissionResponse`, `answerQuestion`, `resumeSession` or
/// `continueLoop`), then ends as `done`,
/// `cancelled` (by a client), `error` (the provider failed; see its error block) or
/// `interrupted` (the daemon stopped or crashed mid-run; the partial text is kept).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum MessageStatus {
    Pending,
    Streaming,
    Waiting,
    Done,
    Cancelled,
    Error,
    Interrupted,
}

impl MessageStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            MessageStatus::Pending => "pending",
            MessageStatus::Streaming => "streaming",
            MessageStatus::Waiting => "waiting",
            MessageStatus::Done => "done",
            MessageStatus::Cancelled => "cancelled",
            MessageStatus::Error => "error",
            MessageStatus::Interrupted => "interrupted",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "pending" => Some(MessageStatus::Pending),
            "streaming" => Some(MessageStatus::Streaming),
            "waiting" => Some(MessageStatus::Waiting),
            "done" => Some(MessageStatus::Done),
            "cancelled" => Some(MessageStatus::Cancelled),
            "error" => Some(MessageStatus::Error),
            "interrupted" => Some(MessageStatus::Interrupted),
            _ => None,
        }
    }

    /// True once no run is writing the message (it may still be continued).
    pub fn is_final(self) -> bool {
        !matches!(self, MessageStatus::Pending | MessageStatus::Streaming)
    }
}

/// Token counts reported by the provider for one message.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// One piece of a message.
// A tool call carries its whole life (arguments, result, prompt, answer); boxing it would
// add an allocation per call to save a few hundred bytes per block of a loaded message.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum Block {
    Text {
        text: String,
    },
    /// The model's reasoning ("thinking"), shown to clients. Sent back to the model only
    /// where its API requires it (docs/protocol.md 7.5).
    Reasoning {
        text: String,
        /// Opaque proof the provider attached to this reasoning (Anthropic's thinking
        /// `signature`), sent back with it exactly as received. Not for display.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
        /// Reasoning the provider returned encrypted (Anthropic's `redacted_thinking`
        /// data): `text` is empty and this is sent back as received. Not for display.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        redacted: Option<String>,
        /// The structured reasoning a chat-completions provider returned with it
        /// (OpenRouter's `reasoning_details`: a list of objects, merged per `index` as
        /// they streamed), sent back as received on the same assistant message. Not for
        /// display.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        details: Option<serde_json::Value>,
    },
    /// An image attached to a user message, kept by the daemon as a file.
    Image {
        mime_type: String,
        path: String,
    },
    /// A document (a PDF) attached to a user message, kept by the daemon as a file. Models
    /// that take documents get its bytes; others get a line naming `path` to read it with
    /// their tools.
    Document {
        /// `application/pdf`.
        mime_type: String,
        /// The daemon's copy.
        path: String,
        /// The attached file's name (`spec.pdf`), as the model is told it.
        name: String,
        /// Its size in bytes.
        size: u64,
    },
    /// A tool call the model made, with its result once there is one.
    ToolCall(ToolCallBlock),
    /// What went wrong; `message` is the raw text of the provider or tool.
    Error {
        message: String,
        kind: String,
    },
    /// The user's words steered into the running turn (`sendMessage {whenBusy: "steer"}`):
    /// the model sees them as a user message after the tool results before them. Ends a
    /// step: what the model writes next begins another.
    Steer {
        /// The `userMessageId` the send answered.
        id: String,
        text: String,
    },
}

/// A tool call the model made (`Block::ToolCall`), with its result once there is one.
/// Inlined in the schema: on the wire it is the `toolCall` block itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(inline)]
pub struct ToolCallBlock {
    pub tool_call_id: String,
    pub name: String,
    /// The arguments as parsed (and repaired if needed); `null` while they stream.
    pub arguments: serde_json::Value,
    /// The arguments exactly as the model wrote them, when that is not `arguments`
    /// (they needed repair, or could not be parsed at all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_arguments: Option<String>,
    pub status: ToolCallStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<ToolCallResult>,
    /// The resolved paths the call's permission prompt was about (set when a call on
    /// paths asks). The answer applies to exactly these: if the arguments resolve to
    /// anything else when it runs (a file swapped for a symlink meanwhile), the call
    /// fails, and a remembered grant is keyed by these paths.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_paths: Option<Vec<String>>,
    /// The permission prompt this call asked, exactly as `permissionRequested` sent it
    /// (kept so `getSession` and a re-raised prompt show what was asked).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<Box<PermissionPrompt>>,
    /// How the prompt was answered (granted, denied or cancelled): saved before the
    /// answer is acknowledged, so it holds across a restart, and there is one per call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolution: Option<PermissionResolution>,
    /// On an `ask_user_question` call: the questions as `questionRequested` sent them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub questions: Option<Vec<crate::Question>>,
    /// How the questions were answered (or declined, or cancelled): saved before the
    /// answer is acknowledged, one per call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<Box<crate::QuestionResolution>>,
    /// Opaque proof the provider attached to the call (Gemini's `thoughtSignature`),
    /// sent back with it exactly as received. Not for display.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// The id the provider gave the call, when an earlier call of this message had it
    /// already (some providers number calls per answer) and `toolCallId` was made
    /// unique; the provider is sent this id back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_call_id: Option<String>,
    /// Set when text or reasoning of the model call that made this call came after it
    /// (Anthropic's interleaved thinking: thinking, call, thinking, call): how many of
    /// the step's text and reasoning blocks (stored before its calls, docs/protocol.md
    /// 4.6) came after this call, so the step goes back to the model in the order it
    /// came. Absent: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pieces_after: Option<u32>,
}

impl ToolCallBlock {
    /// A call as the model names it, with nothing else known yet.
    pub fn new(
        tool_call_id: impl Into<String>,
        name: impl Into<String>,
        arguments: serde_json::Value,
        status: ToolCallStatus,
    ) -> ToolCallBlock {
        ToolCallBlock {
            tool_call_id: tool_call_id.into(),
            name: name.into(),
            arguments,
            raw_arguments: None,
            status,
            result: None,
            permission_paths: None,
            prompt: None,
            resolution: None,
            questions: None,
            answer: None,
            signature: None,
            provider_call_id: None,
            pieces_after: None,
        }
    }
}

/// A permission prompt as it was sent (`permissionRequested`), kept with its call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PermissionPrompt {
    pub permission_type: crate::PermissionLevel,
    /// What the call will do, in a sentence (display form).
    pub description: String,
    /// The command exactly as it will run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// The command in display form (control and invisible characters escaped).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_display: Option<String>,
    /// The command signatures a `session`/`always` answer would remember.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<Vec<String>>,
    /// The paths outside the workspace (or all paths) the call touches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paths: Option<Vec<String>>,
    /// Why the call is risky, or why it is asked every time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub risk: Option<String>,
    /// Whether `remember: session|always` would be honoured.
    pub rememberable: bool,
    /// A granted command gets network access in its sandbox (TCP, UDP and local sockets).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub network_access: bool,
    /// A granted command runs outside the OS sandbox, with the user's full rights (the
    /// model asked with `outsideSandbox`, or the sandbox is not available). Never
    /// rememberable.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub outside_sandbox: bool,
}

/// How a permission prompt was answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PermissionResolution {
    pub granted: bool,
    pub remember: crate::Remember,
    /// Resolved by a cancel (of the run, or of the agent), not by an answer.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cancelled: bool,
}

impl Block {
    /// Plain reasoning text, with nothing to send back.
    pub fn reasoning(text: impl Into<String>) -> Block {
        Block::Reasoning {
            text: text.into(),
            signature: None,
            redacted: None,
            details: None,
        }
    }
}

/// Where a tool call is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ToolCallStatus {
    /// Its arguments are still streaming.
    Streaming,
    /// Complete, not run yet.
    Ready,
    /// A client must answer a `permissionRequested` for it.
    WaitingPermission,
    /// An `ask_user_question` call: a client must answer its `questionRequested`.
    WaitingAnswer,
    /// A client granted it; it runs next.
    Approved,
    Running,
    Success,
    /// It ran (or could not run) and failed; the result says why.
    Error,
    /// The policy or a client refused it.
    Denied,
    Cancelled,
    /// The daemon stopped while it ran.
    Interrupted,
}

impl ToolCallStatus {
    /// True once the call has its result.
    pub fn is_finished(self) -> bool {
        matches!(
            self,
            ToolCallStatus::Success
                | ToolCallStatus::Error
                | ToolCallStatus::Denied
                | ToolCallStatus::Cancelled
                | ToolCallStatus::Interrupted
        )
    }
}

/// The result of a tool call as the model gets it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallResult {
    /// The text the model sees (a stub when the full output was offloaded).
    pub content: String,
    pub is_error: bool,
    /// Absolute path of the full output when it was too large to inline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offload_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
}

/// A stored message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    pub id: String,
    pub agent_id: String,
    pub role: Role,
    pub blocks: Vec<Block>,
    pub status: MessageStatus,
    pub created_at: i64,
    pub updated_at: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// On an answer made by `regenerate`: the id of the first answer to the same user
    /// message (all variants of one answer share it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant_of: Option<String>,
    /// A newer variant replaced this answer: listed, but no longer sent to the model.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub superseded: bool,
    /// On an answer: the choices its `sendMessage` made for this turn alone (every run of
    /// the answer applies them). `provider` and `model` are the ones that answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<TurnOptions>,
    /// On an answer asked for with `outputSchema`: its final answer parsed, once it was
    /// valid against the schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_output: Option<serde_json::Value>,
}

/// How much a reasoning model thinks, for one turn (`sendMessage` `reasoningEffort`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ReasoningEffort {
    Low,
    Medium,
    High,
}

impl ReasoningEffort {
    pub fn as_str(self) -> &'static str {
        match self {
            ReasoningEffort::Low => "low",
            ReasoningEffort::Medium => "medium",
            ReasoningEffort::High => "high",
        }
    }
}

/// The choices a `sendMessage` made for its turn alone, kept on the answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnOptions {
    /// The provider that answers (the agent's own unless the send named another).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// The model that answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<ReasoningEffort>,
    /// The JSON Schema the final answer must be valid against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<serde_json::Value>,
}

impl Message {
    /// A message of `role` with these blocks and status, created (and last updated) `at`:
    /// no usage yet, not a variant, not superseded.
    pub fn new(
        id: impl Into<String>,
        agent_id: impl Into<String>,
        role: Role,
        blocks: Vec<Block>,
        status: MessageStatus,
        at: i64,
    ) -> Message {
        Message {
            id: id.into(),
            agent_id: agent_id.into(),
            role,
            blocks,
            status,
            created_at: at,
            updated_at: at,
            usage: None,
            variant_of: None,
            superseded: false,
            turn: None,
            structured_output: None,
        }
    }

    /// The concatenation of the message's text blocks.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for block in &self.blocks {
            if let Block::Text { text } = block {
                out.push_str(text);
            }
        }
        out
    }
}

/// What a client sends in `sendMessage`: plain text, or a list of parts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum MessageContent {
    Text(String),
    Parts(Vec<ContentPart>),
}

impl From<&str> for MessageContent {
    fn from(s: &str) -> Self {
        MessageContent::Text(s.to_owned())
    }
}

impl From<String> for MessageContent {
    fn from(s: String) -> Self {
        MessageContent::Text(s)
    }
}

/// One part of a `sendMessage` content list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum ContentPart {
    Text {
        text: String,
    },
    /// An image: `data` as a data URL (`data:image/png;base64,...`) or as plain base64
    /// with `mimeType` (the MCP/ACP form), or an absolute file `path`. `uri` (ACP) is read
    /// when there is neither: a `file://` or `data:` URI; `http(s)` URLs are refused (the
    /// daemon does not fetch them: send the bytes).
    Image {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        data: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        path: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        uri: Option<String>,
    },
    /// A file attached by path.
    File {
        path: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn blocks_are_type_tagged_camel_case() {
        let cases = [
            (
                Block::Text { text: "hi".into() },
                json!({"type": "text", "text": "hi"}),
            ),
            (
                Block::Reasoning {
                    text: "hm".into(),
                    signature: None,
                    redacted: None,
                    details: None,
                },
                json!({"type": "reasoning", "text": "hm"}),
            ),
            (
                Block::Reasoning {
                    text: "hm".into(),
                    signature: Some("EqQB".into()),
                    redacted: None,
                    details: None,
                },
                json!({"type": "reasoning", "text": "hm", "signature": "EqQB"}),
            ),
            (
                Block::Reasoning {
                    text: String::new(),
                    signature: None,
                    redacted: Some("EmwK".into()),
                    details: None,
                },
                json!({"type": "reasoning", "text": "", "redacted": "EmwK"}),
            ),
            (
                Block::Reasoning {
                    text: String::new(),
                    signature: None,
                    redacted: None,
                    details: Some(json!([{"type": "reasoning.encrypted", "data": "gAAA"}])),
                },
                json!({"type": "reasoning", "text": "",
                    "details": [{"type": "reasoning.encrypted", "data": "gAAA"}]}),
            ),
            (
                Block::ToolCall(ToolCallBlock {
                    signature: Some("c2ln".into()),
                    provider_call_id: Some("call_0".into()),
                    pieces_after: Some(1),
                    ..ToolCallBlock::new("call_0~2", "bash", json!({}), ToolCallStatus::Ready)
                }),
                json!({"type": "toolCall", "toolCallId": "call_0~2", "name": "bash",
                    "arguments": {}, "status": "ready", "signature": "c2ln",
                    "providerCallId": "call_0", "piecesAfter": 1}),
            ),
            (
                Block::Error {
                    message: "boom".into(),
                    kind: "providerHttpError".into(),
                },
                json!({"type": "error", "message": "boom", "kind": "providerHttpError"}),
            ),
        ];
        for (block, expected) in cases {
            assert_eq!(serde_json::to_value(&block).unwrap(), expected);
            assert_eq!(serde_json::from_value::<Block>(expected).unwrap(), block);
        }
    }

    #[test]
    fn blocks_stored_before_the_replay_fields_still_read() {
        let old = json!([
            {"type": "reasoning", "text": "hm"},
            {"type": "toolCall", "toolCallId": "c1", "name": "bash", "arguments": {},
             "status": "success", "result": {"content": "ok", "isError": false}}
        ]);
        let blocks: Vec<Block> = serde_json::from_value(old.clone()).unwrap();
        assert!(matches!(
            &blocks[0],
            Block::Reasoning { text, signature: None, redacted: None, details: None } if text == "hm"
        ));
        assert!(matches!(
            &blocks[1],
            Block::ToolCall(ToolCallBlock {
                signature: None,
                provider_call_id: None,
                ..
            })
        ));
        assert_eq!(
            serde_json::to_value(&blocks).unwrap(),
            old,
            "written back unchanged"
        );
    }

    #[test]
    fn content_is_text_or_parts() {
        let text: MessageContent = serde_json::from_value(json!("hello")).unwrap();
        assert_eq!(text, MessageContent::Text("hello".into()));
        let parts: MessageContent = serde_json::from_value(json!([
            {"type": "text", "text": "look"},
            {"type": "image", "path": "/tmp/a.png", "mimeType": "image/png"}
        ]))
        .unwrap();
        assert_eq!(
            parts,
            MessageContent::Parts(vec![
                ContentPart::Text {
                    text: "look".into()
                },
                ContentPart::Image {
                    data: None,
                    path: Some("/tmp/a.png".into()),
                    mime_type: Some("image/png".into()),
                    uri: None,
                }
            ])
        );
    }
}
