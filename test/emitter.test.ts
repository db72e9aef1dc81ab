import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { createDb } from "../src/db/client";
import worker from "../src/index";
import { emitEvent, emitForPerson, emitMany } from "../src/services/events";
import { as, DEMO } from "./helpers";

/**
 * The one event emitter (`src/services/events.ts`). Its failures never reach
 * the caller: the domain write it follows has committed, so the request or
 * message must succeed; the lost event is logged instead.
 */

const ACME = DEMO.companies.acme;

let seq = 0;
const fresh = (tag: string) => `${tag}.${Date.now().toString(36)}.${++seq}`;

function employee(local: string) {
  return {
    first_name: "Fox",
    last_name: "Mulder",
    dob: "1961-10-13",
    emails: [{ email: `${local}@acme.example` }],
    addresses: [{ line_1: "1 Main St", city: "San Francisco", region: "CA", postal_code: "94105", country: "US" }],
  };
}

/** Makes every D1 statement matching `sql` fail, on the `env.DB` the Worker uses too. */
function failStatements(sql: RegExp) {
  const prepare = env.DB.prepare.bind(env.DB);
  return vi.spyOn(env.DB, "prepare").mockImplementation((query: string) => {
    if (sql.test(query)) throw new Error("D1_ERROR: simulated failure");
    return prepare(query);
  });
}

async function deliveriesOf(event: string, field: string, value: string | number) {
  const { results } = await env.DB.prepare(
    "SELECT company_id, webhook_id, event FROM webhook_deliveries WHERE event = ?1 AND json_extract(payload, ?2) = ?3",
  )
    .bind(event, `$.${field}`, value)
    .all<{ company_id: number; webhook_id: number; event: string }>();
  return results;
}

/** The JSON error lines logged while `work` ran. */
async function errorsDuring(work: () => Promise<void>) {
  const errors = vi.spyOn(console, "error");
  await work();
  return errors.mock.calls.map(([line]) => JSON.parse(String(line)) as Record<string, unknown>);
}

let webhookIds: Record<string, number> = {};

beforeAll(async () => {
  await env.DB.prepare("UPDATE company_seats SET quantity = 1000 WHERE company_id = 1 AND license_id = 'scan'").run();
  // Acme and Globex listen to these events; the endpoint is never reached in these tests' time.
  const now = Date.now();
  for (const [company, event] of [
    [ACME, "person:created"],
    [ACME, "person:updated"],
    [ACME, "scan:started"],
    [DEMO.companies.globex, "scan:started"],
  ] as const) {
    const row = await env.DB.prepare(
      `INSERT INTO webhooks (company_id, endpoint, event, active, secret, created_at, updated_at)
       VALUES (?1, 'https://127.0.0.1:9/hook', ?2, 1, 'whsec_dGVzdHRlc3R0ZXN0dGVzdHRlc3R0ZXN0', ?3, ?3) RETURNING id`,
    )
      .bind(company, event, now)
      .first<{ id: number }>();
    webhookIds[`${company}:${event}`] = row!.id;
  }
});

afterEach(() => {
  vi.restoreAllMocks();
});

