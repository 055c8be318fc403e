-- How many retries a job has used: an attempt that failed or whose node was lost
-- requeues the job only while retries < max_retries. Preemption and drains do not count.
ALTER TABLE jobs ADD COLUMN retries INTEGER NOT NULL DEFAULT 0;
