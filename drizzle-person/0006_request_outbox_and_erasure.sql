CREATE TABLE `erasure` (
	`one` integer PRIMARY KEY NOT NULL,
	`erased_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `request_outbox` (
	`person_id` integer PRIMARY KEY NOT NULL,
	`requester_id` integer NOT NULL,
	`reason` text NOT NULL,
	`asked_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `trust_requests_pending_page_idx` ON `trust_requests` (`updated_at`,`id`) WHERE status = 'pending';