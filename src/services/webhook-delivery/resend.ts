import { and, eq } from "drizzle-orm";
import { webhookDeliveries, webhooks } from "../../db/schema";
import { enqueueDeliveries } from "../events";
import type { Deps } from "../deps";

export type ResendRefusal = "not found" | "webhook deleted" | "webhook inactive";

/**
 * `POST /webhooks/history/{id}/resend`: the entry is delivered again, same
 * `webhook-id` and body, on a fresh schedule of up to eight attempts. Its
 * earlier attempts stay listed. A message still scheduled for the entry may
 * deliver it once more: receivers deduplicate by `webhook-id`.
 */
export async function resendDelivery(
  { db, webhookQueue }: Pick<Deps, "db" | "webhookQueue">,
  companyId: number,
  deliveryId: string,
): Promise<{ ok: true } | { ok: false; why: ResendRefusal }> {
  const row = await db
    .select({ webhookId: webhooks.id, active: webhooks.active })
    .from(webhookDeliveries)
    .leftJoin(webhooks, eq(webhooks.id, webhookDeliveries.webhookId))
    .where(and(eq(webhookDeliveries.companyId, companyId), eq(webhookDeliveries.id, deliveryId)))
    .get();
  if (!row) return { ok: false, why: "not found" };
  if (row.webhookId === null) return { ok: false, why: "webhook deleted" };
  if (!row.active) return { ok: false, why: "webhook inactive" };
  await db
    .update(webhookDeliveries)
    .set({ status: "pending", attempts: 0, deliveredAt: null, updatedAt: new Date() })
    .where(eq(webhookDeliveries.id, deliveryId));
  await enqueueDeliveries({ webhookQueue }, [deliveryId]);
  return { ok: true };
}
