CREATE TABLE `activity_days` (
	`day` integer NOT NULL,
	`person_id` integer NOT NULL,
	`records` integer NOT NULL,
	`text_bytes` integer NOT NULL,
	PRIMARY KEY(`day`, `person_id`)
);
--> statement-breakpoint
DROP INDEX `company_phones_e164_idx`;--> statement-breakpoint
DROP INDEX `company_phones_company_e164_uq`;--> statement-breakpoint
ALTER TABLE `company_phones` ADD `status` text DEFAULT 'pending' NOT NULL;--> statement-breakpoint
-- Every existing company phone starts pending (the operator verifies it, docs/decisions.md),
-- so every number a company held is re-indexed: its num: record no longer names the company.
INSERT INTO `index_work` (`key`, `version`, `attempts`, `due_at`)
SELECT DISTINCT 'num:' || `e164`, 1, 0, 0 FROM `company_phones` WHERE true
ON CONFLICT (`key`) DO UPDATE SET `version` = `version` + 1, `attempts` = 0, `due_at` = 0;--> statement-breakpoint
-- A number belongs to at most one company: the first company that added it keeps it.
DELETE FROM `company_phones` WHERE `id` NOT IN (SELECT min(`id`) FROM `company_phones` GROUP BY `e164`);--> statement-breakpoint
CREATE UNIQUE INDEX `company_phones_e164_uq` ON `company_phones` (`e164`);--> statement-breakpoint
CREATE INDEX `company_phones_company_idx` ON `company_phones` (`company_id`,`id`);--> statement-breakpoint
ALTER TABLE `batch_guards` ADD `activity_budget` integer DEFAULT 0 NOT NULL;