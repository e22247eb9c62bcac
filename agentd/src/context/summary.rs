//! Summarization: folding earlier rounds into one model-written `[Context Summary]`.
//!
//! When the request passes the threshold (default 80% of the window, by our estimate or by
//! what the provider counted for the last call), every visible round but the last few
//! (default 3) is summarized by the model: its input is the earlier summary (if any) and
//! those rounds as plain text, tool results cut to 500 chars, reasoning left out. The
//! summary is stored; the messages stay. This module decides when and what; the loop makes
//! the call.

use agent_proto::{Block, Message, ModelInfo, Role, ToolCallBlock};

use super::tokens::estimate;
use super::{ContextInput, Visible, visible};
use crate::provider::{ChatMessage, ProviderRequest};

pub use crate::config::{DEFAULT_KEEP_ROUNDS, DEFAULT_SUMMARIZE_THRESHOLD as DEFAULT_THRESHOLD};

/// Tool results are cut to this many chars in the summary's input.
pub const RESULT_CHARS: usize = 500;

/// What the summarizer is told.
pub const SUMMARY_SYSTEM: &str = "You condense the history of a conversation between a user and an AI agent \
that uses tools, so the agent can continue the work from your summary alone. Write plain \
text, no preamble.";

const SUMMARY_INSTRUCTIONS: &str = "Summarize the conversation above for the agent that will continue it. Keep:\n\
- the user's goal and every requirement or constraint they stated;\n\
- decisions made and why;\n\
- files and paths read, created or changed, and commands run, with their outcome;\n\
- facts learned that later steps depend on (names, values, errors);\n\
- open tasks and the next step.\n\
Be concise; leave out pleasantries and anything already superseded.";

/// Where a summary would end: the index (in `history`) of the last message it covers,
/// when more than `keep_rounds` visible rounds exist. A round starts at a user message;
/// the round being answered (the last user message) counts as one.
pub fn split_point(
    history: &[Message],
    visible: &Visible<'_>,
    keep_rounds: usize,
) -> Option<usize> {
    let starts: Vec<usize> = history
        .iter()
        .enumerate()
        .skip(visible.start)
        .filter(|(_, m)| m.role == Role::User && !m.superseded)
        .map(|(i, _)| i)
        .collect();
    if starts.len() <= keep_rounds {
        return None;
    }
    // `keep_rounds` is at least 1 (checked with the config); 0 would keep nothing, not
    // even the round being answered, so it summarizes nothing either.
    let first_kept = *starts.get(starts.len() - keep_rounds)?;
    first_kept.checked_sub(1)
}

/// Whether the next request should be summarized first: its estimate (before shrinking)
/// or the provider's count for the last call is over `threshold` of the window, and there
/// is something to summarize.
pub fn due(
    estimated_before: u64,
    last_reported: Option<u64>,
    model: &ModelInfo,
    threshold: f64,
) -> bool {
    let limit = (f64::from(model.context_window) * threshold) as u64;
    estimated_before > limit || last_reported.is_some_and(|n| n > limit)
}

/// The transcript, one entry per message.
fn entries(messages: &[Message]) -> Vec<String> {
    let mut out = Vec::new();
    for message in messages.iter().filter(|m| !m.superseded) {
        let mut lines = Vec::new();
        for block in &message.blocks {
            match block {
                Block::Text { text } if !text.trim().is_empty() => lines.push(text.clone()),
                Block::Image { path, mime_type } => {
                    lines.push(format!("[image {path} ({mime_type})]"));
                }
                Block::Document { path, name, .. } => {
                    lines.push(format!("[document {name} at {path}]"));
                }
                Block::ToolCall(ToolCallBlock {
                    name,
                    arguments,
                    result,
                    ..
                }) => {
                    lines.push(format!("[called {name} {arguments}]"));
                    if let Some(result) = result {
                        let cut = cut(&result.content, RESULT_CHARS);
                        let label = if result.is_error { "error" } else { "result" };
                        lines.push(format!("[{name} {label}: {cut}]"));
                    }
                }
                _ => {}
            }
        }
        if lines.is_empty() {
            continue;
        }
        let who = match message.role {
            Role::User => "User",
            Role::Assistant => "Agent",
        };
        out.push(format!("{who}:\n{}\n\n", lines.join("\n")));
    }
    out
}

/// The entries that fit `room` tokens: the first one (it usually states the goal, cut to
/// a quarter of the room) and as many of the latest as fit, with a marker for the rest.
fn fit_entries(entries: Vec<String>, room: u64) -> String {
    let total: u64 = entries.iter().map(|e| estimate(e)).sum();
    if total <= room || entries.is_empty() {
        return entries.concat();
    }
    let mut first = entries[0].clone();
    while estimate(&first) > room / 4 && !first.is_empty() {
        let keep = first.chars().count() * 3 / 4;
        first = first.chars().take(keep).collect();
    }
    let mut used = estimate(&first) + 16;
    let mut tail = Vec::new();
    for entry in entries[1..].iter().rev() {
        let cost = estimate(entry);
        if used + cost > room {
            break;
        }
        used += cost;
        tail.push(entry.as_str());
    }
    let left_out = entries.len() - 1 - tail.len();
    tail.reverse();
    let mut text = first;
    if !text.ends_with("\n\n") {
        text.push_str("…\n\n");
    }
    if left_out > 0 {
        text.push_str(&format!("[… {left_out} messages left out …]\n\n"));
    }
    text.push_str(&tail.concat());
    text
}

fn cut(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        Some((at, _)) => format!("{}… ({} chars in all)", &text[..at], text.chars().count()),
        None => text.to_owned(),
    }
}

/// The request that asks the model for a summary of `messages` (after `previous`, the
/// summary they continue). The transcript is cut from its start to fit `budget`.
pub fn request(
    model: &ModelInfo,
    previous: Option<&str>,
    messages: &[Message],
    budget: u64,
) -> ProviderRequest {
    let fixed = estimate(SUMMARY_SYSTEM)
        + estimate(SUMMARY_INSTRUCTIONS)
        + previous.map_or(0, estimate)
        + 64;
    let text = fit_entries(entries(messages), budget.saturating_sub(fixed));
    let mut content = String::new();
    if let Some(previous) = previous {
        content.push_str(&format!(
            "Summary of the conversation before:\n{previous}\n\n"
        ));
    }
    content.push_str(&format!(
        "Conversation:\n\n{text}---\n{SUMMARY_INSTRUCTIONS}"
    ));
    let window = u64::from(model.context_window);
    let output = (window / 8)
        .clamp(256, 4096)
        .min(u64::from(model.max_output_tokens));
    ProviderRequest {
        model: model.id.clone(),
        system: Some(SUMMARY_SYSTEM.to_owned()),
        messages: vec![ChatMessage::User {
            content,
            images: Vec::new(),
            documents: Vec::new(),
        }],
        tools: Vec::new(),
        max_output_tokens: Some(u32::try_from(output).unwrap_or(u32::MAX)),
        temperature: None,
        options: Default::default(),
    }
}

/// What a summary of the input's history would cover: (index of its last message, the
/// previous summary's text, the messages to summarize).
pub fn plan<'a>(
    input: &ContextInput<'a>,
    keep_rounds: usize,
) -> Option<(usize, Option<&'a str>, &'a [Message])> {
    let visible = visible(
        input.history,
        input.agent.context_edge.as_deref(),
        input.summary,
    );
    let through = split_point(input.history, &visible, keep_rounds)?;
    let previous = visible.summary.map(|s| s.text.as_str());
    Some((through, previous, &input.history[visible.start..=through]))
}
