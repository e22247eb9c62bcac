//! Context building: turns an agent's stored history into the provider request.
//!
//! The one place that decides what the model sees of the past: which messages, which of
//! their blocks, with which system prompt, tools and options. Error blocks are for clients,
//! never sent back; reasoning (with the provider's signatures) goes into the request, and
//! each wire format sends back only what its API requires. An assistant message is
//! replayed step by step (its reasoning and text, its tool calls under the ids the provider
//! gave them, then one result per call), so every tool call the model sees has its result. A failed or empty assistant turn is left out; consecutive user messages are
//! merged (some APIs require alternating roles).

pub mod budget;
pub(crate) mod legacy;
mod prices;
mod select;
pub mod summary;
pub mod tokens;

pub use prices::Prices;
pub use select::{Point, Selection, select};

use agent_proto::{
    Agent, Block, ContextReport, Message, MessageStatus, ModelInfo, Role, ToolCallBlock,
    ToolCallResult, ToolCallStatus,
};

use crate::profiles::PromptFrame;
use crate::provider::{
    ChatMessage, DocumentRef, ImageRef, Part, ProviderRequest, ReasoningPart, ToolCallRequest,
    ToolSpec,
};
use crate::store::Summary;
use budget::{Kind, Meta, ShrinkReport};
use tokens::{Calibration, RequestEstimate};

/// What a model call is built from.
#[derive(Debug, Clone, Copy)]
pub struct ContextInput<'a> {
    pub agent: &'a Agent,
    /// The agent's messages before the assistant message being written, oldest first.
    pub history: &'a [Message],
    /// The assistant message being written (its earlier steps are part of the context).
    pub current: Option<&'a Message>,
    pub model: &'a ModelInfo,
    /// The tools offered (with native function calling).
    pub tools: &'a [ToolSpec],
    /// The agent's newest summary, if any.
    pub summary: Option<&'a Summary>,
    /// The profile and environment of this request (`None`: the agent's own prompt and
    /// settings alone, as in a summary's context).
    pub frame: Option<&'a PromptFrame>,
    /// The agent's kept message prices (`None`: everything is priced afresh).
    pub prices: Option<&'a std::sync::Mutex<Prices>>,
}

impl ContextInput<'_> {
    /// The output cap asked for: the agent's, else its profile's (never above the model's).
    pub fn max_output_tokens(&self) -> Option<u32> {
        output_cap(self.agent, self.frame)
    }

    /// The temperature asked for: the agent's, else its profile's.
    pub fn temperature(&self) -> Option<f64> {
        self.agent
            .settings
            .temperature
            .or_else(|| self.frame?.profile.as_ref()?.temperature)
    }
}

/// The output cap an agent's settings ask for, else its profile's.
fn output_cap(agent: &Agent, frame: Option<&PromptFrame>) -> Option<u32> {
    agent
        .settings
        .max_output_tokens
        .or_else(|| frame?.profile.as_ref()?.max_output_tokens)
}

/// Result text for a call that has none (it never ran); keeps the transcript valid.
pub const NO_RESULT: &str = "(no result: the call did not run)";

/// How the first message of a request that carries a summary starts.
pub const SUMMARY_HEADER: &str = "[Context Summary]";

/// Whether the tools go to the model as text (the legacy `<function_call>` protocol)
/// rather than by native function calling.
pub fn uses_legacy_tools(model: &ModelInfo, tools: &[ToolSpec]) -> bool {
    !model.tools && !tools.is_empty()
}

/// Which part of the history the model sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Visible<'a> {
    /// Index of the first history message sent as is.
    pub start: usize,
    /// The summary standing in for the messages before `start`, if it applies.
    pub summary: Option<&'a Summary>,
    /// Messages before the context edge.
    pub hidden_by_edge: usize,
    /// Messages the summary replaces.
    pub summarized: usize,
}

/// The context edge hides everything up to its message; a summary replaces everything up
/// to its last message, unless the edge is later (then the summary covers hidden messages
/// only, and is left out).
pub fn visible<'a>(
    history: &[Message],
    edge: Option<&str>,
    summary: Option<&'a Summary>,
) -> Visible<'a> {
    let position = |id: &str| history.iter().position(|m| m.id == id);
    let hidden_by_edge = edge.and_then(position).map_or(0, |at| at + 1);
    let mut visible = Visible {
        start: hidden_by_edge,
        summary: None,
        hidden_by_edge,
        summarized: 0,
    };
    if let Some(summary) = summary
        && let Some(at) = position(&summary.through_message_id)
        && at >= hidden_by_edge
    {
        visible.summarized = at + 1 - hidden_by_edge;
        visible.start = at + 1;
        visible.summary = Some(summary);
    }
    visible
}

