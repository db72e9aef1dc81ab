CREATE TABLE `idempotency_days` (
	`day` integer PRIMARY KEY NOT NULL,
	`keys` integer NOT NULL
);
--> statement-breakpoint
ALTER TABLE `idempotency_keys` ADD `activity_id` integer;