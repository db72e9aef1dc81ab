-- Hand-written (triggers): contacts link through the trust index (docs/decisions.md, "Contacts link
-- through the index"; services/trust-index/contacts.ts), and these keep its two kinds of keys current
-- whoever writes D1 (a command, the operator, a migration):
-- * `eml:<email>`, who owns an email: queued when an email is added, moves or goes;
-- * `lnk:<person id>`, what a contact's link shows of a person (avatar, risk score, whether they can be
--   reached end to end, their companies): queued when those change, when the person comes or goes,
--   and when one of their memberships does.
-- The minute sweep makes the queued keys current (a command that records them in its batch has them
-- made current right after its commit). The prefixes are the registry's (src/domain/key-kinds.ts),
-- checked by test/index/trust-index-registry.test.ts. The time is SQLite's clock in ms, as in drizzle/0026.
CREATE TRIGGER `email_owner_on_insert` AFTER INSERT ON `person_emails` FOR EACH ROW BEGIN
	INSERT INTO `index_work` (`key`, `version`, `attempts`, `due_at`, `created_at`)
	VALUES ('eml:' || NEW.`email`, 1, 0, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER), CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER))
	ON CONFLICT (`key`) DO UPDATE SET `version` = `version` + 1, `due_at` = excluded.`due_at`;
END;
--> statement-breakpoint
CREATE TRIGGER `email_owner_on_update` AFTER UPDATE OF `email`, `person_id` ON `person_emails` FOR EACH ROW
WHEN NEW.`email` IS NOT OLD.`email` OR NEW.`person_id` IS NOT OLD.`person_id` BEGIN
	INSERT INTO `index_work` (`key`, `version`, `attempts`, `due_at`, `created_at`)
	VALUES ('eml:' || OLD.`email`, 1, 0, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER), CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER))
	ON CONFLICT (`key`) DO UPDATE SET `version` = `version` + 1, `due_at` = excluded.`due_at`;
	INSERT INTO `index_work` (`key`, `version`, `attempts`, `due_at`, `created_at`)
	VALUES ('eml:' || NEW.`email`, 1, 0, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER), CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER))
	ON CONFLICT (`key`) DO UPDATE SET `version` = `version` + 1, `due_at` = excluded.`due_at`;
END;
--> statement-breakpoint
CREATE TRIGGER `email_owner_on_delete` AFTER DELETE ON `person_emails` FOR EACH ROW BEGIN
	INSERT INTO `index_work` (`key`, `version`, `attempts`, `due_at`, `created_at`)
	VALUES ('eml:' || OLD.`email`, 1, 0, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER), CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER))
	ON CONFLICT (`key`) DO UPDATE SET `version` = `version` + 1, `due_at` = excluded.`due_at`;
END;
--> statement-breakpoint
CREATE TRIGGER `link_card_on_person_insert` AFTER INSERT ON `people` FOR EACH ROW BEGIN
	INSERT INTO `index_work` (`key`, `version`, `attempts`, `due_at`, `created_at`)
	VALUES ('lnk:' || NEW.`id`, 1, 0, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER), CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER))
	ON CONFLICT (`key`) DO UPDATE SET `version` = `version` + 1, `due_at` = excluded.`due_at`;
END;
--> statement-breakpoint
CREATE TRIGGER `link_card_on_person_update` AFTER UPDATE OF `avatar_url`, `risk_score`, `encryption_hash`, `e2e_id` ON `people` FOR EACH ROW
WHEN NEW.`avatar_url` IS NOT OLD.`avatar_url` OR NEW.`risk_score` IS NOT OLD.`risk_score` OR NEW.`encryption_hash` IS NOT OLD.`encryption_hash` OR NEW.`e2e_id` IS NOT OLD.`e2e_id` BEGIN
	INSERT INTO `index_work` (`key`, `version`, `attempts`, `due_at`, `created_at`)
	VALUES ('lnk:' || NEW.`id`, 1, 0, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER), CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER))
	ON CONFLICT (`key`) DO UPDATE SET `version` = `version` + 1, `due_at` = excluded.`due_at`;
END;
--> statement-breakpoint
CREATE TRIGGER `link_card_on_person_delete` AFTER DELETE ON `people` FOR EACH ROW BEGIN
	INSERT INTO `index_work` (`key`, `version`, `attempts`, `due_at`, `created_at`)
	VALUES ('lnk:' || OLD.`id`, 1, 0, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER), CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER))
	ON CONFLICT (`key`) DO UPDATE SET `version` = `version` + 1, `due_at` = excluded.`due_at`;
END;
--> statement-breakpoint
CREATE TRIGGER `link_card_on_membership_insert` AFTER INSERT ON `memberships` FOR EACH ROW BEGIN
	INSERT INTO `index_work` (`key`, `version`, `attempts`, `due_at`, `created_at`)
	VALUES ('lnk:' || NEW.`person_id`, 1, 0, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER), CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER))
	ON CONFLICT (`key`) DO UPDATE SET `version` = `version` + 1, `due_at` = excluded.`due_at`;
END;
--> statement-breakpoint
CREATE TRIGGER `link_card_on_membership_update` AFTER UPDATE OF `company_id`, `person_id` ON `memberships` FOR EACH ROW
WHEN NEW.`company_id` IS NOT OLD.`company_id` OR NEW.`person_id` IS NOT OLD.`person_id` BEGIN
	INSERT INTO `index_work` (`key`, `version`, `attempts`, `due_at`, `created_at`)
	VALUES ('lnk:' || OLD.`person_id`, 1, 0, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER), CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER))
	ON CONFLICT (`key`) DO UPDATE SET `version` = `version` + 1, `due_at` = excluded.`due_at`;
	INSERT INTO `index_work` (`key`, `version`, `attempts`, `due_at`, `created_at`)
	VALUES ('lnk:' || NEW.`person_id`, 1, 0, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER), CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER))
	ON CONFLICT (`key`) DO UPDATE SET `version` = `version` + 1, `due_at` = excluded.`due_at`;
END;
--> statement-breakpoint
CREATE TRIGGER `link_card_on_membership_delete` AFTER DELETE ON `memberships` FOR EACH ROW BEGIN
	INSERT INTO `index_work` (`key`, `version`, `attempts`, `due_at`, `created_at`)
	VALUES ('lnk:' || OLD.`person_id`, 1, 0, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER), CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER))
	ON CONFLICT (`key`) DO UPDATE SET `version` = `version` + 1, `due_at` = excluded.`due_at`;
END;