/// What the daemon learns about an agent's model calls as it goes (kept in memory).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Tracker {
    /// Our estimates, corrected by what the provider counted.
    pub calibration: Calibration,
    /// Input tokens the provider reported for the last call.
    pub last_reported: Option<u64>,
    /// A summary was just made: the next summarization check is skipped.
    pub skip_next_check: bool,
}

/// A request before fitting, with what each of its messages is.
#[derive(Debug, Clone)]
pub struct Assembled {
    pub request: ProviderRequest,
    pub metas: Vec<Meta>,
    /// The estimate of each message of `request` ([`tokens::estimate_message`]).
    pub costs: Vec<u64>,
    pub hidden_by_edge: usize,
    pub summarized: usize,
}

/// The request for the next model call, fitted into the model's window.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub request: ProviderRequest,
    /// The estimate of `request` by part, before calibration.
    pub estimate: RequestEstimate,
    pub report: ContextReport,
}

/// Tokens a request may use: the window minus the output reserve. The reserve is the
/// model's (or the agent's lower) output cap, but at most half the window, so a model
/// whose configured output cap is as big as its window still gets half of it for input.
pub fn budget(agent: &Agent, frame: Option<&PromptFrame>, model: &ModelInfo) -> u64 {
    let window = u64::from(model.context_window);
    let output = output_cap(agent, frame)
        .map_or(model.max_output_tokens, |n| n.min(model.max_output_tokens));
    window - u64::from(output).min(window / 2)
}

/// Builds the request and fits it into the budget (see [`budget::fit`]).
pub fn prepare(input: ContextInput<'_>, calibration: Calibration) -> Prepared {
    let Assembled {
        mut request,
        mut metas,
        costs,
        hidden_by_edge,
        summarized,
    } = assemble(input);
    let mut shrink = ShrinkReport {
        hidden_by_edge,
        summarized_messages: summarized,
        ..ShrinkReport::default()
    };
    let budget = budget(input.agent, input.frame, input.model);
    let estimate = budget::fit_priced(
        &mut request,
        &mut metas,
        costs,
        budget,
        calibration,
        &mut shrink,
    );
    let count = |n: usize| n as u64;
    let report = ContextReport {
        context_window: u64::from(input.model.context_window),
        budget,
        system_tokens: calibration.apply(estimate.system),
        tools_tokens: calibration.apply(estimate.tools),
        messages_tokens: calibration.apply(estimate.messages),
        estimated_before: shrink.estimated_before,
        stubbed_results: count(shrink.stubbed_results),
        dropped_rounds: count(shrink.dropped_rounds),
        hidden_by_edge: count(shrink.hidden_by_edge),
        summarized_messages: count(shrink.summarized_messages),
        over_budget: shrink.over_budget,
    };
    Prepared {
        request,
        estimate,
        report,
    }
}

/// Collects the request's messages with their round and kind.
#[derive(Debug, Default)]
struct Builder {
    messages: Vec<ChatMessage>,
    metas: Vec<Meta>,
    /// The price of each message, once priced (see [`Builder::price_from`]).
    costs: Vec<u64>,
    round: usize,
}

impl Builder {
    /// Prices the messages pushed since `from`: what the history message at `position`
    /// became, with its kept prices when there are any.
    fn price_from(&mut self, from: usize, kept: Option<(&mut Prices, usize, &Message)>) {
        let messages = &self.messages[from..];
        match kept {
            Some((kept, position, message)) => {
                kept.price_at(position, message, messages, &mut self.costs);
            }
            None => prices::price(messages, &mut self.costs),
        }
    }

    fn push(&mut self, message: ChatMessage, kind: Kind) {
        self.messages.push(message);
        self.metas.push(Meta {
            round: self.round,
            kind,
        });
    }
}

