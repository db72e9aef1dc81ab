CREATE INDEX `exposures_closed_idx` ON `exposures` (`closed_at`) WHERE "exposures"."closed_at" is not null;--> statement-breakpoint
CREATE INDEX `scan_results_created_idx` ON `scan_results` (`created_at`);--> statement-breakpoint
CREATE INDEX `scans_completed_idx` ON `scans` (`completed_at`) WHERE "scans"."completed_at" is not null;