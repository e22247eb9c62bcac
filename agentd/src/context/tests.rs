//! Context building tests.

use agent_proto::{AgentMode, AgentSettings, SessionStatus, ToolCallStatus};
use serde_json::json;

use super::*;
use agent_proto::ToolCallBlock;

/// The request for the next model call, before fitting: everything visible, in order.
fn build_request(input: ContextInput<'_>) -> ProviderRequest {
    assemble(input).request
}

fn agent(system: Option<&str>) -> Agent {
    Agent {
        id: "a".into(),
        title: "t".into(),
        mode: AgentMode::Chat,
        provider: "p".into(),
        model: "m".into(),
        system_prompt: system.map(Into::into),
        workspace: None,
        profile: None,
        settings: AgentSettings {
            temperature: Some(0.5),
            max_output_tokens: Some(99_999),
            ..AgentSettings::default()
        },
        pinned: false,
        archived: false,
        status: SessionStatus::Idle,
        context_edge: None,
        parent_agent_id: None,
        fork_message_id: None,
        acp: None,
        sandbox: None,
        subagent_type: None,
        parent_tool_call_id: None,
        created_at: 0,
        updated_at: 0,
    }
}

fn model() -> ModelInfo {
    ModelInfo {
        provider: "p".into(),
        id: "m".into(),
        context_window: 1000,
        max_output_tokens: 500,
        tools: true,
        vision: false,
        reasoning: false,
        documents: false,
        input_price: None,
        output_price: None,
        served: None,
    }
}

fn msg(role: Role, status: MessageStatus, blocks: Vec<Block>) -> Message {
    Message::new("x", "a", role, blocks, status, 0)
}

fn text(t: &str) -> Block {
    Block::Text { text: t.into() }
}

fn call(id: &str, result: Option<&str>) -> Block {
    Block::ToolCall(ToolCallBlock {
        result: result.map(|r| ToolCallResult {
            content: r.into(),
            is_error: false,
            offload_path: None,
            duration_ms: Some(1),
        }),
        ..ToolCallBlock::new(
            id,
            "bash",
            json!({"command": id}),
            if result.is_some() {
                ToolCallStatus::Success
            } else {
                ToolCallStatus::Ready
            },
        )
    })
}

/// A compact view of the request's messages.
fn view(request: &ProviderRequest) -> Vec<String> {
    request
        .messages
        .iter()
        .map(|m| match m {
            ChatMessage::User {
                content,
                images,
                documents,
            } if images.is_empty() && documents.is_empty() => {
                format!("user: {content}")
            }
            ChatMessage::User {
                content,
                images,
                documents,
            } => {
                let paths: Vec<String> = images
                    .iter()
                    .map(|i| i.path.display().to_string())
                    .chain(documents.iter().map(|d| d.path.display().to_string()))
                    .collect();
                format!("user: {content} {paths:?}")
            }
            ChatMessage::Assistant {
                content,
                tool_calls,
                reasoning,
                ..
            } => {
                let calls: Vec<&str> = tool_calls.iter().map(|c| c.id.as_str()).collect();
                let thought: Vec<&str> = reasoning.iter().map(|r| r.text.as_str()).collect();
                if thought.is_empty() {
                    format!("assistant: {content} {calls:?}")
                } else {
                    format!("assistant: {thought:?} {content} {calls:?}")
                }
            }
            ChatMessage::Tool {
                tool_call_id,
                content,
                ..
            } => format!("tool {tool_call_id}: {content}"),
        })
        .collect()
}

