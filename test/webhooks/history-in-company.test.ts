import { env } from "cloudflare:workers";
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import type { BackgroundMessage } from "../../src/domain/queue-messages";
import { startCompanyMoves } from "../../src/routes/admin/moves.routes";
import { getHistoryEntry, listHistory, testWebhook } from "../../src/routes/webhooks/webhooks.routes";
import { createDeps } from "../../src/services/create-deps";
import { handOverFinished } from "../../src/services/webhook-delivery/archive";
import { finishStatement } from "../../src/services/webhook-delivery/records";
import { resendDelivery } from "../../src/services/webhook-delivery/resend";
import { pruneExpired } from "../../src/services/retention";
import { answer, as, call, drainBackground, insertToken } from "../helpers";
import { meanwhileInCompanyObjects } from "../support/company-scans";
import { deliver, deliveryRow, newDelivery, newWebhook, receiver } from "../webhook-receiver";

/*
 * A company's finished webhook deliveries live in its own object (src/objects/company/,
 * src/services/webhook-delivery/archive.ts): D1 keeps a delivery only while it is on its way.
 */

const ADMIN = "pk_test_history_move_admin";
const admin = (method: string, path: string) => call(path, { method, token: ADMIN });
const company = (id: number) => env.COMPANY.get(env.COMPANY.idFromName(`company:${id}`));
const inD1 = async (id: string) =>
  (await env.DB.prepare("SELECT count(*) AS n FROM webhook_deliveries WHERE id = ?").bind(id).first<{ n: number }>())!
    .n;

const history = async (query = "per_page=100") => {
  const response = await as("alice").get(`/companies/1/webhooks/history?${query}`);
  return { total: Number(response.headers.get("X-Total-Count")), items: await answer(response, 200, listHistory) };
};
const entry = async (id: string) => {
  const response = await as("alice").get(`/companies/1/webhooks/history/${id}`);
  return answer(response, 200, getHistoryEntry);
};

beforeAll(async () => {
  await insertToken(ADMIN, { serviceName: "operator", scopes: ["platform:admin"] });
});
afterEach(() => vi.restoreAllMocks());

/** The `COMPANY` binding with Acme's object refusing every hand-over (the other companies' answer). */
function acmeObjectDown(): Env["COMPANY"] {
  const real = env.COMPANY;
  const acme = real.idFromName("company:1");
  return {
    idFromName: real.idFromName.bind(real),
    get: (id: DurableObjectId) =>
      id.equals(acme) ? { keepFinished: () => Promise.reject(new Error("object unavailable")) } : real.get(id),
  } as unknown as Env["COMPANY"];
}

/** A finished delivery as the hand-over gives it, finished `daysAgo` days ago. */
function finished(id: string, status: "success" | "failed", daysAgo: number) {
  const at = new Date(Date.now() - daysAgo * 24 * 3600 * 1000);
  const result = status === "success" ? "200" : "500";
  return {
    id,
    seq: 1,
    webhookId: null,
    event: "scan:found",
    payload: "{}",
    status,
    result,
    attempts: 1,
    deliveredAt: null,
    createdAt: at,
    finishedAt: at,
    attemptRows: [{ at, result, durationMs: 5 }],
  };
}

