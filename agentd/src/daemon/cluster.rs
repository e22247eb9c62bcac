//! Several daemons on one PostgreSQL database (docs/scale-out.md): what they say to each
//! other (`notices`).

mod node;
pub mod notices;

pub use node::Node;

/// This machine's hostname (empty when it cannot be read): the default host label, and
/// what a daemon's row says.
pub fn hostname() -> String {
    nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .unwrap_or_default()
}