/// Everything visible, as provider messages, unfitted.
pub fn assemble(input: ContextInput<'_>) -> Assembled {
    let legacy = uses_legacy_tools(input.model, input.tools);
    let visible = visible(
        input.history,
        input.agent.context_edge.as_deref(),
        input.summary,
    );
    let mut b = Builder::default();
    if let Some(summary) = visible.summary {
        b.push(
            ChatMessage::User {
                content: format!("{SUMMARY_HEADER}\n{}", summary.text),
                images: Vec::new(),
                documents: Vec::new(),
            },
            Kind::Summary,
        );
        b.price_from(0, None);
    }
    let mut kept = input
        .prices
        .filter(|_| input.history.len() >= prices::KEEP_FROM)
        .map(|p| p.lock().unwrap_or_else(std::sync::PoisonError::into_inner));
    if let Some(kept) = kept.as_mut() {
        kept.for_shape(prices::Shape {
            vision: input.model.vision,
            documents: input.model.documents,
            legacy,
        });
        kept.truncate(input.history.len());
    }
    for (position, message) in input.history.iter().enumerate().skip(visible.start) {
        if message.superseded {
            continue;
        }
        let from = b.messages.len();
        match message.role {
            Role::User => {
                b.round += 1;
                if push_user(&mut b, message, input.model) {
                    // Joined to the message before: that one's price changed.
                    let last = from - 1;
                    b.costs[last] = tokens::estimate_message(&b.messages[last]);
                }
            }
            Role::Assistant => {
                if matches!(
                    message.status,
                    MessageStatus::Pending | MessageStatus::Streaming
                ) {
                    continue; // being written by another run
                }
                push_assistant(&mut b, message, legacy);
            }
        }
        b.price_from(from, kept.as_deref_mut().map(|k| (k, position, message)));
    }
    drop(kept);
    if let Some(current) = input.current {
        let from = b.messages.len();
        push_assistant(&mut b, current, legacy);
        b.price_from(from, None);
    }
    let request = ProviderRequest {
        model: input.model.id.clone(),
        system: system_prompt(&input, legacy),
        messages: b.messages,
        tools: if legacy {
            Vec::new()
        } else {
            input.tools.to_vec()
        },
        max_output_tokens: input
            .max_output_tokens()
            .map(|n| n.min(input.model.max_output_tokens)),
        temperature: input.temperature(),
        options: Default::default(),
    };
    Assembled {
        request,
        metas: b.metas,
        costs: b.costs,
        hidden_by_edge: visible.hidden_by_edge,
        summarized: visible.summarized,
    }
}

/// The system prompt: the profile's (rendered), the agent's own, the tools as text when
/// they go that way, the skills section, and last the environment section; `None` when all
/// are empty.
fn system_prompt(input: &ContextInput<'_>, legacy: bool) -> Option<String> {
    let mut parts: Vec<String> = Vec::new();
    if let Some(prompt) = input.frame.and_then(PromptFrame::profile_prompt) {
        parts.push(prompt);
    }
    if let Some(own) = input
        .agent
        .system_prompt
        .as_ref()
        .filter(|s| !s.trim().is_empty())
    {
        parts.push(own.clone());
    }
    if legacy {
        parts.push(legacy::tools_prompt(input.tools));
    }
    if let Some(frame) = input.frame {
        parts.extend(frame.instructions.as_deref().map(str::to_owned));
        parts.extend(frame.skills.clone());
        parts.push(frame.environment.section());
    }
    (!parts.is_empty()).then(|| parts.join("\n\n"))
}

/// The line a document stands as for a model that does not take documents: where the
/// daemon's copy is, so the model can read it with its tools.
fn document_line(path: &str, name: &str, mime_type: &str, size: u64) -> String {
    let kind = if mime_type == "application/pdf" {
        "a PDF document"
    } else {
        mime_type
    };
    format!(
        "[attached file: {path} ({name}, {size} bytes, {kind}); not included: this model does not read documents. Read it with your tools if you need it]"
    )
}

fn message_text(message: &Message) -> String {
    let mut text = String::new();
    for block in &message.blocks {
        if let Block::Text { text: t } = block {
            text.push_str(t);
        }
    }
    text
}

