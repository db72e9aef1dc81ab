import { webhookDeliveries } from "../../db/schema";
import { TEST_EVENT } from "../../domain/events";
import type { Deps } from "../deps";
import { finishStatement, FINISHED, loadDelivery, recordAttempt, type Delivery } from "./records";
import { MAX_ATTEMPTS, RETRY_DELAYS_SECONDS, webhookHealth } from "./retry-policy";
import { DELIVERY_TIMEOUT_MS, isSuccess, send } from "./sending";

/**
 * How early a message may come for its delivery's due attempt (`due_at`) and still make it: the
 * queue delivers a retry no earlier than asked, so this covers only clocks that differ a little.
 */
export const DUE_SLACK_MS = 5_000;

/** What the consumer does with the message after an attempt. */
export type DeliveryOutcome =
  | { action: "ack"; status: "success" | "failed" | "skipped" | "missing" | "done" }
  | { action: "retry"; delaySeconds: number };

export type AttemptOptions = {
  now?: Date;
  /** How long the POST waits for an answer (`Lanes` decides it in a consumer run). */
  timeoutMs?: number;
  /** The row, when it was read already (`deliveriesById`); null: there is none. */
  row?: Delivery | null;
};

/**
 * One attempt at delivering history row `deliveryId`, with the response
 * handling of docs/webhooks.md: 2xx succeeds; 410 fails it and deactivates
 * the webhook; a refused endpoint fails it at once; anything else is retried
 * on the schedule (a `Retry-After` on 429/503 lengthens the wait, up to
 * 12 h) until the 8th attempt, or until the webhook has failed for 5 days,
 * which deactivates it.
 *
 * The attempt is counted by the row alone (`attempts` + 1): the queue's own
 * count of the message's deliveries also counts the retries after a
 * D1 error, which POSTed nothing, so a few of those would have spent the
 * schedule and given a delivery up after one POST. A POST whose result could
 * not be written is bounded by the queue's retries and its dead-letter queue.
 */
export async function attemptDelivery(
  deps: Deps,
  deliveryId: string,
  { now = new Date(), timeoutMs = DELIVERY_TIMEOUT_MS, row: loaded }: AttemptOptions,
): Promise<DeliveryOutcome> {
  const { db } = deps;
  const row = loaded === undefined ? await loadDelivery(db, deliveryId) : loaded;
  if (!row) return { action: "ack", status: "missing" };
  // A duplicate message (the outbox sweep, at-least-once queues, a resend) for a finished row, or for a row
  // whose next attempt is not due yet: the chain that will make that attempt goes on, this one ends.
  if ((FINISHED as readonly string[]).includes(row.status) || row.dueAt > now.getTime() + DUE_SLACK_MS)
    return { action: "ack", status: "done" };

  // A test is sent once, by its own request (test-send.ts): one still pending with no answer ever recorded
  // (a resent one keeps its last) is a test whose request failed after its POST, found by the outbox sweep.
  const test = row.event === TEST_EVENT;
  if (test && row.attempts === 0 && row.result === "") {
    await finishStatement(db, deliveryId, {
      status: "failed",
      result: "not delivered: the test's answer was not recorded",
    });
    return { action: "ack", status: "skipped" };
  }

  const webhook = row.webhook?.id != null ? row.webhook : null;
  if (!webhook || !webhook.active) {
    const why = webhook ? "the webhook is inactive" : "the webhook was deleted";
    await finishStatement(db, deliveryId, { status: "failed", result: `not delivered: ${why}` });
    return { action: "ack", status: "skipped" };
  }

  const attempt = row.attempts + 1;
  const answer = await send(deps, row, webhook, now, timeoutMs);
  const ok = isSuccess(answer);
  const gone = answer.status === 410;
  const final = ok || gone || answer.result === "invalid endpoint" || attempt >= MAX_ATTEMPTS;

  // Two writes for a success of a webhook that was not failing: its attempt and its row. A test (resent)
  // changes nothing of the webhook: no failing clock, no deactivation.
  const health = test ? null : webhookHealth(db, webhook, ok, gone, now);
  const delaySeconds = final ? 0 : Math.max(RETRY_DELAYS_SECONDS[attempt - 1]!, answer.retryAfterSeconds ?? 0);
  const [, recorded, changed] = await db.batch([
    recordAttempt(db, deliveryId, now, answer),
    // Only over the count read: a duplicate message's attempt recorded meanwhile leaves this one's chain to end.
    finishStatement(
      db,
      deliveryId,
      {
        status: ok ? "success" : final ? "failed" : "dispatched",
        result: answer.result,
        attempts: attempt,
        ...(ok ? { deliveredAt: now } : {}),
        ...(final ? {} : { dueAt: now.getTime() + delaySeconds * 1000 }),
      },
      row.attempts,
    ).returning({ id: webhookDeliveries.id }),
    ...(health ? [health] : []),
  ]);
  if (recorded.length === 0) return { action: "ack", status: "done" };
  if (ok) return { action: "ack", status: "success" };
  // Deactivated by this answer (410, or failing for 5 days): nothing more is sent.
  if (final || (changed as { active: boolean }[] | undefined)?.[0]?.active === false) {
    if (!final) await finishStatement(db, deliveryId, { status: "failed" });
    return { action: "ack", status: "failed" };
  }
  return { action: "retry", delaySeconds };
}
