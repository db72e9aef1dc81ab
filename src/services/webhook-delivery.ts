import { and, asc, eq, inArray, lt, notInArray, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { webhookDeliveries, webhooks } from "../db/schema";
import { enqueueDeliveries, type DeliveryMessage } from "./events";
import { SECRET_PREFIX } from "./webhooks";

/**
 * Delivery of one webhook history row, following the Standard Webhooks
 * specification (https://www.standardwebhooks.com/) as DECISIONS §6 says.
 */

/** Waits before attempts 2…8; after the 8th attempt the delivery has failed. */
export const RETRY_DELAYS_SECONDS = [10, 60, 300, 1800, 7200, 21600, 43200] as const;
export const MAX_ATTEMPTS = RETRY_DELAYS_SECONDS.length + 1;
export const DELIVERY_TIMEOUT_MS = 10_000;
/** A `pending` row older than this was not enqueued (or its message was lost): the sweep re-enqueues it. */
export const OUTBOX_STALE_MS = 5 * 60_000;

/** The body POSTed: `{"type", "timestamp", "data"}`; identical on every attempt. */
export const deliveryBody = (row: { event: string; createdAt: Date; payload: unknown }) =>
  JSON.stringify({ type: row.event, timestamp: row.createdAt.toISOString(), data: row.payload });

const decodeBase64 = (value: string) => Uint8Array.from(atob(value), (char) => char.charCodeAt(0));
const encodeBase64 = (bytes: ArrayBuffer) => btoa(String.fromCharCode(...new Uint8Array(bytes)));

/** `v1,` + base64 HMAC-SHA256 of `{id}.{timestamp}.{body}`, keyed with the secret's decoded bytes. */
export async function signature(secret: string, id: string, timestamp: number, body: string): Promise<string> {
  const raw = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
  const key = await crypto.subtle.importKey("raw", decodeBase64(raw), { name: "HMAC", hash: "SHA-256" }, false, [
    "sign",
  ]);
  const mac = await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(`${id}.${timestamp}.${body}`));
  return `v1,${encodeBase64(mac)}`;
}

/** What the consumer does with the message after an attempt. */
export type DeliveryOutcome =
  | { action: "ack"; status: "success" | "failed" | "skipped" | "missing" | "done" }
  | { action: "retry"; delaySeconds: number };

const FINISHED = ["success", "failed"] as const;

/**
 * One attempt at delivering history row `deliveryId`. `messageAttempts` is
 * the queue's attempt count; the row's own count is used when it is ahead
 * (a re-enqueued row keeps its count), so a delivery never gets more than
 * eight POSTs from the schedule.
 */
export async function attemptDelivery(
  db: Db,
  deliveryId: string,
  messageAttempts: number,
  now = new Date(),
): Promise<DeliveryOutcome> {
  const row = await db
    .select({
      id: webhookDeliveries.id,
      event: webhookDeliveries.event,
      payload: webhookDeliveries.payload,
      status: webhookDeliveries.status,
      attempts: webhookDeliveries.attempts,
      createdAt: webhookDeliveries.createdAt,
      webhook: { endpoint: webhooks.endpoint, secret: webhooks.secret, active: webhooks.active },
    })
    .from(webhookDeliveries)
    .leftJoin(webhooks, eq(webhooks.id, webhookDeliveries.webhookId))
    .where(eq(webhookDeliveries.id, deliveryId))
    .get();
  if (!row) return { action: "ack", status: "missing" };
  // A duplicate message (the outbox sweep, at-least-once queues) for a finished row.
  if ((FINISHED as readonly string[]).includes(row.status)) return { action: "ack", status: "done" };

  if (!row.webhook || !row.webhook.active) {
    const why = row.webhook ? "the webhook is inactive" : "the webhook was deleted";
    await finish(db, deliveryId, { status: "failed", result: `not delivered: ${why}` });
    return { action: "ack", status: "skipped" };
  }

  const attempt = Math.max(messageAttempts, row.attempts + 1);
  const body = deliveryBody(row);
  const timestamp = Math.floor(now.getTime() / 1000);
  let ok = false;
  let result: string;
  try {
    const response = await fetch(row.webhook.endpoint, {
      method: "POST",
      headers: {
        "Content-Type": "application/json",
        "User-Agent": "privacy-platform-webhooks/1",
        "webhook-id": row.id,
        "webhook-timestamp": String(timestamp),
        "webhook-signature": await signature(row.webhook.secret, row.id, timestamp, body),
      },
      body,
      // A redirect is an answer other than 2xx, not a new destination.
      redirect: "manual",
      signal: AbortSignal.timeout(DELIVERY_TIMEOUT_MS),
    });
    await response.body?.cancel();
    ok = response.status >= 200 && response.status < 300;
    result = String(response.status);
  } catch (err) {
    result =
      err instanceof Error && err.name === "TimeoutError"
        ? `timeout: no answer within ${DELIVERY_TIMEOUT_MS / 1000} s`
        : `error: ${err instanceof Error ? err.message : String(err)}`;
  }

  if (ok) {
    await finish(db, deliveryId, { status: "success", result, attempts: attempt, deliveredAt: now });
    return { action: "ack", status: "success" };
  }
  if (attempt >= MAX_ATTEMPTS) {
    await finish(db, deliveryId, { status: "failed", result, attempts: attempt });
    return { action: "ack", status: "failed" };
  }
  await finish(db, deliveryId, { status: "dispatched", result, attempts: attempt });
  return { action: "retry", delaySeconds: RETRY_DELAYS_SECONDS[attempt - 1]! };
}

