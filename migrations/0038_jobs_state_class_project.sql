-- The queue by priority class and team (the cluster page, /metrics) counts the queued
-- jobs by class and project: from this index alone, not from each job's row, which
-- took ~3 µs a queued job on SQLite (47 ms for 15,000).
CREATE INDEX jobs_state_class_project ON jobs (state, priority_class, project_id);
