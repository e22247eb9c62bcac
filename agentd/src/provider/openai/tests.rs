//! Chat-completions tests: chunks to events, bodies, and the quirks of compatible servers.

use super::*;
use crate::provider::{ChatMessage, ToolCallRequest, ToolSpec};
use serde_json::json;

#[test]
fn chunks_become_events() {
    let cases: &[(&str, Vec<ProviderEvent>)] = &[
        (
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"}}]}"#,
            vec![ProviderEvent::TextDelta("Hel".into())],
        ),
        (
            r#"{"choices":[{"delta":{"reasoning_content":"hmm","content":null}}]}"#,
            vec![ProviderEvent::ReasoningDelta("hmm".into())],
        ),
        (
            r#"{"choices":[{"delta":{"reasoning":"or","content":""}}]}"#,
            vec![ProviderEvent::ReasoningDelta("or".into())],
        ),
        (
            r#"{"choices":[{"delta":{},"finish_reason":"stop"}]}"#,
            vec![ProviderEvent::Finish(FinishReason::Stop)],
        ),
        (
            r#"{"choices":[],"usage":{"prompt_tokens":11,"completion_tokens":3,"total_tokens":14}}"#,
            vec![ProviderEvent::Usage(Usage {
                input_tokens: 11,
                output_tokens: 3,
            })],
        ),
        (
            r#"{"choices":[{"delta":{"content":"x"}}],"usage":null}"#,
            vec![ProviderEvent::TextDelta("x".into())],
        ),
    ];
    for (data, expected) in cases {
        let mut state = ChunkState::default();
        assert_eq!(
            &parse_chunk("p", data, &mut state).unwrap(),
            expected,
            "{data}"
        );
    }
}

