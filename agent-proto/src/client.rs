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

use std::path::Path;
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use jsonrpsee::core::client::{
    ClientBuilder, ReceivedMessage, TransportReceiverT, TransportSenderT,
};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio_util::codec::{FramedRead, FramedWrite, LinesCodec, LinesCodecError};

pub use jsonrpsee::core::client::{Client, Error, Subscription};

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
pub async fn connect(path: impl AsRef<Path>) -> std::io::Result<Client> {
    connect_with(path, ClientOptions::default()).await
}

/// Connects to the daemon at `path`.
pub async fn connect_with(
    path: impl AsRef<Path>,
    options: ClientOptions,
) -> std::io::Result<Client> {
    let stream = UnixStream::connect(path.as_ref()).await?;
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
