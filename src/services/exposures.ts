import { and, asc, eq, inArray, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { companies, exposureHistory, exposures } from "../db/schema";
import { iso } from "../lib/time";
import type { EventName } from "./events";
import { WriteBatch, type Deps } from "./outbox";

/**
 * Exposures: listings of a person found on people-search sites, and their
 * life (docs/decisions.md): a `found` scan result creates a `pending` exposure,
 * the hourly removal step moves it to `in_progress`, a confirmation from the
 * site moves it to `closed`. No other moves; a repeated move is a no-op.
 */

/** The site object carried by exposures and scan events is the short company reference. */
export { companyRefColumns as siteColumns, toCompanyRef as toSite, type CompanyRef as SiteRef } from "./companies";
import { companyRefColumns as siteColumns, toCompanyRef as toSite } from "./companies";

type SiteRow = Parameters<typeof toSite>[0];

/** Columns for `toExposure`; select them from `exposures` inner-joined with the site (`exposureQuery`). */
export const exposureColumns = {
  id: exposures.id,
  personId: exposures.personId,
  status: exposures.status,
  url: exposures.url,
  data: exposures.data,
  createdAt: exposures.createdAt,
  updatedAt: exposures.updatedAt,
  site: siteColumns,
};

export type ExposureRow = {
  id: number;
  personId: number;
  status: (typeof exposures.$inferSelect)["status"];
  url: string | null;
  data: Record<string, unknown>;
  createdAt: Date;
  updatedAt: Date;
  site: SiteRow;
};

/** The exposure object of docs/decisions.md, also the `Exposure` webhook payload. */
export const toExposure = (row: ExposureRow) => ({
  id: row.id,
  employee_id: row.personId,
  status: row.status,
  site: toSite(row.site),
  url: row.url,
  data: row.data,
  created_at: iso(row.createdAt)!,
  updated_at: iso(row.updatedAt)!,
});

export type Exposure = ReturnType<typeof toExposure>;

/** `select … from exposures join companies (the site)`; add `.where(…)`. */
export const exposureQuery = (db: Db) =>
  db.select(exposureColumns).from(exposures).innerJoin(companies, eq(companies.id, exposures.siteId));

/** History texts [seed 2.12]: each is its prefix followed by the site's name. */
export const historyPrefix = {
  found: "Found on ",
  requested: "Removal requested from ",
  closed: "Removal confirmed by ",
} as const;

/**
 * History rows for the exposures among `ids` that are still in `from`, built
 * in SQL, so a batch `[this, move from → to]` writes history exactly for the
 * rows it moves (a repeated move writes nothing).
 */
function historyForMove(db: Db, ids: number[], from: ExposureRow["status"], prefix: string, at: Date) {
  return db.insert(exposureHistory).select(
    db
      .select({
        id: sql<number>`null`.as("id"),
        exposureId: exposures.id,
        siteId: exposures.siteId,
        event: sql<string>`${prefix} || ${companies.name}`.as("event"),
        createdAt: sql<number>`${at.getTime()}`.as("created_at"),
      })
      .from(exposures)
      .innerJoin(companies, eq(companies.id, exposures.siteId))
      .where(and(inArray(exposures.id, ids), eq(exposures.status, from))),
  );
}

/**
 * The removal step of the hourly cron: pending exposures move to
 * `in_progress` in chunks of `batchSize` (oldest first), each chunk one
 * command: per exposure its history line, the move (only from `pending`),
 * and `exposure:requested` + `request:created` written only if it moved.
 * Bounded by `maxBatches` per run so one run stays within the Worker's
 * per-invocation query budget; the next run picks up the rest.
 * Returns the number of exposures moved.
 */
export async function submitRemovalRequests(
  deps: Deps,
  now: Date,
  { batchSize = 25, maxBatches = 4 } = {},
): Promise<number> {
  const { db } = deps;
  let moved = 0;
  for (let round = 0; round < maxBatches; round++) {
    const pending = await exposureQuery(db)
      .where(eq(exposures.status, "pending"))
      .orderBy(asc(exposures.id))
      .limit(batchSize)
      .all();
    if (pending.length === 0) break;
    const batch = new WriteBatch(deps, now);
    const moves = pending.map((row) =>
      addMove(batch, row, { from: "pending", to: "in_progress", history: historyPrefix.requested, at: now }, [
        "exposure:requested",
        "request:created",
      ]),
    );
    const { results } = await batch.commit();
    moved += moves.filter((position) => (results[position] as unknown[]).length > 0).length;
    if (pending.length < batchSize) break;
  }
  return moved;
}

type Move = { from: "pending" | "in_progress"; to: "in_progress" | "closed"; history: string; at: Date };

/**
 * Adds one exposure's move to `batch`: its history line, the update (only
 * from `move.from`, so a repeated move is a no-op), and its events, written
 * only when the update moved it. Returns the update's position.
 */
function addMove(batch: WriteBatch, row: ExposureRow, move: Move, events: EventName[]): number {
  const { db, now } = { db: batch.deps.db, now: batch.now };
  batch.add(historyForMove(db, [row.id], move.from, move.history, move.at));
  const position = batch.add(
    db
      .update(exposures)
      .set({
        status: move.to,
        ...(move.to === "closed" ? { closedAt: move.at } : { requestedAt: move.at }),
        updatedAt: now,
      })
      .where(and(eq(exposures.id, row.id), eq(exposures.status, move.from)))
      .returning({ id: exposures.id }),
  );
  const exposure = toExposure({ ...row, status: move.to, updatedAt: now });
  batch.emit(
    events.map((event) => ({ personId: row.personId, event, payload: exposure })),
    { ifChanged: true },
  );
  return position;
}

/**
 * A site confirmed the removal: an `in_progress` exposure moves to `closed`
 * (`exposure:closed` and `request:closed`). Any other state is left alone.
 * Returns what happened, for the consumer's log.
 */
export async function confirmRemoval(
  deps: Deps,
  exposureId: number,
  at: Date,
): Promise<"closed" | "unchanged" | "missing"> {
  const row = await exposureQuery(deps.db).where(eq(exposures.id, exposureId)).get();
  if (!row) return "missing";
  if (row.status !== "in_progress") return "unchanged";
  const batch = new WriteBatch(deps);
  const position = addMove(batch, row, { from: "in_progress", to: "closed", history: historyPrefix.closed, at }, [
    "exposure:closed",
    "request:closed",
  ]);
  const { results } = await batch.commit();
  return (results[position] as unknown[]).length > 0 ? "closed" : "unchanged";
}
