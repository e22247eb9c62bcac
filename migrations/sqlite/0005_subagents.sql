-- agentd store, version 5: subagents, plans and background tasks.

-- A subagent is an agent whose parent's `task` call started it: parent_agent_id names the
-- parent (as for a fork), subagent_type is set, depth counts the parents above it.
ALTER TABLE agents ADD COLUMN subagent_type TEXT;
ALTER TABLE agents ADD COLUMN parent_tool_call_id TEXT;
ALTER TABLE agents ADD COLUMN depth INTEGER NOT NULL DEFAULT 0;
CREATE INDEX agents_by_parent ON agents (parent_agent_id) WHERE subagent_type IS NOT NULL;

-- The plan an agent keeps with todo_write: the whole list, replaced at each call.
CREATE TABLE plans (
    agent_id    TEXT PRIMARY KEY NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    items       TEXT NOT NULL,                  -- [PlanItem] as JSON
    updated_at  INTEGER NOT NULL
);

-- Subagents started in the background (task with background: true). When one finishes,
-- its result waits here until the parent's next user message carries it to the model.
CREATE TABLE background_tasks (
    child_agent_id  TEXT PRIMARY KEY NOT NULL,  -- no foreign key: the row outlives a deleted child
    parent_agent_id TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    tool_call_id    TEXT NOT NULL,
    description     TEXT NOT NULL,
    status          TEXT NOT NULL,              -- running, or how it ended (a loopFinished reason)
    result          TEXT,                       -- what the parent's model gets
    delivered       INTEGER NOT NULL DEFAULT 0, -- 1 once a user message carried it
    started_at      INTEGER NOT NULL,
    finished_at     INTEGER
);
CREATE INDEX background_tasks_by_parent ON background_tasks (parent_agent_id, delivered);
