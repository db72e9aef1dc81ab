CREATE TABLE `company_employee_counts` (
	`company_id` integer PRIMARY KEY NOT NULL,
	`n` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `company_exposure_counts` (
	`company_id` integer NOT NULL,
	`status` text NOT NULL,
	`n` integer NOT NULL,
	PRIMARY KEY(`company_id`, `status`)
);
--> statement-breakpoint
CREATE TABLE `company_exposures` (
	`company_id` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`exposure_id` integer NOT NULL,
	`status` text NOT NULL,
	PRIMARY KEY(`company_id`, `updated_at`, `exposure_id`, `status`)
);
--> statement-breakpoint
CREATE INDEX `exposures_closed_idx` ON `exposures` (`closed_at`) WHERE "exposures"."closed_at" is not null;--> statement-breakpoint
CREATE INDEX `scan_results_created_idx` ON `scan_results` (`created_at`);--> statement-breakpoint
CREATE INDEX `scans_completed_idx` ON `scans` (`completed_at`) WHERE "scans"."completed_at" is not null;