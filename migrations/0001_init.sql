-- The whole domain of DESIGN.md. Placeholders: {{pk}} {{ts}} {{bytes}} {{real}} are
-- replaced per dialect so that SQLite and PostgreSQL get the same schema.

CREATE TABLE users (
    id {{pk}},
    username TEXT NOT NULL,
    email TEXT NOT NULL DEFAULT '',
    display_name TEXT NOT NULL DEFAULT '',
    issuer TEXT NOT NULL DEFAULT '',
    subject TEXT NOT NULL DEFAULT '',
    password_hash TEXT NOT NULL DEFAULT '',
    is_admin BOOLEAN NOT NULL DEFAULT FALSE,
    is_auditor BOOLEAN NOT NULL DEFAULT FALSE,
    disabled BOOLEAN NOT NULL DEFAULT FALSE,
    last_login_at {{ts}},
    created_at {{ts}} NOT NULL,
    updated_at {{ts}} NOT NULL
);
CREATE UNIQUE INDEX users_username ON users (username);
CREATE INDEX users_identity ON users (issuer, subject);

CREATE TABLE teams (
    id {{pk}},
    name TEXT NOT NULL,
    display_name TEXT NOT NULL DEFAULT '',
    archived BOOLEAN NOT NULL DEFAULT FALSE,
    created_at {{ts}} NOT NULL,
    updated_at {{ts}} NOT NULL
);
CREATE UNIQUE INDEX teams_name ON teams (name);

CREATE TABLE projects (
    id {{pk}},
    team_id BIGINT NOT NULL REFERENCES teams (id),
    name TEXT NOT NULL,
    display_name TEXT NOT NULL DEFAULT '',
    archived BOOLEAN NOT NULL DEFAULT FALSE,
    allow_custom_images BOOLEAN NOT NULL DEFAULT FALSE,
    allowed_pools TEXT NOT NULL DEFAULT '',
    allowed_regions TEXT NOT NULL DEFAULT '',
    confidential_only BOOLEAN NOT NULL DEFAULT FALSE,
    default_image_id BIGINT,
    created_at {{ts}} NOT NULL,
    updated_at {{ts}} NOT NULL
);
CREATE UNIQUE INDEX projects_name ON projects (name);
CREATE INDEX projects_team ON projects (team_id);

CREATE TABLE memberships (
    id {{pk}},
    user_id BIGINT NOT NULL REFERENCES users (id),
    project_id BIGINT NOT NULL REFERENCES projects (id),
    role TEXT NOT NULL,
    created_at {{ts}} NOT NULL
);
CREATE UNIQUE INDEX memberships_user_project ON memberships (user_id, project_id);
CREATE INDEX memberships_project ON memberships (project_id);

CREATE TABLE group_mappings (
    id {{pk}},
    group_name TEXT NOT NULL,
    project_id BIGINT REFERENCES projects (id),
    role TEXT NOT NULL,
    created_at {{ts}} NOT NULL
);
CREATE INDEX group_mappings_group ON group_mappings (group_name);

CREATE TABLE sessions (
    id TEXT PRIMARY KEY,
    user_id BIGINT NOT NULL REFERENCES users (id),
    csrf_token TEXT NOT NULL,
    ip TEXT NOT NULL DEFAULT '',
    user_agent TEXT NOT NULL DEFAULT '',
    created_at {{ts}} NOT NULL,
    last_seen_at {{ts}} NOT NULL,
    expires_at {{ts}} NOT NULL
);
CREATE INDEX sessions_user ON sessions (user_id);
CREATE INDEX sessions_expires ON sessions (expires_at);

CREATE TABLE api_tokens (
    id {{pk}},
    user_id BIGINT NOT NULL REFERENCES users (id),
    name TEXT NOT NULL,
    prefix TEXT NOT NULL,
    hash TEXT NOT NULL,
    scope TEXT NOT NULL,
    expires_at {{ts}},
    last_used_at {{ts}},
    revoked_at {{ts}},
    created_at {{ts}} NOT NULL
);
CREATE UNIQUE INDEX api_tokens_hash ON api_tokens (hash);
CREATE INDEX api_tokens_user ON api_tokens (user_id);

