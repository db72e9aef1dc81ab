import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import type { ScanSideChunk } from "../../src/domain/company-scans";
import { EVENT_NAMES } from "../../src/domain/events";
import type { BackgroundMessage } from "../../src/domain/queue-messages";
import { ScanEventBatch } from "../../src/domain/scan-events";
import { forwardCompanyEvents } from "../../src/services/company-events";
import { MOVE_MEMBERS_CHUNK, moveCompanyScansChunk } from "../../src/services/company-scan-moves";
import { applyInObjects, homesOf } from "../../src/services/company-scans";
import { createDeps } from "../../src/services/create-deps";
import { submitRemovalRequests } from "../../src/services/exposures";
import { purgeExpiredEphemeral } from "../../src/services/memberships";
import { applyScanEvents } from "../../src/services/scans";
import { as, DEMO } from "../helpers";
import {
  companyObject,
  DEMO_SITE_ROWS,
  insertEmployee,
  meanwhileInCompanyObjects,
  scansInObject,
} from "../support/company-scans";

/*
 * What happens when the scan side's writers meet (docs/architecture.md, "The Company object"): the
 * object's alarm and a scan run, a membership that ends while a run or a chunk of the move is on
 * its way, and the move's window in which D1 still acts on what it gave the object.
 */

const ACME = DEMO.companies.acme;
const RECEIVER = "https://receiver.races.test/acme";
const PEOPLE_FINDER = DEMO_SITE_ROWS[0]!;

let nextPerson = 7100;
const newEmployee = () => insertEmployee(nextPerson++, [ACME], "Race");
const apply = (body: unknown[]) => applyScanEvents(createDeps(env), ScanEventBatch.parse(body));
const found = (person: number, scan: string, url = `https://peoplefinder.example/p/${scan}`) => ({
  type: "found",
  scan_id: scan,
  person_id: person,
  site_id: PEOPLE_FINDER.id,
  url,
  data: { name: "Race Subject" },
  at: "2026-04-01T10:01:00Z",
});

const inObject = <T>(query: string, ...params: SqlStorageValue[]) =>
  runInDurableObject(companyObject(ACME), (_, state) => state.storage.sql.exec(query, ...params).toArray()) as Promise<
    T[]
  >;
const removalsDue = async () =>
  (await inObject<{ value: number }>("SELECT value FROM counters WHERE name = 'due:removals'"))[0]?.value ?? null;
const makeRemovalsDue = () =>
  runInDurableObject(companyObject(ACME), (_, state) => {
    state.storage.sql.exec(
      "INSERT INTO counters (name, value) VALUES ('due:removals', ?1) ON CONFLICT (name) DO UPDATE SET value = ?1",
      Date.now() - 1000,
    );
  });

/** D1's webhook deliveries of Acme about a person (`person_id` or `employee_id`), in the order written. */
async function acmeEventsAbout(personId: number, event?: string) {
  const { results } = await env.DB.prepare(
    `SELECT event FROM webhook_deliveries WHERE company_id = ?1
       AND (json_extract(payload, '$.person_id') = ?2 OR json_extract(payload, '$.employee_id') = ?2)
       AND (?3 IS NULL OR event = ?3) ORDER BY rowid`,
  )
    .bind(ACME, personId, event ?? null)
    .all<{ event: string }>();
  return results.map((row) => row.event);
}

/** D1's exposure of a person as the move's copy chunk carries it. */
async function chunkOf(personId: number): Promise<ScanSideChunk> {
  const row = (await env.DB.prepare("SELECT * FROM exposures WHERE person_id = ?")
    .bind(personId)
    .first<{ id: number; site_id: number; status: "pending"; url: string; data: string; created_at: number }>())!;
  return {
    scans: [],
    results: [],
    exposures: [
      {
        id: row.id,
        personId,
        siteId: row.site_id,
        status: row.status,
        url: row.url,
        data: row.data,
        requestedAt: null,
        closedAt: null,
        createdAt: new Date(row.created_at),
        updatedAt: new Date(row.created_at),
      },
    ],
    history: [],
    sites: [PEOPLE_FINDER],
  };
}

/**
 * Makes the company object's own `BACKGROUND_QUEUE.send` run `send` instead (what the object's
 * alarm sends while a test holds it); returns the undo.
 */
function withQueueSend(instance: unknown, send: () => Promise<void>): () => void {
  const object = instance as { env: Env };
  const realEnv = object.env;
  object.env = new Proxy(realEnv, {
    get: (target, key) => (key === "BACKGROUND_QUEUE" ? { send } : (Reflect.get(target, key) as unknown)),
  });
  return () => {
    object.env = realEnv;
  };
}

