-- Jobs on Slurm pools' partitions that Gantry did not submit, as the last poll saw them:
-- shown read-only, counted in utilisation, and kept out of what the scheduler sees free.
CREATE TABLE slurm_foreign_jobs (
    id {{pk}},
    pool_id BIGINT NOT NULL REFERENCES node_pools (id),
    slurm_job_id TEXT NOT NULL,
    name TEXT NOT NULL DEFAULT '',
    user_name TEXT NOT NULL DEFAULT '',
    account TEXT NOT NULL DEFAULT '',
    qos TEXT NOT NULL DEFAULT '',
    state TEXT NOT NULL,
    reason TEXT NOT NULL DEFAULT '',
    nodes TEXT NOT NULL DEFAULT '[]',
    gpus INTEGER NOT NULL DEFAULT 0,
    gpu_model TEXT NOT NULL DEFAULT '',
    cpus INTEGER NOT NULL DEFAULT 0,
    memory_mib BIGINT NOT NULL DEFAULT 0,
    submitted_at {{ts}} NOT NULL,
    started_at {{ts}},
    time_limit_sec BIGINT NOT NULL DEFAULT 0,
    created_at {{ts}} NOT NULL,
    updated_at {{ts}} NOT NULL
);
CREATE UNIQUE INDEX slurm_foreign_jobs_job ON slurm_foreign_jobs (pool_id, slurm_job_id);
