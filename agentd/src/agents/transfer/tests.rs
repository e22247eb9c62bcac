use std::path::Path;

use agent_proto::{
    Agent, AgentMode, AgentSettings, Block, Message, MessageStatus, Role, SessionStatus,
    ToolCallBlock, ToolCallResult, ToolCallStatus, Usage,
};
use serde_json::{Value, json};

use super::markdown::{format_time, render};
use super::remap::{CopySource, FileKind, PlannedFile, UNFINISHED_CALL, plan_copy};
use super::{SessionError, WorkspaceChoice, import_workspace, is_inside, parse_export};
use crate::store::{StoredMessage, Summary};

const OLD_DIR: &str = "/data/sessions/old-agent";
const NEW_DIR: &str = "/data/sessions/new-agent";

fn message(id: &str, role: Role, blocks: Vec<Block>, status: MessageStatus) -> Message {
    Message {
        id: id.into(),
        agent_id: "old-agent".into(),
        role,
        blocks,
        status,
        created_at: 1_000,
        updated_at: 2_000,
        usage: (role == Role::Assistant).then_some(Usage {
            input_tokens: 30,
            output_tokens: 4,
        }),
        variant_of: None,
        superseded: false,
        turn: None,
        structured_output: None,
    }
}

fn stored(message: Message, parent: Option<&str>) -> StoredMessage {
    StoredMessage {
        message,
        parent_id: parent.map(str::to_owned),
    }
}

fn text(t: &str) -> Block {
    Block::Text { text: t.into() }
}

fn call(id: &str, name: &str, args: Value, status: ToolCallStatus, result: Option<&str>) -> Block {
    let mut call = ToolCallBlock::new(id, name, args, status);
    call.result = result.map(|content| ToolCallResult {
        content: content.into(),
        is_error: status == ToolCallStatus::Error,
        offload_path: None,
        duration_ms: Some(12),
    });
    Block::ToolCall(call)
}

fn offloaded_call(id: &str) -> Block {
    let path = format!("{OLD_DIR}/tool_{id}.offload");
    Block::ToolCall(ToolCallBlock {
        result: Some(ToolCallResult {
            content: format!("[output offloaded: 14000 chars; full text in {path}; read it]"),
            is_error: false,
            offload_path: Some(path),
            duration_ms: Some(5),
        }),
        ..ToolCallBlock::new(
            id,
            "bash",
            json!({"command": "seq 1 3000"}),
            ToolCallStatus::Success,
        )
    })
}

/// u1 -> a1 (an offloaded call, then a read of the offload), u2 -> a2 (superseded) -> a3
/// (its variant), u3 with an image.
fn source() -> CopySource {
    let offload = format!("{OLD_DIR}/tool_big.offload");
    let mut a2 = message(
        "a2",
        Role::Assistant,
        vec![text("first try")],
        MessageStatus::Done,
    );
    a2.superseded = true;
    let mut a3 = message(
        "a3",
        Role::Assistant,
        vec![text("second try")],
        MessageStatus::Done,
    );
    a3.variant_of = Some("a2".into());
    CopySource {
        messages: vec![
            stored(
                message("u1", Role::User, vec![text("count")], MessageStatus::Done),
                None,
            ),
            stored(
                message(
                    "a1",
                    Role::Assistant,
                    vec![
                        offloaded_call("big"),
                        call(
                            "page",
                            "read_file",
                            json!({"path": offload, "offset": 10}),
                            ToolCallStatus::Success,
                            Some("lines"),
                        ),
                        text(&format!("see {offload}")),
                    ],
                    MessageStatus::Done,
                ),
                Some("u1"),
            ),
            stored(
                message("u2", Role::User, vec![text("again")], MessageStatus::Done),
                None,
            ),
            stored(a2, Some("u2")),
            stored(a3, Some("u2")),
            stored(
                message(
                    "u3",
                    Role::User,
                    vec![
                        Block::Image {
                            mime_type: "image/png".into(),
                            path: format!("{OLD_DIR}/images/abc.png"),
                        },
                        Block::Document {
                            mime_type: "application/pdf".into(),
                            path: format!("{OLD_DIR}/documents/def.pdf"),
                            name: "spec.pdf".into(),
                            size: 9,
                        },
                    ],
                    MessageStatus::Done,
                ),
                None,
            ),
        ],
        summaries: vec![Summary {
            agent_id: "old-agent".into(),
            through_message_id: "a1".into(),
            text: "the model counted".into(),
            summarized_messages: 2,
            before_tokens: 900,
            after_tokens: 90,
            created_at: 3_000,
        }],
        context_edge: Some("u2".into()),
    }
}

