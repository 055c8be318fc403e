-- The job a job re-ran (the portal's Re-run, POST /api/v1/jobs/:id/rerun), so that its
-- page, the API and the CLI say so whenever they show it; NULL for a job submitted
-- afresh (the form, a clone, POST /api/v1/jobs). Jobs written before this migration
-- have none.
ALTER TABLE jobs ADD COLUMN rerun_of BIGINT REFERENCES jobs (id) ON DELETE SET NULL;
