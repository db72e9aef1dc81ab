import { z } from "@hono/zod-openapi";
import { createDb } from "../db/client";
import { attemptDelivery, markDeadLettered } from "../services/webhook-delivery";

/** `DeliveryMessage` of src/services/events.ts. */
const DeliveryMessageSchema = z.object({ kind: z.literal("deliver"), deliveryId: z.string().min(1) });

const log = (level: "error" | "warn" | "info", fields: Record<string, unknown>) =>
  console[level === "info" ? "log" : level](JSON.stringify({ level, ...fields }));

/**
 * `webhook-deliveries`: one POST per message. Failures are retried by the
 * queue with the schedule's delay (10 s … 12 h); the 8th failure is final.
 */
export async function handleWebhookDeliveries(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  const db = createDb(env.DB);
  for (const message of batch.messages) {
    const parsed = DeliveryMessageSchema.safeParse(message.body);
    if (!parsed.success) {
      log("error", { queue: batch.queue, messageId: message.id, error: "not a delivery message", body: message.body });
      message.ack();
      continue;
    }
    const { deliveryId } = parsed.data;
    try {
      const outcome = await attemptDelivery(db, deliveryId, message.attempts, { environment: env.ENVIRONMENT });
      if (outcome.action === "retry") {
        message.retry({ delaySeconds: outcome.delaySeconds });
      } else {
        if (outcome.status === "missing") log("warn", { queue: batch.queue, deliveryId, warning: "no such delivery" });
        message.ack();
      }
    } catch (err) {
      // D1 trouble, not the receiver's: try again shortly (the DLQ catches the rest).
      log("error", { queue: batch.queue, deliveryId, attempts: message.attempts, error: String(err) });
      message.retry({ delaySeconds: 30 });
    }
  }
}

/** `webhook-deliveries-dlq`: the queue gave up; the delivery has failed. Logged for the operator. */
export async function handleDeadDeliveries(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  const db = createDb(env.DB);
  for (const message of batch.messages) {
    log("error", {
      queue: batch.queue,
      messageId: message.id,
      attempts: message.attempts,
      error: "dead-lettered message",
      body: message.body,
    });
    const parsed = DeliveryMessageSchema.safeParse(message.body);
    try {
      if (parsed.success) await markDeadLettered(db, parsed.data.deliveryId);
      message.ack();
    } catch (err) {
      log("error", { queue: batch.queue, messageId: message.id, error: String(err) });
      message.retry({ delaySeconds: 60 });
    }
  }
}
