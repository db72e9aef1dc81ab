CREATE TABLE `contact_tombstones` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`owner_id` integer NOT NULL,
	`contact_id` integer NOT NULL,
	`deleted_at` integer NOT NULL,
	FOREIGN KEY (`owner_id`) REFERENCES `people`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `contact_tombstones_owner_deleted_idx` ON `contact_tombstones` (`owner_id`,`deleted_at`);