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
