import { sql } from "drizzle-orm";
import type { DrizzleSqliteDODatabase } from "drizzle-orm/durable-sqlite";
import { DAY_MS } from "../../lib/time";
import { countStatusChange } from "./exposures";

/*
 * Retention of the company's scan side in its object (docs/decisions.md, "Retention"), the same
 * rules as D1's (services/scan-retention.ts): finished scans 7 days after they finished,
 * superseded scan results 7 days after they were recorded, closed exposures (with their history)
 * 365 days after they closed. A duty of the object's alarm: a chunk per call, then the time it is
 * due again.
 */

type Db = DrizzleSqliteDODatabase;

/** The rules' days, as D1's `SCAN_RETENTION_DAYS`. */
export const OBJECT_SCAN_RETENTION_DAYS = { scans: 7, results: 7, closedExposures: 365 } as const;

/** Rows of each kind deleted per call. */
export const SCAN_PRUNE_CHUNK = 500;

/**
 * A scan result that nothing reads any more (D1's `pruneSupersededResults`): a `not_found` or
 * `failed` one once a strictly newer conclusive result of its person and site exists; a `found`
 * one once no older `not_found` of its person and site is left. So the newest `not_found` never
 * goes and the "sites not found" count is the same before and after every chunk.
 */
const superseded = sql`(case when r.outcome = 'found'
  then not exists (select 1 from scan_results earlier
    where earlier.person_id = r.person_id and earlier.site_id = r.site_id
      and earlier.at < r.at and earlier.outcome = 'not_found')
  else exists (select 1 from scan_results later
    where later.person_id = r.person_id and later.site_id = r.site_id
      and later.at > r.at and later.outcome in ('found', 'not_found')) end)`;

/**
 * Deletes up to `chunk` rows of each kind past its time at `now`, in one transaction (a closed
 * exposure with its history and its counter). Returns how many went and when the step is due again
 * (ms): `now` while a chunk came back full, else the first time a kept row falls due, or null when
 * nothing is kept that could fall due.
 */
export function pruneScanSide(
  db: Db,
  now: number,
  chunk = SCAN_PRUNE_CHUNK,
): { pruned: { scans: number; results: number; exposures: number }; next: number | null } {
  const cutoff = (days: number) => now - days * DAY_MS;
  const scansBefore = cutoff(OBJECT_SCAN_RETENTION_DAYS.scans);
  const resultsBefore = cutoff(OBJECT_SCAN_RETENTION_DAYS.results);
  const exposuresBefore = cutoff(OBJECT_SCAN_RETENTION_DAYS.closedExposures);
  const pruned = db.transaction((tx) => {
    const scans = tx.all<{ id: string }>(
      sql`delete from scans where id in (
            select id from scans indexed by scans_completed_idx
            where completed_at is not null and completed_at < ${scansBefore} order by completed_at limit ${chunk})
          returning id`,
    ).length;
    const results = tx.all<{ id: number }>(
      sql`delete from scan_results where id in (
            select r.id from scan_results r indexed by scan_results_created_idx
            where r.created_at < ${resultsBefore} and ${superseded} order by r.created_at limit ${chunk})
          returning id`,
    ).length;
    const closed = sql`select id from exposures indexed by exposures_closed_idx
      where closed_at is not null and closed_at < ${exposuresBefore} and status = 'closed'
      order by closed_at limit ${chunk}`;
    tx.run(sql`delete from exposure_history where exposure_id in (${closed})`);
    const exposures = tx.all<{ id: number }>(sql`delete from exposures where id in (${closed}) returning id`).length;
    countStatusChange(tx, "closed", null, exposures);
    return { scans, results, exposures };
  });
  if (pruned.scans === chunk || pruned.results === chunk || pruned.exposures === chunk) return { pruned, next: now };
  const dues = [
    db.get<{ at: number | null }>(
      sql`select min(completed_at) + ${OBJECT_SCAN_RETENTION_DAYS.scans * DAY_MS} as at from scans
          where completed_at is not null`,
    )?.at,
    // The oldest result not yet old enough; older ones kept are the ones still read (they go once a newer result
    // supersedes them, and a newer result is itself due 7 days later, when they are looked at again).
    db.get<{ at: number | null }>(
      sql`select min(created_at) + ${OBJECT_SCAN_RETENTION_DAYS.results * DAY_MS} as at from scan_results
          where created_at >= ${resultsBefore}`,
    )?.at,
    db.get<{ at: number | null }>(
      sql`select min(closed_at) + ${OBJECT_SCAN_RETENTION_DAYS.closedExposures * DAY_MS} as at from exposures
          where closed_at is not null and status = 'closed'`,
    )?.at,
  ].filter((at): at is number => typeof at === "number");
  return { pruned, next: dues.length === 0 ? null : Math.max(now, Math.min(...dues)) };
}
