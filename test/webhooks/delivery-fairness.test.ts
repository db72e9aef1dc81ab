import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import worker from "../../src/index";
import { createWebhook, getHistoryEntry } from "../../src/routes/webhooks/webhooks.routes";
import { answer, as, failingD1 } from "../helpers";
import { EVENT_AT, newDelivery, newWebhook, PAYLOAD, RECEIVER, uniqueEndpoint } from "../webhook-receiver";

/**
 * Fair delivery (docs/webhooks.md, "Timeouts and fairness"): one consumer
 * run attempts its messages at the same time, at most five at once and one
 * at a time per endpoint, so an endpoint that hangs delays no other
 * company's delivery by more than one attempt's timeout; an endpoint that
 * failed earlier in the run gets a shorter timeout.
 */

afterEach(() => vi.restoreAllMocks());

/**
 * Timeouts as the code asks for them, run 4 times faster (10 s → 2.5 s) so a
 * hanging endpoint times out within the test. Returns the requested ones.
 */
function fastTimeouts() {
  const requested = new WeakMap<AbortSignal, number>();
  const timeout = AbortSignal.timeout.bind(AbortSignal);
  vi.spyOn(AbortSignal, "timeout").mockImplementation((ms: number) => {
    const signal = timeout(ms / 4);
    requested.set(signal, ms);
    return signal;
  });
  return requested;
}

type Answer = { status: number; afterMs?: number } | "hang";

/** The test receiver: `answer(url)` decides; "hang" never answers (until the attempt's timeout aborts it). */
function endpoints(answer: (url: string) => Answer, requested?: WeakMap<AbortSignal, number>) {
  const calls: { url: string; timeoutMs: number | undefined; started: number }[] = [];
  const inFlight = new Map<string, number>();
  const peak = { all: 0, perEndpoint: 0 };
  const realFetch = globalThis.fetch;
  vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
    const url = new Request(input as RequestInfo, init).url;
    if (!url.startsWith(RECEIVER)) return realFetch(input as RequestInfo, init);
    const signal = init?.signal ?? undefined;
    calls.push({ url, timeoutMs: signal ? requested?.get(signal) : undefined, started: Date.now() });
    inFlight.set(url, (inFlight.get(url) ?? 0) + 1);
    peak.all = Math.max(
      peak.all,
      [...inFlight.values()].reduce((a, b) => a + b, 0),
    );
    peak.perEndpoint = Math.max(peak.perEndpoint, inFlight.get(url)!);
    try {
      const decided = answer(url);
      await new Promise<void>((resolve, reject) => {
        signal?.addEventListener("abort", () => reject(signal.reason), { once: true });
        if (decided !== "hang") setTimeout(resolve, decided.afterMs ?? 0);
      });
      return new Response(null, { status: (decided as { status: number }).status });
    } finally {
      inFlight.set(url, inFlight.get(url)! - 1);
    }
  });
  return { calls, peak };
}

/** Runs the consumer on these deliveries as one batch, without waiting for it; `bindings` override the environment. */
function consumeBatch(deliveryIds: string[], bindings: Partial<Env> = {}) {
  const batch = createMessageBatch(
    "webhook-deliveries",
    deliveryIds.map((deliveryId, i) => ({
      id: `msg-${i}`,
      timestamp: new Date(),
      attempts: 1,
      body: { kind: "deliver", deliveryId },
    })),
  );
  const ctx = createExecutionContext();
  const retries = batch.messages.map((message) => vi.spyOn(message, "retry"));
  const run = worker.queue!(batch, { ...env, ...bindings }, ctx);
  return {
    done: Promise.resolve(run).then(() => getQueueResult(batch, ctx)),
    retryDelays: () => retries.flatMap((retry) => retry.mock.calls.map(([options]) => options?.delaySeconds)),
  };
}

/** A webhook of Globex (company 2, Carol) and a pending delivery for it. */
async function globexDelivery(endpoint: string) {
  const response = await as("carol").send("POST", "/companies/2/webhooks", {
    endpoint,
    event: "scan:found",
    active: true,
  });
  expect(response.status).toBe(201);
  const { id: webhookId } = await answer(response, 201, createWebhook);
  const id = crypto.randomUUID();
  await env.DB.prepare(
    `INSERT INTO webhook_deliveries (id, company_id, webhook_id, event, payload, status, result, attempts, created_at, updated_at)
     VALUES (?, 2, ?, 'scan:found', ?, 'pending', '', 0, ?, ?)`,
  )
    .bind(id, webhookId, JSON.stringify(PAYLOAD), EVENT_AT, EVENT_AT)
    .run();
  return id;
}

const entry = async (who: "alice" | "carol", companyId: number, id: string) =>
  await answer(await as(who).get(`/companies/${companyId}/webhooks/history/${id}`), 200, getHistoryEntry);

