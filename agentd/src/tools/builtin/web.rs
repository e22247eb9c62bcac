//! `web_fetch`: GET an http(s) URL and return its text (HTML turned into readable text),
//! at most 5 MiB, within 30 s.

use agent_proto::PermissionLevel;
use futures::StreamExt;
use futures::future::BoxFuture;
use serde_json::{Value, json};

use super::str_arg;
use crate::tools::{Access, BuiltinTool, ToolContext, ToolOutput};

const MAX_BODY: usize = 5 * 1024 * 1024;

#[derive(Debug)]
pub struct WebFetch;

fn parse_url(args: &Value) -> Result<reqwest::Url, String> {
    let raw = str_arg(args, "url").ok_or("url is required")?;
    let url = reqwest::Url::parse(raw).map_err(|e| format!("invalid URL {raw:?}: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "only http and https URLs can be fetched, not {:?}",
            url.scheme()
        ));
    }
    if url.host_str().is_none() {
        return Err(format!("the URL {raw:?} has no host"));
    }
    Ok(url)
}

impl BuiltinTool for WebFetch {
    fn name(&self) -> &'static str {
        "web_fetch"
    }

    fn description(&self) -> &'static str {
        "Fetch a web page or text document over http(s) and return its text (HTML is turned \
         into readable text). At most 5 MiB, 30 s."
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "url": {"type": "string", "description": "The http(s) URL."}
            },
            "required": ["url"],
            "additionalProperties": false
        })
    }

    fn level(&self) -> PermissionLevel {
        PermissionLevel::Network
    }

    fn access(&self, args: &Value, _ctx: &ToolContext) -> Result<Access, String> {
        let url = parse_url(args)?;
        let host = url.host_str().unwrap_or_default();
        Ok(Access::Host(match url.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_owned(),
        }))
    }

    fn run<'a>(&'a self, args: Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let url = match parse_url(&args) {
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

async fn fetch(ctx: &ToolContext, url: reqwest::Url) -> ToolOutput {
    let response = match ctx.http.get(url.clone()).send().await {
        Ok(r) => r,
        Err(e) => return ToolOutput::error(format!("cannot fetch {url}: {e}")),
    };
    let status = response.status();
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    let mut body = Vec::new();
    let mut cut = false;
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        match chunk {
            Ok(bytes) => {
                let room = MAX_BODY.saturating_sub(body.len());
                if bytes.len() > room {
                    body.extend_from_slice(&bytes[..room]);
                    cut = true;
                    break;
                }
                body.extend_from_slice(&bytes);
            }
            Err(e) => return ToolOutput::error(format!("the download of {url} broke off: {e}")),
        }
    }
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
pub fn html_to_text(html: &str) -> String {
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
    use super::*;
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
        let out = WebFetch.run(json!({"url": html}), &w.ctx).await;
        assert_eq!(out, ToolOutput::ok("Hello"));
        let missing =
            serve("HTTP/1.1 404 Not Found\r\nContent-Length: 4\r\nConnection: close\r\n\r\nnope")
                .await;
        let out = WebFetch.run(json!({"url": missing}), &w.ctx).await;
        assert!(
            out.is_error && out.content.contains("HTTP 404") && out.content.contains("nope"),
            "{}",
            out.content
        );
        let binary = serve("HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nContent-Length: 1\r\nConnection: close\r\n\r\nx").await;
        let out = WebFetch.run(json!({"url": binary}), &w.ctx).await;
        assert!(out.is_error && out.content.contains("image/png"));
        assert!(
            WebFetch
                .access(&json!({"url": "file:///etc/passwd"}), &w.ctx)
                .is_err()
        );
        assert_eq!(
            WebFetch.access(&json!({"url": "https://example.com:8443/x"}), &w.ctx),
            Ok(Access::Host("example.com:8443".into()))
        );
    }
}
