-- One user's jobs list (a member's "Only mine", an admin's user filter) sorted by
-- name or GPUs reads the user's jobs in index order, the other filters checked on
-- the way. Without these it read every job of the user's projects in the sort's
-- order to find the user's (PostgreSQL: every job of the user and of each project,
-- then sorted). A job's user never changes: these cost a write per job submitted
-- (and on PostgreSQL per state change, as no update of a job's state is HOT).
CREATE INDEX jobs_user_name ON jobs (user_id, name, id);
CREATE INDEX jobs_user_gpus ON jobs (user_id, gpus, id);
