//! The provider instances of this daemon: the built-in demo, presets switched on by API keys
//! in the environment, and the config file's providers (which override presets of the same
//! id). Answers which provider and model an agent gets, and lists them without secrets.

use std::collections::BTreeMap;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use agent_proto::{ModelInfo, ModelListError, ProviderInfo, TestProviderResult};

use super::anthropic::AnthropicFormat;
use super::gemini::GeminiFormat;
use super::http::{HttpProvider, RetryPolicy, WireFormat};
use super::openai::OpenAiFormat;
use super::presets::{DEFAULT_CAPABILITIES, PRESETS, known_model, preset};
use super::scripted::{Script, ScriptedProvider};
use super::served::ModelsEndpoint;
use super::{ChatMessage, Provider, ProviderRequest};
use crate::config::{ConfigError, ConfigFile, ModelConfig, ProviderConfig, ProviderKind, Secret};
use crate::metrics::Metrics;

/// How long `testProvider` waits for a complete answer.
const TEST_TIMEOUT: Duration = Duration::from_secs(60);

/// `max_tokens` for Anthropic calls when the agent sets none (the API requires one).
const ANTHROPIC_DEFAULT_MAX_TOKENS: u32 = 8192;

/// The smallest `budget_tokens` Anthropic accepts for extended thinking.
const MIN_THINKING_BUDGET: u32 = 1024;

/// Id of the always-present demo provider.
pub(super) const DEMO_PROVIDER: &str = "demo";
const DEMO_MODEL: &str = "echo";

#[derive(Debug)]
struct Entry {
    info: ProviderInfo,
    models: Vec<ModelConfig>,
    provider: Arc<dyn Provider>,
    /// Where to ask for the models it serves (`None`: a scripted provider).
    served: Option<ModelsEndpoint>,
}

/// The providers the daemon calls, as the config file last read says: looked up for every
/// call, replaced whole when the daemon reloads its config (SIGHUP); a call resolved
/// before keeps the provider it got.
#[derive(Debug)]
pub struct ProviderRegistry {
    current: RwLock<Arc<Providers>>,
}

/// One set of providers, from one reading of the config.
#[derive(Debug)]
struct Providers {
    entries: Vec<Entry>,
    default_provider: String,
    default_model: String,
    /// For asking providers what models they serve.
    http: reqwest::Client,
}

/// A provider ready for a call, with the capabilities of the chosen model.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub provider: Arc<dyn Provider>,
    pub model: ModelInfo,
}

