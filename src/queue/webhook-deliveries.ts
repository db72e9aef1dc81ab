import { deliveryMessage } from "../domain/queue-messages";
import { createDeps } from "../services/create-deps";
import {
  attemptDelivery,
  deliveriesById,
  fairOrder,
  handOverFinished,
  Lanes,
  type Delivery,
} from "../services/webhook-delivery";

const log = (level: "error" | "warn" | "info", fields: Record<string, unknown>) =>
  console[level === "info" ? "log" : level](JSON.stringify({ level, ...fields }));

/** A D1 failure inside the consumer retries the message this much later, counted as no POST (docs/decisions.md). */
const D1_RETRY_SECONDS = 30;

/**
 * `webhook-deliveries`: one POST per message, the batch's messages at the
 * same time (docs/webhooks.md, "Timeouts and fairness"): their rows are read
 * in one query (if it fails, every message is retried in 30 s), then each
 * attempt runs in the run's `Lanes` (at most five at once, one at a time per
 * endpoint, endpoints not failing first), and each
 * message is settled when its own attempt ends, so an endpoint that hangs
 * delays no other endpoint's delivery by more than one timeout. Failures are
 * retried by the queue with the schedule's delay (10 s … 12 h); the 8th
 * failure is final. The run's finished deliveries are then handed to their
 * companies' objects (services/webhook-delivery/archive.ts).
 */
export async function handleWebhookDeliveries(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  const deps = createDeps(env);
  const finished: string[] = [];
  const deliveries: { message: Message<unknown>; deliveryId: string }[] = [];
  for (const message of batch.messages) {
    const parsed = deliveryMessage.safeParse(message.body);
    if (parsed.success) deliveries.push({ message, deliveryId: parsed.data.deliveryId });
    else {
      log("error", { queue: batch.queue, messageId: message.id, error: "not a delivery message", body: message.body });
      message.ack();
    }
  }
  let rows: Map<string, Delivery>;
  try {
    rows = await deliveriesById(
      deps.db,
      deliveries.map(({ deliveryId }) => deliveryId),
    );
  } catch (err) {
    // Without the rows the run cannot know its endpoints, so it could not send one at a time per endpoint,
    // nor at most five at once: every message is tried again shortly, as after any D1 failure here.
    log("error", { queue: batch.queue, error: String(err) });
    for (const { message } of deliveries) message.retry({ delaySeconds: D1_RETRY_SECONDS });
    return;
  }
  const lanes = new Lanes();
  const seen = new Set<string>();
  await Promise.all(
    fairOrder(deliveries, ({ deliveryId }) => rows.get(deliveryId)).map(async ({ message, deliveryId }) => {
      const loaded = rows.get(deliveryId) ?? null;
      const endpoint = loaded?.webhook?.endpoint ?? undefined;
      // The first attempt to an endpoint uses the row read above; the next ones read theirs in their lane.
      const row = endpoint === undefined || !seen.has(endpoint) ? loaded : undefined;
      if (endpoint !== undefined) seen.add(endpoint);
      try {
        const attempt = (timeoutMs?: number) => attemptDelivery(deps, deliveryId, { timeoutMs, row });
        const outcome =
          endpoint === undefined
            ? await attempt()
            : await lanes.run(endpoint, attempt, (done) => done.action === "ack" && done.status !== "failed");
        if (outcome.action === "retry") {
          message.retry({ delaySeconds: outcome.delaySeconds });
        } else {
          if (outcome.status !== "missing" && outcome.status !== "done") finished.push(deliveryId);
          if (outcome.status === "missing")
            log("warn", { queue: batch.queue, deliveryId, warning: "no such delivery" });
          message.ack();
        }
      } catch (err) {
        // D1 trouble, not the receiver's: try again shortly (the DLQ catches the rest).
        log("error", { queue: batch.queue, deliveryId, attempts: message.attempts, error: String(err) });
        message.retry({ delaySeconds: D1_RETRY_SECONDS });
      }
    }),
  );
  await handOverFinished(deps, { ids: finished });
}
