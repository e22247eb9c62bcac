//! Moving agents: the results of `exportAgent` and the JSON export document that
//! `importAgent` reads back.
//!
//! The JSON export is self-contained: besides the agent and its messages it carries the
//! full text of every offloaded tool result and the bytes of every image, so an import on
//! another machine (or after the source was deleted) loses nothing. Ids in it are the
//! exporting daemon's; an import gives the agent and every message new ones.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::agent::{AgentMode, AgentSettings};
use crate::message::{Block, MessageStatus, Role, Usage};

/// The `format` member of a JSON export.
pub const EXPORT_FORMAT: &str = "agentd-export";
/// The `version` member of a JSON export this crate writes (and the only one it reads).
pub const EXPORT_VERSION: u32 = 1;
/// Most messages `importAgent` accepts in one export.
pub const MAX_IMPORT_MESSAGES: usize = 100_000;

/// What `exportAgent` produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ExportFormat {
    /// A transcript for people to read.
    Markdown,
    /// An [`AgentExport`] document (as text) that `importAgent` accepts.
    Json,
}

/// Result of `exportAgent`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExportResult {
    pub format: ExportFormat,
    /// The markdown text, or the JSON export as text.
    pub content: String,
}

/// The JSON export of one agent (`format: "agentd-export"`, `version: 1`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AgentExport {
    /// Always [`EXPORT_FORMAT`].
    pub format: String,
    /// [`EXPORT_VERSION`]; a daemon refuses versions it does not know.
    pub version: u32,
    /// Unix ms.
    pub exported_at: i64,
    pub agent: ExportedAgent,
    /// Oldest first.
    pub messages: Vec<ExportedMessage>,
    /// Summaries the model wrote of earlier rounds, oldest first.
    #[serde(default)]
    pub summaries: Vec<ExportedSummary>,
    /// Full text of each offloaded tool result, by `toolCallId` (the blocks hold only the
    /// stub and the exporting daemon's `offloadPath`).
    #[serde(default)]
    pub offloads: BTreeMap<String, String>,
    /// The image files, by the `path` their image blocks name.
    #[serde(default)]
    pub images: BTreeMap<String, ExportedImage>,
    /// The document files (PDFs), by the `path` their document blocks name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub documents: BTreeMap<String, ExportedImage>,
    /// The agent's plan (`todo_write`); absent when it has none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plan: Vec<crate::PlanItem>,
}

/// The agent of an export: the `Agent` shape without its runtime `status`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExportedAgent {
    /// The id on the exporting daemon (an import gives a new one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub title: String,
    pub mode: AgentMode,
    pub provider: String,
    pub model: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    /// Present only for a workspace the agent was created with; the folder a daemon makes
    /// for an agent itself is not exported (an import gets its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
    #[serde(default)]
    pub settings: AgentSettings,
    #[serde(default)]
    pub pinned: bool,
    #[serde(default)]
    pub archived: bool,
    /// A message id of this export.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_edge: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_agent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fork_message_id: Option<String>,
    #[serde(default)]
    pub created_at: i64,
    #[serde(default)]
    pub updated_at: i64,
}

/// A message of an export: the `Message` shape without `agentId`, plus `parentId` (the
/// user message an assistant message answers).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExportedMessage {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    pub role: Role,
    pub blocks: Vec<Block>,
    pub status: MessageStatus,
    pub created_at: i64,
    pub updated_at: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant_of: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub superseded: bool,
}

/// A summary of earlier rounds; the model sees it instead of every message up to and
/// including `throughMessageId`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExportedSummary {
    pub through_message_id: String,
    pub text: String,
    #[serde(default)]
    pub summarized_messages: u64,
    #[serde(default)]
    pub before_tokens: u64,
    #[serde(default)]
    pub after_tokens: u64,
    #[serde(default)]
    pub created_at: i64,
}

/// An image or document file of an export.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExportedImage {
    pub mime_type: String,
    /// The file's bytes, base64 (standard alphabet, padded).
    pub data: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_minimal_export_reads_and_optional_parts_default() {
        let export: AgentExport = serde_json::from_value(json!({
            "format": "agentd-export",
            "version": 1,
            "exportedAt": 5,
            "agent": {"title": "t", "mode": "chat", "provider": "p", "model": "m"},
            "messages": [{
                "id": "m1", "role": "user", "status": "done", "createdAt": 1, "updatedAt": 1,
                "blocks": [{"type": "text", "text": "hi"}]
            }]
        }))
        .unwrap();
        assert!(export.offloads.is_empty() && export.images.is_empty());
        assert_eq!(export.messages[0].parent_id, None);
        assert!(!export.messages[0].superseded);
        let back = serde_json::to_value(&export).unwrap();
        assert_eq!(back["agent"]["settings"], json!({}));
        assert!(back["agent"].get("status").is_none());
        assert!(back["messages"][0].get("agentId").is_none());
        assert_eq!(
            serde_json::to_value(ExportFormat::Markdown).unwrap(),
            json!("markdown")
        );
    }
}
