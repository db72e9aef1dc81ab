-- Hand-written (a trigger): an employee's login no longer changes the company's list version
-- (drizzle/0015_company_list_versions.sql), so the hourly `last_login_at` write of every employee
-- does not throw away the company's cached list pages. The list still shows `last_login`: a cached
-- page is answered at most an hour after it was rendered (src/services/employees/list.ts), so the
-- value it shows is at most an hour older than the hourly write (docs/performance.md, "Lists").
DROP TRIGGER `list_version_people_update`;
--> statement-breakpoint
CREATE TRIGGER `list_version_people_update` AFTER UPDATE OF `id`, `first_name`, `middle_name`, `last_name`, `dob`, `risk_score`, `last_scan_at`, `created_at` ON `people` FOR EACH ROW BEGIN
	UPDATE `company_list_versions` SET `version` = hex(randomblob(8)) WHERE `company_id` IN (SELECT `company_id` FROM `memberships` WHERE `person_id` IN (OLD.`id`, NEW.`id`));
END;
