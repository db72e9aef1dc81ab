DROP INDEX `invitations_token_hash_uq`;--> statement-breakpoint
CREATE INDEX `invitations_finished_idx` ON `invitations` (`finished_at`) WHERE finished_at is not null;--> statement-breakpoint
ALTER TABLE `invitations` DROP COLUMN `accepted_at`;