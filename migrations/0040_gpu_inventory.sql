-- A number that every change of the fleet's GPUs and MIG instances raises in its own
-- transaction (store.ReplaceNodeDevices): a scheduling pass keeps the GPUs it read and
-- reads them again only when the number moved (dispatch's inventory cache).
CREATE TABLE gpu_inventory (
    id INTEGER PRIMARY KEY,
    version BIGINT NOT NULL
);
INSERT INTO gpu_inventory (id, version) VALUES (1, 0);
