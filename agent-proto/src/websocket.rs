//! The typed client over the daemon's WebSocket listener (`agentd --listen`): the same
//! [`Client`] as over the socket, reached by a `ws://` or `wss://` URL and the listener's
//! capability token (sent as `Authorization: Bearer`). One JSON-RPC message per text frame.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use agent_proto::rpc::AgentRpcClient;
//! let target = agent_proto::websocket::Target::new("ws://127.0.0.1:7800", "TOKEN");
//! let client = agent_proto::websocket::connect(&target, Default::default()).await?;
//! let agents = client.list_agents(None, None, None, None, None).await?;
//! # Ok(()) }
//! ```
//!
//! `wss://` checks the server's certificate against the system's trust store, or against
//! one CA certificate file only ([`Target::ca_file`], for a listener's own certificate).

use std::path::PathBuf;
use std::sync::Arc;

use futures::stream::{SplitSink, SplitStream};
use futures::{SinkExt, StreamExt};
use jsonrpsee::core::client::{
    ClientBuilder, ReceivedMessage, TransportReceiverT, TransportSenderT,
};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::{HeaderValue, StatusCode, Uri};
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{self, Message};

use crate::client::{Client, ClientOptions};

/// Where the listener is and how to get in.
#[derive(Clone)]
pub struct Target {
    pub url: String,
    pub token: String,
    /// `wss://`: trust this CA (PEM) only, instead of the system's trust store.
    pub ca_file: Option<PathBuf>,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Target")
            .field("url", &self.url)
            .field("ca_file", &self.ca_file)
            .finish_non_exhaustive()
    }
}

impl Target {
    pub fn new(url: impl Into<String>, token: impl Into<String>) -> Target {
        Target {
            url: url.into(),
            token: token.into(),
            ca_file: None,
        }
    }
}

/// Why a WebSocket connection to the daemon was not made.
#[derive(Debug, thiserror::Error)]
pub enum WsConnectError {
    /// The URL is not `ws://HOST[:PORT][/PATH]` or `wss://...`: fix it.
    #[error("{url:?} is not a ws:// or wss:// URL: {reason}")]
    BadUrl { url: String, reason: String },
    /// Nothing answers there (no listener, a firewall): start the daemon with `--listen`.
    #[error("cannot connect to {url}: {source}")]
    Unreachable { url: String, source: std::io::Error },
    /// The TLS handshake failed (an untrusted certificate, a wrong name): give the CA file.
    #[error("TLS with {url} failed: {reason}")]
    Tls { url: String, reason: String },
    /// The listener refused the token (401): use the one in its token file.
    #[error(
        "{url} refused the token (401): pass the one in the daemon's listen.token (AGENTD_TOKEN)"
    )]
    Unauthorized { url: String },
    /// The listener refused the request (403, e.g. an Origin it does not serve).
    #[error("{url} refused the connection (403 forbidden)")]
    Forbidden { url: String },
    /// Anything else the upgrade answered.
    #[error("the WebSocket upgrade at {url} failed: {reason}")]
    Upgrade { url: String, reason: String },
}

/// Connects to the daemon's WebSocket listener.
pub async fn connect(target: &Target, options: ClientOptions) -> Result<Client, WsConnectError> {
    let ws = open(target).await?;
    let (sink, stream) = ws.split();
    Ok(ClientBuilder::default()
        .max_buffer_capacity_per_subscription(options.subscription_buffer)
        .request_timeout(options.request_timeout)
        .build_with_tokio(Sender(sink), Receiver(stream)))
}

/// Anything a WebSocket can run over: TCP, or TLS over TCP.
pub trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

type Ws = WebSocketStream<Box<dyn Io>>;