/** Writes an attempt's outcome unless the row finished meanwhile (a concurrent duplicate). */
function finish(
  db: Db,
  deliveryId: string,
  fields: Partial<Pick<typeof webhookDeliveries.$inferInsert, "status" | "result" | "attempts" | "deliveredAt">>,
) {
  return db
    .update(webhookDeliveries)
    .set({ ...fields, updatedAt: new Date() })
    .where(and(eq(webhookDeliveries.id, deliveryId), notInArray(webhookDeliveries.status, [...FINISHED])));
}

/** The dead-letter queue's end of a delivery: it has failed; its last result stays. */
export async function markDeadLettered(db: Db, deliveryId: string) {
  const updated = await db
    .update(webhookDeliveries)
    .set({
      status: "failed",
      result: sql`case when ${webhookDeliveries.result} = '' then 'not delivered: gave up' else ${webhookDeliveries.result} end`,
      updatedAt: new Date(),
    })
    .where(and(eq(webhookDeliveries.id, deliveryId), notInArray(webhookDeliveries.status, [...FINISHED])))
    .returning({ id: webhookDeliveries.id });
  return updated.length > 0;
}

/**
 * The hourly outbox sweep: history rows still `pending` five minutes after
 * their last change were never enqueued (or their message was lost); they are
 * enqueued again, oldest first, at most `limit` per run. Touching `updated_at`
 * means a row is re-sent at most once per five minutes however often the
 * sweep is fired; a duplicate message is harmless (the consumer skips
 * finished rows, and `webhook-id` lets receivers drop repeats).
 */
export async function sweepOutbox(db: Db, queue: Queue<DeliveryMessage>, now: Date, limit = 500) {
  const stale = await db
    .select({ id: webhookDeliveries.id })
    .from(webhookDeliveries)
    .where(
      and(
        eq(webhookDeliveries.status, "pending"),
        lt(webhookDeliveries.updatedAt, new Date(now.getTime() - OUTBOX_STALE_MS)),
      ),
    )
    .orderBy(asc(webhookDeliveries.updatedAt))
    .limit(limit)
    .all();
  if (stale.length === 0) return 0;
  const ids = stale.map((row) => row.id);
  // D1 binds at most 100 parameters per statement.
  const touches = [];
  for (let i = 0; i < ids.length; i += 90) {
    touches.push(
      db
        .update(webhookDeliveries)
        .set({ updatedAt: now })
        .where(and(inArray(webhookDeliveries.id, ids.slice(i, i + 90)), eq(webhookDeliveries.status, "pending"))),
    );
  }
  await db.batch([touches[0]!, ...touches.slice(1)]);
  await enqueueDeliveries(queue, ids);
  return ids.length;
}
