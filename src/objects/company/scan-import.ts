import { eq, sql, type SQL } from "drizzle-orm";
import type { DrizzleSqliteDODatabase } from "drizzle-orm/durable-sqlite";
import type { ScanSideChunk } from "../../domain/company-scans";
import { countStatusChange, EXPOSURE_STATUSES } from "./exposures";
import { claimCompany, keepSites, type Tx } from "./scans";
import { counters, exposures, scanResults, scans } from "./schema";

/*
 * The scan side of a company older than migration 0032, carried over from D1 by the operator's
 * move (services/company-scan-moves.ts; docs/architecture.md, "The Company object"): a chunk of
 * its members' rows, inserted keeping D1's exposure ids (below 2^28, so they never meet the
 * object's own). Idempotent: a chunk given twice changes nothing; a row D1 changed since is
 * taken, and a row the object changed later than D1's copy is kept as the object has it.
 */

type Db = DrizzleSqliteDODatabase;

/**
 * Set by the first chunk a move gives, cleared when the move has finished (`finishMove`): until
 * then D1 may still act on the exposures it carried over (its removal step, before the flip, and
 * its own copies until the recopy reaches them), so the object's removal step leaves them alone.
 */
const MOVE_UNDER_WAY = "move:under-way";

/** Whether the operator's move of the company's scan side is under way. */
export const moveUnderWay = (db: Db) =>
  db.select({ value: counters.value }).from(counters).where(eq(counters.name, MOVE_UNDER_WAY)).get() !== undefined;

/** The move has finished: the object acts on every exposure. Returns whether any is pending. */
export function finishMove(db: Db): { pending: boolean } {
  db.delete(counters).where(eq(counters.name, MOVE_UNDER_WAY)).run();
  return { pending: db.get(sql`select 1 from exposures where status = 'pending' limit 1`) !== undefined };
}

/**
 * Keeps a chunk of D1's scan side, and moves the per-status counters by what it changed: the chunk's
 * people's exposures counted by status before and after (the `(person_id, status)` index: bounded by
 * the chunk, never a count of the company's whole set, which would make a move of a big company
 * quadratic).
 */
export function importScanSide(db: Db, companyId: number, chunk: ScanSideChunk): void {
  const people = [...new Set(chunk.exposures.map((exposure) => exposure.personId))];
  db.transaction((tx) => {
    const before = statusCountsOf(tx, people);
    claimCompany(tx, companyId);
    tx.insert(counters).values({ name: MOVE_UNDER_WAY, value: 1 }).onConflictDoNothing().run();
    keepSites(tx, chunk.sites);
    for (const scan of chunk.scans) importScan(tx, scan);
    for (const result of chunk.results) tx.insert(scanResults).values(result).onConflictDoNothing().run();
    for (const exposure of chunk.exposures) {
      if (exposure.status !== "closed" && !oneListingOneExposure(tx, exposure)) continue;
      importExposure(tx, exposure);
    }
    for (const line of chunk.history) importHistoryLine(tx, line);
    const after = statusCountsOf(tx, people);
    for (const status of EXPOSURE_STATUSES) {
      const delta = (after.get(status) ?? 0) - (before.get(status) ?? 0);
      if (delta > 0) countStatusChange(tx, null, status, delta);
      else if (delta < 0) countStatusChange(tx, status, null, -delta);
    }
  });
}

/** How many exposures of `people` are in each status. */
function statusCountsOf(tx: Tx, people: number[]): Map<string, number> {
  if (people.length === 0) return new Map();
  const rows = tx.all<{ status: string; n: number }>(
    sql`select status, count(*) as n from exposures where person_id in (select value from json_each(${JSON.stringify(people)})) group by status`,
  );
  return new Map(rows.map((row) => [row.status, row.n]));
}

/**
 * A listing D1 found open before the flip, and the object found again after it but before the
 * recopy carried D1's over: the listing is one exposure. While the object's own copy is untouched
 * (pending), D1's, the first found, is kept as D1 would have kept it, and the object's own goes with
 * its history. Once the object acted on its own (requested its removal, or closed it), D1's copy
 * still pending is the one left out: the company must not get a second removal request for one
 * listing. Returns whether D1's copy is kept.
 */
function oneListingOneExposure(tx: Tx, exposure: ScanSideChunk["exposures"][number]): boolean {
  const own = (statuses: SQL) => sql`select id from exposures
    where person_id = ${exposure.personId} and site_id = ${exposure.siteId} and url is ${exposure.url}
      and status in ${statuses} and id <> ${exposure.id} and created_at > ${exposure.createdAt.getTime()}`;
  if (exposure.status === "pending" && tx.get(sql`select 1 from (${own(sql`('in_progress', 'closed')`)}) limit 1`))
    return false;
  const open = own(sql`('pending', 'in_progress')`);
  tx.run(sql`delete from exposure_history where exposure_id in (${open})`);
  tx.run(sql`delete from exposures where id in (${open})`);
  return true;
}

/** Only D1's newer change replaces the object's row (`updated_at`). */
const newer = (table: typeof scans | typeof exposures) => sql`excluded.updated_at > ${table.updatedAt}`;

function importScan(tx: Tx, scan: ScanSideChunk["scans"][number]) {
  tx.insert(scans)
    .values(scan)
    .onConflictDoUpdate({
      target: scans.id,
      set: {
        status: sql`excluded.status`,
        startedAt: sql`excluded.started_at`,
        completedAt: sql`excluded.completed_at`,
        updatedAt: sql`excluded.updated_at`,
      },
      setWhere: newer(scans),
    })
    .run();
}

function importExposure(tx: Tx, exposure: ScanSideChunk["exposures"][number]) {
  tx.insert(exposures)
    .values(exposure)
    .onConflictDoUpdate({
      target: exposures.id,
      set: {
        status: sql`excluded.status`,
        url: sql`excluded.url`,
        data: sql`excluded.data`,
        requestedAt: sql`excluded.requested_at`,
        closedAt: sql`excluded.closed_at`,
        updatedAt: sql`excluded.updated_at`,
      },
      setWhere: newer(exposures),
    })
    .run();
}

/** A history line of D1's, once: the object's own line ids differ from D1's, so a line is known by what it says. */
function importHistoryLine(tx: Tx, line: ScanSideChunk["history"][number]) {
  const at = line.createdAt.getTime();
  tx.run(
    sql`insert into exposure_history (exposure_id, site_id, event, created_at)
        select ${line.exposureId}, ${line.siteId}, ${line.event}, ${at}
        where exists (select 1 from exposures where id = ${line.exposureId})
          and not exists (select 1 from exposure_history
            where exposure_id = ${line.exposureId} and event = ${line.event} and created_at = ${at})`,
  );
}

/** The people the object holds scan rows of (the move forgets those who are no longer members). */
export function heldPeople(db: Db): number[] {
  return db
    .all<{ person_id: number }>(
      sql`select person_id from exposures union select person_id from scans union select person_id from scan_results`,
    )
    .map((row) => row.person_id);
}
