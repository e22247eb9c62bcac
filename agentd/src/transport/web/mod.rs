//! The second door: JSON-RPC over WebSocket on TCP, for browsers and other machines, with
//! the web page and the health, readiness and metrics endpoints on the same port. Off
//! unless `[listen] address` or `--listen` names an address; the Unix socket stays the
//! default and is unchanged.
//!
//! The protocol behind it is the socket's own: each WebSocket connection is served by the
//! socket transport's connection code through a socket pair (`bridge`), with the same
//! slots, input budget, subscriptions, replay and `overloaded` answers.
//!
//! Unlike the socket (same user by SO_PEERCRED) anyone who can reach the port can knock,
//! so every request but `/healthz` and the page's static files must carry the capability
//! token (`auth`): as `Authorization: Bearer`, or as the session cookie a browser gets by
//! signing in with it. A request from a page of another origin is refused (403) before
//! anything else, against DNS rebinding and cross-site requests. An address beyond
//! loopback needs TLS (`accept`) unless the config says `insecure = true`.
//!
//! This module must not look inside the frames: that is `rpc`'s work, reached only
//! through [`Admission`].

mod accept;
mod auth;
mod bridge;
mod page;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{FromRequestParts, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::Admission;
use crate::config::ListenConfig;
use agent_proto::MAX_FRAME_BYTES;
pub use auth::{Origins, Token, TokenError};

/// The token file's name in the data dir when the config names none.
pub const TOKEN_FILE: &str = "listen.token";

/// Why the listener could not start.
#[derive(Debug, thiserror::Error)]
pub enum WebError {
    #[error("{0}")]
    Config(String),
    #[error(transparent)]
    Token(#[from] TokenError),
    #[error("cannot listen on {address}: {source}")]
    Bind {
        address: SocketAddr,
        source: std::io::Error,
    },
}

/// Checks `[listen]` (with `--listen`, passed as `address`, over its address): an address
/// that parses, TLS files named together, and TLS (or `insecure`) beyond loopback. The
/// address to listen on, if any.
pub fn validate(
    config: &ListenConfig,
    address: Option<&str>,
) -> Result<Option<SocketAddr>, String> {
    let Some(address) = address.or(config.address.as_deref()) else {
        return Ok(None);
    };
    let addr = parse_address(address)?;
    match (&config.tls_cert, &config.tls_key) {
        (Some(_), None) | (None, Some(_)) => {
            return Err("[listen] tls_cert and tls_key go together: name both or neither".into());
        }
        (None, None) if !addr.ip().is_loopback() && !config.insecure => {
            return Err(format!(
                "[listen] address {addr} is reachable from other machines: give it TLS \
                 (tls_cert and tls_key) or write `insecure = true` to send the token and \
                 everything else in clear"
            ));
        }
        _ => {}
    }
    for origin in &config.origins {
        if !(origin.starts_with("http://") || origin.starts_with("https://")) {
            return Err(format!(
                "[listen] origins: {origin:?} is not an origin (scheme://host[:port])"
            ));
        }
    }
    Ok(Some(addr))
}

fn parse_address(address: &str) -> Result<SocketAddr, String> {
    address.parse().map_err(|_| {
        format!("listen address {address:?} is not IP:PORT (e.g. 127.0.0.1:7800 or [::1]:7800)")
    })
}

/// The bound listener, not yet serving.
pub struct WebListener {
    tcp: TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
    token: Token,
    origins: Origins,
}

impl WebListener {
    /// Binds the listener `config` (or `address`, from `--listen`) asks for; none asked:
    /// `None`. The token is read from its file, or made there at first start.
    pub async fn bind(
        config: &ListenConfig,
        address: Option<&str>,
        data_dir: &Path,
        uid: u32,
    ) -> Result<Option<WebListener>, WebError> {
        let Some(addr) = validate(config, address).map_err(WebError::Config)? else {
            return Ok(None);
        };
        let tls = match (&config.tls_cert, &config.tls_key) {
            (Some(cert), Some(key)) => Some(accept::acceptor(cert, key).map_err(WebError::Config)?),
            _ => None,
        };
        let token_file = config
            .token_file
            .clone()
            .unwrap_or_else(|| data_dir.join(TOKEN_FILE));
        let token = Token::load_or_create(&token_file, uid)?;
        let tcp = TcpListener::bind(addr)
            .await
            .map_err(|source| WebError::Bind {
                address: addr,
                source,
            })?;
        let bound = tcp.local_addr().map_err(|source| WebError::Bind {
            address: addr,
            source,
        })?;
        let hostname = nix::unistd::gethostname()
            .ok()
            .and_then(|h| h.into_string().ok());
        let origins = Origins::new(bound, tls.is_some(), hostname.as_deref(), &config.origins);
        let origin = origins.first().to_owned();
        tracing::info!(
            "web listener on {origin}; open it and sign in with the token in {} (clients: \
             AGENTD_URL={} AGENTD_TOKEN=\"$(cat {})\")",
            token_file.display(),
            origin.replacen("http", "ws", 1),
            token_file.display(),
        );
        Ok(Some(WebListener {
            tcp,
            tls,
            token,
            origins,
        }))
    }

