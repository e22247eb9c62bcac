//! Table tests of the mappings.

use super::*;
use serde_json::json;

#[test]
fn tools_get_kinds_titles_and_locations() {
    let ws = Some(Path::new("/ws"));
    let cases: &[(&str, Value, ToolKind, &str, &[&str])] = &[
        (
            "bash",
            json!({"command": "ls -la"}),
            ToolKind::Execute,
            "Run `ls -la`",
            &[],
        ),
        (
            "bash",
            json!({"command": "a\nb"}),
            ToolKind::Execute,
            "Run `a …`",
            &[],
        ),
        (
            "read_file",
            json!({"path": "src/a.rs"}),
            ToolKind::Read,
            "Read src/a.rs",
            &["/ws/src/a.rs"],
        ),
        (
            "write_file",
            json!({"path": "/abs/b", "content": "x"}),
            ToolKind::Edit,
            "Write /abs/b",
            &["/abs/b"],
        ),
        (
            "edit_file",
            json!({"path": "c", "old_string": "a", "new_string": "b"}),
            ToolKind::Edit,
            "Edit c",
            &["/ws/c"],
        ),
        (
            "grep",
            json!({"pattern": "fn main"}),
            ToolKind::Search,
            "Search for fn main",
            &["/ws"],
        ),
        (
            "glob",
            json!({"pattern": "**/*.rs", "path": "src"}),
            ToolKind::Search,
            "Find **/*.rs",
            &["/ws/src"],
        ),
        (
            "list_directory",
            json!({}),
            ToolKind::Read,
            "List the workspace",
            &["/ws"],
        ),
        (
            "web_fetch",
            json!({"url": "http://x"}),
            ToolKind::Fetch,
            "Fetch http://x",
            &[],
        ),
        ("time__now", json!({}), ToolKind::Other, "time__now", &[]),
    ];
    for (name, args, kind, title, paths) in cases {
        assert_eq!(tool_kind(name), *kind, "{name}");
        assert_eq!(tool_title(name, args), *title, "{name}");
        let got: Vec<PathBuf> = tool_locations(name, args, ws)
            .into_iter()
            .map(|l| l.path)
            .collect();
        let want: Vec<PathBuf> = paths.iter().map(PathBuf::from).collect();
        assert_eq!(got, want, "{name}");
    }
    let read = tool_locations("read_file", &json!({"path": "a", "offset": 40}), ws);
    assert_eq!(read[0].line, Some(40));
}

#[test]
fn edits_become_diffs() {
    let ws = Some(Path::new("/ws"));
    let edit = tool_diff(
        "edit_file",
        &json!({"path": "a.rs", "old_string": "x", "new_string": "y"}),
        ws,
    )
    .unwrap();
    assert_eq!(edit.path, PathBuf::from("/ws/a.rs"));
    assert_eq!(edit.old_text.as_deref(), Some("x"));
    assert_eq!(edit.new_text, "y");
    let write = tool_diff("write_file", &json!({"path": "/n", "content": "all"}), ws).unwrap();
    assert_eq!(write.old_text, None);
    assert_eq!(write.new_text, "all");
    assert!(tool_diff("bash", &json!({"command": "x", "path": "a"}), ws).is_none());
    assert!(tool_diff("edit_file", &json!({"path": "a"}), ws).is_none());
    // A denied edit shows no diff in its result; a successful one does, then the text.
    let args = json!({"path": "a", "old_string": "x", "new_string": "y"});
    assert_eq!(
        result_content("edit_file", &args, ToolCallStatus::Denied, "denied", ws).len(),
        1
    );
    let ok = result_content("edit_file", &args, ToolCallStatus::Success, "ok", ws);
    assert!(matches!(
        ok.as_slice(),
        [ToolCallContent::Diff(_), ToolCallContent::Content(_)]
    ));
}

