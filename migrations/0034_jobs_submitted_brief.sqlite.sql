-- The portal's jobs page (newest first, no filter: the page most read) found its jobs in
-- jobs_submitted and then read each job's row for what it shows. This index holds, after
-- the same key (submitted_at, id), every column that page reads (store.BriefJobColumns)
-- and the project and user it joins, so SQLite answers the page from the index alone
-- (USING COVERING INDEX; about 5% of the page's CPU at 100,000 jobs), and every query
-- that read jobs_submitted reads this one in the same order. The cost: about five times
-- the size (18 MB against 3.5 at 100,000 jobs), and as it holds the state, a state change
-- writes its entry anew (BenchmarkTransitionJob). docs/jobs-list-benchmark.md has the figures.
CREATE INDEX jobs_submitted_brief ON jobs (submitted_at, id, project_id, user_id, name, image_id, image_ref,
    gpus, gpu_milli, gpu_model, mig_profile, state, state_reason);
DROP INDEX jobs_submitted;
