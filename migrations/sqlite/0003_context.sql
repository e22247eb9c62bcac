-- agentd store, version 3: context edge, summaries, answer variants.

-- The user's "clear context" mark: the id of the last message the model no longer sees
-- (NULL: no edge). Messages stay in the store and in listMessages.
ALTER TABLE agents ADD COLUMN context_edge TEXT;

-- Summaries the model wrote of earlier rounds. The newest one whose messages are still
-- visible replaces, for the model, every message up to and including through_message_id.
-- A later summary includes the one before it.
CREATE TABLE summaries (
    id                  INTEGER PRIMARY KEY,
    agent_id            TEXT NOT NULL REFERENCES agents(id) ON DELETE CASCADE,
    through_message_id  TEXT NOT NULL,
    text                TEXT NOT NULL,
    summarized_messages INTEGER NOT NULL,       -- messages it replaced (incl. an earlier summary's)
    before_tokens       INTEGER NOT NULL,       -- estimated request size before
    after_tokens        INTEGER NOT NULL,       -- and after
    created_at          INTEGER NOT NULL
);

CREATE INDEX summaries_agent ON summaries (agent_id, id);

-- regenerate: a new answer to the same user message. variant_of is the first answer's id
-- (NULL on the first answer); a superseded variant stays listed but is not sent to the model.
ALTER TABLE messages ADD COLUMN variant_of TEXT;
ALTER TABLE messages ADD COLUMN superseded INTEGER NOT NULL DEFAULT 0;
