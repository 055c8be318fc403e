-- A number of each node that every change of its GPUs and MIG instances raises in its
-- own transaction (store.CreateNode, store.ReplaceNodeDevices): their sum over the
-- nodes moves with any change of the fleet's GPUs, so a scheduling pass keeps the GPUs
-- it read and reads them again only when the sum moved (dispatch's inventory cache).
-- Per node, not one row for the fleet: a change locks only its node's row, which the
-- heartbeat that brings it writes anyway.
ALTER TABLE nodes ADD COLUMN gpu_generation BIGINT NOT NULL DEFAULT 0;
