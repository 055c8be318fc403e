-- The Slurm batch jobs Gantry submitted for attempts of jobs on Slurm pools, with what
-- the follower last saw of each, so a restarted server follows, stops and charges them
-- exactly once.
CREATE TABLE slurm_jobs (
    id {{pk}},
    pool_id BIGINT NOT NULL REFERENCES node_pools (id),
    job_id BIGINT NOT NULL REFERENCES jobs (id),
    attempt INTEGER NOT NULL,
    current_attempt INTEGER NOT NULL,
    slurm_job_id TEXT NOT NULL,
    seen TEXT NOT NULL DEFAULT '',
    stop_reason TEXT NOT NULL DEFAULT '',
    signalled_at {{ts}},
    stdout_base BIGINT NOT NULL DEFAULT 0,
    stderr_base BIGINT NOT NULL DEFAULT 0,
    done BOOLEAN NOT NULL DEFAULT FALSE,
    logs_done BOOLEAN NOT NULL DEFAULT FALSE,
    created_at {{ts}} NOT NULL,
    updated_at {{ts}} NOT NULL
);
CREATE UNIQUE INDEX slurm_jobs_attempt ON slurm_jobs (job_id, attempt);
CREATE INDEX slurm_jobs_open ON slurm_jobs (pool_id, logs_done);
