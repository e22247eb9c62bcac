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
    let e = client
        .complete(
            None,
            None,
            None,
            Some("x".into()),
            None,
            None,
            None,
            Some(true),
        )
        .await
        .unwrap_err();
    assert_eq!(error_of(&e).1, "notSupported");
}
