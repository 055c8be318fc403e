-- Jobs by when they ended: the output retention (serve --job-log-retention) reads, at each
-- pass, only the jobs that ended since the one before.
CREATE INDEX jobs_finished ON jobs (finished_at, id);
