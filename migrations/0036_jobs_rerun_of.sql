-- The job a job re-ran (POST /jobs/:id/rerun), so that its page, the API and the CLI
-- say so whenever they show it; NULL for a job submitted afresh (the form, a clone,
-- the API). Jobs written before this migration have none.
ALTER TABLE jobs ADD COLUMN rerun_of BIGINT REFERENCES jobs (id) ON DELETE SET NULL;
