-- The Idempotency-Key of a job submission (POST /api/v1/jobs) and the job it queued, so
-- that the same request sent again (a client's retry after an answer it lost) gets that
-- job instead of queuing another. Kept a day (jobs.SubmitKeyTTL); body_hash (SHA-256 of
-- the request's body) tells a key used again for another job.
CREATE TABLE job_submit_keys (
    user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    idempotency_key TEXT NOT NULL,
    body_hash TEXT NOT NULL,
    job_id BIGINT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    created_at {{ts}} NOT NULL,
    PRIMARY KEY (user_id, idempotency_key)
);
CREATE INDEX job_submit_keys_created ON job_submit_keys (created_at);
