import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import worker from "../../src/index";
import { DELIVERED_EVENTS, deliveryBodySchema } from "../../src/routes/webhooks/webhook-events.schemas";
import { EVENT_NAMES } from "../../src/domain/events";
import { createEmployee } from "../../src/routes/employees/employees.routes";
import { answer, as, call } from "../helpers";
import { fileTokens } from "../principals";
import { receiver, until, type Captured } from "../webhook-receiver";

/**
 * What the code really delivers, event by event, is what
 * webhook-events.schemas.ts (and so docs/webhooks.md) describes: one company
 * subscribed to every event, a person's life driven through the API, the scan
 * intake and the hourly cron, and every body the receiver stub gets checked.
 */

const ENDPOINT = "https://127.0.0.1:9/payloads";
let calls: Captured[];

beforeAll(async () => {
  // Acme's scan side is served from D1 here (a company created before migration 0032), so the hourly
  // removal step of D1 requests the removal; the object's own path raises the same payloads
  // (domain/scan-payloads.ts; test/companies/scans.test.ts checks them there).
  await env.DB.prepare("UPDATE companies SET scans_in_object = 0 WHERE id = 1").run();
  calls = receiver(() => new Response(null, { status: 204 }));
  for (const event of EVENT_NAMES) {
    const response = await as("alice").send("POST", "/companies/1/webhooks", { endpoint: ENDPOINT, event });
    expect(response.status).toBe(201);
  }
});

afterAll(async () => {
  vi.restoreAllMocks();
  await env.DB.prepare("UPDATE companies SET scans_in_object = 1 WHERE id = 1").run();
});

const seen = () => new Set(calls.map((c) => (JSON.parse(c.body) as { type: string }).type));

describe("delivered bodies", () => {
  it("every event's body matches its schema, with no undocumented field", { timeout: 60_000 }, async () => {
    const email = `payload.${crypto.randomUUID().slice(0, 8)}@acme.example`;
    const created = await as("alice").send("POST", "/companies/1/employees", {
      first_name: "Pay",
      last_name: "Load",
      dob: "1990-01-01",
      emails: [{ email }],
      addresses: [{ line_1: "1 Main St", city: "San Francisco", region: "CA", postal_code: "94105", country: "US" }],
      license: null,
    });
    expect(created.ok).toBe(true);
    const { id: person } = await answer(created, 200, createEmployee);
    expect((await as("alice").send("PUT", `/companies/1/employees/${person}`, { middle_name: "L" })).status).toBe(200);

    const scan = `scan-payload-${person}`;
    const at = (minute: number) => `2026-03-01T10:0${minute}:00Z`;
    const intake = await call("/internal/scan-events", {
      method: "POST",
      token: fileTokens.scanner,
      body: [
        { type: "started", scan_id: scan, person_id: person, at: at(0) },
        {
          type: "found",
          scan_id: scan,
          person_id: person,
          site_id: 3,
          url: "https://peoplefinder.example/p/pl",
          data: { city: "SF" },
          at: at(1),
        },
        { type: "not_found", scan_id: scan, person_id: person, site_id: 4, at: at(2) },
        { type: "failed", scan_id: scan, person_id: person, site_id: 5, at: at(3) },
        { type: "completed", scan_id: scan, person_id: person, at: at(4) },
      ],
    });
    expect(intake.status).toBe(202);
    await until(() => ["scan:completed", "exposure:created"].every((e) => seen().has(e)));

    // The hourly removal step requests the removal; the scanner confirms it.
    const ctx = createExecutionContext();
    await worker.scheduled!(createScheduledController({ cron: "0 * * * *", scheduledTime: Date.now() }), env, ctx);
    await waitOnExecutionContext(ctx);
    const exposure = await env.DB.prepare("SELECT id FROM exposures WHERE person_id = ?")
      .bind(person)
      .first<{ id: number }>();
    await until(() => seen().has("request:created"));
    const confirmed = await call("/internal/scan-events", {
      method: "POST",
      token: fileTokens.scanner,
      body: [{ type: "removal_confirmed", exposure_id: exposure!.id, at: at(9) }],
    });
    expect(confirmed.status).toBe(202);
    await until(() => seen().has("request:closed"));

    expect((await as("alice").send("DELETE", `/companies/1/employees/${person}`)).status).toBe(204);
    await until(() => seen().has("person:removed"));

    expect([...seen()].sort()).toEqual([...EVENT_NAMES].sort());
    for (const sent of calls) {
      const body = JSON.parse(sent.body) as { type: (typeof DELIVERED_EVENTS)[number] };
      const parsed = deliveryBodySchema(body.type).safeParse(body);
      expect(parsed.error?.issues ?? [], body.type).toEqual([]);
      expect(parsed.data, body.type).toEqual(body);
    }
  });
});