#[test]
fn history_becomes_alternating_text() {
    let history = vec![
        msg(Role::User, MessageStatus::Done, vec![text("hi")]),
        msg(
            Role::Assistant,
            MessageStatus::Done,
            vec![Block::reasoning("think"), text("hel"), text("lo")],
        ),
        msg(Role::User, MessageStatus::Done, vec![text("q2")]),
        // failed with no text: left out, so the two user turns merge
        msg(
            Role::Assistant,
            MessageStatus::Error,
            vec![Block::Error {
                message: "HTTP 500".into(),
                kind: "providerHttpError".into(),
            }],
        ),
        msg(Role::User, MessageStatus::Done, vec![text("q3")]),
        // cancelled with partial text: kept, the user saw it
        msg(
            Role::Assistant,
            MessageStatus::Cancelled,
            vec![text("part")],
        ),
        msg(Role::User, MessageStatus::Done, vec![text("q4")]),
    ];
    let input = ContextInput {
        agent: &agent(Some("sys")),
        history: &history,
        current: None,
        model: &model(),
        tools: &[],
        summary: None,
        frame: None,
        prices: None,
    };
    let request = build_request(input);
    assert_eq!(
        view(&request),
        [
            "user: hi",
            "assistant: [\"think\"] hello []",
            "user: q2\n\nq3",
            "assistant: part []",
            "user: q4",
        ]
    );
    assert_eq!(request.system.as_deref(), Some("sys"));
    assert_eq!(request.max_output_tokens, Some(500), "capped by the model");
    assert_eq!(request.temperature, Some(0.5));
    let blank = agent(Some("  "));
    assert_eq!(
        build_request(ContextInput {
            agent: &blank,
            ..input
        })
        .system,
        None
    );
}

