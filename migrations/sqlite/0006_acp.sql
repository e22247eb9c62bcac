-- agentd store, version 6: agents answered by an external ACP agent (mode `acp`).

-- The external agent behind an agent of mode `acp`, as JSON (agent_proto::AcpBackend:
-- a config entry's name, or a command with its args and env). NULL for other modes.
ALTER TABLE agents ADD COLUMN acp TEXT;