beforeAll(async () => {
  for (const event of EVENT_NAMES) {
    const response = await as("alice").send("POST", `/companies/${ACME}/webhooks`, { endpoint: RECEIVER, event });
    expect(response.status).toBe(201);
  }
});
afterEach(() => vi.restoreAllMocks());

describe("the object's alarm meets a scan run", () => {
  it("an exposure opened while the removal step waits on its queue send keeps the step scheduled", async () => {
    const first = await newEmployee();
    const second = await newEmployee();
    await apply([found(first, `alarm-a-${first}`)]);
    await makeRemovalsDue();
    const after = await runInDurableObject(companyObject(ACME), async (instance, state) => {
      let release!: () => void;
      const gate = new Promise<void>((resolve) => (release = resolve));
      let sending!: () => void;
      const sendStarted = new Promise<void>((resolve) => (sending = resolve));
      const restore = withQueueSend(instance, async () => {
        sending();
        await gate;
      });
      try {
        const alarm = instance.alarm();
        await sendStarted;
        // A run of the company lands while the removal step waits on its send.
        await instance.applyScanRun(ACME, [{ ...found(second, `alarm-b-${second}`), at: new Date() }] as never, [
          PEOPLE_FINDER,
        ]);
        release();
        await alarm;
      } finally {
        restore();
      }
      return {
        pending: state.storage.sql.exec("SELECT person_id FROM exposures WHERE status = 'pending'").toArray(),
        due: state.storage.sql.exec("SELECT value FROM counters WHERE name = 'due:removals'").toArray(),
      };
    });
    expect(after.pending).toEqual([{ person_id: second }]);
    // The next hour's step is still scheduled for it.
    expect(after.due).toHaveLength(1);
    expect((after.due[0] as { value: number }).value).toBeGreaterThan(Date.now());
  });

  it("an exposure found while an earlier duty of the alarm waits is moved at a time after it was found", async () => {
    const [earlier, person] = [await newEmployee(), await newEmployee()];
    await apply([found(earlier, `before-${earlier}`)]);
    await forwardCompanyEvents(createDeps(env), ACME); // the outbox empty: the event below is the oldest
    const [row] = await runInDurableObject(companyObject(ACME), async (instance, state) => {
      const object = instance as unknown as { env: Env; sawOldest: number | null };
      object.sawOldest = null; // as an object just woken: the events duty asks at its first look
      // An event waiting past its minute, so the events duty (before the removal step) sends a message.
      state.storage.sql.exec(
        "INSERT INTO events (event, payload, created_at) VALUES ('scan:found', '{}', ?)",
        Date.now() - 5 * 60_000,
      );
      for (const duty of ["events", "removals"])
        state.storage.sql.exec(
          "INSERT INTO counters (name, value) VALUES (?1, ?2) ON CONFLICT (name) DO UPDATE SET value = ?2",
          `due:${duty}`,
          Date.now() - 1000,
        );
      let landed = false;
      const restore = withQueueSend(instance, async () => {
        if (landed) return;
        landed = true;
        // While the events duty's send is on its way, time passes and a run of the company lands.
        await new Promise((resolve) => setTimeout(resolve, 20));
        await instance.applyScanRun(ACME, [{ ...found(person, `during-${person}`), at: new Date() }] as never, [
          PEOPLE_FINDER,
        ]);
      });
      try {
        await instance.alarm();
      } finally {
        restore();
        state.storage.sql.exec("DELETE FROM events WHERE payload = '{}'");
      }
      return state.storage.sql
        .exec<{ status: string; created_at: number; updated_at: number }>(
          "SELECT status, created_at, updated_at FROM exposures WHERE person_id = ?",
          person,
        )
        .toArray();
    });
    // The same alarm's removal step moved it, at its own time: never before the exposure was found.
    expect(row).toMatchObject({ status: "in_progress" });
    expect(row!.updated_at).toBeGreaterThanOrEqual(row!.created_at);
  });

  it("removal passes one right after another start one forwarding chain, not one each", async () => {
    const [first, second] = [await newEmployee(), await newEmployee()];
    const sent: BackgroundMessage[] = [];
    vi.spyOn(env.BACKGROUND_QUEUE, "send").mockImplementation((async (body: BackgroundMessage) => {
      sent.push(body);
    }) as never);
    await runInDurableObject(companyObject(ACME), async (instance) => {
      const object = instance as unknown as { alarm(): Promise<void>; askedAt: number | null };
      object.askedAt = null; // as an object just woken
      // A pass moves the first one; a listing found meanwhile is moved by the next pass, right after.
      await instance.applyScanRun(ACME, [{ ...found(first, `chain-${first}`), at: new Date() }] as never, [
        PEOPLE_FINDER,
      ]);
      await makeRemovalsDue();
      await object.alarm();
      await instance.applyScanRun(ACME, [{ ...found(second, `chain-${second}`), at: new Date() }] as never, [
        PEOPLE_FINDER,
      ]);
      await makeRemovalsDue();
      await object.alarm();
    });
    expect(sent.filter((body) => body.kind === "company-events")).toHaveLength(1);
    // The one chain records both passes' events.
    await forwardCompanyEvents(createDeps(env), ACME);
    for (const person of [first, second]) expect(await acmeEventsAbout(person, "request:created")).toHaveLength(1);
  });
});