#[test]
fn steps_pair_every_call_with_its_result() {
    let history = vec![msg(Role::User, MessageStatus::Done, vec![text("do it")])];
    let current = msg(
        Role::Assistant,
        MessageStatus::Streaming,
        vec![
            Block::reasoning("plan"),
            text("First "),
            call("c1", Some("one")),
            call("c2", Some("two")),
            text("Then "),
            call("c3", None),
            text("done"),
        ],
    );
    let request = build_request(ContextInput {
        agent: &agent(None),
        history: &history,
        current: Some(&current),
        model: &model(),
        tools: &[],
        summary: None,
        frame: None,
        prices: None,
    });
    assert_eq!(
        view(&request),
        [
            "user: do it",
            "assistant: [\"plan\"] First  [\"c1\", \"c2\"]",
            "tool c1: one",
            "tool c2: two",
            "assistant: Then  [\"c3\"]",
            &format!("tool c3: {NO_RESULT}"),
            "assistant: done []",
        ]
    );
    match &request.messages[1] {
        ChatMessage::Assistant { tool_calls, .. } => {
            assert_eq!(tool_calls[0].arguments, r#"{"command":"c1"}"#);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn replay_keeps_signatures_reasoning_steps_and_the_providers_call_ids() {
    let history = vec![msg(Role::User, MessageStatus::Done, vec![text("go")])];
    let renamed = |id: &str, provider_id: &str, signature: Option<&str>| {
        let mut block = call(id, Some("ok"));
        if let Block::ToolCall(ToolCallBlock {
            provider_call_id,
            signature: sig,
            ..
        }) = &mut block
        {
            *provider_call_id = Some(provider_id.into());
            *sig = signature.map(Into::into);
        }
        block
    };
    let current = msg(
        Role::Assistant,
        MessageStatus::Streaming,
        vec![
            Block::Reasoning {
                text: "first".into(),
                signature: Some("s1".into()),
                redacted: None,
                details: None,
            },
            renamed("call_0", "call_0", Some("g1")),
            // reasoning right after calls opens the next step
            Block::Reasoning {
                text: String::new(),
                signature: None,
                redacted: Some("enc".into()),
                details: None,
            },
            renamed("call_0~2", "call_0", None),
        ],
    );
    let request = build_request(ContextInput {
        agent: &agent(None),
        history: &history,
        current: Some(&current),
        model: &model(),
        tools: &[],
        summary: None,
        frame: None,
        prices: None,
    });
    assert_eq!(
        view(&request),
        [
            "user: go",
            "assistant: [\"first\"]  [\"call_0\"]",
            "tool call_0: ok",
            "assistant: [\"\"]  [\"call_0\"]",
            "tool call_0: ok",
        ]
    );
    let ChatMessage::Assistant {
        tool_calls,
        reasoning,
        ..
    } = &request.messages[1]
    else {
        panic!("{:?}", request.messages[1]);
    };
    assert_eq!(tool_calls[0].signature.as_deref(), Some("g1"));
    assert_eq!(reasoning[0].signature.as_deref(), Some("s1"));
    let ChatMessage::Assistant { reasoning, .. } = &request.messages[3] else {
        panic!("{:?}", request.messages[3]);
    };
    assert_eq!(reasoning[0].redacted.as_deref(), Some("enc"));
}

#[test]
fn legacy_models_get_tools_as_text() {
    let mut model = model();
    model.tools = false;
    let tools = vec![ToolSpec {
        name: "bash".into(),
        description: "run".into(),
        parameters: json!({"type": "object"}),
    }];
    let history = vec![msg(Role::User, MessageStatus::Done, vec![text("do it")])];
    let current = msg(
        Role::Assistant,
        MessageStatus::Streaming,
        vec![text("Sure. "), call("c1", Some("out"))],
    );
    let request = build_request(ContextInput {
        agent: &agent(Some("sys")),
        history: &history,
        current: Some(&current),
        model: &model,
        tools: &tools,
        summary: None,
        frame: None,
        prices: None,
    });
    assert!(request.tools.is_empty(), "no native tools");
    let system = request.system.clone().unwrap();
    assert!(system.starts_with("sys\n\nYou can use tools."), "{system}");
    assert!(system.contains("- bash: run"));
    assert_eq!(
        view(&ProviderRequest {
            system: None,
            ..request.clone()
        }),
        [
            "user: do it",
            "assistant: Sure. <function_call>{\"name\":\"bash\",\"arguments\":{\"command\":\"c1\"}}</function_call> []",
            "user: <function_call_result name=\"bash\" id=\"c1\">out</function_call_result>",
        ]
    );
}

#[test]
fn images_go_to_vision_models_and_are_named_to_the_others() {
    let history = vec![msg(
        Role::User,
        MessageStatus::Done,
        vec![
            text("what is this?"),
            Block::Image {
                mime_type: "image/png".into(),
                path: "/data/img/1.png".into(),
            },
        ],
    )];
    let mut vision = model();
    vision.vision = true;
    let seen = build_request(ContextInput {
        agent: &agent(None),
        history: &history,
        current: None,
        model: &vision,
        tools: &[],
        summary: None,
        frame: None,
        prices: None,
    });
    assert_eq!(view(&seen), ["user: what is this? [\"/data/img/1.png\"]"]);
    let blind = build_request(ContextInput {
        agent: &agent(None),
        history: &history,
        current: None,
        model: &model(),
        tools: &[],
        summary: None,
        frame: None,
        prices: None,
    });
    assert_eq!(
        view(&blind),
        ["user: what is this?\n[image attached as a file: /data/img/1.png (image/png)]"]
    );
}

/// Rounds "q0".."qN" (user) each answered by "a<i>" with one tool call `c<i>`; ids m<k>.
fn rounds(n: usize, result: &str) -> Vec<Message> {
    let mut history = Vec::new();
    for i in 0..n {
        history.push(msg(
            Role::User,
            MessageStatus::Done,
            vec![text(&format!("q{i}"))],
        ));
        history.push(msg(
            Role::Assistant,
            MessageStatus::Done,
            vec![call(&format!("c{i}"), Some(result)), text(&format!("a{i}"))],
        ));
    }
    for (k, m) in history.iter_mut().enumerate() {
        m.id = format!("m{k}");
    }
    history
}

fn summary_through(id: &str, text: &str) -> Summary {
    Summary {
        agent_id: "a".into(),
        through_message_id: id.into(),
        text: text.into(),
        summarized_messages: 0,
        before_tokens: 0,
        after_tokens: 0,
        created_at: 0,
    }
}

#[test]
fn steers_are_the_users_words_after_the_results_before_them() {
    let steer = |t: &str| Block::Steer {
        id: "s".into(),
        text: t.into(),
    };
    let history = vec![msg(Role::User, MessageStatus::Done, vec![text("do it")])];
    let answer = vec![
        text("First "),
        call("c1", Some("one")),
        steer("use the other file"),
        steer("and be quick"),
        text("Then "),
        call("c2", Some("two")),
        text("done"),
        steer("one more thing"),
    ];
    let current = msg(Role::Assistant, MessageStatus::Streaming, answer.clone());
    let request = build_request(ContextInput {
        agent: &agent(None),
        history: &history,
        current: Some(&current),
        model: &model(),
        tools: &[],
        summary: None,
        frame: None,
        prices: None,
    });
    let expected = [
        "user: do it",
        "assistant: First  [\"c1\"]",
        "tool c1: one",
        "user: use the other file\n\nand be quick",
        "assistant: Then  [\"c2\"]",
        "tool c2: two",
        "assistant: done []",
        "user: one more thing",
    ];
    assert_eq!(view(&request), expected);
    // Stored as a finished answer in the history, it reads the same.
    let mut history = history;
    history.push(msg(Role::Assistant, MessageStatus::Done, answer));
    let request = build_request(input(&agent(None), &history, &model(), None));
    assert_eq!(view(&request), expected);
}

fn input<'a>(
    agent: &'a Agent,
    history: &'a [Message],
    model: &'a ModelInfo,
    summary: Option<&'a Summary>,
) -> ContextInput<'a> {
    ContextInput {
        agent,
        history,
        current: None,
        model,
        tools: &[],
        summary,
        frame: None,
        prices: None,
    }
}

#[test]
fn the_edge_hides_everything_up_to_its_message() {
    let history = rounds(3, "r");
    let mut agent = agent(None);
    agent.context_edge = Some("m1".into()); // the first answer
    let model = model();
    let assembled = assemble(input(&agent, &history, &model, None));
    assert_eq!(view(&assembled.request)[0], "user: q1");
    assert_eq!(assembled.hidden_by_edge, 2);
    // an edge on a user message hides it, and its answer opens nothing
    agent.context_edge = Some("m2".into());
    let prepared = prepare(
        input(&agent, &history, &model, None),
        Calibration::default(),
    );
    assert_eq!(view(&prepared.request)[0], "user: q2");
    assert_eq!(prepared.report.hidden_by_edge, 3);
    // an unknown edge (message gone) hides nothing
    agent.context_edge = Some("nope".into());
    assert_eq!(
        view(&build_request(input(&agent, &history, &model, None)))[0],
        "user: q0"
    );
}

#[test]
fn a_summary_replaces_what_it_covers_unless_the_edge_is_later() {
    let history = rounds(4, "r");
    let agent_plain = agent(None);
    let model = model();
    let summary = summary_through("m3", "did q0 and q1");
    let prepared = prepare(
        input(&agent_plain, &history, &model, Some(&summary)),
        Calibration::default(),
    );
    let v = view(&prepared.request);
    assert_eq!(v[0], "user: [Context Summary]\ndid q0 and q1");
    assert_eq!(
        v[1], "user: q2",
        "the summary is not merged into the next round"
    );
    assert_eq!(prepared.report.summarized_messages, 4);
    // edge after the summary: the summary only covered hidden messages
    let mut edged = agent(None);
    edged.context_edge = Some("m5".into());
    let v = view(&build_request(input(
        &edged,
        &history,
        &model,
        Some(&summary),
    )));
    assert_eq!(v[0], "user: q3");
    // edge before the summary's end: the summary stands for the rest
    edged.context_edge = Some("m1".into());
    let a = assemble(input(&edged, &history, &model, Some(&summary)));
    assert_eq!(
        view(&a.request)[0],
        "user: [Context Summary]\ndid q0 and q1"
    );
    assert_eq!((a.hidden_by_edge, a.summarized), (2, 2));
}

#[test]
fn superseded_answers_are_left_out() {
    let mut history = rounds(1, "r");
    history[1].superseded = true;
    let mut variant = history[1].clone();
    variant.id = "v".into();
    variant.superseded = false;
    variant.blocks = vec![text("better")];
    history.push(variant);
    let v = view(&build_request(input(
        &agent(None),
        &history,
        &model(),
        None,
    )));
    assert_eq!(v, ["user: q0", "assistant: better []"]);
}

#[test]
fn legacy_results_are_not_merged_with_the_next_question() {
    let history = rounds(2, "r");
    let mut legacy_model = model();
    legacy_model.tools = false;
    let tools = [crate::provider::ToolSpec {
        name: "bash".into(),
        description: "run".into(),
        parameters: json!({"type": "object"}),
    }];
    let agent = agent(None);
    let assembled = assemble(ContextInput {
        tools: &tools,
        ..input(&agent, &history, &legacy_model, None)
    });
    let kinds: Vec<(usize, budget::Kind)> =
        assembled.metas.iter().map(|m| (m.round, m.kind)).collect();
    use budget::Kind::*;
    assert_eq!(
        kinds,
        [
            (1, User),
            (1, Assistant),
            (1, ToolResult),
            (1, Assistant),
            (2, User),
            (2, Assistant),
            (2, ToolResult),
            (2, Assistant)
        ]
    );
}

#[test]
fn prepare_fits_the_budget_and_reports_by_part() {
    let history = rounds(30, &"lorem ipsum dolor ".repeat(40));
    let agent = agent(Some("be brief"));
    let mut small = model();
    small.context_window = 2000;
    small.max_output_tokens = 500;
    let prepared = prepare(
        input(&agent, &history, &small, None),
        Calibration::default(),
    );
    let r = &prepared.report;
    assert_eq!(r.budget, 1500);
    assert!(
        r.system_tokens + r.tools_tokens + r.messages_tokens <= 1500,
        "{r:?}"
    );
    assert!(r.estimated_before > 4_000, "{r:?}");
    assert!(r.stubbed_results > 0 && !r.over_budget, "{r:?}");
    let v = view(&prepared.request);
    assert_eq!(
        v.last().unwrap(),
        "assistant: a29 []",
        "the latest round stays"
    );
    // more rounds than stubs can save: the oldest go
    let history = rounds(120, &"lorem ipsum dolor ".repeat(40));
    let prepared = prepare(
        input(&agent, &history, &small, None),
        Calibration::default(),
    );
    let r = &prepared.report;
    assert!(r.dropped_rounds > 0 && !r.over_budget, "{r:?}");
    assert!(
        r.system_tokens + r.tools_tokens + r.messages_tokens <= 1500,
        "{r:?}"
    );
    let v = view(&prepared.request);
    assert!(v[0].starts_with("user: q"), "{v:?}");
    assert_eq!(v.last().unwrap(), "assistant: a119 []");
    // the output reserve is at most half the window
    small.max_output_tokens = 4000;
    assert_eq!(budget(&agent, None, &small), 1000);
}

#[test]
fn summaries_cover_all_but_the_last_rounds() {
    use summary::*;
    let history = rounds(5, "r");
    let agent = agent(None);
    let model = model();
    let vis = visible(&history, None, None);
    assert_eq!(split_point(&history, &vis, 3), Some(3), "q0, a0, q1, a1");
    assert_eq!(split_point(&history, &vis, 5), None);
    // after a summary through m3, only q2..q4 are visible: nothing to summarize with 3 kept
    let s = summary_through("m3", "old");
    let vis = visible(&history, None, Some(&s));
    assert_eq!(split_point(&history, &vis, 3), None);
    assert_eq!(split_point(&history, &vis, 2), Some(5));
    let i = input(&agent, &history, &model, Some(&s));
    let (through, previous, messages) = plan(&i, 2).unwrap();
    assert_eq!((through, previous), (5, Some("old")));
    assert_eq!(messages.len(), 2, "q2 and a2");
    // due by estimate or by the provider's count
    assert!(due(801, None, &model, 0.8));
    assert!(!due(800, Some(10), &model, 0.8));
    assert!(due(10, Some(900), &model, 0.8));
}

#[test]
fn the_summary_request_cuts_results_and_leaves_reasoning_out() {
    use summary::*;
    let mut history = rounds(2, &"x".repeat(2000));
    history[1]
        .blocks
        .insert(0, Block::reasoning("secret thoughts"));
    // the transcript, as the summarizer gets it when it fits
    let whole = request(&model(), None, &history, 100_000);
    let ChatMessage::User { content, .. } = &whole.messages[0] else {
        panic!("a user message");
    };
    let t = content.strip_prefix("Conversation:\n\n").unwrap();
    assert!(!t.contains("secret thoughts"));
    assert!(t.contains(&format!(
        "{}… (2000 chars in all)",
        "x".repeat(RESULT_CHARS)
    )));
    assert!(!t.contains(&"x".repeat(RESULT_CHARS + 1)));
    assert!(t.starts_with("User:\nq0\n\nAgent:\n[called bash {\"command\":\"c0\"}]"));
    let request = request(&model(), Some("before"), &history, 100_000);
    let ChatMessage::User { content, .. } = &request.messages[0] else {
        panic!("a user message");
    };
    assert!(
        content.starts_with(
            "Summary of the conversation before:\nbefore\n\nConversation:\n\nUser:\nq0"
        )
    );
    assert!(content.contains("open tasks"));
    assert!(request.tools.is_empty());
    // a transcript bigger than the budget loses its oldest part
    let long = rounds(40, &"word ".repeat(100));
    let request = summary::request(&model(), None, &long, 2_000);
    let estimate = tokens::estimate_request(&request).total();
    assert!(estimate <= 2_000, "{estimate}");
    let ChatMessage::User { content, .. } = &request.messages[0] else {
        panic!("a user message");
    };
    assert!(content.contains("a39") && content.contains("User:\nq0\n"));
    assert!(content.contains("messages left out") && !content.contains("q1\n"));
}

#[test]
fn the_system_prompt_is_the_profiles_then_the_agents_then_the_environment() {
    use crate::profiles::{Environment, Git, Profiles, PromptFrame};
    let environment = Environment {
        date: "2026-11-23".into(),
        os: "linux x86_64".into(),
        workspace: Some("/w".into()),
        git: Git::NotARepository,
        profile: Some("p".into()),
    };
    let section = environment.section();
    let mut profile = Profiles::builtin().get("basic").unwrap().clone();
    profile.prompt = "Work in {{workspace}} ({{profile}}, {{nope}}).".into();
    profile.temperature = Some(0.1);
    profile.max_output_tokens = Some(300);
    let framed = PromptFrame {
        profile: Some(profile.clone()),
        instructions: None,
        skills: None,
        environment: environment.clone(),
    };
    let bare = PromptFrame {
        profile: None,
        instructions: None,
        skills: None,
        environment,
    };
    let mut model = model();
    let history = vec![msg(Role::User, MessageStatus::Done, vec![text("hi")])];
    let own = agent(Some("be terse"));
    let mut unset = agent(None);
    unset.settings = AgentSettings::default();
    // (agent, frame, legacy tools?, system, temperature, max output tokens)
    type Case<'a> = (
        &'a Agent,
        Option<&'a PromptFrame>,
        bool,
        Option<String>,
        Option<f64>,
        Option<u32>,
    );
    let cases: Vec<Case> = vec![
        (
            &own,
            Some(&framed),
            false,
            Some(format!(
                "Work in /w (p, {{{{nope}}}}).\n\nbe terse\n\n{section}"
            )),
            Some(0.5),
            Some(500),
        ),
        (
            &unset,
            Some(&framed),
            false,
            Some(format!("Work in /w (p, {{{{nope}}}}).\n\n{section}")),
            Some(0.1),
            Some(300),
        ),
        (
            &own,
            Some(&bare),
            false,
            Some(format!("be terse\n\n{section}")),
            Some(0.5),
            Some(500),
        ),
        (
            &unset,
            Some(&bare),
            false,
            Some(section.clone()),
            None,
            None,
        ),
        (&unset, None, false, None, None, None),
    ];
    for (agent, frame, legacy, system, temperature, max_output) in cases {
        model.tools = !legacy;
        let request = build_request(ContextInput {
            agent,
            history: &history,
            current: None,
            model: &model,
            tools: &[],
            summary: None,
            frame,
            prices: None,
        });
        assert_eq!(request.system, system);
        assert_eq!(request.temperature, temperature);
        assert_eq!(request.max_output_tokens, max_output);
    }
    // Tools as text go before the environment, which stays last.
    model.tools = false;
    let tools = vec![ToolSpec {
        name: "bash".into(),
        description: "run".into(),
        parameters: json!({"type": "object"}),
    }];
    let request = build_request(ContextInput {
        agent: &own,
        history: &history,
        current: None,
        model: &model,
        tools: &tools,
        summary: None,
        frame: Some(&bare),
        prices: None,
    });
    let system = request.system.unwrap();
    assert!(
        system.starts_with("be terse\n\nYou can use tools."),
        "{system}"
    );
    assert!(
        system.ends_with(&format!("\n\n{}", bare.environment.section())),
        "{system}"
    );
    // The project instructions, then the skills section go after the tools as text,
    // before the environment.
    let skilled = PromptFrame {
        instructions: Some("# Project instructions\n## /w/AGENTS.md\nuse tabs".into()),
        skills: Some("# Skills\n- s: does s".into()),
        ..bare.clone()
    };
    let request = build_request(ContextInput {
        agent: &own,
        history: &history,
        current: None,
        model: &model,
        tools: &tools,
        summary: None,
        frame: Some(&skilled),
        prices: None,
    });
    let system = request.system.unwrap();
    let tail = format!(
        "\n\n# Project instructions\n## /w/AGENTS.md\nuse tabs\n\n# Skills\n- s: does s\n\n{}",
        bare.environment.section()
    );
    assert!(system.ends_with(&tail), "{system}");
    assert!(
        system.starts_with("be terse\n\nYou can use tools."),
        "{system}"
    );
    // The output reserve follows the profile's cap when the agent sets none.
    assert_eq!(budget(&unset, Some(&framed), &model), 1000 - 300);
    assert_eq!(budget(&unset, Some(&bare), &model), 1000 - 500);
}

