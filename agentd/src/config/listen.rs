//! `[listen]`: the WebSocket listener beside the Unix socket (off unless an address is
//! given here or with `--listen`). Checked by `transport::web::validate`, used there.

use std::path::PathBuf;

use serde::Deserialize;

/// The `[listen]` section.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ListenConfig {
    /// `HOST:PORT` to listen on, e.g. `127.0.0.1:7800`; none: no listener. `--listen`
    /// replaces it.
    #[serde(default)]
    pub address: Option<String>,
    /// The capability token's file (default `<data dir>/listen.token`, written at first
    /// start). It must be readable by its owner only.
    #[serde(default)]
    pub token_file: Option<PathBuf>,
    /// PEM certificate chain and private key: the listener speaks TLS (https, wss).
    #[serde(default)]
    pub tls_cert: Option<PathBuf>,
    #[serde(default)]
    pub tls_key: Option<PathBuf>,
    /// Allows an address other than loopback without TLS (the token and everything else
    /// then cross the network in clear).
    #[serde(default)]
    pub insecure: bool,
    /// Origins, besides the listener's own, whose pages may use it (e.g. the name a
    /// reverse proxy or the machine is reached by: `https://box.example:7800`).
    #[serde(default)]
    pub origins: Vec<String>,
}
