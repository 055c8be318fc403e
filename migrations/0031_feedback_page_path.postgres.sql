-- Feedback kept the page it was filed from with its query until now: a query can hold
-- filters, names, or a token pasted into a link. Since, feedback keeps the path alone
-- (feedback.PagePath); this drops what follows a '?' or '#' of the pages filed before.
UPDATE feedback_items SET page = substring(page FROM '^[^?#]*') WHERE page ~ '[?#]';
