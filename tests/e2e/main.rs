//! End-to-end scenarios: the real `agentd` binary on a temp socket and data dir, a scripted
//! mock model on 127.0.0.1, and real clients (the typed client and raw sockets).
//!
//! Each scenario scripts the model, drives the RPC, and asserts the event transcript and
//! the requests the model received. Every wait has a timeout; nothing sleeps to settle.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod complete;

mod acp;
mod acp_backend;
mod agents;
mod answer_limits;
mod attachments;
mod bad_input;
mod cancel;
mod client_contract;
mod clients;
mod context;
mod demo_model;
mod failures;
mod finish_reasons;
mod hooks;
mod hostile;
mod instructions;
mod listen;
mod live_output;
mod load;
mod loop_control;
mod mcp;
mod mcp_quirks;
mod metrics;
mod permissions;
mod postgres;
mod process_hardening;
mod profiles;
mod providers;
mod questions;
mod queue;
mod races;
mod reload;
mod replay;
mod restart;
mod sandbox;
mod scale_out;
mod security;
mod service;
mod shell_checks;
mod shutdown;
mod skills;
mod stream_quirks;
mod streaming;
mod subagents;
mod thinking;
mod tool_hardening;
mod tools;
mod transfer;
mod transport_limits;
mod turn_options;
mod undo;
mod web_search;
