import { eq, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { pruneOlderThan, type PruneSpec } from "../db/prune";
import { exposures, scanResults, scans } from "../db/schema";
import { DAY_MS } from "../lib/time";

/**
 * Retention of what scans leave in D1 (docs/decisions.md, "Retention"): what
 * a scan was is worth little a week after it ran; what a listing is stays
 * with its exposure while that exposure is open.
 */
export const SCAN_RETENTION_DAYS = {
  /** A finished scan (its `scans` row), after it finished. */
  scans: 7,
  /**
   * A scan result, after it was recorded: a `found` one (its exposure keeps what the listing
   * is), a `not_found` or `failed` one once a newer conclusive result for its person and site
   * exists.
   */
  results: 7,
  /** A closed exposure, with its history (cascade), after it closed. */
  closedExposures: 365,
} as const;

type Limits = Pick<PruneSpec, "chunk" | "maxStatements">;

const before = (now: Date, days: number) => new Date(now.getTime() - days * DAY_MS);

/** Scans finished more than 7 days ago, by `completed_at` (partial index). A scan never completed stays. */
export const pruneFinishedScans = (db: Db, now: Date, limits: Limits = {}) =>
  pruneOlderThan(db, {
    table: scans,
    column: scans.completedAt,
    cutoff: before(now, SCAN_RETENTION_DAYS.scans),
    ...limits,
  });

/**
 * Scan results recorded more than 7 days ago that nothing reads any more:
 * - a `not_found` or `failed` result once a strictly newer conclusive result
 *   (found or not found) of the same person and site exists;
 * - a `found` result, whose listing its exposure keeps, once no older
 *   `not_found` result of its person and site is left.
 * The employee's "sites not found" count (services/people.ts) counts the sites
 * whose newest conclusive result is `not_found`: the newest `not_found` never
 * goes, and a `found` result goes only after every older `not_found`, so the
 * count is the same before and after every chunk. Both probes go through
 * `(person_id, site_id, at)`.
 */
export const pruneSupersededResults = (db: Db, now: Date, limits: Limits = {}) =>
  pruneOlderThan(db, {
    table: scanResults,
    column: scanResults.createdAt,
    cutoff: before(now, SCAN_RETENTION_DAYS.results),
    where: sql`(case when ${scanResults.outcome} = 'found'
      then not exists (select 1 from ${scanResults} as earlier
        where earlier.person_id = ${scanResults.personId} and earlier.site_id = ${scanResults.siteId}
          and earlier.at < ${scanResults.at} and earlier.outcome = 'not_found')
      else exists (select 1 from ${scanResults} as later
        where later.person_id = ${scanResults.personId} and later.site_id = ${scanResults.siteId}
          and later.at > ${scanResults.at} and later.outcome in ('found', 'not_found')) end)`,
    ...limits,
  });

/**
 * Exposures closed more than 365 days ago, by `closed_at` (partial index);
 * their history goes with them (foreign key, ON DELETE CASCADE). An open
 * exposure (pending, in progress) is never pruned, nor its history.
 */
export const pruneClosedExposures = (db: Db, now: Date, limits: Limits = {}) =>
  pruneOlderThan(db, {
    table: exposures,
    column: exposures.closedAt,
    cutoff: before(now, SCAN_RETENTION_DAYS.closedExposures),
    where: eq(exposures.status, "closed"),
    ...limits,
  });