#[test]
fn run_ends_map_to_stop_reasons() {
    let cases = [
        (LoopFinishReason::Completed, Some(StopReason::EndTurn)),
        (LoopFinishReason::Paused, Some(StopReason::EndTurn)),
        (LoopFinishReason::Cancelled, Some(StopReason::Cancelled)),
        (LoopFinishReason::MaxTokens, Some(StopReason::MaxTokens)),
        (
            LoopFinishReason::MaxSteps,
            Some(StopReason::MaxTurnRequests),
        ),
        (LoopFinishReason::Refused, Some(StopReason::Refusal)),
        (LoopFinishReason::WaitingPermission, None),
        (LoopFinishReason::Error, None),
    ];
    for (reason, want) in cases {
        assert_eq!(stop_reason(reason), want, "{reason:?}");
    }
}

#[test]
fn permission_options_round_trip() {
    let ids = |r| -> Vec<String> {
        permission_options(r)
            .iter()
            .map(|o| o.option_id.to_string())
            .collect()
    };
    assert_eq!(ids(false), ["allow_once", "reject"]);
    assert_eq!(
        ids(true),
        ["allow_once", "allow_session", "allow_always", "reject"]
    );
    for option in permission_options(true) {
        let (granted, _) = permission_answer(&option.option_id.to_string()).unwrap();
        let allows = matches!(
            option.kind,
            PermissionOptionKind::AllowOnce | PermissionOptionKind::AllowAlways
        );
        assert_eq!(granted, allows);
    }
    assert_eq!(
        permission_answer("allow_session"),
        Some((true, Remember::Session))
    );
    assert_eq!(
        permission_answer("allow_always"),
        Some((true, Remember::Always))
    );
    assert_eq!(permission_answer("made-up"), None);
}

#[test]
fn prompts_become_message_content() {
    let block = |v: Value| serde_json::from_value::<ContentBlock>(v).unwrap();
    let text = prompt_content(&[block(json!({"type": "text", "text": "hi"}))]).unwrap();
    assert_eq!(text, MessageContent::Text("hi".into()));
    let parts = prompt_content(&[
        block(json!({"type": "text", "text": "look"})),
        block(json!({"type": "image", "data": "AAA=", "mimeType": "image/png"})),
        block(
            json!({"type": "resource", "resource": {"uri": "file:///a.rs", "text": "fn a() {}"}}),
        ),
        block(json!({"type": "resource_link", "name": "b.rs", "uri": "file:///x/b%20c.rs"})),
        block(json!({"type": "resource_link", "name": "doc", "uri": "https://d/x"})),
    ])
    .unwrap();
    assert_eq!(
        parts,
        MessageContent::Parts(vec![
            ContentPart::Text {
                text: "look".into()
            },
            ContentPart::Image {
                data: Some("AAA=".into()),
                path: None,
                mime_type: Some("image/png".into()),
                uri: None
            },
            ContentPart::Text {
                text: "Context from file:///a.rs:\n```\nfn a() {}\n```".into()
            },
            ContentPart::File {
                path: "/x/b c.rs".into()
            },
            ContentPart::Text {
                text: "[doc](https://d/x)".into()
            },
        ])
    );
    let refused = [
        json!({"type": "audio", "data": "AA", "mimeType": "audio/wav"}),
        json!({"type": "resource", "resource": {"uri": "file:///z.bin", "blob": "AA", "mimeType": "application/zip"}}),
    ];
    for v in refused {
        let e = prompt_content(&[block(v.clone())]).unwrap_err();
        assert_eq!(i32::from(e.code), -32602, "{v}");
    }
    assert!(prompt_content(&[]).is_err());
}

