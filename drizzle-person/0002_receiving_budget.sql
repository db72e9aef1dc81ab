CREATE TABLE `received_days` (
	`day` integer PRIMARY KEY NOT NULL,
	`records` integer NOT NULL,
	`text_bytes` integer NOT NULL
);
