import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import worker from "../../src/index";
import { createDeps } from "../../src/services/create-deps";
import { attemptDelivery, deliveriesById, sweepOutbox } from "../../src/services/webhook-delivery";
import { listHistory } from "../../src/routes/webhooks/webhooks.routes";
import { answer, as } from "../helpers";
import {
  consume,
  deliver,
  deliverPending,
  deliveryRow,
  EVENT_AT,
  newDelivery,
  newWebhook,
  PAYLOAD,
  receiver,
} from "../webhook-receiver";

/**
 * The `webhook-deliveries` consumer, driven as the queue would drive it.
 * Outbound fetch is stubbed by spying on globalThis.fetch for this test's
 * endpoints only (test/webhook-receiver.ts).
 */

afterEach(() => {
  vi.restoreAllMocks();
});

async function expectedSignature(secret: string, id: string, timestamp: string, body: string) {
  const key = await crypto.subtle.importKey(
    "raw",
    Uint8Array.from(atob(secret.slice("whsec_".length)), (c) => c.charCodeAt(0)),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const mac = await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(`${id}.${timestamp}.${body}`));
  return `v1,${btoa(String.fromCharCode(...new Uint8Array(mac)))}`;
}

describe("webhook delivery", () => {
  it("POSTs a Standard Webhooks request and records success on 2xx", async () => {
    const webhook = await newWebhook();
    const deliveryId = await newDelivery(webhook.id);
    const calls = receiver(() => new Response("ok", { status: 200 }));

    const before = Math.floor(Date.now() / 1000);
    const result = await deliver(deliveryId);
    expect(result.explicitAcks).toEqual(["msg-1"]);
    expect(result.retryMessages).toEqual([]);

    expect(calls).toHaveLength(1);
    const [call] = calls;
    expect(call!.url).toBe(webhook.endpoint);
    expect(call!.init.method).toBe("POST");
    expect(call!.init.signal).toBeInstanceOf(AbortSignal);
    expect(call!.headers.get("Content-Type")).toBe("application/json");
    expect(call!.headers.get("webhook-id")).toBe(deliveryId);
    const timestamp = call!.headers.get("webhook-timestamp")!;
    expect(Number(timestamp)).toBeGreaterThanOrEqual(before);
    expect(Number(timestamp)).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000));
    expect(JSON.parse(call!.body)).toEqual({
      type: "scan:found",
      timestamp: new Date(EVENT_AT).toISOString(),
      data: PAYLOAD,
    });
    // The receiver can verify it with the secret it was given.
    expect(call!.headers.get("webhook-signature")).toBe(
      await expectedSignature(webhook.secret, deliveryId, timestamp, call!.body),
    );

    const row = await deliveryRow(deliveryId);
    expect(row).toMatchObject({ status: "success", result: "200", attempts: 1 });
    expect(row!.delivered_at).toBeGreaterThanOrEqual(before * 1000);

    // Seen in the history.
    const history = await answer(
      await as("alice").get("/companies/1/webhooks/history?type=scan:found&per_page=1000"),
      200,
      listHistory,
    );
    expect(history.find((entry) => entry.id === deliveryId)).toMatchObject({ status: "success", result: "200" });
  });

  it("a signature made with another secret does not verify", async () => {
    const webhook = await newWebhook();
    const other = await newWebhook();
    const deliveryId = await newDelivery(webhook.id);
    const calls = receiver(() => new Response(null, { status: 204 }));
    await deliver(deliveryId);
    const [call] = calls;
    expect(call!.headers.get("webhook-signature")).not.toBe(
      await expectedSignature(other.secret, deliveryId, call!.headers.get("webhook-timestamp")!, call!.body),
    );
    expect((await deliveryRow(deliveryId))!.status).toBe("success");
  });

  it("on a non-2xx answer marks the delivery dispatched and asks for a retry in 10 s", async () => {
    const webhook = await newWebhook();
    const deliveryId = await newDelivery(webhook.id);
    receiver(() => new Response("boom", { status: 500 }));

    const result = await deliver(deliveryId);
    expect(result.explicitAcks).toEqual([]);
    expect(result.retryMessages).toEqual([{ msgId: "msg-1" }]);
    expect(result.retryDelays).toEqual([10]);
    expect(await deliveryRow(deliveryId)).toMatchObject({
      status: "dispatched",
      result: "500",
      attempts: 1,
      delivered_at: null,
    });
  });

  it("treats a redirect as a failed attempt and does not follow it", async () => {
    const webhook = await newWebhook();
    const deliveryId = await newDelivery(webhook.id);
    const calls = receiver(() => new Response(null, { status: 302, headers: { Location: "https://elsewhere.test/" } }));
    const result = await deliver(deliveryId);
    expect(calls[0]!.init.redirect).toBe("manual");
    expect(result.retryMessages).toEqual([{ msgId: "msg-1" }]);
    expect(result.retryDelays).toEqual([10]);
    expect(await deliveryRow(deliveryId)).toMatchObject({ status: "dispatched", result: "302" });
  });

  it("records `connection failed` or `timeout`, never the network error's text, and retries", async () => {
    const webhook = await newWebhook();
    const refused = await newDelivery(webhook.id);
    receiver(() => {
      throw new TypeError("connection refused");
    });
    expect((await deliver(refused)).retryDelays).toEqual([10]);
    expect(await deliveryRow(refused)).toMatchObject({
      status: "dispatched",
      result: "connection failed",
      attempts: 1,
    });

    vi.restoreAllMocks();
    const slow = await newDelivery(webhook.id);
    receiver(() => {
      throw new DOMException("The operation was aborted due to timeout", "TimeoutError");
    });
    expect((await deliver(slow)).retryDelays).toEqual([10]);
    expect(await deliveryRow(slow)).toMatchObject({ status: "dispatched", result: "timeout" });
  });

  it("follows the retry schedule 10 s, 1 min, 5 min, 30 min, 2 h, 6 h, 12 h by attempt", async () => {
    const webhook = await newWebhook();
    const deliveryId = await newDelivery(webhook.id);
    receiver(() => new Response(null, { status: 503 }));
    const delays = [];
    for (let attempt = 1; attempt <= 7; attempt++) {
      const result = await deliver(deliveryId, attempt);
      expect(result.retryMessages).toEqual([{ msgId: "msg-1" }]);
      delays.push(...result.retryDelays);
      expect(await deliveryRow(deliveryId)).toMatchObject({ status: "dispatched", attempts: attempt });
    }
    expect(delays).toEqual([10, 60, 300, 1800, 7200, 21600, 43200]);
  });

  it("marks the delivery failed after the 8th attempt and stops retrying", async () => {
    const webhook = await newWebhook();
    const deliveryId = await newDelivery(webhook.id, { status: "dispatched", result: "503", attempts: 7 });
    const calls = receiver(() => new Response(null, { status: 503 }));
    const result = await deliver(deliveryId, 8);
    expect(calls).toHaveLength(1);
    expect(result.explicitAcks).toEqual(["msg-1"]);
    expect(result.retryMessages).toEqual([]);
    expect(await deliveryRow(deliveryId)).toMatchObject({ status: "failed", result: "503", attempts: 8 });
  });

  it("succeeds on a later attempt", async () => {
    const webhook = await newWebhook();
    const deliveryId = await newDelivery(webhook.id, { status: "dispatched", result: "500", attempts: 2 });
    receiver(() => new Response(null, { status: 202 }));
    expect((await deliver(deliveryId, 3)).explicitAcks).toEqual(["msg-1"]);
    expect(await deliveryRow(deliveryId)).toMatchObject({ status: "success", result: "202", attempts: 3 });
  });

  it("does not deliver to an inactive webhook: acknowledged and recorded", async () => {
    const webhook = await newWebhook({ active: false });
    const deliveryId = await newDelivery(webhook.id);
    const calls = receiver(() => new Response(null, { status: 200 }));
    const result = await deliver(deliveryId);
    expect(calls).toHaveLength(0);
    expect(result.explicitAcks).toEqual(["msg-1"]);
    expect(await deliveryRow(deliveryId)).toMatchObject({
      status: "failed",
      result: "not delivered: the webhook is inactive",
      attempts: 0,
    });
  });

  it("does not deliver for a deleted webhook (a retry scheduled before the delete included)", async () => {
    const webhook = await newWebhook();
    const deliveryId = await newDelivery(webhook.id, { status: "dispatched", result: "500", attempts: 1 });
    expect((await as("alice").send("DELETE", `/companies/1/webhooks/${webhook.id}`)).status).toBe(204);
    const calls = receiver(() => new Response(null, { status: 200 }));
    const result = await deliver(deliveryId, 2);
    expect(calls).toHaveLength(0);
    expect(result.explicitAcks).toEqual(["msg-1"]);
    expect(await deliveryRow(deliveryId)).toMatchObject({
      status: "failed",
      result: "not delivered: the webhook was deleted",
    });
  });

  it("ignores a duplicate message for a finished delivery", async () => {
    const webhook = await newWebhook();
    const deliveryId = await newDelivery(webhook.id, { status: "success", result: "200", attempts: 1 });
    const calls = receiver(() => new Response(null, { status: 500 }));
    const result = await deliver(deliveryId, 1);
    expect(calls).toHaveLength(0);
    expect(result.explicitAcks).toEqual(["msg-1"]);
    expect(await deliveryRow(deliveryId)).toMatchObject({ status: "success", result: "200", attempts: 1 });
  });

  it("acknowledges messages that are not delivery messages, or name no delivery", async () => {
    for (const body of [{ deliveryId: "x" }, "garbage", { kind: "deliver", deliveryId: "no-such-delivery" }]) {
      const result = await consume("webhook-deliveries", body);
      expect(result.explicitAcks).toEqual(["msg-1"]);
      expect(result.retryMessages).toEqual([]);
    }
  });
});

