//! Checking what clients send: message content and settings patches.

use agent_proto::{AgentSettings, ContentPart, MAX_USER_TEXT_CHARS, MessageContent};

use super::SessionError;

pub(super) fn parse_settings(value: serde_json::Value) -> Result<AgentSettings, SessionError> {
    if !value.is_object() {
        return Err(SessionError::InvalidParams(
            "settings must be an object".into(),
        ));
    }
    serde_json::from_value(value)
        .map_err(|e| SessionError::InvalidParams(format!("invalid settings: {e}")))
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

/// The text of a `sendMessage` content, checked against the limits.
pub(super) fn user_text(content: MessageContent) -> Result<String, SessionError> {
    let text = match content {
        MessageContent::Text(text) => text,
        MessageContent::Parts(parts) => {
            let mut text = String::new();
            for part in parts {
                match part {
                    ContentPart::Text { text: t } => {
                        if !text.is_empty() {
                            text.push('\n');
                        }
                        text.push_str(&t);
                    }
                    ContentPart::Image { .. } => {
                        return Err(SessionError::NotSupported("image content parts".into()));
                    }
                    ContentPart::File { .. } => {
                        return Err(SessionError::NotSupported("file content parts".into()));
                    }
                }
            }
            text
        }
    };
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
    if text.trim().is_empty() {
        return Err(SessionError::InvalidParams("the message is empty".into()));
    }
    Ok(text)
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

    #[test]
    fn user_text_limits() {
        assert_eq!(user_text("hi".into()).unwrap(), "hi");
        let parts = MessageContent::Parts(vec![
            ContentPart::Text { text: "a".into() },
            ContentPart::Text { text: "b".into() },
        ]);
        assert_eq!(user_text(parts).unwrap(), "a\nb");
        assert!(matches!(
            user_text("  ".into()),
            Err(SessionError::InvalidParams(_))
        ));
        let big = "x".repeat(MAX_USER_TEXT_CHARS + 1);
        assert!(matches!(
            user_text(big.into()),
            Err(SessionError::InputTooLarge { chars, .. }) if chars == MAX_USER_TEXT_CHARS + 1
        ));
        // multi-byte characters count as one each
        let exact = "é".repeat(MAX_USER_TEXT_CHARS);
        assert!(user_text(exact.into()).is_ok());
        let image = MessageContent::Parts(vec![ContentPart::Image {
            data: None,
            path: Some("/a.png".into()),
            mime_type: None,
        }]);
        assert!(matches!(
            user_text(image),
            Err(SessionError::NotSupported(_))
        ));
    }
}
