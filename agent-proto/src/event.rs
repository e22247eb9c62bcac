//! Events: notifications about an agent, delivered on a `subscribe` subscription.
//!
//! Every event carries `seq`: per agent, each event is exactly one above the previous one,
//! so a gap means a lost event. Seqs are never reused and survive a daemon restart (after a
//! crash they may jump forward; a client that sees a jump reloads with `listMessages`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::agent::{Agent, PermissionLevel, SessionStatus};
use crate::message::{Message, MessageStatus, ToolCallStatus};
use crate::plan::PlanItem;
use crate::question::{Question, QuestionAnswer};

/// A piece of a running command's output, in a `toolProgress` event: the text one
/// stream wrote since the previous piece (whole characters; bytes that are not UTF-8
/// replaced by U+FFFD).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LiveOutput {
    pub stream: OutputStream,
    pub text: String,
}

/// Which of a command's streams a [`LiveOutput`] comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum OutputStream {
    Stdout,
    Stderr,
}

/// Name of the JSON-RPC notification method that carries events.
pub const EVENT_NOTIFICATION: &str = "event";

/// Every event `type` the protocol has, in the order of [`EventKind`].
pub const EVENT_TYPES: &[&str] = &[
    "statusChanged",
    "userMessage",
    "messageStarted",
    "textDelta",
    "reasoningDelta",
    "usage",
    "toolCallStarted",
    "toolCallArgsDelta",
    "toolCallReady",
    "permissionRequested",
    "permissionResolved",
    "toolProgress",
    "toolResult",
    "summarized",
    "messageCompleted",
    "loopFinished",
    "error",
    "agentCreated",
    "agentUpdated",
    "agentDeleted",
    "resyncRequired",
    "snapshot",
    "mcpServerStatus",
    "planUpdated",
    "queueUpdated",
    "steered",
    "questionRequested",
    "questionResolved",
    "backgroundTaskFinished",
    "reverted",
];

/// An event about one agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    pub seq: u64,
    /// The agent the event is about. Empty only on a `resyncRequired` sent to a subscription
    /// of all agents, which then concerns every agent.
    pub agent_id: String,
    /// Unix ms when the daemon emitted the event.
    pub at: i64,
    #[serde(flatten)]
    pub kind: EventKind,
}

/// Why a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum LoopFinishReason {
    /// The model gave its final answer.
    Completed,
    /// A client cancelled, or the daemon stopped the run while shutting down.
    Cancelled,
    MaxSteps,
    /// The model's answer reached its output token limit; the message keeps what was
    /// written and `continueLoop` goes on from it. A tool call whose arguments were cut
    /// was not run (its result says so).
    MaxTokens,
    WaitingPermission,
    /// The model asked the user (`questionRequested`); `answerQuestion` resumes the run.
    WaitingQuestion,
    Paused,
    /// The provider refused or filtered the answer; `error` holds its words.
    Refused,
    /// The provider failed; an `error` event came before.
    Error,
}

