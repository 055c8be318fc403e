-- Job tokens: each allocation (one replica of one attempt) gets a token when its lease
-- is first issued, for the job to report metrics and checkpoints with. Only its SHA-256
-- is kept; it holds while the allocation has not ended.
ALTER TABLE allocations ADD COLUMN job_token_hash TEXT NOT NULL DEFAULT '';
CREATE UNIQUE INDEX allocations_job_token ON allocations (job_token_hash) WHERE job_token_hash <> '';
-- When a stopping job said it saved its checkpoint: its agent need not wait out the grace.
ALTER TABLE allocations ADD COLUMN checkpoint_saved_at {{ts}};
