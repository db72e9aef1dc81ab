CREATE TABLE `company_scan_moves` (
	`company_id` integer PRIMARY KEY NOT NULL,
	`stage` text NOT NULL,
	FOREIGN KEY (`company_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `moved_exposures` (
	`exposure_id` integer NOT NULL,
	`company_id` integer NOT NULL,
	PRIMARY KEY(`exposure_id`, `company_id`),
	FOREIGN KEY (`company_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE cascade
);
