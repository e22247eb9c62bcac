-- Several daemons on one database (docs/scale-out.md): who is alive, and which daemon is
-- home to which agent. The advisory locks are the truth (they go with their connection);
-- these rows say who holds them, for the other daemons.

CREATE TABLE daemons (
    id               TEXT COLLATE "C" PRIMARY KEY NOT NULL,  -- UUID v7, one per start
    host_label       TEXT NOT NULL,              -- which workspaces it can run ([store] host_label)
    hostname         TEXT NOT NULL,
    pid              BIGINT NOT NULL,
    lock_backend_pid INTEGER NOT NULL,           -- pg_backend_pid() of its lock connection
    started_at       BIGINT NOT NULL,            -- unix ms
    -- The database's clock, never the daemons': they may disagree, the database is one.
    heartbeat_at     TIMESTAMPTZ NOT NULL DEFAULT now()
);

CREATE TABLE agent_homes (
    agent_id   TEXT COLLATE "C" PRIMARY KEY NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    daemon_id  TEXT COLLATE "C" NOT NULL REFERENCES daemons(id) ON DELETE CASCADE,
    since      BIGINT NOT NULL                   -- unix ms
);
CREATE INDEX agent_homes_daemon ON agent_homes (daemon_id);

-- Every event a home daemon numbered, for the other daemons: they read what a notice
-- names, and replay from here what their own ring no longer (or never) held. Bounded:
-- the home prunes old rows. No foreign key: an agent's last event (`agentDeleted`)
-- comes after its row is gone.
CREATE TABLE events (
    agent_id   TEXT COLLATE "C" NOT NULL,
    seq        BIGINT NOT NULL,
    event      TEXT NOT NULL,                   -- the event's JSON as sent to clients
    at         BIGINT NOT NULL,                 -- unix ms
    PRIMARY KEY (agent_id, seq)
);
CREATE INDEX events_at ON events (at);

-- Requests and answers between daemons too large for a notice: stored here, the notice
-- names the row, the receiver takes (deletes) it.
CREATE TABLE cluster_bodies (
    id         TEXT COLLATE "C" PRIMARY KEY NOT NULL,
    body       TEXT NOT NULL,
    created_at BIGINT NOT NULL
);

-- The host an agent with a workspace belongs to (SQLite's 0011): only daemons of that
-- label run it. NULL for an agent with no folder: any daemon runs it.
ALTER TABLE agents ADD COLUMN host_label TEXT;
