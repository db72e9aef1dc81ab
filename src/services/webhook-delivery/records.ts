import { and, asc, eq, notInArray, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { webhookAttempts, webhookDeliveries, webhooks } from "../../db/schema";
import { inList } from "../../db/sql";

/** What a delivery reads and writes in D1: its history row with its webhook, and its attempts. */

/**
 * A history row as the history's readers and its hand-over take it (domain/webhook-history.ts
 * `HistoryRow`): the payload as D1's JSON text, and `seq`, the row's place in D1 (rowid).
 */
export const historyColumns = {
  id: webhookDeliveries.id,
  seq: sql<number>`${webhookDeliveries}.rowid`,
  webhookId: webhookDeliveries.webhookId,
  event: webhookDeliveries.event,
  payload: sql<string>`${webhookDeliveries.payload}`,
  status: webhookDeliveries.status,
  result: webhookDeliveries.result,
  attempts: webhookDeliveries.attempts,
  deliveredAt: webhookDeliveries.deliveredAt,
  createdAt: webhookDeliveries.createdAt,
};

/**
 * The `result` of one attempt: the HTTP status as digits, or one of these.
 * A network error's own text is never recorded: it would tell a company
 * what lies behind an address it does not own.
 */
export type AttemptResult = `${number}` | "timeout" | "connection failed" | "invalid response" | "invalid endpoint";

/** What one attempt answered (sending.ts), as its record keeps it. */
export type Answer = {
  result: AttemptResult;
  status: number | null;
  retryAfterSeconds: number | null;
  durationMs: number;
};

export const FINISHED = ["success", "failed"] as const;

/** What an attempt reads of a delivery's webhook: where it goes, how it is signed, its health. */
export const webhookColumns = {
  id: webhooks.id,
  endpoint: webhooks.endpoint,
  secret: webhooks.secret,
  previousSecret: webhooks.previousSecret,
  previousSecretExpiresAt: webhooks.previousSecretExpiresAt,
  active: webhooks.active,
  failingSince: webhooks.failingSince,
};

/** What an attempt reads of a delivery's own row. */
export const deliveryColumns = {
  id: webhookDeliveries.id,
  companyId: webhookDeliveries.companyId,
  event: webhookDeliveries.event,
  payload: webhookDeliveries.payload,
  rendered: webhookDeliveries.rendered,
  status: webhookDeliveries.status,
  result: webhookDeliveries.result,
  attempts: webhookDeliveries.attempts,
  dueAt: webhookDeliveries.dueAt,
  createdAt: webhookDeliveries.createdAt,
};

/** The rows and their webhooks as attempts need them. */
function loadDeliveries(db: Db, deliveryIds: string[]) {
  return db
    .select({ ...deliveryColumns, webhook: webhookColumns })
    .from(webhookDeliveries)
    .leftJoin(webhooks, eq(webhooks.id, webhookDeliveries.webhookId))
    .where(inList(webhookDeliveries.id, deliveryIds))
    .all();
}

export const loadDelivery = async (db: Db, deliveryId: string) => (await loadDeliveries(db, [deliveryId]))[0];

export type Delivery = NonNullable<Awaited<ReturnType<typeof loadDelivery>>>;

/** The rows of a consumer run's messages, by id, in one query. */
export async function deliveriesById(db: Db, deliveryIds: string[]): Promise<Map<string, Delivery>> {
  const rows = deliveryIds.length > 0 ? await loadDeliveries(db, [...new Set(deliveryIds)]) : [];
  return new Map(rows.map((row) => [row.id, row]));
}

export function recordAttempt(db: Db, deliveryId: string, now: Date, answer: Answer) {
  return db
    .insert(webhookAttempts)
    .values({ deliveryId, at: now, result: answer.result, durationMs: answer.durationMs });
}

type Finish = Partial<
  Pick<typeof webhookDeliveries.$inferInsert, "status" | "result" | "attempts" | "deliveredAt" | "dueAt">
>;

/**
 * Writes an attempt's outcome unless the row finished meanwhile (a concurrent duplicate), or, with
 * `ifAttempts`, unless another attempt was recorded since the row was read at that count. Its time is
 * also its place in the hand-over's order (`handover_after`, archive.ts): a finished row queues behind
 * what finished before it, and a row its object refused, re-queued at the refusal, ahead of what
 * finishes after.
 */
export function finishStatement(db: Db, deliveryId: string, fields: Finish, ifAttempts?: number) {
  const at = new Date();
  return db
    .update(webhookDeliveries)
    .set({ ...fields, updatedAt: at, handoverAfter: at.getTime() })
    .where(
      and(
        eq(webhookDeliveries.id, deliveryId),
        notInArray(webhookDeliveries.status, [...FINISHED]),
        ifAttempts === undefined ? undefined : eq(webhookDeliveries.attempts, ifAttempts),
      ),
    );
}

/** An attempt as the history shows it and its hand-over carries it (domain/webhook-history.ts `HistoryAttempt`). */
export const attemptColumns = {
  at: webhookAttempts.at,
  result: webhookAttempts.result,
  durationMs: webhookAttempts.durationMs,
};

/** The attempts of one history entry, oldest first. */
export function listAttempts(db: Db, deliveryId: string) {
  return db
    .select(attemptColumns)
    .from(webhookAttempts)
    .where(eq(webhookAttempts.deliveryId, deliveryId))
    .orderBy(asc(webhookAttempts.id))
    .all();
}
