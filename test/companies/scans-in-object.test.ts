import {
  createExecutionContext,
  createMessageBatch,
  getQueueResult,
  runDurableObjectAlarm,
  runInDurableObject,
} from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import worker from "../../src/index";
import { companyOfExposure, exposureIdBase } from "../../src/domain/company-scans";
import { EVENT_NAMES } from "../../src/domain/events";
import type { BackgroundMessage } from "../../src/domain/queue-messages";
import { ScanEventBatch } from "../../src/domain/scan-events";
import { forwardCompanyEvents } from "../../src/services/company-events";
import { createDeps } from "../../src/services/create-deps";
import { applyScanEvents } from "../../src/services/scans";
import { as, call, DEMO, drainBackground, expectError } from "../helpers";
import { companyObject, insertEmployee, scansInObject } from "../support/company-scans";

/*
 * The scan side of a company whose scans live in its own object (docs/architecture.md, "The
 * Company object"; every company created since migration 0032, Acme and Globex here): the run is
 * applied in the object, its events wait in the object's outbox until the Worker records them in
 * D1 as deliveries (services/company-events.ts), and the object's alarm asks again for those left.
 */

const ACME = DEMO.companies.acme;
const GLOBEX = DEMO.companies.globex;
const RECEIVER = "https://receiver.objects.test/";

let nextPerson = 1900;
const newEmployee = (companies: number[]) => insertEmployee(nextPerson++, companies, "Object");

/** Runs the scan-events consumer on one message, as the queue would deliver it. */
async function consume(body: unknown, bindings: Partial<Env> = {}) {
  const batch = createMessageBatch("scan-events", [{ id: "scan-msg", timestamp: new Date(), attempts: 1, body }]);
  const ctx = createExecutionContext();
  await worker.queue!(batch, { ...env, ...bindings }, ctx);
  return getQueueResult(batch, ctx);
}

/** What each event of a batch came to (the consumer's log line), applied as the consumer applies it. */
const apply = (body: unknown[]) => applyScanEvents(createDeps(env), ScanEventBatch.parse(body));

/** The `COMPANY` binding with some of the objects' methods failing (the object itself unchanged). */
function objectsFailing(failing: ("takeEvents" | "ackEvents")[]): Env["COMPANY"] {
  const real = env.COMPANY;
  const methods = ["applyScanRun", "confirmRemoval", "knownExposures", "takeEvents", "ackEvents"] as const;
  return {
    idFromName: real.idFromName.bind(real),
    get: (id: DurableObjectId) => {
      const stub = real.get(id) as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
      return Object.fromEntries(
        methods.map((method) => [
          method,
          (failing as string[]).includes(method)
            ? () => Promise.reject(new Error(`${method}: object unavailable`))
            : (...args: unknown[]) => stub[method]!(...args),
        ]),
      );
    },
  } as unknown as Env["COMPANY"];
}

/** The rows a query reads from a company's object. */
const inObject = <T = Record<string, unknown>>(companyId: number, query: string, ...params: unknown[]) =>
  runInDurableObject(companyObject(companyId), (_, state) =>
    state.storage.sql.exec(query, ...params).toArray(),
  ) as Promise<T[]>;

type Recorded = { company_id: number; event: string; payload: Record<string, unknown> };

/** D1's webhook deliveries about a person, in the order written. */
async function deliveriesAbout(personId: number): Promise<Recorded[]> {
  const { results } = await env.DB.prepare(
    `SELECT company_id, event, payload FROM webhook_deliveries
     WHERE json_extract(payload, '$.person_id') = ?1 OR json_extract(payload, '$.employee_id') = ?1 ORDER BY rowid`,
  )
    .bind(personId)
    .all<{ company_id: number; event: string; payload: string }>();
  return results.map((row) => ({ ...row, payload: JSON.parse(row.payload) as Record<string, unknown> }));
}
const eventsOf = async (personId: number, companyId: number) =>
  (await deliveriesAbout(personId)).filter((row) => row.company_id === companyId).map((row) => row.event);

