CREATE TABLE `company_idempotency_keys` (
	`company_id` integer NOT NULL,
	`person_id` integer NOT NULL,
	`key` text NOT NULL,
	`fingerprint` text NOT NULL,
	`claimed_at` integer NOT NULL,
	`status` integer,
	`body` text,
	`content_type` text,
	`location` text,
	PRIMARY KEY(`company_id`, `person_id`, `key`),
	FOREIGN KEY (`company_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `company_idempotency_keys_claimed_at_idx` ON `company_idempotency_keys` (`claimed_at`);