//! The catalog: every MCP tool of every enabled server, with the names the model sees
//! worked out across servers, rebuilt whenever a server's tool list or spec changes.

use std::sync::{Arc, PoisonError};

use super::convert::{self, ToolDef};
use super::{McpManager, Server};

/// One tool of the catalog: what agents can be offered.
#[derive(Debug, Clone)]
pub struct CatalogTool {
    pub server: String,
    pub def: ToolDef,
    /// The name the model sees.
    pub exposed: String,
    pub validator: Option<Arc<jsonschema::Validator>>,
    /// Runs without a prompt (the server's `autoApprove`).
    pub auto_approved: bool,
}

/// Every MCP tool there is, with exposed names worked out across servers.
#[derive(Debug, Default)]
pub struct Catalog {
    pub tools: Vec<CatalogTool>,
}

impl Catalog {
    pub fn get(&self, exposed: &str) -> Option<&CatalogTool> {
        self.tools.iter().find(|t| t.exposed == exposed)
    }
}
impl McpManager {
    pub fn catalog(&self) -> Arc<Catalog> {
        self.catalog
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub(super) fn rebuild_catalog(&self) {
        let servers: Vec<Arc<Server>> = self
            .servers()
            .values()
            .filter(|s| s.spec.enabled)
            .cloned()
            .collect();
        let mut entries: Vec<(String, ToolDef, bool)> = Vec::new();
        for server in &servers {
            let approve = &server.spec.auto_approve;
            for def in server.lock().tools.clone() {
                let approved = approve.iter().any(|a| a == "*" || *a == def.name);
                entries.push((server.spec.name.clone(), def, approved));
            }
        }
        let pairs: Vec<(String, String)> = entries
            .iter()
            .map(|(s, d, _)| (s.clone(), d.name.clone()))
            .collect();
        let exposed = convert::exposed_names(&pairs);
        let tools = entries
            .into_iter()
            .zip(exposed)
            .map(|((server, def, auto_approved), exposed)| {
                let validator = jsonschema::validator_for(&def.schema)
                    .map_err(|e| {
                        tracing::warn!(
                            server,
                            tool = def.name,
                            "the tool's input schema is not usable, arguments go unchecked: {e}"
                        );
                    })
                    .ok()
                    .map(Arc::new);
                CatalogTool {
                    server,
                    def,
                    exposed,
                    validator,
                    auto_approved,
                }
            })
            .collect();
        *self.catalog.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(Catalog { tools });
    }
}