#[test]
fn finish_reasons() {
    let cases: &[(&[&str], FinishReason)] = &[
        (
            &[r#"{"choices":[{"delta":{},"finish_reason":"stop"}]}"#],
            FinishReason::Stop,
        ),
        (
            &[r#"{"choices":[{"delta":{},"finish_reason":"length"}]}"#],
            FinishReason::Length,
        ),
        (
            &[r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#],
            FinishReason::ToolCalls,
        ),
        (
            &[r#"{"choices":[{"delta":{},"finish_reason":"content_filter"}]}"#],
            FinishReason::Refused(
                "the provider's content filter stopped the answer (finish_reason content_filter)"
                    .into(),
            ),
        ),
        (
            &[
                r#"{"choices":[{"delta":{"refusal":"I can't "}}]}"#,
                r#"{"choices":[{"delta":{"refusal":"help with that."}}]}"#,
                r#"{"choices":[{"delta":{},"finish_reason":"stop"}]}"#,
            ],
            FinishReason::Refused("I can't help with that.".into()),
        ),
        (
            &[r#"{"choices":[{"delta":{},"finish_reason":"insufficient_system_resource"}]}"#],
            FinishReason::Other("insufficient_system_resource".into()),
        ),
    ];
    for (chunks, expected) in cases {
        let mut state = ChunkState::default();
        let events: Vec<ProviderEvent> = chunks
            .iter()
            .flat_map(|c| parse_chunk("p", c, &mut state).unwrap())
            .collect();
        assert_eq!(
            events.last(),
            Some(&ProviderEvent::Finish(expected.clone())),
            "{chunks:?}"
        );
    }
}

#[test]
fn tool_calls_stream_in_pieces() {
    let chunks = [
        r#"{"choices":[{"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"read_file","arguments":""}}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"pa"}}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"call_a","function":{"arguments":"th\": \"x\"}"}}]}}]}"#,
        r#"{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"call_b","function":{"name":"bash","arguments":{"command":"ls"}}}]}}]}"#,
        r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}]}"#,
    ];
    let mut state = ChunkState::default();
    let events: Vec<ProviderEvent> = chunks
        .iter()
        .flat_map(|c| parse_chunk("p", c, &mut state).unwrap())
        .collect();
    assert_eq!(
        events,
        vec![
            ProviderEvent::ToolCallStart {
                index: 0,
                id: "call_a".into(),
                name: "read_file".into()
            },
            ProviderEvent::ToolCallArgsDelta {
                index: 0,
                delta: "{\"pa".into()
            },
            ProviderEvent::ToolCallArgsDelta {
                index: 0,
                delta: "th\": \"x\"}".into()
            },
            ProviderEvent::ToolCallStart {
                index: 1,
                id: "call_b".into(),
                name: "bash".into()
            },
            ProviderEvent::ToolCallArgsDelta {
                index: 1,
                delta: "{\"command\":\"ls\"}".into()
            },
            ProviderEvent::Finish(FinishReason::ToolCalls),
        ]
    );
    let err = parse_chunk(
        "p",
        r#"{"choices":[{"delta":{"tool_calls":[{"index":5,"function":{"arguments":"{}"}}]}}]}"#,
        &mut state,
    )
    .unwrap_err();
    assert!(err.to_string().contains("without a name"), "{err}");
}

/// The events of a stream of `tool_calls` deltas, shown compactly: `start:INDEX:ID:NAME`
/// and `args:INDEX:TEXT`.
fn call_events(deltas: &[Value]) -> Vec<String> {
    let mut state = ChunkState::default();
    deltas
        .iter()
        .flat_map(|calls| {
            let chunk = json!({"choices": [{"index": 0, "delta": {"tool_calls": calls}}]});
            parse_chunk("p", &chunk.to_string(), &mut state).unwrap()
        })
        .map(|e| match e {
            ProviderEvent::ToolCallStart { index, id, name } => {
                format!("start:{index}:{id}:{name}")
            }
            ProviderEvent::ToolCallArgsDelta { index, delta } => {
                format!("args:{index}:{delta}")
            }
            other => format!("{other:?}"),
        })
        .collect()
}

#[test]
fn a_new_id_starts_a_new_call_whatever_the_index_says() {
    let f = |name: &str| json!({"name": name, "arguments": ""});
    let a = |text: &str| json!({"arguments": text});
    let cases: Vec<(&str, Vec<Value>, Vec<&str>)> = vec![
        (
            "every parallel call at index 0",
            vec![
                json!([{"index": 0, "id": "a", "function": f("one")}]),
                json!([{"index": 0, "function": a("{}")}]),
                json!([{"index": 0, "id": "b", "function": f("two")}]),
                json!([{"index": 0, "function": a("{\"x\":1}")}]),
            ],
            vec![
                "start:0:a:one",
                "args:0:{}",
                "start:1:b:two",
                "args:1:{\"x\":1}",
            ],
        ),
        (
            "no index, one call per chunk",
            vec![
                json!([{"id": "a", "function": f("one")}]),
                json!([{"function": a("{")}]),
                json!([{"function": a("}")}]),
                json!([{"id": "b", "function": f("two")}]),
                json!([{"function": a("{}")}]),
            ],
            vec![
                "start:0:a:one",
                "args:0:{",
                "args:0:}",
                "start:1:b:two",
                "args:1:{}",
            ],
        ),
        (
            "no index, whole calls in one chunk",
            vec![json!([
                {"id": "a", "function": {"name": "one", "arguments": "{}"}},
                {"id": "b", "function": {"name": "two", "arguments": "{}"}}
            ])],
            vec!["start:0:a:one", "args:0:{}", "start:1:b:two", "args:1:{}"],
        ),
        (
            "the id repeated on every delta",
            vec![
                json!([{"index": 0, "id": "a", "function": f("one")}]),
                json!([{"index": 0, "id": "a", "function": a("{}")}]),
                json!([{"index": 1, "id": "b", "function": f("two")}]),
                json!([{"index": 1, "id": "b", "function": a("{}")}]),
            ],
            vec!["start:0:a:one", "args:0:{}", "start:1:b:two", "args:1:{}"],
        ),
        (
            "an id that changes after the first chunk (no name with it)",
            vec![
                json!([{"index": 0, "id": "call_1", "function": f("one")}]),
                json!([{"index": 0, "id": "chatcmpl-tool-9", "function": a("{\"x\"")}]),
                json!([{"index": 0, "id": "chatcmpl-tool-9", "function": a(":1}")}]),
                json!([{"index": 1, "id": "call_2", "function": f("two")}]),
                json!([{"index": 1, "id": "other", "function": a("{}")}]),
            ],
            vec![
                "start:0:call_1:one",
                "args:0:{\"x\"",
                "args:0::1}",
                "start:1:call_2:two",
                "args:1:{}",
            ],
        ),
    ];
    for (name, deltas, expected) in cases {
        assert_eq!(call_events(&deltas), expected, "{name}");
    }
}

#[test]
fn finish_reason_error_is_an_error_not_an_answer() {
    let mut state = ChunkState::default();
    let text = r#"{"choices":[{"index":0,"delta":{"content":"Half an"}}]}"#;
    assert_eq!(parse_chunk("p", text, &mut state).unwrap().len(), 1);
    let end = r#"{"choices":[{"index":0,"delta":{},"finish_reason":"error"}]}"#;
    let err = parse_chunk("p", end, &mut state).unwrap_err();
    assert!(
        matches!(&err, ProviderError::InStream { raw, .. } if raw.contains("finish_reason \"error\"")),
        "{err}"
    );
}

#[test]
fn content_given_as_a_list_of_parts() {
    let mut state = ChunkState::default();
    let chunks = [
        r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":[{"type":"thinking","thinking":[{"type":"text","text":"Let me "},{"type":"text","text":"think."}]}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":[{"type":"text","text":"The answer"}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":[{"type":"text","text":" is 4."},{"type":"image_url","image_url":{"url":"x"}}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":[]},"finish_reason":"stop"}]}"#,
    ];
    let events: Vec<ProviderEvent> = chunks
        .iter()
        .flat_map(|c| parse_chunk("p", c, &mut state).unwrap())
        .collect();
    assert_eq!(
        events,
        vec![
            ProviderEvent::ReasoningDelta("Let me think.".into()),
            ProviderEvent::TextDelta("The answer".into()),
            ProviderEvent::TextDelta(" is 4.".into()),
            ProviderEvent::Finish(FinishReason::Stop),
        ]
    );
}

