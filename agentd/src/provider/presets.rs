//! Built-in knowledge: provider presets switched on by API keys in the environment, and a
//! table of well-known models' capabilities.

use crate::config::ProviderKind;

/// A well-known service: how to reach it and what switches it on.
#[derive(Debug, Clone, Copy)]
pub(super) struct Preset {
    pub id: &'static str,
    /// Wire format.
    pub kind: ProviderKind,
    /// The environment variables holding its key, in order; empty for local servers.
    pub key_envs: &'static [&'static str],
    /// For local servers: the variable naming the host (`127.0.0.1:11434` or a URL) whose
    /// presence switches the preset on.
    pub host_env: Option<&'static str>,
    pub base_url: &'static str,
    pub default_model: &'static str,
    pub models: &'static [&'static str],
    /// The API wants the model's reasoning back on tool-calling turns (`replay_reasoning`).
    pub replay_reasoning: bool,
}

impl Preset {
    /// The base URL, from `host_env` when it is set.
    pub(super) fn base_url_from(&self, host: Option<&str>) -> String {
        match host.map(str::trim).filter(|h| !h.is_empty()) {
            Some(h) if h.starts_with("http://") || h.starts_with("https://") => {
                format!("{}/v1", h.trim_end_matches('/').trim_end_matches("/v1"))
            }
            Some(h) => format!("http://{h}/v1"),
            None => self.base_url.to_owned(),
        }
    }
}

/// Looks a preset up by id.
pub(super) fn preset(id: &str) -> Option<&'static Preset> {
    PRESETS.iter().find(|p| p.id == id)
}

/// Every environment variable a preset reads an API key from (the bash tool and MCP
/// servers never get these: `tools::env`).
pub fn key_variables() -> impl Iterator<Item = &'static str> {
    PRESETS.iter().flat_map(|p| p.key_envs.iter().copied())
}

