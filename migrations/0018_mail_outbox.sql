-- mail_outbox holds e-mails to people (the author of a feedback item about its answer),
-- queued in the change's transaction and sent by the leader with the alerts' retries and
-- back-off, so that a slow or unreachable mail server never holds up a request.
CREATE TABLE mail_outbox (
    id {{pk}},
    to_address TEXT NOT NULL,
    subject TEXT NOT NULL,
    body TEXT NOT NULL,
    link TEXT NOT NULL DEFAULT '',
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at {{ts}} NOT NULL,
    last_error TEXT NOT NULL DEFAULT '',
    sent_at {{ts}},
    created_at {{ts}} NOT NULL
);
CREATE INDEX mail_outbox_due ON mail_outbox (state, next_attempt_at);
CREATE INDEX mail_outbox_link ON mail_outbox (link);
