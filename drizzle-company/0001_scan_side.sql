CREATE TABLE `counters` (
	`name` text PRIMARY KEY NOT NULL,
	`value` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `events` (
	`seq` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`event` text NOT NULL,
	`payload` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `exposure_history` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`exposure_id` integer NOT NULL,
	`site_id` integer NOT NULL,
	`event` text NOT NULL,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`exposure_id`) REFERENCES `exposures`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `exposure_history_exposure_idx` ON `exposure_history` (`exposure_id`,`created_at`);--> statement-breakpoint
CREATE TABLE `exposures` (
	`id` integer PRIMARY KEY NOT NULL,
	`person_id` integer NOT NULL,
	`site_id` integer NOT NULL,
	`status` text NOT NULL,
	`url` text,
	`data` text NOT NULL,
	`requested_at` integer,
	`closed_at` integer,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `exposures_updated_idx` ON `exposures` (`updated_at`,`id`);--> statement-breakpoint
CREATE INDEX `exposures_status_idx` ON `exposures` (`status`,`updated_at`,`id`);--> statement-breakpoint
CREATE INDEX `exposures_person_idx` ON `exposures` (`person_id`,`status`);--> statement-breakpoint
CREATE INDEX `exposures_closed_idx` ON `exposures` (`closed_at`);--> statement-breakpoint
CREATE TABLE `scan_results` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`scan_id` text NOT NULL,
	`person_id` integer NOT NULL,
	`site_id` integer NOT NULL,
	`outcome` text NOT NULL,
	`url` text,
	`data` text,
	`at` integer NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `scan_results_scan_site_uq` ON `scan_results` (`scan_id`,`site_id`);--> statement-breakpoint
CREATE INDEX `scan_results_person_site_idx` ON `scan_results` (`person_id`,`site_id`,`at`);--> statement-breakpoint
CREATE INDEX `scan_results_created_idx` ON `scan_results` (`created_at`);--> statement-breakpoint
CREATE TABLE `scans` (
	`id` text PRIMARY KEY NOT NULL,
	`person_id` integer NOT NULL,
	`status` text NOT NULL,
	`started_at` integer,
	`completed_at` integer,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `scans_person_idx` ON `scans` (`person_id`);--> statement-breakpoint
CREATE INDEX `scans_completed_idx` ON `scans` (`completed_at`);--> statement-breakpoint
CREATE TABLE `sites` (
	`id` integer PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`slug` text NOT NULL,
	`logo` text,
	`url` text NOT NULL
);
