-- When an admin removed the node, taking it out of service for good. Its row stays for
-- the allocations, costs and telemetry that name it; node lists hide it unless asked.
-- Joining again with a new join token clears it.
ALTER TABLE nodes ADD COLUMN removed_at {{ts}};
