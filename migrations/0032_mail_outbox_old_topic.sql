-- E-mails queued before migration 0030 have no topic, so an opt-out after they were queued
-- did not withdraw them. Until 0030 every queued e-mail was feedback's (feedback.notify, the
-- only caller of governance.QueueMail since 0018), to the author of the item its link names
-- (/feedback/<id>): the pending ones of those get the topic and their recipient, the author.
-- One whose link names no item, or that was already sent or given up on, is left as it was.
UPDATE mail_outbox
SET topic = 'feedback',
    user_id = (SELECT f.user_id FROM feedback_items f WHERE mail_outbox.link = '/feedback/' || CAST(f.id AS TEXT))
WHERE topic = '' AND user_id IS NULL AND state = 'pending'
    AND EXISTS (SELECT 1 FROM feedback_items f WHERE mail_outbox.link = '/feedback/' || CAST(f.id AS TEXT));
