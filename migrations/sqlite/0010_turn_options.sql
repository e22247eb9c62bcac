-- agentd store, version 10: the choices a sendMessage made for its turn alone (provider,
-- model, reasoning effort, output schema; JSON, on the answer, so every run of the turn
-- applies them, also after a restart), and the answer's final text parsed when it was
-- valid against the turn's output schema (JSON). NULL on answers without them.
ALTER TABLE messages ADD COLUMN turn TEXT;
ALTER TABLE messages ADD COLUMN structured_output TEXT;
