//! `web_fetch`: GET an http(s) URL and return its text (HTML turned into readable text),
//! at most 5 MiB, within 30 s for the whole chain of redirects.
//!
//! Redirects are followed here, not by the HTTP client (which follows none): each hop to
//! another host is checked by the call's permission policy like a new request, so a grant
//! for one host never fetches another. A hop the policy would ask about (or denies) ends
//! the call with a result naming where the redirect wanted to go.

use std::time::Duration;

use agent_proto::PermissionLevel;
use futures::StreamExt;
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::Deserialize;

use super::args::TypedTool;
use crate::tools::permission::Decision;
use crate::tools::{Access, ToolContext, ToolOutput};

const MAX_BODY: usize = 5 * 1024 * 1024;
/// The whole fetch, every redirect included.
const MAX_TIME: Duration = Duration::from_secs(30);
/// Redirects followed in one fetch.
const MAX_REDIRECTS: usize = 10;

/// The HTTP client of the tools: no redirects followed (`web_fetch` follows them itself,
/// checking each hop), connect within 10 s, each request within 30 s.
pub fn http_client() -> reqwest::Result<reqwest::Client> {
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .timeout(MAX_TIME)
        .redirect(reqwest::redirect::Policy::none())
        .build()
}

#[derive(Debug)]
pub(super) struct WebFetch;

/// `web_fetch`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct WebFetchArgs {
    /// The http(s) URL.
    url: String,
}

fn parse_url(raw: &str) -> Result<reqwest::Url, String> {
    let url = reqwest::Url::parse(raw).map_err(|e| format!("invalid URL {raw:?}: {e}"))?;
    check_url(&url)?;
    Ok(url)
}

fn check_url(url: &reqwest::Url) -> Result<(), String> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "only http and https URLs can be fetched, not {:?}",
            url.scheme()
        ));
    }
    if url.host_str().is_none() {
        return Err(format!("the URL {url} has no host"));
    }
    Ok(())
}

/// What the policy's network grants are keyed by: the host, with the port when the URL
/// names one (`example.com`, `127.0.0.1:8080`): two ports are two hosts.
pub(super) fn host_key(url: &reqwest::Url) -> String {
    let host = url.host_str().unwrap_or_default();
    match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    }
}

impl TypedTool for WebFetch {
    type Args = WebFetchArgs;

    fn name(&self) -> &'static str {
        "web_fetch"
    }

    fn description(&self) -> &'static str {
        "Fetch a web page or text document over http(s) and return its text (HTML is turned \
         into readable text). At most 5 MiB, 30 s."
    }

    fn level(&self) -> PermissionLevel {
        PermissionLevel::Network
    }

    fn access(&self, args: &WebFetchArgs, _ctx: &ToolContext) -> Result<Access, String> {
        Ok(Access::Host(host_key(&parse_url(&args.url)?)))
    }

    fn run<'a>(&'a self, args: WebFetchArgs, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let url = match parse_url(&args.url) {
                Ok(url) => url,
                Err(e) => return ToolOutput::error(e),
            };
            tokio::select! {
                out = fetch(ctx, url) => out,
                _ = ctx.cancel.cancelled() => ToolOutput::error("cancelled"),
            }
        })
    }
}

/// The whole fetch, redirects included, within [`MAX_TIME`].
async fn fetch(ctx: &ToolContext, url: reqwest::Url) -> ToolOutput {
    match tokio::time::timeout(MAX_TIME, follow(ctx, url.clone())).await {
        Ok(out) => out,
        Err(_) => ToolOutput::error(format!(
            "fetching {url} took over {} s (redirects included); gave up",
            MAX_TIME.as_secs()
        )),
    }
}

/// Requests `first`, then each redirect the policy allows, and reads the last answer.
async fn follow(ctx: &ToolContext, first: reqwest::Url) -> ToolOutput {
    let approved_host = host_key(&first);
    let mut url = first;
    let mut hops = 0;
    loop {
        let response = match ctx.http.get(url.clone()).send().await {
            Ok(r) => r,
            Err(e) => return ToolOutput::error(format!("cannot fetch {url}: {e}")),
        };
        let status = response.status();
        let location = response
            .headers()
            .get(reqwest::header::LOCATION)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
        let Some(location) = location.filter(|_| status.is_redirection()) else {
            return read(url, response).await;
        };
        let next = match url.join(&location) {
            Ok(next) => next,
            Err(e) => {
                return ToolOutput::error(format!(
                    "{url} redirected (HTTP {status}) to {location:?}, which is not a valid URL: {e}"
                ));
            }
        };
        let redirected = format!("{url} redirected (HTTP {status}) to {next}");
        if let Err(e) = check_url(&next) {
            return ToolOutput::error(format!("{redirected}, which was not followed: {e}"));
        }
        hops += 1;
        if hops > MAX_REDIRECTS {
            return ToolOutput::error(format!(
                "{redirected}: over {MAX_REDIRECTS} redirects, so it was not followed"
            ));
        }
        if let Err(why) = may_follow(ctx, &approved_host, &next) {
            return ToolOutput::error(format!("{redirected}, which was not followed: {why}"));
        }
        url = next;
    }
}

