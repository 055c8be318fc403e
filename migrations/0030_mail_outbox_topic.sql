-- topic and user_id say whose e-mails of which topic a queued e-mail is (feedback: to the
-- author of an item), so that delivery checks mail_opt_outs again when it sends: one who
-- turned the topic off after it was queued is not sent it. None (''/NULL): sent. E-mails
-- queued before this migration have none.
ALTER TABLE mail_outbox ADD COLUMN topic TEXT NOT NULL DEFAULT '';
ALTER TABLE mail_outbox ADD COLUMN user_id BIGINT REFERENCES users (id);
