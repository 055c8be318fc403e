-- Jobs submitted before migration 0019 kept every variable in jobs.env, where anyone who
-- reads the job sees it. Their spec could not say whether a value is secret, so the rule
-- a submission applies to a spec that does not say decides (jobs.SecretName: a name
-- ending in _TOKEN, _KEY or _PASSWORD, or containing SECRET): those values move to
-- job_secret_env, as if the job were submitted now. Jobs submitted since keep a name like
-- that in jobs.env only when their submitter said it is not secret, and are left alone.
INSERT INTO job_secret_env (job_id, name, value)
SELECT j.id, e.key, e.value
FROM jobs j, json_each(CASE WHEN json_valid(j.env) THEN j.env ELSE '{}' END) e
WHERE j.created_at < (SELECT applied_at FROM schema_migrations WHERE version = 19)
    AND (upper(e.key) LIKE '%\_TOKEN' ESCAPE '\' OR upper(e.key) LIKE '%\_KEY' ESCAPE '\'
        OR upper(e.key) LIKE '%\_PASSWORD' ESCAPE '\' OR upper(e.key) LIKE '%SECRET%');

UPDATE jobs
SET env = (
    SELECT CASE WHEN COUNT(*) = 0 THEN '' ELSE json_group_object(e.key, e.value) END
    FROM json_each(jobs.env) e
    WHERE NOT EXISTS (SELECT 1 FROM job_secret_env s WHERE s.job_id = jobs.id AND s.name = e.key)
)
WHERE jobs.created_at < (SELECT applied_at FROM schema_migrations WHERE version = 19)
    AND EXISTS (SELECT 1 FROM job_secret_env s WHERE s.job_id = jobs.id);
