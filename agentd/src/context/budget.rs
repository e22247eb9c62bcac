//! Fitting a request into the model's window.
//!
//! Budget = context window - max output tokens. When the estimate is over it, the request
//! is shrunk in this order, stopping as soon as it fits:
//! 1. tool results of earlier rounds become short stubs (name, size, offload path if any),
//!    oldest first;
//! 2. the oldest whole rounds are dropped (a round is a user message and everything after
//!    it up to the next user message), so a tool call never loses its result.
//!
//! The latest round is never dropped or stubbed. What was done is reported, so a preview can
//! show it.

use crate::provider::{ChatMessage, ProviderRequest};

use super::tokens::{Calibration, RequestEstimate, estimate, estimate_parts};

/// What a message of the request is, for shrinking.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A summary of earlier rounds: kept.
    Summary,
    User,
    Assistant,
    /// One tool result (or, in the legacy protocol, a user message of results).
    ToolResult,
}

/// Per message of the request: its round and kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meta {
    pub round: usize,
    pub kind: Kind,
}

/// What shrinking did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ShrinkReport {
    /// Tokens the request may use (context window - max output).
    pub budget: u64,
    /// Estimated tokens before shrinking.
    pub estimated_before: u64,
    /// Estimated tokens as sent.
    pub estimated_after: u64,
    /// Tool results replaced by stubs.
    pub stubbed_results: usize,
    /// Whole rounds left out.
    pub dropped_rounds: usize,
    /// Messages hidden by the context edge.
    pub hidden_by_edge: usize,
    /// Messages replaced by the stored summary.
    pub summarized_messages: usize,
    /// The request is still over the budget (its latest round alone is too big).
    pub over_budget: bool,
}

/// The stub a long tool result becomes (`name`: the tool's, when the message has one).
pub fn stub(name: Option<&str>, content: &str) -> String {
    let offload = content
        .lines()
        .next()
        .and_then(|first| first.split("full text in ").nth(1))
        .and_then(|rest| rest.split(';').next())
        .map(|path| format!("; the full output is in {path}"))
        .unwrap_or_default();
    let what = name.map_or_else(|| "tool result".to_owned(), |n| format!("{n} result"));
    format!(
        "[{what} cut to save context: {} chars, {} lines{offload}]",
        content.chars().count(),
        content.lines().count()
    )
}

/// Keeps the items whose flag in `keep` (one per item, in order) is true.
fn retain_marked<T>(items: &mut Vec<T>, keep: &[bool]) {
    let mut keep = keep.iter();
    items.retain(|_| keep.next().copied().unwrap_or(true));
}

/// Prices every message of `request`, then fits it (see [`fit_priced`]).
#[cfg(test)]
pub fn fit(
    request: &mut ProviderRequest,
    metas: &mut Vec<Meta>,
    budget: u64,
    calibration: Calibration,
    report: &mut ShrinkReport,
) -> RequestEstimate {
    let costs = request
        .messages
        .iter()
        .map(super::tokens::estimate_message)
        .collect();
    fit_priced(request, metas, costs, budget, calibration, report)
}

/// Shrinks `request` (described by `metas`, each message priced in `costs`) until its
/// calibrated estimate fits `budget`.
///
/// Each message is priced once: stubbing changes its price, dropping removes it, and the
/// total is kept by those edits (pricing the request again after each phase made a turn
/// of a long history cost three passes over all of it).
pub fn fit_priced(
    request: &mut ProviderRequest,
    metas: &mut Vec<Meta>,
    mut costs: Vec<u64>,
    budget: u64,
    calibration: Calibration,
    report: &mut ShrinkReport,
) -> RequestEstimate {
    debug_assert_eq!(costs.len(), request.messages.len());
    let mut estimated = estimate_parts(request);
    estimated.messages = costs.iter().sum();
    report.budget = budget;
    report.estimated_before = calibration.apply(estimated.total());
    let latest = metas.iter().map(|m| m.round).max().unwrap_or(0);
    let over = |e: &RequestEstimate| calibration.apply(e.total()) > budget;

    // 1. Stub old tool results, oldest first.
    let mut i = 0;
    while over(&estimated) && i < request.messages.len() {
        let meta = metas[i];
        if meta.kind == Kind::ToolResult && meta.round < latest {
            let (name, content) = match &mut request.messages[i] {
                ChatMessage::Tool { content, name, .. } => (Some(name.as_str()), content),
                ChatMessage::User { content, .. } | ChatMessage::Assistant { content, .. } => {
                    (None, content)
                }
            };
            let replacement = stub(name, content);
            let (old, new) = (estimate(content), estimate(&replacement));
            if new < old {
                estimated.messages = estimated.messages.saturating_sub(old - new);
                costs[i] = costs[i].saturating_sub(old - new);
                *content = replacement;
                report.stubbed_results += 1;
            }
        }
        i += 1;
    }

    // 2. Drop the oldest whole rounds (never the latest, never a summary): count what each
    //    round costs, pick the rounds, then drop them in one pass (a pass per round was
    //    quadratic: 3.7 s before the model call of a 4,000-message history).
    if over(&estimated) {
        let droppable = |m: &Meta| m.kind != Kind::Summary && m.round < latest;
        let mut per_round = std::collections::BTreeMap::<usize, u64>::new();
        for (meta, cost) in metas.iter().zip(&costs) {
            if droppable(meta) {
                *per_round.entry(meta.round).or_default() += cost;
            }
        }
        let mut last_dropped = None;
        for (round, cost) in per_round {
            if !over(&estimated) {
                break;
            }
            estimated.messages = estimated.messages.saturating_sub(cost);
            last_dropped = Some(round);
            report.dropped_rounds += 1;
        }
        if let Some(last) = last_dropped {
            let keep: Vec<bool> = metas
                .iter()
                .map(|m| !(droppable(m) && m.round <= last))
                .collect();
            retain_marked(&mut request.messages, &keep);
            retain_marked(metas, &keep);
            retain_marked(&mut costs, &keep);
            estimated.messages = costs.iter().sum();
        }
    }
    // A round that starts with assistant text (its user message was dropped or hidden)
    // would open the conversation with the model speaking; some APIs refuse that.
    let leading = request
        .messages
        .iter()
        .take_while(|m| matches!(m, ChatMessage::Assistant { .. } | ChatMessage::Tool { .. }))
        .count();
    if leading > 0 {
        request.messages.drain(..leading);
        metas.drain(..leading);
        let removed: u64 = costs.drain(..leading).sum();
        estimated.messages = estimated.messages.saturating_sub(removed);
    }
    report.over_budget = over(&estimated);
    report.estimated_after = calibration.apply(estimated.total());
    estimated
}