/// The payload of an event, tagged by `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(
    tag = "type",
    rename_all = "camelCase",
    rename_all_fields = "camelCase"
)]
pub enum EventKind {
    StatusChanged {
        status: SessionStatus,
    },
    /// A user message was stored (so other clients see it).
    UserMessage {
        message: Message,
    },
    /// A run starts writing an assistant message (a new one, or one it continues) and the
    /// model is being called. The run's first piece begins a new block.
    MessageStarted {
        message_id: String,
        /// The message as the run starts it, when it is new but not empty: a variant made
        /// by `regenerate` starts with the earlier steps of the answer it replaces.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<Box<Message>>,
    },
    TextDelta {
        message_id: String,
        delta: String,
    },
    ReasoningDelta {
        message_id: String,
        delta: String,
    },
    Usage {
        message_id: String,
        input_tokens: u64,
        output_tokens: u64,
    },
    /// The model started a tool call (its arguments stream next).
    ToolCallStarted {
        message_id: String,
        tool_call_id: String,
        name: String,
    },
    ToolCallArgsDelta {
        message_id: String,
        tool_call_id: String,
        delta: String,
    },
    /// The call is complete; `arguments` are parsed (and repaired if needed).
    ToolCallReady {
        message_id: String,
        tool_call_id: String,
        name: String,
        arguments: serde_json::Value,
    },
    /// A client must allow or deny this call with `handlePermissionResponse`; the run has
    /// ended (`loopFinished` with `waitingPermission` follows) and resumes on the answer.
    PermissionRequested {
        message_id: String,
        tool_call_id: String,
        tool_name: String,
        permission_type: PermissionLevel,
        /// What the call will do, in a sentence.
        description: String,
        arguments: serde_json::Value,
        /// The command exactly as it will run.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        command: Option<String>,
        /// The command as a client should show it: control and invisible characters (`\r`,
        /// ESC, bidirectional overrides, zero-width spaces) escaped, so what is shown is
        /// what runs. `description` and `risk` are in this form already.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        command_display: Option<String>,
        /// The command signatures a `session`/`always` answer would remember.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<Vec<String>>,
        /// The paths outside the workspace (or all paths) the call touches.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        paths: Option<Vec<String>>,
        /// Why the call is risky, if it is; a risky call is never covered by a remembered
        /// grant.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        risk: Option<String>,
        /// Whether `remember: session|always` would be honoured for this call.
        rememberable: bool,
        /// A granted command gets the network in its sandbox (TCP, UDP, local sockets).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        network_access: bool,
        /// A granted command runs outside the OS sandbox, with the user's full rights
        /// (never rememberable).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        outside_sandbox: bool,
    },
    /// The prompt was answered (the first answer wins) or cancelled.
    PermissionResolved {
        message_id: String,
        tool_call_id: String,
        granted: bool,
        remember: Remember,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        cancelled: bool,
    },
    ToolResult {
        message_id: String,
        tool_call_id: String,
        /// success, error, denied, cancelled or interrupted.
        status: ToolCallStatus,
        /// What the model gets (a stub when the output was offloaded).
        content: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        offload_path: Option<String>,
        duration_ms: u64,
    },
    /// Progress of a running tool call: as its MCP server reports it, or a running
    /// `bash` command's output as it comes (`output`; then `progress` is the bytes of
    /// output text sent so far for the call, this event's included).
    ToolProgress {
        message_id: String,
        tool_call_id: String,
        progress: f64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        total: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
        /// A piece of a running command's output (absent for MCP progress).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output: Option<LiveOutput>,
    },
    /// Earlier rounds were folded into a model-written summary (the messages stay in the
    /// store). Token counts are estimates of the request before and after.
    Summarized {
        message_id: String,
        before_tokens: u64,
        after_tokens: u64,
        /// Messages the summary replaces, for the model.
        summarized_messages: u64,
        /// The last message it covers.
        through_message_id: String,
    },
    MessageCompleted {
        message_id: String,
        status: MessageStatus,
        /// The final answer parsed, when the turn asked for `outputSchema` and the answer
        /// was valid against it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        structured_output: Option<serde_json::Value>,
    },
    /// The run's last event.
    LoopFinished {
        /// The assistant message the run wrote (the one its `messageStarted` named).
        message_id: String,
        reason: LoopFinishReason,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// Something failed. `message` is the raw text of the provider (or tool), never only a
    /// code; `retryable` says whether sending again may work. With `retry`, it is a notice:
    /// the model call failed before its first byte and is sent again after
    /// `retry.delayMs` (the run goes on); without it, the run's final error (the message
    /// keeps it as an error block), or a notice of kind `toolsLeftOut`.
    Error {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message_id: Option<String>,
        message: String,
        kind: String,
        retryable: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry: Option<RetryNotice>,
    },
    /// A new agent (its first event; seen by subscribers of all agents).
    AgentCreated {
        agent: Agent,
    },
    AgentUpdated {
        agent: Agent,
    },
    AgentDeleted {},
    /// This subscriber missed events that can no longer be replayed: reload state with
    /// `getAgent`/`listMessages`. Sent to one subscriber only; its `seq` is the agent's latest
    /// seq at that moment (not a new one).
    ResyncRequired {
        reason: String,
    },
    /// The first event of a `subscribe` with `snapshot: true`, to that subscriber only: the
    /// agent as of this event's `seq` (the agent's latest seq when it subscribed). The
    /// events after it follow with no gap, so applying them to `message` rebuilds exactly
    /// what the daemon stores.
    Snapshot {
        /// The session status as of `seq`.
        status: SessionStatus,
        /// The agent's latest assistant message as of `seq` (the one a run is writing, is
        /// suspended on, or wrote last), as a client rebuilding it from its events has it;
        /// absent when the agent has no message yet.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<Message>,
        /// With `message`: the index in its blocks where the current step begins. A delta
        /// after the snapshot extends the last block only if that block is at or after
        /// this index (docs/protocol.md 4.6); equal to the number of blocks when the next
        /// piece begins a new step.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        step_start: Option<u32>,
    },
    /// The agent's plan changed (`todo_write`): the whole list as it is now.
    PlanUpdated {
        items: Vec<PlanItem>,
    },
    /// The agent's queue changed (a message queued, steered, started, joined or
    /// cancelled): the whole queue as it is now, in the order it runs.
    QueueUpdated {
        queue: Vec<crate::QueuedMessage>,
    },
    /// A steer joined the running turn: a `steer` block is appended to the message, and
    /// the model's next step answers it.
    Steered {
        message_id: String,
        /// The steer's `userMessageId`.
        id: String,
        text: String,
    },
    /// The model asks the user: a client shows the questions and answers with
    /// `answerQuestion`. The run has ended (`loopFinished` with `waitingQuestion` follows)
    /// and resumes on the answer.
    QuestionRequested {
        message_id: String,
        tool_call_id: String,
        questions: Vec<Question>,
    },
    /// The question was answered (the first answer wins), declined, or cancelled.
    QuestionResolved {
        message_id: String,
        tool_call_id: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        answers: Vec<QuestionAnswer>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        declined: bool,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        cancelled: bool,
    },
    /// A subagent started with `task` and `background: true` finished. Its result is given
    /// to this agent's model with the next user message.
    BackgroundTaskFinished {
        child_agent_id: String,
        /// The `task` call that started it.
        tool_call_id: String,
        /// How the subagent's last run ended (`completed`, `error`, `cancelled`, ...).
        status: LoopFinishReason,
    },
    /// `revertTo` undid the agent's turns from a user message on: the workspace files it
    /// put back (and those it left alone), and how many messages left the conversation. A
    /// client reloads the history (`listMessages`) when `removedMessages` is above 0.
    Reverted {
        /// The user message reverted to (gone from the history when `removedMessages > 0`).
        message_id: String,
        /// Workspace paths put back as they were before that message.
        restored: Vec<String>,
        /// Paths left alone, with why (changed by someone else since, not kept).
        conflicts: Vec<crate::methods::RevertConflict>,
        /// Messages removed from the conversation (that message and every later one).
        removed_messages: u64,
    },
    /// An MCP server's status changed. A daemon-level event: sent to subscribers of all
    /// agents only, with `agentId` "" and `seq` 0, and not replayed (after a reconnect,
    /// `listMcpServers` tells the current state).
    McpServerStatus {
        server: String,
        status: crate::mcp::McpServerStatus,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
}

impl EventKind {
    /// The wire name of the event type.
    pub fn type_name(&self) -> &'static str {
        match self {
            EventKind::StatusChanged { .. } => "statusChanged",
            EventKind::UserMessage { .. } => "userMessage",
            EventKind::MessageStarted { .. } => "messageStarted",
            EventKind::TextDelta { .. } => "textDelta",
            EventKind::ReasoningDelta { .. } => "reasoningDelta",
            EventKind::Usage { .. } => "usage",
            EventKind::ToolCallStarted { .. } => "toolCallStarted",
            EventKind::ToolCallArgsDelta { .. } => "toolCallArgsDelta",
            EventKind::ToolCallReady { .. } => "toolCallReady",
            EventKind::PermissionRequested { .. } => "permissionRequested",
            EventKind::PermissionResolved { .. } => "permissionResolved",
            EventKind::ToolResult { .. } => "toolResult",
            EventKind::Summarized { .. } => "summarized",
            EventKind::ToolProgress { .. } => "toolProgress",
            EventKind::McpServerStatus { .. } => "mcpServerStatus",
            EventKind::MessageCompleted { .. } => "messageCompleted",
            EventKind::LoopFinished { .. } => "loopFinished",
            EventKind::Error { .. } => "error",
            EventKind::AgentCreated { .. } => "agentCreated",
            EventKind::AgentUpdated { .. } => "agentUpdated",
            EventKind::AgentDeleted {} => "agentDeleted",
            EventKind::ResyncRequired { .. } => "resyncRequired",
            EventKind::Snapshot { .. } => "snapshot",
            EventKind::PlanUpdated { .. } => "planUpdated",
            EventKind::QueueUpdated { .. } => "queueUpdated",
            EventKind::Steered { .. } => "steered",
            EventKind::QuestionRequested { .. } => "questionRequested",
            EventKind::QuestionResolved { .. } => "questionResolved",
            EventKind::BackgroundTaskFinished { .. } => "backgroundTaskFinished",
            EventKind::Reverted { .. } => "reverted",
        }
    }
}

/// What a retry notice says about the retry (`error` events with `retry`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RetryNotice {
    /// This retry's number, from 1.
    pub attempt: u32,
    /// How many retries there may be.
    pub max: u32,
    /// The wait before the call is sent again, in milliseconds.
    pub delay_ms: u64,
}

