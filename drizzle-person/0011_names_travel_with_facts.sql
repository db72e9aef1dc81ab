CREATE TABLE `peers` (
	`person_id` integer PRIMARY KEY NOT NULL,
	`first_name` text NOT NULL,
	`middle_name` text,
	`last_name` text NOT NULL,
	`companies` text NOT NULL,
	`learned_at` integer NOT NULL
);
--> statement-breakpoint
ALTER TABLE `facts` ADD `profile` text;