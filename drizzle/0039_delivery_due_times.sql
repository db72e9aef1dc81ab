ALTER TABLE `webhook_deliveries` ADD `due_at` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX `webhook_deliveries_due_idx` ON `webhook_deliveries` (`status`,`due_at`);--> statement-breakpoint
-- Deliveries on their way when this runs: a pending one is due from its last change (as the outbox
-- sweep read it before), a dispatched one at its retry, by the schedule of its attempts (10 s … 12 h).
UPDATE `webhook_deliveries` SET `due_at` = `updated_at` + CASE `attempts`
  WHEN 1 THEN 10000 WHEN 2 THEN 60000 WHEN 3 THEN 300000 WHEN 4 THEN 1800000
  WHEN 5 THEN 7200000 WHEN 6 THEN 21600000 ELSE 43200000 END
  WHERE `status` = 'dispatched';--> statement-breakpoint
UPDATE `webhook_deliveries` SET `due_at` = `updated_at` WHERE `status` = 'pending';
--> statement-breakpoint
-- A dispatched delivery not changed for 3 days lost its retry message (the longest wait between two
-- attempts is 12 h): nothing would ever have sent it again before this migration. It is given up
-- (`failed`, its last result kept) rather than sent now, days late.
UPDATE `webhook_deliveries` SET `status` = 'failed'
  WHERE `status` = 'dispatched' AND `updated_at` < unixepoch() * 1000 - 3 * 86400000;
