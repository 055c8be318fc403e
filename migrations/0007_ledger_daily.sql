-- The ledger summed per UTC day and per owner, job, pool, GPU model, image and resource.
-- Metering adds to it in the same transaction as the entries it appends, so roll-ups over
-- a year read some hundred thousand rows instead of millions. Absent owners are 0, not
-- NULL, so that the key is unique and an upsert finds its row on both databases.
CREATE TABLE ledger_daily (
    id {{pk}},
    day {{ts}} NOT NULL,
    job_id BIGINT NOT NULL DEFAULT 0,
    user_id BIGINT NOT NULL DEFAULT 0,
    project_id BIGINT NOT NULL DEFAULT 0,
    team_id BIGINT NOT NULL DEFAULT 0,
    pool_id BIGINT NOT NULL DEFAULT 0,
    image_id BIGINT NOT NULL DEFAULT 0,
    gpu_model TEXT NOT NULL DEFAULT '',
    resource TEXT NOT NULL,
    quantity_milli BIGINT NOT NULL,
    amount_micros BIGINT NOT NULL
);
CREATE UNIQUE INDEX ledger_daily_key ON ledger_daily
    (day, job_id, user_id, project_id, team_id, pool_id, image_id, gpu_model, resource);
CREATE INDEX ledger_daily_team ON ledger_daily (team_id, day);
CREATE INDEX ledger_daily_project ON ledger_daily (project_id, day);
CREATE INDEX ledger_daily_user ON ledger_daily (user_id, day);
CREATE INDEX ledger_daily_job ON ledger_daily (job_id, day);
