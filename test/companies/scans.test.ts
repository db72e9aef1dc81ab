import {
  createExecutionContext,
  createMessageBatch,
  createScheduledController,
  getQueueResult,
  runInDurableObject,
  waitOnExecutionContext,
} from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import worker from "../../src/index";
import { EVENT_NAMES } from "../../src/domain/events";
import { companyOfExposure } from "../../src/domain/company-scans";
import { submitRemovalRequests } from "../../src/services/exposures";
import { createDeps } from "../../src/services/create-deps";
import { listHistory } from "../../src/routes/webhooks/webhooks.routes";
import { answer, as, call, DEMO, expectError } from "../helpers";
import { deliverPending } from "../webhook-receiver";
import { companyObject, insertEmployee } from "../support/company-scans";

/**
 * Scan intake (`POST /internal/scan-events`), the `scan-events` consumer and
 * the exposure life (docs/decisions.md). The local queue really delivers what the
 * endpoint enqueues; tests also hand batches to the consumer directly, as
 * the queue would, to check that a redelivery changes nothing twice.
 */

// The local queue and hundreds of webhook rows make some tests take seconds.
vi.setConfig({ testTimeout: 20_000, hookTimeout: 20_000 });

const SITE_3 = { id: 3, name: "PeopleFinder", slug: "peoplefinder", logo: "", url: "https://peoplefinder.example" };
const SITE_4 = { id: 4, name: "SpyDirectory", slug: "spydirectory", logo: "", url: "https://spydirectory.example" };
const SITE_5 = {
  id: 5,
  name: "WhitePages Archive",
  slug: "whitepages-archive",
  logo: "",
  url: "https://whitepages-archive.example",
};

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

let nextPerson = 900;
/** A fresh employee of `companies` (Acme by default), so each test reads only its own rows. */
const newEmployee = (companies: number[] = [DEMO.companies.acme]) => insertEmployee(nextPerson++, companies);

/** Runs the scan-events consumer on one message, as the queue would deliver it. */
async function consume(body: unknown, attempts = 1, bindings: Env = env) {
  const batch = createMessageBatch("scan-events", [{ id: "scan-msg", timestamp: new Date(), attempts, body }]);
  const ctx = createExecutionContext();
  await worker.queue!(batch, bindings, ctx);
  return getQueueResult(batch, ctx);
}

/**
 * `env.DB` wrapped to count what reaches D1: `calls` are round trips (one per
 * `batch`, one per statement run alone), `statements` every statement run.
 */
function countedD1(d1: D1Database) {
  const count = { calls: 0, statements: 0 };
  const unwrapped = new WeakMap<object, D1PreparedStatement>();
  const wrap = (statement: D1PreparedStatement): D1PreparedStatement => {
    const proxy = new Proxy(statement, {
      get(target, prop) {
        const value = Reflect.get(target, prop, target) as unknown;
        if (typeof value !== "function") return value;
        if (prop === "bind") return (...args: unknown[]) => wrap(value.apply(target, args) as D1PreparedStatement);
        if (prop === "first" || prop === "all" || prop === "run" || prop === "raw") {
          return (...args: unknown[]) => {
            count.calls++;
            count.statements++;
            return value.apply(target, args) as unknown;
          };
        }
        return value.bind(target) as unknown;
      },
    });
    unwrapped.set(proxy, statement);
    return proxy;
  };
  const db = new Proxy(d1, {
    get(target, prop) {
      if (prop === "prepare") return (sql: string) => wrap(target.prepare(sql));
      if (prop === "batch") {
        return (statements: D1PreparedStatement[]) => {
          count.calls++;
          count.statements += statements.length;
          return target.batch(statements.map((statement) => unwrapped.get(statement) ?? statement));
        };
      }
      const value = Reflect.get(target, prop, target) as unknown;
      return typeof value === "function" ? (value.bind(target) as unknown) : value;
    },
  });
  return { db, count };
}

async function fireHourlyCron() {
  const ctx = createExecutionContext();
  await worker.scheduled!(createScheduledController({ cron: "0 * * * *", scheduledTime: Date.now() }), env, ctx);
  await waitOnExecutionContext(ctx);
}