#[test]
fn usage_totals_on_every_chunk_are_counted_once() {
    let usage = |input, output| {
        ProviderEvent::Usage(Usage {
            input_tokens: input,
            output_tokens: output,
        })
    };
    // Running totals on every chunk (vLLM's continuous usage, Gemini's OpenAI endpoint).
    let mut state = ChunkState::default();
    let chunks = [
        r#"{"choices":[{"index":0,"delta":{"content":"a"}}],"usage":{"prompt_tokens":10,"completion_tokens":1}}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"b"}}],"usage":{"prompt_tokens":10,"completion_tokens":2}}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"c"}}],"usage":{"prompt_tokens":10,"completion_tokens":3}}"#,
        r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":3}}"#,
    ];
    let usages: Vec<ProviderEvent> = chunks
        .iter()
        .flat_map(|c| parse_chunk("p", c, &mut state).unwrap())
        .filter(|e| matches!(e, ProviderEvent::Usage(_)))
        .collect();
    assert_eq!(usages, vec![usage(10, 1), usage(0, 1), usage(0, 1)]);
    // One total at the end (OpenAI's `stream_options.include_usage`): passed on as it is.
    let mut state = ChunkState::default();
    let end = r#"{"choices":[],"usage":{"prompt_tokens":11,"completion_tokens":3}}"#;
    assert_eq!(
        parse_chunk("p", end, &mut state).unwrap(),
        vec![usage(11, 3)]
    );
}

#[test]
fn the_choice_is_matched_by_its_index() {
    let mut state = ChunkState::default();
    let data = r#"{"choices":[{"index":1,"delta":{"content":"other"}},{"index":0,"delta":{"content":"mine"}}]}"#;
    assert_eq!(
        parse_chunk("p", data, &mut state).unwrap(),
        vec![ProviderEvent::TextDelta("mine".into())]
    );
}

