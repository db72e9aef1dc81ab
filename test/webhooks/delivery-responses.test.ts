import { afterEach, describe, expect, it, vi } from "vitest";
import { getWebhook } from "../../src/routes/webhooks/webhooks.routes";
import { answer, as } from "../helpers";
import { deliver, deliveryRow, newDelivery, newWebhook, receiver } from "../webhook-receiver";

/**
 * What the receiver's answer does (docs/webhooks.md, "Retries"): 410
 * deactivates, Retry-After on 429/503 sets the next wait (up to 12 h), a
 * webhook failing for 5 days is deactivated, and a PATCH switches it on again.
 */

afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

const readWebhook = async (id: number) =>
  await answer(await as("alice").get(`/companies/1/webhooks/${id}`), 200, getWebhook);

const DAY = 24 * 3600 * 1000;

describe("the queue's retries after a D1 error", () => {
  it("spend none of the eight POSTs: a message the queue tried seven times before still makes attempt 1", async () => {
    const webhook = await newWebhook();
    const deliveryId = await newDelivery(webhook.id);
    const calls = receiver(() => new Response(null, { status: 500 }));
    // The queue delivered the message 7 times before, each ending in a D1 error (nothing POSTed).
    const result = await deliver(deliveryId, 8);
    expect(calls).toHaveLength(1);
    expect(result.retryMessages).toEqual([{ msgId: "msg-1" }]); // not given up
    expect(await deliveryRow(deliveryId)).toMatchObject({ status: "dispatched", result: "500", attempts: 1 });
  });
});

describe("410 Gone", () => {
  it("fails the delivery, deactivates the webhook with its reason, and nothing more is sent", async () => {
    const webhook = await newWebhook();
    const deliveryId = await newDelivery(webhook.id);
    const waiting = await newDelivery(webhook.id);
    const calls = receiver(() => new Response(null, { status: 410 }));

    const result = await deliver(deliveryId);
    expect(result.explicitAcks).toEqual(["msg-1"]);
    expect(result.retryMessages).toEqual([]);
    expect(await deliveryRow(deliveryId)).toMatchObject({ status: "failed", result: "410", attempts: 1 });
    expect(await readWebhook(webhook.id)).toMatchObject({ active: false, disabled_reason: "endpoint answered 410" });

    // The next delivery for it is not attempted.
    await deliver(waiting);
    expect(calls).toHaveLength(1);
    expect(await deliveryRow(waiting)).toMatchObject({
      status: "failed",
      result: "not delivered: the webhook is inactive",
    });
  });

  it("PATCH active: true switches it on again and clears disabled_reason", async () => {
    const webhook = await newWebhook();
    receiver(() => new Response(null, { status: 410 }));
    await deliver(await newDelivery(webhook.id));
    const response = await as("alice").send("PATCH", `/companies/1/webhooks/${webhook.id}`, { active: true });
    expect(await response.json()).toMatchObject({ active: true, disabled_reason: null });

    vi.restoreAllMocks();
    const calls = receiver(() => new Response(null, { status: 200 }));
    const next = await newDelivery(webhook.id);
    await deliver(next);
    expect(calls).toHaveLength(1);
    expect(await deliveryRow(next)).toMatchObject({ status: "success" });
  });

  it("a PATCH to false leaves disabled_reason null", async () => {
    const webhook = await newWebhook();
    const response = await as("alice").send("PATCH", `/companies/1/webhooks/${webhook.id}`, { active: false });
    expect(await response.json()).toMatchObject({ active: false, disabled_reason: null });
  });
});

describe("Retry-After", () => {
  it.each([
    [429, "120", 120],
    [503, "120", 120],
    [503, "999999", 43200],
    [429, "5", 10],
    [429, "soon", 10],
    [500, "120", 10],
  ])("%s with Retry-After: %s waits %s s before the next attempt", async (status, header, delay) => {
    const webhook = await newWebhook();
    const deliveryId = await newDelivery(webhook.id);
    receiver(() => new Response(null, { status, headers: { "Retry-After": header } }));
    const result = await deliver(deliveryId);
    expect(result.retryMessages).toEqual([{ msgId: "msg-1" }]);
    expect(result.retryDelays).toEqual([delay]);
    expect(await deliveryRow(deliveryId)).toMatchObject({ status: "dispatched", result: String(status) });
  });

  it("takes an HTTP date", async () => {
    const webhook = await newWebhook();
    const deliveryId = await newDelivery(webhook.id);
    const at = new Date(Date.now() + 600_000).toUTCString();
    receiver(() => new Response(null, { status: 503, headers: { "Retry-After": at } }));
    const [delay] = (await deliver(deliveryId)).retryDelays;
    expect(delay).toBeGreaterThanOrEqual(598);
    expect(delay).toBeLessThanOrEqual(601);
  });

  it("the schedule's wait wins when it is longer", async () => {
    const webhook = await newWebhook();
    const deliveryId = await newDelivery(webhook.id, { status: "dispatched", result: "500", attempts: 4 });
    receiver(() => new Response(null, { status: 429, headers: { "Retry-After": "120" } }));
    expect((await deliver(deliveryId, 5)).retryDelays).toEqual([7200]);
  });
});

describe("5 days of failures", () => {
  const T0 = Date.UTC(2031, 0, 1, 12);
  const at = (ms: number) => vi.useFakeTimers({ toFake: ["Date"], now: ms });

  it("deactivates a webhook whose attempts have all failed for 5 days", async () => {
    const webhook = await newWebhook();
    receiver(() => new Response(null, { status: 500 }));

    at(T0);
    await deliver(await newDelivery(webhook.id));
    at(T0 + 4 * DAY);
    expect((await deliver(await newDelivery(webhook.id))).retryDelays).toEqual([10]);
    expect(await readWebhook(webhook.id)).toMatchObject({ active: true, disabled_reason: null });

    at(T0 + 5 * DAY);
    const last = await newDelivery(webhook.id);
    const result = await deliver(last);
    expect(result.explicitAcks).toEqual(["msg-1"]);
    expect(result.retryMessages).toEqual([]);
    expect(await deliveryRow(last)).toMatchObject({ status: "failed", result: "500" });
    const after = await readWebhook(webhook.id);
    expect(after).toMatchObject({ active: false, disabled_reason: "failing for 5 days" });
    expect(after.updated_at).toBe(new Date(T0 + 5 * DAY).toISOString());

    // Switched on again, the clock starts anew.
    vi.useRealTimers();
    const response = await as("alice").send("PATCH", `/companies/1/webhooks/${webhook.id}`, { active: true });
    expect(await response.json()).toMatchObject({ active: true, disabled_reason: null });
    at(T0 + 6 * DAY);
    expect((await deliver(await newDelivery(webhook.id))).retryDelays).toEqual([10]);
    expect(await readWebhook(webhook.id)).toMatchObject({ active: true });
  });

  it("a success in between starts the clock again", async () => {
    const webhook = await newWebhook();
    const answers = [500, 200, 500];
    receiver(() => new Response(null, { status: answers.shift()! }));
    at(T0);
    await deliver(await newDelivery(webhook.id));
    at(T0 + 3 * DAY);
    await deliver(await newDelivery(webhook.id));
    at(T0 + 6 * DAY);
    expect((await deliver(await newDelivery(webhook.id))).retryDelays).toEqual([10]);
    expect(await readWebhook(webhook.id)).toMatchObject({ active: true, disabled_reason: null });
  });
});
