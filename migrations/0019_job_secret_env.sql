-- Secret environment variables of jobs, apart from jobs.env (which anyone who reads the
-- job sees): the values reach the job's leases only.
CREATE TABLE job_secret_env (
    job_id BIGINT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (job_id, name)
);
