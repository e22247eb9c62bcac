use super::*;
use agent_proto::ToolCallBlock;
use agent_proto::{PermissionLevel, Question, Remember, RetryNotice};
use serde_json::json;

fn message(blocks: Vec<Block>, status: MessageStatus) -> Message {
    Message::new("m", "a", Role::Assistant, blocks, status, 0)
}

/// A compact event: `s` messageStarted, `t:x` text, `r:x` reasoning, `c:id` call
/// started, `k:id` call ready, `p:id` prompt, `g:id` granted, `o:id` result, `e:x` final
/// error, `retry:x` a retry notice, `left:x` tools left out, `done`, `wait` (loopFinished
/// waitingPermission), `other` (a delta of another message).
fn event(spec: &str) -> Event {
    let (tag, arg) = spec.split_once(':').unwrap_or((spec, ""));
    let m = || "m".to_owned();
    let kind = match tag {
        "s" => EventKind::MessageStarted {
            message_id: m(),
            message: None,
        },
        "t" => EventKind::TextDelta {
            message_id: m(),
            delta: arg.into(),
        },
        "r" => EventKind::ReasoningDelta {
            message_id: m(),
            delta: arg.into(),
        },
        "c" => EventKind::ToolCallStarted {
            message_id: m(),
            tool_call_id: arg.into(),
            name: "bash".into(),
        },
        "k" => EventKind::ToolCallReady {
            message_id: m(),
            tool_call_id: arg.into(),
            name: "bash".into(),
            arguments: json!({"command": "ls"}),
        },
        "p" => EventKind::PermissionRequested {
            message_id: m(),
            tool_call_id: arg.into(),
            tool_name: "bash".into(),
            permission_type: PermissionLevel::Execute,
            description: "run: ls".into(),
            arguments: json!({"command": "ls"}),
            command: Some("ls".into()),
            command_display: Some("ls".into()),
            signature: Some(vec!["ls".into()]),
            paths: None,
            risk: None,
            rememberable: true,
            network_access: false,
            outside_sandbox: false,
        },
        "g" => EventKind::PermissionResolved {
            message_id: m(),
            tool_call_id: arg.into(),
            granted: true,
            remember: Remember::Once,
            cancelled: false,
        },
        "o" => EventKind::ToolResult {
            message_id: m(),
            tool_call_id: arg.into(),
            status: ToolCallStatus::Success,
            content: "ok".into(),
            offload_path: None,
            duration_ms: 3,
        },
        "e" | "retry" | "left" => EventKind::Error {
            message_id: Some(m()),
            message: arg.into(),
            kind: if tag == "left" {
                run_error::TOOLS_LEFT_OUT.into()
            } else {
                run_error::PROVIDER_HTTP.into()
            },
            retryable: tag == "retry",
            retry: (tag == "retry").then_some(RetryNotice {
                attempt: 1,
                max: 2,
                delay_ms: 10,
            }),
        },
        "done" => EventKind::MessageCompleted {
            message_id: m(),
            status: MessageStatus::Done,
            structured_output: None,
        },
        "wait" => EventKind::LoopFinished {
            message_id: m(),
            reason: LoopFinishReason::WaitingPermission,
            error: None,
        },
        "other" => EventKind::TextDelta {
            message_id: "elsewhere".into(),
            delta: "x".into(),
        },
        _ => panic!("unknown event {spec}"),
    };
    Event {
        seq: 1,
        agent_id: "a".into(),
        at: 7,
        kind,
    }
}

fn kinds(message: &Message) -> Vec<String> {
    message
        .blocks
        .iter()
        .map(|b| match b {
            Block::Text { text } => format!("text:{text}"),
            Block::Reasoning { text, .. } => format!("reasoning:{text}"),
            Block::ToolCall(ToolCallBlock {
                tool_call_id,
                status,
                ..
            }) => format!(
                "call:{tool_call_id}:{}",
                serde_json::to_value(status).unwrap().as_str().unwrap()
            ),
            Block::Error { message, .. } => format!("error:{message}"),
            Block::Image { .. } => "image".into(),
            Block::Document { .. } => "document".into(),
            Block::Steer { text, .. } => format!("steer:{text}"),
        })
        .collect()
}