CREATE TABLE settings (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL,
    updated_at {{ts}} NOT NULL
);

CREATE TABLE node_pools (
    id {{pk}},
    name TEXT NOT NULL,
    provider TEXT NOT NULL,
    region TEXT NOT NULL DEFAULT '',
    zone TEXT NOT NULL DEFAULT '',
    capacity_type TEXT NOT NULL,
    spot_only BOOLEAN NOT NULL DEFAULT FALSE,
    min_nodes INTEGER NOT NULL DEFAULT 0,
    max_nodes INTEGER NOT NULL DEFAULT 0,
    template TEXT NOT NULL DEFAULT '',
    provider_config TEXT NOT NULL DEFAULT '',
    created_at {{ts}} NOT NULL,
    updated_at {{ts}} NOT NULL
);
CREATE UNIQUE INDEX node_pools_name ON node_pools (name);

CREATE TABLE nodes (
    id {{pk}},
    name TEXT NOT NULL,
    pool_id BIGINT REFERENCES node_pools (id),
    state TEXT NOT NULL,
    state_reason TEXT NOT NULL DEFAULT '',
    drain_deadline {{ts}},
    labels TEXT NOT NULL DEFAULT '',
    cpu_milli BIGINT NOT NULL DEFAULT 0,
    memory_mib BIGINT NOT NULL DEFAULT 0,
    scratch_mib BIGINT NOT NULL DEFAULT 0,
    driver_version TEXT NOT NULL DEFAULT '',
    cuda_version TEXT NOT NULL DEFAULT '',
    runtime TEXT NOT NULL DEFAULT '',
    simulated BOOLEAN NOT NULL DEFAULT FALSE,
    confidential BOOLEAN NOT NULL DEFAULT FALSE,
    agent_version TEXT NOT NULL DEFAULT '',
    credential_hash TEXT NOT NULL DEFAULT '',
    last_heartbeat_at {{ts}},
    created_at {{ts}} NOT NULL,
    updated_at {{ts}} NOT NULL
);
CREATE UNIQUE INDEX nodes_name ON nodes (name);
CREATE INDEX nodes_pool ON nodes (pool_id);
CREATE INDEX nodes_credential ON nodes (credential_hash);

CREATE TABLE gpu_devices (
    id {{pk}},
    node_id BIGINT NOT NULL REFERENCES nodes (id),
    idx INTEGER NOT NULL,
    uuid TEXT NOT NULL,
    model TEXT NOT NULL,
    memory_mib BIGINT NOT NULL,
    mig_enabled BOOLEAN NOT NULL DEFAULT FALSE,
    nvlink_peers TEXT NOT NULL DEFAULT '',
    pci_bus_id TEXT NOT NULL DEFAULT '',
    healthy BOOLEAN NOT NULL DEFAULT TRUE,
    health_reason TEXT NOT NULL DEFAULT '',
    created_at {{ts}} NOT NULL,
    updated_at {{ts}} NOT NULL
);
CREATE UNIQUE INDEX gpu_devices_uuid ON gpu_devices (uuid);
CREATE UNIQUE INDEX gpu_devices_node_idx ON gpu_devices (node_id, idx);

CREATE TABLE gpu_slices (
    id {{pk}},
    device_id BIGINT NOT NULL REFERENCES gpu_devices (id),
    uuid TEXT NOT NULL,
    profile TEXT NOT NULL,
    memory_mib BIGINT NOT NULL,
    compute_slices INTEGER NOT NULL,
    created_at {{ts}} NOT NULL
);
CREATE UNIQUE INDEX gpu_slices_uuid ON gpu_slices (uuid);
CREATE INDEX gpu_slices_device ON gpu_slices (device_id);

CREATE TABLE join_tokens (
    id {{pk}},
    name TEXT NOT NULL,
    hash TEXT NOT NULL,
    pool_id BIGINT REFERENCES node_pools (id),
    reusable BOOLEAN NOT NULL DEFAULT FALSE,
    expires_at {{ts}} NOT NULL,
    used_at {{ts}},
    revoked_at {{ts}},
    created_by_id BIGINT REFERENCES users (id),
    created_at {{ts}} NOT NULL
);
CREATE UNIQUE INDEX join_tokens_hash ON join_tokens (hash);

