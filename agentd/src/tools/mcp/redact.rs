//! Credentials in MCP server URLs: `user:pass@` and query (or fragment) values whose key
//! looks like a secret (`token`, `key`, `secret`, `password`, `auth`, `sig`, ...) are
//! replaced by `***` wherever a URL is shown: `listMcpServers`, `lastError`,
//! `mcpServerStatus` events, tool errors and logs. Pure text in, text out, and the
//! daemon's log writer ([`MaskedLog`]), which masks every line: libraries log URLs
//! themselves (rmcp's transport worker logs reqwest errors, which quote the URL with its
//! query), so masking only our own messages would not be enough.

/// Substrings of a query key (lowercased) that make its value a secret.
const SECRET_KEYS: &[&str] = &[
    "token",
    "key",
    "secret",
    "pass",
    "pwd",
    "auth",
    "sig",
    "credential",
    "session",
    "cookie",
    "jwt",
    "bearer",
    "code",
    "private",
    "access",
];

const MASK: &str = "***";

/// The URL with its credentials masked. Text that is not a `scheme://` URL is returned
/// unchanged.
pub fn mask_url(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else {
        return url.to_owned();
    };
    let (scheme, rest) = url.split_at(scheme_end + 3);
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let authority = match authority.rfind('@') {
        Some(at) => format!("{MASK}@{}", &authority[at + 1..]),
        None => authority.to_owned(),
    };
    let (before_fragment, fragment) = match tail.find('#') {
        Some(i) => (&tail[..i], Some(&tail[i + 1..])),
        None => (tail, None),
    };
    let (path, query) = match before_fragment.find('?') {
        Some(i) => (&before_fragment[..i], Some(&before_fragment[i + 1..])),
        None => (before_fragment, None),
    };
    let mut out = format!("{scheme}{authority}{path}");
    if let Some(query) = query {
        out.push('?');
        out.push_str(&mask_params(query));
    }
    if let Some(fragment) = fragment {
        out.push('#');
        out.push_str(&mask_params(fragment));
    }
    out
}

/// `k=v&k2=v2` with the values of secret-looking keys masked.
fn mask_params(params: &str) -> String {
    params
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((key, _)) if is_secret_key(key) => format!("{key}={MASK}"),
            _ => pair.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("&")
}

fn is_secret_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    SECRET_KEYS.iter().any(|s| key.contains(s))
}

/// `text` with every URL in it masked (error messages quote URLs, e.g. reqwest's
/// "error sending request for url (...)"). A URL runs from its scheme to the next blank,
/// quote, bracket or `)`; trailing punctuation stays outside.
pub fn mask_urls_in(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        // The scheme: the letters, digits, '+', '-', '.' just before "://".
        let scheme_start = rest[..at]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
            .map_or(0, |i| i + 1);
        if scheme_start == at {
            // "://" without a scheme: not a URL.
            out.push_str(&rest[..at + 3]);
            rest = &rest[at + 3..];
            continue;
        }
        out.push_str(&rest[..scheme_start]);
        let url_and_more = &rest[scheme_start..];
        let mut end = url_and_more
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | ')' | '`'))
            .unwrap_or(url_and_more.len());
        while end > 0 && url_and_more[..end].ends_with(['.', ',', ';', ':']) {
            end -= 1;
        }
        out.push_str(&mask_url(&url_and_more[..end]));
        rest = &url_and_more[end..];
    }
    out.push_str(rest);
    out
}

/// The daemon's log writer: stderr, or the `--log-file` (appended), with the URLs of
/// every line masked.
#[derive(Debug, Clone, Default)]
pub struct MaskedLog {
    file: Option<std::sync::Arc<std::sync::Mutex<std::fs::File>>>,
}

impl MaskedLog {
    /// Writes to `file` instead of stderr.
    pub fn to_file(file: std::fs::File) -> MaskedLog {
        MaskedLog {
            file: Some(std::sync::Arc::new(std::sync::Mutex::new(file))),
        }
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for MaskedLog {
    type Writer = MaskedLog;

    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

impl std::io::Write for MaskedLog {
    /// The log formatter writes one whole event per call, so a URL is never cut in two.
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let masked;
        let out = if buf.windows(3).any(|w| w == b"://") {
            masked = mask_urls_in(&String::from_utf8_lossy(buf));
            masked.as_bytes()
        } else {
            buf
        };
        match &self.file {
            Some(file) => file
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .write_all(out)?,
            None => std::io::stderr().lock().write_all(out)?,
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match &self.file {
            Some(file) => file
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .flush(),
            None => std::io::stderr().flush(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_their_credentials() {
        let cases = [
            ("http://127.0.0.1:3001/mcp", "http://127.0.0.1:3001/mcp"),
            (
                "https://user:pa55@example.com/mcp",
                "https://***@example.com/mcp",
            ),
            ("https://tok3n@example.com", "https://***@example.com"),
            (
                "https://h/mcp?token=abc&region=eu&api_key=k&X-Amz-Signature=s",
                "https://h/mcp?token=***&region=eu&api_key=***&X-Amz-Signature=***",
            ),
            (
                "https://h/p?AUTH=1&Password=2&client_secret=3&flag",
                "https://h/p?AUTH=***&Password=***&client_secret=***&flag",
            ),
            (
                "https://a:b@h:8/p?x=1#access_token=t&state=s",
                "https://***@h:8/p?x=1#access_token=***&state=s",
            ),
            ("https://h/p@q", "https://h/p@q"),
            ("not a url token=x", "not a url token=x"),
        ];
        for (url, expected) in cases {
            assert_eq!(mask_url(url), expected, "{url}");
        }
    }

    #[test]
    fn urls_inside_text_are_masked() {
        let cases = [
            (
                "cannot connect to http://u:p@127.0.0.1:9/mcp?token=abc: error sending request for url (http://127.0.0.1:9/mcp?token=abc)",
                "cannot connect to http://***@127.0.0.1:9/mcp?token=***: error sending request for url (http://127.0.0.1:9/mcp?token=***)",
            ),
            (
                "\"https://h/?key=1\", then https://h/?sig=2.",
                "\"https://h/?key=***\", then https://h/?sig=***.",
            ),
            ("a :// b", "a :// b"),
            ("no urls here", "no urls here"),
            ("", ""),
        ];
        for (text, expected) in cases {
            assert_eq!(mask_urls_in(text), expected, "{text}");
        }
    }
}
