//! Who may use the listener: the capability token (its file, made at first start), the
//! browser session cookie derived from it, and the origins whose pages may call in.
//!
//! Everything here is a pure decision over what a request carries; the router applies it.
//! Secrets are compared as SHA-256 digests in constant time, so neither the token's length
//! nor its first wrong byte shows in the time an answer takes.

use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use axum::http::HeaderMap;
use axum::http::header::{AUTHORIZATION, COOKIE};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// The browser session cookie's name.
pub(super) const COOKIE_NAME: &str = "agentd_session";
/// Shorter tokens are refused: a token is the only thing between the network and the
/// daemon's user.
const MIN_TOKEN_CHARS: usize = 32;

#[derive(Debug, thiserror::Error)]
pub enum TokenError {
    #[error(
        "the listener's token file {path} can be read by others (mode {mode:04o}); run \
         `chmod 600 {path}` or name another [listen] token_file"
    )]
    Readable { path: PathBuf, mode: u32 },
    #[error("the listener's token file {path} belongs to uid {owner}, not to this user")]
    Foreign { path: PathBuf, owner: u32 },
    #[error("the listener's token file {0} is not a regular file")]
    NotAFile(PathBuf),
    #[error(
        "the token in {path} has {len} characters; at least {MIN_TOKEN_CHARS} are needed \
         (delete the file and agentd writes a fresh one)"
    )]
    TooShort { path: PathBuf, len: usize },
    #[error("the listener's token file {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// The capability token, kept only as the digests requests are compared with.
#[derive(Clone)]
pub struct Token {
    /// SHA-256 of the token.
    token: [u8; 32],
    /// SHA-256 of the cookie value a browser signed in with this token gets.
    cookie: [u8; 32],
    /// The cookie's value (hex), for the `Set-Cookie` of a sign-in.
    cookie_value: String,
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(..)")
    }
}

impl Token {
    pub fn new(secret: &str) -> Token {
        // Derived, not stored: a cookie outlives a daemon restart and dies with the token
        // (delete the file to sign every browser out).
        let cookie_value = hex(&Sha256::digest(
            [b"agentd web session\0".as_slice(), secret.as_bytes()].concat(),
        ));
        Token {
            token: Sha256::digest(secret.as_bytes()).into(),
            cookie: Sha256::digest(cookie_value.as_bytes()).into(),
            cookie_value,
        }
    }

    /// Reads the token from `path`, or writes a fresh one there (0600) when there is no
    /// file. A file others may read, or that is not the user's, is refused.
    pub fn load_or_create(path: &Path, uid: u32) -> Result<Token, TokenError> {
        let io = |source| TokenError::Io {
            path: path.to_owned(),
            source,
        };
        match std::fs::symlink_metadata(path) {
            Ok(meta) => {
                if !meta.file_type().is_file() {
                    return Err(TokenError::NotAFile(path.to_owned()));
                }
                if meta.uid() != uid {
                    return Err(TokenError::Foreign {
                        path: path.to_owned(),
                        owner: meta.uid(),
                    });
                }
                if meta.mode() & 0o077 != 0 {
                    return Err(TokenError::Readable {
                        path: path.to_owned(),
                        mode: meta.mode() & 0o7777,
                    });
                }
                let text = std::fs::read_to_string(path).map_err(io)?;
                let secret = text.trim();
                if secret.chars().count() < MIN_TOKEN_CHARS {
                    return Err(TokenError::TooShort {
                        path: path.to_owned(),
                        len: secret.chars().count(),
                    });
                }
                Ok(Token::new(secret))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let mut bytes = [0u8; 32];
                getrandom::fill(&mut bytes).map_err(|e| io(std::io::Error::other(e)))?;
                let secret = hex(&bytes);
                let mut file = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(0o600)
                    .open(path)
                    .map_err(io)?;
                file.write_all(format!("{secret}\n").as_bytes())
                    .map_err(io)?;
                Ok(Token::new(&secret))
            }
            Err(e) => Err(io(e)),
        }
    }

