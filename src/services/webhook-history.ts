import { and, inArray, lt } from "drizzle-orm";
import type { Db } from "../db/client";
import { webhookDeliveries } from "../db/schema";

export const HISTORY_RETENTION_DAYS = 90;

/** Daily pruning of finished deliveries older than 90 days (DECISIONS §8). */
export async function pruneDeliveredHistory(db: Db, now: Date) {
  const cutoff = new Date(now.getTime() - HISTORY_RETENTION_DAYS * 24 * 3600 * 1000);
  const deleted = await db
    .delete(webhookDeliveries)
    .where(and(inArray(webhookDeliveries.status, ["success", "failed"]), lt(webhookDeliveries.createdAt, cutoff)))
    .returning({ id: webhookDeliveries.id });
  return deleted.length;
}