#[test]
fn a_finish_reason_lets_a_clean_close_end_the_answer() {
    let mut parser = OpenAiFormat::default().parser("p");
    parser
        .event(None, r#"{"choices":[{"delta":{"content":"hi"}}]}"#)
        .unwrap();
    assert!(!parser.stopped() && !parser.finished());
    parser
        .event(None, r#"{"choices":[{"delta":{},"finish_reason":"stop"}]}"#)
        .unwrap();
    assert!(parser.stopped() && !parser.finished());
    parser.event(None, "[DONE]").unwrap();
    assert!(parser.finished());
}

#[test]
fn transcript_with_tool_calls_and_tools() {
    let request = ProviderRequest {
        model: "m".into(),
        system: None,
        messages: vec![
            ChatMessage::User {
                content: "list".into(),
                images: vec![],
                documents: Vec::new(),
            },
            ChatMessage::Assistant {
                content: String::new(),
                tool_calls: vec![ToolCallRequest {
                    id: "c1".into(),
                    name: "bash".into(),
                    arguments: r#"{"command":"ls"}"#.into(),
                    signature: None,
                }],
                reasoning: vec![],
                order: Vec::new(),
            },
            ChatMessage::Tool {
                tool_call_id: "c1".into(),
                name: "bash".into(),
                content: "a\nexit code: 0".into(),
                is_error: false,
            },
        ],
        tools: vec![ToolSpec {
            name: "bash".into(),
            description: "run".into(),
            parameters: json!({"type": "object"}),
        }],
        max_output_tokens: None,
        temperature: None,
        options: Default::default(),
    };
    let body = request_body(&request, "p").unwrap();
    assert_eq!(
        body["messages"],
        json!([
            {"role": "user", "content": "list"},
            // No `content` beside the calls (llama-cpp-python refuses `null`, issue 34).
            {"role": "assistant", "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{\"command\":\"ls\"}"}}
            ]},
            {"role": "tool", "tool_call_id": "c1", "content": "a\nexit code: 0"}
        ])
    );
    assert_eq!(
        body["tools"],
        json!([{"type": "function", "function": {"name": "bash", "description": "run", "parameters": {"type": "object"}}}])
    );
}

#[test]
fn bad_chunks_keep_the_raw_text() {
    let mut state = ChunkState::default();
    let err = parse_chunk("p", "not json at all", &mut state).unwrap_err();
    assert_eq!(err.kind(), agent_proto::run_error::PROVIDER_MALFORMED);
    assert!(err.to_string().contains("not json at all"), "{err}");
    let err =
        parse_chunk("p", r#"{"error":{"message":"quota exceeded"}}"#, &mut state).unwrap_err();
    assert_eq!(err.kind(), agent_proto::run_error::PROVIDER_STREAM_ERROR);
    assert!(err.to_string().contains("quota exceeded"), "{err}");
}

#[test]
fn reasoning_goes_back_on_tool_calling_turns_only_when_asked() {
    let thought = |text: &str| {
        vec![crate::provider::ReasoningPart {
            text: text.into(),
            ..Default::default()
        }]
    };
    let user = |text: &str| ChatMessage::User {
        content: text.into(),
        images: vec![],
        documents: Vec::new(),
    };
    let call = |id: &str| ToolCallRequest {
        id: id.into(),
        name: "bash".into(),
        arguments: "{}".into(),
        signature: None,
    };
    let request = ProviderRequest {
        model: "deepseek-reasoner".into(),
        system: Some("sys".into()),
        messages: vec![
            // turn 1: no tool calls
            user("hi"),
            ChatMessage::Assistant {
                content: "hello".into(),
                tool_calls: vec![],
                reasoning: thought("greet"),
                order: Vec::new(),
            },
            // turn 2: tool calls, then an answer
            user("list"),
            ChatMessage::Assistant {
                content: String::new(),
                tool_calls: vec![call("c1")],
                reasoning: thought("need ls"),
                order: Vec::new(),
            },
            ChatMessage::Tool {
                tool_call_id: "c1".into(),
                name: "bash".into(),
                content: "a".into(),
                is_error: false,
            },
            ChatMessage::Assistant {
                content: "one file".into(),
                tool_calls: vec![],
                reasoning: thought("done"),
                order: Vec::new(),
            },
            // turn 3 (current): a call whose reasoning was not kept
            user("again"),
            ChatMessage::Assistant {
                content: String::new(),
                tool_calls: vec![call("c2")],
                reasoning: vec![],
                order: Vec::new(),
            },
            ChatMessage::Tool {
                tool_call_id: "c2".into(),
                name: "bash".into(),
                content: "a".into(),
                is_error: false,
            },
        ],
        tools: vec![],
        max_output_tokens: None,
        temperature: None,
        options: Default::default(),
    };
    let sent = |replay: bool| -> Vec<Value> {
        let body = OpenAiFormat {
            replay_reasoning: replay,
        }
        .body(&request, "deepseek")
        .unwrap();
        body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m.get("reasoning_content").cloned().unwrap_or(Value::Null))
            .collect()
    };
    assert_eq!(
        sent(true),
        [
            Value::Null,      // system
            Value::Null,      // hi
            Value::Null,      // turn without calls: not sent
            Value::Null,      // list
            json!("need ls"), // every assistant message of a tool-calling turn
            Value::Null,      // tool
            json!("done"),
            Value::Null, // again
            json!(""),   // none kept: the field is still there
            Value::Null, // tool
        ]
    );
    assert!(
        sent(false).iter().all(Value::is_null),
        "never where not asked"
    );
}

