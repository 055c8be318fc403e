-- Cost and governance. Ledger entries carry the job's image so that roll-ups by image need
-- no join; indexes serve per-allocation metering watermarks and roll-ups by user; a rate
-- key may have one rate per effective date (NULL pool or image count as one key, hence
-- COALESCE); alert_deliveries is the outbox of notifications, retried with back-off so that
-- an unreachable webhook or SMTP server never blocks metering; default anomaly rules.
ALTER TABLE ledger_entries ADD COLUMN image_id BIGINT REFERENCES images (id);
CREATE INDEX ledger_entries_allocation ON ledger_entries (allocation_id, period_end);
CREATE INDEX ledger_entries_user_period ON ledger_entries (user_id, period_start);
CREATE INDEX allocations_ended ON allocations (ended_at);
CREATE UNIQUE INDEX cost_rates_key ON cost_rates
    (resource, gpu_model, COALESCE(pool_id, 0), capacity_type, COALESCE(image_id, 0), effective_from);

CREATE TABLE alert_deliveries (
    id {{pk}},
    alert_id BIGINT NOT NULL REFERENCES alerts (id),
    channel_id BIGINT NOT NULL REFERENCES notification_channels (id),
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at {{ts}} NOT NULL,
    last_error TEXT NOT NULL DEFAULT '',
    sent_at {{ts}},
    created_at {{ts}} NOT NULL
);
CREATE UNIQUE INDEX alert_deliveries_alert_channel ON alert_deliveries (alert_id, channel_id);
CREATE INDEX alert_deliveries_due ON alert_deliveries (state, next_attempt_at);

INSERT INTO alert_rules (name, metric, scope, threshold, window_sec, action, dry_run, enabled, channels, created_at, updated_at)
VALUES
    ('team-cost-spike', 'team_cost_ratio', 'team', 200, 604800, 'notify', FALSE, TRUE, '', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP),
    ('project-gpu-idle', 'project_gpu_idle_rate', 'project', 40, 604800, 'notify', FALSE, TRUE, '', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP),
    ('job-gpu-idle', 'job_idle_minutes', 'job', 60, 0, 'notify', FALSE, TRUE, '', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP),
    ('budget-threshold', 'budget_threshold', 'budget', 0, 0, 'notify', FALSE, TRUE, '', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP),
    ('budget-forecast', 'budget_forecast', 'budget', 100, 604800, 'notify', FALSE, TRUE, '', CURRENT_TIMESTAMP, CURRENT_TIMESTAMP);
