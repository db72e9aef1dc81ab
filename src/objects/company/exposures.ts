import { sql } from "drizzle-orm";
import type { DrizzleSqliteDODatabase } from "drizzle-orm/durable-sqlite";
import type { BaseSQLiteDatabase } from "drizzle-orm/sqlite-core";
import type {
  ExposureCounts,
  ExposureHistoryLine,
  ExposurePageFilter,
  ExposureRecord,
  SiteRow,
} from "../../domain/company-scans";
import { counters } from "./schema";

/*
 * The reads of the company's exposures in its own object (docs/architecture.md, "The Company
 * object"): the exposures page, one exposure's history and the counts a Person shows. Each is
 * index-backed: a page walks `exposures_updated_idx` (or `exposures_status_idx` per status) for
 * its window only, and the total without `since` is the sum of the per-status counters the writes
 * keep (`countStatusChange`), so no read sorts or counts the company's whole set. Sites are
 * rendered from the object's own `sites` table: no D1 read.
 */

type Db = DrizzleSqliteDODatabase;
/** The object's database or a transaction of it: what a write inside `db.transaction` passes on. */
export type SyncDb = BaseSQLiteDatabase<"sync", unknown>;

export const EXPOSURE_STATUSES = ["pending", "in_progress", "closed"] as const satisfies ExposureRecord["status"][];
type Status = (typeof EXPOSURE_STATUSES)[number];

/** The counter row holding how many exposures of the company are in `status`. */
export const statusCounter = (status: Status) => `exposures:${status}`;

/**
 * Keeps the per-status counts: `n` exposures moved from `from` to `to` (null `from`: created;
 * null `to`: deleted). Every write that creates, moves or deletes exposures calls it in the same
 * transaction as the change (the scan run, the removal step, a confirmation, retention, forgetting).
 */
export function countStatusChange(db: SyncDb, from: Status | null, to: Status | null, n = 1) {
  if (n === 0 || from === to) return;
  for (const [status, delta] of [
    [from, -n],
    [to, n],
  ] as const) {
    if (status === null) continue;
    db.insert(counters)
      .values({ name: statusCounter(status), value: delta })
      .onConflictDoUpdate({ target: counters.name, set: { value: sql`${counters.value} + ${delta}` } })
      .run();
  }
}

/** Rebuilds the per-status counters from the rows (one scan of the status index: for a repair, not a request or a move's chunk). */
export function recountStatuses(db: Db) {
  db.transaction((tx) => {
    const rows = tx.all<{ status: Status; n: number }>(
      sql`select status, count(*) as n from exposures group by status`,
    );
    for (const status of EXPOSURE_STATUSES) {
      const n = rows.find((row) => row.status === status)?.n ?? 0;
      tx.insert(counters)
        .values({ name: statusCounter(status), value: n })
        .onConflictDoUpdate({ target: counters.name, set: { value: n } })
        .run();
    }
  });
}

/**
 * An exposure of the page, with its site as the object's `sites` table has it; its data as the
 * JSON text the object keeps (the Worker parses it: an RPC result carries no `unknown`).
 */
export type ExposureItem = Omit<ExposureRecord, "data"> & { data: string; site: SiteRow };

export type ItemRow = {
  id: number;
  person_id: number;
  site_id: number;
  status: Status;
  url: string | null;
  data: string;
  created_at: number;
  updated_at: number;
  site_name: string;
  site_slug: string;
  site_logo: string | null;
  site_url: string;
};

/** The columns of an exposure with its site, read from `exposures e join sites s` (`toItem` reads them). */
export const itemColumns = sql`e.id, e.person_id, e.site_id, e.status, e.url, e.data, e.created_at, e.updated_at,
  s.name as site_name, s.slug as site_slug, s.logo as site_logo, s.url as site_url`;

export const toItem = (row: ItemRow): ExposureItem => ({
  id: row.id,
  personId: row.person_id,
  siteId: row.site_id,
  status: row.status,
  url: row.url,
  data: row.data,
  createdAt: new Date(row.created_at),
  updatedAt: new Date(row.updated_at),
  site: { id: row.site_id, name: row.site_name, slug: row.site_slug, logo: row.site_logo, url: row.site_url },
});

/** The statuses a filter asks for, each once, in a fixed order; all three when it names none. */
const statusesOf = (filter: ExposurePageFilter): Status[] =>
  filter.statuses ? EXPOSURE_STATUSES.filter((status) => filter.statuses!.includes(status)) : [...EXPOSURE_STATUSES];

/**
 * One page of the company's exposures, oldest change first (`updated_at`, then id), `limit` of
 * them from `offset`, and how many match (services/employee-exposures.ts `listExposures`):
 * - named employees: their rows by `exposures_person_idx`, sorted (a few people's);
 * - every status: the window of `exposures_updated_idx`, from `since` when given;
 * - some statuses: the first `offset + limit` of each status by `exposures_status_idx`, merged.
 * The total is the counters' sum, or with `since` a count of the index range from `since` on.
 */