    /// The address it listens on (the port the system chose for port 0).
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.tcp.local_addr()
    }

    /// Serves until `stop`; the WebSocket connections are tasks of `tasks` and end when
    /// `close` is cancelled, like the socket's.
    pub async fn serve(
        self,
        admission: Admission,
        stop: CancellationToken,
        close: CancellationToken,
        tasks: TaskTracker,
    ) {
        let state = Arc::new(Shared {
            token: self.token,
            origins: self.origins,
            secure: self.tls.is_some(),
            admission,
            stop: stop.clone(),
            close: close.clone(),
            tasks: tasks.clone(),
        });
        // As many TCP connections as the daemon serves clients: a WebSocket keeps its
        // connection's slot too.
        let max_open = state.admission.max_connections();
        let router = router(state);
        let serving = Serving {
            router,
            stop,
            close,
            tasks,
        };
        match self.tls {
            Some(acceptor) => {
                let tls = accept::TlsListener::new(self.tcp, acceptor);
                serving.run(accept::Capped::new(tls, max_open)).await;
            }
            None => {
                use axum::serve::ListenerExt;
                let tcp = self.tcp.tap_io(|tcp| accept::no_delay(tcp));
                serving.run(accept::Capped::new(tcp, max_open)).await;
            }
        }
    }
}

/// A client has this long to send a request's headers, counted from its first byte:
/// a connection that dribbles them holds its slot no longer.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// The accept loop: each connection served by hyper's HTTP/1 (with upgrades, for the
/// WebSocket) as a task of the daemon's, under the header deadline.
struct Serving {
    router: Router,
    stop: CancellationToken,
    close: CancellationToken,
    tasks: TaskTracker,
}

impl Serving {
    async fn run<L: axum::serve::Listener>(self, mut listener: L) {
        loop {
            let (io, _) = tokio::select! {
                () = self.stop.cancelled() => return,
                accepted = listener.accept() => accepted,
            };
            let service = hyper_util::service::TowerToHyperService::new(self.router.clone());
            let close = self.close.clone();
            self.tasks.spawn(async move {
                let mut http = hyper::server::conn::http1::Builder::new();
                http.timer(hyper_util::rt::TokioTimer::new())
                    .header_read_timeout(HEADER_READ_TIMEOUT);
                let connection = http
                    .serve_connection(hyper_util::rt::TokioIo::new(io), service)
                    .with_upgrades();
                tokio::pin!(connection);
                tokio::select! {
                    served = connection.as_mut() => {
                        if let Err(e) = served {
                            tracing::debug!("web connection: {e}");
                        }
                    }
                    () = close.cancelled() => {
                        connection.as_mut().graceful_shutdown();
                        let _ = tokio::time::timeout(Duration::from_secs(1), connection).await;
                    }
                }
            });
        }
    }
}

/// What every request's handler sees.
struct Shared {
    token: Token,
    origins: Origins,
    /// TLS: the cookie is `Secure`.
    secure: bool,
    admission: Admission,
    /// Cancelled when the daemon stops accepting (`/readyz` then says so).
    stop: CancellationToken,
    /// Cancelled to close every connection.
    close: CancellationToken,
    tasks: TaskTracker,
}

type AppState = Arc<Shared>;

fn router(state: AppState) -> Router {
    Router::new()
        .route("/", get(root))
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(ready))
        .route("/metrics", get(metrics))
        .route("/session", get(session))
        .route("/login", post(login))
        .route("/logout", post(logout))
        .route("/{*path}", get(static_file))
        .layer(middleware::from_fn_with_state(state.clone(), same_origin))
        .with_state(state)
}

