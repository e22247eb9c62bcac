//! `complete`: one model call with no agent: the request the provider gets, the whole
//! answer, nothing stored, and clear errors.

use agent_proto::rpc::AgentRpcClient;
use agent_proto::{CompleteMessage, CompleteRole};
use agentd_testkit::mock_model::Reply;

use crate::common::{error_of, model_requests, start};

#[tokio::test]
async fn a_one_shot_call_answers_whole_and_stores_nothing() {
    let (mock, daemon) = start().await;
    let client = daemon.client().await;
    mock.push(Reply::openai_text(&["Bonjour", " le monde"]));
    let answer = client
        .complete(
            None,
            None,
            Some(vec![
                CompleteMessage {
                    role: CompleteRole::User,
                    content: "Translate: hello".into(),
                },
                CompleteMessage {
                    role: CompleteRole::Assistant,
                    content: "To which language?".into(),
                },
                CompleteMessage {
                    role: CompleteRole::User,
                    content: "French".into(),
                },
            ]),
            None,
            Some("You translate.".into()),
            Some(64),
            Some(0.2),
            None,
        )
        .await
        .unwrap();
    assert_eq!(answer.text, "Bonjour le monde");
    assert_eq!(
        (answer.provider.as_str(), answer.model.as_str()),
        ("mock", "mock-model")
    );
    assert_eq!(answer.finish_reason.as_deref(), Some("stop"));
    assert!(answer.usage.is_some());
    let body = &model_requests(&mock)[0].body;
    assert_eq!(body["messages"][0]["content"], "You translate.");
    assert_eq!(body["messages"][1]["content"], "Translate: hello");
    assert_eq!(body["messages"][2]["role"], "assistant");
    assert_eq!(body["messages"][3]["content"], "French");
    assert_eq!(body["max_tokens"], 64);
    assert_eq!(body["temperature"], 0.2);
    assert!(body.get("tools").is_none());
    // Nothing stored: no agent appeared.
    let agents = client
        .list_agents(None, None, None, None, None)
        .await
        .unwrap()
        .agents;
    assert!(agents.is_empty());

    // Errors: bad requests, an unknown provider, a provider failure, streaming.
    let e = client
        .complete(None, None, None, None, None, None, None, None)
        .await
        .unwrap_err();
    assert_eq!(error_of(&e).1, "invalidParams");
    let e = client
        .complete(
            Some("nope".into()),
            None,
            None,
            Some("x".into()),
            None,
            None,
            None,
            None,
        )
        .await
        .unwrap_err();
    assert_eq!(error_of(&e).1, "providerNotConfigured");
    mock.push(Reply::status(
        400,
        "{\"error\": {\"message\": \"model overloaded today\"}}",
    ));
    let e = client
        .complete(None, None, None, Some("x".into()), None, None, None, None)
        .await
        .unwrap_err();
    assert_eq!(error_of(&e), (-32014, "providerFailed".into()));
    assert!(format!("{e}").contains("model overloaded today"), "{e}");
}

#[tokio::test]
async fn a_streamed_call_sends_its_pieces_to_the_caller_before_the_answer() {
    use agentd_testkit::raw::{Framing, RawConn};
    let (mock, daemon) = start().await;
    mock.push(Reply::openai_text(&["One", ", two", ", three."]));
    let mut conn = RawConn::connect(daemon.socket(), Framing::Ndjson).await;
    // Another connection sees none of it.
    let mut other = RawConn::connect(daemon.socket(), Framing::Ndjson).await;
    let subscribed = other.call("subscribe", serde_json::json!({})).await;
    assert!(subscribed.get("result").is_some(), "{subscribed}");
    let response = conn
        .call(
            "complete",
            serde_json::json!({"prompt": "Count.", "stream": true}),
        )
        .await;
    assert_eq!(response["result"]["text"], "One, two, three.");
    // Every frame before the response: the pieces, in order, naming the request.
    let frames = conn.take_pending();
    assert!(!frames.is_empty());
    let mut rebuilt = String::new();
    for frame in &frames {
        assert_eq!(frame["method"], "completionDelta", "{frame}");
        assert_eq!(frame["params"]["requestId"], response["id"]);
        rebuilt.push_str(frame["params"]["delta"].as_str().unwrap());
    }
    assert_eq!(rebuilt, "One, two, three.");
    assert!(
        other
            .try_recv(std::time::Duration::from_millis(200))
            .await
            .is_none()
    );
}