/// A user message: its text, its images (shown to vision models, named by path to the
/// others) and its documents (given to models that take them, named by path to the others:
/// no bytes go where the model's capabilities do not say it reads them). True when it was
/// joined to the message before.
fn push_user(b: &mut Builder, message: &Message, model: &ModelInfo) -> bool {
    let mut text = message_text(message);
    let mut images = Vec::new();
    let mut documents = Vec::new();
    let name_it = |text: &mut String, line: String| {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&line);
    };
    for block in &message.blocks {
        match block {
            Block::Image { mime_type, path } if model.vision => images.push(ImageRef {
                path: path.into(),
                mime_type: mime_type.clone(),
            }),
            Block::Image { mime_type, path } => name_it(
                &mut text,
                format!("[image attached as a file: {path} ({mime_type})]"),
            ),
            Block::Document {
                mime_type,
                path,
                name,
                size,
            } if model.documents => documents.push(DocumentRef {
                path: path.into(),
                mime_type: mime_type.clone(),
                name: name.clone(),
                size: *size,
            }),
            Block::Document {
                mime_type,
                path,
                name,
                size,
            } => name_it(&mut text, document_line(path, name, mime_type, *size)),
            _ => {}
        }
    }
    if text.trim().is_empty() && images.is_empty() && documents.is_empty() {
        return false;
    }
    // A user message right after another (the answer between failed) joins it, and that
    // round becomes part of this one. Never joined: a summary or legacy tool results.
    let round = b.round;
    if let (
        Some(ChatMessage::User {
            content,
            images: previous,
            documents: previous_documents,
        }),
        Some(meta),
    ) = (b.messages.last_mut(), b.metas.last_mut())
        && meta.kind == Kind::User
    {
        if !text.is_empty() {
            content.push_str("\n\n");
            content.push_str(&text);
        }
        previous.extend(images);
        previous_documents.extend(documents);
        meta.round = round;
        true
    } else {
        b.push(
            ChatMessage::User {
                content: text,
                images,
                documents,
            },
            Kind::User,
        );
        false
    }
}

/// One step of an assistant message: the reasoning and text the model wrote, then the
/// calls it made.
#[derive(Debug, Default)]
pub struct Step<'a> {
    pub text: String,
    /// The step's reasoning blocks, in order, with what the provider needs back of them.
    pub reasoning: Vec<ReasoningPart>,
    pub calls: Vec<StepCall<'a>>,
    /// The step's text and reasoning blocks in their order (`Part::Text`, `Part::Reasoning`).
    pieces: Vec<Part>,
    /// The user's words steered in after the step's calls (`Block::Steer`), in order: the
    /// model sees them as a user message after the step's results.
    pub steers: Vec<&'a str>,
}

impl Step<'_> {
    /// The step's pieces and calls in the order the model wrote them: each call before
    /// the pieces that came after it (`piecesAfter`, interleaved thinking), else after
    /// all of them.
    pub fn order(&self) -> Vec<Part> {
        let mut order = Vec::with_capacity(self.pieces.len() + self.calls.len());
        let mut calls = self.calls.iter().enumerate().peekable();
        for (k, piece) in self.pieces.iter().enumerate() {
            while let Some((j, _)) = calls
                .next_if(|(_, c)| self.pieces.len().saturating_sub(c.pieces_after as usize) <= k)
            {
                order.push(Part::Call(j));
            }
            order.push(piece.clone());
        }
        order.extend(calls.map(|(j, _)| Part::Call(j)));
        order
    }
}

#[derive(Debug)]
pub struct StepCall<'a> {
    /// The call's id in the message (unique there).
    pub id: &'a str,
    /// The id the provider gave it, which the provider is sent back.
    pub provider_id: &'a str,
    pub name: &'a str,
    pub arguments: String,
    pub result: Option<&'a ToolCallResult>,
    pub signature: Option<&'a str>,
    /// How many of the step's pieces came after the call.
    pub pieces_after: u32,
    pub status: ToolCallStatus,
}

impl StepCall<'_> {
    /// Whether the model is told the call failed: its result says so, or it ended in
    /// error, denied, cancelled or interrupted, or it has no result (it never ran).
    pub fn failed(&self) -> bool {
        self.result.is_none_or(|r| r.is_error)
            || matches!(
                self.status,
                ToolCallStatus::Error
                    | ToolCallStatus::Denied
                    | ToolCallStatus::Cancelled
                    | ToolCallStatus::Interrupted
            )
    }
}