/// Whether the call may follow a redirect to `next`: the host the call was approved for is
/// covered by that approval; any other host is checked by the policy like a new request.
/// `Err` says why not, for the model.
fn may_follow(ctx: &ToolContext, approved_host: &str, next: &reqwest::Url) -> Result<(), String> {
    let host = host_key(next);
    if host == approved_host {
        return Ok(());
    }
    let asks = format!(
        "fetching from {host} needs a permission this call does not have; to fetch it, call \
         web_fetch with that URL (the user will be asked for {host})"
    );
    match ctx
        .checked
        .policy
        .as_ref()
        .map(|p| p.decide(&Access::Host(host.clone())))
    {
        Some(Decision::Allow) => Ok(()),
        Some(Decision::Deny(reason)) => Err(format!("access to {host} is refused: {reason}")),
        Some(Decision::Ask(_)) | None => Err(asks),
    }
}

/// Reads an HTTP body, at most `cap` bytes: the bytes, and whether there were more (then
/// the rest is not read).
pub async fn read_body(
    response: reqwest::Response,
    cap: usize,
) -> reqwest::Result<(Vec<u8>, bool)> {
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let bytes = chunk?;
        let room = cap.saturating_sub(body.len());
        if bytes.len() > room {
            body.extend_from_slice(&bytes[..room]);
            return Ok((body, true));
        }
        body.extend_from_slice(&bytes);
    }
    Ok((body, false))
}

/// Reads a final answer: its text, or an error saying what came back.
async fn read(url: reqwest::Url, response: reqwest::Response) -> ToolOutput {
    let status = response.status();
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    let (body, cut) = match read_body(response, MAX_BODY).await {
        Ok(read) => read,
        Err(e) => return ToolOutput::error(format!("the download of {url} broke off: {e}")),
    };
    let text = String::from_utf8_lossy(&body);
    if !status.is_success() {
        let start: String = text.chars().take(2000).collect();
        return ToolOutput::error(format!("{url} answered HTTP {status}: {start}"));
    }
    let textual = content_type.is_empty()
        || content_type.starts_with("text/")
        || content_type.contains("json")
        || content_type.contains("xml")
        || content_type.contains("javascript");
    if !textual {
        return ToolOutput::error(format!(
            "{url} is {content_type}, not text; web_fetch returns text only"
        ));
    }
    let mut out = if content_type.contains("html") {
        html_to_text(&text)
    } else {
        text.into_owned()
    };
    if cut {
        out.push_str("\n[cut at 5 MiB]");
    }
    ToolOutput::ok(out)
}

