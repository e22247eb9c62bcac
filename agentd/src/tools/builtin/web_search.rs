//! `web_search`: a web search through the backend the config names (`[web_search]`):
//! a SearXNG instance, the Brave Search API or Tavily. Network level: the policy checks the
//! backend's host like any fetch. Without a backend the tool is not offered, and a call
//! anyway says how to configure one.

use std::time::Duration;

use agent_proto::PermissionLevel;
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::args::TypedTool;
use crate::config::{WebSearchBackend as Backend, WebSearchConfig};
use crate::tools::{Access, ToolContext, ToolOutput};

pub const NAME: &str = "web_search";
/// Results when the call does not say.
const DEFAULT_LIMIT: u64 = 8;
const MAX_LIMIT: u64 = 20;
/// Characters of one result's snippet the model gets.
const MAX_SNIPPET: usize = 500;
const MAX_QUERY: usize = 400;
const MAX_BODY: usize = 2 * 1024 * 1024;

/// Checks what can be checked at load; `Err` names the key.
pub fn validate(config: &WebSearchConfig) -> Result<(), String> {
    let base = config
        .base_url
        .as_deref()
        .or(config.backend.default_base_url())
        .ok_or_else(|| {
            format!(
                "web_search.base_url is required for backend {:?} (the address of the instance)",
                config.backend.as_str()
            )
        })?;
    let url = reqwest::Url::parse(base)
        .map_err(|e| format!("web_search.base_url {base:?} is not a URL: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(format!(
            "web_search.base_url {base:?} must be an http(s) URL with a host"
        ));
    }
    if config.timeout_secs == Some(0) || config.timeout_secs.is_some_and(|t| t > 300) {
        return Err("web_search.timeout_secs must be between 1 and 300".into());
    }
    Ok(())
}

/// A configured backend, its key resolved.
#[derive(Clone)]
pub struct SearchBackend {
    backend: Backend,
    base: reqwest::Url,
    key: Option<String>,
    key_variable: Option<String>,
    timeout: Duration,
}

impl std::fmt::Debug for SearchBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SearchBackend")
            .field("backend", &self.backend)
            .field("base", &self.base.as_str())
            .field("key", &self.key.as_ref().map(|_| "***"))
            .finish()
    }
}

