CREATE TABLE `person_erasures` (
	`person_id` integer PRIMARY KEY NOT NULL,
	`due_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `person_moves` (
	`person_id` integer PRIMARY KEY NOT NULL,
	`state` text NOT NULL,
	`d1_rows` integer,
	`object_rows` integer,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `person_moves_state_idx` ON `person_moves` (`state`);