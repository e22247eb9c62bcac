//! MCP servers added over RPC, and the cached tool list of every server.

use agent_proto::McpServerSpec;

use super::{Store, StoreError, corrupt};

impl Store {
    /// Servers added over RPC, by name.
    pub async fn mcp_servers(&self) -> Result<Vec<McpServerSpec>, StoreError> {
        let rows: Vec<(String,)> = self
            .query_as("SELECT spec FROM mcp_servers ORDER BY name")
            .fetch_all(&self.read)
            .await?;
        rows.iter()
            .map(|(spec,)| serde_json::from_str(spec).map_err(|e| corrupt("mcp_servers", e)))
            .collect()
    }

    /// Inserts or replaces a server's spec.
    pub async fn put_mcp_server(&self, spec: &McpServerSpec, now: i64) -> Result<(), StoreError> {
        let json = serde_json::to_string(spec).map_err(|e| corrupt("mcp_servers", e))?;
        self.query(
            "INSERT INTO mcp_servers (name, spec, created_at, updated_at) VALUES ($1, $2, $3, $3) \
             ON CONFLICT (name) DO UPDATE SET spec = $2, updated_at = $3",
        )
        .bind(&spec.name)
        .bind(json)
        .bind(now)
        .execute(&mut *self.write.acquire().await?)
        .await?;
        Ok(())
    }

    pub async fn delete_mcp_server(&self, name: &str) -> Result<(), StoreError> {
        self.query("DELETE FROM mcp_servers WHERE name = $1")
            .bind(name)
            .execute(&mut *self.write.acquire().await?)
            .await?;
        self.query("DELETE FROM mcp_tool_cache WHERE server = $1")
            .bind(name)
            .execute(&mut *self.write.acquire().await?)
            .await?;
        Ok(())
    }

    /// Every server's cached tool list (JSON), by server name.
    pub async fn mcp_tool_caches(&self) -> Result<Vec<(String, String)>, StoreError> {
        Ok(self
            .query_as("SELECT server, tools FROM mcp_tool_cache")
            .fetch_all(&self.read)
            .await?)
    }

    pub async fn put_mcp_tool_cache(
        &self,
        server: &str,
        tools_json: &str,
        now: i64,
    ) -> Result<(), StoreError> {
        self.query(
            "INSERT INTO mcp_tool_cache (server, tools, updated_at) VALUES ($1, $2, $3) \
             ON CONFLICT (server) DO UPDATE SET tools = $2, updated_at = $3",
        )
        .bind(server)
        .bind(tools_json)
        .bind(now)
        .execute(&mut *self.write.acquire().await?)
        .await?;
        Ok(())
    }
}