describe("finished deliveries leave D1 for the company's object", () => {
  it("a delivery that succeeded is listed, with its attempt, from the object and no longer in D1", async () => {
    const webhook = await newWebhook();
    const id = await newDelivery(webhook.id);
    receiver(() => new Response("ok", { status: 200 }));
    await deliver(id);
    expect(await inD1(id)).toBe(0);
    expect(await deliveryRow(id)).toMatchObject({ status: "success", attempts: 1 });
    const { items } = await history();
    expect(items.filter((item) => item.id === id)).toEqual([expect.objectContaining({ id, status: "success" })]);
    expect((await entry(id)).attempts.map((attempt) => attempt.result)).toEqual(["200"]);
    // Another company's object does not hold it.
    expect(await company(2).entry(id)).toBeNull();
  });

  it("a hand-over that fails keeps the row in D1, listed once, until the minute sweep hands it over", async () => {
    const webhook = await newWebhook();
    const id = await newDelivery(webhook.id);
    receiver(() => new Response("ok", { status: 200 }));
    const broken = {
      get: () => ({ keepFinished: () => Promise.reject(new Error("object unavailable")) }),
      idFromName: env.COMPANY.idFromName.bind(env.COMPANY),
    } as unknown as Env["COMPANY"];
    const { consume } = await import("../webhook-receiver");
    await consume("webhook-deliveries", { kind: "deliver", deliveryId: id }, 1, { COMPANY: broken });
    expect(await inD1(id)).toBe(1);
    const before = await history();
    expect(before.items.filter((item) => item.id === id)).toHaveLength(1);
    await drainBackground({ kind: "hand-over-history" });
    expect(await inD1(id)).toBe(0);
    const after = await history();
    expect(after.items.filter((item) => item.id === id)).toEqual([expect.objectContaining({ status: "success" })]);
    expect(after.total).toBe(before.total);
  });

  it("rows a company's object keeps refusing go to the back and stop the chain, not other companies' hand-over", async () => {
    const acmeDown = acmeObjectDown();
    const old = Date.UTC(2000, 0, 1);
    const insert = (id: string, companyId: number, at: number) =>
      env.DB.prepare(
        "INSERT INTO webhook_deliveries (id, company_id, event, payload, status, result, created_at, updated_at) VALUES (?1, ?2, 'scan:found', '{}', 'success', '200', ?3, ?3)",
      )
        .bind(id, companyId, at)
        .run();
    for (let i = 0; i < 150; i++) await insert(`stuck-acme-${i}`, 1, old + i);
    for (let i = 0; i < 50; i++) await insert(`other-${i}`, 2, old + 86_400_000 + i);
    const sent = vi.spyOn(env.BACKGROUND_QUEUE, "send").mockResolvedValue(undefined as never);
    const { consume } = await import("../webhook-receiver");
    // The oldest 100 are Acme's, all refused: nothing handed, no continuation, and they go to the back.
    await consume("background", { kind: "hand-over-history" }, 1, { COMPANY: acmeDown });
    expect(sent).not.toHaveBeenCalled();
    expect(await inD1("stuck-acme-0")).toBe(1);
    // The next run reaches the other company's rows behind them.
    await consume("background", { kind: "hand-over-history" }, 1, { COMPANY: acmeDown });
    expect(await inD1("other-0")).toBe(0);
    expect(await inD1("other-49")).toBe(0);
    expect(await company(2).entry("other-0")).not.toBeNull();
    // Once Acme's object answers, its rows are handed over too.
    vi.restoreAllMocks();
    await drainBackground({ kind: "hand-over-history" });
    expect(await inD1("stuck-acme-0")).toBe(0);
    expect(await inD1("stuck-acme-149")).toBe(0);
  });

  it("100 failed deliveries a company's object keeps refusing do not hold up another company's successes", async () => {
    const acmeDown = acmeObjectDown();
    const old = Date.UTC(2001, 0, 1);
    const insert = (id: string, companyId: number, status: string, at: number) =>
      env.DB.prepare(
        "INSERT INTO webhook_deliveries (id, company_id, event, payload, status, result, created_at, updated_at) VALUES (?1, ?2, 'scan:found', '{}', ?3, '500', ?4, ?4)",
      )
        .bind(id, companyId, status, at)
        .run();
    // The failures finished a day after the successes: only the order by status put them first.
    for (let i = 0; i < 100; i++) await insert(`stuck-failed-acme-${i}`, 1, "failed", old + 86_400_000 + i);
    for (let i = 0; i < 5; i++) await insert(`other-success-${i}`, 2, "success", old + i);
    vi.spyOn(env.BACKGROUND_QUEUE, "send").mockResolvedValue(undefined as never);
    const { consume } = await import("../webhook-receiver");
    for (let run = 0; run < 3; run++)
      await consume("background", { kind: "hand-over-history" }, 1, { COMPANY: acmeDown });
    expect(await inD1("other-success-0")).toBe(0);
    expect(await company(2).entry("other-success-0")).not.toBeNull();
    vi.restoreAllMocks();
    await drainBackground({ kind: "hand-over-history" });
    expect(await inD1("stuck-failed-acme-0")).toBe(0);
  });

  it("a row its object refused once is taken before the rows that finished after that refusal", async () => {
    const deps = createDeps(env);
    const old = Date.UTC(2002, 0, 1);
    await env.DB.prepare(
      "INSERT INTO webhook_deliveries (id, company_id, event, payload, status, result, created_at, updated_at) VALUES ('refused-once', 1, 'scan:found', '{}', 'success', '200', ?1, ?1)",
    )
      .bind(old)
      .run();
    await handOverFinished(createDeps({ ...env, COMPANY: acmeObjectDown() }), { ids: ["refused-once"] });
    expect(await inD1("refused-once")).toBe(1);
    // A steady backlog: 100 of another company's deliveries finish after the refusal.
    for (let i = 0; i < 100; i++) {
      await env.DB.prepare(
        "INSERT INTO webhook_deliveries (id, company_id, event, payload, status, created_at, updated_at) VALUES (?1, 2, 'scan:found', '{}', 'dispatched', ?2, ?2)",
      )
        .bind(`later-${i}`, old)
        .run();
      await finishStatement(deps.db, `later-${i}`, { status: "success", result: "200" });
    }
    // One chunk of 100: the refused row waited behind what finished before its refusal, not behind these.
    await handOverFinished(deps, { limit: 100 });
    expect(await inD1("refused-once")).toBe(0);
    expect(await company(1).entry("refused-once")).not.toBeNull();
    await handOverFinished(deps, { limit: 100 });
  });

  it("a failed delivery its object keeps refusing still leaves D1 30 days after it finished, not after its last try", async () => {
    const acmeDown = acmeObjectDown();
    const finished = Date.now() - 40 * 86_400_000;
    await env.DB.prepare(
      "INSERT INTO webhook_deliveries (id, company_id, event, payload, status, result, created_at, updated_at) VALUES ('failed-40-days', 1, 'scan:found', '{}', 'failed', '500', ?1, ?1)",
    )
      .bind(finished)
      .run();
    vi.spyOn(env.BACKGROUND_QUEUE, "send").mockResolvedValue(undefined as never);
    const { consume } = await import("../webhook-receiver");
    await consume("background", { kind: "hand-over-history" }, 1, { COMPANY: acmeDown });
    expect(await inD1("failed-40-days")).toBe(1); // refused: kept
    await pruneExpired(createDeps(env), new Date());
    expect(await inD1("failed-40-days")).toBe(0);
  });

  it("a resend brings a kept entry back on its way, listed once, and its attempts add up", async () => {
    const webhook = await newWebhook();
    const id = await newDelivery(webhook.id);
    receiver(() => new Response(null, { status: 410 }));
    await deliver(id);
    expect(await deliveryRow(id)).toMatchObject({ status: "failed" });
    expect(await inD1(id)).toBe(0);
    // 410 deactivated the webhook: switch it on again, then resend.
    expect((await as("alice").send("PATCH", `/companies/1/webhooks/${webhook.id}`, { active: true })).status).toBe(200);
    const before = await history();
    expect((await as("alice").send("POST", `/companies/1/webhooks/history/${id}/resend`)).status).toBe(202);
    const during = await history();
    expect(during.items.filter((item) => item.id === id)).toEqual([expect.objectContaining({ status: "pending" })]);
    expect(during.total).toBe(before.total);
    vi.restoreAllMocks();
    receiver(() => new Response("ok", { status: 200 }));
    await deliver(id);
    expect(await inD1(id)).toBe(0);
    const done = await entry(id);
    expect(done.status).toBe("success");
    expect(done.attempts.map((attempt) => attempt.result)).toEqual(["410", "200"]);
    expect((await history()).items.filter((item) => item.id === id)).toHaveLength(1);
  });

  it("a resend that reads the entry in D1 while it is handed over to the object still sends it again", async () => {
    const webhook = await newWebhook();
    const id = await newDelivery(webhook.id);
    receiver(() => new Response(null, { status: 500 }));
    // It fails for good (its last attempt), and its hand-over waits for the sweep: D1 still holds it.
    const broken = {
      get: () => ({ keepFinished: () => Promise.reject(new Error("object unavailable")) }),
      idFromName: env.COMPANY.idFromName.bind(env.COMPANY),
    } as unknown as Env["COMPANY"];
    const { consume } = await import("../webhook-receiver");
    await env.DB.prepare("UPDATE webhook_deliveries SET attempts = 7 WHERE id = ?").bind(id).run();
    await consume("webhook-deliveries", { kind: "deliver", deliveryId: id }, 1, { COMPANY: broken });
    vi.restoreAllMocks();
    expect(await inD1(id)).toBe(1);
    // The sweep hands it over between the resend's read and its update.
    const real = createDeps(env);
    const raced = meanwhileInCompanyObjects(real, "entry", async (readEntry) => {
      const answer = await readEntry();
      // Right after the resend read both stores (D1 answers in order), the hand-over runs.
      await env.DB.prepare("SELECT 1").first();
      await handOverFinished(real, { ids: [id] });
      return answer;
    });
    expect(await resendDelivery(raced, 1, id)).toEqual({ ok: true });
    expect(
      await env.DB.prepare("SELECT status, attempts FROM webhook_deliveries WHERE id = ?").bind(id).first(),
    ).toEqual({
      status: "pending",
      attempts: 0,
    });
  });

  it("a resend landing between the object's keep and D1's delete: the entry is listed once, its attempts once", async () => {
    const webhook = await newWebhook();
    const id = await newDelivery(webhook.id);
    await env.DB.prepare("UPDATE webhook_deliveries SET attempts = 7 WHERE id = ?").bind(id).run();
    receiver(() => new Response(null, { status: 500 }));
    await deliver(id, 1, { COMPANY: acmeObjectDown() }); // the 8th attempt fails; its hand-over does not happen
    vi.restoreAllMocks();
    // The sweep's hand-over: the object keeps it, and right then the company resends it.
    const real = createDeps(env);
    const raced = meanwhileInCompanyObjects(real, "keepFinished", async (keep) => {
      const kept = await keep();
      expect(await resendDelivery(real, 1, id)).toEqual({ ok: true });
      return kept;
    });
    await handOverFinished(raced, { ids: [id] });
    const shown = await entry(id);
    expect({ status: shown.status, attempts: shown.attempts.map((attempt) => attempt.result) }).toEqual({
      status: "pending",
      attempts: ["500"],
    });
    // The object's copy no longer answers in the list: D1's row does (deep pages do not merge duplicates).
    expect((await company(1).history({}, 0, 1000)).rows.filter((row) => row.id === id)).toEqual([]);
  });

  it("two hand-overs of one finished row (the consumer's and the minute sweep's): the entry stays listed", async () => {
    const webhook = await newWebhook();
    const id = await newDelivery(webhook.id, { status: "success", result: "200", attempts: 1 });
    const real = createDeps(env);
    // The consumer's hand-over reads the row; while its object call runs, the sweep's takes it and deletes it.
    const raced = meanwhileInCompanyObjects(real, "keepFinished", async (keep) => {
      const kept = await keep();
      await handOverFinished(real, { limit: 100 });
      return kept;
    });
    await handOverFinished(raced, { ids: [id] });
    expect(await inD1(id)).toBe(0);
    expect((await company(1).history({}, 0, 1000)).rows.filter((row) => row.id === id)).toHaveLength(1);
  });

  it("a delivery with more attempts than one statement can bind (resent while it was retried) is handed over whole", async () => {
    const webhook = await newWebhook();
    const id = await newDelivery(webhook.id, { status: "dispatched", result: "503", attempts: 7 });
    // 30 attempts of earlier schedules (each resend while it was retried starts a new one; an older
    // deployment kept them all in D1): the object binds four values an attempt, at most 100 a statement.
    await env.DB.batch(
      Array.from({ length: 30 }, (_, i) =>
        env.DB.prepare(
          "INSERT INTO webhook_attempts (delivery_id, at, result, duration_ms) VALUES (?, ?, '503', ?)",
        ).bind(id, Date.now() - 3_600_000 + i * 1000, i),
      ),
    );
    receiver(() => new Response("ok", { status: 200 }));
    await deliver(id);
    expect(await inD1(id)).toBe(0);
    const kept = await entry(id);
    expect(kept.status).toBe("success");
    expect(kept.attempts).toHaveLength(31);
  });

  it("a test send is kept by the object too", async () => {
    const webhook = await newWebhook();
    receiver(() => new Response("ok", { status: 200 }));
    const response = await as("alice").send("POST", `/companies/1/webhooks/${webhook.id}/test`);
    const { history_id } = await answer(response, 200, testWebhook);
    expect(await inD1(history_id)).toBe(0);
    expect((await entry(history_id)).status).toBe("success");
  });

  it("the object's alarm prunes a success after 3 days and a failure after 30", async () => {
    const stub = company(3);
    await stub.keepFinished([
      finished("old-success", "success", 4),
      finished("new-success", "success", 2),
      finished("old-failure", "failed", 31),
      finished("new-failure", "failed", 20),
    ]);
    await runInDurableObject(stub, (_, state) => state.storage.setAlarm(Date.now()));
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    const kept = await stub.history({}, 0, 10);
    expect(kept.rows.map((row) => row.id).sort()).toEqual(["new-failure", "new-success"]);
    expect(kept.total).toBe(2);
    expect(await stub.entry("old-success")).toBeNull();
  });

  it("a resent entry's copy whose D1 row never came back goes 35 days after its retention; one on its way stays", async () => {
    const stub = company(4);
    await stub.keepFinished([finished("orphaned-copy", "failed", 66), finished("resent-lately", "failed", 29)]);
    expect(await stub.markResent("orphaned-copy")).toBe(true);
    expect(await stub.markResent("resent-lately")).toBe(true);
    await runInDurableObject(stub, (_, state) => state.storage.setAlarm(Date.now()));
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(await stub.entry("orphaned-copy")).toBeNull();
    expect(await stub.entry("resent-lately")).not.toBeNull();
    // The alarm comes back for the copy still kept.
    expect(await runInDurableObject(stub, (_, state) => state.storage.getAlarm())).not.toBeNull();
  });
});