    /// Whether `presented` is the token.
    pub fn matches(&self, presented: &str) -> bool {
        same_digest(&self.token, presented)
    }

    pub(super) fn cookie_value(&self) -> &str {
        &self.cookie_value
    }

    /// How a request proves it may use the listener: a bearer token or a session cookie.
    pub(super) fn admits(&self, headers: &HeaderMap) -> bool {
        let bearer = headers
            .get_all(AUTHORIZATION)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .filter_map(|v| v.strip_prefix("Bearer "))
            .any(|t| self.matches(t.trim()));
        bearer
            || cookies(headers, COOKIE_NAME)
                .iter()
                .any(|c| same_digest(&self.cookie, c))
    }
}

/// Compares SHA-256 of `presented` with `digest` in constant time.
fn same_digest(digest: &[u8; 32], presented: &str) -> bool {
    let presented: [u8; 32] = Sha256::digest(presented.as_bytes()).into();
    bool::from(digest.ct_eq(&presented))
}

/// The values of every cookie called `name` in the request.
fn cookies<'a>(headers: &'a HeaderMap, name: &str) -> Vec<&'a str> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .filter(|(k, _)| *k == name)
        .map(|(_, v)| v.trim_matches('"'))
        .collect()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The origins whose pages may call the listener: its own (scheme, host and port as a
/// browser writes them) and the ones the config adds.
#[derive(Debug, Clone)]
pub struct Origins(Vec<String>);

impl Origins {
    /// For a listener bound to `addr`; `hostname` is the machine's name (a listener on
    /// every address is reached by it).
    pub fn new(
        addr: std::net::SocketAddr,
        tls: bool,
        hostname: Option<&str>,
        extra: &[String],
    ) -> Origins {
        let scheme = if tls { "https" } else { "http" };
        let port = addr.port();
        let ip = addr.ip();
        let mut hosts = vec![match ip {
            std::net::IpAddr::V4(v4) => v4.to_string(),
            std::net::IpAddr::V6(v6) => format!("[{v6}]"),
        }];
        if ip.is_loopback() || ip.is_unspecified() {
            for host in ["localhost", "127.0.0.1", "[::1]"] {
                if !hosts.iter().any(|h| h == host) {
                    hosts.push(host.into());
                }
            }
        }
        if ip.is_unspecified() {
            hosts.extend(hostname.map(str::to_owned));
        }
        let mut own: Vec<String> = hosts
            .into_iter()
            .map(|h| {
                let default = (tls && port == 443) || (!tls && port == 80);
                if default {
                    format!("{scheme}://{h}")
                } else {
                    format!("{scheme}://{h}:{port}")
                }
            })
            .collect();
        for origin in extra.iter().map(|o| o.trim_end_matches('/')) {
            if !own.iter().any(|o| o == origin) {
                own.push(origin.to_owned());
            }
        }
        Origins(own)
    }

    /// Whether a request may go on: no `Origin` (not a browser, or a plain navigation), or
    /// one of ours. Several `Origin` headers, or one that is not text, are refused.
    pub(super) fn allow(&self, headers: &HeaderMap) -> bool {
        let mut all = headers.get_all(axum::http::header::ORIGIN).iter();
        match (all.next(), all.next()) {
            (None, _) => true,
            (Some(origin), None) => origin
                .to_str()
                .is_ok_and(|o| self.0.iter().any(|own| own.eq_ignore_ascii_case(o))),
            (Some(_), Some(_)) => false,
        }
    }

    /// The first origin: where the log says the page is.
    pub fn first(&self) -> &str {
        self.0.first().map_or("", String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.append(
                axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        map
    }

    const SECRET: &str = "0123456789abcdef0123456789abcdef";

    #[test]
    fn a_request_is_admitted_by_the_bearer_token_or_the_cookie_only() {
        let token = Token::new(SECRET);
        let cookie = format!("a=b; {COOKIE_NAME}={}", token.cookie_value());
        let cases: &[(&[(&str, &str)], bool)] = &[
            (&[], false),
            (&[("authorization", &format!("Bearer {SECRET}"))], true),
            (&[("authorization", &format!("Bearer  {SECRET} "))], true),
            (&[("authorization", &format!("bearer{SECRET}"))], false),
            (&[("authorization", &format!("Bearer {SECRET}x"))], false),
            (&[("authorization", "Bearer ")], false),
            (&[("authorization", &format!("Basic {SECRET}"))], false),
            (&[("cookie", &cookie)], true),
            // The token itself is not a cookie, nor the cookie a bearer token.
            (&[("cookie", &format!("{COOKIE_NAME}={SECRET}"))], false),
            (
                &[("authorization", &format!("Bearer {}", token.cookie_value()))],
                false,
            ),
            (&[("cookie", "agentd_session=")], false),
        ];
        for (pairs, admitted) in cases {
            assert_eq!(token.admits(&headers(pairs)), *admitted, "{pairs:?}");
        }
    }

    #[test]
    fn only_our_own_origins_or_none_pass() {
        let loopback = Origins::new("127.0.0.1:7800".parse().unwrap(), false, None, &[]);
        let cases = [
            (None, true),
            (Some("http://127.0.0.1:7800"), true),
            (Some("http://localhost:7800"), true),
            (Some("HTTP://LOCALHOST:7800"), true),
            (Some("http://[::1]:7800"), true),
            (Some("https://127.0.0.1:7800"), false),
            (Some("http://127.0.0.1:7801"), false),
            (Some("http://evil.example:7800"), false),
            (Some("null"), false),
            (Some("http://127.0.0.1:7800.evil.example"), false),
        ];
        for (origin, allowed) in cases {
            let h = origin.map_or_else(HeaderMap::new, |o| headers(&[("origin", o)]));
            assert_eq!(loopback.allow(&h), allowed, "{origin:?}");
        }
        let two = headers(&[
            ("origin", "http://127.0.0.1:7800"),
            ("origin", "http://127.0.0.1:7800"),
        ]);
        assert!(!loopback.allow(&two), "two Origin headers");

        let everywhere = Origins::new(
            "0.0.0.0:443".parse().unwrap(),
            true,
            Some("box"),
            &["https://agents.example/".into()],
        );
        for (origin, allowed) in [
            ("https://box", true),
            ("https://localhost", true),
            ("https://agents.example", true),
            ("http://box", false),
            ("https://0.0.0.0", true),
        ] {
            assert_eq!(
                everywhere.allow(&headers(&[("origin", origin)])),
                allowed,
                "{origin}"
            );
        }
    }

    #[test]
    fn the_token_file_is_made_private_and_a_readable_one_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let uid = nix::unistd::geteuid().as_raw();
        let path = dir.path().join("listen.token");
        let made = Token::load_or_create(&path, uid).unwrap();
        let meta = std::fs::metadata(&path).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        let secret = std::fs::read_to_string(&path).unwrap();
        assert_eq!(secret.trim().len(), 64);
        assert!(made.matches(secret.trim()));
        // Read again: the same token.
        let again = Token::load_or_create(&path, uid).unwrap();
        assert!(again.matches(secret.trim()));

        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        let err = Token::load_or_create(&path, uid).unwrap_err();
        assert!(matches!(err, TokenError::Readable { .. }), "{err}");

        let short = dir.path().join("short");
        std::fs::write(&short, "abc\n").unwrap();
        std::fs::set_permissions(&short, std::fs::Permissions::from_mode(0o600)).unwrap();
        let err = Token::load_or_create(&short, uid).unwrap_err();
        assert!(matches!(err, TokenError::TooShort { len: 3, .. }), "{err}");
    }
}
