//! Where the daemon is: its Unix socket (the default), or its WebSocket listener when a
//! URL is given (`--url` / `AGENTD_URL`, with the token in `AGENTD_TOKEN` and, for a
//! certificate the system does not trust, its CA in `AGENTD_CA_CERT`).

use std::path::PathBuf;

use agent_proto::client::{Client, ConnectError};
use agent_proto::websocket::{Target, WsConnectError};

#[derive(Debug, Clone)]
pub(crate) enum Endpoint {
    Socket(PathBuf),
    Web(Target),
}

/// Why a connection was not made.
pub(crate) enum Refusal {
    /// Nothing answers (yet): worth waiting for.
    Unreachable(String),
    /// Answered, but not ours to use (another user's socket, a wrong token): never retried.
    Refused(String),
}

impl Endpoint {
    /// The socket unless a URL is given; a URL needs a token.
    pub(crate) fn choose(
        socket: Option<PathBuf>,
        url: Option<String>,
        token: Option<String>,
        ca: Option<PathBuf>,
    ) -> Result<Endpoint, String> {
        match url {
            Some(url) => {
                let Some(token) = token.filter(|t| !t.trim().is_empty()) else {
                    return Err(format!(
                        "{url} needs the listener's token: set AGENTD_TOKEN (it is in the \
                         daemon's listen.token)"
                    ));
                };
                let mut target = Target::new(url, token);
                target.ca_file = ca;
                Ok(Endpoint::Web(target))
            }
            None => Ok(Endpoint::Socket(socket.unwrap_or_else(|| {
                agent_proto::paths::default_socket_path(nix::unistd::geteuid().as_raw())
            }))),
        }
    }

    pub(crate) async fn connect(&self) -> Result<Client, Refusal> {
        match self {
            // The client checks that the socket is served by our own user before sending
            // anything.
            Endpoint::Socket(path) => match agent_proto::client::connect(path).await {
                Ok(client) => Ok(client),
                Err(ConnectError::Unreachable { source, .. }) => {
                    Err(Refusal::Unreachable(format!(
                        "cannot connect to agentd at {}: {source} (is the daemon running? \
                         start it with: agentd)",
                        path.display()
                    )))
                }
                Err(e) => Err(Refusal::Refused(format!("refusing to talk to agentd: {e}"))),
            },
            Endpoint::Web(target) => {
                match agent_proto::websocket::connect(target, Default::default()).await {
                    Ok(client) => Ok(client),
                    Err(e @ WsConnectError::Unreachable { .. }) => Err(Refusal::Unreachable(
                        format!("{e} (is the daemon running with --listen?)"),
                    )),
                    Err(e) => Err(Refusal::Refused(e.to_string())),
                }
            }
        }
    }
}
