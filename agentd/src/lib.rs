//! agentd: a headless AI-agent daemon.
//!
//! Data flows top to bottom: `transport` (socket, framing) -> `rpc` (JSON-RPC, the method
//! table) -> `agents` (agents' settings, copies, titles) -> `session` (sessions, runs,
//! events) -> `agent_loop` (one run) -> `context`, `provider` -> `store` (SQLite). Events flow back up through `session::events` to each
//! subscribed connection. A module never reaches upward. See ARCHITECTURE.md.

pub mod acp_backend;
pub mod agent_loop;
pub mod agents;
pub mod config;
pub mod context;
pub mod daemon;
pub mod hooks;
pub mod instructions;
pub mod metrics;
pub mod process;
pub mod profiles;
pub mod provider;
pub mod rpc;
pub mod session;
pub mod skills;
pub mod store;
pub mod tools;
pub mod transport;
