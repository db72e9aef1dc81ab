CREATE TABLE `devices` (
	`token_id` integer PRIMARY KEY NOT NULL,
	`name` text,
	`created_at` integer NOT NULL,
	`used_at` integer,
	`expires_at` integer,
	`revoked_at` integer
);
