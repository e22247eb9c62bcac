-- agentd store, version 4: MCP servers added over RPC, and the tools each server listed.

-- Servers added with addMcpServer (the config file's are not stored). spec: McpServerSpec
-- as JSON, secrets included: the database is readable by its owner only.
CREATE TABLE mcp_servers (
    name        TEXT PRIMARY KEY NOT NULL,
    spec        TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);

-- The last tool list of every server, so listTools answers while a server is down.
CREATE TABLE mcp_tool_cache (
    server      TEXT PRIMARY KEY NOT NULL,
    tools       TEXT NOT NULL,                  -- [ToolDef] as JSON
    updated_at  INTEGER NOT NULL
);
