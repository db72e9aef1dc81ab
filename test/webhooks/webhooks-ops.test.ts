import { env } from "cloudflare:workers";
import { Webhook as Verifier } from "standardwebhooks";
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  createWebhook,
  getHistoryEntry,
  getWebhook,
  listHistory,
  listWebhooks,
  rotateSecret,
  testWebhook,
} from "../../src/routes/webhooks/webhooks.routes";
import { createDeps } from "../../src/services/create-deps";
import { sendTestEvent, sweepOutbox } from "../../src/services/webhook-delivery";
import { OUTBOX_STALE_MS } from "../../src/services/webhook-delivery/sweep";
import { answer, as, call, expectError, failingD1 } from "../helpers";
import { deliver, deliveryRow, newDelivery, newWebhook, receiver, until, webhookHeaders } from "../webhook-receiver";

/**
 * Test events, resend, one history entry with its attempts, secret rotation,
 * the per-company limit and the history's type list. The receiver is a fetch
 * stub; signatures are verified with the published `standardwebhooks` package.
 */

afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

const detail = async (id: string) => {
  const response = await as("alice").get(`/companies/1/webhooks/history/${id}`);
  expect(response.status).toBe(200);
  return await answer(response, 200, getHistoryEntry);
};

describe("POST /companies/{company_id}/webhooks/{id}/test", () => {
  it("sends a signed webhook:test event now, which verifies, and records it in the history", async () => {
    const webhook = await newWebhook();
    const calls = receiver(() => new Response("ok", { status: 200 }));
    const response = await as("alice").send("POST", `/companies/1/webhooks/${webhook.id}/test`);
    expect(response.status).toBe(200);
    const result = await answer(response, 200, testWebhook);
    expect(result).toEqual({ status: "success", result: "200", history_id: expect.any(String) });

    expect(calls).toHaveLength(1);
    const verified = new Verifier(webhook.secret).verify(calls[0]!.body, webhookHeaders(calls[0]!));
    expect(verified).toEqual({ type: "webhook:test", timestamp: expect.any(String), data: { webhook_id: webhook.id } });
    expect(calls[0]!.headers.get("webhook-id")).toBe(result.history_id);

    const entry = await detail(result.history_id);
    expect(entry).toMatchObject({
      id: result.history_id,
      event: "webhook:test",
      payload: { webhook_id: webhook.id },
      status: "success",
      result: "200",
    });
    expect(entry.attempts).toEqual([{ at: expect.any(String), result: "200", duration_ms: expect.any(Number) }]);

    const history = await answer(
      await as("alice").get("/companies/1/webhooks/history?type=webhook:test"),
      200,
      listHistory,
    );
    expect(history.map((h) => h.id)).toContain(result.history_id);
  });

  it("answers how a failing endpoint answered, without retrying or changing the webhook", async () => {
    const webhook = await newWebhook({ active: false });
    const calls = receiver(() => new Response(null, { status: 410 }));
    const result = await answer(
      await as("alice").send("POST", `/companies/1/webhooks/${webhook.id}/test`),
      200,
      testWebhook,
    );
    expect(result).toMatchObject({ status: "failed", result: "410" });
    expect(calls).toHaveLength(1);
    expect(await deliveryRow(result.history_id)).toMatchObject({ status: "failed", attempts: 1 });
    const after = await answer(await as("alice").get(`/companies/1/webhooks/${webhook.id}`), 200, getWebhook);
    expect(after).toEqual(webhook);
  });

  it("a test whose answer could not be recorded is finished by the sweep, never sent again, and changes no webhook", async () => {
    const webhook = await newWebhook();
    const deps = createDeps(env);
    let batches = 0;
    // The test's entry commits; the write after the POST (its attempt and result) fails: the client gets a 500.
    const db = new Proxy(deps.db, {
      get(target, key, receiverObj) {
        if (key === "batch")
          return (...args: unknown[]) => {
            batches++;
            if (batches === 2) return Promise.reject(new Error("D1_ERROR: network connection lost"));
            return (target.batch as (...a: unknown[]) => unknown).apply(target, args);
          };
        return Reflect.get(target, key, receiverObj) as unknown;
      },
    });
    const first = receiver(() => new Response(null, { status: 204 }));
    await expect(sendTestEvent({ ...deps, db }, 1, webhook.id)).rejects.toThrow();
    expect(first).toHaveLength(1);
    const { id } = (await env.DB.prepare(
      "SELECT id FROM webhook_deliveries WHERE event = 'webhook:test' AND webhook_id = ?",
    )
      .bind(webhook.id)
      .first<{ id: string }>())!;
    vi.restoreAllMocks();

    // Five minutes later the outbox sweep finds it pending; its turn comes with the endpoint answering 410.
    const again = receiver(() => new Response(null, { status: 410 }));
    await sweepOutbox(createDeps(env), new Date(Date.now() + OUTBOX_STALE_MS + 1_000));
    await deliver(id);
    expect(again).toHaveLength(0);
    expect(await deliveryRow(id)).toMatchObject({
      status: "failed",
      result: "not delivered: the test's answer was not recorded",
    });
    const after = await answer(await as("alice").get(`/companies/1/webhooks/${webhook.id}`), 200, getWebhook);
    expect(after).toEqual(webhook);
  });

  it("a resent test is sent again and a 410 to it still deactivates nothing", async () => {
    const webhook = await newWebhook();
    receiver(() => new Response(null, { status: 500 }));
    const test = await answer(
      await as("alice").send("POST", `/companies/1/webhooks/${webhook.id}/test`),
      200,
      testWebhook,
    );
    expect(test.status).toBe("failed");
    expect((await as("alice").send("POST", `/companies/1/webhooks/history/${test.history_id}/resend`)).status).toBe(
      202,
    );
    const calls = receiver(() => new Response(null, { status: 410 }));
    await deliver(test.history_id);
    expect(calls).toHaveLength(1);
    const after = await answer(await as("alice").get(`/companies/1/webhooks/${webhook.id}`), 200, getWebhook);
    expect(after).toEqual(webhook);
  });

  it("404 for another tenant's webhook, 403 without `write webhooks`, 401 without a token", async () => {
    const theirs = await answer(
      await as("carol").send("POST", "/companies/2/webhooks", {
        endpoint: "https://127.0.0.1:9/x",
        event: "scan:found",
      }),
      201,
      createWebhook,
    );
    const calls = receiver(() => new Response(null, { status: 200 }));
    await expectError(await as("alice").send("POST", `/companies/1/webhooks/${theirs.id}/test`), 404, "Not Found");
    await expectError(await as("alice").send("POST", "/companies/1/webhooks/999999/test"), 404, "Not Found");
    const mine = await newWebhook();
    await expectError(await as("bob").send("POST", `/companies/1/webhooks/${mine.id}/test`), 403, "Forbidden");
    await expectError(await call(`/companies/1/webhooks/${mine.id}/test`, { method: "POST" }), 401, "Unauthorized");
    expect(calls).toHaveLength(0);
  });
});

