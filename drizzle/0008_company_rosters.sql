CREATE TABLE `company_rosters` (
	`company_id` integer PRIMARY KEY NOT NULL,
	`first_person_id` integer NOT NULL,
	`first_at` integer NOT NULL,
	`second_at` integer,
	FOREIGN KEY (`company_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
-- Rosters of the companies that exist already (the same query as rebuildRosters in src/db/rosters.ts).
INSERT OR REPLACE INTO `company_rosters` (`company_id`, `first_person_id`, `first_at`, `second_at`)
SELECT ranked.company_id, ranked.person_id, ranked.t,
       (SELECT max(max(p2.updated_at, m2.updated_at)) FROM memberships m2 JOIN people p2 ON p2.id = m2.person_id
        WHERE m2.company_id = ranked.company_id AND m2.person_id != ranked.person_id)
FROM (SELECT m.company_id, m.person_id, max(p.updated_at, m.updated_at) AS t,
             row_number() OVER (PARTITION BY m.company_id ORDER BY max(p.updated_at, m.updated_at) DESC, m.person_id) AS rn
      FROM memberships m JOIN people p ON p.id = m.person_id) ranked
WHERE ranked.rn = 1;