async function waitFor(condition: () => Promise<boolean>, what: string) {
  for (let i = 0; i < 100; i++) {
    if (await condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

const post = (body: unknown, token: string = DEMO.tokens.scanner) =>
  call("/internal/scan-events", { method: "POST", body, token });

type Exposure = {
  id: number;
  person_id: number;
  site_id: number;
  status: string;
  url: string | null;
  data: string;
  requested_at: number | null;
  closed_at: number | null;
};

/**
 * Where a person's scans are kept: the object of Acme (whose scan side is in its object, as every
 * company created since migration 0032), or D1 (a person of no company, or of a company served from
 * D1). Both hold the same tables and columns.
 */
type Store = "acme" | "d1";

/** The rows a query reads from `store` (parameters `?1`, `?2`, …). */
async function rows<T = Record<string, unknown>>(store: Store, query: string, ...params: unknown[]): Promise<T[]> {
  if (store === "d1")
    return (
      await env.DB.prepare(query)
        .bind(...params)
        .all<T>()
    ).results;
  return runInDurableObject(companyObject(DEMO.companies.acme), (_, state) =>
    state.storage.sql.exec(query, ...params).toArray(),
  ) as Promise<T[]>;
}

async function exposuresOf(personId: number, store: Store = "acme") {
  return rows<Exposure>(store, "SELECT * FROM exposures WHERE person_id = ?1 ORDER BY id", personId);
}

async function historyOf(exposureId: number, store: Store = "acme") {
  return rows<{ event: string; site_id: number; created_at: number }>(
    store,
    "SELECT event, site_id, created_at FROM exposure_history WHERE exposure_id = ?1 ORDER BY id",
    exposureId,
  );
}

async function scanRow(scanId: string, store: Store = "acme") {
  return (await rows(store, "SELECT * FROM scans WHERE id = ?1", scanId))[0] ?? null;
}

type Delivery = { event: string; payload: Record<string, unknown> };

/** The events sent about a person, through Acme's webhook history (oldest first). */
async function eventsAbout(personId: number, company = 1, who: "alice" | "carol" = "alice"): Promise<Delivery[]> {
  const response = await as(who).get(`/companies/${company}/webhooks/history?per_page=1000`);
  // Checked by the route's schema, which documents a payload as any JSON value; these are read by their fields.
  const entries = (await answer(response, 200, listHistory)) as Delivery[];
  return entries
    .filter((entry) => entry.payload.person_id === personId || entry.payload.employee_id === personId)
    .reverse()
    .map(({ event, payload }) => ({ event, payload }));
}

/** D1's webhook deliveries about a person (their events recorded, whichever store raised them). */
const DELIVERIES_ABOUT =
  "SELECT id, event FROM webhook_deliveries WHERE json_extract(payload, '$.person_id') = ?1 OR json_extract(payload, '$.employee_id') = ?1 ORDER BY id";

/** Everything the consumer writes about a person, to compare before and after a redelivery. */
async function stateOf(personId: number, store: Store = "acme") {
  return Promise.all([
    ...[
      "SELECT id, status, url, data, requested_at, closed_at, updated_at FROM exposures WHERE person_id = ?1 ORDER BY id",
      "SELECT h.id, h.event FROM exposure_history h JOIN exposures e ON e.id = h.exposure_id WHERE e.person_id = ?1 ORDER BY h.id",
      "SELECT id, status, started_at, completed_at FROM scans WHERE person_id = ?1 ORDER BY id",
      "SELECT id, outcome FROM scan_results WHERE person_id = ?1 ORDER BY id",
    ].map((query) => rows(store, query, personId)),
    rows("d1", "SELECT last_scan_at, updated_at FROM people WHERE id = ?1", personId),
    rows("d1", DELIVERIES_ABOUT, personId),
  ]);
}

const RECEIVER = "https://receiver.scans.test/";

beforeAll(async () => {
  // The local queue delivers the webhooks these tests cause; the receiver is
  // stubbed (no network in tests) and answers 204.
  const realFetch = globalThis.fetch;
  vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) =>
    new Request(input as RequestInfo, init).url.startsWith(RECEIVER)
      ? new Response(null, { status: 204 })
      : realFetch(input as RequestInfo, init),
  );
  // Acme listens to every event; Globex to scan:started.
  for (const event of EVENT_NAMES) {
    const response = await as("alice").send("POST", "/companies/1/webhooks", { endpoint: `${RECEIVER}acme`, event });
    expect(response.status).toBe(201);
  }
  const globex = await as("carol").send("POST", "/companies/2/webhooks", {
    endpoint: `${RECEIVER}globex`,
    event: "scan:started",
  });
  expect(globex.status).toBe(201);
});

afterAll(async () => {
  // Deliver what the file's events left pending while the receiver stub is still there.
  await deliverPending();
  vi.restoreAllMocks();
});

describe("POST /internal/scan-events", () => {
  it("accepts a batch (202), which the queue consumer applies: scan, results, exposure, history, events", async () => {
    const person = await newEmployee();
    const batch = [
      { type: "started", scan_id: `scan-${person}`, person_id: person, at: "2026-03-01T10:00:00Z" },
      {
        type: "found",
        scan_id: `scan-${person}`,
        person_id: person,
        site_id: 3,
        url: "https://peoplefinder.example/p/scan-subject",
        data: { name: "Scan Subject", city: "Springfield" },
        at: "2026-03-01T10:01:00Z",
      },
      { type: "not_found", scan_id: `scan-${person}`, person_id: person, site_id: 4, at: "2026-03-01T10:02:00Z" },
      {
        type: "failed",
        scan_id: `scan-${person}`,
        person_id: String(person),
        site_id: "5",
        at: "2026-03-01T10:03:00Z",
      },
      { type: "completed", scan_id: `scan-${person}`, person_id: person, at: "2026-03-01T11:00:00+01:00" },
    ];

    const response = await post(batch);
    expect(response.status).toBe(202);
    expect(await response.json()).toEqual({ accepted: 5 });

    // The local queue delivers the message to the consumer within about a second.
    // Polled in the stores, not through the API, to keep off Alice's rate-limit budget.
    await waitFor(
      async () =>
        (await scanRow(`scan-${person}`)) !== null &&
        (await stateOf(person))[5]!.some((row) => row.event === "scan:completed"),
      "the consumer",
    );

    // Acme's scan side is in its object: the scan, its results and the exposure are there, not in D1.
    const scan = await scanRow(`scan-${person}`);
    expect(scan).toMatchObject({
      person_id: person,
      status: "completed",
      started_at: Date.parse("2026-03-01T10:00:00Z"),
      completed_at: Date.parse("2026-03-01T10:00:00Z"),
    });
    expect(await scanRow(`scan-${person}`, "d1")).toBeNull();
    const outcomes = await rows(
      "acme",
      "SELECT site_id, outcome FROM scan_results WHERE scan_id = ?1 ORDER BY site_id",
      `scan-${person}`,
    );
    expect(outcomes).toEqual([
      { site_id: 3, outcome: "found" },
      { site_id: 4, outcome: "not_found" },
      { site_id: 5, outcome: "failed" },
    ]);
    const last = await env.DB.prepare("SELECT last_scan_at FROM people WHERE id = ?").bind(person).first();
    expect(last).toEqual({ last_scan_at: Date.parse("2026-03-01T10:00:00Z") });

    const [exposure, ...others] = await exposuresOf(person);
    expect(others).toEqual([]);
    expect(await exposuresOf(person, "d1")).toEqual([]);
    // The object's ids name their company.
    expect(companyOfExposure(exposure!.id)).toBe(DEMO.companies.acme);
    expect(exposure).toMatchObject({
      site_id: 3,
      status: "pending",
      url: "https://peoplefinder.example/p/scan-subject",
      requested_at: null,
      closed_at: null,
    });
    expect(JSON.parse(exposure!.data)).toEqual({ name: "Scan Subject", city: "Springfield" });
    expect(await historyOf(exposure!.id)).toEqual([
      { event: "Found on PeopleFinder", site_id: 3, created_at: Date.parse("2026-03-01T10:01:00Z") },
    ]);

    const events = await eventsAbout(person);
    expect(events.map((e) => e.event)).toEqual([
      "scan:started",
      "scan:found",
      "exposure:created",
      "scan:not_found",
      "scan:failed",
      "scan:completed",
    ]);
    const scanId = `scan-${person}`;
    expect(events[0]!.payload).toEqual({ scan_id: scanId, person_id: person, at: "2026-03-01T10:00:00.000Z" });
    expect(events[1]!.payload).toEqual({
      scan_id: scanId,
      person_id: person,
      site: SITE_3,
      at: "2026-03-01T10:01:00.000Z",
      url: "https://peoplefinder.example/p/scan-subject",
      data: { name: "Scan Subject", city: "Springfield" },
    });
    const created = events[2]!.payload;
    expect(created).toEqual({
      id: exposure!.id,
      employee_id: person,
      status: "pending",
      site: SITE_3,
      url: "https://peoplefinder.example/p/scan-subject",
      data: { name: "Scan Subject", city: "Springfield" },
      created_at: created.created_at,
      updated_at: created.updated_at,
    });
    expect(created.created_at).toMatch(ISO);
    expect(events[3]!.payload).toEqual({
      scan_id: scanId,
      person_id: person,
      site: SITE_4,
      at: "2026-03-01T10:02:00.000Z",
    });
    expect(events[4]!.payload).toEqual({
      scan_id: scanId,
      person_id: person,
      site: SITE_5,
      at: "2026-03-01T10:03:00.000Z",
    });
    expect(events[5]!.payload).toEqual({ scan_id: scanId, person_id: person, at: "2026-03-01T10:00:00.000Z" });

    // The queue redelivers the same message: nothing changes twice, nothing is sent twice.
    const before = await stateOf(person);
    const redelivered = await consume(batch, 2);
    expect(redelivered.explicitAcks).toEqual(["scan-msg"]);
    expect(redelivered.retryMessages).toEqual([]);
    expect(await stateOf(person)).toEqual(before);
  });

  it("sends a person's events to every company they belong to, and to no other", async () => {
    const both = await newEmployee([DEMO.companies.acme, DEMO.companies.globex]);
    const acmeOnly = await newEmployee();
    const result = await consume([
      { type: "started", scan_id: `both-${both}`, person_id: both, at: "2026-03-02T10:00:00Z" },
      { type: "started", scan_id: `acme-${acmeOnly}`, person_id: acmeOnly, at: "2026-03-02T10:00:00Z" },
    ]);
    expect(result.explicitAcks).toEqual(["scan-msg"]);
    expect((await eventsAbout(both)).map((e) => e.event)).toEqual(["scan:started"]);
    expect((await eventsAbout(both, 2, "carol")).map((e) => e.event)).toEqual(["scan:started"]);
    expect(await eventsAbout(acmeOnly, 2, "carol")).toEqual([]);
  });

  it("400 naming the index of a bad event; nothing of the batch is queued", async () => {
    const person = await newEmployee();
    const good = { type: "started", scan_id: `rejected-${person}`, person_id: person, at: "2026-03-03T10:00:00Z" };
    const cases: [unknown[], string][] = [
      [[good, good, { type: "found", scan_id: "x", person_id: person, at: "2026-03-03T10:00:00Z" }], "`[2].site_id`"],
      [[good, { type: "exploded", scan_id: "x", person_id: person, at: "2026-03-03T10:00:00Z" }], "`[1].type`"],
      [[{ ...good, at: "yesterday" }], "`[0].at`"],
      [[good, { ...good, person_id: "abc" }], "`[1].person_id`"],
      [[good, { type: "removal_confirmed", at: "2026-03-03T10:00:00Z" }], "`[1].exposure_id`"],
      [
        [{ type: "found", scan_id: "x", person_id: person, site_id: 3, url: "ftp://x", at: "2026-03-03T10:00:00Z" }],
        "`[0].url`",
      ],
      [[good, { ...good, person_id: 987654 }], "`[1].person_id` person 987654 does not exist"],
      [
        [{ type: "not_found", scan_id: "x", person_id: person, site_id: 1, at: "2026-03-03T10:00:00Z" }],
        "`[0].site_id` 1 is not a people-search site",
      ],
      [[good, { type: "removal_confirmed", exposure_id: 987654, at: "2026-03-03T10:00:00Z" }], "`[1].exposure_id`"],
    ];
    for (const [body, expected] of cases) {
      const message = await expectError(await post(body), 400, "Bad Request");
      expect(message).toContain(expected);
    }
    // Had any of these been queued, the good event would have been applied by now.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(await scanRow(`rejected-${person}`)).toBeNull();
  });

  it("400 for a body that is not an array of 1–100 events", async () => {
    const event = { type: "started", scan_id: "s", person_id: 1, at: "2026-03-03T10:00:00Z" };
    for (const body of [[], event, Array.from({ length: 101 }, () => event), "not json"]) {
      await expectError(await post(body), 400, "Bad Request");
    }
  });

  it("queues a batch larger than one queue message in several messages, all applied", async () => {
    const person = await newEmployee();
    const filler = "x".repeat(2_000);
    const batch = Array.from({ length: 100 }, (_, i) => ({
      type: "found",
      scan_id: `big-${person}-${i}`,
      person_id: person,
      site_id: 3,
      url: `https://peoplefinder.example/p/big-${i}`,
      data: { filler },
      at: "2026-03-03T10:00:00Z",
    }));
    const response = await post(batch);
    expect(response.status).toBe(202);
    expect(await response.json()).toEqual({ accepted: 100 });
    await waitFor(async () => (await exposuresOf(person)).length === 100, "every event applied");
  });

  it("queues at most 25 events per message, so one consumer invocation stays small; all applied", async () => {
    const person = await newEmployee([]);
    const send = vi.spyOn(env.SCAN_QUEUE, "send");
    try {
      const batch = Array.from({ length: 100 }, (_, i) => ({
        type: "not_found",
        scan_id: `packed-${person}`,
        person_id: person,
        site_id: 3 + (i % 3),
        at: "2026-03-03T10:00:00Z",
      })).map((event, i) => ({ ...event, scan_id: `packed-${person}-${Math.floor(i / 3)}` }));
      const response = await post(batch);
      expect(response.status).toBe(202);
      expect(send.mock.calls.map(([body]) => (body as unknown[]).length)).toEqual([25, 25, 25, 25]);
      expect(send.mock.calls.flatMap(([body]) => body as unknown[])).toEqual(batch);
    } finally {
      send.mockRestore();
    }
    await waitFor(async () => {
      const row = await env.DB.prepare("SELECT count(*) AS n FROM scan_results WHERE person_id = ?")
        .bind(person)
        .first<{ n: number }>();
      return row!.n === 100;
    }, "every event applied");
  });

  it("413 naming an event too large for a queue message, nothing queued", async () => {
    const person = await newEmployee();
    const batch = [
      { type: "started", scan_id: `huge-${person}`, person_id: person, at: "2026-03-03T10:00:00Z" },
      {
        type: "found",
        scan_id: `huge-${person}`,
        person_id: person,
        site_id: 3,
        data: { filler: "x".repeat(130_000) },
        at: "2026-03-03T10:00:00Z",
      },
    ];
    const message = await expectError(await post(batch), 413, "Payload Too Large");
    expect(message).toContain("[1]");
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(await scanRow(`huge-${person}`)).toBeNull();
  });

  it("needs a service token with scope scans:write: 401 without, 403 for a person or another service", async () => {
    const body = [{ type: "started", scan_id: "auth", person_id: 1, at: "2026-03-03T10:00:00Z" }];
    await expectError(await call("/internal/scan-events", { method: "POST", body }), 401, "Unauthorized");
    await expectError(await post(body, "pk_unknown_token_value"), 401, "Unauthorized");
    await expectError(await post(body, DEMO.tokens.alice), 403, "Forbidden");
    await expectError(await post(body, DEMO.tokens.telephony), 403, "Forbidden");
  });
});

describe("scan-events consumer", () => {
  it("applies a batch handed to it directly, once, whatever the redeliveries and order", async () => {
    const person = await newEmployee();
    const batch = [
      // Out of order: completed before started.
      { type: "completed", scan_id: `direct-${person}`, person_id: person, at: "2026-03-04T11:00:00Z" },
      { type: "started", scan_id: `direct-${person}`, person_id: person, at: "2026-03-04T10:00:00Z" },
      { type: "found", scan_id: `direct-${person}`, person_id: person, site_id: 4, at: "2026-03-04T10:30:00Z" },
    ];
    expect((await consume(batch)).explicitAcks).toEqual(["scan-msg"]);
    const after = await stateOf(person);
    for (let attempt = 2; attempt <= 3; attempt++) {
      expect((await consume(batch, attempt)).explicitAcks).toEqual(["scan-msg"]);
      expect(await stateOf(person)).toEqual(after);
    }
    expect((await eventsAbout(person)).map((e) => e.event)).toEqual([
      "scan:completed",
      "scan:started",
      "scan:found",
      "exposure:created",
    ]);
    expect(await scanRow(`direct-${person}`)).toMatchObject({ status: "completed" });
    const [exposure] = await exposuresOf(person);
    expect(exposure).toMatchObject({ site_id: 4, status: "pending", url: null });
    expect(JSON.parse(exposure!.data)).toEqual({});
  });

  it("applies a 100-event message completely in one invocation, with a handful of D1 calls", async () => {
    const person = await newEmployee();
    const scan = `bulk-${person}`;
    const batch = [
      { type: "started", scan_id: scan, person_id: person, at: "2026-03-04T10:00:00Z" },
      ...Array.from({ length: 97 }, (_, i) => ({
        type: "found",
        scan_id: `${scan}-${i}`,
        person_id: person,
        site_id: 3,
        url: `https://peoplefinder.example/p/bulk-${person}-${i}`,
        at: "2026-03-04T10:01:00Z",
      })),
      { type: "not_found", scan_id: scan, person_id: person, site_id: 4, at: "2026-03-04T10:02:00Z" },
      { type: "completed", scan_id: scan, person_id: person, at: "2026-03-04T11:00:00Z" },
    ];
    const first = countedD1(env.DB);
    const result = await consume(batch, 1, { ...env, DB: first.db });
    console.log(JSON.stringify({ message: "100 events, first delivery", ...first.count }));
    expect(result.explicitAcks).toEqual(["scan-msg"]);
    expect(result.retryMessages).toEqual([]);

    const [exposureCount, resultCount, deliveryCount] = await Promise.all(
      [
        rows<{ n: number }>("acme", "SELECT count(*) AS n FROM exposures WHERE person_id = ?1", person),
        rows<{ n: number }>("acme", "SELECT count(*) AS n FROM scan_results WHERE person_id = ?1", person),
        rows<{ n: number }>(
          "d1",
          DELIVERIES_ABOUT.replace("id, event", "count(*) AS n").replace(" ORDER BY id", ""),
          person,
        ),
      ].map(async (counted) => (await counted)[0]!.n),
    );
    expect([exposureCount, resultCount]).toEqual([97, 98]);
    // Acme listens to every event: started, 97 × (found + exposure:created), not_found, completed.
    expect(deliveryCount).toBe(1 + 97 * 2 + 1 + 1);
    expect(await scanRow(scan)).toMatchObject({ status: "completed", started_at: Date.parse("2026-03-04T10:00:00Z") });
    // Before: about ten round trips per event (a thousand per message).
    expect(first.count.calls).toBeLessThanOrEqual(5);

    // Redelivered: nothing changes, nothing is sent twice, and it costs even less.
    const state = await stateOf(person);
    const again = countedD1(env.DB);
    expect((await consume(batch, 2, { ...env, DB: again.db })).explicitAcks).toEqual(["scan-msg"]);
    console.log(JSON.stringify({ message: "100 events, redelivered", ...again.count }));
    expect(await stateOf(person)).toEqual(state);
    expect(again.count.calls).toBeLessThanOrEqual(first.count.calls);
  });

  it("within one message: a listing found twice opens one exposure, a (scan, site) result counts once", async () => {
    const person = await newEmployee();
    const found = (scan: string, url: string, at = "2026-03-05T10:00:00Z") => ({
      type: "found",
      scan_id: scan,
      person_id: person,
      site_id: 3,
      url,
      at,
    });
    const result = await consume([
      found(`one-${person}`, "https://peoplefinder.example/p/same"),
      found(`two-${person}`, "https://peoplefinder.example/p/same"),
      found(`two-${person}`, "https://peoplefinder.example/p/other", "2026-03-05T10:05:00Z"),
      found(`three-${person}`, "https://peoplefinder.example/p/third"),
    ]);
    expect(result.explicitAcks).toEqual(["scan-msg"]);
    expect((await exposuresOf(person)).map((e) => e.url)).toEqual([
      "https://peoplefinder.example/p/same",
      "https://peoplefinder.example/p/third",
    ]);
    expect(
      await rows("acme", "SELECT scan_id, url FROM scan_results WHERE person_id = ?1 ORDER BY scan_id", person),
    ).toEqual([
      { scan_id: `one-${person}`, url: "https://peoplefinder.example/p/same" },
      { scan_id: `three-${person}`, url: "https://peoplefinder.example/p/third" },
      { scan_id: `two-${person}`, url: "https://peoplefinder.example/p/same" },
    ]);
    expect((await eventsAbout(person)).map((e) => e.event)).toEqual([
      "scan:found",
      "exposure:created",
      "scan:found",
      "scan:found",
      "exposure:created",
    ]);
  });

  it("does not open a second exposure for a listing that is already open; another listing is another exposure", async () => {
    const person = await newEmployee();
    const found = (scan: string, url: string) => ({
      type: "found",
      scan_id: scan,
      person_id: person,
      site_id: 3,
      url,
      at: "2026-03-05T10:00:00Z",
    });
    await consume([found(`a-${person}`, "https://peoplefinder.example/p/1")]);
    await consume([found(`b-${person}`, "https://peoplefinder.example/p/1")]);
    expect(await exposuresOf(person)).toHaveLength(1);
    await consume([found(`c-${person}`, "https://peoplefinder.example/p/2")]);
    expect((await exposuresOf(person)).map((e) => e.url)).toEqual([
      "https://peoplefinder.example/p/1",
      "https://peoplefinder.example/p/2",
    ]);
    expect((await eventsAbout(person)).map((e) => e.event)).toEqual([
      "scan:found",
      "exposure:created",
      "scan:found",
      "scan:found",
      "exposure:created",
    ]);
  });

  it("acknowledges a message that is not a scan event batch, and skips events about people removed since", async () => {
    expect((await consume({ not: "a batch" })).explicitAcks).toEqual(["scan-msg"]);
    const person = await newEmployee();
    await env.DB.prepare("DELETE FROM people WHERE id = ?").bind(person).run();
    const result = await consume([
      { type: "started", scan_id: `gone-${person}`, person_id: person, at: "2026-03-06T10:00:00Z" },
      { type: "found", scan_id: `gone-${person}`, person_id: person, site_id: 3, at: "2026-03-06T10:00:00Z" },
    ]);
    expect(result.explicitAcks).toEqual(["scan-msg"]);
    expect(await scanRow(`gone-${person}`, "d1")).toBeNull();
    expect(await scanRow(`gone-${person}`)).toBeNull();
  });
});

/** Moves every pending exposure but `except`'s to in_progress (earlier tests leave some). */
async function drainPendingExposures(except = 0) {
  await env.DB.prepare("UPDATE exposures SET status = 'in_progress' WHERE status = 'pending' AND person_id != ?")
    .bind(except)
    .run();
}

/** Whether Acme's scan side is in its object (true since migration 0032) or in D1 (a company created before). */
async function acmeScansInObject(inObject: boolean) {
  await env.DB.prepare("UPDATE companies SET scans_in_object = ? WHERE id = ?")
    .bind(inObject ? 1 : 0, DEMO.companies.acme)
    .run();
}

// D1's path, for companies created before the scan side moved into the objects: Acme served from D1 here.
describe("exposure life in D1", () => {
  beforeAll(async () => {
    await acmeScansInObject(false);
    await drainPendingExposures();
  });
  afterAll(() => acmeScansInObject(true));

  it("pending → in_progress by the hourly removal step → closed by a confirmation; repeats are no-ops", async () => {
    const person = await newEmployee();
    await consume([
      {
        type: "found",
        scan_id: `life-${person}`,
        person_id: person,
        site_id: 4,
        url: "https://spydirectory.example/x",
        data: { age: 40 },
        at: "2026-03-07T10:00:00Z",
      },
    ]);
    const [pending] = await exposuresOf(person, "d1");
    expect(pending!.status).toBe("pending");

    // A confirmation for a removal never requested changes nothing.
    await consume([{ type: "removal_confirmed", exposure_id: pending!.id, at: "2026-03-07T10:30:00Z" }]);
    expect((await exposuresOf(person, "d1"))[0]!.status).toBe("pending");

    const before = Date.now();
    await fireHourlyCron();
    const [requested] = await exposuresOf(person, "d1");
    expect(requested!.status).toBe("in_progress");
    expect(requested!.requested_at).toBeGreaterThanOrEqual(before - 1000);
    expect((await historyOf(pending!.id, "d1")).map((h) => h.event)).toEqual([
      "Found on SpyDirectory",
      "Removal requested from SpyDirectory",
    ]);

    await fireHourlyCron();
    expect(await historyOf(pending!.id, "d1")).toHaveLength(2);

    const confirmation = [{ type: "removal_confirmed", exposure_id: pending!.id, at: "2026-03-08T09:00:00Z" }];
    expect((await post(confirmation)).status).toBe(202);
    await waitFor(async () => (await exposuresOf(person, "d1"))[0]!.status === "closed", "the confirmation");
    const [closed] = await exposuresOf(person, "d1");
    expect(closed!.closed_at).toBe(Date.parse("2026-03-08T09:00:00Z"));
    expect(await historyOf(pending!.id, "d1")).toEqual([
      expect.objectContaining({ event: "Found on SpyDirectory" }),
      expect.objectContaining({ event: "Removal requested from SpyDirectory" }),
      { event: "Removal confirmed by SpyDirectory", site_id: 4, created_at: Date.parse("2026-03-08T09:00:00Z") },
    ]);

    const state = await stateOf(person, "d1");
    expect((await consume(confirmation, 2)).explicitAcks).toEqual(["scan-msg"]);
    await fireHourlyCron();
    expect(await stateOf(person, "d1")).toEqual(state);

    const events = await eventsAbout(person);
    expect(events.map((e) => e.event)).toEqual([
      "scan:found",
      "exposure:created",
      "exposure:requested",
      "request:created",
      "exposure:closed",
      "request:closed",
    ]);
    const exposure = (status: string) => ({
      id: pending!.id,
      employee_id: person,
      status,
      site: SITE_4,
      url: "https://spydirectory.example/x",
      data: { age: 40 },
      created_at: events[1]!.payload.created_at,
      updated_at: expect.stringMatching(ISO),
    });
    expect(events[2]!.payload).toEqual(exposure("in_progress"));
    expect(events[3]!.payload).toEqual(events[2]!.payload);
    expect(events[4]!.payload).toEqual(exposure("closed"));
    expect(events[5]!.payload).toEqual(events[4]!.payload);
  });

  it("the removal step moves oldest first in bounded batches, says when more remain, and the hourly run moves them all", async () => {
    // A person of no company: no webhooks to write, which keeps 260 events quick.
    const person = await newEmployee([]);
    const found = (from: number) =>
      Array.from({ length: 65 }, (_, i) => ({
        type: "found",
        scan_id: `many-${person}-${from + i}`,
        person_id: person,
        site_id: 3,
        url: `https://peoplefinder.example/p/${person}-${from + i}`,
        at: "2026-03-09T10:00:00Z",
      }));
    expect((await consume(found(0))).explicitAcks).toEqual(["scan-msg"]);
    expect((await consume(found(65))).explicitAcks).toEqual(["scan-msg"]);
    const statuses = async () => (await exposuresOf(person, "d1")).map((e) => e.status);
    expect(await statuses()).toEqual(Array(130).fill("pending"));

    // Two batches of 50 in one invocation: the oldest 100 move, and the chunk says more may remain.
    await drainPendingExposures(person);
    expect(await submitRemovalRequests(createDeps(env), new Date(), { batchSize: 50, maxBatches: 2 })).toEqual({
      moved: 100,
      more: true,
    });
    expect(await statuses()).toEqual([...Array(100).fill("in_progress"), ...Array(30).fill("pending")]);
    // The hourly run takes the rest (up to 1,000 per invocation, then `removals` continuations).
    await fireHourlyCron();
    expect(await statuses()).toEqual(Array(130).fill("in_progress"));

    const { results } = await env.DB.prepare(
      "SELECT count(*) AS n FROM exposure_history h JOIN exposures e ON e.id = h.exposure_id WHERE e.person_id = ? AND h.event = 'Removal requested from PeopleFinder'",
    )
      .bind(person)
      .all<{ n: number }>();
    expect(results[0]!.n).toBe(130);
  });
});