#[test]
fn documents_go_to_models_that_take_them_and_are_named_to_the_others() {
    let history = vec![msg(
        Role::User,
        MessageStatus::Done,
        vec![
            text("summarize"),
            Block::Document {
                mime_type: "application/pdf".into(),
                path: "/data/documents/1.pdf".into(),
                name: "spec.pdf".into(),
                size: 2048,
            },
        ],
    )];
    let request = |model: &ModelInfo| {
        build_request(ContextInput {
            agent: &agent(None),
            history: &history,
            current: None,
            model,
            tools: &[],
            summary: None,
            frame: None,
            prices: None,
        })
    };
    let mut reader = model();
    reader.documents = true;
    let given = request(&reader);
    assert_eq!(
        view(&given),
        ["user: summarize [\"/data/documents/1.pdf\"]"]
    );
    let ChatMessage::User { documents, .. } = &given.messages[0] else {
        panic!("{:?}", given.messages);
    };
    assert_eq!(
        (documents[0].name.as_str(), documents[0].size),
        ("spec.pdf", 2048)
    );
    // Vision alone is not documents: no bytes go where the model did not say it reads them.
    let mut vision = model();
    vision.vision = true;
    for other in [model(), vision] {
        let named = request(&other);
        assert_eq!(
            view(&named),
            [
                "user: summarize\n[attached file: /data/documents/1.pdf (spec.pdf, 2048 bytes, a PDF document); not included: this model does not read documents. Read it with your tools if you need it]"
            ]
        );
    }
}

