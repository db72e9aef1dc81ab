CREATE TABLE `company_trust` (
	`company_id` integer PRIMARY KEY NOT NULL,
	`trust` text NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `contact_tombstones` (
	`contact_id` integer PRIMARY KEY NOT NULL,
	`deleted_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `contact_tombstones_deleted_idx` ON `contact_tombstones` (`deleted_at`);--> statement-breakpoint
CREATE TABLE `contact_values` (
	`contact_id` integer NOT NULL,
	`kind` text NOT NULL,
	`position` integer NOT NULL,
	`value` text NOT NULL,
	PRIMARY KEY(`contact_id`, `kind`, `position`),
	FOREIGN KEY (`contact_id`) REFERENCES `contacts`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `contact_values_kind_value_idx` ON `contact_values` (`kind`,`value`);--> statement-breakpoint
CREATE TABLE `contacts` (
	`id` integer PRIMARY KEY NOT NULL,
	`display_name` text DEFAULT '' NOT NULL,
	`birthday` text,
	`labels` text NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `contacts_updated_idx` ON `contacts` (`updated_at`);--> statement-breakpoint
CREATE TABLE `facts` (
	`one` integer PRIMARY KEY NOT NULL,
	`person_id` integer NOT NULL,
	`e164` text,
	`companies` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `index_keys` (
	`key` text PRIMARY KEY NOT NULL,
	`digest` text,
	`written_at` integer,
	`due` integer NOT NULL,
	`force` integer NOT NULL,
	`version` integer NOT NULL,
	`attempts` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `mirror_outbox` (
	`person_id` integer PRIMARY KEY NOT NULL,
	`trusted` integer NOT NULL,
	`decided_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `person_trust` (
	`person_id` integer PRIMARY KEY NOT NULL,
	`trusted` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `trusted_by` (
	`person_id` integer PRIMARY KEY NOT NULL,
	`trusted` integer NOT NULL,
	`decided_at` integer NOT NULL
);
