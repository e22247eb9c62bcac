//! A whole answer at once, for the daemon's own small calls (titles, summaries,
//! `testProvider`): one stream collected into its text, with how it ended. The agent loop
//! does not use it: a run applies every piece as it arrives.

use std::time::{Duration, Instant};

use agent_proto::Usage;
use futures::StreamExt;

use super::{FinishReason, Provider, ProviderError, ProviderEvent, ProviderRequest};

/// What one call gave, whole.
#[derive(Debug, Default)]
pub struct Completion {
    /// The answer's text (reasoning and tool calls are left out).
    pub text: String,
    /// Why the model stopped, if it said.
    pub finish: Option<FinishReason>,
    pub usage: Option<Usage>,
    /// Attempts sent again before the first byte.
    pub retries: u32,
    /// Time from the call to its first event that was not a retry.
    pub first_event: Option<Duration>,
    /// Why the stream failed, if it did; what arrived before is kept above.
    pub error: Option<ProviderError>,
}

impl Completion {
    /// The text, or the error that cut it.
    pub fn text(self) -> Result<String, ProviderError> {
        match self.error {
            Some(error) => Err(error),
            None => Ok(self.text),
        }
    }
}

/// Sends `request` and collects the answer. Retries are logged as they happen.
pub async fn complete(provider: &dyn Provider, request: ProviderRequest) -> Completion {
    complete_with(provider, request, |_| {}).await
}

/// [`complete`], handing each piece of text to `on_delta` as it arrives.
pub async fn complete_with(
    provider: &dyn Provider,
    request: ProviderRequest,
    mut on_delta: impl FnMut(&str),
) -> Completion {
    let started = Instant::now();
    let mut stream = provider.stream(request);
    let mut out = Completion::default();
    while let Some(item) = stream.next().await {
        let event = match item {
            Ok(event) => event,
            Err(error) => {
                out.error = Some(error);
                break;
            }
        };
        if let ProviderEvent::Retrying { error, .. } = &event {
            out.retries += 1;
            tracing::info!("retrying a call: {error}");
            continue;
        }
        out.first_event.get_or_insert_with(|| started.elapsed());
        match event {
            ProviderEvent::TextDelta(delta) => {
                on_delta(&delta);
                out.text.push_str(&delta);
            }
            ProviderEvent::Finish(reason) => out.finish = Some(reason),
            ProviderEvent::Usage(usage) => {
                let total = out.usage.get_or_insert_with(Usage::default);
                total.input_tokens += usage.input_tokens;
                total.output_tokens += usage.output_tokens;
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ProviderStream;

    /// A provider that plays fixed items.
    #[derive(Debug)]
    struct Canned(Vec<Result<ProviderEvent, ProviderError>>);

    impl Provider for Canned {
        fn stream(&self, _request: ProviderRequest) -> ProviderStream {
            Box::pin(futures::stream::iter(self.0.clone()))
        }
        fn request_body(&self, _request: &ProviderRequest) -> serde_json::Value {
            serde_json::Value::Null
        }
    }

    fn request() -> ProviderRequest {
        ProviderRequest {
            model: "m".into(),
            system: None,
            messages: vec![],
            tools: vec![],
            max_output_tokens: None,
            temperature: None,
            options: Default::default(),
        }
    }

    #[tokio::test]
    async fn collects_text_finish_usage_and_retries() {
        let retry = ProviderEvent::Retrying {
            attempt: 1,
            max: 4,
            delay: Duration::ZERO,
            error: ProviderError::Unreachable {
                provider: "p".into(),
                url: "u".into(),
                detail: "refused".into(),
            },
        };
        let usage = |i, o| {
            ProviderEvent::Usage(Usage {
                input_tokens: i,
                output_tokens: o,
            })
        };
        let provider = Canned(vec![
            Ok(retry),
            Ok(ProviderEvent::ReasoningDelta("hmm".into())),
            Ok(ProviderEvent::TextDelta("O".into())),
            Ok(ProviderEvent::TextDelta("K".into())),
            Ok(ProviderEvent::Finish(FinishReason::Stop)),
            Ok(usage(3, 1)),
            Ok(usage(0, 1)),
        ]);
        let answer = complete(&provider, request()).await;
        assert_eq!(answer.text, "OK");
        assert_eq!(answer.finish, Some(FinishReason::Stop));
        assert_eq!(
            answer.usage,
            Some(Usage {
                input_tokens: 3,
                output_tokens: 2
            })
        );
        assert_eq!(answer.retries, 1);
        assert!(answer.first_event.is_some());
        assert_eq!(answer.text().unwrap(), "OK");

        let cut = Canned(vec![
            Ok(ProviderEvent::TextDelta("par".into())),
            Err(ProviderError::Truncated {
                provider: "p".into(),
                detail: "closed".into(),
            }),
        ]);
        let answer = complete(&cut, request()).await;
        assert_eq!(answer.text, "par", "what arrived is kept");
        let err = answer.text().unwrap_err();
        assert_eq!(err.kind(), agent_proto::run_error::PROVIDER_TRUNCATED);
    }
}
