//! Shell command analysis (placeholder until the implementation lands).
