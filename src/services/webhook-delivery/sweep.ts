import { and, asc, eq, lt } from "drizzle-orm";
import { webhookDeliveries } from "../../db/schema";
import { inList } from "../../db/sql";
import type { Deps } from "../deps";
import { enqueueDeliveries } from "../events";

/** A `pending` row older than this was not enqueued (or its message was lost): the sweep re-enqueues it. */
export const OUTBOX_STALE_MS = 5 * 60_000;

/**
 * The outbox sweep: history rows still `pending` five minutes after their
 * last change were never enqueued (or their message was lost); they are
 * enqueued again, oldest first, at most `limit` per run. Touching
 * `updated_at` (only while still stale, so one of two sweeps at once takes
 * each row) means a row is re-sent at most once per five minutes however
 * often the sweep is fired; a duplicate message is harmless (the consumer
 * skips finished rows, and `webhook-id` lets receivers drop repeats).
 */
export async function sweepOutbox(deps: Deps, now: Date, limit = 500) {
  const { db } = deps;
  const stale = and(
    eq(webhookDeliveries.status, "pending"),
    lt(webhookDeliveries.updatedAt, new Date(now.getTime() - OUTBOX_STALE_MS)),
  );
  const found = await db
    .select({ id: webhookDeliveries.id })
    .from(webhookDeliveries)
    .where(stale)
    .orderBy(asc(webhookDeliveries.updatedAt))
    .limit(limit)
    .all();
  if (found.length === 0) return 0;
  // Claimed by the touch, still stale: of two sweeps at once (the minute's and the hour's), each row goes to one.
  const claimed = await db
    .update(webhookDeliveries)
    .set({ updatedAt: now })
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