#[test]
fn request_errors_name_the_provider_not_the_model() {
    let request = ProviderRequest {
        model: "some-model".into(),
        system: None,
        messages: vec![ChatMessage::User {
            content: "look".into(),
            images: vec![crate::provider::ImageRef {
                path: "/nonexistent/a.png".into(),
                mime_type: "image/png".into(),
            }],
            documents: vec![],
        }],
        tools: vec![],
        max_output_tokens: None,
        temperature: None,
        options: Default::default(),
    };
    let err = request_body(&request, "work-proxy")
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with(
            "cannot build the request for work-proxy: cannot read the image /nonexistent/a.png"
        ),
        "{err}"
    );
    assert!(!err.contains("some-model"), "{err}");
}

/// A system prompt, "hi" and `answer`, at most 100 tokens out.
fn exchange(model: &str, answer: &str, temperature: Option<f64>) -> ProviderRequest {
    ProviderRequest {
        model: model.into(),
        system: Some("be brief".into()),
        messages: vec![
            ChatMessage::User {
                content: "hi".into(),
                images: vec![],
                documents: vec![],
            },
            ChatMessage::Assistant {
                content: answer.into(),
                tool_calls: vec![],
                reasoning: vec![],
                order: Vec::new(),
            },
        ],
        tools: vec![],
        max_output_tokens: Some(100),
        temperature,
        options: Default::default(),
    }
}

#[test]
fn body_has_system_history_and_options() {
    let request = exchange("m", "hello", None);
    let body = request_body(&request, "p").unwrap();
    assert_eq!(
        body,
        json!({
            "model": "m",
            "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "hello"}
            ],
            "stream": true,
            "stream_options": {"include_usage": true},
            "max_tokens": 100
        })
    );
}

#[test]
fn the_body_as_sent_is_exactly_the_documented_shape() {
    let request = exchange("gpt-x", "", Some(0.5));
    let bytes = OpenAiFormat::default().body_bytes(&request, "p").unwrap();
    let sent: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(
        sent,
        json!({
            "model": "gpt-x",
            "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": ""}
            ],
            "stream": true,
            "stream_options": {"include_usage": true},
            "max_tokens": 100,
            "temperature": 0.5
        }),
        "no tools key without tools, text-only content stays a string"
    );
    assert!(
        String::from_utf8(bytes)
            .unwrap()
            .starts_with(r#"{"model":"gpt-x","messages":[{"role":"system""#),
        "the role comes first in each message"
    );
}

