-- Hand-written (triggers): every `prs:<person id>` index work row a batch records (a change of the
-- person's secure number or memberships: WriteBatch.retellPerson) raises that person's facts
-- version in the same transaction, so an object told older facts later ignores them
-- (docs/architecture.md, "Fact versions"). A trigger, not a statement of each batch: a purge of
-- 100 removals stays inside an invocation's 1,000 D1 statements.
CREATE TRIGGER `facts_version_on_work_insert` AFTER INSERT ON `index_work` FOR EACH ROW WHEN NEW.`key` LIKE 'prs:%' BEGIN
	UPDATE `people` SET `facts_version` = `facts_version` + 1 WHERE `id` = CAST(substr(NEW.`key`, 5) AS INTEGER);
END;
--> statement-breakpoint
CREATE TRIGGER `facts_version_on_work_update` AFTER UPDATE OF `version` ON `index_work` FOR EACH ROW WHEN NEW.`key` LIKE 'prs:%' BEGIN
	UPDATE `people` SET `facts_version` = `facts_version` + 1 WHERE `id` = CAST(substr(NEW.`key`, 5) AS INTEGER);
END;
