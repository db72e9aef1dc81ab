import { and, inArray, lt, sql } from "drizzle-orm";
import { webhookDeliveries } from "../../db/schema";
import { firstOfRanges, inList } from "../../db/sql";
import type { Deps } from "../deps";
import { enqueueDeliveries } from "../events";

/** A delivery whose attempt is this far past its due time lost its message: the sweep sends another. */
export const OUTBOX_STALE_MS = 5 * 60_000;

/** The statuses of a delivery on its way. */
const ON_ITS_WAY = ["pending", "dispatched"] as const;

/**
 * The outbox sweep: deliveries on their way whose attempt is five minutes past
 * its due time (`due_at`) were never enqueued, or their message was lost; they
 * are enqueued again, the longest overdue first, at most `limit` per run, one
 * index range per status. Moving `due_at` to now (only while still overdue, so
 * one of two sweeps at once takes each row) means a row is re-sent at most once
 * per five minutes however often the sweep is fired. A message that turns out
 * to be a duplicate is harmless: the consumer skips finished rows and rows whose
 * next attempt is not due yet (attempt.ts), and `webhook-id` lets receivers
 * drop repeats.
 */
export async function sweepOutbox(deps: Deps, now: Date, limit = 500) {
  const { db } = deps;
  const cutoff = now.getTime() - OUTBOX_STALE_MS;
  const stale = and(inArray(webhookDeliveries.status, [...ON_ITS_WAY]), lt(webhookDeliveries.dueAt, cutoff));
  // One range of the `(status, due_at)` index per status, merged: never a sort of the backlog.
  const overdue = (status: (typeof ON_ITS_WAY)[number]) =>
    sql`select id, due_at from ${webhookDeliveries}
        where status = ${status} and due_at < ${cutoff} order by due_at limit ${limit}`;
  const found = await db.all<{ id: string }>(firstOfRanges(ON_ITS_WAY.map(overdue), sql`due_at`, limit));
  if (found.length === 0) return 0;
  // Claimed by the touch, still overdue: of two sweeps at once (the minute's and the hour's), each row goes to one.
  const claimed = await db
    .update(webhookDeliveries)
    // `updated_at` kept as it is (the column's own default would move it to now).
    .set({ dueAt: now.getTime(), updatedAt: sql`${webhookDeliveries.updatedAt}` })
    .where(
      and(
        inList(
          webhookDeliveries.id,
          found.map((row) => row.id),
        ),
        stale,
      ),
    )
    .returning({ id: webhookDeliveries.id })
    .all();
  const ids = claimed.map((row) => row.id);
  await enqueueDeliveries(deps, ids);
  return ids.length;
}
