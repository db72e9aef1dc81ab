import { and, eq, sql } from "drizzle-orm";
import { webhookDeliveries, webhooks } from "../../db/schema";
import { refusal, type Answer } from "../../lib/answer";
import { enqueueDeliveries } from "../events";
import { tellResent } from "./archive";
import type { Deps } from "../deps";

/**
 * `POST /webhooks/history/{id}/resend`: the entry is delivered again, same
 * `webhook-id` and body, on a fresh schedule of up to eight attempts. Its
 * earlier attempts stay listed. A message still scheduled for the entry may
 * deliver it once more: receivers deduplicate by `webhook-id`. Refused: a 404
 * for an entry the company does not have, a 409 when its webhook was deleted
 * or is inactive.
 *
 * A finished entry the company's object keeps (services/webhook-delivery/archive.ts)
 * comes back to D1 as on its way, under its id and creation time; the object
 * is told after that, so the entry is listed throughout (D1's row answers for
 * it while both hold it).
 */
export async function resendDelivery(deps: Deps, companyId: number, deliveryId: string): Promise<Answer> {
  const { db } = deps;
  const [inD1, kept] = await Promise.all([
    db
      .select({ webhookId: webhookDeliveries.webhookId })
      .from(webhookDeliveries)
      .where(and(eq(webhookDeliveries.companyId, companyId), eq(webhookDeliveries.id, deliveryId)))
      .get(),
    deps.companyObjects.of(companyId).entry(deliveryId),
  ]);
  const webhookId = inD1 ? inD1.webhookId : kept ? kept.row.webhookId : undefined;
  if (webhookId === undefined) return refusal(404, `history entry ${deliveryId} does not exist`);
  const webhook =
    webhookId === null
      ? undefined
      : await db
          .select({ active: webhooks.active })
          .from(webhooks)
          .where(and(eq(webhooks.id, webhookId), eq(webhooks.companyId, companyId)))
          .get();
  if (!webhook) return refusal(409, `the webhook of history entry ${deliveryId} was deleted`);
  if (!webhook.active) {
    return refusal(409, `the webhook of history entry ${deliveryId} is inactive; activate it first`);
  }
  const now = new Date();
  let resent = false;
  if (inD1) {
    const rows = await db
      .update(webhookDeliveries)
      .set({ status: "pending", attempts: 0, deliveredAt: null, updatedAt: now, dueAt: now.getTime() })
      .where(and(eq(webhookDeliveries.companyId, companyId), eq(webhookDeliveries.id, deliveryId)))
      .returning({ id: webhookDeliveries.id });
    resent = rows.length > 0;
  }
  if (!resent) {
    // Not in D1, or handed over to the company's object between the read above and the update: its copy there.
    const copy = kept ?? (await deps.companyObjects.of(companyId).entry(deliveryId));
    if (!copy) return refusal(404, `history entry ${deliveryId} does not exist`);
    const { row } = copy;
    await db.run(
      sql`insert into ${webhookDeliveries} (id, company_id, webhook_id, event, payload, rendered, status, result, attempts, created_at, updated_at, due_at)
          values (${row.id}, ${companyId}, ${row.webhookId}, ${row.event}, ${row.payload}, 1, 'pending', ${row.result}, 0, ${row.createdAt.getTime()}, ${now.getTime()}, ${now.getTime()})
          on conflict (id) do update set status = 'pending', attempts = 0, delivered_at = null, updated_at = excluded.updated_at, due_at = excluded.due_at`,
    );
    await tellResent(deps, companyId, deliveryId);
  }
  await enqueueDeliveries(deps, [deliveryId]);
  return { ok: true };
}