#[test]
fn openrouter_reasoning_details_are_merged_per_index_and_passed_on_before_the_finish() {
    let chunks = [
        r#"{"choices":[{"index":0,"delta":{"content":"","reasoning":null,"reasoning_details":[{"type":"reasoning.text","text":"","signature":"","format":"anthropic-claude-v1","index":0}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"","reasoning":"Two ","reasoning_details":[{"type":"reasoning.text","text":"Two ","format":"anthropic-claude-v1","index":0}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"","reasoning":"steps.","reasoning_details":[{"type":"reasoning.text","text":"steps.","format":"anthropic-claude-v1","index":0}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"","reasoning":null,"reasoning_details":[{"type":"reasoning.text","signature":"c2ln","format":"anthropic-claude-v1","index":0}]}}]}"#,
        // GPT-5 through OpenRouter: summaries in pieces, then the encrypted reasoning.
        r#"{"choices":[{"index":0,"delta":{"reasoning":"**Plan","reasoning_details":[{"type":"reasoning.summary","summary":"**Plan","format":"openai-responses-v1","index":1}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"reasoning":"**","reasoning_details":[{"type":"reasoning.summary","summary":"**","format":"openai-responses-v1","index":1}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"reasoning":null,"reasoning_details":[{"type":"reasoning.encrypted","data":"gAAAAB","id":"rs_1","format":"openai-responses-v1","index":2}]}}]}"#,
        // No index: a detail of its own.
        r#"{"choices":[{"index":0,"delta":{"reasoning_details":[{"type":"reasoning.encrypted","data":"loose"}]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"Hi","reasoning":null,"reasoning_details":[]}}]}"#,
        r#"{"choices":[{"index":0,"delta":{"content":"","reasoning_details":[]},"finish_reason":"stop"}]}"#,
    ];
    let mut state = ChunkState::default();
    let events: Vec<ProviderEvent> = chunks
        .iter()
        .flat_map(|c| parse_chunk("p", c, &mut state).unwrap())
        .collect();
    let details = json!([
        {"type": "reasoning.text", "text": "Two steps.", "signature": "c2ln",
         "format": "anthropic-claude-v1", "index": 0},
        {"type": "reasoning.summary", "summary": "**Plan**", "format": "openai-responses-v1",
         "index": 1},
        {"type": "reasoning.encrypted", "data": "gAAAAB", "id": "rs_1",
         "format": "openai-responses-v1", "index": 2},
        {"type": "reasoning.encrypted", "data": "loose"}
    ]);
    assert_eq!(
        events,
        vec![
            ProviderEvent::ReasoningDelta("Two ".into()),
            ProviderEvent::ReasoningDelta("steps.".into()),
            ProviderEvent::ReasoningDelta("**Plan".into()),
            ProviderEvent::ReasoningDelta("**".into()),
            ProviderEvent::TextDelta("Hi".into()),
            ProviderEvent::ReasoningDetails(details),
            ProviderEvent::Finish(FinishReason::Stop),
        ]
    );
}

#[test]
fn reasoning_details_go_back_on_their_assistant_message_as_received() {
    let details = json!([{"type": "reasoning.encrypted", "data": "gAAAAB", "index": 0}]);
    let request = ProviderRequest {
        model: "openai/gpt-5".into(),
        system: None,
        messages: vec![
            ChatMessage::User {
                content: "list".into(),
                images: vec![],
                documents: Vec::new(),
            },
            ChatMessage::Assistant {
                content: String::new(),
                tool_calls: vec![ToolCallRequest {
                    id: "c1".into(),
                    name: "bash".into(),
                    arguments: "{}".into(),
                    signature: None,
                }],
                reasoning: vec![crate::provider::ReasoningPart {
                    details: Some(details.clone()),
                    ..Default::default()
                }],
                order: Vec::new(),
            },
            ChatMessage::Tool {
                tool_call_id: "c1".into(),
                name: "bash".into(),
                content: "a".into(),
                is_error: false,
            },
            ChatMessage::Assistant {
                content: "one file".into(),
                tool_calls: vec![],
                reasoning: vec![],
                order: Vec::new(),
            },
        ],
        tools: vec![],
        max_output_tokens: None,
        temperature: None,
        options: Default::default(),
    };
    let body = request_body(&request, "p").unwrap();
    assert_eq!(body["messages"][1]["reasoning_details"], details);
    assert!(body["messages"][1].get("reasoning_content").is_none());
    assert!(body["messages"][3].get("reasoning_details").is_none());
}
