-- agentd store, version 7: the provider and model an answer was started with, for usage
-- and cost by model (getUsage). NULL on answers stored before (then the agent's own).
ALTER TABLE messages ADD COLUMN provider TEXT;
ALTER TABLE messages ADD COLUMN model TEXT;
