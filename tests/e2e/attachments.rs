//! Files attached to a message: a text file is read into it (path, line count, the text),
//! a PDF is kept as a document (its bytes to models that take documents, its path to the
//! others), a large or binary one is named with its size and type, and a file that cannot
//! be read is refused with nothing stored.

use agent_proto::rpc::AgentRpcClient;
use agent_proto::{ContentPart, MessageContent};
use agentd_testkit::mock_model::Reply;
use agentd_testkit::send::SendByName;

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
        .send_plain(
            agent.id.clone(),
            MessageContent::Parts(vec![
                ContentPart::Text {
                    text: "Look at these".into(),
                },
                file(&notes),
                file(&big),
                file(&pdf),
            ]),
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
    // The PDF is kept with the message; this model does not read documents: it is named.
    assert!(
        user.contains(
            "(spec.pdf, 16 bytes, a PDF document); not included: this model does not read documents"
        ),
        "{user}"
    );

    // A file that cannot be read: refused, and nothing is stored.
    let before = messages(&client, &agent.id).await.len();
    let e = client
        .send_plain(
            agent.id.clone(),
            MessageContent::Parts(vec![ContentPart::File {
                path: dir.path().join("gone.txt").display().to_string(),
            }]),
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
        .send_plain(
            agent.id.clone(),
            MessageContent::Parts(vec![
                ContentPart::Text {
                    text: "What is it?".into(),
                },
                image(&url),
            ]),
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
        .send_plain(agent.id.clone(), MessageContent::Parts(vec![image(&url)]))
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
        .send_plain(offline.id.clone(), MessageContent::Parts(vec![image(&url)]))
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

/// A small PDF (its first bytes are what tells it; the rest is not parsed).
const PDF: &[u8] = b"%PDF-1.7\n1 0 obj <<>> endobj\n\x00\x01\x02 binary\n%%EOF\n";

fn base64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Sends `parts` to an agent and waits for its run to end.
async fn send_parts(client: &agent_proto::client::Client, agent_id: &str, parts: Vec<ContentPart>) {
    let mut sub = client
        .subscribe_events(Some(agent_id.to_owned()), None, None)
        .await
        .unwrap();
    client
        .send_plain(agent_id.to_owned(), MessageContent::Parts(parts))
        .await
        .unwrap();
    agentd_testkit::events::collect_run(&mut sub, std::time::Duration::from_secs(30)).await;
}

/// The document block of a stored message: (path, name, size).
fn document_of(message: &agent_proto::Message) -> (String, String, u64) {
    message
        .blocks
        .iter()
        .find_map(|b| match b {
            agent_proto::Block::Document {
                mime_type,
                path,
                name,
                size,
            } => {
                assert_eq!(mime_type, "application/pdf");
                Some((path.clone(), name.clone(), *size))
            }
            _ => None,
        })
        .unwrap_or_else(|| panic!("no document block in {:?}", message.blocks))
}

/// The last user message of an OpenAI-compatible request body.
fn last_user(body: &serde_json::Value) -> serde_json::Value {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .unwrap()["content"]
        .clone()
}

#[tokio::test]
async fn pdfs_go_natively_to_models_that_take_them_and_by_path_to_the_others() {
    let (mock, daemon) = start_with("").await;
    let client = daemon.client().await;
    let dir = tempfile::tempdir().unwrap();
    // Told by its content: the name says nothing.
    let pdf = dir.path().join("spec.bin");
    std::fs::write(&pdf, PDF).unwrap();
    let parts = || {
        vec![
            ContentPart::Text {
                text: "Summarize".into(),
            },
            ContentPart::File {
                path: pdf.display().to_string(),
            },
        ]
    };
    // gpt-4o takes PDFs through the OpenAI API (the built-in table); mock-model does not.
    let reader = client
        .create_agent(
            None,
            None,
            None,
            Some("gpt-4o".into()),
            None,
            None,
            None,
            None,
            None,
        )
        .await
        .unwrap();
    let plain = crate::common::new_agent(&client, "plain").await;
    // A model that reads PDFs through its own vendor's API, behind another kind: no bytes.
    let proxied = client
        .create_agent(
            None,
            None,
            None,
            Some("claude-sonnet-4-5".into()),
            None,
            None,
            None,
            None,
            None,
        )
        .await
        .unwrap();
    for agent in [&reader, &plain, &proxied] {
        mock.push(Reply::openai_text(&["A spec."]));
        send_parts(&client, &agent.id, parts()).await;
    }
    let requests = model_requests(&mock);
    assert_eq!(requests[0].body["model"], "gpt-4o");
    assert_eq!(
        last_user(&requests[0].body),
        serde_json::json!([
            {"type": "file", "file": {"filename": "spec.bin", "file_data": format!("data:application/pdf;base64,{}", base64(PDF))}},
            {"type": "text", "text": "Summarize"}
        ])
    );
    // The other model gets the daemon's copy by path, and no bytes.
    let stored = messages(&client, &plain.id).await.remove(0);
    let (path, name, size) = document_of(&stored);
    assert_eq!((name.as_str(), size), ("spec.bin", PDF.len() as u64));
    assert!(
        path.contains(&format!("/sessions/{}/documents/", plain.id)),
        "{path}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), PDF, "a copy of the file");
    assert_eq!(
        last_user(&requests[1].body),
        serde_json::json!(format!(
            "Summarize\n[attached file: {path} (spec.bin, {} bytes, a PDF document); not included: this model does not read documents. Read it with your tools if you need it]",
            PDF.len()
        ))
    );
    for request in &requests[1..3] {
        let raw = request.body.to_string();
        assert!(
            !raw.contains(&base64(PDF)) && !raw.contains("file_data"),
            "{raw}"
        );
        assert!(raw.contains("a PDF document); not included"), "{raw}");
    }

    // Export and import keep the document: the copy has its own file, and its model gets it.
    let export = client
        .export_agent(reader.id.clone(), agent_proto::ExportFormat::Json)
        .await
        .unwrap();
    let data: serde_json::Value = serde_json::from_str(&export.content).unwrap();
    let (source_path, _, _) = document_of(&messages(&client, &reader.id).await[0]);
    assert_eq!(
        data["documents"][&source_path]["data"],
        serde_json::json!(base64(PDF))
    );
    let mut broken = data.clone();
    broken["documents"][&source_path]["data"] = serde_json::json!("%%%");
    let e = client.import_agent(broken, None, None).await.unwrap_err();
    assert_eq!(error_of(&e).1, "invalidParams");
    assert!(format!("{e}").contains("data.documents["), "{e}");
    let imported = client.import_agent(data, None, None).await.unwrap();
    let forked = client.fork_agent(reader.id.clone(), None).await.unwrap();
    for copy in [&imported, &forked] {
        let (copied, name, _) = document_of(&messages(&client, &copy.id).await[0]);
        assert_eq!(name, "spec.bin");
        assert!(
            copied.contains(&format!("/sessions/{}/documents/", copy.id)),
            "{copied}"
        );
        assert_eq!(std::fs::read(&copied).unwrap(), PDF);
    }
    mock.push(Reply::openai_text(&["Still a spec."]));
    let mut sub = client
        .subscribe_events(Some(imported.id.clone()), None, None)
        .await
        .unwrap();
    client
        .send_plain(imported.id.clone(), "And now?".into())
        .await
        .unwrap();
    agentd_testkit::events::collect_run(&mut sub, std::time::Duration::from_secs(30)).await;
    let again = model_requests(&mock).pop().unwrap();
    let first_user = &again.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "user")
        .unwrap()["content"];
    assert_eq!(first_user[0]["type"], "file");
    assert_eq!(
        first_user[0]["file"]["file_data"],
        format!("data:application/pdf;base64,{}", base64(PDF))
    );
}

#[tokio::test]
async fn a_pdf_over_the_document_cap_is_named_with_its_size() {
    let (mock, daemon) = start_with("[limits]\nmax_attached_document_bytes = 16\n").await;
    let client = daemon.client().await;
    let agent = client
        .create_agent(
            None,
            None,
            None,
            Some("gpt-4o".into()),
            None,
            None,
            None,
            None,
            None,
        )
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let pdf = dir.path().join("big.pdf");
    std::fs::write(&pdf, PDF).unwrap();
    mock.push(Reply::openai_text(&["ok"]));
    send_parts(
        &client,
        &agent.id,
        vec![ContentPart::File {
            path: pdf.display().to_string(),
        }],
    )
    .await;
    let stored = messages(&client, &agent.id).await.remove(0);
    assert!(
        stored
            .blocks
            .iter()
            .all(|b| !matches!(b, agent_proto::Block::Document { .. })),
        "{:?}",
        stored.blocks
    );
    let user = last_user(&model_requests(&mock)[0].body);
    assert_eq!(
        user,
        serde_json::json!(format!(
            "[attached file: {}, {} bytes, a PDF document; not included: over the 16 bytes document limit. Read it with your tools if you need it]",
            pdf.display(),
            PDF.len()
        ))
    );
}

#[tokio::test]
async fn anthropic_and_gemini_models_get_pdfs_in_their_own_shape() {
    let data = base64(PDF);
    let cases = [
        (
            "anthropic",
            "claude-sonnet-4-5",
            serde_json::json!([
                {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": data}, "title": "spec.pdf"},
                {"type": "text", "text": "Summarize"}
            ]),
        ),
        (
            "gemini",
            "gemini-2.5-flash",
            serde_json::json!([
                {"inlineData": {"mimeType": "application/pdf", "data": data}},
                {"text": "Summarize"}
            ]),
        ),
    ];
    for (kind, model, expected) in cases {
        let mock = agentd_testkit::mock_model::MockModel::start().await;
        let root = mock.url().trim_end_matches("/v1").to_owned();
        let config = format!(
            "[defaults]\nprovider = \"p\"\n\n[[providers]]\nid = \"p\"\nkind = \"{kind}\"\nbase_url = \"{root}\"\napi_key = \"{}\"\nmax_retries = 0\nmodels = [{{ id = \"{model}\" }}]\n",
            agentd_testkit::daemon::TEST_API_KEY
        );
        let daemon = agentd_testkit::daemon::TestDaemon::start(crate::common::bin(), &config).await;
        let client = daemon.client().await;
        let agent = crate::common::new_agent(&client, kind).await;
        let dir = tempfile::tempdir().unwrap();
        let pdf = dir.path().join("spec.pdf");
        std::fs::write(&pdf, PDF).unwrap();
        mock.push(match kind {
            "anthropic" => Reply::anthropic_text(&["A spec."]),
            _ => Reply::gemini(&["A spec."], &[]),
        });
        send_parts(
            &client,
            &agent.id,
            vec![
                ContentPart::Text {
                    text: "Summarize".into(),
                },
                ContentPart::File {
                    path: pdf.display().to_string(),
                },
            ],
        )
        .await;
        let body = &model_requests(&mock)[0].body;
        let user = match kind {
            "anthropic" => &body["messages"][0]["content"],
            _ => &body["contents"][0]["parts"],
        };
        assert_eq!(user, &expected, "{kind}");
    }
}
