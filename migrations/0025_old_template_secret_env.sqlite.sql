-- Templates saved before migration 0019 could keep a secret value in their spec's env,
-- where everyone in the project reads it; since 0019 a template refuses a secret. A
-- value written as a plain string under a name the secret rule matches (jobs.SecretName,
-- as in 0021) is one of those: a template saved since holds such a name only as
-- {"value": …, "secret": false}. The value is dropped and the name kept as a secret
-- left empty, as a job's spec shows its secrets (jobs.SpecOf), so the submit form
-- filled in from the template asks for it.
UPDATE job_templates
SET spec = json_set(spec, '$.env', json((
    SELECT json_group_object(e.key, CASE
        WHEN e.type = 'text' AND (upper(e.key) LIKE '%\_TOKEN' ESCAPE '\' OR upper(e.key) LIKE '%\_KEY' ESCAPE '\'
            OR upper(e.key) LIKE '%\_PASSWORD' ESCAPE '\' OR upper(e.key) LIKE '%SECRET%')
        THEN json('{"value":"","secret":true}') ELSE e.value END)
    FROM json_each(job_templates.spec, '$.env') e
)))
WHERE json_valid(spec) AND EXISTS (
    SELECT 1 FROM json_each(job_templates.spec, '$.env') e
    WHERE e.type = 'text' AND (upper(e.key) LIKE '%\_TOKEN' ESCAPE '\' OR upper(e.key) LIKE '%\_KEY' ESCAPE '\'
        OR upper(e.key) LIKE '%\_PASSWORD' ESCAPE '\' OR upper(e.key) LIKE '%SECRET%'));
