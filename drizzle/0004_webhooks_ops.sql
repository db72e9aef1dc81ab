CREATE TABLE `webhook_attempts` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`delivery_id` text NOT NULL,
	`at` integer NOT NULL,
	`result` text NOT NULL,
	`duration_ms` integer NOT NULL,
	FOREIGN KEY (`delivery_id`) REFERENCES `webhook_deliveries`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `webhook_attempts_delivery_idx` ON `webhook_attempts` (`delivery_id`,`id`);--> statement-breakpoint
ALTER TABLE `webhooks` ADD `previous_secret` text;--> statement-breakpoint
ALTER TABLE `webhooks` ADD `previous_secret_expires_at` integer;--> statement-breakpoint
ALTER TABLE `webhooks` ADD `disabled_reason` text;--> statement-breakpoint
ALTER TABLE `webhooks` ADD `failing_since` integer;