/// In priority order: the first one switched on becomes the default provider when the
/// config names none.
pub(super) const PRESETS: &[Preset] = &[
    Preset {
        id: "openai",
        kind: ProviderKind::Openai,
        key_envs: &["OPENAI_API_KEY"],
        host_env: None,
        base_url: "https://api.openai.com/v1",
        default_model: "gpt-4o-mini",
        models: &[
            "gpt-4o-mini",
            "gpt-4o",
            "gpt-4.1",
            "gpt-4.1-mini",
            "o4-mini",
        ],
        replay_reasoning: false,
    },
    Preset {
        id: "anthropic",
        kind: ProviderKind::Anthropic,
        key_envs: &["ANTHROPIC_API_KEY"],
        host_env: None,
        base_url: "https://api.anthropic.com",
        default_model: "claude-sonnet-4-5",
        models: &[
            "claude-sonnet-4-5",
            "claude-opus-4-1",
            "claude-3-5-haiku-latest",
        ],
        replay_reasoning: false,
    },
    Preset {
        id: "gemini",
        kind: ProviderKind::Gemini,
        key_envs: &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
        host_env: None,
        base_url: "https://generativelanguage.googleapis.com",
        default_model: "gemini-2.5-flash",
        models: &["gemini-2.5-flash", "gemini-2.5-pro"],
        replay_reasoning: false,
    },
    Preset {
        id: "deepseek",
        kind: ProviderKind::Openai,
        key_envs: &["DEEPSEEK_API_KEY"],
        host_env: None,
        base_url: "https://api.deepseek.com/v1",
        default_model: "deepseek-chat",
        models: &["deepseek-chat", "deepseek-reasoner"],
        replay_reasoning: true,
    },
    Preset {
        id: "openrouter",
        kind: ProviderKind::Openai,
        key_envs: &["OPENROUTER_API_KEY"],
        host_env: None,
        base_url: "https://openrouter.ai/api/v1",
        default_model: "openai/gpt-4o-mini",
        models: &["openai/gpt-4o-mini"],
        replay_reasoning: false,
    },
    Preset {
        id: "siliconflow",
        kind: ProviderKind::Openai,
        key_envs: &["SILICONFLOW_API_KEY"],
        host_env: None,
        base_url: "https://api.siliconflow.cn/v1",
        default_model: "Qwen/Qwen2.5-72B-Instruct",
        models: &["Qwen/Qwen2.5-72B-Instruct", "deepseek-ai/DeepSeek-V3"],
        replay_reasoning: false,
    },
    Preset {
        id: "groq",
        kind: ProviderKind::Openai,
        key_envs: &["GROQ_API_KEY"],
        host_env: None,
        base_url: "https://api.groq.com/openai/v1",
        default_model: "llama-3.3-70b-versatile",
        models: &["llama-3.3-70b-versatile"],
        replay_reasoning: false,
    },
    Preset {
        id: "mistral",
        kind: ProviderKind::Openai,
        key_envs: &["MISTRAL_API_KEY"],
        host_env: None,
        base_url: "https://api.mistral.ai/v1",
        default_model: "mistral-small-latest",
        models: &["mistral-small-latest", "mistral-large-latest"],
        replay_reasoning: false,
    },
    Preset {
        id: "xai",
        kind: ProviderKind::Openai,
        key_envs: &["XAI_API_KEY"],
        host_env: None,
        base_url: "https://api.x.ai/v1",
        default_model: "grok-3-mini",
        models: &["grok-3-mini", "grok-3"],
        replay_reasoning: false,
    },
    Preset {
        id: "dashscope",
        kind: ProviderKind::Openai,
        key_envs: &["DASHSCOPE_API_KEY"],
        host_env: None,
        base_url: "https://dashscope.aliyuncs.com/compatible-mode/v1",
        default_model: "qwen-plus",
        models: &["qwen-plus", "qwen-max", "qwen-turbo"],
        replay_reasoning: false,
    },
    Preset {
        id: "zhipu",
        kind: ProviderKind::Openai,
        key_envs: &["ZHIPU_API_KEY", "ZHIPUAI_API_KEY"],
        host_env: None,
        base_url: "https://open.bigmodel.cn/api/paas/v4",
        default_model: "glm-4-flash",
        models: &["glm-4-flash", "glm-4-plus"],
        replay_reasoning: false,
    },
    Preset {
        id: "volcengine",
        kind: ProviderKind::Openai,
        key_envs: &["ARK_API_KEY"],
        host_env: None,
        base_url: "https://ark.cn-beijing.volces.com/api/v3",
        default_model: "doubao-1-5-pro-32k-250115",
        models: &["doubao-1-5-pro-32k-250115"],
        replay_reasoning: false,
    },
    Preset {
        id: "ollama",
        kind: ProviderKind::Openai,
        key_envs: &[],
        host_env: Some("OLLAMA_HOST"),
        base_url: "http://127.0.0.1:11434/v1",
        default_model: "llama3.2",
        models: &["llama3.2", "qwen2.5"],
        replay_reasoning: false,
    },
    Preset {
        id: "lmstudio",
        kind: ProviderKind::Openai,
        key_envs: &[],
        host_env: Some("LMSTUDIO_HOST"),
        base_url: "http://127.0.0.1:1234/v1",
        default_model: "local-model",
        models: &["local-model"],
        replay_reasoning: false,
    },
];

/// Capabilities of a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Capabilities {
    pub context_window: u32,
    pub max_output_tokens: u32,
    pub tools: bool,
    pub vision: bool,
    pub reasoning: bool,
    /// The wire format in which the model takes PDF documents (its vendor's own API);
    /// through any other it is assumed not to.
    pub documents: Option<ProviderKind>,
}

/// What an unknown model is assumed to have: small enough to be safe for most.
pub(super) const DEFAULT_CAPABILITIES: Capabilities = Capabilities {
    context_window: 32_768,
    max_output_tokens: 4_096,
    tools: true,
    vision: false,
    reasoning: false,
    documents: None,
};

const fn caps(
    context_window: u32,
    max_output_tokens: u32,
    tools: bool,
    vision: bool,
    reasoning: bool,
) -> Capabilities {
    Capabilities {
        context_window,
        max_output_tokens,
        tools,
        vision,
        reasoning,
        documents: None,
    }
}

/// The same, for a model that takes PDF documents through its vendor's API (`kind`).
const fn with_documents(kind: ProviderKind, caps: Capabilities) -> Capabilities {
    Capabilities {
        documents: Some(kind),
        ..caps
    }
}