fn ids(plan: &[StoredMessage]) -> Vec<&str> {
    plan.iter().map(|m| m.message.id.as_str()).collect()
}

#[test]
fn a_copy_gets_new_ids_in_order_and_its_links_follow_them() {
    let source = source();
    let plan = plan_copy(source.clone(), "new-agent", Path::new(NEW_DIR));
    let new = ids(&plan.messages);
    assert_eq!(new.len(), 6);
    let old: Vec<&str> = source
        .messages
        .iter()
        .map(|m| m.message.id.as_str())
        .collect();
    assert!(new.iter().all(|id| !old.contains(id)), "{new:?}");
    assert!(
        new.windows(2).all(|w| w[0] < w[1]),
        "v7 ids sort like ord: {new:?}"
    );
    assert!(new.iter().all(|id| uuid::Uuid::parse_str(id).is_ok()));
    assert!(
        plan.messages
            .iter()
            .all(|m| m.message.agent_id == "new-agent")
    );
    let parents: Vec<Option<&str>> = plan
        .messages
        .iter()
        .map(|m| m.parent_id.as_deref())
        .collect();
    assert_eq!(
        parents,
        [None, Some(new[0]), None, Some(new[2]), Some(new[2]), None]
    );
    assert_eq!(plan.messages[4].message.variant_of.as_deref(), Some(new[3]));
    assert!(plan.messages[3].message.superseded, "its variant is copied");
    assert_eq!(plan.context_edge.as_deref(), Some(new[2]));
    assert_eq!(plan.summaries.len(), 1);
    assert_eq!(plan.summaries[0].through_message_id, new[1]);
    assert_eq!(plan.summaries[0].agent_id, "new-agent");
    // Everything else is kept as it was.
    for (copy, orig) in plan.messages.iter().zip(&source.messages) {
        let (c, o) = (&copy.message, &orig.message);
        assert_eq!(
            (c.role, c.status, c.created_at, c.updated_at, c.usage),
            (o.role, o.status, o.created_at, o.updated_at, o.usage)
        );
    }
}

#[test]
fn a_cut_copy_drops_links_to_what_it_does_not_hold() {
    let mut source = source();
    source.messages.truncate(4); // u1 a1 u2 a2: a2's replacement a3 is not copied
    source.summaries[0].through_message_id = "a3".into();
    source.context_edge = Some("u3".into());
    let plan = plan_copy(source, "new-agent", Path::new(NEW_DIR));
    assert_eq!(plan.messages.len(), 4);
    assert!(
        !plan.messages[3].message.superseded,
        "without its variant the answer is the one the model sees"
    );
    assert!(plan.summaries.is_empty());
    assert_eq!(plan.context_edge, None);
}

