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
 * `updated_at` means a row is re-sent at most once per five minutes however
 * often the sweep is fired; a duplicate message is harmless (the consumer
 * skips finished rows, and `webhook-id` lets receivers drop repeats).
 */
export async function sweepOutbox(deps: Deps, now: Date, limit = 500) {
  const { db } = deps;
  const stale = await db
    .select({ id: webhookDeliveries.id })
    .from(webhookDeliveries)
    .where(
      and(
        eq(webhookDeliveries.status, "pending"),
        lt(webhookDeliveries.updatedAt, new Date(now.getTime() - OUTBOX_STALE_MS)),
      ),
    )
    .orderBy(asc(webhookDeliveries.updatedAt))
    .limit(limit)
    .all();
  if (stale.length === 0) return 0;
  const ids = stale.map((row) => row.id);
  await db
    .update(webhookDeliveries)
    .set({ updatedAt: now })
    .where(and(inList(webhookDeliveries.id, ids), eq(webhookDeliveries.status, "pending")));
  await enqueueDeliveries(deps, ids);
  return ids.length;
}
