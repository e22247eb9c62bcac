//! A typed client over the daemon's Unix socket (newline-delimited JSON framing).
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use agent_proto::rpc::AgentRpcClient;
//! let client = agent_proto::client::connect("/run/user/1000/agentd/agentd.sock").await?;
//! let agents = client.list_agents(None, None, None, None, None).await?;
//! # Ok(()) }
//! ```
//!
//! The returned [`Client`] implements the generated `AgentRpcClient` trait, so every method
//! of the protocol is a typed async call, and `subscribe_events` yields typed [`crate::Event`]s.
//!
//! Before a byte is sent, the socket's server must be a process of this user: whoever can
//! put a socket at the path (another user who made its folder first, on a shared machine)
//! would otherwise receive the client's messages and answer with anything. [`check_peer`]
//! does that check; every client of the daemon should call it on a fresh connection.

use std::path::{Path, PathBuf};
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use jsonrpsee::core::client::{
    ClientBuilder, ReceivedMessage, TransportReceiverT, TransportSenderT,
};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio_util::codec::{FramedRead, FramedWrite, LinesCodec, LinesCodecError};

pub use jsonrpsee::core::client::{Client, Error, Subscription};

/// Why a connection to the daemon was not made.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// Nothing answers at the path (no daemon, no such file, no access): start the daemon
    /// or check the path.
    #[error("cannot connect to {path}: {source}")]
    Unreachable {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A process of another user serves the socket. Nothing was sent to it. Someone else
    /// may have taken over the path: do not use it; check who owns its folder.
    #[error(
        "{path} is served by a process of uid {peer}, not of this user (uid {me}); nothing was \
         sent to it. Another user may have taken over the socket path: check who owns its \
         folder, or use another socket"
    )]
    ForeignPeer { path: PathBuf, peer: u32, me: u32 },
    /// The server's uid could not be read; nothing was sent (refused, not guessed).
    #[error("cannot tell which user serves {path} ({source}); nothing was sent to it")]
    PeerUnknown {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// How a client is set up; `Default` suits interactive tools.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Events buffered per subscription before the client drops the subscription.
    pub subscription_buffer: usize,
    /// How long a call may wait for its answer.
    pub request_timeout: Duration,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            subscription_buffer: 100_000,
            request_timeout: Duration::from_secs(60),
        }
    }
}

/// Connects to the daemon at `path` with default options.
pub async fn connect(path: impl AsRef<Path>) -> Result<Client, ConnectError> {
    connect_with(path, ClientOptions::default()).await
}

/// Connects to the daemon at `path`, after checking that a process of this user serves it.
pub async fn connect_with(
    path: impl AsRef<Path>,
    options: ClientOptions,
) -> Result<Client, ConnectError> {
    let path = path.as_ref();
    let stream = UnixStream::connect(path)
        .await
        .map_err(|source| ConnectError::Unreachable {
            path: path.to_owned(),
            source,
        })?;
    check_peer(&stream, path)?;
    let (read, write) = stream.into_split();
    let sender = Sender(FramedWrite::new(write, LinesCodec::new()));
    let receiver = Receiver(FramedRead::new(
        read,
        LinesCodec::new_with_max_length(crate::MAX_FRAME_BYTES),
    ));
    Ok(ClientBuilder::default()
        .max_buffer_capacity_per_subscription(options.subscription_buffer)
        .request_timeout(options.request_timeout)
        .build_with_tokio(sender, receiver))
}

/// Checks, before anything is sent, that the process serving `stream` (connected to
/// `path`) runs as this process's effective uid (`SO_PEERCRED`).
pub fn check_peer(stream: &UnixStream, path: &Path) -> Result<(), ConnectError> {
    let me = nix::unistd::geteuid().as_raw();
    let cred = stream
        .peer_cred()
        .map_err(|source| ConnectError::PeerUnknown {
            path: path.to_owned(),
            source,
        })?;
    if cred.uid() != me {
        return Err(ConnectError::ForeignPeer {
            path: path.to_owned(),
            peer: cred.uid(),
            me,
        });
    }
    Ok(())
}

/// Errors of the socket transport.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    #[error("socket error: {0}")]
    Io(#[from] std::io::Error),
    #[error("bad frame from the daemon: {0}")]
    Frame(String),
    #[error("the daemon closed the connection")]
    Closed,
}

impl From<LinesCodecError> for TransportError {
    fn from(e: LinesCodecError) -> Self {
        match e {
            LinesCodecError::Io(e) => TransportError::Io(e),
            LinesCodecError::MaxLineLengthExceeded => {
                TransportError::Frame("a line over the frame limit".into())
            }
        }
    }
}

struct Sender(FramedWrite<OwnedWriteHalf, LinesCodec>);

impl TransportSenderT for Sender {
    type Error = TransportError;

    async fn send(&mut self, msg: String) -> Result<(), Self::Error> {
        self.0.send(msg).await?;
        Ok(())
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        SinkExt::<String>::close(&mut self.0).await?;
        Ok(())
    }
}

struct Receiver(FramedRead<OwnedReadHalf, LinesCodec>);

impl TransportReceiverT for Receiver {
    type Error = TransportError;

    async fn receive(&mut self) -> Result<ReceivedMessage, Self::Error> {
        loop {
            match self.0.next().await {
                Some(Ok(line)) if line.trim().is_empty() => continue,
                Some(Ok(line)) => return Ok(ReceivedMessage::Text(line)),
                Some(Err(e)) => return Err(e.into()),
                None => return Err(TransportError::Closed),
            }
        }
    }
}