#[test]
fn live_events_become_updates() {
    let ws = Some(Path::new("/ws"));
    let mut calls = ToolCalls::default();
    let json_of = |u: &[SessionUpdate]| serde_json::to_value(u).unwrap();
    let m = || "m1".to_owned();
    let started = calls.updates(
        &EventKind::ToolCallStarted {
            message_id: m(),
            tool_call_id: "c1".into(),
            name: "edit_file".into(),
        },
        ws,
    );
    assert_eq!(
        json_of(&started),
        json!([{"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "edit_file", "kind": "edit"}])
    );
    let args = json!({"path": "a", "old_string": "x", "new_string": "y"});
    let ready = calls.updates(
        &EventKind::ToolCallReady {
            message_id: m(),
            tool_call_id: "c1".into(),
            name: "edit_file".into(),
            arguments: args.clone(),
        },
        ws,
    );
    assert_eq!(
        json_of(&ready),
        json!([{"sessionUpdate": "tool_call_update", "toolCallId": "c1", "title": "Edit a", "kind": "edit",
            "rawInput": args, "locations": [{"path": "/ws/a"}],
            "content": [{"type": "diff", "path": "/ws/a", "oldText": "x", "newText": "y"}]}])
    );
    let output = |stream, text: &str| EventKind::ToolProgress {
        message_id: m(),
        tool_call_id: "c1".into(),
        progress: 0.0,
        total: None,
        message: None,
        output: Some(agent_proto::LiveOutput {
            stream,
            text: text.into(),
        }),
    };
    calls.updates(&output(agent_proto::OutputStream::Stdout, "one\ntw"), ws);
    calls.updates(&output(agent_proto::OutputStream::Stderr, "oops\n"), ws);
    let so_far = calls.updates(&output(agent_proto::OutputStream::Stdout, "o\n"), ws);
    assert_eq!(
        json_of(&so_far),
        json!([{"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "in_progress",
            "content": [{"type": "content", "content": {"type": "text",
                "text": "one\ntw\n[stderr]\noops\n[stdout]\no\n"}}]}])
    );
    // Past the shown size, the end is kept and the cut marked.
    let mut long = LiveText::default();
    long.add(agent_proto::OutputStream::Stdout, &"x".repeat(LIVE_SHOWN));
    long.add(agent_proto::OutputStream::Stdout, "end\n");
    let shown = long.shown();
    assert!(
        shown.starts_with('…') && shown.ends_with("xend\n"),
        "{}",
        &shown[..8]
    );
    assert_eq!(shown.len(), '…'.len_utf8() + LIVE_SHOWN);
    // An MCP server's progress alone shows nothing.
    let mcp = EventKind::ToolProgress {
        message_id: m(),
        tool_call_id: "c9".into(),
        progress: 1.0,
        total: Some(2.0),
        message: Some("half".into()),
        output: None,
    };
    assert!(calls.updates(&mcp, ws).is_empty());
    let done = calls.updates(
        &EventKind::ToolResult {
            message_id: m(),
            tool_call_id: "c1".into(),
            status: ToolCallStatus::Error,
            content: "no match".into(),
            offload_path: None,
            duration_ms: 1,
        },
        ws,
    );
    assert_eq!(
        json_of(&done),
        json!([{"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "failed",
            "content": [{"type": "content", "content": {"type": "text", "text": "no match"}}],
            "rawOutput": "no match"}])
    );
    let text = calls.updates(
        &EventKind::TextDelta {
            message_id: m(),
            delta: "Hi".into(),
        },
        ws,
    );
    assert_eq!(
        json_of(&text),
        json!([{"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Hi"}}])
    );
    let thought = calls.updates(
        &EventKind::ReasoningDelta {
            message_id: m(),
            delta: "hm".into(),
        },
        ws,
    );
    assert_eq!(json_of(&thought)[0]["sessionUpdate"], "agent_thought_chunk");
    assert!(
        calls
            .updates(
                &EventKind::StatusChanged {
                    status: agent_proto::SessionStatus::Idle
                },
                ws
            )
            .is_empty()
    );
}

#[test]
fn history_replays_in_order_without_superseded_answers() {
    let msg = |id: &str, role: Role, blocks: Value, superseded: bool| Message {
        id: id.into(),
        agent_id: "a".into(),
        role,
        blocks: serde_json::from_value(blocks).unwrap(),
        status: MessageStatus::Done,
        created_at: 0,
        updated_at: 0,
        usage: None,
        variant_of: None,
        superseded,
        turn: None,
        structured_output: None,
    };
    let messages = [
        msg(
            "u1",
            Role::User,
            json!([{"type": "text", "text": "list"}]),
            false,
        ),
        msg(
            "a0",
            Role::Assistant,
            json!([{"type": "text", "text": "old"}]),
            true,
        ),
        msg(
            "a1",
            Role::Assistant,
            json!([
                {"type": "reasoning", "text": "think"},
                {"type": "text", "text": "Looking."},
                {"type": "toolCall", "toolCallId": "c1", "name": "bash", "arguments": {"command": "ls"},
                 "status": "success", "result": {"content": "a\nb", "isError": false}},
                {"type": "text", "text": "Done."}
            ]),
            false,
        ),
    ];
    let updates = history_updates(&messages, Some(Path::new("/ws")));
    let kinds: Vec<String> = updates
        .iter()
        .map(|u| {
            serde_json::to_value(u).unwrap()["sessionUpdate"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "user_message_chunk",
            "agent_thought_chunk",
            "agent_message_chunk",
            "tool_call",
            "agent_message_chunk"
        ]
    );
    let call = serde_json::to_value(&updates[3]).unwrap();
    assert_eq!(call["status"], "completed");
    assert_eq!(call["kind"], "execute");
    assert_eq!(call["content"][0]["content"]["text"], "a\nb");
    assert!(!serde_json::to_string(&updates).unwrap().contains("old"));
}

#[test]
fn documents_replay_as_links_to_the_daemons_copy() {
    let message = Message {
        id: "u1".into(),
        agent_id: "a".into(),
        role: Role::User,
        blocks: serde_json::from_value(json!([
            {"type": "text", "text": "summarize"},
            {"type": "document", "mimeType": "application/pdf", "path": "/data/documents/1.pdf",
             "name": "spec.pdf", "size": 2048}
        ]))
        .unwrap(),
        status: MessageStatus::Done,
        created_at: 0,
        updated_at: 0,
        usage: None,
        variant_of: None,
        superseded: false,
        turn: None,
        structured_output: None,
    };
    let updates = serde_json::to_value(history_updates(&[message], None)).unwrap();
    assert_eq!(updates[1]["sessionUpdate"], "user_message_chunk");
    assert_eq!(
        updates[1]["content"],
        json!({"type": "resource_link", "name": "spec.pdf", "uri": "file:///data/documents/1.pdf",
               "mimeType": "application/pdf", "size": 2048})
    );
}

#[test]
fn plans_become_acp_plans() {
    let items: Vec<PlanItem> = serde_json::from_value(json!([
        {"content": "Read", "status": "completed"},
        {"content": "Fix", "status": "in_progress", "activeForm": "Fixing"},
        {"content": "Test", "status": "in_progress"},
        {"content": "Ship", "status": "pending"}
    ]))
    .unwrap();
    assert_eq!(
        serde_json::to_value(plan(&items)).unwrap(),
        json!({"entries": [
            {"content": "Read", "priority": "medium", "status": "completed"},
            {"content": "Fixing", "priority": "medium", "status": "in_progress"},
            {"content": "Test", "priority": "medium", "status": "in_progress"},
            {"content": "Ship", "priority": "medium", "status": "pending"}
        ]})
    );
    let mut calls = ToolCalls::default();
    let update = calls.updates(&EventKind::PlanUpdated { items }, None);
    assert_eq!(
        serde_json::to_value(&update).unwrap()[0]["sessionUpdate"],
        "plan"
    );
}

#[test]
fn questions_become_choices_and_back() {
    let q: Question = serde_json::from_value(json!({"question": "Which?", "header": "DB",
        "options": [{"label": "SQLite", "description": "embedded"}, {"label": "Postgres"}]}))
    .unwrap();
    let ids: Vec<(String, PermissionOptionKind)> = question_options(&q)
        .into_iter()
        .map(|o| (o.option_id.to_string(), o.kind))
        .collect();
    assert_eq!(
        ids,
        [
            ("choice-0".to_owned(), PermissionOptionKind::AllowOnce),
            ("choice-1".to_owned(), PermissionOptionKind::AllowOnce),
            ("decline".to_owned(), PermissionOptionKind::RejectOnce)
        ]
    );
    let cases = [
        ("choice-1", Some(Some(vec!["Postgres"]))),
        ("choice-0", Some(Some(vec!["SQLite"]))),
        ("decline", Some(None)),
        ("choice-2", None),
        ("choice-x", None),
        ("allow_once", None),
    ];
    for (id, want) in cases {
        let got = question_answer(&q, id).map(|a| {
            a.map(|a| {
                a.selected
                    .iter()
                    .map(String::as_str)
                    .map(str::to_owned)
                    .collect::<Vec<_>>()
            })
        });
        let want = want.map(|w| w.map(|w| w.into_iter().map(str::to_owned).collect::<Vec<_>>()));
        assert_eq!(got, want, "{id}");
    }
    let fields = serde_json::to_value(question_fields(&q, 1, 1)).unwrap();
    assert_eq!(fields["title"], "DB: Which?");
    assert_eq!(
        fields["content"][0]["content"]["text"],
        "Which?\n- SQLite: embedded"
    );
    assert_eq!(
        serde_json::to_value(question_fields(&q, 2, 3)).unwrap()["title"],
        "DB (2/3): Which?"
    );
    let free: Question =
        serde_json::from_value(json!({"question": "Name?", "options": []})).unwrap();
    assert!(questions_askable(std::slice::from_ref(&q)));
    assert!(!questions_askable(&[q, free.clone()]));
    let text = unaskable_questions_text(&[free]);
    assert!(
        text.contains("Name?") && text.contains("agentctl answer"),
        "{text}"
    );
}

#[test]
fn a_call_is_announced_once_even_when_first_seen_late() {
    let mut calls = ToolCalls::announced(["old".to_owned()]);
    let kind = |u: &[SessionUpdate]| serde_json::to_value(u).unwrap()[0]["sessionUpdate"].clone();
    let result = |id: &str| EventKind::ToolResult {
        message_id: "m".into(),
        tool_call_id: id.into(),
        status: ToolCallStatus::Success,
        content: "ok".into(),
        offload_path: None,
        duration_ms: 1,
    };
    // Known from a replayed history: an update.
    assert_eq!(
        kind(&calls.updates(&result("old"), None)),
        "tool_call_update"
    );
    // Never seen (begun before the subscription): announced with what the event says.
    let late = calls.updates(&result("late"), None);
    assert_eq!(
        serde_json::to_value(&late).unwrap(),
        json!([{"sessionUpdate": "tool_call", "toolCallId": "late", "title": "tool call",
            "status": "completed", "content": [{"type": "content", "content": {"type": "text", "text": "ok"}}],
            "rawOutput": "ok"}])
    );
    let ready = EventKind::ToolCallReady {
        message_id: "m".into(),
        tool_call_id: "r".into(),
        name: "bash".into(),
        arguments: json!({"command": "ls"}),
    };
    assert_eq!(kind(&calls.updates(&ready, None)), "tool_call");
    assert_eq!(kind(&calls.updates(&result("r"), None)), "tool_call_update");
}

#[test]
fn model_values_split_at_the_first_slash() {
    assert_eq!(model_value("or", "anthropic/claude"), "or/anthropic/claude");
    assert_eq!(
        parse_model_value("or/anthropic/claude"),
        Some(("or", "anthropic/claude"))
    );
    assert_eq!(parse_model_value("nomodel"), None);
    assert_eq!(parse_model_value("/m"), None);
}

#[test]
fn modes_are_chat_agent_or_a_profile() {
    let cases = [
        (AgentMode::Chat, None, "chat"),
        (AgentMode::Chat, Some("review"), "chat"),
        (AgentMode::Agent, None, "agent"),
        (AgentMode::Agent, Some(""), "agent"),
        (AgentMode::Agent, Some("review"), "profile:review"),
    ];
    for (mode, profile, id) in cases {
        assert_eq!(mode_id(mode, profile), id, "{mode:?} {profile:?}");
    }
    let parsed = [
        ("chat", Some(ModeChoice::Chat)),
        ("agent", Some(ModeChoice::Agent)),
        ("profile:review", Some(ModeChoice::Profile("review".into()))),
        ("profile:", None),
        ("acp", None),
        ("Agent", None),
    ];
    for (id, want) in parsed {
        assert_eq!(parse_mode_id(id), want, "{id}");
    }
}
