DROP INDEX `company_phones_company_idx`;--> statement-breakpoint
ALTER TABLE `company_phones` ADD `label` text;--> statement-breakpoint
CREATE UNIQUE INDEX `company_phones_company_e164_uq` ON `company_phones` (`company_id`,`e164`);