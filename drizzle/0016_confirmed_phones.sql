ALTER TABLE `person_phones` ADD `confirmed` integer DEFAULT false NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX `person_phones_confirmed_uq` ON `person_phones` (`e164`) WHERE confirmed = 1;