/// Well-known models, matched by the longest prefix of the model id (after any
/// `vendor/` part, as OpenRouter and SiliconFlow name them).
const KNOWN: &[(&str, Capabilities)] = &[
    (
        "gpt-4o",
        with_documents(
            ProviderKind::Openai,
            caps(128_000, 16_384, true, true, false),
        ),
    ),
    (
        "gpt-4.1",
        with_documents(
            ProviderKind::Openai,
            caps(1_047_576, 32_768, true, true, false),
        ),
    ),
    ("gpt-4-turbo", caps(128_000, 4_096, true, true, false)),
    ("gpt-3.5-turbo", caps(16_385, 4_096, true, false, false)),
    (
        "gpt-5",
        with_documents(
            ProviderKind::Openai,
            caps(400_000, 128_000, true, true, true),
        ),
    ),
    (
        "o1",
        with_documents(
            ProviderKind::Openai,
            caps(200_000, 100_000, true, true, true),
        ),
    ),
    (
        "o3",
        with_documents(
            ProviderKind::Openai,
            caps(200_000, 100_000, true, true, true),
        ),
    ),
    (
        "o4-mini",
        with_documents(
            ProviderKind::Openai,
            caps(200_000, 100_000, true, true, true),
        ),
    ),
    // Since V3.2 both names are one model (128K window): `deepseek-reasoner` is its thinking
    // mode, which calls tools too.
    ("deepseek-chat", caps(128_000, 8_192, true, false, false)),
    (
        "deepseek-reasoner",
        caps(128_000, 65_536, true, false, true),
    ),
    ("deepseek-v3", caps(65_536, 8_192, true, false, false)),
    ("deepseek-r1", caps(65_536, 32_768, false, false, true)),
    (
        "claude",
        with_documents(
            ProviderKind::Anthropic,
            caps(200_000, 8_192, true, true, false),
        ),
    ),
    (
        "gemini",
        with_documents(
            ProviderKind::Gemini,
            caps(1_048_576, 8_192, true, true, false),
        ),
    ),
    ("qwen", caps(32_768, 8_192, true, false, false)),
    ("qwq", caps(32_768, 16_384, false, false, true)),
    ("glm-4", caps(128_000, 4_096, true, false, false)),
    ("llama-3.3-70b", caps(131_072, 32_768, true, false, false)),
    ("mistral-large", caps(131_072, 8_192, true, false, false)),
    ("mistral-small", caps(32_768, 8_192, true, false, false)),
    ("grok-3", caps(131_072, 16_384, true, false, false)),
    ("doubao", caps(32_768, 4_096, true, false, false)),
];

/// Capabilities of a well-known model, if the table has it.
pub(super) fn known_model(model: &str) -> Option<Capabilities> {
    let name = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    KNOWN
        .iter()
        .filter(|(prefix, _)| name.starts_with(prefix))
        .max_by_key(|(prefix, _)| prefix.len())
        .map(|(_, caps)| *caps)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capability_lookup() {
        // (model, Some((context window, tools, vision)) or None when unknown)
        type Case = (&'static str, Option<(u32, bool, bool)>);
        let cases: &[Case] = &[
            ("gpt-4o-mini", Some((128_000, true, true))),
            ("openai/gpt-4o", Some((128_000, true, true))),
            ("deepseek-reasoner", Some((128_000, true, false))),
            ("deepseek-ai/DeepSeek-V3", Some((65_536, true, false))),
            ("Qwen/Qwen2.5-72B-Instruct", Some((32_768, true, false))),
            ("gpt-4.1-mini", Some((1_047_576, true, true))),
            ("my-own-finetune", None),
        ];
        for (model, expected) in cases {
            let got = known_model(model).map(|c| (c.context_window, c.tools, c.vision));
            assert_eq!(&got, expected, "{model}");
        }
    }

    #[test]
    fn local_hosts_become_base_urls() {
        let ollama = preset("ollama").unwrap();
        let cases = [
            (None, "http://127.0.0.1:11434/v1"),
            (Some("0.0.0.0:11434"), "http://0.0.0.0:11434/v1"),
            (Some("http://gpu-box:11434/"), "http://gpu-box:11434/v1"),
            (Some("https://h/v1"), "https://h/v1"),
            (Some(" "), "http://127.0.0.1:11434/v1"),
        ];
        for (host, expected) in cases {
            assert_eq!(ollama.base_url_from(host), expected, "{host:?}");
        }
    }

    #[test]
    fn preset_ids_are_unique_and_defaults_listed() {
        let mut ids = std::collections::HashSet::new();
        for p in PRESETS {
            assert!(ids.insert(p.id), "duplicate preset {}", p.id);
            assert!(p.models.contains(&p.default_model), "{}", p.id);
        }
    }
}
