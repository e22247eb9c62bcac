-- agentd store, version 1: agents and their messages.
-- Forward-only: a later change is a new file, never an edit of this one.

CREATE TABLE agents (
    id              TEXT PRIMARY KEY NOT NULL,      -- UUID v7: sorts by creation time
    title           TEXT NOT NULL,
    mode            TEXT NOT NULL,                  -- chat | agent | acp
    provider        TEXT NOT NULL,
    model           TEXT NOT NULL,
    system_prompt   TEXT,
    workspace       TEXT,
    profile         TEXT,
    settings        TEXT NOT NULL DEFAULT '{}',     -- AgentSettings as JSON
    pinned          INTEGER NOT NULL DEFAULT 0,
    archived        INTEGER NOT NULL DEFAULT 0,
    parent_agent_id TEXT,                           -- set by a fork
    fork_message_id TEXT,
    -- Highest event seq that may have been handed out (a reservation while running, the
    -- exact last seq after a clean shutdown). The next seq is always above it.
    last_seq        INTEGER NOT NULL DEFAULT 0,
    created_at      INTEGER NOT NULL,               -- unix ms
    updated_at      INTEGER NOT NULL
);

CREATE TABLE messages (
    id                TEXT PRIMARY KEY NOT NULL,
    agent_id          TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    ord               INTEGER NOT NULL,             -- position in the agent's history, from 1
    role              TEXT NOT NULL,                -- user | assistant
    blocks            TEXT NOT NULL,                -- [Block] as JSON
    status            TEXT NOT NULL,                -- pending | streaming | done | cancelled | error | interrupted
    parent_id         TEXT,                         -- the user message an assistant message answers
    client_request_id TEXT,                         -- idempotency key of sendMessage
    input_tokens      INTEGER,
    output_tokens     INTEGER,
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL,
    UNIQUE (agent_id, ord)
);

CREATE UNIQUE INDEX messages_client_request
    ON messages (agent_id, client_request_id) WHERE client_request_id IS NOT NULL;

-- Start-up recovery looks for messages a crash left unfinished.
CREATE INDEX messages_unfinished ON messages (status) WHERE status IN ('pending', 'streaming');

CREATE TABLE settings (
    key   TEXT PRIMARY KEY NOT NULL,
    value TEXT NOT NULL
);
