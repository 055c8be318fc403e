-- The jobs list filtered by state reads in index order for every sort, within a
-- project (a member's list is always within their projects) and alone (an admin's).
-- Without these a state within a project sorted by name walks the project's name
-- index and skips the other states' jobs (13 rows read per row shown at 100,000
-- jobs), and a state alone sorted by name reads every job of the state and sorts
-- them on SQLite. Several states are read as one keyset query per state, merged.
-- The cost: a state change writes these five entries anew (BenchmarkTransitionJob).
CREATE INDEX jobs_project_state_submitted ON jobs (project_id, state, submitted_at, id);
CREATE INDEX jobs_project_state_name ON jobs (project_id, state, name, id);
CREATE INDEX jobs_project_state_gpus ON jobs (project_id, state, gpus, id);
CREATE INDEX jobs_state_name ON jobs (state, name, id);
CREATE INDEX jobs_state_gpus ON jobs (state, gpus, id);