#[test]
fn events_fold_into_the_blocks_the_writer_stores() {
    let cancelled = || {
        message(
            vec![Block::Text {
                text: "One two ".into(),
            }],
            MessageStatus::Cancelled,
        )
    };
    let cases: Vec<(Message, &[&str], &[&str], MessageStatus)> = vec![
        // a run with a call, then the answer
        (
            message(vec![], MessageStatus::Pending),
            &[
                "s", "r:hm", "t:Hel", "t:lo", "c:c1", "k:c1", "o:c1", "t:It ", "t:is", "done",
            ],
            &[
                "reasoning:hm",
                "text:Hello",
                "call:c1:success",
                "text:It is",
            ],
            MessageStatus::Done,
        ),
        // continuing after a cancel: the continuation is a block of its own
        (
            cancelled(),
            &["s", "t:three ", "t:four", "done"],
            &["text:One two ", "text:three four"],
            MessageStatus::Done,
        ),
        // text after a call of the same step goes before the step's calls, a block of its
        // own (the call came between: interleaved, counted in its `piecesAfter`)
        (
            message(vec![], MessageStatus::Pending),
            &["s", "t:a", "c:c1", "t:b", "t:c", "c:c2"],
            &[
                "text:a",
                "text:bc",
                "call:c1:streaming",
                "call:c2:streaming",
            ],
            MessageStatus::Streaming,
        ),
        // two steps of only calls stay two turns (an empty text between them)
        (
            message(vec![], MessageStatus::Pending),
            &["s", "c:c1", "k:c1", "o:c1", "c:c2", "c:c3"],
            &[
                "call:c1:success",
                "text:",
                "call:c2:streaming",
                "call:c3:streaming",
            ],
            MessageStatus::Streaming,
        ),
        // a prompt suspends; the answer resumes on the same message
        (
            message(vec![], MessageStatus::Pending),
            &[
                "s",
                "t:Let me.",
                "c:c1",
                "k:c1",
                "p:c1",
                "wait",
                "g:c1",
                "s",
                "o:c1",
                "t:Done.",
                "done",
            ],
            &["text:Let me.", "call:c1:success", "text:Done."],
            MessageStatus::Done,
        ),
        // retry notices and tools left out are not kept; the final error is
        (
            message(vec![], MessageStatus::Pending),
            &[
                "s",
                "retry:429",
                "left:too many",
                "t:Half",
                "e:boom",
                "other",
            ],
            &["text:Half", "error:boom"],
            MessageStatus::Streaming,
        ),
    ];
    for (base, events, expected, status) in cases {
        let mut mirror = Mirror::default();
        mirror.begin(&base);
        for e in events {
            mirror.apply(&event(e));
        }
        assert!(matches!(
            mirror.snapshot(),
            EventKind::Snapshot {
                step_start: Some(_),
                ..
            }
        ));
        let EventKind::Snapshot {
            message: Some(m), ..
        } = mirror.snapshot()
        else {
            panic!("no message");
        };
        assert_eq!(kinds(&m), expected, "{events:?}");
        assert_eq!(m.status, status, "{events:?}");
    }
}

#[test]
fn a_waiting_call_keeps_its_prompt_and_its_answer() {
    let mut mirror = Mirror::default();
    mirror.begin(&message(vec![], MessageStatus::Pending));
    for e in ["s", "c:c1", "k:c1", "p:c1", "wait", "g:c1"] {
        mirror.apply(&event(e));
    }
    let EventKind::Snapshot {
        message: Some(m), ..
    } = mirror.snapshot()
    else {
        panic!("no message");
    };
    assert_eq!(m.status, MessageStatus::Waiting);
    let Block::ToolCall(ToolCallBlock {
        arguments,
        prompt,
        resolution,
        ..
    }) = &m.blocks[0]
    else {
        panic!("{:?}", m.blocks);
    };
    assert_eq!(arguments, &json!({"command": "ls"}));
    assert_eq!(prompt.as_ref().unwrap().command.as_deref(), Some("ls"));
    assert!(resolution.unwrap().granted);
}

