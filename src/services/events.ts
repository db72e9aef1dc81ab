import { and, eq } from "drizzle-orm";
import type { Db } from "../db/client";
import { insertChunks } from "../db/batch";
import { memberships, webhookDeliveries, webhooks } from "../db/schema";

/** Event names accepted at webhook creation and delivered (DECISIONS §6). */
export const EVENT_NAMES = [
  "scan:started",
  "scan:completed",
  "scan:not_found",
  "scan:found",
  "scan:failed",
  "exposure:created",
  "exposure:requested",
  "exposure:closed",
  "request:created",
  "request:closed",
  "person:created",
  "person:updated",
  "person:removed",
] as const;

export type EventName = (typeof EVENT_NAMES)[number];

/** The message on the webhook-deliveries queue: one history row to deliver. */
export type DeliveryMessage = { kind: "deliver"; deliveryId: string };

/**
 * The one event emitter. Writes one `pending` history row per active webhook
 * of the company subscribed to `event`, then enqueues them for delivery.
 * The rows are the outbox: if enqueueing fails, the hourly sweep re-enqueues
 * pending rows, so an event recorded here is delivered at least once.
 * Returns the delivery ids.
 */
export async function emitEvent(
  db: Db,
  queue: Queue<DeliveryMessage>,
  companyId: number,
  event: EventName,
  payload: unknown,
): Promise<string[]> {
  const targets = await db
    .select({ id: webhooks.id })
    .from(webhooks)
    .where(and(eq(webhooks.companyId, companyId), eq(webhooks.event, event), eq(webhooks.active, true)))
    .all();
  if (targets.length === 0) return [];

  const now = new Date();
  const rows = targets.map((target) => ({
    id: crypto.randomUUID(),
    companyId,
    webhookId: target.id,
    event,
    payload,
    status: "pending" as const,
    createdAt: now,
    updatedAt: now,
  }));
  const [first, ...rest] = insertChunks(db, webhookDeliveries, rows);
  await db.batch([first!, ...rest]);
  await enqueueDeliveries(
    queue,
    rows.map((row) => row.id),
  );
  return rows.map((row) => row.id);
}

/** Emits `event` to every company the person belongs to (scan and exposure events concern a person). */
export async function emitForPerson(
  db: Db,
  queue: Queue<DeliveryMessage>,
  personId: number,
  event: EventName,
  payload: unknown,
): Promise<string[]> {
  const companies = await db
    .select({ companyId: memberships.companyId })
    .from(memberships)
    .where(eq(memberships.personId, personId))
    .all();
  const ids = await Promise.all(companies.map(({ companyId }) => emitEvent(db, queue, companyId, event, payload)));
  return ids.flat();
}

/** Enqueues deliveries; a failure is logged and left to the outbox sweep. */
export async function enqueueDeliveries(queue: Queue<DeliveryMessage>, deliveryIds: string[]) {
  if (deliveryIds.length === 0) return;
  try {
    // sendBatch takes at most 100 messages.
    for (let i = 0; i < deliveryIds.length; i += 100) {
      await queue.sendBatch(
        deliveryIds.slice(i, i + 100).map((deliveryId) => ({ body: { kind: "deliver", deliveryId } as const })),
      );
    }
  } catch (err) {
    console.error(
      JSON.stringify({
        level: "error",
        error: `enqueueing deliveries failed: ${String(err)}`,
        deliveryIds,
        note: "left for the outbox sweep",
      }),
    );
  }
}
