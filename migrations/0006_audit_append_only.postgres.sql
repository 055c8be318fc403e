-- The audit log is append-only: the database itself refuses to change or remove an event.
CREATE FUNCTION audit_events_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit_events is append-only: % refused', TG_OP;
END
$$;

CREATE TRIGGER audit_events_refuse_update_delete BEFORE UPDATE OR DELETE ON audit_events
    FOR EACH ROW EXECUTE FUNCTION audit_events_refuse_change();

CREATE TRIGGER audit_events_refuse_truncate BEFORE TRUNCATE ON audit_events
    FOR EACH STATEMENT EXECUTE FUNCTION audit_events_refuse_change();

-- Failed logins are counted per account and per address over a recent window.
CREATE INDEX audit_events_action_at ON audit_events (action, at);
