import { handleBackground } from "./background";
import { handleScanEvents } from "./scan-events";
import { handleDeadDeliveries, handleWebhookDeliveries } from "./webhook-deliveries";

/**
 * Queue consumer for the queues of wrangler.toml. Each queue name maps to the
 * function that handles its batch; the scan and webhook areas register theirs
 * here. A dead-letter queue's messages are logged so an operator can see them.
 */
type BatchHandler = (batch: MessageBatch<unknown>, env: Env) => Promise<void>;

const DEAD_LETTER = /-dlq$/;

export const queueHandlers: Record<string, BatchHandler> = {
  "webhook-deliveries": handleWebhookDeliveries,
  "webhook-deliveries-dlq": handleDeadDeliveries,
  "scan-events": handleScanEvents,
  background: handleBackground,
};

export async function handleQueue(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  const handler = queueHandlers[batch.queue];
  if (handler) return handler(batch, env);
  for (const message of batch.messages) {
    console.error(
      JSON.stringify({
        level: "error",
        queue: batch.queue,
        messageId: message.id,
        attempts: message.attempts,
        error: DEAD_LETTER.test(batch.queue) ? "dead-lettered message" : "no consumer handles this queue",
        body: message.body,
      }),
    );
    message.ack();
  }
}
