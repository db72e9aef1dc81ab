import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { consume, deliver, deliveryRow, newDelivery, newWebhook, receiver } from "../webhook-receiver";

// Webhook bookkeeping writes only what an attempt changed (docs/performance.md, "Webhook
// bookkeeping"): a success of a webhook that was not failing leaves the webhook row alone.

afterEach(() => vi.restoreAllMocks());

const webhookRow = (id: number) =>
  env.DB.prepare("SELECT failing_since, active, updated_at FROM webhooks WHERE id = ?").bind(id).first();

/** The D1 statements prepared while `work` runs, and those among them that write the `webhooks` table. */
async function webhookWrites(work: () => Promise<unknown>) {
  const queries: string[] = [];
  const prepare = env.DB.prepare.bind(env.DB);
  vi.spyOn(env.DB, "prepare").mockImplementation((query: string) => {
    queries.push(query);
    return prepare(query);
  });
  await work();
  vi.mocked(env.DB.prepare).mockRestore();
  return { writes: queries.filter((query) => /^update "webhooks"/i.test(query)), statements: queries.length };
}

describe("webhook bookkeeping", () => {
  it("a success of a webhook that is not failing writes nothing to its row: the attempt and the delivery only", async () => {
    const webhook = await newWebhook();
    const before = await webhookRow(webhook.id);
    const deliveryId = await newDelivery(webhook.id);
    receiver(() => new Response("ok", { status: 200 }));
    // The message as the queue delivers it (the row is due: `deliver` would add its own statement).
    const { writes, statements } = await webhookWrites(() =>
      consume("webhook-deliveries", { kind: "deliver", deliveryId }),
    );
    expect(await deliveryRow(deliveryId)).toMatchObject({ status: "success", attempts: 1 });
    expect(writes).toEqual([]);
    // The delivery's read, then one batch: the attempt and the delivery's row; then its hand-over to the
    // company's object (src/services/webhook-delivery/archive.ts): one batch reading the row and its
    // attempts, and one batch deleting the D1 row and reading which of the kept rows D1 still holds.
    expect(statements).toBe(7);
    expect(await webhookRow(webhook.id)).toEqual(before);
  });

  it("a failure starts the clock once; a later failure writes nothing; a success clears it", async () => {
    const webhook = await newWebhook();
    receiver(() => new Response(null, { status: 500 }));
    let result = await webhookWrites(async () => deliver(await newDeliveryOf(webhook.id)));
    expect(result.writes).toHaveLength(1);
    const failing = await webhookRow(webhook.id);
    expect(failing!.failing_since).not.toBeNull();
    vi.restoreAllMocks();

    receiver(() => new Response(null, { status: 500 }));
    result = await webhookWrites(async () => deliver(await newDeliveryOf(webhook.id)));
    // The statement runs, but matches no row: the clock is already running and the webhook stays active.
    expect(result.writes).toHaveLength(1);
    expect(await webhookRow(webhook.id)).toEqual(failing);
    vi.restoreAllMocks();

    receiver(() => new Response("ok", { status: 200 }));
    result = await webhookWrites(async () => deliver(await newDeliveryOf(webhook.id)));
    expect(result.writes).toHaveLength(1);
    expect(await webhookRow(webhook.id)).toMatchObject({ failing_since: null, active: 1 });
  });
});

const newDeliveryOf = (webhookId: number) => newDelivery(webhookId);