#[test]
fn status_and_seeding() {
    let mut mirror = Mirror::default();
    assert!(!mirror.is_known());
    mirror.seed(SessionStatus::Paused, None);
    assert!(mirror.is_known());
    assert!(matches!(
        mirror.snapshot(),
        EventKind::Snapshot {
            status: SessionStatus::Paused,
            message: None,
            step_start: None
        }
    ));
    mirror.apply(&Event {
        seq: 2,
        agent_id: "a".into(),
        at: 1,
        kind: EventKind::StatusChanged {
            status: SessionStatus::Generating,
        },
    });
    // a new message starts empty; a seed never replaces what a run began
    mirror.apply(&event("s"));
    mirror.seed(
        SessionStatus::Idle,
        Some(message(
            vec![Block::Text { text: "old".into() }],
            MessageStatus::Done,
        )),
    );
    mirror.apply(&event("t:new"));
    let EventKind::Snapshot {
        status,
        message: Some(m),
        step_start,
    } = mirror.snapshot()
    else {
        panic!("no message");
    };
    assert_eq!(status, SessionStatus::Generating);
    assert_eq!(kinds(&m), ["text:new"]);
    assert_eq!(step_start, Some(0), "the next delta extends \"new\"");
    // a regenerated variant starts with the blocks its messageStarted carries
    let variant = Message {
        id: "v".into(),
        ..message(
            vec![Block::Text {
                text: "kept".into(),
            }],
            MessageStatus::Pending,
        )
    };
    mirror.apply(&Event {
        seq: 3,
        agent_id: "a".into(),
        at: 1,
        kind: EventKind::MessageStarted {
            message_id: "v".into(),
            message: Some(Box::new(variant)),
        },
    });
    let EventKind::Snapshot {
        message: Some(m), ..
    } = mirror.snapshot()
    else {
        panic!("no message");
    };
    assert_eq!(
        (m.id.as_str(), kinds(&m)),
        ("v", vec!["text:kept".to_owned()])
    );
}

#[test]
fn a_question_keeps_its_questions_and_its_answer() {
    let mut mirror = Mirror::default();
    mirror.begin(&message(vec![], MessageStatus::Pending));
    for e in ["s", "t:Which one?", "c:q1", "k:q1"] {
        mirror.apply(&event(e));
    }
    let questions = vec![Question {
        question: "Which language?".into(),
        header: None,
        options: vec![],
        multi_select: false,
    }];
    let at = |kind| Event {
        seq: 9,
        agent_id: "a".into(),
        at: 8,
        kind,
    };
    mirror.apply(&at(EventKind::QuestionRequested {
        message_id: "m".into(),
        tool_call_id: "q1".into(),
        questions: questions.clone(),
    }));
    mirror.apply(&at(EventKind::LoopFinished {
        message_id: "m".into(),
        reason: LoopFinishReason::WaitingQuestion,
        error: None,
    }));
    let answers = vec![agent_proto::QuestionAnswer {
        selected: vec![],
        text: Some("Rust".into()),
    }];
    mirror.apply(&at(EventKind::QuestionResolved {
        message_id: "m".into(),
        tool_call_id: "q1".into(),
        answers: answers.clone(),
        declined: false,
        cancelled: false,
    }));
    let EventKind::Snapshot {
        message: Some(m), ..
    } = mirror.snapshot()
    else {
        panic!("no message");
    };
    assert_eq!(m.status, MessageStatus::Waiting);
    let Block::ToolCall(ToolCallBlock {
        status,
        questions: asked,
        answer,
        ..
    }) = &m.blocks[1]
    else {
        panic!("{:?}", m.blocks);
    };
    assert_eq!(*status, ToolCallStatus::WaitingAnswer);
    assert_eq!(asked.as_ref(), Some(&questions));
    assert_eq!(answer.as_ref().unwrap().answers, answers);
}
