CREATE TABLE `batch_guards` (
	`seats` integer NOT NULL,
	`settings_writer` integer NOT NULL,
	`contact_quota` integer NOT NULL,
	`employee_quota` integer NOT NULL
);