describe("the events duty while a backlog is being forwarded", () => {
  it("asks for no second forwarding chain while the oldest waiting event moves; asks again once it stops", async () => {
    const sent: BackgroundMessage[] = [];
    vi.spyOn(env.BACKGROUND_QUEUE, "send").mockImplementation((async (body: BackgroundMessage) => {
      sent.push(body);
    }) as never);
    const asks = () => sent.filter((body) => body.kind === "company-events").length;
    await forwardCompanyEvents(createDeps(env), ACME); // nothing left from the tests before
    // The object knows its company once a scan run told it.
    const person = await newEmployee();
    await companyObject(ACME).applyScanRun(ACME, [{ ...found(person, `backlog-${person}`), at: new Date() }] as never, [
      PEOPLE_FINDER,
    ]);
    await forwardCompanyEvents(createDeps(env), ACME);
    sent.length = 0;
    await runInDurableObject(companyObject(ACME), async (instance, state) => {
      const object = instance as unknown as { alarm(): Promise<void>; sawOldest: number | null };
      object.sawOldest = null; // as an object just woken
      const old = Date.now() - 5 * 60_000;
      for (let i = 0; i < 3; i++)
        state.storage.sql.exec("INSERT INTO events (event, payload, created_at) VALUES ('scan:found', '{}', ?)", old);
      const eventsDue = () =>
        state.storage.sql.exec(
          "INSERT INTO counters (name, value) VALUES ('due:events', ?1) ON CONFLICT (name) DO UPDATE SET value = ?1",
          Date.now() - 1000,
        );
      eventsDue();
      await object.alarm(); // the first look: a backlog older than a minute, so it asks
      expect(asks()).toBe(1);
      // A chain takes the oldest event; at the next look the oldest moved: no second chain.
      const [first] = state.storage.sql.exec<{ seq: number }>("SELECT min(seq) AS seq FROM events").toArray();
      state.storage.sql.exec("DELETE FROM events WHERE seq = ?", first!.seq);
      eventsDue();
      await object.alarm();
      expect(asks()).toBe(1);
      // The chain stopped: the oldest stays where it was, and the next look asks again.
      eventsDue();
      await object.alarm();
      expect(asks()).toBe(2);
      state.storage.sql.exec("DELETE FROM events");
    });
  });
});

