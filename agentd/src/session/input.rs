//! Checking what clients send: message content and settings patches.

use std::path::Path;

use agent_proto::{AgentSettings, Block, ContentPart, MAX_USER_TEXT_CHARS, MessageContent};

use super::SessionError;
use super::attach::{Attached, Attachments, attach};

pub fn parse_settings(value: serde_json::Value) -> Result<AgentSettings, SessionError> {
    if !value.is_object() {
        return Err(SessionError::InvalidParams(
            "settings must be an object".into(),
        ));
    }
    let settings: AgentSettings = serde_json::from_value(value)
        .map_err(|e| SessionError::InvalidParams(format!("invalid settings: {e}")))?;
    for (i, hook) in settings.hooks.iter().flatten().enumerate() {
        crate::hooks::validate(hook).map_err(|e| {
            SessionError::InvalidParams(format!("invalid settings: hooks[{i}]: {e}"))
        })?;
    }
    Ok(settings)
}

/// Applies a JSON merge patch (RFC 7396) to the settings and validates the result.
pub fn merge_settings(
    current: &AgentSettings,
    patch: serde_json::Value,
) -> Result<AgentSettings, SessionError> {
    let serde_json::Value::Object(patch) = patch else {
        return Err(SessionError::InvalidParams(
            "settings must be an object".into(),
        ));
    };
    let mut merged = serde_json::to_value(current)
        .map_err(|e| SessionError::InvalidParams(format!("invalid settings: {e}")))?;
    if let serde_json::Value::Object(map) = &mut merged {
        for (key, value) in patch {
            if value.is_null() {
                map.remove(&key);
            } else {
                map.insert(key, value);
            }
        }
    }
    parse_settings(merged)
}

/// Largest image accepted in a message.
pub(super) const MAX_IMAGE_BYTES: usize = 20 * 1024 * 1024;

/// The blocks of a `sendMessage` content, checked against the limits: the text (parts
/// joined by newlines, a text file part read in up to the text cap, others named), then
/// the images, each stored as a file in the images folder so the message refers to a copy
/// that cannot change, then the documents (PDF file parts, copied likewise: `attach.rs`).
pub(super) fn user_blocks(
    content: MessageContent,
    limits: &Attachments,
) -> Result<Vec<Block>, SessionError> {
    let mut text = String::new();
    let mut images = Vec::new();
    let mut documents = Vec::new();
    let push_text = |t: &str, text: &mut String| {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(t);
    };
    match content {
        MessageContent::Text(t) => text = t,
        MessageContent::Parts(parts) => {
            for part in parts {
                match part {
                    ContentPart::Text { text: t } => push_text(&t, &mut text),
                    ContentPart::File { path } => match attach(&path, limits)? {
                        Attached::Text(t) => push_text(&t, &mut text),
                        Attached::Document(kept) => documents.push(kept),
                    },
                    ContentPart::Image {
                        data,
                        path,
                        mime_type,
                        uri,
                    } => images.push((image_source(data, path, uri)?, mime_type)),
                }
            }
        }
    }
    // Count lazily: only texts that could be over the limit need a full count.
    if text.len() > MAX_USER_TEXT_CHARS {
        let chars = text.chars().count();
        if chars > MAX_USER_TEXT_CHARS {
            return Err(SessionError::InputTooLarge {
                chars,
                max: MAX_USER_TEXT_CHARS,
            });
        }
    }
    if text.trim().is_empty() && images.is_empty() && documents.is_empty() {
        return Err(SessionError::InvalidParams("the message is empty".into()));
    }
    let mut blocks = Vec::with_capacity(images.len() + documents.len() + 1);
    if !text.trim().is_empty() {
        blocks.push(Block::Text { text });
    }
    for (source, mime_type) in images {
        blocks.push(store_image(source, mime_type, &limits.images_dir)?);
    }
    for document in documents {
        blocks.push(document.store(&limits.documents_dir)?);
    }
    Ok(blocks)
}

/// The image types models read, by extension.
fn mime_of_extension(ext: &str) -> Option<&'static str> {
    match ext.to_ascii_lowercase().as_str() {
        "png" => Some("image/png"),
        "jpg" | "jpeg" => Some("image/jpeg"),
        "gif" => Some("image/gif"),
        "webp" => Some("image/webp"),
        _ => None,
    }
}

fn extension_of_mime(mime: &str) -> Option<&'static str> {
    match mime {
        "image/png" => Some("png"),
        "image/jpeg" => Some("jpg"),
        "image/gif" => Some("gif"),
        "image/webp" => Some("webp"),
        _ => None,
    }
}

