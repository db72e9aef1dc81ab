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