describe("a membership that ends while a change is on its way to the object", () => {
  it("a run read before the removal and landing after it: the object forgets it and the company hears nothing", async () => {
    const person = await newEmployee();
    // The consumer read the memberships ...
    const homes = homesOf([{ personId: person, companyId: ACME, inObject: true }]);
    // ... the employee is removed meanwhile (the object forgets right after that commit) ...
    expect((await as("alice").send("DELETE", `/companies/${ACME}/employees/${person}`)).status).toBe(204);
    // ... and then the consumer's call to the object lands.
    const run = ScanEventBatch.parse([found(person, `late-${person}`)]);
    await applyInObjects(createDeps(env), run as never, homes, new Map([[PEOPLE_FINDER.id, PEOPLE_FINDER]]));

    expect(await inObject("SELECT id FROM exposures WHERE person_id = ?", person)).toEqual([]);
    expect(await inObject("SELECT id FROM scan_results WHERE person_id = ?", person)).toEqual([]);
    expect(await acmeEventsAbout(person)).toEqual([]);
    const response = await as("alice").get(`/companies/${ACME}/employees/exposures?employees=${person}`);
    expect(response.headers.get("X-Total-Count")).toBe("0");
  });

  it("a run landing between the purge's time and its commit: the purge's forget reaches it", async () => {
    const person = await newEmployee();
    await env.DB.prepare("UPDATE memberships SET ephemeral_until = 1 WHERE company_id = ? AND person_id = ?")
      .bind(ACME, person)
      .run();
    // The hourly cron's time: its purge runs after the outbox sweep, some time later.
    const cronTime = new Date();
    await new Promise((resolve) => setTimeout(resolve, 20));
    // Meanwhile a run of the member lands; its own check after the call still finds a member.
    await apply([found(person, `purged-${person}`)]);
    expect(await inObject("SELECT id FROM exposures WHERE person_id = ?", person)).toHaveLength(1);

    const { removed } = await purgeExpiredEphemeral(createDeps(env), cronTime);
    expect(removed).toContainEqual({ companyId: ACME, personId: person });
    expect(await inObject("SELECT id FROM exposures WHERE person_id = ?", person)).toEqual([]);
    expect(await inObject("SELECT id FROM scan_results WHERE person_id = ?", person)).toEqual([]);
    const response = await as("alice").get(`/companies/${ACME}/employees/exposures?employees=${person}`);
    expect(response.headers.get("X-Total-Count")).toBe("0");
  });

  it("a chunk of the move read before the removal and landing after it: the person's rows go again", async () => {
    await scansInObject(ACME, false);
    const members: number[] = [];
    try {
      // A full chunk of members, so the chunk is not the move's last (which forgets former members anyway).
      for (let k = 0; k < MOVE_MEMBERS_CHUNK; k++) members.push(await newEmployee());
      const leaver = members[0]!;
      await apply([found(leaver, `moved-${leaver}`)]);
      // The copy is done and the company flipped: a chain is in its recopy.
      await scansInObject(ACME, true);
      await env.DB.prepare("INSERT INTO company_scan_moves (company_id, stage) VALUES (?, 'recopy')").bind(ACME).run();
      // The employee is removed after the chunk was read, before it lands.
      const deps = meanwhileInCompanyObjects(createDeps(env), "importScanSide", async (importIt) => {
        expect((await as("alice").send("DELETE", `/companies/${ACME}/employees/${leaver}`)).status).toBe(204);
        return importIt();
      });
      const chunk = await moveCompanyScansChunk(deps, {
        kind: "move-company-scans",
        companyId: ACME,
        stage: "recopy",
        afterPerson: leaver - 1,
      });
      expect(chunk.next).toMatchObject({ stage: "recopy" }); // not the last chunk
      expect(await inObject("SELECT id FROM exposures WHERE person_id = ?", leaver)).toEqual([]);
    } finally {
      await env.DB.prepare("DELETE FROM company_scan_moves WHERE company_id = ?").bind(ACME).run();
      await scansInObject(ACME, true);
    }
  });
});

describe("the move's window, while D1 may still act on what it gave the object", () => {
  it("a copy chunk schedules no removal step, the object's step leaves the carried-over exposures to D1, and one request is sent", async () => {
    await scansInObject(ACME, false);
    try {
      const person = await newEmployee();
      await apply([found(person, `copy-${person}`)]);
      const before = await removalsDue();
      await companyObject(ACME).importScanSide(ACME, await chunkOf(person));
      expect(await removalsDue()).toBe(before);

      // Even when the step runs in that window, it leaves the copy alone; D1's hourly step requests it once.
      vi.spyOn(env.BACKGROUND_QUEUE, "send").mockImplementation((async () => undefined) as never);
      await makeRemovalsDue();
      await runDurableObjectAlarm(companyObject(ACME));
      await forwardCompanyEvents(createDeps(env), ACME);
      await submitRemovalRequests(createDeps(env), new Date());
      expect(await acmeEventsAbout(person, "request:created")).toHaveLength(1);
      expect(await inObject("SELECT status FROM exposures WHERE person_id = ?", person)).toEqual([
        { status: "pending" },
      ]);

      // Once the move has finished, the object's next hourly step takes it.
      await companyObject(ACME).moveFinished();
      expect(await removalsDue()).toBeGreaterThan(Date.now());
    } finally {
      await scansInObject(ACME, true);
    }
  });

  it("a listing D1 found before the flip and the object again before the recopy is one exposure, D1's", async () => {
    await scansInObject(ACME, false);
    try {
      const person = await newEmployee();
      const url = `https://peoplefinder.example/p/twice-${person}`;
      await apply([found(person, `twice-a-${person}`, url)]);
      const d1 = await chunkOf(person);
      // The flip; the person's next scan finds the listing again before the recopy reaches them.
      await scansInObject(ACME, true);
      await apply([found(person, `twice-b-${person}`, url)]);
      expect(await inObject("SELECT id FROM exposures WHERE person_id = ?", person)).toHaveLength(1);
      await companyObject(ACME).importScanSide(ACME, d1);
      expect(await inObject("SELECT id, status FROM exposures WHERE person_id = ?", person)).toEqual([
        { id: d1.exposures[0]!.id, status: "pending" },
      ]);
      const response = await as("alice").get(`/companies/${ACME}/employees/exposures?employees=${person}`);
      expect(response.headers.get("X-Total-Count")).toBe("1");
    } finally {
      await scansInObject(ACME, true);
    }
  });
});

