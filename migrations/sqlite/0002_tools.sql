-- agentd store, version 2: tool executions, permission grants, persisted session status.

-- One row per tool call that ran (or was refused), for audit and debugging. The message's
-- toolCall block is what the model sees; this is what happened.
CREATE TABLE tool_executions (
    id            INTEGER PRIMARY KEY,
    agent_id      TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    message_id    TEXT NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    tool_call_id  TEXT NOT NULL,
    tool_name     TEXT NOT NULL,
    input         TEXT NOT NULL,                 -- arguments as JSON
    output        TEXT,                          -- what the model got (a stub if offloaded)
    offload_path  TEXT,
    status        TEXT NOT NULL,                 -- running | success | error | denied | cancelled | interrupted
    started_at    INTEGER NOT NULL,
    finished_at   INTEGER,
    duration_ms   INTEGER,
    UNIQUE (message_id, tool_call_id)
);

CREATE INDEX tool_executions_running ON tool_executions (status) WHERE status = 'running';

-- Remembered answers to permission prompts. scope 'session': one agent (agent_id set,
-- deleted with it); scope 'always': every agent (agent_id NULL).
CREATE TABLE permission_grants (
    id          INTEGER PRIMARY KEY,
    scope       TEXT NOT NULL,                   -- session | always
    agent_id    TEXT REFERENCES agents(id) ON DELETE CASCADE,
    level       TEXT NOT NULL,                   -- read | write | execute | network
    grant_key   TEXT NOT NULL,                   -- command signature, directory, or host
    created_at  INTEGER NOT NULL
);

CREATE UNIQUE INDEX permission_grants_unique
    ON permission_grants (scope, COALESCE(agent_id, ''), level, grant_key);

-- The session status survives restarts (waiting_permission, paused, error); a daemon that
-- died mid-run finds 'generating' and recovers it as idle.
ALTER TABLE agents ADD COLUMN session_status TEXT NOT NULL DEFAULT 'idle';
