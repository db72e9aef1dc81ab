import { and, asc, inArray, sql } from "drizzle-orm";
import { webhookAttempts, webhookDeliveries } from "../../db/schema";
import { firstOfRanges, inList } from "../../db/sql";
import type { FinishedDelivery } from "../../domain/webhook-history";
import { groupBy } from "../../lib/group";
import { logError } from "../../lib/log";
import type { Deps } from "../deps";
import { attemptColumns, FINISHED, historyColumns } from "./records";

/*
 * Finished deliveries leave D1 for their company's object (docs/architecture.md, "The Company
 * object"; docs/webhooks.md, "History, attempts, test and resend"). D1 keeps a delivery while it is on its way:
 * the command wrote it in its own batch (the outbox), the consumer sends it and records each
 * attempt. Once it succeeded or failed for good it is handed to the company's object with its
 * attempts, then deleted from D1 — only if it did not change meanwhile (a resend). A hand-over that
 * failed leaves the row finished in D1, where the reads still find it, queued again at the time of
 * the refusal (`handover_after`, a finished row's place in the hand-over's order: its finish time, then
 * the time of its last refusal), so it waits behind what finished before and ahead of what finishes
 * after; the next hand-over (the minute sweep's, or the operator's move) takes it; a repeated one changes nothing.
 */

/** Finished deliveries handed over per chunk: one D1 batch of two reads, one call per company, one delete. */
export const HANDOVER_CHUNK = 100;

/**
 * Hands finished deliveries to their companies' objects: the given ones (the consumer's, right
 * after they finished), or the oldest finished ones in D1 (`limit` of them: the sweep and the move).
 * Returns how many left D1 and whether a chunk was full. Never throws: a company whose object did not
 * answer keeps its rows in D1 for the next hand-over (logged).
 */
export async function handOverFinished(
  deps: Deps,
  { ids, limit = HANDOVER_CHUNK }: { ids?: string[]; limit?: number } = {},
): Promise<{ handed: number; full: boolean }> {
  try {
    return await handOver(deps, ids, limit);
  } catch (err) {
    logError("webhook history hand-over failed", err, { deliveries: ids?.length ?? limit });
    return { handed: 0, full: false };
  }
}

async function handOver(deps: Deps, ids: string[] | undefined, limit: number) {
  const { db } = deps;
  if (ids?.length === 0) return { handed: 0, full: false };
  const finished = inArray(webhookDeliveries.status, [...FINISHED]);
  const chosenIds = ids
    ? db
        .select({ id: webhookDeliveries.id })
        .from(webhookDeliveries)
        .where(and(inList(webhookDeliveries.id, ids), finished))
    : oldestFinished(limit);
  // One round trip: the rows and their attempts (the same rows, chosen again by the subquery).
  const [rows, attemptRows] = await db.batch([
    db
      .select({ ...historyColumns, companyId: webhookDeliveries.companyId, updatedAt: webhookDeliveries.updatedAt })
      .from(webhookDeliveries)
      .where(inArray(webhookDeliveries.id, chosenIds)),
    db
      .select({ deliveryId: webhookAttempts.deliveryId, ...attemptColumns })
      .from(webhookAttempts)
      .where(inArray(webhookAttempts.deliveryId, chosenIds))
      .orderBy(asc(webhookAttempts.id)),
  ]);
  if (rows.length === 0) return { handed: 0, full: false };
  const attemptsOf = groupBy(attemptRows, (attempt) => attempt.deliveryId);
  const kept: typeof rows = [];
  await Promise.all(
    [...groupBy(rows, (row) => row.companyId)].map(async ([companyId, own]) => {
      const handed: FinishedDelivery[] = own.map(({ companyId: _company, updatedAt, status, ...row }) => ({
        ...row,
        status: status as FinishedDelivery["status"],
        finishedAt: updatedAt,
        attemptRows: (attemptsOf.get(row.id) ?? []).map(({ deliveryId: _delivery, ...attempt }) => attempt),
      }));
      try {
        await deps.companyObjects.of(companyId).keepFinished(handed);
        kept.push(...own);
      } catch (err) {
        logError("a company's object did not take its finished deliveries", err, { companyId, rows: own.length });
      }
    }),
  );
  const asRead = (list: typeof rows) => JSON.stringify(list.map((row) => [row.id, row.updatedAt.getTime()]));
  // Each row only as it was read: a resend since then keeps it.
  const same = (list: typeof rows) =>
    sql`${webhookDeliveries.id} in (select json_extract(value, '$[0]') from json_each(${asRead(list)}))
        and ${finished}
        and ${webhookDeliveries.updatedAt} = (select json_extract(value, '$[1]') from json_each(${asRead(list)}) where json_extract(value, '$[0]') = ${webhookDeliveries.id})`;
  const refused = rows.filter((row) => !kept.includes(row));
  const writes = [
    // Handed over: they leave D1 (their attempts go with them: cascade).
    ...(kept.length > 0 ? [db.delete(webhookDeliveries).where(same(kept))] : []),
    // Not taken: queued again behind what finished until now, so they never hold up other companies' rows;
    // their finish time (`updated_at`) stays, for D1's retention and the object's.
    ...(refused.length > 0
      ? [
          db
            .update(webhookDeliveries)
            // `updated_at` kept as it is (the column's own default would move it to now).
            .set({ handoverAfter: Date.now(), updatedAt: sql`${webhookDeliveries.updatedAt}` })
            .where(same(refused)),
        ]
      : []),
  ];
  if (writes.length > 0) {
    // Read last, in the same batch: the kept rows D1 still holds are those a resend changed meanwhile (a
    // row another hand-over or the retention deleted first is gone, and its object's copy stays listed).
    const still = db
      .select({ id: webhookDeliveries.id })
      .from(webhookDeliveries)
      .where(
        inList(
          webhookDeliveries.id,
          kept.map((row) => row.id),
        ),
      );
    const results = await db.batch([...writes, still] as unknown as [typeof still]);
    if (kept.length > 0) await markChangedMeanwhile(deps, kept, results.at(-1) as { id: string }[]);
  }
  // A chunk continues only when it was full and most of it was handed over: rows that keep being
  // refused wait for the next minute's sweep instead of keeping a chain going.
  return { handed: kept.length, full: !ids && rows.length >= limit && kept.length * 2 >= rows.length };
}

