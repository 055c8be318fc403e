-- The allocations that are not ended: what every scheduling pass (each second), lease
-- poll, heartbeat and view of the fleet reads. Ended ones are kept for metering and
-- history and outnumber them more every day; without these indexes each such read
-- scanned them all (at 1,000,000 allocations, 10,000 of them active, ~340 ms on SQLite
-- against ~40 through the first). By id for the reads of all of them, by node for a
-- node's and the counts by node. Queries must say `state <> 'ended'` literally for the
-- planners to use them (store.notEnded).
CREATE INDEX allocations_active ON allocations (id) WHERE state <> 'ended';
CREATE INDEX allocations_active_node ON allocations (node_id, state) WHERE state <> 'ended';
