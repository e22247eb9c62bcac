//! The markdown transcript of `exportAgent`: for people to read, not to import. It holds
//! what the agent and its messages hold (no secrets live there) and nothing from the
//! daemon's configuration.

use std::fmt::Write;

use agent_proto::{Agent, Block, Message, MessageStatus, Role, ToolCallBlock, ToolCallStatus};

use crate::store::Summary;

/// The transcript of `agent` with `messages` (oldest first).
pub(super) fn render(
    agent: &Agent,
    messages: &[Message],
    summaries: &[Summary],
    exported_at: i64,
) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# {}\n", one_line(&agent.title));
    let _ = writeln!(out, "- Agent: `{}`", agent.id);
    let _ = writeln!(
        out,
        "- Provider: `{}`, model `{}`",
        agent.provider, agent.model
    );
    let _ = writeln!(out, "- Mode: {}", agent.mode.as_str());
    let _ = writeln!(out, "- Created: {}", format_time(agent.created_at));
    let _ = writeln!(out, "- Exported: {}", format_time(exported_at));
    if let Some(workspace) = &agent.workspace {
        let _ = writeln!(out, "- Workspace: `{workspace}`");
    }
    if let Some(profile) = &agent.profile {
        let _ = writeln!(out, "- Profile: {profile}");
    }
    if let Some(parent) = &agent.parent_agent_id {
        let _ = write!(out, "- Forked from: `{parent}`");
        if let Some(at) = &agent.fork_message_id {
            let _ = write!(out, " at message `{at}`");
        }
        out.push('\n');
    }
    let _ = writeln!(out, "- Messages: {}", messages.len());
    if let Some(prompt) = &agent.system_prompt {
        let _ = writeln!(out, "\n## System prompt\n\n{}", fenced(prompt, ""));
    }
    out.push_str("\n## Conversation\n");
    for message in messages {
        render_message(&mut out, message);
        for summary in summaries
            .iter()
            .filter(|s| s.through_message_id == message.id)
        {
            let _ = writeln!(
                out,
                "\n> **Context summary** (the model sees this instead of the {} messages above)\n>",
                summary.summarized_messages
            );
            for line in summary.text.lines() {
                let _ = writeln!(out, "> {line}");
            }
        }
        if agent.context_edge.as_deref() == Some(message.id.as_str()) {
            out.push_str(
                "\n---\n\n*Context cleared here: the model does not see the messages above.*\n",
            );
        }
    }
    out
}

fn render_message(out: &mut String, message: &Message) {
    let role = match message.role {
        Role::User => "User",
        Role::Assistant => "Assistant",
    };
    let _ = write!(out, "\n### {role} · {}", format_time(message.created_at));
    if message.status != MessageStatus::Done {
        let _ = write!(out, " ({})", message.status.as_str());
    }
    if message.superseded {
        out.push_str(" (replaced by a later answer)");
    }
    out.push('\n');
    if let Some(usage) = message.usage {
        let _ = writeln!(
            out,
            "\n*Tokens: {} in, {} out*",
            usage.input_tokens, usage.output_tokens
        );
    }
    for block in &message.blocks {
        out.push('\n');
        render_block(out, block);
    }
}

fn render_block(out: &mut String, block: &Block) {
    match block {
        Block::Text { text } => {
            let _ = writeln!(out, "{}", text.trim_end());
        }
        Block::Reasoning { text, redacted, .. } => {
            let text = match redacted {
                Some(_) if text.is_empty() => "(encrypted by the provider)",
                _ => text.trim_end(),
            };
            let _ = writeln!(
                out,
                "<details>\n<summary>Reasoning</summary>\n\n{text}\n\n</details>"
            );
        }
        Block::Image { mime_type, path } => {
            let _ = writeln!(out, "*Image ({mime_type}):* `{path}`");
        }
        Block::Document {
            mime_type,
            path,
            name,
            size,
        } => {
            let _ = writeln!(
                out,
                "*Document {name} ({mime_type}, {size} bytes):* `{path}`"
            );
        }
        Block::ToolCall(ToolCallBlock {
            name,
            arguments,
            raw_arguments,
            status,
            result,
            ..
        }) => {
            let _ = writeln!(out, "**Tool call** `{name}` ({})\n", call_status(*status));
            let args = match raw_arguments {
                Some(raw) if arguments.is_null() => raw.clone(),
                _ => serde_json::to_string_pretty(arguments).unwrap_or_default(),
            };
            let _ = writeln!(out, "Arguments:\n\n{}", fenced(&args, "json"));
            if let Some(result) = result {
                let mut label = String::from(if result.is_error {
                    "Result (error)"
                } else {
                    "Result"
                });
                if let Some(ms) = result.duration_ms {
                    let _ = write!(label, ", {ms} ms");
                }
                let _ = writeln!(out, "\n{label}:\n\n{}", fenced(&result.content, ""));
                if let Some(path) = &result.offload_path {
                    let _ = writeln!(out, "\n*Full output offloaded to `{path}`.*");
                }
            }
        }
        Block::Steer { text, .. } => {
            let _ = writeln!(out, "**User (steered into the turn):**\n");
            let _ = writeln!(out, "{}", text.trim_end());
        }
        Block::Error { message, kind } => {
            let _ = writeln!(out, "> **Error** ({kind}):");
            for line in message.lines() {
                let _ = writeln!(out, "> {line}");
            }
        }
    }
}

fn call_status(status: ToolCallStatus) -> &'static str {
    match status {
        ToolCallStatus::Streaming => "streaming",
        ToolCallStatus::Ready => "ready",
        ToolCallStatus::WaitingPermission => "waiting for permission",
        ToolCallStatus::WaitingAnswer => "waiting for an answer",
        ToolCallStatus::Approved => "approved",
        ToolCallStatus::Running => "running",
        ToolCallStatus::Success => "success",
        ToolCallStatus::Error => "error",
        ToolCallStatus::Denied => "denied",
        ToolCallStatus::Cancelled => "cancelled",
        ToolCallStatus::Interrupted => "interrupted",
    }
}

/// `text` in a code fence longer than any run of backticks inside it.
fn fenced(text: &str, lang: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest.max(2) + 1);
    format!("{fence}{lang}\n{}\n{fence}", text.trim_end_matches('\n'))
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Unix ms as `YYYY-MM-DD HH:MM:SS UTC`.
pub(super) fn format_time(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}