/**
 * Rows the objects kept that D1 still holds after the delete: a resend changed them between the read and
 * the delete. D1's row answers for each again, so its company's object is told it was resent (as the
 * resend itself tells it when it finds the entry there), and the next hand-over replaces it; until then
 * the copy is neither listed twice nor its attempts shown twice.
 */
async function markChangedMeanwhile(deps: Deps, kept: { id: string; companyId: number }[], still: { id: string }[]) {
  const inD1 = new Set(still.map((row) => row.id));
  await Promise.all(kept.filter((row) => inD1.has(row.id)).map((row) => tellResent(deps, row.companyId, row.id)));
}

/**
 * Tells company `companyId`'s object that its copy of entry `deliveryId` is on its way again in D1 (the
 * resend, and the hand-over that finds it resent). Never throws: a failure is logged, both stores list
 * the entry meanwhile, D1's row answers for it, an entry's read merges its attempts once, and its next
 * hand-over replaces the object's copy.
 */
export async function tellResent(deps: Deps, companyId: number, deliveryId: string): Promise<void> {
  try {
    await deps.companyObjects.of(companyId).markResent(deliveryId);
  } catch (err) {
    logError("a resent entry's company object was not told", err, { companyId, deliveryId });
  }
}

/**
 * The `limit` oldest finished rows, failed and successful together: one range of the `(status,
 * handover_after, updated_at)` index per status (never a sort of the backlog), merged. A row its company's
 * object did not take waits behind every row of either status that finished before the refusal (`handover_after`),
 * so rows that keep being refused never hold up other companies' (one status after the other would let 100
 * refused failures starve every success).
 */
function oldestFinished(limit: number) {
  const oldest = (status: (typeof FINISHED)[number]) =>
    sql`select id, handover_after, updated_at, rowid as seq from ${webhookDeliveries}
        where status = ${status} order by handover_after, updated_at, rowid limit ${limit}`;
  return sql`(${firstOfRanges(FINISHED.map(oldest), sql`handover_after, updated_at, seq`, limit)})`;
}

/** Where the hand-over stands: finished deliveries still in D1, and those on their way (the outbox). */
export async function handOverStatus({ db }: Deps) {
  const [row] = await db.all<{ finished: number; onTheirWay: number }>(
    sql`select (select count(*) from ${webhookDeliveries} where status in ('success', 'failed')) as finished,
               (select count(*) from ${webhookDeliveries} where status in ('pending', 'dispatched')) as onTheirWay`,
  );
  return { finished_in_d1: row?.finished ?? 0, on_their_way: row?.onTheirWay ?? 0 };
}
