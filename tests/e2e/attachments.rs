//! Files attached to a message: a text file is read into it (path, line count, the text),
//! a large or binary one is named with its size and type, and a file that cannot be read is
//! refused with nothing stored.

use agent_proto::rpc::AgentRpcClient;
use agent_proto::{ContentPart, MessageContent};
use agentd_testkit::mock_model::Reply;

use crate::common::{error_of, messages, model_requests, start_with};

#[tokio::test]
async fn attached_files_reach_the_model_as_text_or_by_name() {
    let (mock, daemon) = start_with("[limits]\nmax_attached_text_bytes = 1024\n").await;
    let client = daemon.client().await;
    let agent = crate::common::new_agent(&client, "files").await;
    let dir = tempfile::tempdir().unwrap();
    let notes = dir.path().join("notes.md");
    std::fs::write(&notes, "# Plan\n- ship it\n").unwrap();
    let big = dir.path().join("big.log");
    std::fs::write(&big, "line\n".repeat(1000)).unwrap();
    let pdf = dir.path().join("spec.pdf");
    std::fs::write(&pdf, b"%PDF-1.7\n\x00binary").unwrap();
    let file = |p: &std::path::Path| ContentPart::File {
        path: p.display().to_string(),
    };
    mock.push(Reply::openai_text(&["read them"]));
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    client
        .send_message(
            agent.id.clone(),
            MessageContent::Parts(vec![
                ContentPart::Text {
                    text: "Look at these".into(),
                },
                file(&notes),
                file(&big),
                file(&pdf),
            ]),
            None,
        )
        .await
        .unwrap();
    agentd_testkit::events::collect_run(&mut sub, std::time::Duration::from_secs(30)).await;
    let body = &model_requests(&mock)[0].body;
    let user = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .unwrap()["content"]
        .to_string();
    let notes_at = notes.display().to_string();
    assert!(
        user.contains(&format!(
            "[attached file: {notes_at} (2 lines)]\\n```\\n# Plan\\n- ship it\\n```"
        )),
        "{user}"
    );
    assert!(
        user.contains("4.9 KiB of text; not included: over the 1.0 KiB attachment limit"),
        "{user}"
    );
    assert!(
        user.contains("a PDF document; not included: not text"),
        "{user}"
    );

    // A file that cannot be read: refused, and nothing is stored.
    let before = messages(&client, &agent.id).await.len();
    let e = client
        .send_message(
            agent.id.clone(),
            MessageContent::Parts(vec![ContentPart::File {
                path: dir.path().join("gone.txt").display().to_string(),
            }]),
            None,
        )
        .await
        .unwrap_err();
    assert_eq!(error_of(&e).1, "invalidParams");
    assert_eq!(messages(&client, &agent.id).await.len(), before);
}

/// The smallest PNG: one transparent pixel.
const PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
    0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x00, 0x01, 0x00, 0x00,
    0x05, 0x00, 0x01, 0x0d, 0x0a, 0x2d, 0xb4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae,
    0x42, 0x60, 0x82,
];

#[tokio::test]
async fn image_urls_are_fetched_under_the_network_rule() {
    let (mock, daemon) = start_with("").await;
    let images = agentd_testkit::mock_model::MockModel::start().await;
    let client = daemon.client().await;
    let agent = crate::common::new_agent(&client, "pictures").await;
    let url = format!("{}/cat.png", images.url());
    let image = |url: &str| ContentPart::Image {
        data: None,
        path: None,
        mime_type: None,
        uri: Some(url.to_owned()),
    };
    images.push(Reply::bytes("image/png", PNG));
    mock.push(Reply::openai_text(&["a cat"]));
    let mut sub = client
        .subscribe_events(Some(agent.id.clone()), None, None)
        .await
        .unwrap();
    client
        .send_message(
            agent.id.clone(),
            MessageContent::Parts(vec![
                ContentPart::Text {
                    text: "What is it?".into(),
                },
                image(&url),
            ]),
            None,
        )
        .await
        .unwrap();
    agentd_testkit::events::collect_run(&mut sub, std::time::Duration::from_secs(30)).await;
    let stored = messages(&client, &agent.id).await.remove(0);
    let Some(agent_proto::Block::Image { mime_type, path }) = stored.blocks.get(1) else {
        panic!("{:?}", stored.blocks);
    };
    assert_eq!(mime_type, "image/png");
    assert_eq!(std::fs::read(path).unwrap(), PNG);
    assert_eq!(images.requests()[0].path, "/v1/cat.png");

    // Not an image, or an agent whose network rule is deny: refused, nothing stored.
    let before = messages(&client, &agent.id).await.len();
    images.push(Reply::html("<p>not an image</p>"));
    let e = client
        .send_message(
            agent.id.clone(),
            MessageContent::Parts(vec![image(&url)]),
            None,
        )
        .await
        .unwrap_err();
    assert_eq!(error_of(&e).1, "invalidParams");
    assert!(format!("{e}").contains("text/html"), "{e}");
    let offline = client
        .create_agent(
            Some("offline".into()),
            None,
            None,
            None,
            None,
            None,
            None,
            Some(serde_json::json!({"permissions": {"network": "deny"}})),
            None,
        )
        .await
        .unwrap();
    let fetched = images.requests().len();
    let e = client
        .send_message(
            offline.id.clone(),
            MessageContent::Parts(vec![image(&url)]),
            None,
        )
        .await
        .unwrap_err();
    assert!(format!("{e}").contains("network permission is deny"), "{e}");
    assert_eq!(
        images.requests().len(),
        fetched,
        "fetched for a denied agent"
    );
    assert_eq!(messages(&client, &agent.id).await.len(), before);
}