CREATE TABLE images (
    id {{pk}},
    name TEXT NOT NULL,
    reference TEXT NOT NULL,
    digest TEXT NOT NULL DEFAULT '',
    framework TEXT NOT NULL DEFAULT '',
    framework_version TEXT NOT NULL DEFAULT '',
    cuda_version TEXT NOT NULL DEFAULT '',
    min_driver TEXT NOT NULL DEFAULT '',
    python_version TEXT NOT NULL DEFAULT '',
    size_mib BIGINT NOT NULL DEFAULT 0,
    status TEXT NOT NULL,
    pre_pull BOOLEAN NOT NULL DEFAULT FALSE,
    builtin BOOLEAN NOT NULL DEFAULT FALSE,
    description TEXT NOT NULL DEFAULT '',
    created_at {{ts}} NOT NULL,
    updated_at {{ts}} NOT NULL
);
CREATE UNIQUE INDEX images_name ON images (name);

CREATE TABLE node_images (
    id {{pk}},
    node_id BIGINT NOT NULL REFERENCES nodes (id),
    image_id BIGINT NOT NULL REFERENCES images (id),
    pulled_at {{ts}} NOT NULL
);
CREATE UNIQUE INDEX node_images_node_image ON node_images (node_id, image_id);

CREATE TABLE priority_classes (
    id {{pk}},
    name TEXT NOT NULL,
    weight INTEGER NOT NULL,
    can_preempt BOOLEAN NOT NULL DEFAULT FALSE,
    preemptible BOOLEAN NOT NULL DEFAULT FALSE,
    checkpoint_grace_sec INTEGER NOT NULL DEFAULT 0,
    max_run_time_sec BIGINT NOT NULL DEFAULT 0,
    created_at {{ts}} NOT NULL,
    updated_at {{ts}} NOT NULL
);
CREATE UNIQUE INDEX priority_classes_name ON priority_classes (name);

CREATE TABLE quotas (
    id {{pk}},
    team_id BIGINT NOT NULL REFERENCES teams (id),
    gpu_model TEXT NOT NULL DEFAULT '',
    cohort TEXT NOT NULL DEFAULT '',
    nominal_milli BIGINT NOT NULL DEFAULT 0,
    borrowing_limit_milli BIGINT,
    lending_limit_milli BIGINT,
    cpu_milli BIGINT NOT NULL DEFAULT 0,
    memory_mib BIGINT NOT NULL DEFAULT 0,
    created_at {{ts}} NOT NULL,
    updated_at {{ts}} NOT NULL
);
CREATE UNIQUE INDEX quotas_team_model ON quotas (team_id, gpu_model);

CREATE TABLE jobs (
    id {{pk}},
    name TEXT NOT NULL,
    project_id BIGINT NOT NULL REFERENCES projects (id),
    user_id BIGINT NOT NULL REFERENCES users (id),
    image_id BIGINT REFERENCES images (id),
    image_ref TEXT NOT NULL DEFAULT '',
    command TEXT NOT NULL,
    env TEXT NOT NULL DEFAULT '',
    gpus INTEGER NOT NULL DEFAULT 0,
    gpu_milli INTEGER NOT NULL DEFAULT 0,
    gpu_memory_mib BIGINT NOT NULL DEFAULT 0,
    gpu_model TEXT NOT NULL DEFAULT '',
    mig_profile TEXT NOT NULL DEFAULT '',
    cpu_milli BIGINT NOT NULL DEFAULT 0,
    memory_mib BIGINT NOT NULL DEFAULT 0,
    scratch_mib BIGINT NOT NULL DEFAULT 0,
    replicas INTEGER NOT NULL DEFAULT 1,
    kind TEXT NOT NULL DEFAULT '',
    priority_class TEXT NOT NULL,
    preemptible BOOLEAN NOT NULL DEFAULT FALSE,
    spot BOOLEAN NOT NULL DEFAULT FALSE,
    expected_run_sec BIGINT NOT NULL DEFAULT 0,
    max_retries INTEGER NOT NULL DEFAULT 0,
    attempt INTEGER NOT NULL DEFAULT 0,
    state TEXT NOT NULL,
    state_reason TEXT NOT NULL DEFAULT '',
    pending_reason TEXT NOT NULL DEFAULT '',
    exit_code INTEGER,
    last_checkpoint_at {{ts}},
    submitted_at {{ts}} NOT NULL,
    started_at {{ts}},
    finished_at {{ts}},
    created_at {{ts}} NOT NULL,
    updated_at {{ts}} NOT NULL
);
CREATE INDEX jobs_state_id ON jobs (state, id);
CREATE INDEX jobs_project_id ON jobs (project_id, id);
CREATE INDEX jobs_user_id ON jobs (user_id, id);