#[test]
fn offload_image_and_document_paths_move_to_the_new_folder_everywhere() {
    let plan = plan_copy(source(), "new-agent", Path::new(NEW_DIR));
    let old_offload = format!("{OLD_DIR}/tool_big.offload");
    let new_offload = format!("{NEW_DIR}/tool_big.offload");
    assert_eq!(
        plan.files,
        [
            PlannedFile {
                kind: FileKind::Offload {
                    tool_call_id: "big".into()
                },
                from: old_offload.clone(),
                to: Path::new(&new_offload).to_owned(),
            },
            PlannedFile {
                kind: FileKind::Image,
                from: format!("{OLD_DIR}/images/abc.png"),
                to: Path::new(NEW_DIR).join("images/abc.png"),
            },
            PlannedFile {
                kind: FileKind::Document,
                from: format!("{OLD_DIR}/documents/def.pdf"),
                to: Path::new(NEW_DIR).join("documents/def.pdf"),
            },
        ]
    );
    let blocks = &plan.messages[1].message.blocks;
    let Block::ToolCall(ToolCallBlock {
        result: Some(result),
        ..
    }) = &blocks[0]
    else {
        panic!("{blocks:?}")
    };
    assert_eq!(result.offload_path.as_deref(), Some(new_offload.as_str()));
    assert_eq!(
        result.content,
        format!("[output offloaded: 14000 chars; full text in {new_offload}; read it]")
    );
    let Block::ToolCall(ToolCallBlock { arguments, .. }) = &blocks[1] else {
        panic!("{blocks:?}")
    };
    assert_eq!(arguments, &json!({"path": new_offload, "offset": 10}));
    assert_eq!(blocks[2], text(&format!("see {new_offload}")));
    assert_eq!(
        plan.messages[5].message.blocks[0],
        Block::Image {
            mime_type: "image/png".into(),
            path: format!("{NEW_DIR}/images/abc.png"),
        }
    );
    assert_eq!(
        plan.messages[5].message.blocks[1],
        Block::Document {
            mime_type: "application/pdf".into(),
            path: format!("{NEW_DIR}/documents/def.pdf"),
            name: "spec.pdf".into(),
            size: 9,
        }
    );
    let all = serde_json::to_string(&plan.messages.iter().map(|m| &m.message).collect::<Vec<_>>())
        .unwrap();
    assert!(!all.contains(OLD_DIR), "{all}");
}

#[test]
fn clashing_file_names_get_distinct_paths() {
    let mut other = offloaded_call("big");
    if let Block::ToolCall(ToolCallBlock {
        result: Some(result),
        ..
    }) = &mut other
    {
        // Same call id, another file (e.g. an import of two agents' histories).
        result.offload_path = Some("/elsewhere/tool_big.offload".into());
    }
    let source = CopySource {
        messages: vec![stored(
            message(
                "a",
                Role::Assistant,
                vec![offloaded_call("big"), other, offloaded_call("big")],
                MessageStatus::Done,
            ),
            None,
        )],
        ..CopySource::default()
    };
    let plan = plan_copy(source, "n", Path::new(NEW_DIR));
    let to: Vec<String> = plan
        .files
        .iter()
        .map(|f| f.to.display().to_string())
        .collect();
    assert_eq!(
        to,
        [
            format!("{NEW_DIR}/tool_big.offload"),
            format!("{NEW_DIR}/2_tool_big.offload")
        ]
    );
}

#[test]
fn odd_paths_are_replaced_where_they_stand_but_not_inside_text() {
    let source = CopySource {
        messages: vec![stored(
            message(
                "u",
                Role::User,
                vec![
                    text("a banana"),
                    Block::Image {
                        mime_type: "image/png".into(),
                        path: "a".into(),
                    },
                ],
                MessageStatus::Done,
            ),
            None,
        )],
        ..CopySource::default()
    };
    let plan = plan_copy(source, "n", Path::new(NEW_DIR));
    assert_eq!(
        plan.messages[0].message.blocks,
        [
            text("a banana"),
            Block::Image {
                mime_type: "image/png".into(),
                path: format!("{NEW_DIR}/images/a"),
            }
        ]
    );
}