/// The upgraded connection, authenticated by the token.
pub async fn open(target: &Target) -> Result<Ws, WsConnectError> {
    let url = target.url.clone();
    let bad = |reason: String| WsConnectError::BadUrl {
        url: url.clone(),
        reason,
    };
    let uri: Uri = url.parse().map_err(|e| bad(format!("{e}")))?;
    let tls = match uri.scheme_str() {
        Some("ws") => false,
        Some("wss") => true,
        other => return Err(bad(format!("the scheme is {other:?}"))),
    };
    let host = uri
        .host()
        .ok_or_else(|| bad("no host".into()))?
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    let port = uri.port_u16().unwrap_or(if tls { 443 } else { 80 });
    let tcp = TcpStream::connect((host.as_str(), port))
        .await
        .map_err(|source| WsConnectError::Unreachable {
            url: url.clone(),
            source,
        })?;
    let _ = tcp.set_nodelay(true);
    let stream: Box<dyn Io> = if tls {
        Box::new(tls_connect(target, &host, tcp).await?)
    } else {
        Box::new(tcp)
    };
    let mut request = url
        .as_str()
        .into_client_request()
        .map_err(|e| bad(format!("{e}")))?;
    let bearer = HeaderValue::from_str(&format!("Bearer {}", target.token.trim()))
        .map_err(|_| WsConnectError::Unauthorized { url: url.clone() })?;
    request.headers_mut().insert("authorization", bearer);
    let config = WebSocketConfig::default()
        .max_message_size(Some(crate::MAX_FRAME_BYTES))
        .max_frame_size(Some(crate::MAX_FRAME_BYTES));
    match tokio_tungstenite::client_async_with_config(request, stream, Some(config)).await {
        Ok((ws, _)) => Ok(ws),
        Err(tungstenite::Error::Http(response)) => Err(match response.status() {
            StatusCode::UNAUTHORIZED => WsConnectError::Unauthorized { url },
            StatusCode::FORBIDDEN => WsConnectError::Forbidden { url },
            status => WsConnectError::Upgrade {
                url,
                reason: format!("HTTP {status}"),
            },
        }),
        Err(e) => Err(WsConnectError::Upgrade {
            url,
            reason: e.to_string(),
        }),
    }
}

async fn tls_connect(
    target: &Target,
    host: &str,
    tcp: TcpStream,
) -> Result<tokio_rustls::client::TlsStream<TcpStream>, WsConnectError> {
    let failed = |reason: String| WsConnectError::Tls {
        url: target.url.clone(),
        reason,
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| failed(e.to_string()))?;
    let config = match &target.ca_file {
        Some(ca) => {
            use rustls::pki_types::CertificateDer;
            use rustls::pki_types::pem::PemObject;
            let mut roots = rustls::RootCertStore::empty();
            for cert in CertificateDer::pem_file_iter(ca)
                .map_err(|e| failed(format!("{}: {e}", ca.display())))?
            {
                let cert = cert.map_err(|e| failed(format!("{}: {e}", ca.display())))?;
                roots
                    .add(cert)
                    .map_err(|e| failed(format!("{}: {e}", ca.display())))?;
            }
            builder.with_root_certificates(roots).with_no_client_auth()
        }
        None => {
            let verifier = rustls_platform_verifier::Verifier::new(provider)
                .map_err(|e| failed(e.to_string()))?;
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(verifier))
                .with_no_client_auth()
        }
    };
    let name = rustls::pki_types::ServerName::try_from(host.to_owned())
        .map_err(|e| failed(format!("{host}: {e}")))?;
    tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .map_err(|e| failed(e.to_string()))
}

/// Errors of the WebSocket transport.
#[derive(Debug, thiserror::Error)]
pub enum WsTransportError {
    #[error("WebSocket error: {0}")]
    Ws(#[from] tungstenite::Error),
    #[error("the daemon sent a binary frame")]
    Binary,
    #[error("the daemon closed the connection")]
    Closed,
}

struct Sender(SplitSink<Ws, Message>);

impl TransportSenderT for Sender {
    type Error = WsTransportError;

    async fn send(&mut self, msg: String) -> Result<(), Self::Error> {
        self.0.send(Message::Text(msg.into())).await?;
        Ok(())
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.0.close().await?;
        Ok(())
    }
}

struct Receiver(SplitStream<Ws>);

impl TransportReceiverT for Receiver {
    type Error = WsTransportError;

    async fn receive(&mut self) -> Result<ReceivedMessage, Self::Error> {
        loop {
            match self.0.next().await {
                Some(Ok(Message::Text(text))) => {
                    return Ok(ReceivedMessage::Text(text.as_str().to_owned()));
                }
                Some(Ok(Message::Binary(_))) => return Err(WsTransportError::Binary),
                Some(Ok(Message::Close(_))) | None => return Err(WsTransportError::Closed),
                Some(Ok(_)) => continue,
                Some(Err(e)) => return Err(e.into()),
            }
        }
    }
}