describe("a test send racing the webhook's DELETE", () => {
  it("a webhook deleted after the test read it: 404, nothing sent, no entry (not a 500)", async () => {
    const webhook = await newWebhook();
    const calls = receiver(() => new Response("ok", { status: 200 }));
    // The DELETE lands between the test's read of the webhook and its write of the history entry.
    const db = failingD1(/^$/, () => new Error("unused"), {
      batch: async (statements: D1PreparedStatement[]) => {
        await env.DB.prepare("DELETE FROM webhooks WHERE id = ?").bind(webhook.id).run();
        return env.DB.batch(statements);
      },
    });
    const sent = await sendTestEvent(createDeps({ ...env, DB: db }), 1, webhook.id);
    expect(sent).toEqual({ ok: false, status: 404, message: `webhook ${webhook.id} does not exist` });
    expect(calls).toHaveLength(0);
    const entries = await env.DB.prepare(
      "SELECT count(*) AS n FROM webhook_deliveries WHERE event = 'webhook:test' AND json_extract(payload, '$.webhook_id') = ?",
    )
      .bind(webhook.id)
      .first<{ n: number }>();
    expect(entries!.n).toBe(0);
  });
});

describe("GET /companies/{company_id}/webhooks/history/{history_id}", () => {
  it("lists every attempt oldest first", async () => {
    const webhook = await newWebhook();
    const deliveryId = await newDelivery(webhook.id);
    const answers = [500, 302, 200];
    receiver(() => new Response(null, { status: answers.shift()! }));
    for (let attempt = 1; attempt <= 3; attempt++) await deliver(deliveryId, attempt);

    const entry = await detail(deliveryId);
    expect(entry).toMatchObject({ id: deliveryId, status: "success", result: "200" });
    expect(entry.attempts.map((a) => a.result)).toEqual(["500", "302", "200"]);
    const times = entry.attempts.map((a) => Date.parse(a.at));
    expect(times).toEqual([...times].sort((a, b) => a - b));
    for (const attempt of entry.attempts) expect(Number.isInteger(attempt.duration_ms)).toBe(true);
  });

  it("an entry never attempted has no attempts; another company's or an unknown one is 404", async () => {
    const webhook = await newWebhook();
    const deliveryId = await newDelivery(webhook.id);
    expect((await detail(deliveryId)).attempts).toEqual([]);
    await expectError(await as("carol").get(`/companies/2/webhooks/history/${deliveryId}`), 404, "Not Found");
    await expectError(await as("alice").get("/companies/1/webhooks/history/no-such-entry"), 404, "Not Found");
    await expectError(await as("bob").get(`/companies/1/webhooks/history/${deliveryId}`), 403, "Forbidden");
  });
});

