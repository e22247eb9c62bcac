//! PDFs in each wire format: a document of a user message goes as that vendor's document
//! part, before the text, with its bytes in base64.

use base64::Engine as _;
use serde_json::{Value, json};

use super::{ChatMessage, DocumentRef, ProviderRequest};

fn request(document: DocumentRef) -> ProviderRequest {
    ProviderRequest {
        model: "m".into(),
        system: None,
        messages: vec![ChatMessage::User {
            content: "summarize".into(),
            images: vec![],
            documents: vec![document],
        }],
        tools: vec![],
        max_output_tokens: None,
        temperature: None,
        options: Default::default(),
    }
}

/// The user message's content (parts) of a body in each format.
fn user_parts(format: &str, body: &Value) -> Value {
    match format {
        "openai" => body["messages"][0]["content"].clone(),
        "anthropic" => body["messages"][0]["content"].clone(),
        "gemini" => body["contents"][0]["parts"].clone(),
        other => panic!("{other}"),
    }
}

fn body(format: &str, request: &ProviderRequest) -> Result<Value, super::ProviderError> {
    match format {
        "openai" => super::openai::request_body(request, "p"),
        "anthropic" => super::anthropic::request_body(request, "p", 1024, None),
        "gemini" => super::gemini::request_body(request, "p"),
        other => panic!("{other}"),
    }
}

#[test]
fn documents_go_in_each_vendors_shape() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("1.pdf");
    let bytes = b"%PDF-1.7\n\x00binary";
    std::fs::write(&path, bytes).unwrap();
    let data = base64::engine::general_purpose::STANDARD.encode(bytes);
    let document = DocumentRef {
        path: path.clone(),
        mime_type: "application/pdf".into(),
        name: "spec.pdf".into(),
        size: bytes.len() as u64,
    };
    let cases = [
        (
            "openai",
            json!([
                {"type": "file", "file": {"filename": "spec.pdf", "file_data": format!("data:application/pdf;base64,{data}")}},
                {"type": "text", "text": "summarize"}
            ]),
        ),
        (
            "anthropic",
            json!([
                {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": data}, "title": "spec.pdf"},
                {"type": "text", "text": "summarize"}
            ]),
        ),
        (
            "gemini",
            json!([
                {"inlineData": {"mimeType": "application/pdf", "data": data}},
                {"text": "summarize"}
            ]),
        ),
    ];
    for (format, expected) in cases {
        let body = body(format, &request(document.clone())).unwrap();
        assert_eq!(user_parts(format, &body), expected, "{format}");
    }
    // A document whose file is gone fails the request, naming it (never sent empty).
    let gone = DocumentRef {
        path: dir.path().join("gone.pdf"),
        ..document
    };
    for format in ["openai", "anthropic", "gemini"] {
        let err = body(format, &request(gone.clone()))
            .unwrap_err()
            .to_string();
        assert!(err.contains("cannot read the document"), "{format}: {err}");
        assert!(err.contains("gone.pdf"), "{format}: {err}");
    }
}