/// 403 for a request from another origin's page, whatever it asks for.
async fn same_origin(State(state): State<AppState>, request: Request, next: Next) -> Response {
    if state.origins.allow(request.headers()) {
        next.run(request).await
    } else {
        (
            StatusCode::FORBIDDEN,
            "requests from another origin's page are refused\n",
        )
            .into_response()
    }
}

fn unauthorized() -> Response {
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, "Bearer")],
        "a token is needed: `Authorization: Bearer TOKEN`, or sign in at / with the token in \
         the listener's token file\n",
    )
        .into_response()
}

#[derive(serde::Deserialize)]
struct TokenParam {
    token: Option<String>,
}

/// `/`: a WebSocket (with the token), a sign-in by `?token=`, or the page.
async fn root(
    State(state): State<AppState>,
    Query(query): Query<TokenParam>,
    request: Request,
) -> Response {
    let upgrade = request
        .headers()
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"));
    if upgrade {
        if !state.token.admits(request.headers()) {
            return unauthorized();
        }
        let (mut parts, _) = request.into_parts();
        return match WebSocketUpgrade::from_request_parts(&mut parts, &state).await {
            Ok(upgrade) => websocket(state, upgrade),
            Err(rejection) => rejection.into_response(),
        };
    }
    match query.token {
        Some(token) => sign_in(&state, &token),
        None => page::file(""),
    }
}

fn websocket(state: AppState, upgrade: WebSocketUpgrade) -> Response {
    upgrade
        // A frame past the socket's limit closes the connection (WebSocket cannot skip
        // to the next frame the way NDJSON skips to the next line).
        .max_message_size(MAX_FRAME_BYTES)
        .max_frame_size(MAX_FRAME_BYTES)
        .on_upgrade(move |ws| {
            let served = bridge::serve(ws, state.admission.clone(), state.close.child_token());
            state.tasks.track_future(served)
        })
}

/// A sign-in: the session cookie and a redirect to the page (which drops the token from
/// the address bar and history), or 401.
fn sign_in(state: &Shared, token: &str) -> Response {
    if !state.token.matches(token.trim()) {
        return (
            StatusCode::UNAUTHORIZED,
            [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
            "<!doctype html><title>agentd: wrong token</title><p role=\"alert\">Wrong token. \
             <a href=\"/\">Try again</a>.</p>\n",
        )
            .into_response();
    }
    let cookie = format!(
        "{}={}; HttpOnly; SameSite=Strict; Path=/{}",
        auth::COOKIE_NAME,
        state.token.cookie_value(),
        if state.secure { "; Secure" } else { "" }
    );
    redirect_home(&cookie)
}

fn redirect_home(cookie: &str) -> Response {
    let mut response = (StatusCode::SEE_OTHER, [(header::LOCATION, "/")]).into_response();
    if let Ok(value) = HeaderValue::from_str(cookie) {
        response.headers_mut().insert(header::SET_COOKIE, value);
    }
    response
}

async fn login(
    State(state): State<AppState>,
    axum::Form(form): axum::Form<TokenParam>,
) -> Response {
    sign_in(&state, form.token.as_deref().unwrap_or(""))
}

async fn logout() -> Response {
    redirect_home(&format!(
        "{}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0",
        auth::COOKIE_NAME
    ))
}

/// 204 for a request that carries the token or the cookie: how the page knows whether
/// to show its sign-in form.
async fn session(State(state): State<AppState>, headers: HeaderMap) -> Response {
    if state.token.admits(&headers) {
        StatusCode::NO_CONTENT.into_response()
    } else {
        unauthorized()
    }
}

async fn ready(State(state): State<AppState>, headers: HeaderMap) -> Response {
    if !state.token.admits(&headers) {
        return unauthorized();
    }
    if state.stop.is_cancelled() {
        (StatusCode::SERVICE_UNAVAILABLE, "shutting down\n").into_response()
    } else {
        "ready\n".into_response()
    }
}

async fn metrics(State(state): State<AppState>, headers: HeaderMap) -> Response {
    if !state.token.admits(&headers) {
        return unauthorized();
    }
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        state.admission.metrics().render().await,
    )
        .into_response()
}

async fn static_file(axum::extract::Path(path): axum::extract::Path<String>) -> Response {
    page::file(&path)
}
