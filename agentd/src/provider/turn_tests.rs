//! A turn's choices and failed tool results in each wire format: the effort, the output
//! schema and the failure mark each vendor's API takes, in its form.

use agent_proto::ReasoningEffort;
use serde_json::{Value, json};

use super::http::WireFormat;
use super::{AnswerOptions, ChatMessage, OutputSchema, ProviderRequest, ToolCallRequest};

/// A call of `bash` that failed (`is_error`) and one of `glob` that succeeded.
fn request(options: AnswerOptions) -> ProviderRequest {
    let call = |id: &str, name: &str| ToolCallRequest {
        id: id.into(),
        name: name.into(),
        arguments: "{}".into(),
        signature: None,
    };
    let result = |id: &str, name: &str, content: &str, is_error| ChatMessage::Tool {
        tool_call_id: id.into(),
        name: name.into(),
        content: content.into(),
        is_error,
    };
    ProviderRequest {
        model: "m".into(),
        system: None,
        messages: vec![
            ChatMessage::User {
                content: "go".into(),
                images: vec![],
                documents: vec![],
            },
            ChatMessage::Assistant {
                content: String::new(),
                tool_calls: vec![call("c1", "bash"), call("c2", "glob")],
                reasoning: vec![],
                order: vec![],
            },
            result("c1", "bash", "exit code: 2", true),
            result("c2", "glob", "a.txt", false),
        ],
        tools: vec![],
        max_output_tokens: Some(1000),
        temperature: None,
        options,
    }
}

fn body(format: &str, request: &ProviderRequest) -> Value {
    match format {
        "openai" => super::openai::OpenAiFormat::default().body(request, "p"),
        "anthropic" => super::anthropic::AnthropicFormat {
            default_max_tokens: 1024,
            thinking: Default::default(),
        }
        .body(request, "p"),
        "gemini" => super::gemini::GeminiFormat.body(request, "p"),
        other => panic!("{other}"),
    }
    .unwrap()
}

fn schema() -> Value {
    json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"],
        "additionalProperties": false})
}

#[test]
fn a_failed_tool_result_is_marked_in_every_format() {
    let request = request(AnswerOptions::default());
    let openai = body("openai", &request);
    assert_eq!(openai["messages"][2]["content"], "Error: exit code: 2");
    assert_eq!(openai["messages"][3]["content"], "a.txt");
    let anthropic = body("anthropic", &request);
    let results = &anthropic["messages"][2]["content"];
    assert_eq!(results[0]["is_error"], true);
    assert_eq!(results[0]["content"], "exit code: 2");
    assert!(results[1].get("is_error").is_none(), "{results}");
    let gemini = body("gemini", &request);
    let parts = &gemini["contents"][2]["parts"];
    assert_eq!(
        parts[0]["functionResponse"]["response"],
        json!({"error": "exit code: 2"})
    );
    assert_eq!(
        parts[1]["functionResponse"]["response"],
        json!({"content": "a.txt"})
    );
}

#[test]
fn effort_and_output_schema_take_each_vendors_form() {
    let options = AnswerOptions {
        reasoning_effort: Some(ReasoningEffort::High),
        output: Some(OutputSchema::new(schema())),
    };
    let request = request(options);
    let openai = body("openai", &request);
    assert_eq!(openai["reasoning_effort"], "high");
    assert_eq!(
        openai["response_format"],
        json!({"type": "json_schema", "json_schema": {"name": "output", "schema": schema(), "strict": true}})
    );
    let anthropic = body("anthropic", &request);
    assert_eq!(
        anthropic["output_config"],
        json!({"format": {"type": "json_schema", "schema": schema()}})
    );
    // The unsigned calls of the current turn keep thinking off (the API's rule); a fresh
    // turn gets the effort's budget, within max_tokens.
    assert!(anthropic.get("thinking").is_none(), "{anthropic}");
    let mut fresh = request.clone();
    fresh.messages.truncate(1);
    let anthropic = body("anthropic", &fresh);
    assert_eq!(
        anthropic["thinking"],
        json!({"type": "enabled", "budget_tokens": 16384})
    );
    assert_eq!(anthropic["max_tokens"], 1000 + 16384);
    let gemini = body("gemini", &request);
    let config = &gemini["generationConfig"];
    assert_eq!(config["responseMimeType"], "application/json");
    assert_eq!(config["responseJsonSchema"], schema());
    assert_eq!(config["thinkingConfig"], json!({"thinkingBudget": 16384}));
}

#[test]
fn without_choices_no_vendor_gets_their_keys() {
    let request = request(AnswerOptions::default());
    let openai = body("openai", &request);
    assert!(openai.get("reasoning_effort").is_none() && openai.get("response_format").is_none());
    let anthropic = body("anthropic", &request);
    assert!(anthropic.get("output_config").is_none() && anthropic.get("thinking").is_none());
    let gemini = body("gemini", &request);
    assert!(gemini["generationConfig"].get("responseMimeType").is_none());
    assert!(gemini["generationConfig"].get("thinkingConfig").is_none());
}