impl SearchBackend {
    /// The backend of a validated config, its key looked up with `lookup` (credentials,
    /// then the environment).
    pub fn new(
        config: &WebSearchConfig,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<SearchBackend, String> {
        validate(config)?;
        let base = config
            .base_url
            .as_deref()
            .or(config.backend.default_base_url())
            .unwrap_or_default();
        let base = reqwest::Url::parse(base).map_err(|e| e.to_string())?;
        let key_variable = config.key_variable();
        let key = key_variable
            .as_deref()
            .and_then(&lookup)
            .filter(|k| !k.is_empty());
        Ok(SearchBackend {
            backend: config.backend,
            base,
            key,
            key_variable,
            timeout: Duration::from_secs(config.timeout_secs.unwrap_or(20)),
        })
    }

    /// What network grants key this backend by: its host, with the port when it has one.
    fn host_key(&self) -> String {
        super::web::host_key(&self.base)
    }

    /// `base_url` joined with an API path (keeping any path prefix the base has) and a
    /// query string.
    fn endpoint(&self, path: &str, query: &[(&str, &str)]) -> reqwest::Url {
        let mut url = self.base.clone();
        let prefix = url.path().trim_end_matches('/').to_owned();
        url.set_path(&format!("{prefix}{path}"));
        url.set_query(None);
        if !query.is_empty() {
            url.query_pairs_mut().extend_pairs(query);
        }
        url
    }

    fn request(&self, http: &reqwest::Client, query: &str, limit: u64) -> reqwest::RequestBuilder {
        let count = limit.to_string();
        let builder = match self.backend {
            Backend::Searxng => {
                http.get(self.endpoint("/search", &[("q", query), ("format", "json")]))
            }
            Backend::Brave => http
                .get(self.endpoint(
                    "/res/v1/web/search",
                    &[("q", query), ("count", count.as_str())],
                ))
                .header("X-Subscription-Token", self.key.clone().unwrap_or_default()),
            Backend::Tavily => http
                .post(self.endpoint("/search", &[]))
                .json(&json!({"query": query, "max_results": limit})),
        };
        let builder = builder
            .header(reqwest::header::ACCEPT, "application/json")
            .timeout(self.timeout);
        match (&self.key, self.backend) {
            (Some(key), Backend::Tavily | Backend::Searxng) => builder.bearer_auth(key),
            _ => builder,
        }
    }

    /// One search: the results, or an error naming the backend.
    async fn search(
        &self,
        http: &reqwest::Client,
        query: &str,
        limit: u64,
    ) -> Result<Vec<SearchResult>, String> {
        let name = self.backend.as_str();
        if self.key.is_none() && self.backend != Backend::Searxng {
            return Err(format!(
                "web search ({name}) has no API key: set {} in the daemon's environment (or as a systemd credential) and restart it",
                self.key_variable.as_deref().unwrap_or("its key variable")
            ));
        }
        let response = self
            .request(http, query, limit)
            .send()
            .await
            .map_err(|e| format!("web search ({name}) failed: {e}"))?;
        let status = response.status();
        let (body, _) = super::web::read_body(response, MAX_BODY)
            .await
            .map_err(|e| format!("web search ({name}) failed reading the answer: {e}"))?;
        if !status.is_success() {
            let text: String = String::from_utf8_lossy(&body).chars().take(300).collect();
            return Err(format!(
                "web search ({name}) answered HTTP {status}: {}",
                text.trim()
            ));
        }
        let value: Value = serde_json::from_slice(&body)
            .map_err(|e| format!("web search ({name}) answered something that is not JSON: {e}"))?;
        let mut results = parse_results(self.backend, &value)
            .ok_or_else(|| format!("web search ({name}) answered JSON without results"))?;
        results.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
        Ok(results)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct SearchResult {
    title: String,
    url: String,
    snippet: String,
}

/// The results in a backend's answer: `None` when it has no result list at all.
fn parse_results(backend: Backend, value: &Value) -> Option<Vec<SearchResult>> {
    let (list, snippet_key) = match backend {
        Backend::Searxng | Backend::Tavily => (value.get("results")?, "content"),
        Backend::Brave => match value.get("web") {
            Some(web) => (web.get("results")?, "description"),
            // A query with no web results answers without the `web` section.
            None if value.get("type").is_some() => return Some(Vec::new()),
            None => return None,
        },
    };
    let text = |item: &Value, key: &str| {
        item.get(key)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .trim()
            .to_owned()
    };
    Some(
        list.as_array()?
            .iter()
            .map(|item| SearchResult {
                title: text(item, "title"),
                url: text(item, "url"),
                snippet: strip_tags(&text(item, snippet_key)),
            })
            .filter(|r| !r.url.is_empty())
            .collect(),
    )
}

/// Brave marks matches with `<strong>`; the model gets plain text.
fn strip_tags(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_tag = false;
    for c in text.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            _ if !in_tag => out.push(c),
            _ => {}
        }
    }
    out
}

/// The results as the model reads them.
fn format_results(query: &str, results: &[SearchResult]) -> String {
    if results.is_empty() {
        return format!("no results for {query:?}");
    }
    let mut out = format!("{} results for {query:?}:\n", results.len());
    for (i, r) in results.iter().enumerate() {
        let mut snippet: String = r.snippet.chars().take(MAX_SNIPPET).collect();
        if r.snippet.chars().count() > MAX_SNIPPET {
            snippet.push('…');
        }
        out.push_str(&format!("\n{}. {}\n   {}\n", i + 1, r.title, r.url));
        if !snippet.is_empty() {
            out.push_str(&format!("   {snippet}\n"));
        }
    }
    out
}

/// The tool; without a backend it is not offered.
#[derive(Debug)]
pub struct WebSearch {
    backend: Option<SearchBackend>,
}

impl WebSearch {
    pub fn new(backend: Option<SearchBackend>) -> WebSearch {
        WebSearch { backend }
    }

    fn not_configured() -> String {
        "web search is not configured: add a [web_search] section to the daemon's config (backend = \"searxng\", \"brave\" or \"tavily\") and restart it".into()
    }
}

/// `web_search`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WebSearchArgs {
    #[schemars(length(min = 1, max = MAX_QUERY))]
    query: String,
    #[schemars(range(min = 1, max = MAX_LIMIT))]
    limit: Option<u64>,
}

/// The query (trimmed) and the number of results, checked. `Err` is the result text for
/// the model.
fn query_and_limit(args: &WebSearchArgs) -> Result<(String, u64), String> {
    let query = args.query.trim();
    if query.is_empty() {
        return Err("query is required".into());
    }
    if query.chars().count() > MAX_QUERY {
        return Err(format!("query has more than {MAX_QUERY} characters"));
    }
    let limit = args.limit.unwrap_or(DEFAULT_LIMIT);
    if limit == 0 || limit > MAX_LIMIT {
        return Err(format!("limit must be between 1 and {MAX_LIMIT}"));
    }
    Ok((query.to_owned(), limit))
}

impl TypedTool for WebSearch {
    type Args = WebSearchArgs;

