-- mail_opt_outs holds the e-mails a person turned off, by topic (feedback: those about
-- their feedback items being answered or replied to): QueueMail queues none of a topic
-- to whoever turned it off. The notification in the portal stays. No row: e-mails on.
CREATE TABLE mail_opt_outs (
    user_id BIGINT NOT NULL REFERENCES users (id),
    topic TEXT NOT NULL,
    created_at {{ts}} NOT NULL,
    PRIMARY KEY (user_id, topic)
);
