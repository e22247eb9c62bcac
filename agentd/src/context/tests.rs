//! Context building tests.

use agent_proto::{AgentMode, AgentSettings, SessionStatus, ToolCallStatus};
use serde_json::json;

use super::*;

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
    }
}

fn msg(role: Role, status: MessageStatus, blocks: Vec<Block>) -> Message {
    Message {
        id: "x".into(),
        agent_id: "a".into(),
        role,
        blocks,
        status,
        created_at: 0,
        updated_at: 0,
        usage: None,
    }
}

fn text(t: &str) -> Block {
    Block::Text { text: t.into() }
}

fn call(id: &str, result: Option<&str>) -> Block {
    Block::ToolCall {
        tool_call_id: id.into(),
        name: "bash".into(),
        arguments: json!({"command": id}),
        raw_arguments: None,
        status: if result.is_some() {
            ToolCallStatus::Success
        } else {
            ToolCallStatus::Ready
        },
        result: result.map(|r| ToolCallResult {
            content: r.into(),
            is_error: false,
            offload_path: None,
            duration_ms: Some(1),
        }),
    }
}

/// A compact view of the request's messages.
fn view(request: &ProviderRequest) -> Vec<String> {
    request
        .messages
        .iter()
        .map(|m| match m {
            ChatMessage::User { content, images } if images.is_empty() => {
                format!("user: {content}")
            }
            ChatMessage::User { content, images } => {
                let paths: Vec<String> = images
                    .iter()
                    .map(|i| i.path.display().to_string())
                    .collect();
                format!("user: {content} {paths:?}")
            }
            ChatMessage::Assistant {
                content,
                tool_calls,
            } => {
                let calls: Vec<&str> = tool_calls.iter().map(|c| c.id.as_str()).collect();
                format!("assistant: {content} {calls:?}")
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
            vec![
                Block::Reasoning {
                    text: "think".into(),
                },
                text("hel"),
                text("lo"),
            ],
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
    };
    let request = build_request(input);
    assert_eq!(
        view(&request),
        [
            "user: hi",
            "assistant: hello []",
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
            Block::Reasoning {
                text: "plan".into(),
            },
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
    });
    assert_eq!(
        view(&request),
        [
            "user: do it",
            "assistant: First  [\"c1\", \"c2\"]",
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
            "assistant: Sure. <function_call>{\"arguments\":{\"command\":\"c1\"},\"name\":\"bash\"}</function_call> []",
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
    });
    assert_eq!(view(&seen), ["user: what is this? [\"/data/img/1.png\"]"]);
    let blind = build_request(ContextInput {
        agent: &agent(None),
        history: &history,
        current: None,
        model: &model(),
        tools: &[],
    });
    assert_eq!(
        view(&blind),
        ["user: what is this?\n[image attached as a file: /data/img/1.png (image/png)]"]
    );
}