describe("POST /companies/{company_id}/webhooks/history/{history_id}/resend", () => {
  it("delivers the same webhook-id and body again (202), which verifies", async () => {
    const webhook = await newWebhook();
    const deliveryId = await newDelivery(webhook.id);
    const calls = receiver(() => new Response(null, { status: 200 }));
    await deliver(deliveryId);
    expect(calls).toHaveLength(1);

    const response = await as("alice").send("POST", `/companies/1/webhooks/history/${deliveryId}/resend`);
    expect(response.status).toBe(202);
    expect(await response.json()).toEqual({ history_id: deliveryId });

    // The consumer takes the resent message (with whatever else this file left pending).
    const mine = () => calls.filter((call) => call.headers.get("webhook-id") === deliveryId);
    await until(() => mine().length >= 2);
    expect(mine()).toHaveLength(2);
    const [first, again] = mine();
    expect(again!.headers.get("webhook-id")).toBe(deliveryId);
    expect(again!.body).toBe(first!.body);
    expect(() => new Verifier(webhook.secret).verify(again!.body, webhookHeaders(again!))).not.toThrow();
    await until(async () => (await detail(deliveryId)).attempts.length === 2);
    expect((await detail(deliveryId)).attempts.map((a) => a.result)).toEqual(["200", "200"]);
  });

  it("a failed delivery starts a new schedule", async () => {
    const webhook = await newWebhook();
    const deliveryId = await newDelivery(webhook.id, { status: "failed", result: "503", attempts: 8 });
    const calls = receiver(() => new Response(null, { status: 204 }));
    expect((await as("alice").send("POST", `/companies/1/webhooks/history/${deliveryId}/resend`)).status).toBe(202);
    await until(async () => (await deliveryRow(deliveryId))!.status === "success");
    expect(await deliveryRow(deliveryId)).toMatchObject({ status: "success", result: "204", attempts: 1 });
    expect(calls).toHaveLength(1);
  });

  it("404 for another company's or an unknown entry; 409 when its webhook is gone or inactive", async () => {
    const webhook = await newWebhook();
    const deliveryId = await newDelivery(webhook.id, { status: "success", result: "200", attempts: 1 });
    await expectError(
      await as("carol").send("POST", `/companies/2/webhooks/history/${deliveryId}/resend`),
      404,
      "Not Found",
    );
    await expectError(await as("alice").send("POST", "/companies/1/webhooks/history/nope/resend"), 404, "Not Found");
    await expectError(
      await as("bob").send("POST", `/companies/1/webhooks/history/${deliveryId}/resend`),
      403,
      "Forbidden",
    );

    await as("alice").send("PATCH", `/companies/1/webhooks/${webhook.id}`, { active: false });
    expect(
      await expectError(
        await as("alice").send("POST", `/companies/1/webhooks/history/${deliveryId}/resend`),
        409,
        "Conflict",
      ),
    ).toContain("inactive");
    await as("alice").send("DELETE", `/companies/1/webhooks/${webhook.id}`);
    expect(
      await expectError(
        await as("alice").send("POST", `/companies/1/webhooks/history/${deliveryId}/resend`),
        409,
        "Conflict",
      ),
    ).toContain("deleted");
    expect(await deliveryRow(deliveryId)).toMatchObject({ status: "success", attempts: 1 });
  });
});