describe("the move started twice", () => {
  type MoveMessage = Extract<BackgroundMessage, { kind: "move-company-scans" }>;
  /** Runs a chain's messages of Acme until it leaves Acme or ends. */
  async function drainAcme(first: MoveMessage | undefined, deps = createDeps(env)) {
    let message = first;
    while (message && message.companyId === ACME)
      message = (await moveCompanyScansChunk(deps, message)).next as MoveMessage;
  }

  it("a second chain's late recopy chunk, landing after the first chain finished, leaves the object acting on every exposure", async () => {
    vi.spyOn(env.BACKGROUND_QUEUE, "send").mockImplementation((async () => undefined) as never);
    await scansInObject(ACME, false);
    const people: number[] = [];
    for (let k = 0; k <= MOVE_MEMBERS_CHUNK; k++) people.push(await newEmployee());
    const person = people[0]!;
    // A listing D1 found, still pending (D1's hourly step has not run).
    await apply([found(person, `rerun-${person}`)]);

    // Chain 1: the copy stage to its end (the flip).
    let message: MoveMessage | undefined = {
      kind: "move-company-scans",
      companyId: ACME,
      stage: "copy",
      afterPerson: 0,
    };
    while (message?.stage === "copy")
      message = (await moveCompanyScansChunk(createDeps(env), message)).next as MoveMessage;
    expect(message).toMatchObject({ stage: "recopy", afterPerson: 0 });
    const chain1 = message;
    // The operator starts the move again: chain 2 begins at the recorded stage. Its first recopy chunk is read,
    // and before it lands chain 1 finishes the whole move.
    const chain2: MoveMessage = { kind: "move-company-scans", companyId: ACME, stage: "recopy", afterPerson: 0 };
    const slow = meanwhileInCompanyObjects(createDeps(env), "importScanSide", async (importIt) => {
      await drainAcme(chain1);
      return importIt();
    });
    await drainAcme((await moveCompanyScansChunk(slow, chain2)).next as MoveMessage);
    const moves = await env.DB.prepare("SELECT count(*) AS n FROM company_scan_moves WHERE company_id = ?")
      .bind(ACME)
      .first<{ n: number }>();
    expect(moves!.n).toBe(0);

    // The object's next hourly step requests the carried-over exposure.
    await makeRemovalsDue();
    await runDurableObjectAlarm(companyObject(ACME));
    expect(await inObject("SELECT status FROM exposures WHERE person_id = ?", person)).toEqual([
      { status: "in_progress" },
    ]);
  });

  it("a listing found again by the object and requested before the recopy carries D1's copy over is requested once", async () => {
    vi.spyOn(env.BACKGROUND_QUEUE, "send").mockImplementation((async () => undefined) as never);
    await scansInObject(ACME, false);
    try {
      const person = await newEmployee();
      const url = `https://peoplefinder.example/p/requested-${person}`;
      // The person's copy chunk (nothing yet), then D1 finds the listing, then the flip.
      await companyObject(ACME).importScanSide(ACME, { scans: [], results: [], exposures: [], history: [], sites: [] });
      await apply([found(person, `requested-a-${person}`, url)]);
      const d1 = await chunkOf(person);
      await scansInObject(ACME, true);
      // A new scan finds the listing again: the object, without D1's copy, opens its own, and its hourly step
      // requests it before the recopy reaches the person.
      await apply([found(person, `requested-b-${person}`, url)]);
      await makeRemovalsDue();
      await runDurableObjectAlarm(companyObject(ACME));
      await forwardCompanyEvents(createDeps(env), ACME);
      const [own] = await inObject<{ id: number; status: string }>(
        "SELECT id, status FROM exposures WHERE person_id = ?",
        person,
      );
      expect(own).toMatchObject({ status: "in_progress" });

      // The recopy carries D1's pending copy; the move finishes; the object's next step.
      await companyObject(ACME).importScanSide(ACME, d1);
      await companyObject(ACME).moveFinished();
      await makeRemovalsDue();
      await runDurableObjectAlarm(companyObject(ACME));
      await forwardCompanyEvents(createDeps(env), ACME);
      expect(await acmeEventsAbout(person, "request:created")).toHaveLength(1);
      expect(await inObject("SELECT id, status FROM exposures WHERE person_id = ?", person)).toEqual([own]);
    } finally {
      await scansInObject(ACME, true);
    }
  });
});
