ALTER TABLE `invitations` ADD `finished_at` integer;--> statement-breakpoint
ALTER TABLE `invitations` ADD `outcome` text;--> statement-breakpoint
CREATE INDEX `invitations_due_idx` ON `invitations` (`id`) WHERE finished_at is null;