/// Readable text of an HTML page: scripts, styles and the head dropped, block elements on
/// their own lines, tags removed, common entities decoded, blank lines collapsed.
pub(super) fn html_to_text(html: &str) -> String {
    let mut out = String::with_capacity(html.len() / 2);
    let mut rest = html;
    let mut skipping: Option<&str> = None;
    while let Some(start) = rest.find('<') {
        if skipping.is_none() {
            out.push_str(&decode_entities(&rest[..start]));
        }
        let after = &rest[start + 1..];
        if let Some(body) = after.strip_prefix("!--") {
            rest = body.find("-->").map_or("", |end| &body[end + 3..]);
            continue;
        }
        let Some(end) = after.find('>') else {
            rest = "";
            break;
        };
        let tag = after[..end].trim();
        rest = &after[end + 1..];
        let closing = tag.starts_with('/');
        let name: String = tag
            .trim_start_matches('/')
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect::<String>()
            .to_ascii_lowercase();
        if let Some(skip) = skipping {
            if closing && name == skip {
                skipping = None;
            }
            continue;
        }
        match name.as_str() {
            "script" | "style" | "head" | "noscript" | "svg" if !closing => {
                skipping = Some(match name.as_str() {
                    "script" => "script",
                    "style" => "style",
                    "head" => "head",
                    "noscript" => "noscript",
                    _ => "svg",
                });
            }
            // Line items start a line; their end does not add another.
            "br" | "li" | "tr" | "hr" if !closing => {
                out.push('\n');
                if name == "li" {
                    out.push_str("- ");
                }
            }
            "p" | "div" | "h1" | "h2" | "h3" | "h4" | "h5" | "h6" | "ul" | "ol" | "table"
            | "section" | "article" | "header" | "footer" | "pre" | "blockquote" | "title" => {
                out.push('\n');
            }
            "td" | "th" => out.push(' '),
            _ => {}
        }
    }
    if skipping.is_none() {
        out.push_str(&decode_entities(rest));
    }
    let mut text = String::with_capacity(out.len());
    let mut blank = 0;
    for line in out.lines() {
        let line = line.split_whitespace().collect::<Vec<_>>().join(" ");
        if line.is_empty() {
            blank += 1;
            if blank > 1 || text.is_empty() {
                continue;
            }
        } else {
            blank = 0;
        }
        text.push_str(&line);
        text.push('\n');
    }
    text.trim_end().to_owned()
}

