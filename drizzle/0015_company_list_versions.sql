-- A version per company of what its employee list shows (src/services/employees/list.ts caches each
-- rendered page under it, docs/performance.md "Lists"). Every change to a row the list reads gives the
-- version of each company whose list shows that row a new random value, in the same transaction as the
-- change, so a page rendered in the transaction that read version V is exactly the list while the version
-- is V. Random rather than counted: a restored backup or a rolled-back test never hands out a value
-- again for a different list. Kept by triggers so that every writer, present and future, keeps it.
-- No CASE … END in a trigger body: `wrangler d1 migrations apply` would split it there.
CREATE TABLE `company_list_versions` (
	`company_id` integer PRIMARY KEY NOT NULL,
	`version` text NOT NULL
);
--> statement-breakpoint
INSERT INTO `company_list_versions` (`company_id`, `version`) SELECT `id`, hex(randomblob(8)) FROM `companies`;
--> statement-breakpoint
CREATE TRIGGER `list_version_companies_insert` AFTER INSERT ON `companies` FOR EACH ROW BEGIN
	INSERT OR REPLACE INTO `company_list_versions` (`company_id`, `version`) VALUES (NEW.`id`, hex(randomblob(8)));
END;
--> statement-breakpoint
CREATE TRIGGER `list_version_companies_delete` AFTER DELETE ON `companies` FOR EACH ROW BEGIN
	DELETE FROM `company_list_versions` WHERE `company_id` = OLD.`id`;
END;
--> statement-breakpoint
CREATE TRIGGER `list_version_memberships_insert` AFTER INSERT ON `memberships` FOR EACH ROW BEGIN
	UPDATE `company_list_versions` SET `version` = hex(randomblob(8)) WHERE `company_id` IN (NEW.`company_id`);
END;
--> statement-breakpoint
CREATE TRIGGER `list_version_memberships_update` AFTER UPDATE OF `company_id`, `person_id`, `license_id`, `license_start_at`, `license_end_at`, `license_renews`, `license_prorate_on_renewal` ON `memberships` FOR EACH ROW BEGIN
	UPDATE `company_list_versions` SET `version` = hex(randomblob(8)) WHERE `company_id` IN (OLD.`company_id`, NEW.`company_id`);
END;
--> statement-breakpoint
CREATE TRIGGER `list_version_memberships_delete` AFTER DELETE ON `memberships` FOR EACH ROW BEGIN
	UPDATE `company_list_versions` SET `version` = hex(randomblob(8)) WHERE `company_id` IN (OLD.`company_id`);
END;
--> statement-breakpoint
CREATE TRIGGER `list_version_people_update` AFTER UPDATE OF `id`, `first_name`, `middle_name`, `last_name`, `dob`, `risk_score`, `last_scan_at`, `last_login_at`, `created_at` ON `people` FOR EACH ROW BEGIN
	UPDATE `company_list_versions` SET `version` = hex(randomblob(8)) WHERE `company_id` IN (SELECT `company_id` FROM `memberships` WHERE `person_id` IN (OLD.`id`, NEW.`id`));
END;
--> statement-breakpoint
CREATE TRIGGER `list_version_people_delete` AFTER DELETE ON `people` FOR EACH ROW BEGIN
	UPDATE `company_list_versions` SET `version` = hex(randomblob(8)) WHERE `company_id` IN (SELECT `company_id` FROM `memberships` WHERE `person_id` IN (OLD.`id`));
END;
--> statement-breakpoint
CREATE TRIGGER `list_version_person_emails_insert` AFTER INSERT ON `person_emails` FOR EACH ROW BEGIN
	UPDATE `company_list_versions` SET `version` = hex(randomblob(8)) WHERE `company_id` IN (SELECT `company_id` FROM `memberships` WHERE `person_id` IN (NEW.`person_id`));
END;
--> statement-breakpoint
CREATE TRIGGER `list_version_person_emails_update` AFTER UPDATE ON `person_emails` FOR EACH ROW BEGIN
	UPDATE `company_list_versions` SET `version` = hex(randomblob(8)) WHERE `company_id` IN (SELECT `company_id` FROM `memberships` WHERE `person_id` IN (OLD.`person_id`, NEW.`person_id`));
