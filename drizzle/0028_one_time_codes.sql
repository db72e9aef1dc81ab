CREATE TABLE `dev_outbox` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`to` text NOT NULL,
	`channel` text NOT NULL,
	`body` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `dev_outbox_to_idx` ON `dev_outbox` (`to`,`id`);--> statement-breakpoint
CREATE TABLE `one_time_codes` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`channel` text NOT NULL,
	`address` text NOT NULL,
	`purpose` text NOT NULL,
	`person_id` integer,
	`phone_id` integer,
	`ip` text NOT NULL,
	`country` text,
	`code_hash` text,
	`tries` integer DEFAULT 0 NOT NULL,
	`expires_at` integer NOT NULL,
	`spent_at` integer,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`person_id`) REFERENCES `people`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`phone_id`) REFERENCES `person_phones`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `one_time_codes_address_idx` ON `one_time_codes` (`address`,`created_at`);--> statement-breakpoint
CREATE INDEX `one_time_codes_ip_idx` ON `one_time_codes` (`ip`,`created_at`);--> statement-breakpoint
CREATE INDEX `one_time_codes_person_idx` ON `one_time_codes` (`person_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `one_time_codes_country_idx` ON `one_time_codes` (`country`,`created_at`);--> statement-breakpoint
CREATE INDEX `one_time_codes_created_idx` ON `one_time_codes` (`created_at`);--> statement-breakpoint
ALTER TABLE `access_tokens` ADD `device_name` text;--> statement-breakpoint
ALTER TABLE `batch_guards` ADD `code_spent` integer DEFAULT 0 NOT NULL;