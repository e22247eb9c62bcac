//! Several daemons on one PostgreSQL database (docs/scale-out.md): what they say to each
//! other (`notices`).

pub mod notices;