#[test]
fn unfinished_messages_become_interrupted_and_open_calls_get_a_result() {
    let cases = [
        (MessageStatus::Pending, MessageStatus::Interrupted),
        (MessageStatus::Streaming, MessageStatus::Interrupted),
        (MessageStatus::Waiting, MessageStatus::Interrupted),
        (MessageStatus::Done, MessageStatus::Done),
        (MessageStatus::Cancelled, MessageStatus::Cancelled),
        (MessageStatus::Error, MessageStatus::Error),
        (MessageStatus::Interrupted, MessageStatus::Interrupted),
    ];
    for (status, expected) in cases {
        let source = CopySource {
            messages: vec![stored(
                message(
                    "a",
                    Role::Assistant,
                    vec![
                        call(
                            "done",
                            "bash",
                            json!({}),
                            ToolCallStatus::Success,
                            Some("ok"),
                        ),
                        call(
                            "asking",
                            "bash",
                            json!({}),
                            ToolCallStatus::WaitingPermission,
                            None,
                        ),
                        call("running", "bash", json!({}), ToolCallStatus::Running, None),
                        call("half", "bash", Value::Null, ToolCallStatus::Streaming, None),
                    ],
                    status,
                ),
                None,
            )],
            ..CopySource::default()
        };
        let plan = plan_copy(source, "n", Path::new(NEW_DIR));
        let m = &plan.messages[0].message;
        assert_eq!(m.status, expected, "{status:?}");
        let calls: Vec<(ToolCallStatus, String)> = m
            .blocks
            .iter()
            .map(|b| match b {
                Block::ToolCall(ToolCallBlock {
                    status,
                    result: Some(r),
                    ..
                }) => (*status, r.content.clone()),
                other => panic!("a call without a result: {other:?}"),
            })
            .collect();
        let interrupted = (ToolCallStatus::Interrupted, UNFINISHED_CALL.to_owned());
        assert_eq!(
            calls,
            [
                (ToolCallStatus::Success, "ok".to_owned()),
                interrupted.clone(),
                interrupted.clone(),
                interrupted
            ]
        );
    }
}

#[test]
fn only_plain_paths_inside_the_folder_are_inside() {
    let dir = Path::new("/data/sessions/a");
    let cases = [
        ("/data/sessions/a/tool_x.offload", true),
        ("/data/sessions/a/images/p.png", true),
        ("/data/sessions/a/../b/tool_x.offload", false),
        ("/data/sessions/ab/tool_x.offload", false),
        ("/etc/passwd", false),
        ("data/sessions/a/tool_x.offload", false),
    ];
    for (path, expected) in cases {
        assert_eq!(is_inside(Path::new(path), dir), expected, "{path}");
    }
}

fn agent() -> Agent {
    Agent {
        id: "agent-1".into(),
        title: "Count  things".into(),
        mode: AgentMode::Agent,
        provider: "mock".into(),
        model: "mock-model".into(),
        system_prompt: Some("Be brief.".into()),
        workspace: Some("/home/u/project".into()),
        profile: None,
        settings: AgentSettings::default(),
        pinned: false,
        archived: false,
        status: SessionStatus::Idle,
        context_edge: Some("u2".into()),
        parent_agent_id: Some("agent-0".into()),
        fork_message_id: Some("m9".into()),
        acp: None,
        sandbox: None,
        subagent_type: None,
        parent_tool_call_id: None,
        created_at: 1_700_000_000_000,
        updated_at: 1_700_000_000_000,
    }
}

