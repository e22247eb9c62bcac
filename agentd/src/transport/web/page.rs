//! The web page's files (`clients/web/public/`), embedded in the binary at build time and
//! served as they are: no CDN, nothing fetched, works offline. They hold no secrets, so
//! they are served without a token; everything they show comes over the WebSocket.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use include_dir::{Dir, include_dir};

static PUBLIC: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/../clients/web/public");

/// The file at `path` (relative to `public/`, `""` for the index), or 404.
pub(super) fn file(path: &str) -> Response {
    let path = if path.is_empty() { "index.html" } else { path };
    match PUBLIC.get_file(path) {
        Some(file) => {
            let mut response = file.contents().into_response();
            let headers = response.headers_mut();
            headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(content_type(path)),
            );
            // The files change with the binary: a browser asks again each time rather
            // than keep a page older than its daemon.
            headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
            headers.insert(
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            );
            headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
            headers.insert(
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(
                    "default-src 'self'; connect-src 'self'; img-src 'self' data:; \
                     style-src 'self'; script-src 'self'; frame-ancestors 'none'",
                ),
            );
            response
        }
        None => (StatusCode::NOT_FOUND, "no such file\n").into_response(),
    }
}

/// The content type by the file's extension.
fn content_type(path: &str) -> &'static str {
    match path.rsplit_once('.').map(|(_, ext)| ext) {
        Some("html") => "text/html; charset=utf-8",
        Some("js" | "mjs") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("ico") => "image/x-icon",
        Some("json") => "application/json",
        Some("txt") => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}
