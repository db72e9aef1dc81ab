import { eq, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { pruneOlderThan, type PruneSpec } from "../db/prune";
import { exposures, scanResults, scans } from "../db/schema";

/**
 * Retention of what scans leave in D1 (docs/decisions.md, "Retention"): what
 * a scan was is worth little once the next one has run; what a listing is
 * stays with its exposure while that exposure is open.
 */
export const SCAN_RETENTION_DAYS = {
  /** A finished scan (its `scans` row): the month between two monthly scans. */
  scans: 30,
  /** A scan result once a newer conclusive result for its person and site exists. */
  supersededResults: 30,
  /** A closed exposure, with its history (cascade), after it closed. */
  closedExposures: 365,
} as const;

type Limits = Pick<PruneSpec, "chunk" | "maxStatements">;

const DAY_MS = 24 * 3600 * 1000;
const before = (now: Date, days: number) => new Date(now.getTime() - days * DAY_MS);

/** Scans finished more than 30 days ago, by `completed_at` (partial index). A scan never completed stays. */
export const pruneFinishedScans = (db: Db, now: Date, limits: Limits = {}) =>
  pruneOlderThan(db, {
    table: scans,
    column: scans.completedAt,
    cutoff: before(now, SCAN_RETENTION_DAYS.scans),
    ...limits,
  });

/**
 * Scan results recorded more than 30 days ago for which a strictly newer
 * conclusive result (found or not found) of the same person and site exists.
 * The newest conclusive result of every person and site stays however old:
 * the employee's "sites not found" count reads it (services/people.ts), and
 * removing only results older than it leaves that count as it was. The
 * newer result is found through `(person_id, site_id, at)`.
 */
export const pruneSupersededResults = (db: Db, now: Date, limits: Limits = {}) =>
  pruneOlderThan(db, {
    table: scanResults,
    column: scanResults.createdAt,
    cutoff: before(now, SCAN_RETENTION_DAYS.supersededResults),
    where: sql`exists (select 1 from ${scanResults} as later
      where later.person_id = ${scanResults.personId} and later.site_id = ${scanResults.siteId}
        and later.at > ${scanResults.at} and later.outcome in ('found', 'not_found'))`,
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
