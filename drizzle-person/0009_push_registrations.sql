CREATE TABLE `push_registrations` (
	`device_id` integer PRIMARY KEY NOT NULL,
	`kind` text NOT NULL,
	`target` text NOT NULL,
	`updated_at` integer NOT NULL
);
