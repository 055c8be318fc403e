-- What the node's NVML said about confidential computing: on, off, or unknown (the driver
-- cannot tell). nodes.confidential follows NVML when it knows, and is an admin's flag when
-- it does not.
ALTER TABLE nodes ADD COLUMN cc_state TEXT NOT NULL DEFAULT '';
