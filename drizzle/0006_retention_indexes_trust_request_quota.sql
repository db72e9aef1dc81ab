CREATE TABLE `trust_request_days` (
	`day` integer NOT NULL,
	`person_id` integer NOT NULL,
	`sent` integer NOT NULL,
	PRIMARY KEY(`day`, `person_id`)
);
--> statement-breakpoint
CREATE INDEX `activities_created_idx` ON `activities` (`created_at`);--> statement-breakpoint
CREATE INDEX `blocked_calls_created_idx` ON `blocked_calls` (`created_at`);