describe("webhook-deliveries dead-letter queue", () => {
  it("keeps the delivery due: back to pending with its attempts and last result, and the outbox sweep sends it again", async () => {
    // The queue gives up on a message whose consumer kept failing (D1 trouble), not on the receiver.
    const webhook = await newWebhook();
    const deliveryId = await newDelivery(webhook.id, { status: "dispatched", result: "502", attempts: 3 });
    const result = await consume("webhook-deliveries-dlq", { kind: "deliver", deliveryId }, 8);
    expect(result.explicitAcks).toEqual(["msg-1"]);
    expect(await deliveryRow(deliveryId)).toMatchObject({ status: "pending", result: "502", attempts: 3 });

    const sent: unknown[] = [];
    const queue = {
      sendBatch: async (messages: { body: unknown }[]) => void sent.push(...messages.map((m) => m.body)),
    };
    await sweepOutbox({ ...createDeps(env), webhookQueue: queue as never }, new Date(Date.now() + 6 * 60_000));
    expect(sent).toContainEqual({ kind: "deliver", deliveryId });
  });

  it("a delivery dead-lettered while its retry waits (the queue's own count spent) keeps its time: no early POST", async () => {
    const webhook = await newWebhook();
    const deliveryId = await newDelivery(webhook.id, { status: "dispatched", result: "503", attempts: 7 });
    const retryAt = Date.now() + 12 * 3600_000;
    await env.DB.prepare("UPDATE webhook_deliveries SET due_at = ? WHERE id = ?").bind(retryAt, deliveryId).run();
    await consume("webhook-deliveries-dlq", { kind: "deliver", deliveryId }, 8);
    const sent: unknown[] = [];
    const queue = {
      sendBatch: async (messages: { body: unknown }[]) => void sent.push(...messages.map((m) => m.body)),
    };
    const sweep = (at: number) => sweepOutbox({ ...createDeps(env), webhookQueue: queue as never }, new Date(at));
    await sweep(Date.now() + 6 * 60_000);
    expect(sent).toEqual([]);
    await sweep(retryAt + 6 * 60_000);
    expect(sent).toContainEqual({ kind: "deliver", deliveryId });
  });

  it("does not touch a delivery that already succeeded", async () => {
    const webhook = await newWebhook();
    const deliveryId = await newDelivery(webhook.id, { status: "success", result: "200", attempts: 1 });
    await consume("webhook-deliveries-dlq", { kind: "deliver", deliveryId });
    expect(await deliveryRow(deliveryId)).toMatchObject({ status: "success", result: "200" });
  });
});