END;
--> statement-breakpoint
CREATE TRIGGER `list_version_person_emails_delete` AFTER DELETE ON `person_emails` FOR EACH ROW BEGIN
	UPDATE `company_list_versions` SET `version` = hex(randomblob(8)) WHERE `company_id` IN (SELECT `company_id` FROM `memberships` WHERE `person_id` IN (OLD.`person_id`));
END;
--> statement-breakpoint
CREATE TRIGGER `list_version_person_phones_insert` AFTER INSERT ON `person_phones` FOR EACH ROW BEGIN
	UPDATE `company_list_versions` SET `version` = hex(randomblob(8)) WHERE `company_id` IN (SELECT `company_id` FROM `memberships` WHERE `person_id` IN (NEW.`person_id`));
END;
--> statement-breakpoint
CREATE TRIGGER `list_version_person_phones_update` AFTER UPDATE ON `person_phones` FOR EACH ROW BEGIN
	UPDATE `company_list_versions` SET `version` = hex(randomblob(8)) WHERE `company_id` IN (SELECT `company_id` FROM `memberships` WHERE `person_id` IN (OLD.`person_id`, NEW.`person_id`));
END;
--> statement-breakpoint
CREATE TRIGGER `list_version_person_phones_delete` AFTER DELETE ON `person_phones` FOR EACH ROW BEGIN
	UPDATE `company_list_versions` SET `version` = hex(randomblob(8)) WHERE `company_id` IN (SELECT `company_id` FROM `memberships` WHERE `person_id` IN (OLD.`person_id`));
END;
--> statement-breakpoint
CREATE TRIGGER `list_version_person_addresses_insert` AFTER INSERT ON `person_addresses` FOR EACH ROW BEGIN
	UPDATE `company_list_versions` SET `version` = hex(randomblob(8)) WHERE `company_id` IN (SELECT `company_id` FROM `memberships` WHERE `person_id` IN (NEW.`person_id`));
END;
--> statement-breakpoint
CREATE TRIGGER `list_version_person_addresses_update` AFTER UPDATE ON `person_addresses` FOR EACH ROW BEGIN
	UPDATE `company_list_versions` SET `version` = hex(randomblob(8)) WHERE `company_id` IN (SELECT `company_id` FROM `memberships` WHERE `person_id` IN (OLD.`person_id`, NEW.`person_id`));
END;
--> statement-breakpoint
CREATE TRIGGER `list_version_person_addresses_delete` AFTER DELETE ON `person_addresses` FOR EACH ROW BEGIN
	UPDATE `company_list_versions` SET `version` = hex(randomblob(8)) WHERE `company_id` IN (SELECT `company_id` FROM `memberships` WHERE `person_id` IN (OLD.`person_id`));
END;
--> statement-breakpoint
CREATE TRIGGER `list_version_person_akas_insert` AFTER INSERT ON `person_akas` FOR EACH ROW BEGIN
	UPDATE `company_list_versions` SET `version` = hex(randomblob(8)) WHERE `company_id` IN (SELECT `company_id` FROM `memberships` WHERE `person_id` IN (NEW.`person_id`));
END;
--> statement-breakpoint
CREATE TRIGGER `list_version_person_akas_update` AFTER UPDATE ON `person_akas` FOR EACH ROW BEGIN
	UPDATE `company_list_versions` SET `version` = hex(randomblob(8)) WHERE `company_id` IN (SELECT `company_id` FROM `memberships` WHERE `person_id` IN (OLD.`person_id`, NEW.`person_id`));
END;
--> statement-breakpoint
CREATE TRIGGER `list_version_person_akas_delete` AFTER DELETE ON `person_akas` FOR EACH ROW BEGIN
	UPDATE `company_list_versions` SET `version` = hex(randomblob(8)) WHERE `company_id` IN (SELECT `company_id` FROM `memberships` WHERE `person_id` IN (OLD.`person_id`));
END;
--> statement-breakpoint
CREATE TRIGGER `list_version_exposures_insert` AFTER INSERT ON `exposures` FOR EACH ROW BEGIN
	UPDATE `company_list_versions` SET `version` = hex(randomblob(8)) WHERE `company_id` IN (SELECT `company_id` FROM `memberships` WHERE `person_id` IN (NEW.`person_id`));