/// Kept prices change nothing that is sent or reported: each step below prepares the same
/// history with the agent's kept prices and afresh, and both must agree. The steps are
/// the ways a history changes between calls: it grows, a message is rewritten, a failed
/// answer makes two questions join, the model takes images, the history gets shorter.
#[test]
fn kept_prices_give_the_same_request_as_pricing_afresh() {
    let agent = agent(Some("be brief"));
    let mut small = model();
    small.context_window = 2000;
    let prices = std::sync::Mutex::new(Prices::default());
    let check = |history: &[Message], model: &ModelInfo, step: &str| {
        let fresh = prepare(input(&agent, history, model, None), Calibration::default());
        let mut with_kept = input(&agent, history, model, None);
        with_kept.prices = Some(&prices);
        let kept = prepare(with_kept, Calibration::default());
        assert_eq!(kept.request, fresh.request, "{step}");
        assert_eq!(kept.estimate, fresh.estimate, "{step}");
        assert_eq!(kept.report, fresh.report, "{step}");
    };
    let mut history = rounds(140, &"lorem ipsum dolor ".repeat(40));
    assert!(history.len() >= prices::KEEP_FROM);
    check(&history, &small, "first call: nothing kept");
    check(&history, &small, "everything kept");
    history.extend(rounds(3, "a short result"));
    for (k, m) in history.iter_mut().enumerate() {
        m.id = format!("m{k}");
    }
    check(&history, &small, "grown");
    // The same message, rewritten: a new update time.
    history[1].blocks = vec![
        call("c0", Some(&"much longer now ".repeat(300))),
        text("a0"),
    ];
    history[1].updated_at = 7;
    check(&history, &small, "rewritten");
    // The same id and time, another status: a failed answer; the next question joins
    // the one before it.
    history[3].status = MessageStatus::Error;
    history[3].blocks = vec![];
    check(&history, &small, "joined questions");
    // An image in a question: the model's capabilities change what it becomes.
    history[4].blocks.push(Block::Image {
        mime_type: "image/png".into(),
        path: "/tmp/x.png".into(),
    });
    check(&history, &small, "image named");
    small.vision = true;
    check(&history, &small, "image shown");
    history.truncate(261);
    check(&history, &small, "shorter");
    // Another history under the same positions (a variant replaced the tail).
    let mut other = rounds(130, "other");
    for (k, m) in other.iter_mut().enumerate() {
        m.id = format!("o{k}");
    }
    check(&other, &small, "other messages at the same positions");
}

