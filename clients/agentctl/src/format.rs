//! Human-readable output: one place decides how agents, messages and events look.

use agent_proto::{Agent, Block, Event, EventKind, Message, MessageStatus, Role, ToolCallBlock};

/// One line per agent for `agents list`.
pub(crate) fn agent_line(agent: &Agent) -> String {
    format!(
        "{}  {:<18} {:<5} {}/{}  {}",
        agent.id,
        agent.status.as_str(),
        agent.mode.as_str(),
        agent.provider,
        agent.model,
        agent.title
    )
}

/// `key: value` lines for `agents show`.
pub(crate) fn agent_detail(agent: &Agent) -> String {
    let mut lines = vec![
        format!("id:        {}", agent.id),
        format!("title:     {}", agent.title),
        format!("status:    {}", agent.status.as_str()),
        format!("mode:      {}", agent.mode.as_str()),
        format!("provider:  {}", agent.provider),
        format!("model:     {}", agent.model),
    ];
    if let Some(prompt) = &agent.system_prompt {
        lines.push(format!("system:    {prompt}"));
    }
    if let Some(workspace) = &agent.workspace {
        lines.push(format!("workspace: {workspace}"));
    }
    if let Some(profile) = &agent.profile {
        lines.push(format!("profile:   {profile}"));
    }
    if let Some(sandbox) = agent.sandbox {
        let note = match sandbox {
            agent_proto::SandboxMode::Off => " (commands run with your full rights)",
            _ => "",
        };
        lines.push(format!("sandbox:   {}{note}", sandbox.as_str()));
    }
    lines.push(format!("pinned:    {}", agent.pinned));
    lines.push(format!("archived:  {}", agent.archived));
    let settings = serde_json::to_string(&agent.settings).unwrap_or_default();
    lines.push(format!("settings:  {settings}"));
    lines.join("\n")
}

/// A message of the transcript: a header line, then its blocks.
pub(crate) fn message_text(message: &Message) -> String {
    let role = match message.role {
        Role::User => "user",
        Role::Assistant => "assistant",
    };
    let status = match message.status {
        MessageStatus::Done => String::new(),
        other => format!(" ({})", other.as_str()),
    };
    let mut out = format!("--- {role}{status}");
    for block in &message.blocks {
        out.push('\n');
        match block {
            Block::Text { text } => out.push_str(text),
            Block::Reasoning { text, redacted, .. } => {
                let text = match redacted {
                    Some(_) if text.is_empty() => "(encrypted by the provider)",
                    _ => text.as_str(),
                };
                out.push_str(&prefix_lines(text, "  | "));
            }
            Block::Error { message, kind } => {
                out.push_str(&format!("! error: {message} ({kind})"));
            }
            Block::Steer { text, .. } => {
                out.push_str(&prefix_lines(text, ">> steer: "));
            }
            Block::Image { mime_type, path } => {
                out.push_str(&format!("[image {mime_type}: {path}]"));
            }
            Block::Document {
                mime_type,
                path,
                name,
                size,
            } => {
                out.push_str(&format!(
                    "[document {name} ({mime_type}, {size} bytes): {path}]"
                ));
            }
            Block::ToolCall(ToolCallBlock {
                name,
                arguments,
                status,
                result,
                ..
            }) => {
                out.push_str(&format!("> {}", tool_call_line(name, arguments)));
                out.push_str(&format!(" [{}]", status_name(*status)));
                if let Some(result) = result {
                    out.push('\n');
                    out.push_str(&prefix_lines(&first_lines(&result.content, 5), "  < "));
                }
            }
        }
    }
    out
}

/// A tool call in one line: `bash ls -la`, `read_file {"path":"a"}`.
pub(crate) fn tool_call_line(name: &str, arguments: &serde_json::Value) -> String {
    match (
        name,
        arguments.get("command").and_then(serde_json::Value::as_str),
    ) {
        ("bash", Some(command)) => format!("bash: {command}"),
        _ => format!("{name} {arguments}"),
    }
}

