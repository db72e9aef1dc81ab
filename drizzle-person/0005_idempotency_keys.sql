CREATE TABLE `idempotency_keys` (
	`key` text PRIMARY KEY NOT NULL,
	`fingerprint` text NOT NULL,
	`claimed_at` integer NOT NULL,
	`status` integer,
	`body` text,
	`content_type` text,
	`location` text
);
--> statement-breakpoint
CREATE INDEX `idempotency_keys_claimed_at_idx` ON `idempotency_keys` (`claimed_at`);