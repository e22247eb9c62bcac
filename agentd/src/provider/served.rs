//! The models a provider says it serves (`listModels {served: true}`): OpenAI-compatible
//! servers (OpenAI, Ollama, vLLM, llama.cpp, LM Studio, OpenRouter, ...) answer
//! `GET {base}/models`, Anthropic `GET {base}/v1/models`, Gemini `GET {base}/v1beta/models`;
//! each with the key the way its calls send it. One request, bounded in time and size.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;

use crate::config::{ProviderKind, Secret};

/// How long asking for the list may take.
const TIMEOUT: Duration = Duration::from_secs(10);
/// The largest list read (OpenRouter's, with descriptions, is about 1 MiB).
const MAX_BYTES: usize = 8 * 1024 * 1024;

/// Where and how to ask one provider for its models.
#[derive(Debug, Clone)]
pub(super) struct ModelsEndpoint {
    pub(super) kind: ProviderKind,
    pub(super) base_url: String,
    pub(super) key: Option<Secret>,
    /// Extra headers from the config, sent as with every call.
    pub(super) headers: BTreeMap<String, String>,
}

impl ModelsEndpoint {
    fn url(&self) -> Option<String> {
        let base = self.base_url.trim_end_matches('/');
        match self.kind {
            ProviderKind::Openai => Some(format!("{base}/models")),
            ProviderKind::Anthropic => Some(format!("{base}/v1/models?limit=1000")),
            ProviderKind::Gemini => Some(format!("{base}/v1beta/models?pageSize=1000")),
            ProviderKind::Scripted => None,
        }
    }

    /// The model ids the provider lists, in its order; `Err` says what went wrong in the
    /// provider's words (cut to a line).
    pub(super) async fn fetch(&self, http: &reqwest::Client) -> Result<Vec<String>, String> {
        let Some(url) = self.url() else {
            return Err("a scripted provider serves no list".into());
        };
        let mut request = http.get(&url).timeout(TIMEOUT);
        for (name, value) in &self.headers {
            request = request.header(name, value);
        }
        request = match (self.kind, &self.key) {
            (ProviderKind::Anthropic, Some(key)) => request
                .header("x-api-key", key.expose())
                .header("anthropic-version", "2023-06-01"),
            (ProviderKind::Gemini, Some(key)) => request.header("x-goog-api-key", key.expose()),
            (_, Some(key)) => request.bearer_auth(key.expose()),
            (_, None) => request,
        };
        let response = request
            .send()
            .await
            .map_err(|e| format!("cannot ask for the models: {}", e.without_url()))?;
        let status = response.status();
        let body = read_capped(response).await?;
        if !status.is_success() {
            let text = String::from_utf8_lossy(&body);
            let line = text.lines().next().unwrap_or_default();
            return Err(format!(
                "the provider answered {status}: {}",
                line.chars().take(300).collect::<String>()
            ));
        }
        let json: Value = serde_json::from_slice(&body)
            .map_err(|e| format!("the list of models is not JSON: {e}"))?;
        ids(self.kind, &json).ok_or_else(|| "the answer holds no list of models".to_owned())
    }
}

/// The body, at most [`MAX_BYTES`].
async fn read_capped(mut response: reqwest::Response) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| format!("the list of models broke off: {}", e.without_url()))?
    {
        if body.len() + chunk.len() > MAX_BYTES {
            return Err(format!("the list of models is over {MAX_BYTES} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The ids of a list of models as each API writes it: `{data: [{id}]}` (OpenAI-compatible
/// and Anthropic), `{models: [{name: "models/ID"}]}` (Gemini), `{models: [{name}]}` (Ollama's
/// own `/api/tags`, for a base URL without `/v1`).
fn ids(kind: ProviderKind, json: &Value) -> Option<Vec<String>> {
    let listed = |key: &str, field: &str| -> Option<Vec<String>> {
        let items = json.get(key)?.as_array()?;
        Some(
            items
                .iter()
                .filter_map(|m| m.get(field)?.as_str())
                .map(|id| id.strip_prefix("models/").unwrap_or(id).to_owned())
                .collect(),
        )
    };
    match kind {
        ProviderKind::Gemini => listed("models", "name"),
        _ => listed("data", "id").or_else(|| listed("models", "name")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_apis_list_is_read() {
        let openai =
            json!({"object": "list", "data": [{"id": "gpt-4.1", "object": "model"}, {"id": "o3"}]});
        assert_eq!(
            ids(ProviderKind::Openai, &openai).unwrap(),
            ["gpt-4.1", "o3"]
        );
        let anthropic =
            json!({"data": [{"type": "model", "id": "claude-sonnet-4-5"}], "has_more": false});
        assert_eq!(
            ids(ProviderKind::Anthropic, &anthropic).unwrap(),
            ["claude-sonnet-4-5"]
        );
        let gemini = json!({"models": [{"name": "models/gemini-2.5-pro"}]});
        assert_eq!(
            ids(ProviderKind::Gemini, &gemini).unwrap(),
            ["gemini-2.5-pro"]
        );
        let ollama_tags = json!({"models": [{"name": "qwen2.5:7b", "size": 1}]});
        assert_eq!(
            ids(ProviderKind::Openai, &ollama_tags).unwrap(),
            ["qwen2.5:7b"]
        );
        assert_eq!(ids(ProviderKind::Openai, &json!({"error": "no"})), None);
    }
}
