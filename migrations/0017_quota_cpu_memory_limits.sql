-- CPU and memory quotas borrow and lend in their cohort like GPUs: a borrowing limit
-- (NULL: no limit) and a lending limit (NULL: all that is unused) for each.
ALTER TABLE quotas ADD COLUMN cpu_borrowing_limit_milli BIGINT;
ALTER TABLE quotas ADD COLUMN cpu_lending_limit_milli BIGINT;
ALTER TABLE quotas ADD COLUMN memory_borrowing_limit_mib BIGINT;
ALTER TABLE quotas ADD COLUMN memory_lending_limit_mib BIGINT;
