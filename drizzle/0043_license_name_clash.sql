-- Hand-written (triggers): a license is also named by its name, case-insensitively (matchLicense in
-- src/services/licenses.ts), so no license's name may be another license's id, and no license's id
-- another's name. The unique index of 0041 covers name against name; these cover the two crossings,
-- in the write itself, so two PUTs at once cannot both land (the loser's batch fails here and is
-- answered 409 by the catalog read again). RAISE works only in triggers (src/db/guard.ts).
CREATE TRIGGER `licenses_name_clash_insert` BEFORE INSERT ON `licenses`
WHEN EXISTS (
  SELECT 1 FROM `licenses` o
  WHERE o.`id` <> NEW.`id` AND (lower(o.`id`) = lower(NEW.`name`) OR lower(o.`name`) = lower(NEW.`id`))
)
BEGIN
  SELECT RAISE(ABORT, 'a license name is another license''s id');
END;
--> statement-breakpoint
CREATE TRIGGER `licenses_name_clash_update` BEFORE UPDATE OF `id`, `name` ON `licenses`
WHEN EXISTS (
  SELECT 1 FROM `licenses` o
  WHERE o.`id` <> NEW.`id` AND (lower(o.`id`) = lower(NEW.`name`) OR lower(o.`name`) = lower(NEW.`id`))
)
BEGIN
  SELECT RAISE(ABORT, 'a license name is another license''s id');
END;
