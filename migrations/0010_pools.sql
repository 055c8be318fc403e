-- Elastic pools: the scale-down policy of a pool, the instances Gantry asked its provider
-- for (so none leaks), the autoscaler's decisions and its samples of node count and demand.
ALTER TABLE node_pools ADD COLUMN idle_timeout_sec INTEGER NOT NULL DEFAULT 0;
ALTER TABLE node_pools ADD COLUMN drain_stops_jobs BOOLEAN NOT NULL DEFAULT FALSE;

CREATE TABLE pool_instances (
    id {{pk}},
    pool_id BIGINT NOT NULL REFERENCES node_pools (id),
    name TEXT NOT NULL,
    provider_id TEXT NOT NULL DEFAULT '',
    state TEXT NOT NULL,
    state_reason TEXT NOT NULL DEFAULT '',
    join_token_id BIGINT REFERENCES join_tokens (id),
    requested_at {{ts}} NOT NULL,
    joined_at {{ts}},
    deleted_at {{ts}},
    created_at {{ts}} NOT NULL,
    updated_at {{ts}} NOT NULL
);
CREATE UNIQUE INDEX pool_instances_name ON pool_instances (name);
CREATE INDEX pool_instances_pool_state ON pool_instances (pool_id, state);

CREATE TABLE pool_events (
    id {{pk}},
    pool_id BIGINT REFERENCES node_pools (id),
    at {{ts}} NOT NULL,
    kind TEXT NOT NULL,
    nodes INTEGER NOT NULL DEFAULT 0,
    reason TEXT NOT NULL,
    detail TEXT NOT NULL DEFAULT ''
);
CREATE INDEX pool_events_pool_at ON pool_events (pool_id, at);

CREATE TABLE pool_samples (
    id {{pk}},
    pool_id BIGINT NOT NULL REFERENCES node_pools (id),
    at {{ts}} NOT NULL,
    nodes INTEGER NOT NULL,
    booting INTEGER NOT NULL,
    pending_jobs INTEGER NOT NULL,
    pending_gpu_milli BIGINT NOT NULL
);
CREATE INDEX pool_samples_pool_at ON pool_samples (pool_id, at);