impl ProviderRegistry {
    /// Builds the registry from the config file and the environment (`env` looks up a
    /// variable; the daemon passes `std::env::var`).
    /// HTTP providers observe their requests' latency in `metrics`.
    pub fn from_config(
        config: &ConfigFile,
        env: impl Fn(&str) -> Option<String>,
        metrics: &Metrics,
    ) -> Result<ProviderRegistry, ConfigError> {
        let env = |k: &str| env(k).filter(|v| !v.trim().is_empty());
        let demo = ProviderConfig {
            id: DEMO_PROVIDER.into(),
            kind: Some(ProviderKind::Scripted),
            default_model: Some(DEMO_MODEL.into()),
            models: vec![model_config(DEMO_MODEL)],
            ..empty_config()
        };
        let mut configs: Vec<(ProviderConfig, &'static str)> = vec![(demo, "builtin")];
        for preset in PRESETS {
            let key = preset.key_envs.iter().copied().find(|k| env(k).is_some());
            let host = preset.host_env.and_then(&env);
            if key.is_some() || host.is_some() {
                let config = ProviderConfig {
                    id: preset.id.into(),
                    preset: Some(preset.id.into()),
                    api_key_env: key.map(Into::into),
                    base_url: host.map(|h| preset.base_url_from(Some(&h))),
                    ..empty_config()
                };
                configs.push((config, "preset"));
            }
        }
        for provider in &config.providers {
            if provider.id.trim().is_empty() {
                return Err(ConfigError::Invalid("a provider has an empty id".into()));
            }
            if config
                .providers
                .iter()
                .filter(|p| p.id == provider.id)
                .count()
                > 1
            {
                return Err(ConfigError::Invalid(format!(
                    "provider id {:?} appears twice in the config file",
                    provider.id
                )));
            }
            configs.retain(|(c, _)| c.id != provider.id);
            configs.push((provider.clone(), "config"));
        }

        let mut entries = Vec::with_capacity(configs.len());
        for (config, source) in configs {
            entries.push(build_entry(config, source, &env, metrics)?);
        }

        let first_preset = entries.iter().find(|e| e.info.source == "preset");
        let default_provider = match &config.defaults.provider {
            Some(id) => {
                if !entries.iter().any(|e| &e.info.id == id) {
                    return Err(ConfigError::Invalid(format!(
                        "[defaults] provider {id:?} is not a configured provider (configured: {})",
                        entries
                            .iter()
                            .map(|e| e.info.id.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )));
                }
                id.clone()
            }
            None => first_preset.map_or(DEMO_PROVIDER.to_owned(), |e| e.info.id.clone()),
        };
        let default_model = match &config.defaults.model {
            Some(model) => model.clone(),
            None => entries
                .iter()
                .find(|e| e.info.id == default_provider)
                .map(|e| e.info.default_model.clone())
                .unwrap_or_else(|| DEMO_MODEL.to_owned()),
        };
        for entry in &mut entries {
            entry.info.is_default = entry.info.id == default_provider;
        }
        let http = super::http::client(Duration::from_secs(10), Duration::from_secs(30))
            .map_err(|e| ConfigError::Invalid(format!("cannot build an HTTP client: {e}")))?;
        let providers = Providers {
            entries,
            default_provider,
            default_model,
            http,
        };
        Ok(ProviderRegistry {
            current: RwLock::new(Arc::new(providers)),
        })
    }

    /// The providers as of now.
    fn now(&self) -> Arc<Providers> {
        self.current
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Takes the providers of `next` (a registry built from the config read again): new
    /// calls use them, calls resolved before keep theirs.
    pub fn replace(&self, next: ProviderRegistry) {
        *self.current.write().unwrap_or_else(PoisonError::into_inner) = next.now();
    }

    pub fn default_provider(&self) -> String {
        self.now().default_provider.clone()
    }

    /// The model for a new agent: the given one, else the default model when the provider is
    /// the default one, else the provider's own default.
    pub fn default_model_for(&self, provider: &str) -> Option<String> {
        let now = self.now();
        if provider == now.default_provider {
            return Some(now.default_model.clone());
        }
        now.entry(provider).map(|e| e.info.default_model.clone())
    }

    /// The provider and model capabilities for a call; `None` when the provider is not
    /// configured. Any model id is accepted: unknown ones get the built-in table's or the
    /// default capabilities.
    pub fn resolve(&self, provider: &str, model: &str) -> Option<Resolved> {
        let now = self.now();
        let entry = now.entry(provider)?;
        Some(Resolved {
            provider: entry.provider.clone(),
            model: model_info(
                provider,
                &entry.info.kind,
                model,
                entry.models.iter().find(|m| m.id == model),
            ),
        })
    }

    /// One tiny request to a provider: does it answer, how fast, and if not, what it says.
    pub async fn test(&self, provider: &str, model: &str) -> Option<TestProviderResult> {
        let resolved = self.resolve(provider, model)?;
        let request = ProviderRequest {
            model: model.to_owned(),
            system: None,
            messages: vec![ChatMessage::User {
                content: "Reply with the single word OK.".into(),
                images: Vec::new(),
                documents: Vec::new(),
            }],
            tools: Vec::new(),
            max_output_tokens: Some(16),
            temperature: None,
            options: Default::default(),
        };
        let started = std::time::Instant::now();
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        let mut result = TestProviderResult {
            provider: provider.to_owned(),
            model: model.to_owned(),
            ok: false,
            latency_ms: None,
            total_ms: 0,
            reply: None,
            error: None,
            error_kind: None,
            retries: 0,
        };
        let call = super::complete(resolved.provider.as_ref(), request);
        match tokio::time::timeout(TEST_TIMEOUT, call).await {
            Ok(answer) => {
                result.latency_ms = answer.first_event.map(ms);
                result.retries = answer.retries;
                if !answer.text.is_empty() {
                    result.reply = Some(answer.text.chars().take(200).collect());
                }
                match answer.error {
                    None => result.ok = true,
                    Some(e) => {
                        result.error = Some(e.to_string());
                        result.error_kind = Some(e.kind().to_owned());
                    }
                }
            }
            Err(_) => {
                result.error = Some(format!(
                    "no complete answer within {} s",
                    TEST_TIMEOUT.as_secs()
                ));
                result.error_kind = Some(agent_proto::run_error::PROVIDER_IDLE_TIMEOUT.to_owned());
            }
        }
        result.total_ms = ms(started.elapsed());
        Some(result)
    }

    pub fn list_providers(&self) -> Vec<ProviderInfo> {
        self.now().entries.iter().map(|e| e.info.clone()).collect()
    }

    /// Models of one provider, or of all; `None` when the named provider does not exist.
    pub fn list_models(&self, provider: Option<&str>) -> Option<Vec<ModelInfo>> {
        let now = self.now();
        if let Some(id) = provider {
            now.entry(id)?;
        }
        Some(
            now.entries
                .iter()
                .filter(|e| provider.is_none_or(|id| e.info.id == id))
                .flat_map(|e| {
                    e.models
                        .iter()
                        .map(|m| model_info(&e.info.id, &e.info.kind, &m.id, Some(m)))
                })
                .collect(),
        )
    }
}

impl ProviderRegistry {
    /// [`ProviderRegistry::list_models`], each model marked `served` by whether its
    /// provider lists it, with the models a provider lists beyond the config's (known
    /// capabilities or defaults); a provider that cannot say is named in the errors.
    /// `None` when the named provider does not exist.
    pub async fn served_models(
        &self,
        provider: Option<&str>,
    ) -> Option<(Vec<ModelInfo>, Vec<ModelListError>)> {
        let now = self.now();
        let configured = self.list_models(provider)?;
        let asked: Vec<&Entry> = now
            .entries
            .iter()
            .filter(|e| provider.is_none_or(|id| e.info.id == id))
            .filter(|e| e.served.is_some())
            .collect();
        let http = &now.http;
        let answers = futures::future::join_all(asked.iter().map(|&e| async move {
            let endpoint = e.served.as_ref()?;
            Some((e, endpoint.fetch(http).await))
        }))
        .await;
        let mut models = configured;
        let mut errors = Vec::new();
        for (entry, answer) in answers.into_iter().flatten() {
            let id = &entry.info.id;
            match answer {
                Ok(listed) => {
                    for model in models.iter_mut().filter(|m| &m.provider == id) {
                        model.served = Some(listed.contains(&model.id));
                    }
                    for name in listed {
                        if !models.iter().any(|m| &m.provider == id && m.id == name) {
                            let mut info = model_info(id, &entry.info.kind, &name, None);
                            info.served = Some(true);
                            models.push(info);
                        }
                    }
                }
                Err(error) => errors.push(ModelListError {
                    provider: id.clone(),
                    error,
                }),
            }
        }
        Some((models, errors))
    }
}

impl Providers {
    fn entry(&self, id: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.info.id == id)
    }
}

fn model_config(id: &str) -> ModelConfig {
    ModelConfig {
        id: id.into(),
        context_window: None,
        max_output_tokens: None,
        tools: None,
        vision: None,
        reasoning: None,
        documents: None,
        thinking_budget: None,
        input_price: None,
        output_price: None,
    }
}

/// `kind` is the provider's wire format: a model takes documents through its vendor's own
/// API only, unless its config entry says otherwise.
fn model_info(provider: &str, kind: &str, model: &str, config: Option<&ModelConfig>) -> ModelInfo {
    let base = known_model(model).unwrap_or(DEFAULT_CAPABILITIES);
    let c = config.cloned().unwrap_or_else(|| model_config(model));
    ModelInfo {
        provider: provider.to_owned(),
        id: model.to_owned(),
        context_window: c.context_window.unwrap_or(base.context_window),
        max_output_tokens: c.max_output_tokens.unwrap_or(base.max_output_tokens),
        tools: c.tools.unwrap_or(base.tools),
        vision: c.vision.unwrap_or(base.vision),
        reasoning: c.reasoning.unwrap_or(base.reasoning),
        documents: c
            .documents
            .unwrap_or_else(|| base.documents.is_some_and(|k| k.as_str() == kind)),
        input_price: c.input_price,
        output_price: c.output_price,
        served: None,
    }
}

/// A provider config with nothing set.
fn empty_config() -> ProviderConfig {
    ProviderConfig {
        id: String::new(),
        preset: None,
        kind: None,
        base_url: None,
        api_key: None,
        api_key_env: None,
        default_model: None,
        models: Vec::new(),
        headers: BTreeMap::new(),
        script: None,
        idle_timeout_secs: None,
        connect_timeout_secs: None,
        max_retries: None,
        retry_base_ms: None,
        replay_reasoning: None,
    }
}

/// Fills what a config leaves out from its preset.
fn with_preset(mut config: ProviderConfig) -> Result<ProviderConfig, ConfigError> {
    let Some(name) = config.preset.clone() else {
        return Ok(config);
    };
    let preset = preset(&name).ok_or_else(|| {
        ConfigError::Invalid(format!(
            "provider {:?}: unknown preset {name:?} (known: {})",
            config.id,
            PRESETS.iter().map(|p| p.id).collect::<Vec<_>>().join(", ")
        ))
    })?;
    config.kind.get_or_insert(preset.kind);
    if config.base_url.is_none() {
        config.base_url = Some(preset.base_url.into());
    }
    if config.api_key.is_none() && config.api_key_env.is_none() {
        config.api_key_env = preset.key_envs.first().map(|k| (*k).into());
    }
    config
        .default_model
        .get_or_insert_with(|| preset.default_model.into());
    config
        .replay_reasoning
        .get_or_insert(preset.replay_reasoning);
    if config.models.is_empty() {
        config.models = preset.models.iter().map(|m| model_config(m)).collect();
    }
    Ok(config)
}

/// What to check when a provider refuses the key.
fn key_hint(config: &ProviderConfig) -> String {
    match (&config.api_key, &config.api_key_env) {
        (Some(_), _) => format!("the api_key of provider {:?} in the config file", config.id),
        (None, Some(var)) => format!("the API key in ${var}"),
        (None, None) => format!(
            "the API key: provider {:?} sends none (set api_key_env in the config file)",
            config.id
        ),
    }
}

/// A provider's entry from its config (a preset filled in): its key from the config or
/// the environment, its models (the default among them), the checks of the keys only one
/// kind takes, and the provider itself.
fn build_entry(
    config: ProviderConfig,
    source: &str,
    env: &impl Fn(&str) -> Option<String>,
    metrics: &Metrics,
) -> Result<Entry, ConfigError> {
    let config = with_preset(config)?;
    let invalid = |msg: String| ConfigError::Invalid(format!("provider {:?}: {msg}", config.id));
    let kind = config.kind.ok_or_else(|| {
        invalid("needs kind (openai, anthropic, gemini, scripted) or preset".into())
    })?;
    let api_key = match (&config.api_key, &config.api_key_env) {
        (Some(key), _) => Some(key.clone()),
        (None, Some(var)) => env(var).map(Secret::new),
        (None, None) => None,
    };
    let default_model = config
        .default_model
        .clone()
        .or_else(|| config.models.first().map(|m| m.id.clone()));
    let mut models = config.models.clone();
    if let Some(default) = &default_model
        && !models.iter().any(|m| &m.id == default)
    {
        models.insert(0, model_config(default));
    }
    if config.replay_reasoning == Some(true) && kind != ProviderKind::Openai {
        return Err(invalid(format!(
            "replay_reasoning is for kind \"openai\" only, this provider is {:?}",
            kind.as_str()
        )));
    }
    let thinking = thinking_budgets(kind, &models).map_err(invalid)?;
    let provider: Arc<dyn Provider> = match kind {
        ProviderKind::Openai => http_provider(
            &config,
            api_key.clone(),
            OpenAiFormat {
                replay_reasoning: config.replay_reasoning.unwrap_or(false),
            },
            metrics,
        )?,
        ProviderKind::Anthropic => http_provider(
            &config,
            api_key.clone(),
            AnthropicFormat {
                default_max_tokens: ANTHROPIC_DEFAULT_MAX_TOKENS,
                thinking,
            },
            metrics,
        )?,
        ProviderKind::Gemini => http_provider(&config, api_key.clone(), GeminiFormat, metrics)?,
        ProviderKind::Scripted => {
            let script = config
                .script
                .as_deref()
                .map(Script::load)
                .transpose()
                .map_err(invalid)?;
            if script.is_some() && models.is_empty() {
                models.push(model_config("script"));
            }
            Arc::new(ScriptedProvider {
                id: config.id.clone(),
                script,
                echo_delay: Duration::from_millis(15),
            })
        }
    };
    if kind != ProviderKind::Scripted && default_model.is_none() {
        return Err(invalid(
            "needs default_model or at least one entry in models".into(),
        ));
    }
    let default_model = default_model
        .or_else(|| models.first().map(|m| m.id.clone()))
        .unwrap_or_else(|| DEMO_MODEL.to_owned());
    let served = (kind != ProviderKind::Scripted).then(|| ModelsEndpoint {
        kind,
        base_url: config.base_url.clone().unwrap_or_default(),
        key: api_key.clone(),
        headers: config.headers.clone(),
    });
    Ok(Entry {
        served,
        info: ProviderInfo {
            id: config.id.clone(),
            kind: kind.as_str().to_owned(),
            base_url: config.base_url.clone(),
            has_api_key: api_key.is_some(),
            api_key_env: config.api_key_env.clone(),
            default_model,
            source: source.to_owned(),
            is_default: false,
        },
        models,
        provider,
    })
}

/// The thinking budgets of a provider's models, by model; `Err` when one is set on a kind
/// other than anthropic or is below the API's minimum.
fn thinking_budgets(
    kind: ProviderKind,
    models: &[ModelConfig],
) -> Result<BTreeMap<String, u32>, String> {
    let mut thinking = BTreeMap::new();
    for model in models {
        let Some(budget) = model.thinking_budget else {
            continue;
        };
        if kind != ProviderKind::Anthropic {
            return Err(format!(
                "model {:?}: thinking_budget is for kind \"anthropic\" only",
                model.id
            ));
        }
        if budget < MIN_THINKING_BUDGET {
            return Err(format!(
                "model {:?}: thinking_budget {budget} is below the API's minimum of \
                 {MIN_THINKING_BUDGET}",
                model.id
            ));
        }
        thinking.insert(model.id.clone(), budget);
    }
    Ok(thinking)
}

/// An HTTP provider of wire format `format`, with the config's URL, key, headers,
/// timeouts and retries.
fn http_provider<F: WireFormat>(
    config: &ProviderConfig,
    api_key: Option<Secret>,
    format: F,
    metrics: &Metrics,
) -> Result<Arc<dyn Provider>, ConfigError> {
    let invalid = |msg: String| ConfigError::Invalid(format!("provider {:?}: {msg}", config.id));
    let kind = config.kind.map_or("http", ProviderKind::as_str);
    let base_url = config
        .base_url
        .clone()
        .ok_or_else(|| invalid(format!("kind {kind:?} needs base_url")))?;
    if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
        return Err(invalid(format!(
            "base_url {base_url:?} is not an http(s) URL"
        )));
    }
    let idle_timeout = Duration::from_secs(config.idle_timeout_secs.unwrap_or(120));
    let connect_timeout = Duration::from_secs(config.connect_timeout_secs.unwrap_or(10));
    let client = super::http::client(connect_timeout, idle_timeout).map_err(invalid)?;
    let defaults = RetryPolicy::default();
    Ok(Arc::new(HttpProvider {
        id: config.id.clone(),
        base_url,
        api_key,
        headers: config.headers.clone(),
        client,
        idle_timeout,
        retry: RetryPolicy {
            max_retries: config.max_retries.unwrap_or(defaults.max_retries),
            base_delay: config
                .retry_base_ms
                .map_or(defaults.base_delay, Duration::from_millis),
        },
        key_hint: key_hint(config),
        format,
        metrics: metrics.clone(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn demo_is_the_default_without_keys() {
        let registry =
            ProviderRegistry::from_config(&ConfigFile::default(), env_of(&[]), &Metrics::default())
                .unwrap();
        assert_eq!(registry.default_provider(), "demo");
        assert_eq!(registry.default_model_for("demo").as_deref(), Some("echo"));
        let ids: Vec<_> = registry
            .list_providers()
            .into_iter()
            .map(|p| p.id)
            .collect();
        assert_eq!(ids, ["demo"]);
    }

    #[test]
    fn keys_switch_presets_on_and_the_first_is_default() {
        let registry = ProviderRegistry::from_config(
            &ConfigFile::default(),
            env_of(&[("DEEPSEEK_API_KEY", "sk-ds"), ("GROQ_API_KEY", "gsk")]),
            &Metrics::default(),
        )
        .unwrap();
        assert_eq!(registry.default_provider(), "deepseek");
        assert_eq!(
            registry.default_model_for("deepseek").as_deref(),
            Some("deepseek-chat")
        );
        let listed = registry.list_providers();
        let deepseek = listed.iter().find(|p| p.id == "deepseek").unwrap();
        assert!(deepseek.has_api_key && deepseek.is_default);
        assert_eq!(deepseek.api_key_env.as_deref(), Some("DEEPSEEK_API_KEY"));
        let printed = format!("{registry:?} {listed:?}");
        assert!(
            !printed.contains("sk-ds") && !printed.contains("gsk\""),
            "{printed}"
        );
    }

    #[test]
    fn config_overrides_presets_and_sets_defaults() {
        let config = ConfigFile::parse(
            r#"
[defaults]
provider = "openai"
model = "gpt-4o"
[[providers]]
id = "openai"
kind = "openai"
base_url = "http://127.0.0.1:9/v1"
models = [{ id = "gpt-4o", context_window = 1000 }]
"#,
        )
        .unwrap();
        let registry = ProviderRegistry::from_config(
            &config,
            env_of(&[("OPENAI_API_KEY", "k")]),
            &Metrics::default(),
        )
        .unwrap();
        let openai = registry
            .list_providers()
            .into_iter()
            .find(|p| p.id == "openai")
            .unwrap();
        assert_eq!(openai.source, "config");
        assert!(!openai.has_api_key, "the config entry names no key");
        assert_eq!(
            registry.default_model_for("openai").as_deref(),
            Some("gpt-4o")
        );
        let resolved = registry.resolve("openai", "gpt-4o").unwrap();
        assert_eq!(resolved.model.context_window, 1000);
        assert_eq!(
            resolved.model.max_output_tokens, 16_384,
            "rest from the table"
        );
        let other = registry.resolve("openai", "some-new-model").unwrap();
        assert_eq!(
            other.model.context_window,
            DEFAULT_CAPABILITIES.context_window
        );
        assert!(registry.resolve("nope", "x").is_none());
    }

    #[test]
    fn documents_go_only_through_the_vendors_own_api_unless_configured() {
        let config = ConfigFile::parse(
            r#"
[[providers]]
id = "oa"
kind = "openai"
base_url = "http://127.0.0.1:9/v1"
models = [{ id = "local", documents = true }]
[[providers]]
id = "an"
kind = "anthropic"
base_url = "http://127.0.0.1:9"
models = [{ id = "claude-off", documents = false }]
[[providers]]
id = "ge"
kind = "gemini"
base_url = "http://127.0.0.1:9"
default_model = "gemini-2.5-pro"
"#,
        )
        .unwrap();
        let registry =
            ProviderRegistry::from_config(&config, env_of(&[]), &Metrics::default()).unwrap();
        let cases = [
            ("oa", "gpt-4o", true),
            ("oa", "gpt-4.1-mini", true),
            ("oa", "o3", true),
            ("oa", "gpt-3.5-turbo", false),
            ("oa", "claude-sonnet-4-5", false),
            ("oa", "gemini-2.5-pro", false),
            ("oa", "my-finetune", false),
            ("oa", "local", true),
            ("an", "claude-sonnet-4-5", true),
            ("an", "claude-off", false),
            ("an", "gpt-4o", false),
            ("ge", "gemini-2.5-pro", true),
            ("ge", "claude-sonnet-4-5", false),
        ];
        for (provider, model, documents) in cases {
            let resolved = registry.resolve(provider, model).unwrap();
            assert_eq!(resolved.model.documents, documents, "{provider}/{model}");
        }
        let listed = registry.list_models(Some("oa")).unwrap();
        assert!(listed.iter().any(|m| m.id == "local" && m.documents));
    }

    #[test]
    fn presets_by_name_and_local_hosts() {
        let config = ConfigFile::parse(
            "[[providers]]\nid = \"work\"\npreset = \"deepseek\"\napi_key_env = \"WORK_KEY\"\nmax_retries = 1\n",
        )
        .unwrap();
        let registry = ProviderRegistry::from_config(
            &config,
            env_of(&[("OLLAMA_HOST", "gpu-box:11434"), ("WORK_KEY", "k")]),
            &Metrics::default(),
        )
        .unwrap();
        let listed = registry.list_providers();
        let ollama = listed.iter().find(|p| p.id == "ollama").unwrap();
        assert_eq!(ollama.kind, "openai");
        assert_eq!(ollama.base_url.as_deref(), Some("http://gpu-box:11434/v1"));
        assert!(!ollama.has_api_key);
        assert_eq!(ollama.source, "preset");
        assert_eq!(
            registry.default_provider(),
            "ollama",
            "a local server is a preset too"
        );
        let work = listed.iter().find(|p| p.id == "work").unwrap();
        assert_eq!(
            (work.kind.as_str(), work.default_model.as_str()),
            ("openai", "deepseek-chat")
        );
        assert_eq!(
            work.base_url.as_deref(),
            Some("https://api.deepseek.com/v1")
        );
        assert!(work.has_api_key);
        assert_eq!(
            key_hint(&with_preset(config.providers[0].clone()).unwrap()),
            "the API key in $WORK_KEY"
        );
        // The deepseek preset sends reasoning back; a config entry may turn it off.
        let body_of = |config: &str| {
            let config = ConfigFile::parse(config).unwrap();
            let registry =
                ProviderRegistry::from_config(&config, env_of(&[]), &Metrics::default()).unwrap();
            let request = ProviderRequest {
                model: "deepseek-reasoner".into(),
                system: None,
                messages: vec![
                    ChatMessage::User {
                        content: "go".into(),
                        images: vec![],
                        documents: Vec::new(),
                    },
                    ChatMessage::Assistant {
                        content: String::new(),
                        tool_calls: vec![super::super::ToolCallRequest {
                            id: "c".into(),
                            name: "bash".into(),
                            arguments: "{}".into(),
                            signature: None,
                        }],
                        reasoning: vec![],
                        order: Vec::new(),
                    },
                ],
                tools: vec![],
                max_output_tokens: None,
                temperature: None,
                options: Default::default(),
            };
            let resolved = registry.resolve("ds", "deepseek-reasoner").unwrap();
            resolved.provider.request_body(&request)["messages"][1].clone()
        };
        let preset = "[[providers]]\nid = \"ds\"\npreset = \"deepseek\"\n";
        assert_eq!(body_of(preset)["reasoning_content"], "");
        let off = format!("{preset}replay_reasoning = false\n");
        assert!(body_of(&off).get("reasoning_content").is_none());

        let gemini = ProviderRegistry::from_config(
            &ConfigFile::default(),
            env_of(&[("GOOGLE_API_KEY", "g")]),
            &Metrics::default(),
        );
        assert!(gemini.unwrap().now().entry("gemini").is_some());
    }

    #[test]
    fn invalid_configs_say_what_is_wrong() {
        let cases = [
            ("[defaults]\nprovider = \"ghost\"\n", "ghost"),
            ("[[providers]]\nid = \"a\"\nkind = \"openai\"\n", "base_url"),
            (
                "[[providers]]\nid = \"a\"\npreset = \"nope\"\n",
                "unknown preset",
            ),
            ("[[providers]]\nid = \"a\"\n", "needs kind"),
            (
                "[[providers]]\nid = \"a\"\nkind = \"scripted\"\nscript = \"/nonexistent.toml\"\n",
                "cannot read script",
            ),
            (
                "[[providers]]\nid = \"a\"\nkind = \"openai\"\nbase_url = \"http://h\"\nmodels = [{ id = \"m\", thinking_budget = 2048 }]\n",
                "model \"m\": thinking_budget is for kind \"anthropic\" only",
            ),
            (
                "[[providers]]\nid = \"a\"\nkind = \"anthropic\"\nbase_url = \"http://h\"\nmodels = [{ id = \"m\", thinking_budget = 1000 }]\n",
                "thinking_budget 1000 is below the API's minimum of 1024",
            ),
            (
                "[[providers]]\nid = \"a\"\nkind = \"gemini\"\nbase_url = \"http://h\"\ndefault_model = \"m\"\nreplay_reasoning = true\n",
                "replay_reasoning is for kind \"openai\" only",
            ),
        ];
        for (text, needle) in cases {
            let config = ConfigFile::parse(text).unwrap();
            let err = ProviderRegistry::from_config(&config, env_of(&[]), &Metrics::default())
                .unwrap_err()
                .to_string();
            assert!(err.contains(needle), "{text}: {err}");
        }
    }
}