END;
--> statement-breakpoint
CREATE TRIGGER `list_version_exposures_update` AFTER UPDATE OF `person_id`, `status` ON `exposures` FOR EACH ROW BEGIN
	UPDATE `company_list_versions` SET `version` = hex(randomblob(8)) WHERE `company_id` IN (SELECT `company_id` FROM `memberships` WHERE `person_id` IN (OLD.`person_id`, NEW.`person_id`));
END;
--> statement-breakpoint
CREATE TRIGGER `list_version_exposures_delete` AFTER DELETE ON `exposures` FOR EACH ROW BEGIN
	UPDATE `company_list_versions` SET `version` = hex(randomblob(8)) WHERE `company_id` IN (SELECT `company_id` FROM `memberships` WHERE `person_id` IN (OLD.`person_id`));
END;
--> statement-breakpoint
CREATE TRIGGER `list_version_scan_results_insert` AFTER INSERT ON `scan_results` FOR EACH ROW BEGIN
	UPDATE `company_list_versions` SET `version` = hex(randomblob(8)) WHERE `company_id` IN (SELECT `company_id` FROM `memberships` WHERE `person_id` IN (NEW.`person_id`));
END;
--> statement-breakpoint
CREATE TRIGGER `list_version_scan_results_update` AFTER UPDATE OF `person_id`, `site_id`, `outcome`, `at` ON `scan_results` FOR EACH ROW BEGIN
	UPDATE `company_list_versions` SET `version` = hex(randomblob(8)) WHERE `company_id` IN (SELECT `company_id` FROM `memberships` WHERE `person_id` IN (OLD.`person_id`, NEW.`person_id`));
END;
--> statement-breakpoint
CREATE TRIGGER `list_version_scan_results_delete` AFTER DELETE ON `scan_results` FOR EACH ROW BEGIN
	UPDATE `company_list_versions` SET `version` = hex(randomblob(8)) WHERE `company_id` IN (SELECT `company_id` FROM `memberships` WHERE `person_id` IN (OLD.`person_id`));
END;
--> statement-breakpoint
CREATE TRIGGER `list_version_membership_roles_insert` AFTER INSERT ON `membership_roles` FOR EACH ROW BEGIN
	UPDATE `company_list_versions` SET `version` = hex(randomblob(8)) WHERE `company_id` IN (SELECT `company_id` FROM `memberships` WHERE `id` IN (NEW.`membership_id`));
END;
--> statement-breakpoint
CREATE TRIGGER `list_version_membership_roles_update` AFTER UPDATE ON `membership_roles` FOR EACH ROW BEGIN
	UPDATE `company_list_versions` SET `version` = hex(randomblob(8)) WHERE `company_id` IN (SELECT `company_id` FROM `memberships` WHERE `id` IN (OLD.`membership_id`, NEW.`membership_id`));
END;
--> statement-breakpoint
CREATE TRIGGER `list_version_membership_roles_delete` AFTER DELETE ON `membership_roles` FOR EACH ROW BEGIN
	UPDATE `company_list_versions` SET `version` = hex(randomblob(8)) WHERE `company_id` IN (SELECT `company_id` FROM `memberships` WHERE `id` IN (OLD.`membership_id`));
END;
--> statement-breakpoint
CREATE TRIGGER `list_version_roles_update` AFTER UPDATE OF `id`, `company_id`, `name` ON `roles` FOR EACH ROW BEGIN
	UPDATE `company_list_versions` SET `version` = hex(randomblob(8)) WHERE `company_id` IN (SELECT m.`company_id` FROM `membership_roles` mr JOIN `memberships` m ON m.`id` = mr.`membership_id` WHERE mr.`role_id` IN (OLD.`id`, NEW.`id`));
END;
--> statement-breakpoint
CREATE TRIGGER `list_version_licenses_update` AFTER UPDATE OF `id`, `price` ON `licenses` FOR EACH ROW BEGIN
	UPDATE `company_list_versions` SET `version` = hex(randomblob(8)) WHERE `company_id` IN (SELECT `company_id` FROM `memberships` WHERE `license_id` IN (OLD.`id`, NEW.`id`));
END;
