//! Human-readable output: one place decides how agents, messages and events look.

use agent_proto::{Agent, Block, Event, EventKind, Message, MessageStatus, Role};

/// One line per agent for `agents list`.
pub fn agent_line(agent: &Agent) -> String {
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
pub fn agent_detail(agent: &Agent) -> String {
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
    lines.push(format!("pinned:    {}", agent.pinned));
    lines.push(format!("archived:  {}", agent.archived));
    let settings = serde_json::to_string(&agent.settings).unwrap_or_default();
    lines.push(format!("settings:  {settings}"));
    lines.join("\n")
}

/// A message of the transcript: a header line, then its blocks.
pub fn message_text(message: &Message) -> String {
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
            Block::Reasoning { text } => {
                out.push_str(&prefix_lines(text, "  | "));
            }
            Block::Error { message, kind } => {
                out.push_str(&format!("! error: {message} ({kind})"));
            }
            Block::Image { mime_type, path } => {
                out.push_str(&format!("[image {mime_type}: {path}]"));
            }
            Block::ToolCall {
                name,
                arguments,
                status,
                result,
                ..
            } => {
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
pub fn tool_call_line(name: &str, arguments: &serde_json::Value) -> String {
    match (
        name,
        arguments.get("command").and_then(serde_json::Value::as_str),
    ) {
        ("bash", Some(command)) => format!("bash: {command}"),
        _ => format!("{name} {arguments}"),
    }
}

/// The wire name of a tool call status.
pub fn status_name(status: agent_proto::ToolCallStatus) -> String {
    serde_json::to_value(status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default()
}

/// The first `n` lines of `text`, saying how many more there are.
pub fn first_lines(text: &str, n: usize) -> String {
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
pub fn event_line(event: &Event) -> String {
    let agent: String = event.agent_id.chars().take(8).collect();
    let detail = match &event.kind {
        EventKind::StatusChanged { status } => status.as_str().to_owned(),
        EventKind::UserMessage { message } => format!("{:?}", message.text()),
        EventKind::MessageStarted { message_id } => message_id.clone(),
        EventKind::TextDelta { delta, .. } | EventKind::ReasoningDelta { delta, .. } => {
            format!("{delta:?}")
        }
        EventKind::Usage {
            input_tokens,
            output_tokens,
            ..
        } => format!("in={input_tokens} out={output_tokens}"),
        EventKind::MessageCompleted { status, .. } => status.as_str().to_owned(),
        EventKind::LoopFinished { reason, error } => {
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
    };
    let line = format!(
        "[{}] {agent} {} {detail}",
        event.seq,
        event.kind.type_name()
    );
    line.trim_end().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_proto::{LoopFinishReason, SessionStatus};

    fn event(kind: EventKind) -> Event {
        Event {
            seq: 12,
            agent_id: "0123456789abcdef".into(),
            at: 0,
            kind,
        }
    }

    #[test]
    fn event_lines() {
        let cases = [
            (
                EventKind::StatusChanged {
                    status: SessionStatus::Generating,
                },
                "[12] 01234567 statusChanged generating",
            ),
            (
                EventKind::TextDelta {
                    message_id: "m".into(),
                    delta: "Hi\n".into(),
                },
                "[12] 01234567 textDelta \"Hi\\n\"",
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
                EventKind::LoopFinished {
                    reason: LoopFinishReason::MaxSteps,
                    error: None,
                },
                "[12] 01234567 loopFinished maxSteps",
            ),
            (
                EventKind::LoopFinished {
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
                },
                "[12] 01234567 error boom (providerHttpError, retryable)",
            ),
            (EventKind::AgentDeleted {}, "[12] 01234567 agentDeleted"),
            (
                EventKind::MessageCompleted {
                    message_id: "m".into(),
                    status: MessageStatus::Cancelled,
                },
                "[12] 01234567 messageCompleted cancelled",
            ),
        ];
        for (kind, expected) in cases {
            assert_eq!(event_line(&event(kind)), expected);
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
        };
        assert_eq!(
            message_text(&message),
            "--- assistant (error)\n  | one\n  | two\npartial\n! error: cut (providerStreamTruncated)"
        );
    }
}