describe("a page deeper than the merge of the newest rows", () => {
  it("starts each store where the merged order puts it: pages 11 to 13 of 1,100 kept and 60 on their way", async () => {
    const base = Date.UTC(2001, 0, 1);
    // Kept: an entry every 2 ms; on their way in D1: one every 74 ms, half of them among the kept ones.
    const keptEntries = Array.from({ length: 1_100 }, (_, k) => ({
      id: `deep-kept-${k}`,
      seq: k,
      webhookId: null,
      event: "scan:found",
      payload: "{}",
      status: "success" as const,
      result: "200",
      attempts: 1,
      deliveredAt: null,
      createdAt: new Date(base + 2 * k),
      finishedAt: new Date(),
      attemptRows: [],
    }));
    for (let i = 0; i < keptEntries.length; i += 250) await company(1).keepFinished(keptEntries.slice(i, i + 250));
    const onTheirWay = Array.from({ length: 60 }, (_, k) => ({ id: `deep-d1-${k}`, at: base + 74 * k + 1 }));
    for (const row of onTheirWay)
      await env.DB.prepare(
        "INSERT INTO webhook_deliveries (id, company_id, event, payload, status, created_at, updated_at) VALUES (?1, 1, 'scan:found', '{}', 'pending', ?2, ?2)",
      )
        .bind(row.id, row.at)
        .run();
    const expected = [...keptEntries.map((entry) => ({ id: entry.id, at: entry.createdAt.getTime() })), ...onTheirWay]
      .sort((a, b) => b.at - a.at)
      .map((row) => row.id);
    const range = `start_date=${new Date(base).toISOString()}&end_date=${new Date(base + 86_400_000).toISOString()}`;
    for (const page of [1, 10, 11, 12, 13]) {
      const { total, items } = await history(`per_page=100&page=${page}&${range}`);
      expect(total).toBe(1_160);
      expect(items.map((item) => item.id)).toEqual(expected.slice((page - 1) * 100, page * 100));
    }
  });
});

