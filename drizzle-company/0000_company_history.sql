CREATE TABLE `attempts` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`delivery_id` text NOT NULL,
	`at` integer NOT NULL,
	`result` text NOT NULL,
	`duration_ms` integer NOT NULL,
	FOREIGN KEY (`delivery_id`) REFERENCES `deliveries`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `attempts_delivery_at_uq` ON `attempts` (`delivery_id`,`at`,`result`,`duration_ms`);--> statement-breakpoint
CREATE TABLE `deliveries` (
	`id` text PRIMARY KEY NOT NULL,
	`seq` integer NOT NULL,
	`webhook_id` integer,
	`event` text NOT NULL,
	`payload` text NOT NULL,
	`status` text NOT NULL,
	`result` text NOT NULL,
	`attempts` integer NOT NULL,
	`delivered_at` integer,
	`created_at` integer NOT NULL,
	`finished_at` integer NOT NULL,
	`resent` integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
CREATE INDEX `deliveries_created_idx` ON `deliveries` (`created_at`,`seq`);--> statement-breakpoint
CREATE INDEX `deliveries_finished_idx` ON `deliveries` (`status`,`finished_at`);