const outbox = (companyId: number) => companyObject(companyId).takeEvents(1000);

const started = (person: number, scan: string) => ({
  type: "started",
  scan_id: scan,
  person_id: person,
  at: "2026-04-01T10:00:00Z",
});
const found = (person: number, scan: string, site = 3, url = `https://peoplefinder.example/p/${scan}`) => ({
  type: "found",
  scan_id: scan,
  person_id: person,
  site_id: site,
  url,
  data: { name: "Object Subject" },
  at: "2026-04-01T10:01:00Z",
});

beforeAll(async () => {
  // Acme listens to every event, Globex to the scan's start, a listing found and the exposure opened.
  for (const event of EVENT_NAMES) {
    const response = await as("alice").send("POST", `/companies/${ACME}/webhooks`, {
      endpoint: `${RECEIVER}acme`,
      event,
    });
    expect(response.status).toBe(201);
  }
  for (const event of ["scan:started", "scan:found", "exposure:created"]) {
    const response = await as("carol").send("POST", `/companies/${GLOBEX}/webhooks`, {
      endpoint: `${RECEIVER}globex`,
      event,
    });
    expect(response.status).toBe(201);
  }
});
afterEach(() => vi.restoreAllMocks());

describe("a company's scans in its object", () => {
  it("records a run's events in D1 once, even when it is forwarded twice or overlapping", async () => {
    const person = await newEmployee([ACME]);
    // The events are recorded, but the object never hears it: they stay in its outbox.
    const noAck = objectsFailing(["ackEvents"]);
    const first = await consume([started(person, `twice-${person}`), found(person, `twice-${person}`)], {
      COMPANY: noAck,
    });
    expect(first.explicitAcks).toEqual(["scan-msg"]);
    expect(await eventsOf(person, ACME)).toEqual(["scan:started", "scan:found", "exposure:created"]);
    expect((await outbox(ACME)).map((event) => event.event)).toEqual([
      "scan:started",
      "scan:found",
      "exposure:created",
    ]);

    // A later run's forward takes the old events with its own: only its own are recorded.
    await consume([found(person, `twice-${person}`, 4)], { COMPANY: noAck });
    expect(await eventsOf(person, ACME)).toEqual([
      "scan:started",
      "scan:found",
      "exposure:created",
      "scan:found",
      "exposure:created",
    ]);

    // Forwarded again (the alarm's repair): nothing recorded twice, and the outbox is emptied.
    const forward = await forwardCompanyEvents(createDeps(env), ACME);
    expect(forward.forwarded).toBeGreaterThanOrEqual(5);
    expect(forward.more).toBe(false);
    expect(await outbox(ACME)).toEqual([]);
    const recorded = await deliveriesAbout(person);
    expect(recorded.map((row) => row.event)).toEqual([
      "scan:started",
      "scan:found",
      "exposure:created",
      "scan:found",
      "exposure:created",
    ]);
    expect(recorded.every((row) => row.company_id === ACME)).toBe(true);
    expect((await forwardCompanyEvents(createDeps(env), ACME)).forwarded).toBe(0);
    expect(await deliveriesAbout(person)).toEqual(recorded);
  });

  it("a forward that failed is repaired by the object's alarm, through a company-events background message", async () => {
    const person = await newEmployee([ACME]);
    const result = await consume([started(person, `repair-${person}`), found(person, `repair-${person}`)], {
      COMPANY: objectsFailing(["takeEvents"]),
    });
    // The run is applied (and not retried for the forward): its events wait in the object.
    expect(result.explicitAcks).toEqual(["scan-msg"]);
    expect(await inObject(ACME, "SELECT status FROM exposures WHERE person_id = ?", person)).toEqual([
      { status: "pending" },
    ]);
    expect(await deliveriesAbout(person)).toEqual([]);
    const waiting = await outbox(ACME);
    expect(waiting.map((event) => event.event)).toEqual(["scan:started", "scan:found", "exposure:created"]);

    // A minute later (the events and their due time made older), the alarm asks the Worker.
    const stub = companyObject(ACME);
    await runInDurableObject(stub, (_, state) => {
      state.storage.sql.exec("UPDATE events SET created_at = created_at - 120000");
      state.storage.sql.exec("UPDATE counters SET value = value - 120000 WHERE name = 'due:events'");
    });
    const sent: unknown[] = [];
    vi.spyOn(env.BACKGROUND_QUEUE, "send").mockImplementation((async (body: unknown) => {
      sent.push(body);
    }) as never);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(sent).toEqual([{ kind: "company-events", companyId: ACME }]);
    vi.restoreAllMocks();

    // The message's consumer records them, once; the outbox is empty.
    await drainBackground(sent[0] as BackgroundMessage);
    expect(await eventsOf(person, ACME)).toEqual(["scan:started", "scan:found", "exposure:created"]);
    expect(await outbox(ACME)).toEqual([]);
    const created = (await deliveriesAbout(person)).find((row) => row.event === "exposure:created")!;
    expect(companyOfExposure(created.payload.id as number)).toBe(ACME);

    // The alarm comes back once more, finds nothing waiting, and asks nothing.
    await runInDurableObject(stub, (_, state) => {
      state.storage.sql.exec("UPDATE counters SET value = 0 WHERE name = 'due:events'");
    });
    vi.spyOn(env.BACKGROUND_QUEUE, "send").mockImplementation((async (body: unknown) => {
      sent.push(body);
    }) as never);
    await runDurableObjectAlarm(stub);
    expect(sent).toHaveLength(1);
    expect(await inObject(ACME, "SELECT value FROM counters WHERE name = 'due:events'")).toEqual([]);
  });

  it("an event recorded in D1 late keeps, as its body's timestamp, the time its object applied the change", async () => {
    const person = await newEmployee([ACME]);
    await consume([started(person, `late-${person}`)], { COMPANY: objectsFailing(["takeEvents"]) });
    await consume([found(person, `late-${person}`)], { COMPANY: objectsFailing(["takeEvents"]) });
    // Applied 2 and 1 minutes ago (the forward failed); recorded now, in one batch, by the repair.
    await runInDurableObject(companyObject(ACME), (_, state) => {
      state.storage.sql.exec(
        `UPDATE events SET created_at = created_at - CASE event WHEN 'scan:started' THEN 120000 ELSE 60000 END
         WHERE ?1 IN (json_extract(payload, '$.person_id'), json_extract(payload, '$.employee_id'))`,
        person,
      );
    });
    const raised = await inObject<{ event: string; created_at: number }>(
      ACME,
      `SELECT event, created_at FROM events
       WHERE ?1 IN (json_extract(payload, '$.person_id'), json_extract(payload, '$.employee_id')) ORDER BY seq`,
      person,
    );
    expect(raised.map((row) => row.event)).toEqual(["scan:started", "scan:found", "exposure:created"]);
    await forwardCompanyEvents(createDeps(env), ACME);
    const { results } = await env.DB.prepare(
      `SELECT event, created_at FROM webhook_deliveries
       WHERE ?1 IN (json_extract(payload, '$.person_id'), json_extract(payload, '$.employee_id')) ORDER BY rowid`,
    )
      .bind(person)
      .all<{ event: string; created_at: number }>();
    expect(results).toEqual(raised);
  });

  it("a backlog larger than one D1 batch is recorded in batches of 200, in order, each event once", async () => {
    const person = await newEmployee([ACME]);
    const noTake = objectsFailing(["takeEvents"]);
    for (const part of [0, 1, 2]) {
      const run = Array.from({ length: 90 }, (_, i) => found(person, `backlog-${person}-${part}-${i}`));
      expect((await consume(run, { COMPANY: noTake })).explicitAcks).toEqual(["scan-msg"]);
    }
    // 3 × 90 × (scan:found + exposure:created) wait in the outbox.
    expect(await outbox(ACME)).toHaveLength(540);
    expect(await forwardCompanyEvents(createDeps(env), ACME)).toEqual({ forwarded: 540, more: false });
    expect(await outbox(ACME)).toEqual([]);
    const recorded = await deliveriesAbout(person);
    expect(recorded).toHaveLength(540);
    expect(recorded.map((row) => row.event)).toEqual(
      Array.from({ length: 270 }, () => ["scan:found", "exposure:created"]).flat(),
    );
    const ids = recorded.filter((row) => row.event === "exposure:created").map((row) => row.payload.id as number);
    expect(new Set(ids).size).toBe(270);
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
  });

  it("a person of a company served from D1 and of one served by its object gets both, each once", async () => {
    await scansInObject(GLOBEX, false);
    try {
      const person = await newEmployee([ACME, GLOBEX]);
      const scan = `both-${person}`;
      expect(await apply([started(person, scan), found(person, scan)])).toEqual(["started", "found: exposure created"]);
      // Acme's from its object, Globex's from D1, and neither's from the other.
      expect(await eventsOf(person, ACME)).toEqual(["scan:started", "scan:found", "exposure:created"]);
      expect(await eventsOf(person, GLOBEX)).toEqual(["scan:started", "scan:found", "exposure:created"]);
      const created = (await deliveriesAbout(person)).filter((row) => row.event === "exposure:created");
      const byCompany = Object.fromEntries(created.map((row) => [row.company_id, row.payload.id as number]));
      expect(companyOfExposure(byCompany[ACME]!)).toBe(ACME);
      expect(companyOfExposure(byCompany[GLOBEX]!)).toBeNull();
      // Each store keeps its own copy of what was found.
      const { results: inD1 } = await env.DB.prepare("SELECT id, status FROM exposures WHERE person_id = ?")
        .bind(person)
        .all();
      expect(inD1).toEqual([{ id: byCompany[GLOBEX], status: "pending" }]);
      expect(await inObject(ACME, "SELECT id, status FROM exposures WHERE person_id = ?", person)).toEqual([
        { id: byCompany[ACME], status: "pending" },
      ]);
      // The payloads are the same but for the id.
      const [acme, globex] = [ACME, GLOBEX].map(
        (company) => created.find((row) => row.company_id === company)!.payload,
      );
      expect({ ...acme, id: 0, created_at: "", updated_at: "" }).toEqual({
        ...globex,
        id: 0,
        created_at: "",
        updated_at: "",
      });
    } finally {
      await scansInObject(GLOBEX, true);
    }
  });

  it("two companies' scans at once: each object keeps its own members' findings and raises only its own events", async () => {
    const acmeOnly = await newEmployee([ACME]);
    const globexOnly = await newEmployee([GLOBEX]);
    const both = await newEmployee([ACME, GLOBEX]);
    const run = (person: number) => {
      const scan = `at-once-${person}`;
      return [
        started(person, scan),
        found(person, scan),
        found(person, scan, 4, `https://spydirectory.example/p/${scan}`),
        { type: "completed", scan_id: scan, person_id: person, at: "2026-04-01T10:05:00Z" },
      ];
    };
    // One message with both companies' people interleaved, and another consumed at the same time.
    const [a, g] = [run(acmeOnly), run(globexOnly)];
    const mixed = a.flatMap((event, i) => [event, g[i]!]);
    const results = await Promise.all([consume(mixed), consume(run(both))]);
    for (const result of results) expect(result.explicitAcks).toHaveLength(1);

    const exposuresIn = async (companyId: number) =>
      (await inObject<{ person_id: number }>(companyId, "SELECT person_id FROM exposures ORDER BY id"))
        .map((row) => row.person_id)
        .filter((person) => [acmeOnly, globexOnly, both].includes(person));
    expect((await exposuresIn(ACME)).sort()).toEqual([acmeOnly, acmeOnly, both, both].sort());
    expect((await exposuresIn(GLOBEX)).sort()).toEqual([globexOnly, globexOnly, both, both].sort());
    // Each company's ids name it.
    const ids = await inObject<{ id: number }>(GLOBEX, "SELECT id FROM exposures WHERE person_id = ?", both);
    expect(ids.map((row) => companyOfExposure(row.id))).toEqual([GLOBEX, GLOBEX]);

    // Each company hears about its own members only, each event once; Globex only what it subscribed to.
    expect(await eventsOf(acmeOnly, GLOBEX)).toEqual([]);
    expect(await eventsOf(globexOnly, ACME)).toEqual([]);
    const everyAcmeEvent = ["scan:started", "scan:found", "exposure:created", "scan:found", "exposure:created"];
    for (const person of [acmeOnly, both]) {
      expect((await eventsOf(person, ACME)).filter((event) => everyAcmeEvent.includes(event)).sort()).toEqual(
        [...everyAcmeEvent].sort(),
      );
    }
    const globexEvents = ["scan:started", "scan:found", "exposure:created", "scan:found", "exposure:created"];
    for (const person of [globexOnly, both]) {
      expect((await eventsOf(person, GLOBEX)).sort()).toEqual([...globexEvents].sort());
    }
    // Nothing is left waiting in either outbox.
    expect(await outbox(ACME)).toEqual([]);
    expect(await outbox(GLOBEX)).toEqual([]);
  });

  it("removal_confirmed goes to the object its exposure id names: in_progress → closed, once", async () => {
    const person = await newEmployee([ACME]);
    expect(await apply([found(person, `close-${person}`, 4, "https://spydirectory.example/o")])).toEqual([
      "found: exposure created",
    ]);
    const [{ id } = { id: 0 }] = await inObject<{ id: number }>(
      ACME,
      "SELECT id FROM exposures WHERE person_id = ?",
      person,
    );
    expect(id).toBeGreaterThan(exposureIdBase(ACME));
    const confirm = [{ type: "removal_confirmed", exposure_id: id, at: "2026-04-02T09:00:00Z" }];
    // Not requested yet: nothing changes.
    expect(await apply(confirm)).toEqual(["unchanged"]);

    // The object's removal step (another duty) requested it.
    await runInDurableObject(companyObject(ACME), (_, state) => {
      state.storage.sql.exec(
        "UPDATE exposures SET status = 'in_progress', requested_at = ? WHERE id = ?",
        Date.now(),
        id,
      );
    });
    // The intake asks the object whether the exposure exists.
    expect(
      (await call("/internal/scan-events", { method: "POST", body: confirm, token: DEMO.tokens.scanner })).status,
    ).toBe(202);
    for (let i = 0; i < 100; i++) {
      const [row] = await inObject<{ status: string }>(ACME, "SELECT status FROM exposures WHERE id = ?", id);
      if (row!.status === "closed") break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(await inObject(ACME, "SELECT status, closed_at FROM exposures WHERE id = ?", id)).toEqual([
      { status: "closed", closed_at: Date.parse("2026-04-02T09:00:00Z") },
    ]);
    expect(
      await inObject(ACME, "SELECT event, site_id FROM exposure_history WHERE exposure_id = ? ORDER BY id", id),
    ).toEqual([
      { event: "Found on SpyDirectory", site_id: 4 },
      { event: "Removal confirmed by SpyDirectory", site_id: 4 },
    ]);
    expect(await apply(confirm)).toEqual(["unchanged"]);

    const recorded = await deliveriesAbout(person);
    expect(recorded.map((row) => row.event)).toEqual([
      "scan:found",
      "exposure:created",
      "exposure:closed",
      "request:closed",
    ]);
    const closed = recorded[2]!.payload;
    expect(closed).toEqual({
      id,
      employee_id: person,
      status: "closed",
      site: { id: 4, name: "SpyDirectory", slug: "spydirectory", logo: "", url: "https://spydirectory.example" },
      url: "https://spydirectory.example/o",
      data: { name: "Object Subject" },
      created_at: recorded[1]!.payload.created_at,
      updated_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
    });
    expect(recorded[3]!.payload).toEqual(closed);
  });

  it("400 for an exposure id of an object that has no such exposure, or of no company", async () => {
    for (const id of [exposureIdBase(ACME) + 10_000_000, exposureIdBase(987_654) + 1]) {
      const body = [{ type: "removal_confirmed", exposure_id: id, at: "2026-04-02T09:00:00Z" }];
      const message = await expectError(
        await call("/internal/scan-events", { method: "POST", body, token: DEMO.tokens.scanner }),
        400,
        "Bad Request",
      );
      expect(message).toContain(`exposure ${id} does not exist`);
    }
  });
});

describe("the object's alarm runs its scan duties", () => {
  /** Makes a duty of company `companyId`'s object due now, then runs the object's alarm. */
  async function runDuty(companyId: number, duty: "removals" | "scan-retention") {
    await runInDurableObject(companyObject(companyId), (_, state) => {
      state.storage.sql.exec("UPDATE counters SET value = 0 WHERE name = ?", `due:${duty}`);
    });
    expect(await runDurableObjectAlarm(companyObject(companyId))).toBe(true);
  }
  const due = async (companyId: number, duty: string) =>
    (await inObject<{ value: number }>(companyId, "SELECT value FROM counters WHERE name = ?", `due:${duty}`))[0]
      ?.value ?? null;

  it("a found listing schedules the hourly removal step; the alarm moves it to in_progress and its events reach D1", async () => {
    const person = await newEmployee([ACME]);
    const before = Date.now();
    await consume([started(person, `alarm-${person}`), found(person, `alarm-${person}`)]);
    // Due at the next full hour (D1's cron pace), not before.
    const removalsAt = await due(ACME, "removals");
    expect(removalsAt).not.toBeNull();
    expect(removalsAt! % 3_600_000).toBe(0);
    expect(removalsAt!).toBeGreaterThan(before);
    expect(removalsAt! - before).toBeLessThanOrEqual(3_600_000);

    await runDuty(ACME, "removals");
    const [row] = await inObject<{ id: number; status: string }>(
      ACME,
      "SELECT id, status FROM exposures WHERE person_id = ?",
      person,
    );
    expect(row!.status).toBe("in_progress");
    // Nothing left pending: the step waits for the next exposure.
    expect(await due(ACME, "removals")).toBeNull();
    // The step's events were handed to the background queue at once; its consumer records them.
    await drainBackground({ kind: "company-events", companyId: ACME });
    expect(await eventsOf(person, ACME)).toEqual([
      "scan:started",
      "scan:found",
      "exposure:created",
      "exposure:requested",
      "request:created",
    ]);
    const listed = await call(`/companies/${ACME}/employees/exposures?employees=${person}&status=in_progress`, {
      token: DEMO.tokens.alice,
    });
    expect(listed.status).toBe(200);
    expect(((await listed.json()) as { id: number }[]).map((item) => item.id)).toEqual([row!.id]);
  });

  it("a run schedules scan retention a week on; the alarm prunes what is past its time and nothing else", async () => {
    const person = await newEmployee([ACME]);
    const now = Date.now();
    await consume([started(person, `keep-${person}`), found(person, `keep-${person}`)]);
    expect(await due(ACME, "scan-retention")).toBeGreaterThan(now + 6 * 86_400_000);
    // A scan of this person finished 8 days ago, and this run's scan (not finished): only the first goes.
    await runInDurableObject(companyObject(ACME), (_, state) => {
      state.storage.sql.exec(
        "INSERT INTO scans (id, person_id, status, started_at, completed_at, created_at, updated_at) VALUES (?, ?, 'completed', ?, ?, ?, ?)",
        `old-${person}`,
        person,
        now - 9 * 86_400_000,
        now - 8 * 86_400_000,
        now - 9 * 86_400_000,
        now - 8 * 86_400_000,
      );
    });
    await runDuty(ACME, "scan-retention");
    expect(
      (await inObject<{ id: string }>(ACME, "SELECT id FROM scans WHERE person_id = ? ORDER BY id", person)).map(
        (scan) => scan.id,
      ),
    ).toEqual([`keep-${person}`]);
    expect(await due(ACME, "scan-retention")).toBeGreaterThan(Date.now());
  });
});
