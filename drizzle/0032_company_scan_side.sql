CREATE TABLE `company_event_marks` (
	`company_id` integer PRIMARY KEY NOT NULL,
	`seq` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `company_forgets` (
	`company_id` integer NOT NULL,
	`person_id` integer NOT NULL,
	`due_at` integer NOT NULL,
	PRIMARY KEY(`company_id`, `person_id`)
);
--> statement-breakpoint
ALTER TABLE `companies` ADD `scans_in_object` integer DEFAULT true NOT NULL;--> statement-breakpoint
-- Companies that exist before this migration keep their scan side in D1 until the operator moves them.
UPDATE `companies` SET `scans_in_object` = 0;
