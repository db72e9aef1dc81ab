import { and, desc, eq, gte, lt, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { pruneOlderThan, type PruneSpec } from "../db/prune";
import { webhookDeliveries } from "../db/schema";
import { refusal } from "../lib/answer";
import { pageWindow, type Page } from "../lib/pagination";
import { iso } from "../lib/time";
import { inList } from "../db/sql";
import { historyColumns, listAttempts } from "./webhook-delivery";
import type { Deps } from "./deps";
import { HISTORY_RETENTION_DAYS, type HistoryFilter, type HistoryRow } from "../domain/webhook-history";

export { HISTORY_RETENTION_DAYS };

/**
 * Daily pruning of the deliveries that finished with `status` longer ago
 * than its time, in bounded chunks (`pruneOlderThan`); their attempts go
 * with them (cascade). By `updated_at`, the time a delivery finished: the
 * `(status, updated_at)` index finds them without a scan.
 */
export async function pruneDeliveredHistory(
  db: Db,
  now: Date,
  status: keyof typeof HISTORY_RETENTION_DAYS,
  limits: Pick<PruneSpec, "chunk" | "maxStatements"> = {},
) {
  return pruneOlderThan(db, {
    table: webhookDeliveries,
    column: webhookDeliveries.updatedAt,
    cutoff: new Date(now.getTime() - HISTORY_RETENTION_DAYS[status] * 24 * 3600 * 1000),
    where: eq(webhookDeliveries.status, status),
    ...limits,
  });
}

/**
 * A webhook history entry (OpenAPI component `WebhookHistory`;
 * docs/webhooks.md, "History, attempts, test and resend").
 */
export const toHistoryEntry = (
  row: Pick<HistoryRow, "id" | "event" | "payload" | "status" | "result" | "createdAt">,
) => ({
  id: row.id,
  event: row.event,
  payload: JSON.parse(row.payload) as unknown,
  status: row.status,
  result: row.result,
  created_at: iso(row.createdAt)!,
});

/** Newest first, and among entries of one millisecond the later written first (D1's order, kept by the object). */
const newestFirst = (a: HistoryRow, b: HistoryRow) => b.createdAt.getTime() - a.createdAt.getTime() || b.seq - a.seq;

/**
 * Pages up to this deep are merged from the two stores' newest rows (at most this many from each);
 * a deeper page finds where it starts in each store first (`splitAt`), so no page reads more than
 * a page's rows from either, however long the history.
 */
export const SHALLOW_HISTORY = 1_000;

/** One store's part of the history: `limit` rows from `offset`, newest first, and how many match. */
type Store = (offset: number, limit: number) => Promise<{ total: number; rows: HistoryRow[] }>;

/**
 * How many of the merged history's first `position` entries are D1's: the first `i` at which
 * D1's `i`-th entry is older than the object's `(position - i - 1)`-th (a binary search, one row of
 * each store per step, so about log2 of D1's count in steps).
 */
async function splitAt(position: number, inD1: Store, d1Total: number, kept: Store, keptTotal: number) {
  let lo = Math.max(0, position - keptTotal);
  let hi = Math.min(position, d1Total);
  while (lo < hi) {
    const i = (lo + hi) >> 1;
    const [a, b] = await Promise.all([inD1(i, 1), kept(position - i - 1, 1)]);
    const [mine, theirs] = [a.rows[0], b.rows[0]];
    // (A row gone since the counts, a hand-over meanwhile, leaves the search on the side still there.)
    if (mine && (!theirs || newestFirst(mine, theirs) < 0)) lo = i + 1;
    else hi = i;
  }
  return lo;
}

/**
 * One page of the company's delivery history, newest first (docs/decisions.md):
 * `start` inclusive, `end` exclusive, `types` any of the event names. The
 * entries on their way are in D1, the finished ones in the company's object
 * (services/webhook-delivery/archive.ts): the page is the two merged by
 * creation time and D1's order. A page within `SHALLOW_HISTORY` reads each
 * store's newest rows up to its end, and an entry both hold (a hand-over
 * between its two steps, or a resend) is the one D1 holds; a deeper page
 * starts each store where the merged order puts it.
 */
export async function listHistory(deps: Deps, companyId: number, filter: HistoryFilter, page: Page) {
  const { db } = deps;
  const { limit, offset } = pageWindow(page);
  const where = and(
    eq(webhookDeliveries.companyId, companyId),
    filter.start ? gte(webhookDeliveries.createdAt, filter.start) : undefined,
    filter.end ? lt(webhookDeliveries.createdAt, filter.end) : undefined,
    // One JSON parameter however many names the query repeats (D1 binds at most 100).
    filter.types?.length ? inList(webhookDeliveries.event, [...new Set(filter.types)]) : undefined,
  );
  const rowsOf = (from: number, count: number) =>
    db
      .select(historyColumns)
      .from(webhookDeliveries)
      .where(where)
      .orderBy(desc(webhookDeliveries.createdAt), desc(sql`rowid`))
      .limit(count)
      .offset(from)
      .all();
  let d1Total: number | undefined;
  const inD1: Store = async (from, count) => {
    const [rows, total] = await Promise.all([rowsOf(from, count), d1Total ?? db.$count(webhookDeliveries, where)]);
    d1Total = total;
    return { total, rows };
  };
  const kept: Store = (from, count) => deps.companyObjects.of(companyId).history(filter, from, count);
  if (offset + limit <= SHALLOW_HISTORY) {
    const [fromD1, fromObject] = await Promise.all([inD1(0, offset + limit), kept(0, offset + limit)]);
    const inBoth = new Set(fromD1.rows.map((row) => row.id));
    const finished = fromObject.rows.filter((row) => !inBoth.has(row.id));
    const merged = [...fromD1.rows, ...finished].sort(newestFirst).slice(offset, offset + limit);
    return {
      total: fromD1.total + fromObject.total - (fromObject.rows.length - finished.length),
      items: merged.map(toHistoryEntry),
    };
  }
  const [first, firstKept] = await Promise.all([inD1(0, 0), kept(0, 0)]);
  const total = first.total + firstKept.total;
  if (offset >= total) return { total, items: [] };
  const fromD1 = await splitAt(offset, inD1, first.total, kept, firstKept.total);
  const [a, b] = await Promise.all([inD1(fromD1, limit), kept(offset - fromD1, limit)]);
  return { total, items: [...a.rows, ...b.rows].sort(newestFirst).slice(0, limit).map(toHistoryEntry) };
}

/** One entry of the company's history with its attempts, oldest first; a 404 when the company has none such. */
export async function getHistoryEntry(deps: Deps, companyId: number, id: string) {
  const [inD1, kept] = await Promise.all([
    deps.db
      .select(historyColumns)
      .from(webhookDeliveries)
      .where(and(eq(webhookDeliveries.companyId, companyId), eq(webhookDeliveries.id, id)))
      .get(),
    deps.companyObjects.of(companyId).entry(id),
  ]);
  const row = inD1 ?? kept?.row;
  if (!row) return refusal(404, `history entry ${id} does not exist`);
  // A resent entry: its earlier attempts in the object, the new ones in D1 (an attempt both hold, once).
  const attempts = [...(kept?.attempts ?? []), ...(inD1 ? await listAttempts(deps.db, id) : [])];
  const seen = new Set<string>();
  const once = attempts.filter((attempt) => {
    const key = `${attempt.at.getTime()} ${attempt.result} ${attempt.durationMs}`;
    return !seen.has(key) && seen.add(key);
  });
  return {
    ok: true as const,
    entry: {
      ...toHistoryEntry(row),
      attempts: once.map((attempt) => ({
        at: iso(attempt.at)!,
        result: attempt.result,
        duration_ms: attempt.durationMs,
      })),
    },
  };
}