#[test]
fn a_step_goes_back_in_the_order_its_pieces_and_calls_came() {
    let signed = |text: &str| Block::Reasoning {
        text: text.into(),
        signature: Some(format!("sig-{text}")),
        redacted: None,
        details: None,
    };
    let call = |id: &str, after: Option<u32>| {
        Block::ToolCall(ToolCallBlock {
            pieces_after: after,
            ..ToolCallBlock::new(id, "bash", json!({}), ToolCallStatus::Success)
        })
    };
    let text = |t: &str| Block::Text { text: t.into() };
    // Stored as the writer keeps a step (its pieces before its calls), with each call's
    // count of the pieces that came after it.
    let cases: Vec<(Vec<Block>, &[&str])> = vec![
        // thinking, call, thinking, call (interleaved thinking)
        (
            vec![
                signed("a"),
                signed("b"),
                call("c1", Some(1)),
                call("c2", None),
            ],
            &["r0", "c0", "r1", "c1"],
        ),
        // text, call, text, call, text
        (
            vec![
                text("x"),
                text("y"),
                text("z"),
                call("c1", Some(2)),
                call("c2", Some(1)),
            ],
            &["t0..1", "c0", "t1..2", "c1", "t2..3"],
        ),
        // the usual: all pieces, then the calls
        (
            vec![signed("a"), text("x"), call("c1", None), call("c2", None)],
            &["r0", "t0..1", "c0", "c1"],
        ),
        // a call before any piece (a step that opens with a call)
        (
            vec![text(""), signed("a"), call("c1", Some(1))],
            &["t0..0", "c0", "r0"],
        ),
    ];
    for (blocks, expected) in cases {
        let message = msg(Role::Assistant, MessageStatus::Done, blocks.clone());
        let steps = steps(&message);
        assert_eq!(steps.len(), 1, "{blocks:?}");
        let order: Vec<String> = steps[0]
            .order()
            .iter()
            .map(|p| match p {
                Part::Reasoning(i) => format!("r{i}"),
                Part::Text(range) => format!("t{}..{}", range.start, range.end),
                Part::Call(i) => format!("c{i}"),
            })
            .collect();
        assert_eq!(order, expected, "{blocks:?}");
    }
}

