//! `complete`: one model call for a client, with no agent and no history. Checked, sent
//! through the provider like any call (retries, idle timeout), answered whole (its pieces
//! streamed to the caller as they come, if it asked), and never stored.

use agent_proto::{CompleteMessage, CompleteResult, CompleteRole};

use super::{ChatMessage, FinishReason, ProviderRegistry, ProviderRequest};

/// What the caller asked for.
#[derive(Debug, Default)]
pub struct OneShot {
    pub provider: Option<String>,
    pub model: Option<String>,
    pub messages: Option<Vec<CompleteMessage>>,
    pub prompt: Option<String>,
    pub system: Option<String>,
    pub max_tokens: Option<u32>,
    pub temperature: Option<f64>,
}

/// Why a one-shot call gave no answer.
#[derive(Debug, PartialEq)]
pub enum OneShotError {
    /// The request is not valid; the text says why.
    Invalid(String),
    NotConfigured(String),
    /// The provider failed; its words.
    Failed(String),
}

/// The conversation a call sends: `messages` or `prompt` (exactly one), ending with a
/// user message, no message empty.
pub fn conversation(call: &OneShot) -> Result<Vec<ChatMessage>, String> {
    let messages = match (&call.messages, &call.prompt) {
        (Some(_), Some(_)) => return Err("give messages or prompt, not both".into()),
        (None, None) => return Err("messages or prompt is required".into()),
        (None, Some(prompt)) => vec![CompleteMessage {
            role: CompleteRole::User,
            content: prompt.clone(),
        }],
        (Some(messages), None) => messages.clone(),
    };
    if messages.is_empty() {
        return Err("messages is empty".into());
    }
    if let Some(i) = messages.iter().position(|m| m.content.trim().is_empty()) {
        return Err(format!("messages[{i}].content is empty"));
    }
    if messages.last().map(|m| m.role) != Some(CompleteRole::User) {
        return Err("the last message must be the user's".into());
    }
    let chars: usize = messages.iter().map(|m| m.content.chars().count()).sum();
    if chars > agent_proto::MAX_USER_TEXT_CHARS {
        return Err(format!(
            "the messages have {chars} characters; at most {}",
            agent_proto::MAX_USER_TEXT_CHARS
        ));
    }
    Ok(messages
        .into_iter()
        .map(|m| match m.role {
            CompleteRole::User => ChatMessage::User {
                content: m.content,
                images: Vec::new(),
                documents: Vec::new(),
            },
            CompleteRole::Assistant => ChatMessage::Assistant {
                content: m.content,
                tool_calls: Vec::new(),
                reasoning: Vec::new(),
                order: Vec::new(),
            },
        })
        .collect())
}

/// Makes the call and collects the answer, handing each piece of text to `on_delta` as it
/// arrives.
pub async fn complete(
    providers: &ProviderRegistry,
    call: OneShot,
    on_delta: impl FnMut(&str),
) -> Result<CompleteResult, OneShotError> {
    let messages = conversation(&call).map_err(OneShotError::Invalid)?;
    if call.temperature.is_some_and(|t| !(0.0..=2.0).contains(&t)) {
        return Err(OneShotError::Invalid(
            "temperature must be between 0 and 2".into(),
        ));
    }
    if call.max_tokens == Some(0) {
        return Err(OneShotError::Invalid("maxTokens must be at least 1".into()));
    }
    let provider = call
        .provider
        .unwrap_or_else(|| providers.default_provider());
    let model = match call.model {
        Some(m) => m,
        None => providers.default_model_for(&provider).unwrap_or_default(),
    };
    let resolved = providers.resolve(&provider, &model).ok_or_else(|| {
        OneShotError::NotConfigured(format!(
            "provider {provider:?} is not configured; see listProviders"
        ))
    })?;
    let request = ProviderRequest {
        model: model.clone(),
        system: call.system.filter(|s| !s.trim().is_empty()),
        messages,
        tools: Vec::new(),
        max_output_tokens: Some(
            call.max_tokens
                .unwrap_or(resolved.model.max_output_tokens)
                .min(resolved.model.max_output_tokens.max(1)),
        ),
        temperature: call.temperature,
        options: Default::default(),
    };
    let answer = super::complete_with(resolved.provider.as_ref(), request, on_delta).await;
    let finish_reason = answer.finish.as_ref().map(|f| match f {
        FinishReason::Stop => "stop".to_owned(),
        FinishReason::Length => "length".to_owned(),
        FinishReason::ToolCalls => "tool_calls".to_owned(),
        FinishReason::Refused(_) => "refused".to_owned(),
        // As the provider said it (the only one that pauses).
        FinishReason::Paused => "pause_turn".to_owned(),
        FinishReason::Other(other) => other.clone(),
    });
    let usage = answer.usage;
    let text = answer
        .text()
        .map_err(|e| OneShotError::Failed(e.to_string()))?;
    Ok(CompleteResult {
        provider,
        model,
        text,
        finish_reason,
        usage,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(role: CompleteRole, content: &str) -> CompleteMessage {
        CompleteMessage {
            role,
            content: content.into(),
        }
    }

    #[test]
    fn conversations() {
        let ok = OneShot {
            prompt: Some("hi".into()),
            ..OneShot::default()
        };
        assert_eq!(conversation(&ok).unwrap().len(), 1);
        let cases = [
            (None, None, "messages or prompt is required"),
            (Some(vec![]), Some("x"), "not both"),
            (Some(vec![]), None, "messages is empty"),
            (
                Some(vec![
                    msg(CompleteRole::User, "a"),
                    msg(CompleteRole::Assistant, "b"),
                ]),
                None,
                "the last message must be the user's",
            ),
            (
                Some(vec![msg(CompleteRole::User, " ")]),
                None,
                "messages[0].content is empty",
            ),
        ];
        for (messages, prompt, expected) in cases {
            let call = OneShot {
                messages,
                prompt: prompt.map(str::to_owned),
                ..OneShot::default()
            };
            let e = conversation(&call).unwrap_err();
            assert!(e.contains(expected), "{e}");
        }
    }
}
