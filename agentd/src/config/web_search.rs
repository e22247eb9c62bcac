//! `[web_search]`: the backend of the `web_search` tool (checked by
//! `tools::builtin::web_search::validate`, used there).

use serde::Deserialize;

/// The search services the daemon speaks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// A SearXNG instance (`GET /search?format=json`); its JSON output must be enabled.
    Searxng,
    /// The Brave Search API (`GET /res/v1/web/search`, key in `X-Subscription-Token`).
    Brave,
    /// Tavily (`POST /search`, key as a bearer token).
    Tavily,
}

impl Backend {
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Searxng => "searxng",
            Backend::Brave => "brave",
            Backend::Tavily => "tavily",
        }
    }

    pub fn default_base_url(self) -> Option<&'static str> {
        match self {
            Backend::Searxng => None,
            Backend::Brave => Some("https://api.search.brave.com"),
            Backend::Tavily => Some("https://api.tavily.com"),
        }
    }

    /// The variable the key is read from when the config names none.
    pub fn default_key_env(self) -> Option<&'static str> {
        match self {
            Backend::Searxng => None,
            Backend::Brave => Some("BRAVE_API_KEY"),
            Backend::Tavily => Some("TAVILY_API_KEY"),
        }
    }
}

/// The `[web_search]` section.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebSearchConfig {
    pub backend: Backend,
    /// The service's address (required for SearXNG; the public API for the others).
    #[serde(default)]
    pub base_url: Option<String>,
    /// The variable (or systemd credential) holding the key (default `BRAVE_API_KEY`,
    /// `TAVILY_API_KEY`; SearXNG needs none, but sends one as a bearer token if named).
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// One search, in seconds (default 20).
    #[serde(default)]
    pub timeout_secs: Option<u64>,
}

impl WebSearchConfig {
    /// The variable the key comes from, if the backend takes one.
    pub fn key_variable(&self) -> Option<String> {
        self.api_key_env
            .clone()
            .or_else(|| self.backend.default_key_env().map(str::to_owned))
    }
}