#[test]
fn failed_calls_go_back_marked_as_failures() {
    // (status, the result's isError, result given?) → the model is told it failed.
    let cases = [
        (ToolCallStatus::Success, false, true, false),
        (ToolCallStatus::Success, true, true, true),
        (ToolCallStatus::Error, true, true, true),
        (ToolCallStatus::Denied, false, true, true),
        (ToolCallStatus::Cancelled, false, true, true),
        (ToolCallStatus::Interrupted, false, true, true),
        (ToolCallStatus::Ready, false, false, true),
    ];
    for (status, is_error, has_result, failed) in cases {
        let block = Block::ToolCall(ToolCallBlock {
            result: has_result.then(|| ToolCallResult {
                content: "out".into(),
                is_error,
                offload_path: None,
                duration_ms: None,
            }),
            ..ToolCallBlock::new("c1", "bash", json!({}), status)
        });
        let answer = msg(Role::Assistant, MessageStatus::Done, vec![block]);
        let history = vec![
            msg(Role::User, MessageStatus::Done, vec![text("go")]),
            answer,
        ];
        let agent = agent(None);
        let model = model();
        let native = build_request(input(&agent, &history, &model, None));
        let marked = native.messages.iter().find_map(|m| match m {
            ChatMessage::Tool { is_error, .. } => Some(*is_error),
            _ => None,
        });
        assert_eq!(marked, Some(failed), "{status:?} {is_error} {has_result}");
        let legacy = legacy::render_result("bash", "c1", "out", failed);
        assert_eq!(
            legacy.contains("status=\"error\">Error: out"),
            failed,
            "{legacy}"
        );
    }
}
