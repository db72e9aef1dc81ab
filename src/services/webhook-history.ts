import { and, desc, eq, gte, lt, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { pruneOlderThan, type PruneSpec } from "../db/prune";
import { webhookDeliveries } from "../db/schema";
import { refusal } from "../lib/answer";
import { pageWindow, type Page } from "../lib/pagination";
import { iso } from "../lib/time";
import { inList } from "../db/sql";
import { listAttempts } from "./webhook-delivery";
import type { Deps } from "./deps";

/**
 * How long a finished delivery is kept after it finished (docs/decisions.md,
 * "Retention"): a success 3 days (the receiver has it; the history is for
 * looking into what was just sent), a failure 30 days (time to see it, fix
 * the endpoint and resend).
 */
export const HISTORY_RETENTION_DAYS = { success: 3, failed: 30 } as const;

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
export const toHistoryEntry = (row: typeof webhookDeliveries.$inferSelect) => ({
  id: row.id,
  event: row.event,
  payload: row.payload,
  status: row.status,
  result: row.result,
  created_at: iso(row.createdAt)!,
});

export type HistoryFilter = { start?: Date; end?: Date; types?: string[] };

/**
 * One page of the company's delivery history, newest first (docs/decisions.md):
 * `start` inclusive, `end` exclusive, `types` any of the event names.
 */
export async function listHistory({ db }: Deps, companyId: number, filter: HistoryFilter, page: Page) {
  const where = and(
    eq(webhookDeliveries.companyId, companyId),
    filter.start ? gte(webhookDeliveries.createdAt, filter.start) : undefined,
    filter.end ? lt(webhookDeliveries.createdAt, filter.end) : undefined,
    // One JSON parameter however many names the query repeats (D1 binds at most 100).
    filter.types?.length ? inList(webhookDeliveries.event, [...new Set(filter.types)]) : undefined,
  );
  const [rows, total] = await Promise.all([
    db
      .select()
      .from(webhookDeliveries)
      .where(where)
      .orderBy(desc(webhookDeliveries.createdAt), desc(sql`rowid`))
      .limit(pageWindow(page).limit)
      .offset(pageWindow(page).offset)
      .all(),
    db.$count(webhookDeliveries, where),
  ]);
  return { total, items: rows.map(toHistoryEntry) };
}

/** One entry of the company's history with its attempts, oldest first; a 404 when the company has none such. */
export async function getHistoryEntry({ db }: Deps, companyId: number, id: string) {
  const entry = await historyEntry(db, companyId, id);
  return entry ? { ok: true as const, entry } : refusal(404, `history entry ${id} does not exist`);
}

async function historyEntry(db: Db, companyId: number, id: string) {
  const row = await db
    .select()
    .from(webhookDeliveries)
    .where(and(eq(webhookDeliveries.companyId, companyId), eq(webhookDeliveries.id, id)))
    .get();
  if (!row) return null;
  const attempts = await listAttempts(db, id);
  return {
    ...toHistoryEntry(row),
    attempts: attempts.map((attempt) => ({
      at: iso(attempt.at)!,
      result: attempt.result,
      duration_ms: attempt.durationMs,
    })),
  };
}
