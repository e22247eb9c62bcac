//! The builtin tools (placeholder until the implementations land).

use std::sync::Arc;

use super::BuiltinTool;

/// Every builtin tool, in the order they are offered to the model.
pub fn all() -> Vec<Arc<dyn BuiltinTool>> {
    Vec::new()
}