    fn name(&self) -> &'static str {
        NAME
    }

    fn description(&self) -> &'static str {
        "Search the web. Returns up to `limit` results (default 8), each with its title, URL \
         and a snippet; read a page with web_fetch."
    }

    fn level(&self) -> PermissionLevel {
        PermissionLevel::Network
    }

    fn available(&self) -> bool {
        self.backend.is_some()
    }

    fn access(&self, args: &WebSearchArgs, _ctx: &ToolContext) -> Result<Access, String> {
        query_and_limit(args)?;
        let backend = self.backend.as_ref().ok_or_else(Self::not_configured)?;
        Ok(Access::Host(backend.host_key()))
    }

    fn run<'a>(&'a self, args: WebSearchArgs, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let Some(backend) = &self.backend else {
                return ToolOutput::error(Self::not_configured());
            };
            let (query, limit) = match query_and_limit(&args) {
                Ok(parsed) => parsed,
                Err(e) => return ToolOutput::error(e),
            };
            tokio::select! {
                found = backend.search(&ctx.http, &query, limit) => match found {
                    Ok(results) => ToolOutput::ok(format_results(&query, &results)),
                    Err(e) => ToolOutput::error(e),
                },
                _ = ctx.cancel.cancelled() => ToolOutput::error("cancelled"),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(backend: Backend, base: Option<&str>) -> WebSearchConfig {
        WebSearchConfig {
            backend,
            base_url: base.map(str::to_owned),
            api_key_env: None,
            timeout_secs: None,
        }
    }

    #[test]
    fn each_backends_answer_is_read() {
        let searxng = json!({"query": "rust", "results": [
            {"title": "Rust", "url": "https://www.rust-lang.org/", "content": "A language"},
            {"title": "No url", "content": "skipped"}
        ]});
        let brave = json!({"type": "search", "web": {"results": [
            {"title": "Rust", "url": "https://www.rust-lang.org/", "description": "A <strong>fast</strong> language"}
        ]}});
        let tavily = json!({"query": "rust", "results": [
            {"title": "Rust", "url": "https://www.rust-lang.org/", "content": "Tavily says", "score": 0.9}
        ]});
        let one = |snippet: &str| {
            vec![SearchResult {
                title: "Rust".into(),
                url: "https://www.rust-lang.org/".into(),
                snippet: snippet.into(),
            }]
        };
        assert_eq!(
            parse_results(Backend::Searxng, &searxng),
            Some(one("A language"))
        );
        assert_eq!(
            parse_results(Backend::Brave, &brave),
            Some(one("A fast language"))
        );
        assert_eq!(
            parse_results(Backend::Tavily, &tavily),
            Some(one("Tavily says"))
        );
        // Brave without web results; and answers that are no result list at all.
        assert_eq!(
            parse_results(Backend::Brave, &json!({"type": "search"})),
            Some(Vec::new())
        );
        assert_eq!(
            parse_results(Backend::Searxng, &json!({"error": "x"})),
            None
        );
        assert_eq!(parse_results(Backend::Brave, &json!({"error": "x"})), None);
    }

    #[test]
    fn results_as_the_model_reads_them() {
        let results = vec![SearchResult {
            title: "Rust".into(),
            url: "https://r.example/".into(),
            snippet: "x".repeat(600),
        }];
        let text = format_results("rust", &results);
        assert!(
            text.starts_with("1 results for \"rust\":\n\n1. Rust\n   https://r.example/\n   xxx")
        );
        assert!(text.trim_end().ends_with('…'));
        assert_eq!(format_results("q", &[]), "no results for \"q\"");
    }

    #[test]
    fn config_is_checked_at_load() {
        assert!(validate(&config(Backend::Brave, None)).is_ok());
        let e = validate(&config(Backend::Searxng, None)).unwrap_err();
        assert!(e.contains("web_search.base_url is required"), "{e}");
        let e = validate(&config(Backend::Searxng, Some("ftp://x"))).unwrap_err();
        assert!(e.contains("http(s)"), "{e}");
        let mut c = config(Backend::Tavily, None);
        c.timeout_secs = Some(0);
        assert!(validate(&c).is_err());
        assert_eq!(
            config(Backend::Tavily, None).key_variable().as_deref(),
            Some("TAVILY_API_KEY")
        );
        assert_eq!(
            config(Backend::Searxng, Some("http://s")).key_variable(),
            None
        );
    }

    #[test]
    fn endpoints_keep_the_base_path_and_host_keys_the_port() {
        let backend = SearchBackend::new(
            &config(Backend::Searxng, Some("http://127.0.0.1:8888/sx/")),
            |_| None,
        )
        .unwrap();
        assert_eq!(
            backend.endpoint("/search", &[("q", "a b&c")]).as_str(),
            "http://127.0.0.1:8888/sx/search?q=a+b%26c"
        );
        assert_eq!(backend.host_key(), "127.0.0.1:8888");
        let brave = SearchBackend::new(&config(Backend::Brave, None), |k| {
            (k == "BRAVE_API_KEY").then(|| "k".to_owned())
        })
        .unwrap();
        assert_eq!(brave.host_key(), "api.search.brave.com");
        assert!(format!("{brave:?}").contains("***"));
    }

    #[test]
    fn arguments() {
        let parse_args = |args: Value| {
            let args: WebSearchArgs = crate::tools::builtin::args::parse(&args).unwrap();
            query_and_limit(&args)
        };
        assert_eq!(
            parse_args(json!({"query": " rust "})),
            Ok(("rust".into(), DEFAULT_LIMIT))
        );
        assert!(parse_args(json!({"query": "x", "limit": 0})).is_err());
        assert!(parse_args(json!({"query": "x", "limit": 21})).is_err());
        assert!(parse_args(json!({"query": "  "})).is_err());
    }
}
