//! Checks on the requests the model received.

use serde_json::Value;

use crate::mock_model::RecordedRequest;

/// Asserts that in every chat-completions request each assistant tool call is followed by
/// exactly one `tool` message answering it, before the next assistant message, and that no
/// tool message answers an unknown call.
pub fn assert_calls_paired(requests: &[RecordedRequest]) {
    for (n, request) in requests.iter().enumerate() {
        let Some(messages) = request.body["messages"].as_array() else {
            continue;
        };
        let mut open: Vec<String> = Vec::new();
        for message in messages {
            match message["role"].as_str() {
                Some("assistant") => {
                    assert!(
                        open.is_empty(),
                        "request {n}: calls {open:?} have no result before the next assistant message"
                    );
                    for call in message["tool_calls"].as_array().into_iter().flatten() {
                        open.push(call["id"].as_str().unwrap_or_default().to_owned());
                    }
                }
                Some("tool") => {
                    let id = message["tool_call_id"].as_str().unwrap_or_default();
                    let at = open.iter().position(|o| o == id);
                    assert!(
                        at.is_some(),
                        "request {n}: a result for unknown call {id:?}"
                    );
                    open.remove(at.unwrap_or_default());
                }
                _ => assert!(
                    open.is_empty(),
                    "request {n}: calls {open:?} have no result"
                ),
            }
        }
        assert!(
            open.is_empty(),
            "request {n}: calls {open:?} have no result at the end"
        );
    }
}

/// The `tool` messages of a request: (tool_call_id, content).
pub fn tool_results(request: &RecordedRequest) -> Vec<(String, String)> {
    request.body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap_or_default().to_owned(),
                m["content"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

/// The content of the tool message answering `id` in a request.
pub fn tool_result(request: &RecordedRequest, id: &str) -> String {
    tool_results(request)
        .into_iter()
        .find(|(call, _)| call == id)
        .map(|(_, content)| content)
        .unwrap_or_else(|| panic!("no result for {id} in {}", Value::to_string(&request.body)))
}
