CREATE TABLE `activity_days` (
	`day` integer PRIMARY KEY NOT NULL,
	`records` integer NOT NULL,
	`text_bytes` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `blocked_calls` (
	`id` integer PRIMARY KEY NOT NULL,
	`caller_id` text,
	`country_code` text NOT NULL,
	`phone_number` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `blocked_calls_created_idx` ON `blocked_calls` (`created_at`);--> statement-breakpoint
CREATE TABLE `feed` (
	`id` integer PRIMARY KEY NOT NULL,
	`type` text NOT NULL,
	`sendable_type` text NOT NULL,
	`sendable_id` integer NOT NULL,
	`receivable_type` text NOT NULL,
	`receivable_id` integer NOT NULL,
	`call_time` integer DEFAULT 0 NOT NULL,
	`message` text,
	`message_id` text,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `feed_message_uq` ON `feed` (`sendable_type`,`sendable_id`,`message_id`);--> statement-breakpoint
CREATE INDEX `feed_created_idx` ON `feed` (`created_at`);--> statement-breakpoint
CREATE TABLE `moves` (
	`source` text PRIMARY KEY NOT NULL,
	`rows` integer NOT NULL,
	`moved_at` integer NOT NULL
);