CREATE TABLE allocations (
    id {{pk}},
    job_id BIGINT NOT NULL REFERENCES jobs (id),
    attempt INTEGER NOT NULL,
    replica INTEGER NOT NULL DEFAULT 0,
    node_id BIGINT NOT NULL REFERENCES nodes (id),
    devices TEXT NOT NULL DEFAULT '',
    gpu_milli BIGINT NOT NULL DEFAULT 0,
    cpu_milli BIGINT NOT NULL DEFAULT 0,
    memory_mib BIGINT NOT NULL DEFAULT 0,
    scratch_mib BIGINT NOT NULL DEFAULT 0,
    state TEXT NOT NULL,
    stop_reason TEXT NOT NULL DEFAULT '',
    exit_code INTEGER,
    started_at {{ts}},
    ended_at {{ts}},
    created_at {{ts}} NOT NULL,
    updated_at {{ts}} NOT NULL
);
CREATE UNIQUE INDEX allocations_job_attempt_replica ON allocations (job_id, attempt, replica);
CREATE INDEX allocations_node_state ON allocations (node_id, state);
CREATE INDEX allocations_state ON allocations (state);

CREATE TABLE job_events (
    id {{pk}},
    job_id BIGINT NOT NULL REFERENCES jobs (id),
    attempt INTEGER NOT NULL DEFAULT 0,
    from_state TEXT NOT NULL DEFAULT '',
    to_state TEXT NOT NULL,
    reason TEXT NOT NULL DEFAULT '',
    message TEXT NOT NULL DEFAULT '',
    actor TEXT NOT NULL DEFAULT '',
    created_at {{ts}} NOT NULL
);
CREATE INDEX job_events_job ON job_events (job_id, id);

CREATE TABLE job_log_chunks (
    id {{pk}},
    job_id BIGINT NOT NULL REFERENCES jobs (id),
    attempt INTEGER NOT NULL,
    replica INTEGER NOT NULL DEFAULT 0,
    stream TEXT NOT NULL,
    "offset" BIGINT NOT NULL,
    data {{bytes}} NOT NULL,
    created_at {{ts}} NOT NULL
);
CREATE UNIQUE INDEX job_log_chunks_position ON job_log_chunks (job_id, attempt, replica, stream, "offset");

CREATE TABLE job_metrics (
    id {{pk}},
    job_id BIGINT NOT NULL REFERENCES jobs (id),
    attempt INTEGER NOT NULL DEFAULT 0,
    step BIGINT NOT NULL DEFAULT 0,
    name TEXT NOT NULL,
    value {{real}} NOT NULL,
    at {{ts}} NOT NULL
);
CREATE INDEX job_metrics_job_name ON job_metrics (job_id, name, step);

CREATE TABLE job_templates (
    id {{pk}},
    project_id BIGINT NOT NULL REFERENCES projects (id),
    name TEXT NOT NULL,
    spec TEXT NOT NULL,
    created_by_id BIGINT NOT NULL REFERENCES users (id),
    created_at {{ts}} NOT NULL
);
CREATE UNIQUE INDEX job_templates_project_name ON job_templates (project_id, name);

CREATE TABLE cost_rates (
    id {{pk}},
    resource TEXT NOT NULL,
    gpu_model TEXT NOT NULL DEFAULT '',
    pool_id BIGINT REFERENCES node_pools (id),
    capacity_type TEXT NOT NULL DEFAULT '',
    image_id BIGINT REFERENCES images (id),
    unit TEXT NOT NULL,
    rate_micros BIGINT NOT NULL,
    effective_from {{ts}} NOT NULL,
    created_at {{ts}} NOT NULL
);
CREATE INDEX cost_rates_lookup ON cost_rates (resource, gpu_model, effective_from);

