-- The end of a log stream that could begin a secret value of its job: stored masked in
-- job_log_chunks, kept here in clear (like job_secret_env) until the next chunk of the
-- stream says whether the value follows (it stays masked) or not (it is written back).
CREATE TABLE job_log_tails (
    job_id BIGINT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    attempt INTEGER NOT NULL,
    replica INTEGER NOT NULL,
    stream TEXT NOT NULL,
    "offset" BIGINT NOT NULL,
    data {{bytes}} NOT NULL,
    PRIMARY KEY (job_id, attempt, replica, stream)
);
