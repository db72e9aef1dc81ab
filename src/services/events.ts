import { and, eq } from "drizzle-orm";
import type { Db } from "../db/client";
import { webhookDeliveries } from "../db/schema";
import { inList } from "../db/sql";
import { logError } from "../lib/log";
import { loadPerson, type Person } from "./people";

export { inList };

/** Event names accepted at webhook creation and delivered (docs/webhooks.md). */
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
 * Events are recorded by the write that causes them, in its own batch
 * (`WriteBatch.emit` in services/outbox.ts). This module holds what both
 * ends of the pipeline share: the names, the queue message, and the
 * rendering of Person payloads.
 */

/**
 * Fills the Person of `person:*` deliveries the command just wrote (they hold
 * `{"id": n}` until then). Best effort: a delivery renders what is still
 * missing itself (`renderedPayload`).
 */
export async function renderPersonDeliveries(db: Db, deliveryIds: string[], person: Person) {
  if (deliveryIds.length === 0) return;
  try {
    await db
      .update(webhookDeliveries)
      .set({ payload: person, rendered: true })
      .where(and(inList(webhookDeliveries.id, deliveryIds), eq(webhookDeliveries.rendered, false)));
  } catch (err) {
    logError("rendering person deliveries failed; the deliveries render it", err, { deliveries: deliveryIds.length });
  }
}

/**
 * The payload a delivery sends: as stored, or for a row not rendered yet the
 * Person as it is now (stored, so every later attempt and resend sends the
 * same body). A person removed in between is sent as `{"id": n}`.
 */
export async function renderedPayload(
  db: Db,
  row: { id: string; companyId: number; payload: unknown; rendered: boolean },
): Promise<unknown> {
  if (row.rendered) return row.payload;
  const id = (row.payload as { id?: unknown } | null)?.id;
  const person = typeof id === "number" ? await loadPerson(db, row.companyId, id) : null;
  const stored = await db
    .update(webhookDeliveries)
    .set({ payload: person ?? row.payload, rendered: true })
    .where(and(eq(webhookDeliveries.id, row.id), eq(webhookDeliveries.rendered, false)))
    .returning({ payload: webhookDeliveries.payload })
    .get();
  if (stored) return stored.payload;
  // Rendered meanwhile (by the command, or a concurrent attempt): send what is stored.
  const current = await db
    .select({ payload: webhookDeliveries.payload })
    .from(webhookDeliveries)
    .where(eq(webhookDeliveries.id, row.id))
    .get();
  return current?.payload ?? row.payload;
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
    logError("enqueueing deliveries failed; left for the outbox sweep", err, { deliveries: deliveryIds.length });
  }
}
