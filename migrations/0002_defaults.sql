-- The default priority classes of DESIGN.md; admins edit them afterwards.
INSERT INTO priority_classes (name, weight, can_preempt, preemptible, checkpoint_grace_sec, max_run_time_sec, created_at, updated_at)
VALUES
    ('production', 1000, TRUE, FALSE, 300, 0, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP),
    ('research', 500, FALSE, TRUE, 120, 0, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP),
    ('test', 100, FALSE, TRUE, 30, 0, CURRENT_TIMESTAMP, CURRENT_TIMESTAMP);
