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
 * One page of the company's delivery history, newest first (docs/decisions.md):
 * `start` inclusive, `end` exclusive, `types` any of the event names. The
 * entries on their way are in D1, the finished ones in the company's object
 * (services/webhook-delivery/archive.ts): the page is the two merged, each
 * read up to the page's end. An entry both hold (a hand-over between its
 * two steps, or a resend) is the one D1 holds.
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
  const [inD1, d1Total, kept] = await Promise.all([
    db
      .select(historyColumns)
      .from(webhookDeliveries)
      .where(where)
      .orderBy(desc(webhookDeliveries.createdAt), desc(sql`rowid`))
      .limit(offset + limit)
      .all(),
    db.$count(webhookDeliveries, where),
    deps.companyObjects.of(companyId).history(filter, offset + limit),
  ]);
  const inBoth = new Set(inD1.map((row) => row.id));
  const finished = kept.rows.filter((row) => !inBoth.has(row.id));
  const merged = [...inD1, ...finished].sort(newestFirst).slice(offset, offset + limit);
  return {
    total: d1Total + kept.total - (kept.rows.length - finished.length),
    items: merged.map(toHistoryEntry),
  };
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
  // A resent entry: its earlier attempts in the object, the new ones in D1.
  const attempts = [...(kept?.attempts ?? []), ...(inD1 ? await listAttempts(deps.db, id) : [])];
  return {
    ok: true as const,
    entry: {
      ...toHistoryEntry(row),
      attempts: attempts.map((attempt) => ({
        at: iso(attempt.at)!,
        result: attempt.result,
        duration_ms: attempt.durationMs,
      })),
    },
  };
}
