-- opt_out is the portal path where the recipient turns off e-mails like this one (their
-- account page); the e-mail says so above its link. A path, not a URL: like link, it
-- becomes a URL with --public-url when the e-mail is sent, by whichever replica sends it.
ALTER TABLE mail_outbox ADD COLUMN opt_out TEXT NOT NULL DEFAULT '';
