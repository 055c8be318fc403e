-- The jobs list (page and GET /api/v1/jobs) sorts by submission time, name or GPU
-- count and pages by keyset on (key, id). Each filter it offers has an index that
-- leads with the filter's column and continues in sort order, so a page reads about
-- one page of rows however many jobs there are.
CREATE INDEX jobs_submitted ON jobs (submitted_at, id);
CREATE INDEX jobs_project_submitted ON jobs (project_id, submitted_at, id);
CREATE INDEX jobs_user_submitted ON jobs (user_id, submitted_at, id);
CREATE INDEX jobs_state_submitted ON jobs (state, submitted_at, id);
CREATE INDEX jobs_image_submitted ON jobs (image_id, submitted_at, id);
CREATE INDEX jobs_image_ref_submitted ON jobs (image_ref, submitted_at, id);
CREATE INDEX jobs_name ON jobs (name, id);
CREATE INDEX jobs_gpus ON jobs (gpus, id);
