CREATE TABLE `index_work` (
	`key` text PRIMARY KEY NOT NULL,
	`version` integer DEFAULT 1 NOT NULL,
	`lease_id` text,
	`lease_until` integer,
	`attempts` integer DEFAULT 0 NOT NULL,
	`due_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `index_work_due_idx` ON `index_work` (`due_at`);--> statement-breakpoint
ALTER TABLE `webhook_deliveries` ADD `rendered` integer DEFAULT true NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX `exposures_open_listing_uq` ON `exposures` (`person_id`,`site_id`,coalesce("url", '')) WHERE "exposures"."status" in ('pending', 'in_progress');