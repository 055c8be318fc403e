-- Templates saved before migration 0019 could keep a secret value in their spec's env,
-- where everyone in the project reads it; since 0019 a template refuses a secret. A
-- value written as a plain string under a name the secret rule matches (jobs.SecretName,
-- as in 0021) is one of those: a template saved since holds such a name only as
-- {"value": …, "secret": false}. The value is dropped and the name kept as a secret
-- left empty, as a job's spec shows its secrets (jobs.SpecOf), so the submit form
-- filled in from the template asks for it.
UPDATE job_templates
SET spec = jsonb_set(spec::jsonb, '{env}', (
    SELECT jsonb_object_agg(e.key, CASE
        WHEN jsonb_typeof(e.value) = 'string' AND (upper(e.key) LIKE '%\_TOKEN' ESCAPE '\' OR upper(e.key) LIKE '%\_KEY' ESCAPE '\'
            OR upper(e.key) LIKE '%\_PASSWORD' ESCAPE '\' OR upper(e.key) LIKE '%SECRET%')
        THEN '{"value":"","secret":true}'::jsonb ELSE e.value END)
    FROM jsonb_each(job_templates.spec::jsonb -> 'env') e
))::text
WHERE jsonb_typeof(spec::jsonb -> 'env') = 'object' AND EXISTS (
    SELECT 1 FROM jsonb_each(job_templates.spec::jsonb -> 'env') e
    WHERE jsonb_typeof(e.value) = 'string' AND (upper(e.key) LIKE '%\_TOKEN' ESCAPE '\' OR upper(e.key) LIKE '%\_KEY' ESCAPE '\'
        OR upper(e.key) LIKE '%\_PASSWORD' ESCAPE '\' OR upper(e.key) LIKE '%SECRET%'));