#[test]
fn the_markdown_transcript_shows_everything_a_reader_needs() {
    let mut source = source();
    let mut a1 = source.messages[1].message.clone();
    a1.blocks.insert(0, Block::reasoning("think first"));
    a1.blocks.push(Block::Error {
        message: "HTTP 500\nupstream".into(),
        kind: "providerHttpError".into(),
    });
    a1.blocks.push(call(
        "fence",
        "bash",
        json!({"command": "cat README.md"}),
        ToolCallStatus::Error,
        Some("```rust\nfn main() {}\n```"),
    ));
    source.messages[1].message = a1;
    let messages: Vec<Message> = source.messages.into_iter().map(|m| m.message).collect();
    let md = render(&agent(), &messages, &source.summaries, 1_700_000_100_000);
    let expected_in_order = [
        "# Count things\n",
        "- Agent: `agent-1`",
        "- Provider: `mock`, model `mock-model`",
        "- Mode: agent",
        "- Created: 2023-11-14 22:13:20 UTC",
        "- Exported: 2023-11-14 22:15:00 UTC",
        "- Workspace: `/home/u/project`",
        "- Forked from: `agent-0` at message `m9`",
        "## System prompt\n\n```\nBe brief.\n```",
        "### User · 1970-01-01 00:00:01 UTC\n\ncount\n",
        "### Assistant · 1970-01-01 00:00:01 UTC\n\n*Tokens: 30 in, 4 out*",
        "<details>\n<summary>Reasoning</summary>\n\nthink first\n\n</details>",
        "**Tool call** `bash` (success)\n\nArguments:\n\n```json\n{\n  \"command\": \"seq 1 3000\"\n}\n```",
        "Result, 5 ms:\n\n```\n[output offloaded: 14000 chars",
        "*Full output offloaded to `/data/sessions/old-agent/tool_big.offload`.*",
        "**Tool call** `read_file` (success)",
        "> **Error** (providerHttpError):\n> HTTP 500\n> upstream",
        "**Tool call** `bash` (error)",
        "Result (error), 12 ms:\n\n````\n```rust\nfn main() {}\n```\n````",
        "> **Context summary** (the model sees this instead of the 2 messages above)\n>\n> the model counted",
        "### User · 1970-01-01 00:00:01 UTC\n\nagain",
        "*Context cleared here: the model does not see the messages above.*",
        "(replaced by a later answer)",
        "first try",
        "second try",
        "*Image (image/png):* `/data/sessions/old-agent/images/abc.png`",
        "*Document spec.pdf (application/pdf, 9 bytes):* `/data/sessions/old-agent/documents/def.pdf`",
    ];
    let mut from = 0;
    for piece in expected_in_order {
        let Some(at) = md[from..].find(piece) else {
            panic!("{piece:?} missing after byte {from} of:\n{md}")
        };
        from += at + piece.len();
    }
}

#[test]
fn times_are_utc_calendar_dates() {
    let cases = [
        (0, "1970-01-01 00:00:00 UTC"),
        (951_782_400_000, "2000-02-29 00:00:00 UTC"),
        (1_709_251_199_999, "2024-02-29 23:59:59 UTC"),
        (4_102_444_800_000, "2100-01-01 00:00:00 UTC"),
        (-1_000, "1969-12-31 23:59:59 UTC"),
    ];
    for (ms, expected) in cases {
        assert_eq!(format_time(ms), expected, "{ms}");
    }
}

fn minimal_export() -> Value {
    json!({
        "format": "agentd-export",
        "version": 1,
        "exportedAt": 5,
        "agent": {"title": "t", "mode": "chat", "provider": "p", "model": "m"},
        "messages": [
            {"id": "m1", "role": "user", "status": "done", "createdAt": 1, "updatedAt": 1,
             "blocks": [{"type": "text", "text": "hi"}]}
        ]
    })
}

fn invalid_message(data: Value) -> String {
    match parse_export(data) {
        Err(SessionError::InvalidParams(m)) => m,
        other => panic!("expected invalid params, got {other:?}"),
    }
}

#[test]
fn an_export_reads_as_an_object_or_as_its_text() {
    let object = parse_export(minimal_export()).unwrap();
    let text = parse_export(Value::String(minimal_export().to_string())).unwrap();
    assert_eq!(object, text);
    assert_eq!(object.messages[0].id, "m1");
}

