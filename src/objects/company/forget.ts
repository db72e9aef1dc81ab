import { sql } from "drizzle-orm";
import type { DrizzleSqliteDODatabase } from "drizzle-orm/durable-sqlite";
import { countStatusChange, EXPOSURE_STATUSES } from "./exposures";

/*
 * Forgetting people (docs/architecture.md, "The Company object"): when a membership ends, the
 * company's object deletes that person's scan side (scans, results, exposures with their history)
 * and its counters follow. D1 records the duty in the batch that ends the membership
 * (`company_forgets`) and calls `forgetPeople` after the commit; the minute sweep retries.
 */

type Db = DrizzleSqliteDODatabase;

/**
 * Deletes the scan side of `personIds` recorded at or before `before` (the time their membership
 * ended): a person who joined again since keeps only what was recorded after. One transaction;
 * forgetting twice changes nothing. Returns how many exposures went.
 */
export function forgetPeople(db: Db, personIds: number[], before: Date): number {
  if (personIds.length === 0) return 0;
  const people = JSON.stringify([...new Set(personIds)]);
  const at = before.getTime();
  return db.transaction((tx) => {
    const gone = sql`select id from exposures
      where person_id in (select value from json_each(${people})) and created_at <= ${at}`;
    const counts = tx.all<{ status: (typeof EXPOSURE_STATUSES)[number]; n: number }>(
      sql`select status, count(*) as n from exposures where id in (${gone}) group by status`,
    );
    tx.run(sql`delete from exposure_history where exposure_id in (${gone})`);
    tx.run(sql`delete from exposures where id in (${gone})`);
    for (const { status, n } of counts) countStatusChange(tx, status, null, n);
    tx.run(
      sql`delete from scan_results where person_id in (select value from json_each(${people})) and created_at <= ${at}`,
    );
    tx.run(sql`delete from scans where person_id in (select value from json_each(${people})) and created_at <= ${at}`);
    return counts.reduce((sum, row) => sum + row.n, 0);
  });
}