/// Decodes a `data:<type>;base64,...` URL: (type, bytes).
fn decode_data_url(url: &str) -> Result<(String, Vec<u8>), SessionError> {
    use base64::Engine as _;
    let invalid = SessionError::InvalidParams;
    let rest = url.strip_prefix("data:").ok_or_else(|| {
        invalid("an image's data must be a data URL (data:image/png;base64,...)".into())
    })?;
    let (meta, payload) = rest
        .split_once(',')
        .ok_or_else(|| invalid("the data URL has no ',' before its data".into()))?;
    let mime = meta
        .strip_suffix(";base64")
        .ok_or_else(|| invalid("the data URL must be base64 (data:<type>;base64,...)".into()))?;
    if payload.len() / 4 * 3 > MAX_IMAGE_BYTES {
        return Err(invalid(format!(
            "the image is over {MAX_IMAGE_BYTES} bytes"
        )));
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(payload.trim())
        .map_err(|e| invalid(format!("the image data is not valid base64: {e}")))?;
    Ok((mime.to_owned(), bytes))
}

/// Reads an image file given by absolute path: (type, bytes).
fn read_image_file(
    path: &str,
    mime_type: Option<String>,
) -> Result<(String, Vec<u8>), SessionError> {
    let invalid = SessionError::InvalidParams;
    let file = Path::new(path);
    if !file.is_absolute() {
        return Err(invalid(format!("image path {path:?} must be absolute")));
    }
    let size = std::fs::metadata(file)
        .map_err(|e| invalid(format!("cannot read the image {path}: {e}")))?
        .len();
    if size > MAX_IMAGE_BYTES as u64 {
        return Err(invalid(format!(
            "the image {path} has {size} bytes; the limit is {MAX_IMAGE_BYTES}"
        )));
    }
    let bytes =
        std::fs::read(file).map_err(|e| invalid(format!("cannot read the image {path}: {e}")))?;
    let mime = mime_type
        .or_else(|| {
            file.extension()
                .and_then(|e| e.to_str())
                .and_then(mime_of_extension)
                .map(str::to_owned)
        })
        .ok_or_else(|| {
            invalid(format!(
                "cannot tell the image type of {path}; pass mimeType"
            ))
        })?;
    Ok((mime, bytes))
}

/// Where an image part's bytes come from.
enum ImageSource {
    DataUrl(String),
    Base64(String),
    Path(String),
}

/// The source of an image part: `data` (a data URL, or plain base64 as MCP and ACP send
/// it), else `path`, else `uri` (`file://`, `data:`). Web URLs were fetched before (under
/// the agent's network rule: `web_images.rs`); one left here is refused.
fn image_source(
    data: Option<String>,
    path: Option<String>,
    uri: Option<String>,
) -> Result<ImageSource, SessionError> {
    let web = |s: &str| {
        let lower = s.trim_start().to_ascii_lowercase();
        lower.starts_with("http://") || lower.starts_with("https://")
    };
    let refuse_web = |url: &str| {
        let shown: String = url.chars().take(100).collect();
        SessionError::NotSupported(format!(
            "image URLs ({shown}) are not fetched: the daemon does not go online for a \
             message (no permission covers it); download the image and send its bytes \
             (data, base64) or its path"
        ))
    };
    match (data, path) {
        (Some(_), Some(_)) => Err(SessionError::InvalidParams(
            "an image part needs one of data and path, not both".into(),
        )),
        (Some(data), None) if web(&data) => Err(refuse_web(&data)),
        (Some(data), None) if data.starts_with("data:") => Ok(ImageSource::DataUrl(data)),
        (Some(data), None) => Ok(ImageSource::Base64(data)),
        (None, Some(path)) if web(&path) => Err(refuse_web(&path)),
        (None, Some(path)) => Ok(ImageSource::Path(path)),
        (None, None) => match uri {
            Some(uri) if web(&uri) => Err(refuse_web(&uri)),
            Some(uri) if uri.starts_with("data:") => Ok(ImageSource::DataUrl(uri)),
            Some(uri) => match uri.strip_prefix("file://") {
                Some(path) => Ok(ImageSource::Path(path.to_owned())),
                None => Err(SessionError::InvalidParams(format!(
                    "image uri {:?} is neither file:// nor data:",
                    uri.chars().take(100).collect::<String>()
                ))),
            },
            None => Err(SessionError::InvalidParams(
                "an image part needs data (a data URL or base64 with mimeType), a path or a uri"
                    .into(),
            )),
        },
    }
}

/// Decodes plain base64 image data (`mimeType` says what it is).
fn decode_base64(data: &str, mime_type: Option<String>) -> Result<(String, Vec<u8>), SessionError> {
    use base64::Engine as _;
    let invalid = SessionError::InvalidParams;
    let mime = mime_type.ok_or_else(|| {
        invalid("image data in plain base64 needs mimeType (or send a data URL)".into())
    })?;
    if data.len() / 4 * 3 > MAX_IMAGE_BYTES {
        return Err(invalid(format!(
            "the image is over {MAX_IMAGE_BYTES} bytes"
        )));
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|e| invalid(format!("the image data is not valid base64: {e}")))?;
    Ok((mime, bytes))
}

fn store_image(
    source: ImageSource,
    mime_type: Option<String>,
    images_dir: &Path,
) -> Result<Block, SessionError> {
    let (mime, bytes) = match source {
        ImageSource::DataUrl(url) => {
            let (mime, bytes) = decode_data_url(&url)?;
            (mime_type.unwrap_or(mime), bytes)
        }
        ImageSource::Base64(data) => decode_base64(&data, mime_type)?,
        ImageSource::Path(path) => read_image_file(&path, mime_type)?,
    };
    let ext = extension_of_mime(&mime).ok_or_else(|| {
        SessionError::InvalidParams(format!(
            "image type {mime:?} is not supported (png, jpeg, gif, webp)"
        ))
    })?;
    if bytes.len() > MAX_IMAGE_BYTES {
        return Err(SessionError::InvalidParams(format!(
            "the image has {} bytes; the limit is {MAX_IMAGE_BYTES}",
            bytes.len()
        )));
    }
    std::fs::create_dir_all(images_dir).map_err(|e| {
        SessionError::Internal(format!("cannot create {}: {e}", images_dir.display()))
    })?;
    let stored = images_dir.join(format!("{}.{ext}", uuid::Uuid::new_v4().simple()));
    std::fs::write(&stored, &bytes)
        .map_err(|e| SessionError::Internal(format!("cannot store the image: {e}")))?;
    Ok(Block::Image {
        mime_type: mime,
        path: stored.display().to_string(),
    })
}

/// Largest `outputSchema` a `sendMessage` takes, in bytes of its JSON.
pub(crate) const MAX_OUTPUT_SCHEMA_BYTES: usize = 64 * 1024;

/// A schema a `sendMessage` gave: an object of at most [`MAX_OUTPUT_SCHEMA_BYTES`] that
/// the `jsonschema` crate compiles (a schema it cannot read is refused, never passed).
pub(crate) fn check_output_schema(schema: &serde_json::Value) -> Result<(), SessionError> {
    if !schema.is_object() {
        return Err(SessionError::InvalidParams(
            "outputSchema must be a JSON Schema object".into(),
        ));
    }
    let size = schema.to_string().len();
    if size > MAX_OUTPUT_SCHEMA_BYTES {
        return Err(SessionError::InvalidParams(format!(
            "outputSchema is {size} bytes, more than the {MAX_OUTPUT_SCHEMA_BYTES} allowed"
        )));
    }
    jsonschema::validator_for(schema).map_err(|e| {
        SessionError::InvalidParams(format!("outputSchema is not a valid JSON Schema: {e}"))
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn settings_merge_patch() {
        let current = AgentSettings {
            temperature: Some(0.2),
            max_output_tokens: Some(100),
            ..AgentSettings::default()
        };
        let merged = merge_settings(
            &current,
            json!({"temperature": null, "maxOutputTokens": 50}),
        )
        .unwrap();
        assert_eq!(
            merged,
            AgentSettings {
                temperature: None,
                max_output_tokens: Some(50),
                ..AgentSettings::default()
            }
        );
        let err = merge_settings(&current, json!({"temprature": 1})).unwrap_err();
        assert!(err.to_string().contains("temprature"), "{err}");
        assert!(merge_settings(&current, json!([1])).is_err());
        assert!(merge_settings(&current, json!({"maxOutputTokens": "x"})).is_err());
    }

    /// The folders under `dir`, a text cap of 1 KiB and a document cap of 64 bytes.
    fn limits(dir: &Path) -> Attachments {
        Attachments {
            images_dir: dir.join("images"),
            documents_dir: dir.join("documents"),
            text_cap: 1024,
            document_cap: 64,
        }
    }

    fn text_of(blocks: &[Block]) -> String {
        blocks
            .iter()
            .filter_map(|b| match b {
                Block::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn content_limits_and_parts() {
        let dir = tempfile::tempdir().unwrap();
        let limits = limits(dir.path());
        let blocks = |c: MessageContent| user_blocks(c, &limits);
        assert_eq!(text_of(&blocks("hi".into()).unwrap()), "hi");
        let file = dir.path().join("x.txt");
        std::fs::write(&file, "hello\n").unwrap();
        let file = file.display().to_string();
        let parts = MessageContent::Parts(vec![
            ContentPart::Text { text: "a".into() },
            ContentPart::Text { text: "b".into() },
            ContentPart::File { path: file.clone() },
        ]);
        assert_eq!(
            text_of(&blocks(parts).unwrap()),
            format!("a\nb\n[attached file: {file} (1 line)]\n```\nhello\n```")
        );
        assert!(matches!(
            blocks("  ".into()),
            Err(SessionError::InvalidParams(_))
        ));
        let big = "x".repeat(MAX_USER_TEXT_CHARS + 1);
        assert!(matches!(
            blocks(big.into()),
            Err(SessionError::InputTooLarge { chars, .. }) if chars == MAX_USER_TEXT_CHARS + 1
        ));
        // multi-byte characters count as one each
        let exact = "é".repeat(MAX_USER_TEXT_CHARS);
        assert!(blocks(exact.into()).is_ok());
    }

    #[test]
    fn images_are_stored_as_files() {
        use base64::Engine as _;
        let dir = tempfile::tempdir().unwrap();
        let png = b"\x89PNG\r\n\x1a\nfake";
        let source = dir.path().join("shot.PNG");
        std::fs::write(&source, png).unwrap();
        let url = format!(
            "data:image/jpeg;base64,{}",
            base64::engine::general_purpose::STANDARD.encode(b"jpg")
        );
        let image = |data: Option<String>, path: Option<String>| ContentPart::Image {
            data,
            path,
            mime_type: None,
            uri: None,
        };
        let content = MessageContent::Parts(vec![
            image(None, Some(source.display().to_string())),
            image(Some(url), None),
        ]);
        let images_dir = dir.path().join("images");
        let limits = limits(dir.path());
        let blocks = user_blocks(content, &limits).unwrap();
        assert_eq!(blocks.len(), 2, "images alone are a message");
        let stored: Vec<(String, Vec<u8>)> = blocks
            .iter()
            .map(|b| match b {
                Block::Image { mime_type, path } => {
                    assert!(path.starts_with(&images_dir.display().to_string()));
                    (mime_type.clone(), std::fs::read(path).unwrap())
                }
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            stored,
            [
                ("image/png".to_owned(), png.to_vec()),
                ("image/jpeg".to_owned(), b"jpg".to_vec())
            ]
        );
        let bad = [
            image(None, Some("relative.png".into())),
            image(Some("not a url".into()), None),
            image(Some("data:image/png;base64,@@@".into()), None),
            image(None, None),
            image(Some("data:text/plain;base64,aGk=".into()), None),
            image(Some("aGk=".into()), Some("/tmp/x.png".into())),
        ];
        for part in bad {
            let result = user_blocks(MessageContent::Parts(vec![part.clone()]), &limits);
            assert!(
                matches!(result, Err(SessionError::InvalidParams(_))),
                "{part:?}: {result:?}"
            );
        }
    }

    #[test]
    fn images_in_the_mcp_form_and_by_uri() {
        use base64::Engine as _;
        let dir = tempfile::tempdir().unwrap();
        let limits = limits(dir.path());
        let gif = b"GIF89a-fake";
        let b64 = base64::engine::general_purpose::STANDARD.encode(gif);
        let source = dir.path().join("a.gif");
        std::fs::write(&source, gif).unwrap();
        let part =
            |data: Option<&str>, mime: Option<&str>, uri: Option<String>| ContentPart::Image {
                data: data.map(str::to_owned),
                path: None,
                mime_type: mime.map(str::to_owned),
                uri,
            };
        let good = [
            // plain base64 with its type, as MCP and ACP send it (a uri beside data is ignored)
            part(
                Some(&b64),
                Some("image/gif"),
                Some("https://example.com/a.gif".into()),
            ),
            part(None, None, Some(format!("file://{}", source.display()))),
            part(None, None, Some(format!("data:image/gif;base64,{b64}"))),
        ];
        for p in good {
            let blocks = user_blocks(MessageContent::Parts(vec![p.clone()]), &limits).unwrap();
            let [Block::Image { mime_type, path }] = blocks.as_slice() else {
                panic!("{p:?}: {blocks:?}");
            };
            assert_eq!(mime_type, "image/gif");
            assert_eq!(std::fs::read(path).unwrap(), gif);
        }
        let refused = [
            (part(Some(&b64), None, None), "needs mimeType"),
            (
                part(Some("https://example.com/a.png"), None, None),
                "not fetched",
            ),
            (
                part(None, None, Some("HTTP://example.com/a.png".into())),
                "not fetched",
            ),
            (
                part(None, None, Some("ftp://example.com/a.png".into())),
                "neither file",
            ),
        ];
        for (p, why) in refused {
            let err = user_blocks(MessageContent::Parts(vec![p.clone()]), &limits).unwrap_err();
            assert!(err.to_string().contains(why), "{p:?}: {err}");
        }
        let web = ContentPart::Image {
            data: None,
            path: Some("https://example.com/a.png".into()),
            mime_type: None,
            uri: None,
        };
        assert!(matches!(
            user_blocks(MessageContent::Parts(vec![web]), &limits),
            Err(SessionError::NotSupported(_))
        ));
    }
}
