-- The host an agent with a workspace belongs to: its folder is on that machine, so with
-- several daemons on one store only daemons of that label run it ([store] host_label,
-- default the hostname of the daemon that created it). NULL for an agent with no folder.
ALTER TABLE agents ADD COLUMN host_label TEXT;
