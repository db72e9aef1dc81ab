-- Hand-written (triggers): names travel with facts (docs/architecture.md). A person's object holds
-- what GET /me shows and their chats and trust requests carry (their names, their companies with each
-- one's name and their roles there) among its facts, so whoever changes those rows queues the person's
-- `prs:` work, for every person (not only number holders), which raises their facts version
-- (drizzle/0025) and tells their object. Commands that make these changes also record the work in their
-- batch, so it is applied right after their commit; for any other writer the minute sweep applies it.
CREATE TRIGGER `facts_on_person_names` AFTER UPDATE OF `first_name`, `middle_name`, `last_name` ON `people` FOR EACH ROW
WHEN NEW.`first_name` IS NOT OLD.`first_name` OR NEW.`middle_name` IS NOT OLD.`middle_name` OR NEW.`last_name` IS NOT OLD.`last_name` BEGIN
	INSERT INTO `index_work` (`key`, `version`, `attempts`, `due_at`, `created_at`)
	VALUES ('prs:' || NEW.`id`, 1, 0, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER), CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER))
	ON CONFLICT (`key`) DO UPDATE SET `version` = `version` + 1, `due_at` = excluded.`due_at`;
END;
--> statement-breakpoint
-- A person's creation tells nothing (a membership or role made with the person, in the same moment):
-- their object reads D1 itself when it is first asked.
CREATE TRIGGER `facts_on_membership_insert` AFTER INSERT ON `memberships` FOR EACH ROW
WHEN NEW.`created_at` > (SELECT `created_at` FROM `people` WHERE `id` = NEW.`person_id`) BEGIN
	INSERT INTO `index_work` (`key`, `version`, `attempts`, `due_at`, `created_at`)
	VALUES ('prs:' || NEW.`person_id`, 1, 0, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER), CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER))
	ON CONFLICT (`key`) DO UPDATE SET `version` = `version` + 1, `due_at` = excluded.`due_at`;
END;
--> statement-breakpoint
CREATE TRIGGER `facts_on_membership_delete` AFTER DELETE ON `memberships` FOR EACH ROW BEGIN
	INSERT INTO `index_work` (`key`, `version`, `attempts`, `due_at`, `created_at`)
	VALUES ('prs:' || OLD.`person_id`, 1, 0, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER), CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER))
	ON CONFLICT (`key`) DO UPDATE SET `version` = `version` + 1, `due_at` = excluded.`due_at`;
END;
--> statement-breakpoint
CREATE TRIGGER `facts_on_membership_role_insert` AFTER INSERT ON `membership_roles` FOR EACH ROW BEGIN
	INSERT INTO `index_work` (`key`, `version`, `attempts`, `due_at`, `created_at`)
	SELECT 'prs:' || m.`person_id`, 1, 0, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER), CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) FROM `memberships` m JOIN `people` p ON p.`id` = m.`person_id`
	WHERE m.`id` = NEW.`membership_id` AND (m.`created_at` > p.`created_at` OR m.`updated_at` > m.`created_at`)
	ON CONFLICT (`key`) DO UPDATE SET `version` = `version` + 1, `due_at` = excluded.`due_at`;
END;
--> statement-breakpoint
CREATE TRIGGER `facts_on_membership_role_delete` AFTER DELETE ON `membership_roles` FOR EACH ROW BEGIN
	INSERT INTO `index_work` (`key`, `version`, `attempts`, `due_at`, `created_at`)
	SELECT 'prs:' || m.`person_id`, 1, 0, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER), CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) FROM `memberships` m WHERE m.`id` = OLD.`membership_id`
	ON CONFLICT (`key`) DO UPDATE SET `version` = `version` + 1, `due_at` = excluded.`due_at`;
END;
--> statement-breakpoint
CREATE TRIGGER `facts_on_company_name` AFTER UPDATE OF `name` ON `companies` FOR EACH ROW
WHEN NEW.`name` IS NOT OLD.`name` BEGIN
	INSERT INTO `index_work` (`key`, `version`, `attempts`, `due_at`, `created_at`)
	SELECT 'prs:' || m.`person_id`, 1, 0, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER), CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) FROM `memberships` m WHERE m.`company_id` = NEW.`id`
	ON CONFLICT (`key`) DO UPDATE SET `version` = `version` + 1, `due_at` = excluded.`due_at`;
END;
--> statement-breakpoint
CREATE TRIGGER `facts_on_role_name` AFTER UPDATE OF `name` ON `roles` FOR EACH ROW
WHEN NEW.`name` IS NOT OLD.`name` BEGIN
	INSERT INTO `index_work` (`key`, `version`, `attempts`, `due_at`, `created_at`)
	SELECT 'prs:' || m.`person_id`, 1, 0, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER), CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) FROM `membership_roles` mr JOIN `memberships` m ON m.`id` = mr.`membership_id` WHERE mr.`role_id` = NEW.`id`
	ON CONFLICT (`key`) DO UPDATE SET `version` = `version` + 1, `due_at` = excluded.`due_at`;
END;