describe("emitting after a committed write", () => {
  it("writes one delivery row per subscribed webhook (control: the failures below are the emitter's)", async () => {
    const response = await as("alice").send("POST", `/companies/${ACME}/employees`, employee(fresh("control")));
    expect(response.status).toBe(200);
    const person = await response.json<{ id: number }>();
    expect(await deliveriesOf("person:created", "id", person.id)).toEqual([
      { company_id: ACME, webhook_id: webhookIds[`${ACME}:person:created`], event: "person:created" },
    ]);
  });

  it("POST /employees answers 200 when the delivery rows cannot be written; the lost event is logged", async () => {
    const local = fresh("outbox");
    let status = 0;
    let person: { id: number } | undefined;
    const logged = await errorsDuring(async () => {
      failStatements(/insert into "webhook_deliveries"/);
      const response = await as("alice").send("POST", `/companies/${ACME}/employees`, employee(local));
      status = response.status;
      person = await response.json<{ id: number }>();
      vi.mocked(env.DB.prepare).mockRestore();
    });
    expect(status).toBe(200);
    // The employee exists: a retry of the POST would be a conflict, not a second employee.
    const read = await as("alice").get(`/companies/${ACME}/employees/${person!.id}`);
    expect(read.status).toBe(200);
    expect(await deliveriesOf("person:created", "id", person!.id)).toEqual([]);
    expect(logged).toContainEqual(
      expect.objectContaining({
        level: "error",
        events: ["person:created"],
        companies: [ACME],
        error: expect.stringContaining("simulated failure"),
        note: expect.stringContaining("lost"),
      }),
    );
  });

  it("PUT /employees/{id} answers 200 when the webhook lookup fails", async () => {
    const created = await as("alice").send("POST", `/companies/${ACME}/employees`, employee(fresh("lookup")));
    const person = await created.json<{ id: number }>();
    let status = 0;
    const logged = await errorsDuring(async () => {
      failStatements(/from "webhooks"/);
      const response = await as("alice").send("PUT", `/companies/${ACME}/employees/${person.id}`, {
        first_name: "Walter",
      });
      status = response.status;
      vi.mocked(env.DB.prepare).mockRestore();
    });
    expect(status).toBe(200);
    expect(logged).toContainEqual(
      expect.objectContaining({ level: "error", events: ["person:updated"], companies: [ACME] }),
    );
  });

  it("emitEvent, emitForPerson and emitMany resolve to [] instead of throwing", async () => {
    const db = createDb(env.DB);
    failStatements(/webhook/);
    await expect(emitEvent(db, env.WEBHOOK_QUEUE, ACME, "scan:started", {})).resolves.toEqual([]);
    await expect(emitForPerson(db, env.WEBHOOK_QUEUE, DEMO.people.alice, "scan:started", {})).resolves.toEqual([]);
    await expect(
      emitMany(db, env.WEBHOOK_QUEUE, [{ companyId: ACME, event: "scan:started", payload: {} }]),
    ).resolves.toEqual([]);
  });

  it("the scan-events consumer acknowledges a message whose events could not be recorded", async () => {
    const scanId = `emitter-${crypto.randomUUID()}`;
    const body = [{ type: "started", scan_id: scanId, person_id: DEMO.people.alice, at: "2026-03-01T10:00:00Z" }];
    failStatements(/insert into "webhook_deliveries"/);
    const batch = createMessageBatch("scan-events", [{ id: "m-1", timestamp: new Date(), attempts: 1, body }]);
    const ctx = createExecutionContext();
    await worker.queue!(batch, env, ctx);
    const result = await getQueueResult(batch, ctx);
    expect(result.explicitAcks).toEqual(["m-1"]);
    expect(result.retryMessages).toEqual([]);
    vi.mocked(env.DB.prepare).mockRestore();
    expect(await env.DB.prepare("SELECT status FROM scans WHERE id = ?").bind(scanId).first()).toEqual({
      status: "started",
    });
  });
});

describe("emitMany", () => {
  it("records every item in order, for companies and for people's companies, in one write", async () => {
    const db = createDb(env.DB);
    const marker = crypto.randomUUID();
    // Alice is at Acme; Carol at Globex.
    const ids = await emitMany(db, env.WEBHOOK_QUEUE, [
      { personId: DEMO.people.carol, event: "scan:started", payload: { marker, n: 1 } },
      { companyId: ACME, event: "scan:started", payload: { marker, n: 2 } },
      { personId: DEMO.people.alice, event: "scan:started", payload: { marker, n: 3 } },
      { companyId: ACME, event: "person:removed", payload: { marker, n: 4 } },
    ]);
    const { results } = await env.DB.prepare(
      "SELECT id, company_id, webhook_id, json_extract(payload, '$.n') AS n FROM webhook_deliveries WHERE json_extract(payload, '$.marker') = ? ORDER BY rowid",
    )
      .bind(marker)
      .all<{ id: string; company_id: number; webhook_id: number; n: number }>();
    expect(results.map(({ company_id, webhook_id, n }) => ({ company_id, webhook_id, n }))).toEqual([
      { company_id: DEMO.companies.globex, webhook_id: webhookIds[`${DEMO.companies.globex}:scan:started`], n: 1 },
      { company_id: ACME, webhook_id: webhookIds[`${ACME}:scan:started`], n: 2 },
      { company_id: ACME, webhook_id: webhookIds[`${ACME}:scan:started`], n: 3 },
    ]);
    expect(ids).toEqual(results.map((row) => row.id));
  });
});
