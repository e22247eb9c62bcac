-- agentd store, version 8: messages sent into a busy agent (sendMessage whenBusy), kept
-- until they run as the next turn (queue) or join the running turn (steer). A row leaves
-- when its message is stored in `messages` (start-up drops any row a crash left behind
-- after that) or when it is cancelled.
CREATE TABLE queued_messages (
    id                TEXT PRIMARY KEY NOT NULL,
    agent_id          TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    assistant_id      TEXT NOT NULL,
    kind              TEXT NOT NULL CHECK (kind IN ('queue', 'steer')),
    blocks            TEXT NOT NULL,
    client_request_id TEXT,
    turn              TEXT,                         -- TurnOptions as JSON: the send's per-turn choices
    created_at        INTEGER NOT NULL
);
CREATE INDEX queued_messages_agent ON queued_messages (agent_id);