#[test]
fn a_bad_export_is_refused_naming_the_field() {
    let with = |f: &dyn Fn(&mut Value)| {
        let mut v = minimal_export();
        f(&mut v);
        v
    };
    let cases: Vec<(Value, &str)> = vec![
        (json!(42), "data must be an agentd export"),
        (json!("{not json"), "data is a string but not JSON text"),
        (
            with(&|v| v["format"] = json!("other")),
            "data.format is \"other\"",
        ),
        (
            with(&|v| {
                v.as_object_mut().unwrap().remove("format");
            }),
            "data.format is missing",
        ),
        (
            with(&|v| v["version"] = json!(2)),
            "data.version 2 is not supported: this daemon reads version 1",
        ),
        (
            with(&|v| {
                v.as_object_mut().unwrap().remove("agent");
            }),
            "data.agent is missing",
        ),
        (
            with(&|v| v["agent"]["mode"] = json!("robot")),
            "data.agent: unknown variant `robot`",
        ),
        (
            with(&|v| v["agent"]["model"] = json!(" ")),
            "data.agent.model is empty",
        ),
        (
            with(&|v| v["agent"]["settings"] = json!({"temprature": 1})),
            "data.agent: unknown field `temprature`",
        ),
        (
            with(&|v| v["messages"] = json!({})),
            "data.messages must be an array",
        ),
        (
            with(&|v| v["messages"][0]["role"] = json!("system")),
            "data.messages[0]: unknown variant `system`",
        ),
        (
            with(&|v| {
                let m = v["messages"][0].clone();
                v["messages"].as_array_mut().unwrap().push(m);
            }),
            "data.messages[1].id \"m1\" is used by an earlier message",
        ),
        (
            with(&|v| v["summaries"] = json!([{"text": "x"}])),
            "data.summaries[0]: missing field `throughMessageId`",
        ),
        (
            with(&|v| v["offloads"] = json!({"c": 1})),
            "data.offloads: invalid type",
        ),
    ];
    for (data, expected) in cases {
        let message = invalid_message(data);
        assert!(message.contains(expected), "{message:?} lacks {expected:?}");
    }
}

#[test]
fn an_import_of_too_many_messages_is_refused() {
    let mut v = minimal_export();
    let m = v["messages"][0].clone();
    v["messages"] = Value::Array(vec![m; agent_proto::MAX_IMPORT_MESSAGES + 1]);
    match parse_export(v) {
        Err(SessionError::TooLarge(m)) => {
            assert!(m.contains("100001 messages") && m.contains("100000"), "{m}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_import_keeps_the_exported_workspace_only_when_asked_and_it_exists() {
    use WorkspaceChoice::{None as NoWorkspace, Own, Shared};
    use agent_proto::AgentMode::{Agent, Chat};
    let exists = |p: &Path| p == Path::new("/here") || p == Path::new("/given");
    let shared = |w: &str| Ok(Shared(w.to_owned()));
    // (mode, exported workspace, given workspace, keepWorkspace, expected or error words)
    type Case = (
        agent_proto::AgentMode,
        Option<&'static str>,
        Option<&'static str>,
        bool,
        Result<WorkspaceChoice, &'static str>,
    );
    let cases: &[Case] = &[
        (Agent, Some("/here"), None, false, Ok(Own)),
        (Chat, Some("/here"), None, false, Ok(NoWorkspace)),
        (Agent, None, None, false, Ok(Own)),
        (Agent, Some("/here"), None, true, shared("/here")),
        (Chat, Some("/here"), None, true, shared("/here")),
        (Agent, None, None, true, Ok(Own)),
        (Agent, Some("/elsewhere"), None, true, Err("keepWorkspace")),
        (Agent, Some("here"), None, true, Err("keepWorkspace")),
        (
            Agent,
            Some("/here"),
            Some("/given"),
            false,
            shared("/given"),
        ),
        (Chat, None, Some("/given"), false, shared("/given")),
        (
            Agent,
            None,
            Some("/missing"),
            false,
            Err("workspace \"/missing\""),
        ),
        (Agent, None, Some("given"), false, Err("absolute")),
        (Agent, Some("/here"), Some("/given"), true, Err("not both")),
    ];
    for (mode, exported, given, keep, expected) in cases {
        let got = import_workspace(*mode, *exported, given.map(str::to_owned), *keep, exists);
        match (got, expected) {
            (Ok(got), Ok(want)) => assert_eq!(&got, want, "{exported:?} {given:?} {keep}"),
            (Err(SessionError::InvalidParams(message)), Err(words)) => {
                assert!(message.contains(words), "{message:?} lacks {words:?}")
            }
            (got, want) => panic!("{exported:?} {given:?} {keep}: {got:?} is not {want:?}"),
        }
    }
}