CREATE TABLE ledger_entries (
    id {{pk}},
    job_id BIGINT REFERENCES jobs (id),
    attempt INTEGER NOT NULL DEFAULT 0,
    allocation_id BIGINT REFERENCES allocations (id),
    user_id BIGINT REFERENCES users (id),
    project_id BIGINT REFERENCES projects (id),
    team_id BIGINT REFERENCES teams (id),
    pool_id BIGINT REFERENCES node_pools (id),
    node_id BIGINT REFERENCES nodes (id),
    gpu_model TEXT NOT NULL DEFAULT '',
    resource TEXT NOT NULL,
    quantity_milli BIGINT NOT NULL,
    rate_micros BIGINT NOT NULL,
    amount_micros BIGINT NOT NULL,
    period_start {{ts}} NOT NULL,
    period_end {{ts}} NOT NULL,
    created_at {{ts}} NOT NULL
);
CREATE INDEX ledger_entries_period ON ledger_entries (period_start);
CREATE INDEX ledger_entries_team_period ON ledger_entries (team_id, period_start);
CREATE INDEX ledger_entries_project_period ON ledger_entries (project_id, period_start);
CREATE INDEX ledger_entries_job ON ledger_entries (job_id);

CREATE TABLE budgets (
    id {{pk}},
    team_id BIGINT REFERENCES teams (id),
    project_id BIGINT REFERENCES projects (id),
    amount_micros BIGINT NOT NULL,
    thresholds TEXT NOT NULL DEFAULT '',
    created_at {{ts}} NOT NULL,
    updated_at {{ts}} NOT NULL
);

CREATE TABLE alert_rules (
    id {{pk}},
    name TEXT NOT NULL,
    metric TEXT NOT NULL,
    scope TEXT NOT NULL,
    threshold {{real}} NOT NULL,
    window_sec BIGINT NOT NULL,
    action TEXT NOT NULL,
    dry_run BOOLEAN NOT NULL DEFAULT FALSE,
    enabled BOOLEAN NOT NULL DEFAULT TRUE,
    channels TEXT NOT NULL DEFAULT '',
    created_at {{ts}} NOT NULL,
    updated_at {{ts}} NOT NULL
);
CREATE UNIQUE INDEX alert_rules_name ON alert_rules (name);

CREATE TABLE alerts (
    id {{pk}},
    rule_id BIGINT NOT NULL REFERENCES alert_rules (id),
    scope TEXT NOT NULL,
    scope_id BIGINT NOT NULL,
    state TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    evidence TEXT NOT NULL DEFAULT '',
    action_taken TEXT NOT NULL DEFAULT '',
    fired_at {{ts}} NOT NULL,
    acked_by_id BIGINT REFERENCES users (id),
    acked_at {{ts}},
    silenced_until {{ts}},
    resolved_at {{ts}}
);
CREATE UNIQUE INDEX alerts_fingerprint ON alerts (fingerprint);
CREATE INDEX alerts_state ON alerts (state, fired_at);

CREATE TABLE notification_channels (
    id {{pk}},
    name TEXT NOT NULL,
    kind TEXT NOT NULL,
    target TEXT NOT NULL,
    enabled BOOLEAN NOT NULL DEFAULT TRUE,
    created_at {{ts}} NOT NULL
);
CREATE UNIQUE INDEX notification_channels_name ON notification_channels (name);

CREATE TABLE audit_events (
    id {{pk}},
    at {{ts}} NOT NULL,
    actor TEXT NOT NULL,
    actor_type TEXT NOT NULL,
    action TEXT NOT NULL,
    object_type TEXT NOT NULL DEFAULT '',
    object_id TEXT NOT NULL DEFAULT '',
    project_id BIGINT,
    detail TEXT NOT NULL DEFAULT '',
    source_ip TEXT NOT NULL DEFAULT '',
    request_id TEXT NOT NULL DEFAULT '',
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL
);
CREATE INDEX audit_events_at ON audit_events (at);
CREATE INDEX audit_events_actor ON audit_events (actor, id);
CREATE INDEX audit_events_action ON audit_events (action, id);
CREATE INDEX audit_events_project ON audit_events (project_id, id);