describe("hourly outbox sweep", () => {
  const minute = 60_000;

  /** When the delivery's next attempt was due (a pending one: when it was recorded). */
  async function setAge(id: string, dueAt: number) {
    await env.DB.prepare("UPDATE webhook_deliveries SET due_at = ? WHERE id = ?").bind(dueAt, id).run();
  }

  it("re-enqueues deliveries whose attempt is 5 minutes overdue (never sent, or a retry whose message was lost), and only those", async () => {
    const webhook = await newWebhook();
    const now = Date.now();
    const stale = await newDelivery(webhook.id);
    const fresh = await newDelivery(webhook.id);
    const retrying = await newDelivery(webhook.id, { status: "dispatched", result: "500", attempts: 4 });
    const lost = await newDelivery(webhook.id, { status: "dispatched", result: "500", attempts: 1 });
    await setAge(stale, now - 6 * minute);
    await setAge(fresh, now - 2 * minute);
    await setAge(retrying, now + 30 * minute);
    await setAge(lost, now - 60 * minute);

    const sent: unknown[] = [];
    const queue = {
      sendBatch: async (messages: { body: unknown }[]) => void sent.push(...messages.map((m) => m.body)),
    };
    const count = await sweepOutbox({ ...createDeps(env), webhookQueue: queue as never }, new Date(now));
    expect(count).toBeGreaterThanOrEqual(1);
    expect(sent).toContainEqual({ kind: "deliver", deliveryId: stale });
    expect(sent).not.toContainEqual({ kind: "deliver", deliveryId: fresh });
    expect(sent).not.toContainEqual({ kind: "deliver", deliveryId: retrying });
    expect(sent).toContainEqual({ kind: "deliver", deliveryId: lost });

    // Touched, so a second sweep right after sends nothing again.
    sent.length = 0;
    await sweepOutbox({ ...createDeps(env), webhookQueue: queue as never }, new Date(now + minute));
    expect(sent).not.toContainEqual({ kind: "deliver", deliveryId: stale });
  });

  it("a second message for a delivery waiting in a backlog (the sweep's) keeps one schedule: no early POST, all 8 attempts", async () => {
    const webhook = await newWebhook();
    const deliveryId = await newDelivery(webhook.id);
    // Its message waits behind a backlog for more than 5 minutes: the sweep sends a second one.
    await setAge(deliveryId, Date.now() - 6 * minute);
    const sent: { deliveryId: string }[] = [];
    const queue = {
      sendBatch: async (messages: { body: { deliveryId: string } }[]) => void sent.push(...messages.map((m) => m.body)),
    };
    await sweepOutbox({ ...createDeps(env), webhookQueue: queue as never }, new Date());
    expect(sent).toContainEqual({ kind: "deliver", deliveryId });
    const calls = receiver(() => new Response(null, { status: 503 }));
    // Both messages come, one right after the other: one POST, one retry scheduled.
    const first = await consume("webhook-deliveries", { kind: "deliver", deliveryId });
    const second = await consume("webhook-deliveries", { kind: "deliver", deliveryId });
    expect(calls).toHaveLength(1);
    expect(first.retryDelays).toEqual([10]);
    expect(second).toMatchObject({ retryMessages: [], explicitAcks: ["msg-1"] });
    // The one chain goes on at its times, to its 8th attempt.
    for (let attempt = 2; attempt <= 8; attempt++) await deliver(deliveryId, attempt);
    expect(calls).toHaveLength(8);
    expect(await deliveryRow(deliveryId)).toMatchObject({ status: "failed", attempts: 8 });
  });

  it("an attempt that read the row before another attempt was recorded ends its chain: the count is not spent twice", async () => {
    const webhook = await newWebhook();
    const deliveryId = await newDelivery(webhook.id);
    const deps = createDeps(env);
    const [row] = [...(await deliveriesById(deps.db, [deliveryId])).values()];
    receiver(() => new Response(null, { status: 503 }));
    expect(await attemptDelivery(deps, deliveryId, {})).toEqual({ action: "retry", delaySeconds: 10 });
    // A duplicate that read the row at the same time, sending at the same time.
    expect(await attemptDelivery(deps, deliveryId, { row })).toEqual({ action: "ack", status: "done" });
    expect(await deliveryRow(deliveryId)).toMatchObject({ status: "dispatched", attempts: 1 });
  });

  it("two sweeps at once (the minute's and the hour's cron) enqueue a stale delivery once", async () => {
    const webhook = await newWebhook();
    const now = Date.now();
    const stale = await newDelivery(webhook.id);
    await setAge(stale, now - 60 * minute);
    const sent: { deliveryId: string }[] = [];
    const queue = {
      sendBatch: async (messages: { body: { deliveryId: string } }[]) => void sent.push(...messages.map((m) => m.body)),
    };
    const deps = { ...createDeps(env), webhookQueue: queue as never };
    await Promise.all([sweepOutbox(deps, new Date(now)), sweepOutbox(deps, new Date(now))]);
    expect(sent.filter((message) => message.deliveryId === stale)).toHaveLength(1);
  });

  it("runs in the hourly cron, and the re-enqueued delivery is then delivered", async () => {
    const webhook = await newWebhook();
    const deliveryId = await newDelivery(webhook.id);
    const now = Date.now();
    await setAge(deliveryId, now - 10 * minute);
    const calls = receiver(() => new Response(null, { status: 200 }));

    const ctx = createExecutionContext();
    await worker.scheduled!(createScheduledController({ cron: "0 * * * *", scheduledTime: now }), env, ctx);

    await waitOnExecutionContext(ctx);
    // The consumer takes what the sweep re-enqueued (tests run it themselves).
    await deliverPending();
    expect(await deliveryRow(deliveryId)).toMatchObject({ status: "success", result: "200", attempts: 1 });
    expect(calls.map((call) => call.headers.get("webhook-id"))).toContain(deliveryId);
  });
});