/// How long an answer to a permission prompt is remembered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "camelCase")]
pub enum Remember {
    /// This call only.
    #[default]
    Once,
    /// This agent, for as long as it exists (stored with it).
    Session,
    /// Every agent, from now on (a stored grant).
    Always,
}

impl Remember {
    pub fn as_str(self) -> &'static str {
        match self {
            Remember::Once => "once",
            Remember::Session => "session",
            Remember::Always => "always",
        }
    }
}

/// The `params` of an `event` notification (jsonrpsee's subscription shape).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventNotification {
    pub subscription: serde_json::Value,
    pub result: Event,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_type_name_is_listed() {
        use crate::agent::PermissionLevel;
        use crate::message::ToolCallStatus;
        let id = || "x".to_owned();
        let samples = vec![
            EventKind::StatusChanged {
                status: SessionStatus::Idle,
            },
            EventKind::MessageStarted {
                message_id: id(),
                message: None,
            },
            EventKind::TextDelta {
                message_id: id(),
                delta: id(),
            },
            EventKind::ReasoningDelta {
                message_id: id(),
                delta: id(),
            },
            EventKind::Usage {
                message_id: id(),
                input_tokens: 1,
                output_tokens: 1,
            },
            EventKind::ToolCallStarted {
                message_id: id(),
                tool_call_id: id(),
                name: id(),
            },
            EventKind::ToolCallArgsDelta {
                message_id: id(),
                tool_call_id: id(),
                delta: id(),
            },
            EventKind::ToolCallReady {
                message_id: id(),
                tool_call_id: id(),
                name: id(),
                arguments: serde_json::Value::Null,
            },
            EventKind::PermissionRequested {
                message_id: id(),
                tool_call_id: id(),
                tool_name: id(),
                permission_type: PermissionLevel::Read,
                description: id(),
                arguments: serde_json::Value::Null,
                command: None,
                command_display: None,
                signature: None,
                paths: None,
                risk: None,
                rememberable: false,
                network_access: false,
                outside_sandbox: false,
            },
            EventKind::PermissionResolved {
                message_id: id(),
                tool_call_id: id(),
                granted: true,
                remember: Remember::Once,
                cancelled: false,
            },
            EventKind::ToolResult {
                message_id: id(),
                tool_call_id: id(),
                status: ToolCallStatus::Success,
                content: id(),
                offload_path: None,
                duration_ms: 0,
            },
            EventKind::ToolProgress {
                message_id: id(),
                tool_call_id: id(),
                progress: 1.0,
                total: Some(2.0),
                message: None,
                output: Some(LiveOutput {
                    stream: OutputStream::Stderr,
                    text: id(),
                }),
            },
            EventKind::McpServerStatus {
                server: id(),
                status: crate::mcp::McpServerStatus::Ready,
                error: None,
            },
            EventKind::Summarized {
                message_id: id(),
                before_tokens: 2,
                after_tokens: 1,
                summarized_messages: 4,
                through_message_id: id(),
            },
            EventKind::MessageCompleted {
                message_id: id(),
                status: MessageStatus::Done,
                structured_output: None,
            },
            EventKind::LoopFinished {
                message_id: id(),
                reason: LoopFinishReason::Completed,
                error: None,
            },
            EventKind::Error {
                message_id: None,
                message: id(),
                kind: id(),
                retryable: false,
                retry: None,
            },
            EventKind::Snapshot {
                status: SessionStatus::Idle,
                message: None,
                step_start: None,
            },
            EventKind::AgentDeleted {},
            EventKind::ResyncRequired { reason: id() },
            EventKind::PlanUpdated { items: Vec::new() },
            EventKind::QueueUpdated { queue: Vec::new() },
            EventKind::Steered {
                message_id: id(),
                id: id(),
                text: id(),
            },
            EventKind::QuestionRequested {
                message_id: id(),
                tool_call_id: id(),
                questions: Vec::new(),
            },
            EventKind::QuestionResolved {
                message_id: id(),
                tool_call_id: id(),
                answers: Vec::new(),
                declined: true,
                cancelled: false,
            },
            EventKind::BackgroundTaskFinished {
                child_agent_id: id(),
                tool_call_id: id(),
                status: LoopFinishReason::Completed,
            },
            EventKind::Reverted {
                message_id: id(),
                restored: Vec::new(),
                conflicts: Vec::new(),
                removed_messages: 0,
            },
        ];
        // userMessage, agentCreated and agentUpdated need whole messages/agents: checked by name.
        let mut names: Vec<&str> = samples.iter().map(EventKind::type_name).collect();
        names.extend(["userMessage", "agentCreated", "agentUpdated"]);
        names.sort_unstable();
        let mut listed = EVENT_TYPES.to_vec();
        listed.sort_unstable();
        assert_eq!(names, listed);
        for sample in samples {
            let json = serde_json::to_value(Event {
                seq: 1,
                agent_id: id(),
                at: 0,
                kind: sample.clone(),
            })
            .unwrap();
            assert_eq!(json["type"], sample.type_name());
        }
    }

    #[test]
    fn events_flatten_their_payload() {
        let cases = [
            (
                EventKind::TextDelta {
                    message_id: "m1".into(),
                    delta: "Hel".into(),
                },
                json!({"seq": 7, "agentId": "a1", "at": 5, "type": "textDelta", "messageId": "m1", "delta": "Hel"}),
            ),
            (
                EventKind::StatusChanged {
                    status: SessionStatus::WaitingPermission,
                },
                json!({"seq": 7, "agentId": "a1", "at": 5, "type": "statusChanged", "status": "waiting_permission"}),
            ),
            (
                EventKind::LoopFinished {
                    message_id: "m1".into(),
                    reason: LoopFinishReason::MaxSteps,
                    error: None,
                },
                json!({"seq": 7, "agentId": "a1", "at": 5, "type": "loopFinished", "messageId": "m1", "reason": "maxSteps"}),
            ),
            (
                EventKind::Error {
                    message_id: Some("m1".into()),
                    message: "retrying in 0.2 s (retry 1 of 2): HTTP 429".into(),
                    kind: "providerHttpError".into(),
                    retryable: true,
                    retry: Some(RetryNotice {
                        attempt: 1,
                        max: 2,
                        delay_ms: 200,
                    }),
                },
                json!({"seq": 7, "agentId": "a1", "at": 5, "type": "error", "messageId": "m1",
                    "message": "retrying in 0.2 s (retry 1 of 2): HTTP 429",
                    "kind": "providerHttpError", "retryable": true,
                    "retry": {"attempt": 1, "max": 2, "delayMs": 200}}),
            ),
            (
                EventKind::AgentDeleted {},
                json!({"seq": 7, "agentId": "a1", "at": 5, "type": "agentDeleted"}),
            ),
        ];
        for (kind, expected) in cases {
            let event = Event {
                seq: 7,
                agent_id: "a1".into(),
                at: 5,
                kind,
            };
            assert_eq!(serde_json::to_value(&event).unwrap(), expected);
            assert_eq!(serde_json::from_value::<Event>(expected).unwrap(), event);
            assert_eq!(
                serde_json::to_value(&event).unwrap()["type"],
                event.kind.type_name()
            );
        }
    }
}