CREATE TABLE feedback_items (
    id {{pk}},
    user_id BIGINT NOT NULL REFERENCES users (id),
    category TEXT NOT NULL,
    title TEXT NOT NULL,
    body TEXT NOT NULL DEFAULT '',
    page TEXT NOT NULL DEFAULT '',
    job_id BIGINT REFERENCES jobs (id),
    status TEXT NOT NULL,
    answer TEXT NOT NULL DEFAULT '',
    answered_by_id BIGINT REFERENCES users (id),
    answered_at {{ts}},
    vote_count INTEGER NOT NULL DEFAULT 0,
    created_at {{ts}} NOT NULL,
    updated_at {{ts}} NOT NULL
);
CREATE INDEX feedback_items_status ON feedback_items (status, id);

CREATE TABLE feedback_votes (
    id {{pk}},
    item_id BIGINT NOT NULL REFERENCES feedback_items (id),
    user_id BIGINT NOT NULL REFERENCES users (id),
    created_at {{ts}} NOT NULL
);
CREATE UNIQUE INDEX feedback_votes_item_user ON feedback_votes (item_id, user_id);

CREATE TABLE feedback_comments (
    id {{pk}},
    item_id BIGINT NOT NULL REFERENCES feedback_items (id),
    user_id BIGINT NOT NULL REFERENCES users (id),
    body TEXT NOT NULL,
    created_at {{ts}} NOT NULL
);
CREATE INDEX feedback_comments_item ON feedback_comments (item_id, id);

CREATE TABLE notifications (
    id {{pk}},
    user_id BIGINT NOT NULL REFERENCES users (id),
    kind TEXT NOT NULL,
    title TEXT NOT NULL,
    body TEXT NOT NULL DEFAULT '',
    link TEXT NOT NULL DEFAULT '',
    read_at {{ts}},
    created_at {{ts}} NOT NULL
);
CREATE INDEX notifications_user ON notifications (user_id, id);

CREATE TABLE telemetry_samples (
    id {{pk}},
    node_id BIGINT NOT NULL REFERENCES nodes (id),
    device_uuid TEXT NOT NULL,
    job_id BIGINT REFERENCES jobs (id),
    at {{ts}} NOT NULL,
    resolution TEXT NOT NULL,
    util_pct {{real}} NOT NULL DEFAULT 0,
    util_min_pct {{real}} NOT NULL DEFAULT 0,
    util_max_pct {{real}} NOT NULL DEFAULT 0,
    mem_used_mib BIGINT NOT NULL DEFAULT 0,
    mem_max_mib BIGINT NOT NULL DEFAULT 0,
    temp_c {{real}} NOT NULL DEFAULT 0,
    power_w {{real}} NOT NULL DEFAULT 0,
    sm_clock_mhz BIGINT NOT NULL DEFAULT 0,
    nvlink_mbps {{real}} NOT NULL DEFAULT 0,
    pcie_mbps {{real}} NOT NULL DEFAULT 0,
    ecc_errors BIGINT NOT NULL DEFAULT 0,
    xid_count BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX telemetry_samples_device ON telemetry_samples (device_uuid, resolution, at);
CREATE INDEX telemetry_samples_job ON telemetry_samples (job_id, at);
CREATE INDEX telemetry_samples_res_at ON telemetry_samples (resolution, at);

CREATE TABLE casbin_rule (
    id {{pk}},
    ptype VARCHAR(100) NOT NULL DEFAULT '',
    v0 VARCHAR(100) NOT NULL DEFAULT '',
    v1 VARCHAR(100) NOT NULL DEFAULT '',
    v2 VARCHAR(100) NOT NULL DEFAULT '',
    v3 VARCHAR(100) NOT NULL DEFAULT '',
    v4 VARCHAR(100) NOT NULL DEFAULT '',
    v5 VARCHAR(100) NOT NULL DEFAULT ''
);
CREATE UNIQUE INDEX idx_casbin_rule ON casbin_rule (ptype, v0, v1, v2, v3, v4, v5);
