-- agentd store, version 9: undo. Which workspace snapshots belong to which answer: the
-- snapshot before its first step that could change files, and the one after its latest
-- such step (tools/checkpoint keeps the snapshots themselves, in the agent's folder).
-- A row goes with its message (revertTo deletes messages) and with its agent.
CREATE TABLE checkpoints (
    message_id      TEXT PRIMARY KEY NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    agent_id        TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    before_snapshot TEXT,              -- NULL when it could not be taken (error says why)
    after_snapshot  TEXT,              -- NULL until the step's calls settled
    error           TEXT,              -- why a snapshot of this answer failed
    updated_at      INTEGER NOT NULL
);

CREATE INDEX checkpoints_agent ON checkpoints (agent_id);
