CREATE TABLE `settings` (
	`one` integer PRIMARY KEY NOT NULL,
	`calls` text NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
ALTER TABLE `blocked_calls` ADD `reason` text;