fn decode_entities(text: &str) -> String {
    if !text.contains('&') {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        let Some(end) = tail[..tail.len().min(12)].find(';') else {
            out.push('&');
            rest = &tail[1..];
            continue;
        };
        let entity = &tail[1..end];
        let decoded = match entity {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" | "#39" => Some('\''),
            "nbsp" => Some(' '),
            _ => entity
                .strip_prefix("#x")
                .or_else(|| entity.strip_prefix("#X"))
                .and_then(|h| u32::from_str_radix(h, 16).ok())
                .or_else(|| entity.strip_prefix('#').and_then(|d| d.parse().ok()))
                .and_then(char::from_u32),
        };
        match decoded {
            Some(c) => {
                out.push(c);
                rest = &tail[end + 1..];
            }
            None => {
                out.push('&');
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tools::BuiltinTool;
    use crate::tools::builtin::testing::world;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[test]
    fn html_becomes_text() {
        let cases = [
            (
                "<html><head><title>T</title><style>p{}</style></head><body><h1>Title</h1><p>One &amp; two &lt;3</p><script>alert(1)</script><ul><li>a</li><li>b</li></ul></body></html>",
                "Title\n\nOne & two <3\n\n- a\n- b",
            ),
            (
                "plain &#65;&#x42; &unknown; & done",
                "plain AB &unknown; & done",
            ),
            ("<p>a</p>\n\n\n<p>b</p><!-- hidden <p>x</p> -->", "a\n\nb"),
        ];
        for (html, expected) in cases {
            assert_eq!(html_to_text(html), expected, "{html}");
        }
    }

    /// Serves one canned response per connection.
    async fn serve(response: &'static str) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf).await;
                let _ = s.write_all(response.as_bytes()).await;
            }
        });
        format!("http://{addr}/page")
    }

    #[tokio::test]
    async fn fetches_text_and_reports_errors() {
        let w = world();
        let html = serve("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 30\r\nConnection: close\r\n\r\n<p>Hello</p><script>x</script>").await;
        let out = BuiltinTool::run(&WebFetch, json!({"url": html}), &w.ctx).await;
        assert_eq!(out, ToolOutput::ok("Hello"));
        let missing =
            serve("HTTP/1.1 404 Not Found\r\nContent-Length: 4\r\nConnection: close\r\n\r\nnope")
                .await;
        let out = BuiltinTool::run(&WebFetch, json!({"url": missing}), &w.ctx).await;
        assert!(
            out.is_error && out.content.contains("HTTP 404") && out.content.contains("nope"),
            "{}",
            out.content
        );
        let binary = serve("HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nContent-Length: 1\r\nConnection: close\r\n\r\nx").await;
        let out = BuiltinTool::run(&WebFetch, json!({"url": binary}), &w.ctx).await;
        assert!(out.is_error && out.content.contains("image/png"));
        assert!(
            BuiltinTool::access(&WebFetch, &json!({"url": "file:///etc/passwd"}), &w.ctx).is_err()
        );
        assert_eq!(
            BuiltinTool::access(
                &WebFetch,
                &json!({"url": "https://example.com:8443/x"}),
                &w.ctx
            ),
            Ok(Access::Host("example.com:8443".into()))
        );
    }

    /// Serves `routes` (request path, response) and records the paths it was asked for.
    async fn serve_routes(
        routes: Vec<(&'static str, String)>,
    ) -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let hits = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = hits.clone();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                let mut buf = [0u8; 4096];
                let n = s.read(&mut buf).await.unwrap_or(0);
                let head = String::from_utf8_lossy(&buf[..n]).into_owned();
                let path = head.split(' ').nth(1).unwrap_or("").to_owned();
                seen.lock().unwrap().push(path.clone());
                let response = routes
                    .iter()
                    .find(|(p, _)| *p == path)
                    .map(|(_, r)| r.clone())
                    .unwrap_or_else(|| {
                        "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                            .into()
                    });
                let _ = s.write_all(response.as_bytes()).await;
            }
        });
        (format!("http://{addr}"), hits)
    }

    fn redirect(to: &str) -> String {
        format!(
            "HTTP/1.1 302 Found\r\nLocation: {to}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )
    }

    fn page(text: &str) -> String {
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
            text.len()
        )
    }

    #[tokio::test]
    async fn each_redirect_hop_is_checked_by_the_policy() {
        use crate::store::{Grant, GrantScope};
        use crate::tools::center::CallPolicy;
        use agent_proto::{PermissionRule, PermissionRules};
        use std::sync::Arc;

        let w = world();
        let (b, b_hits) = serve_routes(vec![("/page", page("from B"))]).await;
        let b_host = b.trim_start_matches("http://").to_owned();
        let (a, a_hits) = serve_routes(vec![
            ("/to-b", redirect(&format!("{b}/page"))),
            ("/self", redirect("/final")),
            ("/final", page("from A")),
            ("/loop", redirect("/loop")),
            ("/file", redirect("file:///etc/passwd")),
        ])
        .await;
        let policy = |network: PermissionRule, grants: Vec<&str>| {
            let rules = PermissionRules {
                network: Some(network),
                ..PermissionRules::default()
            };
            let grants = grants
                .into_iter()
                .map(|key| Grant {
                    scope: GrantScope::Session,
                    level: PermissionLevel::Network,
                    key: key.into(),
                })
                .collect();
            Some(Arc::new(CallPolicy::new(
                "web_fetch",
                rules,
                Vec::new(),
                grants,
            )))
        };
        let ask = PermissionRule::Ask;
        // (path on A, the call's policy, error?, expected text)
        let cases = vec![
            (
                "/to-b",
                None,
                true,
                "needs a permission this call does not have",
            ),
            (
                "/to-b",
                policy(ask, vec![]),
                true,
                "needs a permission this call does not have",
            ),
            (
                "/to-b",
                policy(PermissionRule::Deny, vec![]),
                true,
                "is refused",
            ),
            ("/self", policy(ask, vec![]), false, "from A"),
            ("/loop", policy(ask, vec![]), true, "over 10 redirects"),
            ("/file", policy(ask, vec![]), true, "only http and https"),
        ];
        for (path, policy, is_error, expected) in cases {
            let mut ctx = w.ctx.clone();
            ctx.checked.policy = policy;
            let out = BuiltinTool::run(&WebFetch, json!({"url": format!("{a}{path}")}), &ctx).await;
            assert_eq!(out.is_error, is_error, "{path}: {}", out.content);
            assert!(out.content.contains(expected), "{path}: {}", out.content);
        }
        assert!(
            b_hits.lock().unwrap().is_empty(),
            "B is never contacted without a grant"
        );
        // A stopped hop names where it wanted to go and the host to ask for.
        let out = BuiltinTool::run(&WebFetch, json!({"url": format!("{a}/to-b")}), &w.ctx).await;
        assert!(
            out.content.contains(&format!("{b}/page")),
            "{}",
            out.content
        );
        assert!(out.content.contains(&b_host), "{}", out.content);
        // With a grant for B's host (host:port), the hop is followed.
        let mut ctx = w.ctx.clone();
        ctx.checked.policy = policy(ask, vec![&b_host]);
        let out = BuiltinTool::run(&WebFetch, json!({"url": format!("{a}/to-b")}), &ctx).await;
        assert_eq!(out, ToolOutput::ok("from B"));
        assert_eq!(*b_hits.lock().unwrap(), ["/page"]);
        let a_hits = a_hits.lock().unwrap();
        assert_eq!(
            a_hits.iter().filter(|p| *p == "/loop").count(),
            11,
            "the first request and 10 redirects"
        );
    }
}
