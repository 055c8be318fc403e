-- The output of jobs submitted before migration 0020 was stored with their secret values
-- in clear: before 0019 none of their values was kept apart, and before 0020 a value
-- split between two chunks was not masked. Their values are known now (0019, and 0021
-- for the oldest), so the leader masks the output of each job listed here
-- (dispatch.MaskOldLogs), a batch of chunks a transaction, and takes it off the list.
-- swept_at: when it was masked while an attempt still ran; it is masked again, and
-- taken off, once none runs.
CREATE TABLE job_logs_unmasked (
    job_id BIGINT PRIMARY KEY REFERENCES jobs (id) ON DELETE CASCADE,
    swept_at {{ts}}
);
INSERT INTO job_logs_unmasked (job_id)
SELECT j.id FROM jobs j
WHERE j.created_at < (SELECT applied_at FROM schema_migrations WHERE version = 20)
    AND EXISTS (SELECT 1 FROM job_secret_env s WHERE s.job_id = j.id)
    AND EXISTS (SELECT 1 FROM job_log_chunks c WHERE c.job_id = j.id);
