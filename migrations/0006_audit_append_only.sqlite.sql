-- The audit log is append-only: the database itself refuses to change or remove an event.
CREATE TRIGGER audit_events_refuse_update BEFORE UPDATE ON audit_events
BEGIN
    SELECT RAISE(ABORT, 'audit_events is append-only: UPDATE refused');
END;

CREATE TRIGGER audit_events_refuse_delete BEFORE DELETE ON audit_events
BEGIN
    SELECT RAISE(ABORT, 'audit_events is append-only: DELETE refused');
END;

-- Failed logins are counted per account and per address over a recent window.
CREATE INDEX audit_events_action_at ON audit_events (action, at);
