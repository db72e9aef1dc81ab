CREATE TABLE `dead_letters` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`queue` text NOT NULL,
	`message_id` text NOT NULL,
	`body` text NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`last_error` text,
	`created_at` integer NOT NULL,
	`due_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `dead_letters_message_id_unique` ON `dead_letters` (`message_id`);--> statement-breakpoint
CREATE INDEX `dead_letters_due_idx` ON `dead_letters` (`due_at`);--> statement-breakpoint
CREATE TABLE `index_written` (
	`key` text PRIMARY KEY NOT NULL,
	`digest` text NOT NULL,
	`written_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `index_written_written_idx` ON `index_written` (`written_at`);--> statement-breakpoint
ALTER TABLE `index_work` ADD `created_at` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
-- Work recorded before this migration: stale since it was last due, as far as is known.
UPDATE `index_work` SET `created_at` = `due_at`;--> statement-breakpoint
CREATE INDEX `index_work_created_idx` ON `index_work` (`created_at`);--> statement-breakpoint
CREATE INDEX `contact_tombstones_deleted_idx` ON `contact_tombstones` (`deleted_at`);