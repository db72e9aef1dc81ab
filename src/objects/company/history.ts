import { and, asc, desc, eq, gte, inArray, lt, lte, sql } from "drizzle-orm";
import type { DrizzleSqliteDODatabase } from "drizzle-orm/durable-sqlite";
import {
  HISTORY_RETENTION_DAYS,
  type FinishedDelivery,
  type HistoryAttempt,
  type HistoryFilter,
  type HistoryRow,
} from "../../domain/webhook-history";
import { DAY_MS } from "../../lib/time";
import { attempts, deliveries } from "./schema";

/*
 * The company's finished webhook deliveries (docs/webhooks.md, "History, attempts, test and
 * resend"). D1 hands each one over once it finished; a hand-over repeated changes nothing, and
 * one that comes after a resend finished again replaces the entry and adds the new attempts.
 */

type Db = DrizzleSqliteDODatabase;

/** Entries deleted per retention pass (one call's work; the alarm comes back while more are due). */
export const PRUNE_CHUNK = 500;

/**
 * Attempts per INSERT: four bound values each, and SQLite here binds at most 100 per statement. An entry
 * resent while it was retried brings every schedule's attempts (and an older deployment kept them all in D1).
 */
const ATTEMPTS_PER_INSERT = 20;

/** Keeps `finished` (idempotent): each entry replaced by the newer hand-over, attempts added once. */
export function keep(db: Db, finished: FinishedDelivery[]) {
  db.transaction((tx) => {
    for (const { attemptRows, ...entry } of finished) {
      tx.insert(deliveries)
        .values({ ...entry, resent: 0 })
        .onConflictDoUpdate({
          target: deliveries.id,
          set: {
            status: entry.status,
            result: entry.result,
            attempts: entry.attempts,
            deliveredAt: entry.deliveredAt,
            finishedAt: entry.finishedAt,
            payload: entry.payload,
            resent: 0,
          },
        })
        .run();
      for (let i = 0; i < attemptRows.length; i += ATTEMPTS_PER_INSERT)
        tx.insert(attempts)
          .values(attemptRows.slice(i, i + ATTEMPTS_PER_INSERT).map((row) => ({ ...row, deliveryId: entry.id })))
          .onConflictDoNothing()
          .run();
    }
  });
}

const matching = (filter: HistoryFilter) =>
  and(
    eq(deliveries.resent, 0),
    filter.start ? gte(deliveries.createdAt, filter.start) : undefined,
    filter.end ? lt(deliveries.createdAt, filter.end) : undefined,
    filter.types?.length ? inArray(deliveries.event, [...new Set(filter.types)]) : undefined,
  );

/** The entries matching `filter`, newest first, `limit` of them from `offset`, and how many match. */
export function newest(
  db: Db,
  filter: HistoryFilter,
  offset: number,
  limit: number,
): { total: number; rows: HistoryRow[] } {
  const where = matching(filter);
  const rows = db
    .select({
      id: deliveries.id,
      seq: deliveries.seq,
      webhookId: deliveries.webhookId,
      event: deliveries.event,
      payload: deliveries.payload,
      status: deliveries.status,
      result: deliveries.result,
      attempts: deliveries.attempts,
      deliveredAt: deliveries.deliveredAt,
      createdAt: deliveries.createdAt,
    })
    .from(deliveries)
    .where(where)
    .orderBy(desc(deliveries.createdAt), desc(deliveries.seq))
    .limit(limit)
    .offset(offset)
    .all();
  const total =
    db
      .select({ n: sql<number>`count(*)` })
      .from(deliveries)
      .where(where)
      .get()?.n ?? 0;
  return { total, rows };
}

/** One entry with its attempts (oldest first), resent or not; null when there is none. */
export function entry(db: Db, id: string): { row: HistoryRow; attempts: HistoryAttempt[] } | null {
  const row = db.select().from(deliveries).where(eq(deliveries.id, id)).get();
  if (!row) return null;
  const { finishedAt: _finished, resent: _resent, ...shown } = row;
  const list = db
    .select({ at: attempts.at, result: attempts.result, durationMs: attempts.durationMs })
    .from(attempts)
    .where(eq(attempts.deliveryId, id))
    .orderBy(asc(attempts.at), asc(attempts.id))
    .all();
  return { row: shown, attempts: list };
}

/** Marks an entry as on its way again (a resend): D1's row answers for it until it is handed over again. */
export function markResent(db: Db, id: string): boolean {
  return (
    db.update(deliveries).set({ resent: 1 }).where(eq(deliveries.id, id)).returning({ id: deliveries.id }).all()
      .length === 1
  );
}

/**
 * A resent entry's copy waits for its hand-over, which replaces it; one whose D1 row never came back
 * (its hand-over kept failing until D1's retention dropped the row: a resend is made within the
 * entry's retention, its new schedule lasts at most days, and D1 keeps a finished row 30 days) is
 * kept this much longer than its retention, then goes too.
 */
export const RESENT_ORPHAN_DAYS = 35;

/** Each kept kind of entry and how long it stays after it finished (days). */
const KEPT = (["success", "failed"] as const).flatMap((status) => [
  { status, resent: 0, days: HISTORY_RETENTION_DAYS[status] },
  { status, resent: 1, days: HISTORY_RETENTION_DAYS[status] + RESENT_ORPHAN_DAYS },
]);

/**
 * Deletes up to `PRUNE_CHUNK` entries of each kind older than their retention (with their attempts);
 * returns when the next one falls due (ms), or null when none is kept.
 */
export function prune(db: Db, now: number): number | null {
  const kind = (status: "success" | "failed", resent: number) =>
    and(eq(deliveries.status, status), eq(deliveries.resent, resent));
  db.transaction((tx) => {
    for (const { status, resent, days } of KEPT) {
      const cutoff = new Date(now - days * DAY_MS);
      // One chosen set for both deletes (SQLite binds at most 100 parameters: no id list is bound).
      const due = tx
        .select({ id: deliveries.id })
        .from(deliveries)
        .where(and(kind(status, resent), lte(deliveries.finishedAt, cutoff)))
        .orderBy(asc(deliveries.finishedAt), asc(deliveries.id))
        .limit(PRUNE_CHUNK);
      tx.delete(attempts).where(inArray(attempts.deliveryId, due)).run();
      tx.delete(deliveries).where(inArray(deliveries.id, due)).run();
    }
  });
  let next: number | null = null;
  for (const { status, resent, days } of KEPT) {
    const oldest = db
      .select({ at: deliveries.finishedAt })
      .from(deliveries)
      .where(kind(status, resent))
      .orderBy(asc(deliveries.finishedAt))
      .limit(1)
      .get();
    if (oldest) {
      const due = oldest.at.getTime() + days * DAY_MS;
      next = next === null ? due : Math.min(next, due);
    }
  }
  return next;
}
