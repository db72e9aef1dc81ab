import { and, eq } from "drizzle-orm";
import { webhookDeliveries, webhooks } from "../../db/schema";
import { refusal, type Answer } from "../../lib/answer";
import { enqueueDeliveries } from "../events";
import type { Deps } from "../deps";

/**
 * `POST /webhooks/history/{id}/resend`: the entry is delivered again, same
 * `webhook-id` and body, on a fresh schedule of up to eight attempts. Its
 * earlier attempts stay listed. A message still scheduled for the entry may
 * deliver it once more: receivers deduplicate by `webhook-id`. Refused: a 404
 * for an entry the company does not have, a 409 when its webhook was deleted
 * or is inactive.
 */
export async function resendDelivery(deps: Deps, companyId: number, deliveryId: string): Promise<Answer> {
  const { db } = deps;
  const row = await db
    .select({ webhookId: webhooks.id, active: webhooks.active })
    .from(webhookDeliveries)
    .leftJoin(webhooks, eq(webhooks.id, webhookDeliveries.webhookId))
    .where(and(eq(webhookDeliveries.companyId, companyId), eq(webhookDeliveries.id, deliveryId)))
    .get();
  if (!row) return refusal(404, `history entry ${deliveryId} does not exist`);
  if (row.webhookId === null) return refusal(409, `the webhook of history entry ${deliveryId} was deleted`);
  if (!row.active) {
    return refusal(409, `the webhook of history entry ${deliveryId} is inactive; activate it first`);
  }
  await db
    .update(webhookDeliveries)
    .set({ status: "pending", attempts: 0, deliveredAt: null, updatedAt: new Date() })
    .where(eq(webhookDeliveries.id, deliveryId));
  await enqueueDeliveries(deps, [deliveryId]);
  return { ok: true };
}