async function waitFor(condition: () => Promise<boolean>, withinMs: number) {
  const until = Date.now() + withinMs;
  while (Date.now() < until) {
    if (await condition()) return true;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return false;
}

describe("an endpoint that hangs", () => {
  it("does not hold up another company's delivery in the same batch", async () => {
    const requested = fastTimeouts();
    const hanging = uniqueEndpoint();
    const answering = uniqueEndpoint();
    const acme = await newDelivery((await newWebhook({ endpoint: hanging })).id);
    const globex = await globexDelivery(answering);
    endpoints((url) => (url === hanging ? "hang" : { status: 200 }), requested);

    const started = Date.now();
    // The hanging endpoint's message comes first in the batch.
    const { done } = consumeBatch([acme, globex]);

    // Globex sees its delivery succeed while Acme's is still in flight.
    const delivered = await waitFor(async () => (await entry("carol", 2, globex)).status === "success", 2_000);
    const deliveredAfterMs = Date.now() - started;
    const acmeMeanwhile = await entry("alice", 1, acme);
    const result = await done;

    expect(delivered, "Globex's delivery did not succeed while Acme's endpoint hung").toBe(true);
    expect(acmeMeanwhile).toMatchObject({ status: "pending", attempts: [] });
    expect(deliveredAfterMs).toBeLessThan(2_000); // Acme's attempt times out after 2.5 s here (10 s in production)
    const good = await entry("carol", 2, globex);
    expect(good).toMatchObject({ status: "success", result: "200" });
    expect(good.attempts).toHaveLength(1);
    expect(good.attempts[0]!.duration_ms).toBeLessThan(1_000);

    // The hanging one timed out on its own clock, and is retried.
    const bad = await entry("alice", 1, acme);
    expect(bad).toMatchObject({ status: "dispatched", result: "timeout" });
    expect(bad.attempts[0]!.duration_ms).toBeGreaterThanOrEqual(2_400);
    expect(result.explicitAcks).toEqual(["msg-1"]);
    expect(result.retryMessages).toEqual([{ msgId: "msg-0" }]);
  });

  it("a failing endpoint's next attempts in the run get 3 s, others keep 10 s", async () => {
    const requested = fastTimeouts();
    const failing = uniqueEndpoint();
    const healthy = uniqueEndpoint();
    const failingHook = await newWebhook({ endpoint: failing });
    const first = await newDelivery(failingHook.id);
    const second = await newDelivery(failingHook.id);
    const third = await newDelivery(failingHook.id);
    const other = await newDelivery((await newWebhook({ endpoint: healthy })).id);
    const { calls } = endpoints((url) => (url === failing ? { status: 500 } : { status: 200 }), requested);

    await (
      await consumeBatch([first, second, third, other])
    ).done;

    const timeouts = (url: string) => calls.filter((call) => call.url === url).map((call) => call.timeoutMs);
    expect(timeouts(failing)).toEqual([10_000, 3_000, 3_000]);
    expect(timeouts(healthy)).toEqual([10_000]);
  });

  it("the next run starts an endpoint that failed before after the others", async () => {
    const failing = uniqueEndpoint();
    const healthy = uniqueEndpoint();
    const failingHook = await newWebhook({ endpoint: failing });
    await env.DB.prepare("UPDATE webhooks SET failing_since = ? WHERE id = ?")
      .bind(Date.now() - 60_000, failingHook.id)
      .run();
    const stale = await newDelivery(failingHook.id);
    const fresh = await newDelivery((await newWebhook({ endpoint: healthy })).id);
    const { calls } = endpoints(() => ({ status: 200 }));

    await (
      await consumeBatch([stale, fresh])
    ).done;
    expect(calls.map((call) => call.url)).toEqual([healthy, failing]);
  });
});

describe("a run's attempts", () => {
  it("run at the same time: at most five at once, one at a time per endpoint, all delivered", async () => {
    const shared = uniqueEndpoint();
    const sharedHook = await newWebhook({ endpoint: shared });
    const ids = [await newDelivery(sharedHook.id), await newDelivery(sharedHook.id), await newDelivery(sharedHook.id)];
    for (let i = 0; i < 7; i++) ids.push(await newDelivery((await newWebhook()).id));
    const { calls, peak } = endpoints(() => ({ status: 200, afterMs: 100 }));

    const result = await (await consumeBatch(ids)).done;

    expect(calls).toHaveLength(10);
    expect(peak.all).toBe(5);
    expect(peak.perEndpoint).toBe(1);
    expect(result.explicitAcks).toHaveLength(10);
    for (const id of ids) expect((await entry("alice", 1, id)).status).toBe("success");
  });

  it("a run whose rows cannot be read together sends nothing at once to one endpoint: it is tried again in 30 s", async () => {
    const shared = uniqueEndpoint();
    const hook = await newWebhook({ endpoint: shared });
    const ids = [await newDelivery(hook.id), await newDelivery(hook.id), await newDelivery(hook.id)];
    const { calls, peak } = endpoints(() => ({ status: 200, afterMs: 100 }));
    // D1 fails the run's read of its rows (and answers the statements after it).
    let failed = false;
    const firstReadFails = {
      test: (query: string) =>
        !failed && /from "webhook_deliveries" left join "webhooks"/.test(query) && (failed = true),
    } as unknown as RegExp;
    const run = consumeBatch(ids, { DB: failingD1(firstReadFails, () => new Error("D1_ERROR: network lost")) });

    const result = await run.done;
    expect(peak.perEndpoint).toBeLessThanOrEqual(1);
    expect(calls).toHaveLength(0);
    expect(result.retryMessages).toHaveLength(3);
    expect(run.retryDelays()).toEqual([30, 30, 30]);
  });

  it("a 410 in the run stops the other attempts to that endpoint", async () => {
    const gone = uniqueEndpoint();
    const hook = await newWebhook({ endpoint: gone });
    const ids = [await newDelivery(hook.id), await newDelivery(hook.id)];
    const { calls } = endpoints(() => ({ status: 410 }));

    await (
      await consumeBatch(ids)
    ).done;
    expect(calls).toHaveLength(1);
    expect((await entry("alice", 1, ids[1]!)).result).toBe("not delivered: the webhook is inactive");
  });
});