export function exposurePage(
  db: Db,
  filter: ExposurePageFilter,
  offset: number,
  limit: number,
): { items: ExposureItem[]; total: number } {
  const statuses = statusesOf(filter);
  if (statuses.length === 0 || filter.employees?.length === 0) return { items: [], total: 0 };
  const since = filter.since ? sql` and e.updated_at >= ${filter.since.getTime()}` : sql``;
  const limits = sql`limit ${limit} offset ${offset}`;
  if (filter.employees) {
    const where = sql`e.person_id in (select value from json_each(${JSON.stringify(filter.employees)}))
      and e.status in (select value from json_each(${JSON.stringify(statuses)}))${since}`;
    const items = db.all<ItemRow>(
      sql`select ${itemColumns} from exposures e join sites s on s.id = e.site_id
          where ${where} order by e.updated_at, e.id ${limits}`,
    );
    const total = db.get<{ n: number }>(
      sql`select count(*) as n from exposures e join sites s on s.id = e.site_id where ${where}`,
    );
    return { items: items.map(toItem), total: total?.n ?? 0 };
  }
  let ids: { id: number }[];
  if (statuses.length === EXPOSURE_STATUSES.length) {
    ids = db.all<{ id: number }>(
      sql`select e.id from exposures e indexed by exposures_updated_idx where 1${since}
          order by e.updated_at, e.id ${limits}`,
    );
  } else {
    // Each status's first `offset + limit` rows, in the page's order, by its own index range; then merged.
    const window = offset + limit;
    const parts = statuses.map(
      (status) =>
        sql`select * from (select e.id, e.updated_at from exposures e indexed by exposures_status_idx
              where e.status = ${status}${since} order by e.updated_at, e.id limit ${window})`,
    );
    ids = db.all<{ id: number }>(
      sql`select id from (${sql.join(parts, sql` union all `)}) order by updated_at, id ${limits}`,
    );
  }
  const items =
    ids.length === 0
      ? []
      : db.all<ItemRow>(
          sql`select ${itemColumns} from exposures e join sites s on s.id = e.site_id
              where e.id in (select value from json_each(${JSON.stringify(ids.map((row) => row.id))}))
              order by e.updated_at, e.id`,
        );
  return { items: items.map(toItem), total: statusTotal(db, statuses, filter.since) };
}

/** How many exposures are in `statuses` (changed at or after `since`): the counters, or the index ranges. */
function statusTotal(db: Db, statuses: Status[], since: Date | null): number {
  if (since === null) {
    const row = db.get<{ n: number | null }>(
      sql`select sum(value) as n from counters
          where name in (select value from json_each(${JSON.stringify(statuses.map(statusCounter))}))`,
    );
    return row?.n ?? 0;
  }
  if (statuses.length === EXPOSURE_STATUSES.length) {
    return (
      db.get<{ n: number }>(
        sql`select count(*) as n from exposures indexed by exposures_updated_idx where updated_at >= ${since.getTime()}`,
      )?.n ?? 0
    );
  }
  let total = 0;
  for (const status of statuses) {
    total +=
      db.get<{ n: number }>(
        sql`select count(*) as n from exposures indexed by exposures_status_idx
            where status = ${status} and updated_at >= ${since.getTime()}`,
      )?.n ?? 0;
  }
  return total;
}

/** One exposure's history, oldest first, each line with its site; null when the company has no such exposure. */
export function exposureHistory(db: Db, exposureId: number): (ExposureHistoryLine & { site: SiteRow })[] | null {
  const owner = db.get<{ id: number }>(sql`select id from exposures where id = ${exposureId}`);
  if (!owner) return null;
  const rows = db.all<{
    event: string;
    site_id: number;
    created_at: number;
    name: string;
    slug: string;
    logo: string | null;
    url: string;
  }>(
    sql`select h.event, h.site_id, h.created_at, s.name, s.slug, s.logo, s.url
        from exposure_history h join sites s on s.id = h.site_id
        where h.exposure_id = ${exposureId} order by h.created_at, h.id`,
  );
  return rows.map((row) => ({
    event: row.event,
    siteId: row.site_id,
    createdAt: new Date(row.created_at),
    site: { id: row.site_id, name: row.name, slug: row.slug, logo: row.logo, url: row.url },
  }));
}

/**
 * What the Person resource shows of each employee's exposures (services/people.ts): counts by
 * status (`exposures_person_idx`) and the sites whose newest conclusive result is `not_found`
 * (`scan_results_person_site_idx`). One entry per person asked, in the order asked.
 */
export function exposureCounts(db: Db, personIds: number[]): ExposureCounts[] {
  if (personIds.length === 0) return [];
  const wanted = JSON.stringify([...new Set(personIds)]);
  const byStatus = db.all<{ person_id: number; status: Status; n: number }>(
    sql`select person_id, status, count(*) as n from exposures
        where person_id in (select value from json_each(${wanted})) group by person_id, status`,
  );
  const notFound = db.all<{ person_id: number; n: number }>(
    sql`select r.person_id, count(distinct r.site_id) as n from scan_results r
        where r.person_id in (select value from json_each(${wanted})) and r.outcome = 'not_found' and not exists (
          select 1 from scan_results later where later.person_id = r.person_id and later.site_id = r.site_id
            and later.outcome = 'found' and later.at > r.at)
        group by r.person_id`,
  );
  const notFoundOf = new Map(notFound.map((row) => [row.person_id, row.n]));
  return personIds.map((personId) => {
    const counts: ExposureCounts = { personId, pending: 0, in_progress: 0, closed: 0, notFound: 0 };
    for (const row of byStatus) if (row.person_id === personId) counts[row.status] = row.n;
    counts.notFound = notFoundOf.get(personId) ?? 0;
    return counts;
  });
}
