-- Hand-written (a trigger): a person's `last_login_at` follows their token's daily `last_used_at`
-- write in the same statement, so a token's bookkeeping is one D1 write a day, not two
-- (docs/decisions.md, "Auth"; docs/capacity.md, "D1 statements per active app user"). A login is
-- not a profile change: `updated_at` (the heartbeat's `last_user_update`) is left as it was, and
-- the list-version trigger of drizzle/0022 does not watch `last_login_at`.
CREATE TRIGGER `token_use_is_a_login` AFTER UPDATE OF `last_used_at` ON `access_tokens` FOR EACH ROW
WHEN NEW.`person_id` IS NOT NULL AND NEW.`last_used_at` IS NOT NULL BEGIN
	UPDATE `people` SET `last_login_at` = NEW.`last_used_at`
	WHERE `id` = NEW.`person_id` AND (`last_login_at` IS NULL OR `last_login_at` < NEW.`last_used_at`);
END;
