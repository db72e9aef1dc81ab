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
CREATE TABLE `trust_request_days` (
	`day` integer PRIMARY KEY NOT NULL,
	`sent` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `trust_requests` (
	`id` integer PRIMARY KEY NOT NULL,
	`requester_id` integer NOT NULL,
	`contact_reason` text DEFAULT '' NOT NULL,
	`status` text NOT NULL,
	`decided_at` integer,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `trust_requests_pending_uq` ON `trust_requests` (`requester_id`) WHERE status = 'pending';--> statement-breakpoint
CREATE INDEX `trust_requests_requester_idx` ON `trust_requests` (`requester_id`);--> statement-breakpoint
CREATE INDEX `trust_requests_updated_idx` ON `trust_requests` (`updated_at`);