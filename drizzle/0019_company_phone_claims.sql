DROP INDEX `company_phones_e164_uq`;--> statement-breakpoint
ALTER TABLE `company_phones` ADD `created_at` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX `company_phones_company_e164_uq` ON `company_phones` (`company_id`,`e164`);--> statement-breakpoint
CREATE UNIQUE INDEX `company_phones_verified_e164_uq` ON `company_phones` (`e164`) WHERE status = 'verified';--> statement-breakpoint
CREATE INDEX `company_phones_unverified_created_idx` ON `company_phones` (`created_at`) WHERE status <> 'verified';