/// Splits an assistant message into its steps: a step ends with its tool calls, so text or
/// reasoning after a tool call starts the next step.
pub fn steps(message: &Message) -> Vec<Step<'_>> {
    let mut steps: Vec<Step<'_>> = vec![Step::default()];
    let open_step = |steps: &mut Vec<Step<'_>>| {
        if steps
            .last()
            .is_some_and(|s| !s.calls.is_empty() || !s.steers.is_empty())
        {
            steps.push(Step::default());
        }
    };
    for block in &message.blocks {
        match block {
            Block::Text { text } => {
                open_step(&mut steps);
                if let Some(step) = steps.last_mut() {
                    let start = step.text.len();
                    step.text.push_str(text);
                    step.pieces.push(Part::Text(start..step.text.len()));
                }
            }
            Block::Reasoning {
                text,
                signature,
                redacted,
                details,
            } => {
                open_step(&mut steps);
                if let Some(step) = steps.last_mut() {
                    step.pieces.push(Part::Reasoning(step.reasoning.len()));
                    step.reasoning.push(ReasoningPart {
                        text: text.clone(),
                        signature: signature.clone(),
                        redacted: redacted.clone(),
                        details: details.clone(),
                    });
                }
            }
            Block::ToolCall(ToolCallBlock {
                tool_call_id,
                name,
                arguments,
                raw_arguments,
                result,
                signature,
                provider_call_id,
                pieces_after,
                status,
                ..
            }) => {
                if let Some(step) = steps.last_mut() {
                    step.calls.push(StepCall {
                        id: tool_call_id,
                        provider_id: provider_call_id.as_deref().unwrap_or(tool_call_id),
                        name,
                        arguments: raw_arguments
                            .clone()
                            .unwrap_or_else(|| arguments.to_string()),
                        result: result.as_ref(),
                        signature: signature.as_deref(),
                        pieces_after: pieces_after.unwrap_or(0),
                        status: *status,
                    });
                }
            }
            Block::Steer { text, .. } => {
                if let Some(step) = steps.last_mut() {
                    step.steers.push(text);
                }
            }
            Block::Error { .. } | Block::Image { .. } | Block::Document { .. } => {}
        }
    }
    steps.retain(|s| !s.text.trim().is_empty() || !s.calls.is_empty() || !s.steers.is_empty());
    steps
}

/// An assistant message with native tool calls: per step, the assistant turn (reasoning,
/// text, calls under the ids the provider gave them) and one result per call.
fn push_assistant(b: &mut Builder, message: &Message, legacy: bool) {
    if legacy {
        return push_assistant_legacy(b, message);
    }
    for step in steps(message) {
        let order = step.order();
        let tool_calls = step
            .calls
            .iter()
            .map(|c| ToolCallRequest {
                id: c.provider_id.to_owned(),
                name: c.name.to_owned(),
                arguments: c.arguments.clone(),
                signature: c.signature.map(str::to_owned),
            })
            .collect();
        b.push(
            ChatMessage::Assistant {
                content: step.text,
                tool_calls,
                reasoning: step.reasoning,
                order,
            },
            Kind::Assistant,
        );
        for call in step.calls {
            let content = call
                .result
                .map_or_else(|| NO_RESULT.to_owned(), |r| r.content.clone());
            b.push(
                ChatMessage::Tool {
                    tool_call_id: call.provider_id.to_owned(),
                    name: call.name.to_owned(),
                    content,
                    is_error: call.failed(),
                },
                Kind::ToolResult,
            );
        }
        push_steers(b, &step.steers);
    }
}

/// The user's words steered in after a step, as the user message that follows its
/// results (the wire formats join it to them where roles must alternate).
fn push_steers(b: &mut Builder, steers: &[&str]) {
    if steers.is_empty() {
        return;
    }
    b.push(
        ChatMessage::User {
            content: steers.join("\n\n"),
            images: Vec::new(),
            documents: Vec::new(),
        },
        Kind::User,
    );
}

/// An assistant message in the legacy protocol: calls rendered into the text, results
/// back in a user message.
fn push_assistant_legacy(b: &mut Builder, message: &Message) {
    for step in steps(message) {
        let mut content = step.text;
        for call in &step.calls {
            let arguments = serde_json::from_str(&call.arguments)
                .unwrap_or_else(|_| serde_json::Value::String(call.arguments.clone()));
            content.push_str(&legacy::render_call(call.name, &arguments));
        }
        // The text protocol replays no reasoning: no API asks for it there.
        b.push(
            ChatMessage::Assistant {
                content,
                tool_calls: Vec::new(),
                reasoning: Vec::new(),
                order: Vec::new(),
            },
            Kind::Assistant,
        );
        if !step.calls.is_empty() {
            let results: Vec<String> = step
                .calls
                .iter()
                .map(|c| {
                    let content = c.result.map_or(NO_RESULT, |r| r.content.as_str());
                    legacy::render_result(c.name, c.id, content, c.failed())
                })
                .collect();
            b.push(
                ChatMessage::User {
                    content: results.join("\n"),
                    images: Vec::new(),
                    documents: Vec::new(),
                },
                Kind::ToolResult,
            );
        }
        push_steers(b, &step.steers);
    }
}

#[cfg(test)]
mod tests;
