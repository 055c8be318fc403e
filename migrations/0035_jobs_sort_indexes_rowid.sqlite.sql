-- A next page of the jobs list sorted by name or GPUs continues after (key, id) of the
-- last job: "(name, id) < (?, ?)". SQLite 3.53 bounds an index range by both columns of
-- such a row value only when the id is the index's implicit rowid, the column every
-- index of a rowid table ends with (and the comparison has a collation: the store writes
-- "? COLLATE BINARY"); an index that names id bounds the range by the key alone, so a page
-- walked every job that shares the cursor's key and a larger id before its own: by GPUs,
-- 8,941 index entries for a page of 51, 20,000 jobs deep into 100,000. These indexes are
-- those of migrations 0009, 0013 and 0027-0029 in the same order, with the rowid
-- implicit instead of named (about 2 s at 100,000 jobs). The submission-time indexes
-- keep theirs: jobs are stamped to the nanosecond, so their keys seldom tie, and
-- jobs_submitted_brief (0034) must name id before the columns it covers.
-- docs/jobs-list-benchmark.md has the figures.
DROP INDEX jobs_name;
CREATE INDEX jobs_name ON jobs (name);
DROP INDEX jobs_gpus;
CREATE INDEX jobs_gpus ON jobs (gpus);
DROP INDEX jobs_project_name;
CREATE INDEX jobs_project_name ON jobs (project_id, name);
DROP INDEX jobs_project_gpus;
CREATE INDEX jobs_project_gpus ON jobs (project_id, gpus);
DROP INDEX jobs_project_state_name;
CREATE INDEX jobs_project_state_name ON jobs (project_id, state, name);
DROP INDEX jobs_project_state_gpus;
CREATE INDEX jobs_project_state_gpus ON jobs (project_id, state, gpus);
DROP INDEX jobs_state_name;
CREATE INDEX jobs_state_name ON jobs (state, name);
DROP INDEX jobs_state_gpus;
CREATE INDEX jobs_state_gpus ON jobs (state, gpus);
DROP INDEX jobs_user_name;
CREATE INDEX jobs_user_name ON jobs (user_id, name);
DROP INDEX jobs_user_gpus;
CREATE INDEX jobs_user_gpus ON jobs (user_id, gpus);
DROP INDEX jobs_image_name;
CREATE INDEX jobs_image_name ON jobs (image_id, name);
DROP INDEX jobs_image_gpus;
CREATE INDEX jobs_image_gpus ON jobs (image_id, gpus);
DROP INDEX jobs_image_ref_name;
CREATE INDEX jobs_image_ref_name ON jobs (image_ref, name);
DROP INDEX jobs_image_ref_gpus;
CREATE INDEX jobs_image_ref_gpus ON jobs (image_ref, gpus);
