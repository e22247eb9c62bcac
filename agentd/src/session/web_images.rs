//! Image parts of a message given by an `http(s)` URL: fetched when the message is sent,
//! under the agent's network rule (a `deny` refuses them; the user sending the URL is the
//! request, so nothing is asked), at most 20 MiB and 30 s, no redirect followed, and only
//! an image type the models read. The message then holds the daemon's own copy, like any
//! image.

use std::time::Duration;

use agent_proto::{Agent, ContentPart, MessageContent};
use base64::Engine as _;

use super::input::MAX_IMAGE_BYTES;
use super::{SessionError, SessionManager};

const FETCH_TIME: Duration = Duration::from_secs(30);
const TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

fn web_url(s: &str) -> Option<&str> {
    let trimmed = s.trim();
    let lower = trimmed.to_ascii_lowercase();
    (lower.starts_with("http://") || lower.starts_with("https://")).then_some(trimmed)
}

/// Whether a content has an image given by web URL.
pub(super) trait WebImages {
    fn has_web_images(&self) -> bool;
}

impl WebImages for MessageContent {
    fn has_web_images(&self) -> bool {
        let MessageContent::Parts(parts) = self else {
            return false;
        };
        parts.iter().any(|p| match p {
            ContentPart::Image {
                data, path, uri, ..
            } => [data, path, uri]
                .into_iter()
                .flatten()
                .any(|s| web_url(s).is_some()),
            _ => false,
        })
    }
}

impl SessionManager {
    /// The content with every web image fetched into plain base64 data.
    pub(super) async fn fetch_web_images(
        &self,
        agent: &Agent,
        content: MessageContent,
    ) -> Result<MessageContent, SessionError> {
        let MessageContent::Parts(parts) = content else {
            return Ok(content);
        };
        let mut out = Vec::with_capacity(parts.len());
        for part in parts {
            let ContentPart::Image {
                data,
                path,
                mime_type,
                uri,
            } = part
            else {
                out.push(part);
                continue;
            };
            let url = [&data, &path, &uri]
                .into_iter()
                .flatten()
                .find_map(|s| web_url(s))
                .map(str::to_owned);
            let Some(url) = url else {
                out.push(ContentPart::Image {
                    data,
                    path,
                    mime_type,
                    uri,
                });
                continue;
            };
            self.tools.may_fetch_for_user(agent).map_err(|why| {
                SessionError::InvalidParams(format!("the image {url} cannot be fetched: {why}"))
            })?;
            let (mime, bytes) = self.fetch_image(&url).await?;
            out.push(ContentPart::Image {
                data: Some(base64::engine::general_purpose::STANDARD.encode(bytes)),
                path: None,
                mime_type: Some(mime),
                uri: None,
            });
        }
        Ok(MessageContent::Parts(out))
    }

    async fn fetch_image(&self, url: &str) -> Result<(String, Vec<u8>), SessionError> {
        let invalid = |why: String| SessionError::InvalidParams(format!("the image {url}: {why}"));
        let parsed = reqwest::Url::parse(url).map_err(|e| invalid(format!("not a URL: {e}")))?;
        let fetch = async {
            let response = self
                .tools
                .http()
                .get(parsed)
                .send()
                .await
                .map_err(|e| invalid(format!("cannot fetch it: {e}")))?;
            let status = response.status();
            if status.is_redirection() {
                let to = response
                    .headers()
                    .get(reqwest::header::LOCATION)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("?")
                    .to_owned();
                return Err(invalid(format!(
                    "it redirects (HTTP {status}) to {to}; send that URL"
                )));
            }
            if !status.is_success() {
                return Err(invalid(format!("the server answered HTTP {status}")));
            }
            let mime = response
                .headers()
                .get(reqwest::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .map(|v| {
                    v.split(';')
                        .next()
                        .unwrap_or_default()
                        .trim()
                        .to_ascii_lowercase()
                })
                .unwrap_or_default();
            if !TYPES.contains(&mime.as_str()) {
                return Err(invalid(format!(
                    "its type is {mime:?}, not one of {}",
                    TYPES.join(", ")
                )));
            }
            let (bytes, cut) = crate::tools::builtin::read_body(response, MAX_IMAGE_BYTES)
                .await
                .map_err(|e| invalid(format!("cannot read it: {e}")))?;
            if cut {
                return Err(invalid(format!("it is over {MAX_IMAGE_BYTES} bytes")));
            }
            Ok((mime, bytes))
        };
        tokio::time::timeout(FETCH_TIME, fetch)
            .await
            .map_err(|_| invalid(format!("not fetched within {} s", FETCH_TIME.as_secs())))?
    }
}