/// The wire name of a tool call status.
pub(crate) fn status_name(status: agent_proto::ToolCallStatus) -> String {
    serde_json::to_value(status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// The first `n` lines of `text`, saying how many more there are.
pub(crate) fn first_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = lines.iter().take(n).copied().collect::<Vec<_>>().join("\n");
    if lines.len() > n {
        out.push_str(&format!("\n... ({} more lines)", lines.len() - n));
    }
    out
}

fn prefix_lines(text: &str, prefix: &str) -> String {
    text.lines()
        .map(|l| format!("{prefix}{l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// One line per event for `watch`.
pub(crate) fn event_line(event: &Event) -> String {
    let agent: String = event.agent_id.chars().take(8).collect();
    let detail = match &event.kind {
        EventKind::StatusChanged { status } => status.as_str().to_owned(),
        EventKind::UserMessage { message } => format!("{:?}", message.text()),
        EventKind::MessageStarted { message_id, .. } => message_id.clone(),
        EventKind::TextDelta { delta, .. } | EventKind::ReasoningDelta { delta, .. } => {
            format!("{delta:?}")
        }
        EventKind::Usage {
            input_tokens,
            output_tokens,
            ..
        } => format!("in={input_tokens} out={output_tokens}"),
        EventKind::Summarized {
            before_tokens,
            after_tokens,
            summarized_messages,
            ..
        } => format!(
            "{summarized_messages} messages folded into a summary: ~{before_tokens} -> ~{after_tokens} tokens"
        ),
        EventKind::MessageCompleted { status, .. } => status.as_str().to_owned(),
        EventKind::QueueUpdated { queue } => format!("{} queued", queue.len()),
        EventKind::Steered { text, .. } => format!("{text:?}"),
        EventKind::LoopFinished { reason, error, .. } => {
            let reason = serde_json::to_value(reason)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            match error {
                Some(e) => format!("{reason}: {e}"),
                None => reason,
            }
        }
        EventKind::Error {
            message,
            kind,
            retryable,
            ..
        } => format!(
            "{message} ({kind}{})",
            if *retryable { ", retryable" } else { "" }
        ),
        EventKind::ToolCallStarted {
            tool_call_id, name, ..
        } => format!("{name} {tool_call_id}"),
        EventKind::ToolCallArgsDelta { delta, .. } => format!("{delta:?}"),
        EventKind::ToolCallReady {
            name, arguments, ..
        } => tool_call_line(name, arguments),
        EventKind::PermissionRequested {
            tool_call_id,
            description,
            risk,
            ..
        } => match risk {
            Some(risk) => format!("{tool_call_id} {description} (risky: {risk})"),
            None => format!("{tool_call_id} {description}"),
        },
        EventKind::PermissionResolved {
            tool_call_id,
            granted,
            remember,
            cancelled,
            ..
        } => {
            let answer = if *cancelled {
                "cancelled"
            } else if *granted {
                "granted"
            } else {
                "denied"
            };
            format!("{tool_call_id} {answer} ({})", remember.as_str())
        }
        EventKind::ToolResult {
            tool_call_id,
            status,
            content,
            duration_ms,
            ..
        } => format!(
            "{tool_call_id} {} {duration_ms} ms {:?}",
            status_name(*status),
            content.chars().take(80).collect::<String>()
        ),
        EventKind::AgentCreated { agent } | EventKind::AgentUpdated { agent } => {
            format!("{:?}", agent.title)
        }
        EventKind::AgentDeleted {} => String::new(),
        EventKind::ResyncRequired { reason } => reason.clone(),
        EventKind::Snapshot {
            status, message, ..
        } => match message {
            Some(m) => format!("{} {} {:?}", status.as_str(), m.id, m.text()),
            None => status.as_str().to_owned(),
        },
        EventKind::ToolProgress {
            tool_call_id,
            output: Some(output),
            ..
        } => format!(
            "{tool_call_id} {} {:?}",
            output_stream_name(output.stream),
            output.text
        ),
        EventKind::ToolProgress {
            tool_call_id,
            progress,
            total,
            message,
            ..
        } => {
            let of = total.map(|t| format!("/{t}")).unwrap_or_default();
            let note = message
                .as_deref()
                .map(|m| format!(" {m}"))
                .unwrap_or_default();
            format!("{tool_call_id} {progress}{of}{note}")
        }
        EventKind::McpServerStatus {
            server,
            status,
            error,
        } => match error {
            Some(e) => format!("{server} {}: {e}", status.as_str()),
            None => format!("{server} {}", status.as_str()),
        },
        EventKind::PlanUpdated { items } => {
            let done = items
                .iter()
                .filter(|i| i.status == agent_proto::PlanStatus::Completed)
                .count();
            format!("{done}/{} done", items.len())
        }
        EventKind::QuestionRequested {
            tool_call_id,
            questions,
            ..
        } => {
            let asked: Vec<&str> = questions.iter().map(|q| q.question.as_str()).collect();
            format!("{tool_call_id} {asked:?}")
        }
        EventKind::QuestionResolved {
            tool_call_id,
            answers,
            declined,
            cancelled,
            ..
        } => {
            let answer = if *cancelled {
                "cancelled".to_owned()
            } else if *declined {
                "declined".to_owned()
            } else {
                format!("{} answered", answers.len())
            };
            format!("{tool_call_id} {answer}")
        }
        EventKind::BackgroundTaskFinished {
            child_agent_id,
            tool_call_id,
            status,
        } => {
            let status = serde_json::to_value(status)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            format!("{tool_call_id} child {child_agent_id} {status}")
        }
        EventKind::Reverted {
            message_id,
            restored,
            conflicts,
            removed_messages,
        } => format!(
            "to before {message_id}: {} files restored, {} left alone, {removed_messages} messages removed",
            restored.len(),
            conflicts.len()
        ),
    };
    let line = format!(
        "[{}] {agent} {} {detail}",
        event.seq,
        event.kind.type_name()
    );
    line.trim_end().to_owned()
}

/// A command's stream as it is named on screen.
pub(crate) fn output_stream_name(stream: agent_proto::OutputStream) -> &'static str {
    match stream {
        agent_proto::OutputStream::Stdout => "stdout",
        agent_proto::OutputStream::Stderr => "stderr",
    }
}

/// Shows a running command's output under its call: each line indented, stderr's lines
/// marked `!`, a line cut between two pieces continued where it stopped.
#[derive(Debug, Default)]
pub(crate) struct LiveLines {
    /// The stream of the line being written, if one was left unfinished.
    open: Option<agent_proto::OutputStream>,
}

impl LiveLines {
    /// `text` of `stream` as it is to be printed after what was printed before.
    pub(crate) fn piece(&mut self, stream: agent_proto::OutputStream, text: &str) -> String {
        let mut shown = String::new();
        if self.open.is_some_and(|open| open != stream) {
            shown.push('\n');
            self.open = None;
        }
        for line in text.split_inclusive('\n') {
            if self.open.is_none() {
                shown.push_str(match stream {
                    agent_proto::OutputStream::Stdout => "    ",
                    agent_proto::OutputStream::Stderr => "  ! ",
                });
            }
            shown.push_str(line);
            self.open = (!line.ends_with('\n')).then_some(stream);
        }
        shown
    }

    /// Ends an unfinished line, so what follows starts on its own.
    pub(crate) fn close(&mut self) -> &'static str {
        if self.open.take().is_some() { "\n" } else { "" }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_proto::{
        AgentMode, AgentSettings, LoopFinishReason, PermissionLevel, Remember, SessionStatus,
        ToolCallStatus,
    };
    use serde_json::json;

    fn event(kind: EventKind) -> Event {
        Event {
            seq: 12,
            agent_id: "0123456789abcdef".into(),
            at: 0,
            kind,
        }
    }

    fn agent() -> Agent {
        Agent {
            id: "0123456789abcdef".into(),
            title: "Notes".into(),
            mode: AgentMode::Agent,
            provider: "openai".into(),
            model: "gpt-x".into(),
            system_prompt: None,
            workspace: Some("/tmp/w".into()),
            profile: None,
            settings: AgentSettings::default(),
            pinned: true,
            archived: false,
            status: SessionStatus::Idle,
            context_edge: None,
            parent_agent_id: None,
            fork_message_id: None,
            acp: None,
            sandbox: Some(agent_proto::SandboxMode::WorkspaceWrite),
            subagent_type: None,
            parent_tool_call_id: None,
            created_at: 0,
            updated_at: 0,
        }
    }

    fn user_message(text: &str) -> Message {
        Message::new(
            "u",
            "a",
            Role::User,
            vec![Block::Text { text: text.into() }],
            MessageStatus::Done,
            0,
        )
    }

    fn event_cases() -> Vec<(EventKind, &'static str)> {
        vec![
            (
                EventKind::StatusChanged {
                    status: SessionStatus::Generating,
                },
                "[12] 01234567 statusChanged generating",
            ),
            (
                EventKind::UserMessage {
                    message: user_message("hello \"you\""),
                },
                r#"[12] 01234567 userMessage "hello \"you\"""#,
            ),
            (
                EventKind::MessageStarted {
                    message_id: "m1".into(),
                    message: None,
                },
                "[12] 01234567 messageStarted m1",
            ),
            (
                EventKind::TextDelta {
                    message_id: "m".into(),
                    delta: "Hi\n".into(),
                },
                "[12] 01234567 textDelta \"Hi\\n\"",
            ),
            (
                EventKind::ReasoningDelta {
                    message_id: "m".into(),
                    delta: "think".into(),
                },
                "[12] 01234567 reasoningDelta \"think\"",
            ),
            (
                EventKind::Usage {
                    message_id: "m".into(),
                    input_tokens: 3,
                    output_tokens: 4,
                },
                "[12] 01234567 usage in=3 out=4",
            ),
            (
                EventKind::ToolCallStarted {
                    message_id: "m".into(),
                    tool_call_id: "c1".into(),
                    name: "bash".into(),
                },
                "[12] 01234567 toolCallStarted bash c1",
            ),
            (
                EventKind::ToolCallArgsDelta {
                    message_id: "m".into(),
                    tool_call_id: "c1".into(),
                    delta: r#"{"comm"#.into(),
                },
                r#"[12] 01234567 toolCallArgsDelta "{\"comm""#,
            ),
            (
                EventKind::ToolCallReady {
                    message_id: "m".into(),
                    tool_call_id: "c1".into(),
                    name: "bash".into(),
                    arguments: json!({"command": "ls -la"}),
                },
                "[12] 01234567 toolCallReady bash: ls -la",
            ),
            (
                EventKind::ToolCallReady {
                    message_id: "m".into(),
                    tool_call_id: "c2".into(),
                    name: "read_file".into(),
                    arguments: json!({"path": "a"}),
                },
                r#"[12] 01234567 toolCallReady read_file {"path":"a"}"#,
            ),
            (
                EventKind::PermissionRequested {
                    message_id: "m".into(),
                    tool_call_id: "c1".into(),
                    tool_name: "bash".into(),
                    permission_type: PermissionLevel::Execute,
                    description: "run: rm -rf x".into(),
                    arguments: json!({"command": "rm -rf x"}),
                    command: Some("rm -rf x".into()),
                    command_display: Some("rm -rf x".into()),
                    signature: None,
                    paths: None,
                    risk: Some("deletes files".into()),
                    rememberable: false,
                    network_access: false,
                    outside_sandbox: false,
                },
                "[12] 01234567 permissionRequested c1 run: rm -rf x (risky: deletes files)",
            ),
            (
                EventKind::PermissionResolved {
                    message_id: "m".into(),
                    tool_call_id: "c1".into(),
                    granted: true,
                    remember: Remember::Session,
                    cancelled: false,
                },
                "[12] 01234567 permissionResolved c1 granted (session)",
            ),
            (
                EventKind::PermissionResolved {
                    message_id: "m".into(),
                    tool_call_id: "c1".into(),
                    granted: false,
                    remember: Remember::Once,
                    cancelled: true,
                },
                "[12] 01234567 permissionResolved c1 cancelled (once)",
            ),
            (
                EventKind::ToolResult {
                    message_id: "m".into(),
                    tool_call_id: "c1".into(),
                    status: ToolCallStatus::Error,
                    content: "no such file\n".into(),
                    offload_path: None,
                    duration_ms: 7,
                },
                "[12] 01234567 toolResult c1 error 7 ms \"no such file\\n\"",
            ),
            (
                EventKind::Summarized {
                    message_id: "m".into(),
                    before_tokens: 1700,
                    after_tokens: 400,
                    summarized_messages: 12,
                    through_message_id: "x".into(),
                },
                "[12] 01234567 summarized 12 messages folded into a summary: ~1700 -> ~400 tokens",
            ),
            (
                EventKind::MessageCompleted {
                    message_id: "m".into(),
                    status: MessageStatus::Cancelled,
                    structured_output: None,
                },
                "[12] 01234567 messageCompleted cancelled",
            ),
            (
                EventKind::LoopFinished {
                    message_id: "m".into(),
                    reason: LoopFinishReason::MaxSteps,
                    error: None,
                },
                "[12] 01234567 loopFinished maxSteps",
            ),
            (
                EventKind::LoopFinished {
                    message_id: "m".into(),
                    reason: LoopFinishReason::Error,
                    error: Some("HTTP 500".into()),
                },
                "[12] 01234567 loopFinished error: HTTP 500",
            ),
            (
                EventKind::Error {
                    message_id: None,
                    message: "boom".into(),
                    kind: "providerHttpError".into(),
                    retryable: true,
                    retry: None,
                },
                "[12] 01234567 error boom (providerHttpError, retryable)",
            ),
            (
                EventKind::Error {
                    message_id: Some("m".into()),
                    message: "401 bad key".into(),
                    kind: "providerAuth".into(),
                    retryable: false,
                    retry: None,
                },
                "[12] 01234567 error 401 bad key (providerAuth)",
            ),
            (
                EventKind::ToolProgress {
                    message_id: "m".into(),
                    tool_call_id: "c1".into(),
                    progress: 300.0,
                    total: Some(1000.0),
                    message: None,
                    output: None,
                },
                "[12] 01234567 toolProgress c1 300/1000",
            ),
            (
                EventKind::ToolProgress {
                    message_id: "m".into(),
                    tool_call_id: "c1".into(),
                    progress: 9.0,
                    total: None,
                    message: None,
                    output: Some(agent_proto::LiveOutput {
                        stream: agent_proto::OutputStream::Stderr,
                        text: "warning\n".into(),
                    }),
                },
                "[12] 01234567 toolProgress c1 stderr \"warning\\n\"",
            ),
            (
                EventKind::McpServerStatus {
                    server: "time".into(),
                    status: agent_proto::McpServerStatus::Failed,
                    error: Some("the server closed the connection".into()),
                },
                "[12] 01234567 mcpServerStatus time failed: the server closed the connection",
            ),
            (
                EventKind::AgentCreated { agent: agent() },
                "[12] 01234567 agentCreated \"Notes\"",
            ),
            (
                EventKind::AgentUpdated { agent: agent() },
                "[12] 01234567 agentUpdated \"Notes\"",
            ),
            (EventKind::AgentDeleted {}, "[12] 01234567 agentDeleted"),
            (
                EventKind::Reverted {
                    message_id: "u1".into(),
                    restored: vec!["a.txt".into()],
                    conflicts: Vec::new(),
                    removed_messages: 4,
                },
                "[12] 01234567 reverted to before u1: 1 files restored, 0 left alone, 4 messages removed",
            ),
            (
                EventKind::ResyncRequired {
                    reason: "sinceSeq 3 is older than the replay buffer".into(),
                },
                "[12] 01234567 resyncRequired sinceSeq 3 is older than the replay buffer",
            ),
            (
                EventKind::PlanUpdated {
                    items: vec![
                        agent_proto::PlanItem {
                            content: "Read".into(),
                            status: agent_proto::PlanStatus::Completed,
                            active_form: None,
                        },
                        agent_proto::PlanItem {
                            content: "Write".into(),
                            status: agent_proto::PlanStatus::InProgress,
                            active_form: None,
                        },
                    ],
                },
                "[12] 01234567 planUpdated 1/2 done",
            ),
            (
                EventKind::QuestionRequested {
                    message_id: "m".into(),
                    tool_call_id: "c1".into(),
                    questions: vec![agent_proto::Question {
                        question: "Which?".into(),
                        header: None,
                        options: Vec::new(),
                        multi_select: false,
                    }],
                },
                "[12] 01234567 questionRequested c1 [\"Which?\"]",
            ),
            (
                EventKind::QuestionResolved {
                    message_id: "m".into(),
                    tool_call_id: "c1".into(),
                    answers: Vec::new(),
                    declined: true,
                    cancelled: false,
                },
                "[12] 01234567 questionResolved c1 declined",
            ),
            (
                EventKind::Snapshot {
                    status: SessionStatus::Generating,
                    message: None,
                    step_start: None,
                },
                "[12] 01234567 snapshot generating",
            ),
            (
                EventKind::BackgroundTaskFinished {
                    child_agent_id: "kid".into(),
                    tool_call_id: "c2".into(),
                    status: LoopFinishReason::Completed,
                },
                "[12] 01234567 backgroundTaskFinished c2 child kid completed",
            ),
            (
                EventKind::QueueUpdated { queue: Vec::new() },
                "[12] 01234567 queueUpdated 0 queued",
            ),
            (
                EventKind::Steered {
                    message_id: "m1".into(),
                    id: "u2".into(),
                    text: "go on".into(),
                },
                "[12] 01234567 steered \"go on\"",
            ),
        ]
    }

    #[test]
    fn event_lines() {
        for (kind, expected) in event_cases() {
            assert_eq!(event_line(&event(kind)), expected);
        }
    }

    #[test]
    fn every_event_type_has_a_case() {
        let covered: Vec<&str> = event_cases().iter().map(|(k, _)| k.type_name()).collect();
        for name in agent_proto::EVENT_TYPES {
            assert!(covered.contains(name), "no formatting case for {name}");
        }
    }

    #[test]
    fn agents() {
        assert_eq!(
            agent_line(&agent()),
            "0123456789abcdef  idle               agent openai/gpt-x  Notes"
        );
        assert_eq!(
            agent_detail(&agent()),
            "id:        0123456789abcdef\n\
             title:     Notes\n\
             status:    idle\n\
             mode:      agent\n\
             provider:  openai\n\
             model:     gpt-x\n\
             workspace: /tmp/w\n\
             sandbox:   workspace-write\n\
             pinned:    true\n\
             archived:  false\n\
             settings:  {}"
        );
    }

    #[test]
    fn long_text_is_cut_to_its_first_lines() {
        let cases = [
            ("", 2, ""),
            ("a", 2, "a"),
            ("a\nb", 2, "a\nb"),
            ("a\nb\nc\nd", 2, "a\nb\n... (2 more lines)"),
        ];
        for (text, n, expected) in cases {
            assert_eq!(first_lines(text, n), expected, "{text:?}");
        }
    }

    #[test]
    fn transcript_shows_status_reasoning_and_errors() {
        let message = Message {
            id: "m".into(),
            agent_id: "a".into(),
            role: Role::Assistant,
            blocks: vec![
                Block::Reasoning {
                    text: "one\ntwo".into(),
                    signature: Some("not shown".into()),
                    redacted: None,
                    details: None,
                },
                Block::Text {
                    text: "partial".into(),
                },
                Block::Error {
                    message: "cut".into(),
                    kind: "providerStreamTruncated".into(),
                },
            ],
            status: MessageStatus::Error,
            created_at: 0,
            updated_at: 0,
            usage: None,
            variant_of: None,
            superseded: false,
            turn: None,
            structured_output: None,
        };
        assert_eq!(
            message_text(&message),
            "--- assistant (error)\n  | one\n  | two\npartial\n! error: cut (providerStreamTruncated)"
        );
    }

    #[test]
    fn transcript_names_attached_documents() {
        let message = Message {
            id: "m".into(),
            agent_id: "a".into(),
            role: Role::User,
            blocks: vec![
                Block::Text {
                    text: "summarize".into(),
                },
                Block::Document {
                    mime_type: "application/pdf".into(),
                    path: "/d/1.pdf".into(),
                    name: "spec.pdf".into(),
                    size: 2048,
                },
            ],
            status: MessageStatus::Done,
            created_at: 0,
            updated_at: 0,
            usage: None,
            variant_of: None,
            superseded: false,
            turn: None,
            structured_output: None,
        };
        assert!(
            message_text(&message).ends_with(
                "summarize\n[document spec.pdf (application/pdf, 2048 bytes): /d/1.pdf]"
            ),
            "{}",
            message_text(&message)
        );
    }

    #[test]
    fn live_output_is_indented_per_line_and_stderr_is_marked() {
        use agent_proto::OutputStream::{Stderr, Stdout};
        let mut lines = LiveLines::default();
        let shown: String = [
            lines.piece(Stdout, "one\ntw"),
            lines.piece(Stdout, "o\n"),
            lines.piece(Stderr, "oops"),
            lines.piece(Stdout, "three"),
            lines.close().to_owned(),
        ]
        .concat();
        assert_eq!(shown, "    one\n    two\n  ! oops\n    three\n");
        assert_eq!(lines.close(), "");
    }
}
