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
