import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { vi } from "vitest";
import worker from "../src/index";
import type { DeliveryMessage } from "../src/domain/queue-messages";
import { createWebhook } from "../src/routes/webhooks/webhooks.routes";
import { answer, as } from "./helpers";

/**
 * The receiving end of webhooks for tests: a fetch stub at the boundary
 * (only the loopback `RECEIVER` is caught; anything else goes through), and
 * the `webhook-deliveries` consumer driven as the queue drives it.
 */

/**
 * Where test webhooks point: loopback port 9 (discard), which nothing serves,
 * so a delivery the stub does not catch — the real queue consumer running
 * after a test — is refused at once. A hostname would need DNS, which this
 * machine lacks: those lookups ended in workerd internal errors and hung runs.
 */
export const RECEIVER = "https://127.0.0.1:9/";

let counter = 0;
export const uniqueEndpoint = () => `${RECEIVER}hooks/${Date.now()}-${++counter}`;

/** A webhook of Acme (company 1) pointing at the stub. */
export async function newWebhook(fields: { event?: string; active?: boolean; endpoint?: string } = {}) {
  const response = await as("alice").send("POST", "/companies/1/webhooks", {
    endpoint: fields.endpoint ?? uniqueEndpoint(),
    event: fields.event ?? "scan:found",
    active: fields.active ?? true,
  });
  return answer(response, 201, createWebhook);
}

export const PAYLOAD = {
  scan_id: "scan-d",
  person_id: 2,
  site: { id: 3, name: "PeopleFinder" },
  at: "2026-02-01T10:00:00.000Z",
};
export const EVENT_AT = Date.UTC(2026, 1, 1, 10, 0, 5);

/** A pending history row, written as the emitter writes it (but not enqueued). */
export async function newDelivery(
  webhookId: number | null,
  fields: { status?: string; result?: string; attempts?: number } = {},
) {
  const id = crypto.randomUUID();
  await env.DB.prepare(
    `INSERT INTO webhook_deliveries (id, company_id, webhook_id, event, payload, status, result, attempts, created_at, updated_at)
     VALUES (?, 1, ?, 'scan:found', ?, ?, ?, ?, ?, ?)`,
  )
    .bind(
      id,
      webhookId,
      JSON.stringify(PAYLOAD),
      fields.status ?? "pending",
      fields.result ?? "",
      fields.attempts ?? 0,
      EVENT_AT,
      EVENT_AT,
    )
    .run();
  return id;
}

type DeliveryState = { status: string; result: string; attempts: number; delivered_at: number | null };

/**
 * A delivery's state wherever it is: D1 while it is on its way, the company's object once it
 * finished (src/services/webhook-delivery/archive.ts); null when neither holds it.
 */
export async function deliveryRow(id: string, companyId = 1): Promise<DeliveryState | null> {
  const inD1 = await env.DB.prepare(
    "SELECT status, result, attempts, delivered_at FROM webhook_deliveries WHERE id = ?",
  )
    .bind(id)
    .first<DeliveryState>();
  if (inD1) return inD1;
  const kept = await env.COMPANY.get(env.COMPANY.idFromName(`company:${companyId}`)).entry(id);
  if (!kept) return null;
  const { status, result, attempts, deliveredAt } = kept.row;
  return { status, result, attempts, delivered_at: deliveredAt?.getTime() ?? null };
}

/**
 * Runs the consumer on one message, as the queue delivers it; returns the
 * queue's verdict. The harness records retries but not their options, so the
 * requested delay is read from a spy on the message's `retry`. `bindings`
 * overrides the environment (e.g. `ENVIRONMENT: "production"`).
 */
export async function consume(queue: string, body: unknown, attempts = 1, bindings: Partial<Env> = {}) {
  const batch = createMessageBatch(queue, [{ id: "msg-1", timestamp: new Date(), attempts, body }]);
  const retry = vi.spyOn(batch.messages[0]!, "retry");
  const ctx = createExecutionContext();
  await worker.queue!(batch, { ...env, ...bindings }, ctx);
  const result = await getQueueResult(batch, ctx);
  return { ...result, retryDelays: retry.mock.calls.map(([options]) => options?.delaySeconds) };
}

/**
 * The queue delivers the delivery's message when its attempt is due: the row's next attempt (`due_at`) is made
 * due now first, as the time the queue waited would have. `consume` delivers a message whenever it is called
 * (a duplicate that comes early).
 */
export async function deliver(deliveryId: string, attempts = 1, bindings: Partial<Env> = {}) {
  await env.DB.prepare("UPDATE webhook_deliveries SET due_at = min(due_at, ?) WHERE id = ?")
    .bind(Date.now(), deliveryId)
    .run();
  return consume("webhook-deliveries", { kind: "deliver", deliveryId } satisfies DeliveryMessage, attempts, bindings);
}

export type Captured = { url: string; headers: Headers; body: string; init: RequestInit };

/** Stubs fetch for the test receiver (`RECEIVER`) only; `answer` decides each response. */
export function receiver(answer: () => Response | Promise<Response>) {
  const captured: Captured[] = [];
  const realFetch = globalThis.fetch;
  vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
    const request = new Request(input as RequestInfo, init);
    if (!request.url.startsWith(RECEIVER)) return realFetch(input as RequestInfo, init);
    captured.push({ url: request.url, headers: request.headers, body: await request.text(), init: init ?? {} });
    return answer();
  });
  return captured;
}

/** The Standard Webhooks headers of a captured request, as a verifier takes them. */
export const webhookHeaders = (call: Captured) => ({
  "webhook-id": call.headers.get("webhook-id")!,
  "webhook-timestamp": call.headers.get("webhook-timestamp")!,
  "webhook-signature": call.headers.get("webhook-signature")!,
});

/** Delivers what is pending and waits (up to ~5 s) until `condition` holds (scan events still go through the local queue). */
export async function until(condition: () => boolean | Promise<boolean>) {
  for (let i = 0; i < 50; i++) {
    await deliverPending();
    if (await condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * Delivers every pending history row through the queue consumer. In tests the
 * Worker's webhook queue has no automatic consumer (test/vitest.config.ts), so
 * a test that wants the deliveries a write caused runs them with this.
 */
export async function deliverPending() {
  const { results } = await env.DB.prepare(
    "SELECT id FROM webhook_deliveries WHERE status = 'pending' ORDER BY created_at",
  ).all<{
    id: string;
  }>();
  for (const { id } of results) await deliver(id);
}
