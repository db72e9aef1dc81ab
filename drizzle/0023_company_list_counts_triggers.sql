-- Hand-written (triggers and a backfill): `company_exposures` holds a row per exposure and company of
-- its person, in the order the company's exposures page reads them, `company_exposure_counts` how
-- many of each status, and `company_employee_counts` how many employees a company has
-- (src/db/schema/scans.ts, src/db/schema/companies.ts; docs/performance.md, "Big companies"). Kept
-- by triggers, in the same transaction as every change to an exposure or a membership, whoever
-- writes it.
-- No CASE … END in a trigger body: `wrangler d1 migrations apply` would split it there.
-- `company_exposures` is made again WITHOUT ROWID (drizzle cannot declare it; its columns and key are
-- those of src/db/schema/scans.ts): the key is the table, so each row is stored once, not twice.
DROP TABLE `company_exposures`;
--> statement-breakpoint
CREATE TABLE `company_exposures` (
	`company_id` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`exposure_id` integer NOT NULL,
	`status` text NOT NULL,
	PRIMARY KEY(`company_id`, `updated_at`, `exposure_id`, `status`)
) WITHOUT ROWID;
--> statement-breakpoint
-- The removal step's turns across companies (src/services/exposures.ts): each company's pending
-- exposures, oldest first, without reading its other rows.
CREATE INDEX `company_exposures_pending_idx` ON `company_exposures` (`company_id`, `exposure_id`) WHERE `status` = 'pending';
--> statement-breakpoint
INSERT INTO `company_exposures` (`company_id`, `updated_at`, `exposure_id`, `status`)
	SELECT m.`company_id`, e.`updated_at`, e.`id`, e.`status` FROM `exposures` e JOIN `memberships` m ON m.`person_id` = e.`person_id`;
--> statement-breakpoint
INSERT INTO `company_exposure_counts` (`company_id`, `status`, `n`)
	SELECT `company_id`, `status`, count(*) FROM `company_exposures` GROUP BY `company_id`, `status`;
--> statement-breakpoint
INSERT INTO `company_employee_counts` (`company_id`, `n`)
	SELECT `company_id`, count(*) FROM `memberships` GROUP BY `company_id`;
--> statement-breakpoint
CREATE TRIGGER `company_employee_counts_insert` AFTER INSERT ON `memberships` FOR EACH ROW BEGIN
	INSERT INTO `company_employee_counts` (`company_id`, `n`) VALUES (NEW.`company_id`, 1)
		ON CONFLICT (`company_id`) DO UPDATE SET `n` = `n` + 1;
END;
--> statement-breakpoint
CREATE TRIGGER `company_employee_counts_delete` AFTER DELETE ON `memberships` FOR EACH ROW BEGIN
	UPDATE `company_employee_counts` SET `n` = `n` - 1 WHERE `company_id` = OLD.`company_id`;
END;
--> statement-breakpoint
CREATE TRIGGER `company_employee_counts_update` AFTER UPDATE OF `company_id` ON `memberships` FOR EACH ROW BEGIN
	UPDATE `company_employee_counts` SET `n` = `n` - 1 WHERE `company_id` = OLD.`company_id`;
	INSERT INTO `company_employee_counts` (`company_id`, `n`) VALUES (NEW.`company_id`, 1)
		ON CONFLICT (`company_id`) DO UPDATE SET `n` = `n` + 1;
END;
--> statement-breakpoint
CREATE TRIGGER `company_exposures_exposures_insert` AFTER INSERT ON `exposures` FOR EACH ROW BEGIN
	INSERT INTO `company_exposures` (`company_id`, `updated_at`, `exposure_id`, `status`)
		SELECT `company_id`, NEW.`updated_at`, NEW.`id`, NEW.`status` FROM `memberships` WHERE `person_id` = NEW.`person_id`;
END;
--> statement-breakpoint
CREATE TRIGGER `company_exposures_exposures_update` AFTER UPDATE OF `person_id`, `status`, `updated_at` ON `exposures` FOR EACH ROW BEGIN
	DELETE FROM `company_exposures` WHERE `company_id` IN (SELECT `company_id` FROM `memberships` WHERE `person_id` = OLD.`person_id`)
		AND `updated_at` = OLD.`updated_at` AND `exposure_id` = OLD.`id`;
	INSERT INTO `company_exposures` (`company_id`, `updated_at`, `exposure_id`, `status`)
		SELECT `company_id`, NEW.`updated_at`, NEW.`id`, NEW.`status` FROM `memberships` WHERE `person_id` = NEW.`person_id`;
END;
--> statement-breakpoint
CREATE TRIGGER `company_exposures_exposures_delete` AFTER DELETE ON `exposures` FOR EACH ROW BEGIN
	DELETE FROM `company_exposures` WHERE `company_id` IN (SELECT `company_id` FROM `memberships` WHERE `person_id` = OLD.`person_id`)
		AND `updated_at` = OLD.`updated_at` AND `exposure_id` = OLD.`id`;
END;
--> statement-breakpoint
CREATE TRIGGER `company_exposures_memberships_insert` AFTER INSERT ON `memberships` FOR EACH ROW BEGIN
	INSERT INTO `company_exposures` (`company_id`, `updated_at`, `exposure_id`, `status`)
		SELECT NEW.`company_id`, `updated_at`, `id`, `status` FROM `exposures` WHERE `person_id` = NEW.`person_id`;
END;
--> statement-breakpoint
CREATE TRIGGER `company_exposures_memberships_update` AFTER UPDATE OF `company_id`, `person_id` ON `memberships` FOR EACH ROW BEGIN
	DELETE FROM `company_exposures` WHERE `company_id` = OLD.`company_id`
		AND (`updated_at`, `exposure_id`) IN (SELECT `updated_at`, `id` FROM `exposures` WHERE `person_id` = OLD.`person_id`);
	INSERT INTO `company_exposures` (`company_id`, `updated_at`, `exposure_id`, `status`)
		SELECT NEW.`company_id`, `updated_at`, `id`, `status` FROM `exposures` WHERE `person_id` = NEW.`person_id`;
END;
--> statement-breakpoint
CREATE TRIGGER `company_exposures_memberships_delete` AFTER DELETE ON `memberships` FOR EACH ROW BEGIN
	DELETE FROM `company_exposures` WHERE `company_id` = OLD.`company_id`
		AND (`updated_at`, `exposure_id`) IN (SELECT `updated_at`, `id` FROM `exposures` WHERE `person_id` = OLD.`person_id`);
END;
--> statement-breakpoint
CREATE TRIGGER `company_exposure_counts_insert` AFTER INSERT ON `company_exposures` FOR EACH ROW BEGIN
	INSERT INTO `company_exposure_counts` (`company_id`, `status`, `n`) VALUES (NEW.`company_id`, NEW.`status`, 1)
		ON CONFLICT (`company_id`, `status`) DO UPDATE SET `n` = `n` + 1;
END;
--> statement-breakpoint
CREATE TRIGGER `company_exposure_counts_delete` AFTER DELETE ON `company_exposures` FOR EACH ROW BEGIN
	UPDATE `company_exposure_counts` SET `n` = `n` - 1 WHERE `company_id` = OLD.`company_id` AND `status` = OLD.`status`;
END;
--> statement-breakpoint
CREATE TRIGGER `company_counts_companies_delete` AFTER DELETE ON `companies` FOR EACH ROW BEGIN
	DELETE FROM `company_exposure_counts` WHERE `company_id` = OLD.`id`;
	DELETE FROM `company_employee_counts` WHERE `company_id` = OLD.`id`;
END;
