-- The trust-lookup keys rcv: and rcvn: are written by each person's own Durable Object now
-- (docs/architecture.md, "The trust index"). Every person holding a secure number gets a prs: work
-- row, so their object is told its number and companies and writes its keys; rcv:/rcvn: work rows
-- left by the D1 writer are dropped (those keys are the objects' now).
DELETE FROM `index_work` WHERE `key` LIKE 'rcv:%' OR `key` LIKE 'rcvn:%';
--> statement-breakpoint
INSERT INTO `index_work` (`key`, `version`, `attempts`, `due_at`, `created_at`)
SELECT 'prs:' || `person_id`, 1, 0, CAST(strftime('%s', 'now') AS INTEGER) * 1000, CAST(strftime('%s', 'now') AS INTEGER) * 1000
FROM `secure_numbers` WHERE `person_id` IS NOT NULL
ON CONFLICT (`key`) DO NOTHING;
