import { and, eq, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { inList } from "../db/sql";
import { companies, exposureHistory, exposures, memberships } from "../db/schema";
import type { EventName } from "../domain/events";
import { WriteBatch } from "./outbox";
import type { Deps } from "./deps";

/**
 * Exposures: listings of a person found on people-search sites, and their
 * life (docs/decisions.md): a `found` scan result creates a `pending` exposure,
 * the hourly removal step moves it to `in_progress`, a confirmation from the
 * site moves it to `closed`. No other moves; a repeated move is a no-op.
 */

/** The site object carried by exposures and scan events is the short company reference. */
export { companyRefColumns as siteColumns, type CompanyRef as SiteRef } from "./companies";
import { companyRefColumns as siteColumns } from "./companies";

/** The payload builders and history texts, one for both homes of the scan side (domain/scan-payloads.ts). */
export { historyPrefix, toExposure, toSite, type Exposure, type ExposureRow } from "../domain/scan-payloads";
import { historyPrefix, toExposure, type ExposureRow } from "../domain/scan-payloads";

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

/** `select … from exposures join companies (the site)`; add `.where(…)`. */
export const exposureQuery = (db: Db) =>
  db.select(exposureColumns).from(exposures).innerJoin(companies, eq(companies.id, exposures.siteId));

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
      .where(and(inList(exposures.id, ids), eq(exposures.status, from))),
  );
}

/** Exposures one removal batch moves: one D1 batch of three statements, each id list bound as one JSON value. */
export const REMOVAL_BATCH_SIZE = 100;
/**
 * Batches one invocation runs: 1,000 moves in 40 D1 statements and about 20
 * queue sends per 1,000 deliveries, far inside an invocation's 1,000
 * operations; what is left continues through `removals` messages.
 */
export const REMOVAL_BATCHES_PER_INVOCATION = 10;

/**
 * The pending exposures the removal step takes next, at most `limit`, taken
 * in turns across companies (docs/decisions.md, "Removal requests"): every
 * company's oldest pending exposure first, then every company's second, and
 * so on, oldest first within a turn. So one company's backlog does not delay
 * another's first removal past the first chunk. Read from the pending rows
 * of `company_exposures` (a partial index by company and exposure): the
 * companies with pending exposures one index seek each, then each one's
 * oldest `ceil(limit / companies)`, so the read is bounded by the chunk and
 * the number of such companies, not by the backlog. An exposure of a person
 * in two companies takes its earlier turn. Exposures of people in no company
 * take the turns left, among the oldest `limit` pending exposures. Only
 * companies served from D1 take turns (`scans_in_object` false): an exposure
 * D1 still holds of a member of a company moved to its object waits for the
 * move's clean-up, and that company's object runs its own step. The
 * set-based batches below re-check that each is still pending.
 */
export async function pendingInTurns(db: Db, limit: number): Promise<{ ids: number[]; more: boolean }> {
  const rows = await db.all<{ id: number; turn: number; share: number | null }>(sql`
    with recursive owners(id) as (
      select (select min(company_id) from company_exposures where status = 'pending')
      union all
      select (select min(company_id) from company_exposures where status = 'pending' and company_id > owners.id)
      from owners where owners.id is not null
    ),
    -- Only companies served from D1: a company whose scan side is in its object runs its own step, and
    -- D1's rows of its members are on their way there (services/company-scan-moves.ts).
    d1_owners(id) as (
      select owners.id from owners join ${companies} c on c.id = owners.id and c.scans_in_object = 0
    ),
    share(n) as (select cast(max(1, (${limit} + count(*) - 1) / max(count(*), 1)) as integer) from d1_owners),
    turns(id, turn) as (
      select q.exposure_id, row_number() over (partition by q.company_id order by q.exposure_id)
      from d1_owners owners join company_exposures q on q.company_id = owners.id and q.status = 'pending'
      where q.exposure_id in (
        select exposure_id from company_exposures
        where company_id = owners.id and status = 'pending'
        order by exposure_id limit (select n from share))
    ),
    memberless(id) as (
      select oldest.id from (
        select ${exposures.id} as id, ${exposures.personId} as person_id from ${exposures}
        where ${exposures.status} = 'pending' order by ${exposures.id} limit cast(${limit} as integer)
      ) oldest
      where not exists (select 1 from ${memberships} where ${memberships.personId} = oldest.person_id)
    )
    select id, min(turn) as turn, (select n from share) as share from (
      select id, turn from turns
      union all select id, ${limit} + 1 from memberless
    ) group by id order by min(turn), id limit cast(${limit} as integer)`);
  // More may be pending when the chunk is full, or when some company gave its whole share.
  const more = rows.length === limit || rows.some((row) => row.turn === row.share);
  return { ids: rows.map((row) => row.id), more };
}

/**
 * The removal step (the hourly cron, then `removals` messages on the
 * background queue while a full chunk was moved): pending exposures move to
 * `in_progress` in turns across companies (`pendingInTurns`), `batchSize`
 * per command, at most `maxBatches` commands per invocation. A command is
 * set-based whatever its size: the history lines and the
 * `exposure:requested` + `request:created` events of the exposures still
 * pending, then the move (only from `pending`), in one batch, so a repeated
 * or concurrent run moves and reports each exposure once. `more`: the
 * invocation took a full chunk or some company's whole share, so pending
 * exposures may remain.
 */
export async function submitRemovalRequests(
  deps: Deps,
  now: Date,
  { batchSize = REMOVAL_BATCH_SIZE, maxBatches = REMOVAL_BATCHES_PER_INVOCATION } = {},
): Promise<{ moved: number; more: boolean }> {
  const { db } = deps;
  const chunk = batchSize * maxBatches;
  const { ids: next, more } = await pendingInTurns(db, chunk);
  let moved = 0;
  for (let from = 0; from < next.length; from += batchSize) {
    const pending = await exposureQuery(db)
      .where(and(inList(exposures.id, next.slice(from, from + batchSize)), eq(exposures.status, "pending")))
      .all();
    if (pending.length === 0) continue;
    const ids = pending.map((row) => row.id);
    const batch = new WriteBatch(deps, now);
    batch.add(historyForMove(db, ids, "pending", historyPrefix.requested, now));
    const events = ["exposure:requested", "request:created"] as const;
    batch.emit(
      pending.flatMap((row) => {
        const exposure = toExposure({ ...row, status: "in_progress", updatedAt: now });
        return events.map((event) => ({ personId: row.personId, event, payload: exposure }));
      }),
      // Only for the exposures the update below moves: those still pending at this point of the batch.
      {
        when: (payload) =>
          sql`exists (select 1 from ${exposures} where ${exposures.id} = json_extract(${payload}, '$.id') and ${exposures.status} = 'pending')`,
      },
    );
    const update = batch.add(
      db
        .update(exposures)
        .set({ status: "in_progress", requestedAt: now, updatedAt: now })
        .where(and(inList(exposures.id, ids), eq(exposures.status, "pending")))
        .returning({ id: exposures.id }),
    );
    const { results } = await batch.commit();
    moved += (results[update] as unknown[]).length;
  }
  return { moved, more };
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
