//! Test kit for agentd's end-to-end tests: a scripted mock model (an HTTP server on
//! 127.0.0.1 speaking the OpenAI streaming format), a harness that runs the real daemon
//! binary on a temp socket and data dir, raw socket connections in both framings,
//! helpers to collect events, and a socket-activating stand-in for systemd's socket unit.
//!
//! It is test code: every wait has a timeout and a failure panics with a message saying
//! what was expected and what arrived.

#![allow(clippy::unwrap_used, clippy::expect_used)]

pub mod activation;
pub mod daemon;
pub mod events;
pub mod mock_model;
pub mod other_user;
pub mod postgres;
pub mod procs;
pub mod race;
pub mod raw;
pub mod rebuild;
pub mod rng;
pub mod scenario;
pub mod send;
pub mod transcript;
pub mod wait;
