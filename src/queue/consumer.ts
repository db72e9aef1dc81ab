import { handleBackground } from "./background";
import { handleDeadLetters } from "./dead-letters";
import { handleScanEvents } from "./scan-events";
import { handleTokenUses } from "./token-uses";
import { handleWebhookDeliveries } from "./webhook-deliveries";

/**
 * Queue consumer for the queues of wrangler.toml. Each queue name maps to the
 * function that handles its batch; the scan and webhook areas register theirs
 * here. Every dead-letter queue (`…-dlq`), and any queue nobody registered,
 * goes to the dead-letter consumer, which keeps the messages' work due
 * (src/queue/dead-letters.ts): nothing dies there silently.
 */
type BatchHandler = (batch: MessageBatch<unknown>, env: Env) => Promise<void>;

export const queueHandlers: Record<string, BatchHandler> = {
  "webhook-deliveries": handleWebhookDeliveries,
  "scan-events": handleScanEvents,
  background: handleBackground,
  "token-uses": handleTokenUses,
};

export async function handleQueue(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  return (queueHandlers[batch.queue] ?? handleDeadLetters)(batch, env);
}
