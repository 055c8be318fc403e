-- Within one project (the usual view of a member), the jobs list sorted by name or
-- GPUs reads in index order from the project's own range. Without these the database
-- walks the whole name or GPU index and skips other projects' jobs: on 100,000 jobs a
-- filtered page took 50 ms instead of 1.
CREATE INDEX jobs_project_name ON jobs (project_id, name, id);
CREATE INDEX jobs_project_gpus ON jobs (project_id, gpus, id);
