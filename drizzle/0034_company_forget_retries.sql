ALTER TABLE `company_forgets` ADD `retry_at` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `company_forgets` ADD `attempts` integer DEFAULT 0 NOT NULL;