describe("the operator's move of company data", () => {
  it("hands over what an older deployment left in D1, resumably, and a second run moves nothing", async () => {
    const webhook = await newWebhook();
    // 250 finished deliveries as an older deployment left them: three chunks of 100.
    const ids = await Promise.all(
      Array.from({ length: 250 }, (_, i) =>
        newDelivery(webhook.id, { status: i % 5 ? "success" : "failed", result: "200", attempts: 1 }),
      ),
    );
    const before = await history("per_page=100");
    let response = await admin("POST", "/internal/company-data/move");
    expect((await answer(response, 202, startCompanyMoves)).finished_in_d1).toBeGreaterThanOrEqual(250);
    expect(await drainBackground({ kind: "hand-over-history" })).toBeGreaterThanOrEqual(3);
    response = await admin("GET", "/internal/company-data/move");
    expect(await response.json()).toMatchObject({ finished_in_d1: 0 });
    for (const id of ids.slice(0, 5)) expect(await inD1(id)).toBe(0);
    // The same history, page by page, in the same order, from the object now.
    const after = await history("per_page=100");
    expect(after.total).toBe(before.total);
    expect(after.items.map((item) => item.id)).toEqual(before.items.map((item) => item.id));
    const page3 = await history("per_page=100&page=3");
    expect(page3.items.length).toBeGreaterThan(0);
    // A second run: nothing to move, nothing sent.
    vi.restoreAllMocks();
    const send = vi.spyOn(env.BACKGROUND_QUEUE, "send");
    response = await admin("POST", "/internal/company-data/move");
    expect(await response.json()).toMatchObject({ finished_in_d1: 0 });
    expect(send.mock.calls.filter(([body]) => (body as BackgroundMessage).kind === "hand-over-history")).toEqual([]);
  });
});
