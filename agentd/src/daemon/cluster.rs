//! Several daemons on one PostgreSQL database (docs/scale-out.md): what they say to each
//! other (`notices`).

mod node;
pub mod notices;

pub use node::Node;
