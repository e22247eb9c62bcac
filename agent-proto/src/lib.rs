//! Wire types of the agentd protocol: what crosses the Unix socket, nothing else.
//!
//! This crate owns the JSON shapes (agents, messages, events, method params and results,
//! error codes) and the one table of methods ([`rpc`]: every method declared once, its
//! params structs and descriptors generated from it). With no features it has no runtime:
//! no tokio, no SQL, so a client in another runtime or in WASM can use the types alone.
//! The `rpc` feature adds the jsonrpsee `#[rpc]` trait the table generates (jsonrpsee
//! pulls tokio; the daemon enables it); the `client` feature (implies `rpc`) adds a typed
//! client over the Unix socket for Rust frontends (agentctl, the end-to-end tests).
//! [`schema`] describes it all: an OpenRPC document and the event schema, generated from
//! the table and these types (`agent-proto/schema/`).
//!
//! Conventions: wire names are camelCase, tagged unions use `type`, list methods page with
//! `cursor`/`limit` in and `nextCursor` out, timestamps are unix milliseconds.

// The method table is read by a macro one param at a time (rpc/declare.rs): about 250
// nested expansions.
#![recursion_limit = "512"]

pub mod agent;
pub mod error;
pub mod event;
pub mod mcp;
pub mod message;
pub mod methods;
pub mod paths;
pub mod plan;
pub mod question;
pub mod rpc;
pub mod schema;
pub mod transfer;

#[cfg(feature = "client")]
pub mod client;
#[cfg(feature = "websocket")]
pub mod websocket;

pub use agent::*;
pub use error::*;
pub use event::*;
pub use mcp::*;
pub use message::*;
pub use methods::*;
pub use plan::*;
pub use question::*;
pub use rpc::params;
pub use rpc::params::*;
pub use transfer::*;

/// Protocol version spoken by this crate. Bumped on incompatible changes only; fields may be
/// added to any shape without a bump, so clients must ignore unknown fields.
pub const PROTOCOL_VERSION: u32 = 1;

/// Largest frame (one JSON-RPC message or batch) the daemon accepts, in bytes.
pub const MAX_FRAME_BYTES: usize = 16 * 1024 * 1024;

/// Largest user text accepted by `sendMessage`, in characters.
pub const MAX_USER_TEXT_CHARS: usize = 1_048_576;
