-- Hand-written (triggers): what the heartbeat reads without D1 (docs/decisions.md, "The heartbeat
-- reads no D1") stays current whoever writes it.
-- * A person's own record (`people.updated_at`) and a membership's (`memberships.updated_at`) are
--   facts of their object: a change queues `prs:<person id>` work (which raises the facts version,
--   drizzle/0025), for a person who holds a secure number (others answer their heartbeat from D1).
-- * A company's record and its roster are the `co:<company id>` KV record: a change queues its work.
-- Commands that make these changes also record the work in their batch, so it is applied right
-- after their commit; the triggers are the guarantee (the minute sweep applies what they queue).
-- The time is SQLite's clock in ms (a trigger sees no parameter); the sweep takes rows due by it.
CREATE TRIGGER `facts_on_person_update` AFTER UPDATE OF `updated_at` ON `people` FOR EACH ROW
WHEN NEW.`updated_at` IS NOT OLD.`updated_at` AND EXISTS (SELECT 1 FROM `secure_numbers` WHERE `person_id` = NEW.`id`) BEGIN
	INSERT INTO `index_work` (`key`, `version`, `attempts`, `due_at`, `created_at`)
	VALUES ('prs:' || NEW.`id`, 1, 0, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER), CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER))
	ON CONFLICT (`key`) DO UPDATE SET `version` = `version` + 1, `due_at` = excluded.`due_at`;
END;
--> statement-breakpoint
CREATE TRIGGER `facts_on_membership_update` AFTER UPDATE OF `updated_at` ON `memberships` FOR EACH ROW
WHEN NEW.`updated_at` IS NOT OLD.`updated_at` AND EXISTS (SELECT 1 FROM `secure_numbers` WHERE `person_id` = NEW.`person_id`) BEGIN
	INSERT INTO `index_work` (`key`, `version`, `attempts`, `due_at`, `created_at`)
	VALUES ('prs:' || NEW.`person_id`, 1, 0, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER), CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER))
	ON CONFLICT (`key`) DO UPDATE SET `version` = `version` + 1, `due_at` = excluded.`due_at`;
END;
--> statement-breakpoint
CREATE TRIGGER `company_record_on_insert` AFTER INSERT ON `companies` FOR EACH ROW BEGIN
	INSERT INTO `index_work` (`key`, `version`, `attempts`, `due_at`, `created_at`)
	VALUES ('co:' || NEW.`id`, 1, 0, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER), CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER))
	ON CONFLICT (`key`) DO UPDATE SET `version` = `version` + 1, `due_at` = excluded.`due_at`;
END;
--> statement-breakpoint
CREATE TRIGGER `company_record_on_update` AFTER UPDATE OF `updated_at` ON `companies` FOR EACH ROW
WHEN NEW.`updated_at` IS NOT OLD.`updated_at` BEGIN
	INSERT INTO `index_work` (`key`, `version`, `attempts`, `due_at`, `created_at`)
	VALUES ('co:' || NEW.`id`, 1, 0, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER), CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER))
	ON CONFLICT (`key`) DO UPDATE SET `version` = `version` + 1, `due_at` = excluded.`due_at`;
END;
--> statement-breakpoint
CREATE TRIGGER `company_record_on_delete` AFTER DELETE ON `companies` FOR EACH ROW BEGIN
	INSERT INTO `index_work` (`key`, `version`, `attempts`, `due_at`, `created_at`)
	VALUES ('co:' || OLD.`id`, 1, 0, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER), CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER))
	ON CONFLICT (`key`) DO UPDATE SET `version` = `version` + 1, `due_at` = excluded.`due_at`;
END;
--> statement-breakpoint
CREATE TRIGGER `company_record_on_roster_insert` AFTER INSERT ON `company_rosters` FOR EACH ROW BEGIN
	INSERT INTO `index_work` (`key`, `version`, `attempts`, `due_at`, `created_at`)
	VALUES ('co:' || NEW.`company_id`, 1, 0, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER), CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER))
	ON CONFLICT (`key`) DO UPDATE SET `version` = `version` + 1, `due_at` = excluded.`due_at`;
END;
--> statement-breakpoint
CREATE TRIGGER `company_record_on_roster_update` AFTER UPDATE ON `company_rosters` FOR EACH ROW BEGIN
	INSERT INTO `index_work` (`key`, `version`, `attempts`, `due_at`, `created_at`)
	VALUES ('co:' || NEW.`company_id`, 1, 0, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER), CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER))
	ON CONFLICT (`key`) DO UPDATE SET `version` = `version` + 1, `due_at` = excluded.`due_at`;
END;