describe("POST /companies/{company_id}/webhooks/{id}/rotate-secret", () => {
  it("answers a new secret; for 24 h deliveries verify with the new secret alone and with the old alone", async () => {
    const webhook = await newWebhook();
    const response = await as("alice").send("POST", `/companies/1/webhooks/${webhook.id}/rotate-secret`);
    expect(response.status).toBe(200);
    const rotated = await answer(response, 200, rotateSecret);
    expect(rotated.secret).toMatch(/^whsec_/);
    expect(rotated.secret).not.toBe(webhook.secret);
    expect(rotated).toMatchObject({ id: webhook.id, endpoint: webhook.endpoint, active: true });
    expect(await answer(await as("alice").get(`/companies/1/webhooks/${webhook.id}`), 200, getWebhook)).toEqual(
      rotated,
    );

    const calls = receiver(() => new Response(null, { status: 200 }));
    await deliver(await newDelivery(webhook.id));
    const [sent] = calls;
    const signatures = sent!.headers.get("webhook-signature")!.split(" ");
    expect(signatures).toHaveLength(2);
    const headers = webhookHeaders(sent!);
    expect(() => new Verifier(rotated.secret).verify(sent!.body, headers)).not.toThrow();
    expect(() => new Verifier(webhook.secret).verify(sent!.body, headers)).not.toThrow();
    // New first, then old.
    expect(() =>
      new Verifier(rotated.secret).verify(sent!.body, { ...headers, "webhook-signature": signatures[0]! }),
    ).not.toThrow();
    expect(() =>
      new Verifier(webhook.secret).verify(sent!.body, { ...headers, "webhook-signature": signatures[1]! }),
    ).not.toThrow();
    // A third party's secret does not verify.
    const stranger = await newWebhook();
    expect(() => new Verifier(stranger.secret).verify(sent!.body, headers)).toThrow();
  });

  it("after 24 h only the new secret signs", async () => {
    const webhook = await newWebhook();
    const rotated = await answer(
      await as("alice").send("POST", `/companies/1/webhooks/${webhook.id}/rotate-secret`),
      200,
      rotateSecret,
    );
    const calls = receiver(() => new Response(null, { status: 200 }));
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + 24 * 3600 * 1000 + 60_000 });
    await deliver(await newDelivery(webhook.id));
    const [sent] = calls;
    expect(sent!.headers.get("webhook-signature")!.split(" ")).toHaveLength(1);
    expect(() => new Verifier(rotated.secret).verify(sent!.body, webhookHeaders(sent!))).not.toThrow();
    expect(() => new Verifier(webhook.secret).verify(sent!.body, webhookHeaders(sent!))).toThrow();
  });

  it("404 for another tenant's webhook, 403 without `write webhooks`", async () => {
    const theirs = await answer(
      await as("carol").send("POST", "/companies/2/webhooks", {
        endpoint: "https://127.0.0.1:9/r",
        event: "scan:found",
      }),
      201,
      createWebhook,
    );
    await expectError(
      await as("alice").send("POST", `/companies/1/webhooks/${theirs.id}/rotate-secret`),
      404,
      "Not Found",
    );
    expect((await answer(await as("carol").get(`/companies/2/webhooks/${theirs.id}`), 200, getWebhook)).secret).toBe(
      theirs.secret,
    );
    const mine = await newWebhook();
    await expectError(await as("bob").send("POST", `/companies/1/webhooks/${mine.id}/rotate-secret`), 403, "Forbidden");
  });
});

describe("limits", () => {
  it("the history's type list repeated 120 times is read (no 500)", async () => {
    const names = Array(120).fill("scan:found");
    const comma = await as("alice").get(`/companies/1/webhooks/history?type=${names.join(",")}`);
    expect(comma.status).toBe(200);
    const repeated = await as("alice").get(
      `/companies/1/webhooks/history?${names.map((name) => `type=${name}`).join("&")}`,
    );
    expect(repeated.status).toBe(200);
    const mixed = await as("alice").get(
      `/companies/1/webhooks/history?type=${[...names, "scan:started", "webhook:test"].join(",")}&per_page=1`,
    );
    expect(mixed.status).toBe(200);
  });

  it("a company has at most 50 webhooks, even when created concurrently", async () => {
    // Globex (company 2) is used by this file only for a few webhooks.
    const { n } = (await env.DB.prepare("SELECT count(*) AS n FROM webhooks WHERE company_id = 2").first<{
      n: number;
    }>())!;
    const fill = Array.from({ length: 47 - n }, (_, i) =>
      env.DB.prepare(
        "INSERT INTO webhooks (company_id, endpoint, event, active, secret, created_at, updated_at) VALUES (2, ?, 'scan:found', 1, 'whsec_AAAA', 0, 0)",
      ).bind(`https://127.0.0.1:9/fill/${i}`),
    );
    if (fill.length > 0) await env.DB.batch(fill);

    const body = { endpoint: "https://127.0.0.1:9/limit", event: "scan:found" };
    const answers = await Promise.all(
      Array.from({ length: 6 }, () => as("carol").send("POST", "/companies/2/webhooks", body)),
    );
    expect(answers.map((r) => r.status).sort()).toEqual([201, 201, 201, 400, 400, 400]);
    const refused = answers.find((r) => r.status === 400)!;
    expect(await expectError(refused, 400, "Bad Request")).toContain("at most 50 webhooks");
    const { total } = (await env.DB.prepare("SELECT count(*) AS total FROM webhooks WHERE company_id = 2").first<{
      total: number;
    }>())!;
    expect(total).toBe(50);

    // Deleting one makes room for one.
    const list = await answer(await as("carol").get("/companies/2/webhooks"), 200, listWebhooks);
    expect((await as("carol").send("DELETE", `/companies/2/webhooks/${list[0]!.id}`)).status).toBe(204);
    expect((await as("carol").send("POST", "/companies/2/webhooks", body)).status).toBe(201);
    await expectError(await as("carol").send("POST", "/companies/2/webhooks", body), 400, "Bad Request");
  });
});