/// Why a fitted request is not sent: shrinking left it over the budget (`overBudget`), and
/// a provider would refuse it or cut it silently. Names the parts, so the user sees what
/// to trim. `None` when it fits.
pub fn overflow(report: &agent_proto::ContextReport) -> Option<String> {
    if !report.over_budget {
        return None;
    }
    let total = report.system_tokens + report.tools_tokens + report.messages_tokens;
    let hint = if report.tools_tokens > report.budget / 2 {
        "the tools take most of it: give the agent fewer MCP tools (settings.enabledMcpTools \
         or enabledTools) or servers with smaller tool schemas"
    } else {
        "the latest message (with its tool results) is too large: shorten it, or use a model \
         with a larger window"
    };
    Some(format!(
        "the request does not fit the model's context and was not sent: about {total} tokens \
         (tools {}, system prompt {}, messages {}) for a budget of {} (a {}-token window less \
         the room kept for the answer); {hint}",
        report.tools_tokens,
        report.system_tokens,
        report.messages_tokens,
        report.budget,
        report.context_window
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ToolCallRequest;

    fn user(text: &str) -> ChatMessage {
        ChatMessage::User {
            content: text.into(),
            images: vec![],
            documents: Vec::new(),
        }
    }

    fn assistant(text: &str, calls: &[&str]) -> ChatMessage {
        ChatMessage::Assistant {
            content: text.into(),
            tool_calls: calls
                .iter()
                .map(|id| ToolCallRequest {
                    id: (*id).into(),
                    name: "bash".into(),
                    arguments: "{}".into(),
                    signature: None,
                })
                .collect(),
            reasoning: vec![],
            order: Vec::new(),
        }
    }

    fn tool(id: &str, text: &str) -> ChatMessage {
        ChatMessage::Tool {
            tool_call_id: id.into(),
            name: "bash".into(),
            content: text.into(),
            is_error: false,
        }
    }

    /// Rounds of (user text, tool result size): user, assistant+call, tool, assistant.
    fn conversation(rounds: &[(&str, usize)]) -> (ProviderRequest, Vec<Meta>) {
        let mut messages = Vec::new();
        let mut metas = Vec::new();
        for (round, (text, size)) in rounds.iter().enumerate() {
            let id = format!("c{round}");
            let parts = [
                (user(text), Kind::User),
                (assistant("checking", &[&id]), Kind::Assistant),
                (tool(&id, &"word ".repeat(*size)), Kind::ToolResult),
                (assistant("done", &[]), Kind::Assistant),
            ];
            for (message, kind) in parts {
                messages.push(message);
                metas.push(Meta { round, kind });
            }
        }
        let request = ProviderRequest {
            model: "m".into(),
            system: None,
            messages,
            tools: vec![],
            max_output_tokens: None,
            temperature: None,
            options: Default::default(),
        };
        (request, metas)
    }

    /// A compact view: u<round>, a, t<len>, s.
    fn view(request: &ProviderRequest) -> Vec<String> {
        request
            .messages
            .iter()
            .map(|m| match m {
                ChatMessage::User { content, .. } => format!("u:{content}"),
                ChatMessage::Assistant { tool_calls, .. } if !tool_calls.is_empty() => {
                    format!("a:{}", tool_calls[0].id)
                }
                ChatMessage::Assistant { .. } => "a".into(),
                ChatMessage::Tool {
                    tool_call_id,
                    content,
                    ..
                } if content.starts_with("[bash result cut") => {
                    format!("stub:{tool_call_id}")
                }
                ChatMessage::Tool { tool_call_id, .. } => format!("t:{tool_call_id}"),
            })
            .collect()
    }

    /// Every tool message answers a call of the assistant message before it.
    fn assert_paired(request: &ProviderRequest) {
        let mut open: Vec<String> = Vec::new();
        for m in &request.messages {
            match m {
                ChatMessage::Assistant { tool_calls, .. } => {
                    assert!(open.is_empty(), "unanswered {open:?}");
                    open = tool_calls.iter().map(|c| c.id.clone()).collect();
                }
                ChatMessage::Tool { tool_call_id, .. } => {
                    let at = open
                        .iter()
                        .position(|o| o == tool_call_id)
                        .expect("a result without its call");
                    open.remove(at);
                }
                ChatMessage::User { .. } => assert!(open.is_empty(), "unanswered {open:?}"),
            }
        }
    }

    #[test]
    fn table() {
        struct Case {
            rounds: Vec<(&'static str, usize)>,
            budget: u64,
            expect: Vec<&'static str>,
            stubbed: usize,
            dropped: usize,
            over: bool,
        }
        let cases = vec![
            // fits: untouched
            Case {
                rounds: vec![("one", 10), ("two", 10)],
                budget: 10_000,
                expect: vec!["u:one", "a:c0", "t:c0", "a", "u:two", "a:c1", "t:c1", "a"],
                stubbed: 0,
                dropped: 0,
                over: false,
            },
            // old results stubbed first, oldest first; the latest round's result stays
            Case {
                rounds: vec![("one", 400), ("two", 400), ("three", 400)],
                budget: 600,
                expect: vec![
                    "u:one", "a:c0", "stub:c0", "a", "u:two", "a:c1", "stub:c1", "a", "u:three",
                    "a:c2", "t:c2", "a",
                ],
                stubbed: 2,
                dropped: 0,
                over: false,
            },
            // then whole rounds dropped, oldest first, pairs intact
            Case {
                rounds: vec![("one", 400), ("two", 400), ("three", 400)],
                budget: 475,
                expect: vec![
                    "u:two", "a:c1", "stub:c1", "a", "u:three", "a:c2", "t:c2", "a",
                ],
                stubbed: 2,
                dropped: 1,
                over: false,
            },
            // the latest round alone is over: everything else goes, it stays, reported
            Case {
                rounds: vec![("one", 10), ("two", 5000)],
                budget: 300,
                expect: vec!["u:two", "a:c1", "t:c1", "a"],
                // a short result is not worth a stub
                stubbed: 0,
                dropped: 1,
                over: true,
            },
        ];
        for (n, case) in cases.into_iter().enumerate() {
            let (mut request, mut metas) = conversation(&case.rounds);
            let mut report = ShrinkReport::default();
            fit(
                &mut request,
                &mut metas,
                case.budget,
                Calibration::default(),
                &mut report,
            );
            assert_eq!(view(&request), case.expect, "case {n}: {report:?}");
            assert_eq!(
                (
                    report.stubbed_results,
                    report.dropped_rounds,
                    report.over_budget
                ),
                (case.stubbed, case.dropped, case.over),
                "case {n}: {report:?}"
            );
            assert_eq!(metas.len(), request.messages.len());
            assert_paired(&request);
            if !case.over {
                assert!(
                    report.estimated_after <= case.budget,
                    "case {n}: {report:?}"
                );
            }
        }
    }

    #[test]
    fn summaries_are_kept() {
        let (mut request, mut metas) = conversation(&[("one", 400), ("two", 400)]);
        request
            .messages
            .insert(0, user("[Context Summary] earlier work"));
        metas.insert(
            0,
            Meta {
                round: 0,
                kind: Kind::Summary,
            },
        );
        for meta in metas.iter_mut().skip(1) {
            meta.round += 1;
        }
        let mut report = ShrinkReport::default();
        fit(
            &mut request,
            &mut metas,
            300,
            Calibration::default(),
            &mut report,
        );
        assert_eq!(view(&request)[0], "u:[Context Summary] earlier work");
        assert_eq!(report.dropped_rounds, 1);
    }

    #[test]
    fn stubs_name_the_size_and_the_offload() {
        assert_eq!(
            stub(None, "a\nb\nc"),
            "[tool result cut to save context: 5 chars, 3 lines]"
        );
        assert_eq!(
            stub(Some("grep"), "a"),
            "[grep result cut to save context: 1 chars, 1 lines]"
        );
        let offloaded = "[output offloaded: 9000 chars, 300 lines; full text in /d/sessions/a/tool_x.offload; read it with read_file]\n--- head ---";
        assert!(
            stub(Some("bash"), offloaded)
                .ends_with("; the full output is in /d/sessions/a/tool_x.offload]")
        );
    }
}
