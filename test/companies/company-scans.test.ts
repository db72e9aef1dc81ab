import { env } from "cloudflare:workers";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { DAY_MS } from "../../src/lib/time";
import { removalStep } from "../../src/objects/company/removals";
import { pruneScanSide } from "../../src/objects/company/scan-retention";
import { countStatusChange } from "../../src/objects/company/exposures";
import { createDeps } from "../../src/services/create-deps";
import { FORGET_CHUNK, forgetInObjects } from "../../src/services/company-forgets";
import { purgeExpiredEphemeral } from "../../src/services/memberships";
import { createEmployee } from "../../src/routes/employees/employees.routes";
import { addMember } from "../../src/routes/admin/admin.routes";
import { answer, as, call, countRows, drainBackground, employeeBody, fresh, insertToken } from "../helpers";
import {
  companyObject,
  countInCompanyObject,
  inCompanyDb,
  inCompanyObject,
  objectExposureId,
  scansInObject,
  seedCompanyScans,
} from "../support/company-scans";

// The scan side of a company in its own object (docs/architecture.md, "The Company object"): the
// removal step, retention and forgetting, run on the object's tables as a scan run leaves them
// (seeded: the write path is the consumer's). Globex (company 2) is the company here; its objects'
// exposure ids are its own (`objectExposureId`).

const GLOBEX = 2;
const CAROL = 3;
const LIST = "/companies/2/employees/exposures";
const t0 = Date.parse("2026-03-01T00:00:00Z");
const hour = 3600_000;

const site3 = { id: 3, name: "PeopleFinder", slug: "peoplefinder", logo: "", url: "https://peoplefinder.example" };
const site4 = { id: 4, name: "SpyDirectory", slug: "spydirectory", logo: "", url: "https://spydirectory.example" };

afterEach(() => vi.restoreAllMocks());

const ADMIN = "pk_test_company_scans_admin";
beforeAll(async () => {
  await insertToken(ADMIN, { serviceName: "operator", scopes: ["platform:admin"] });
});

describe("the removal step in the company's object", () => {
  const ids = [1, 2, 3].map((n) => objectExposureId(GLOBEX, 100 + n));

  beforeAll(async () => {
    await seedCompanyScans(GLOBEX, {
      exposures: ids.map((id, i) => ({
        id,
        personId: CAROL,
        siteId: i === 1 ? 4 : 3,
        status: "pending" as const,
        url: `https://example.test/${i}`,
        data: { name: "Carol" },
        createdAt: t0 + i * hour,
        // The second changed last: it goes last.
        updatedAt: t0 + (i === 1 ? 10 : i) * hour,
      })),
    });
  });

  it("moves the oldest pending first, a chunk per call, with history, events and counts in one transaction", async () => {
    const now = new Date(t0 + 24 * hour);
    const first = await inCompanyDb(GLOBEX, (db) => removalStep(db, now, 2));
    expect(first).toEqual({ moved: 2, more: true });
    const moved = await inCompanyObject<{ id: number; status: string; requested_at: number }>(
      GLOBEX,
      "SELECT id, status, requested_at FROM exposures WHERE id IN (?, ?, ?) ORDER BY id",
      ...ids,
    );
    expect(moved).toEqual([
      { id: ids[0], status: "in_progress", requested_at: now.getTime() },
      { id: ids[1], status: "pending", requested_at: null },
      { id: ids[2], status: "in_progress", requested_at: now.getTime() },
    ]);
    const history = await (await as("carol").get(`${LIST}/${ids[0]}/history`)).json();
    expect(history).toEqual([
      { event: "Removal requested from PeopleFinder", company: site3, when: now.toISOString() },
    ]);
    // The events of D1's step, with the exposure as moved for their payload.
    const events = await inCompanyObject<{ event: string; payload: string }>(
      GLOBEX,
      "SELECT event, payload FROM events ORDER BY seq",
    );
    const payload = (n: 0 | 2) => ({
      id: ids[n],
      employee_id: CAROL,
      status: "in_progress",
      site: site3,
      url: `https://example.test/${n}`,
      data: { name: "Carol" },
      created_at: new Date(t0 + n * hour).toISOString(),
      updated_at: now.toISOString(),
    });
    expect(events.map((row) => ({ event: row.event, payload: JSON.parse(row.payload) as unknown }))).toEqual([
      { event: "exposure:requested", payload: payload(0) },
      { event: "request:created", payload: payload(0) },
      { event: "exposure:requested", payload: payload(2) },
      { event: "request:created", payload: payload(2) },
    ]);
    // The page's totals follow the counters the step keeps.
    const pending = await as("carol").get(`${LIST}?status=pending`);
    expect(pending.headers.get("X-Total-Count")).toBe("1");
    const inProgress = await as("carol").get(`${LIST}?status=in_progress`);
    expect(inProgress.headers.get("X-Total-Count")).toBe("2");

    const second = await inCompanyDb(GLOBEX, (db) => removalStep(db, new Date(now.getTime() + hour), 2));
    expect(second).toEqual({ moved: 1, more: false });
    expect(await inCompanyDb(GLOBEX, (db) => removalStep(db, new Date(now.getTime() + 2 * hour), 2))).toEqual({
      moved: 0,
      more: false,
    });
    expect(await countInCompanyObject(GLOBEX, "SELECT count(*) AS n FROM events")).toBe(6);
    const last = await (await as("carol").get(`${LIST}/${ids[1]}/history`)).json();
    expect(last).toEqual([
      {
        event: "Removal requested from SpyDirectory",
        company: site4,
        when: new Date(now.getTime() + hour).toISOString(),
      },
    ]);
  });
});

describe("scan retention in the company's object", () => {
  it("finished scans 7 days, superseded results 7 days, closed exposures 365 days with their history", async () => {
    const companyId = 900; // an object of its own: no D1 row is read
    const now = t0 + 400 * DAY_MS;
    const ago = (days: number) => now - days * DAY_MS;
    const closedOld = objectExposureId(companyId, 1);
    const closedYoung = objectExposureId(companyId, 2);
    const open = objectExposureId(companyId, 3);
    await seedCompanyScans(companyId, {
      scans: [
        { id: "old", personId: 7, completedAt: ago(8), createdAt: ago(9) },
        { id: "young", personId: 7, completedAt: ago(6), createdAt: ago(6) },
        { id: "unfinished", personId: 7, completedAt: null, createdAt: ago(30) },
      ],
      results: [
        { scanId: "a", personId: 7, siteId: 3, outcome: "failed", at: ago(90) }, // superseded: goes
        { scanId: "b", personId: 7, siteId: 3, outcome: "not_found", at: ago(60) }, // newest conclusive: stays
        { scanId: "c", personId: 7, siteId: 4, outcome: "not_found", at: ago(20) }, // superseded by d: goes
        { scanId: "d", personId: 7, siteId: 4, outcome: "found", at: ago(10) }, // goes once c went (next call)
        { scanId: "e", personId: 7, siteId: 5, outcome: "not_found", at: ago(3) }, // young: stays
      ],
      exposures: [
        { id: closedOld, personId: 7, siteId: 3, status: "closed", createdAt: ago(500), updatedAt: ago(366) },
        { id: closedYoung, personId: 7, siteId: 4, status: "closed", createdAt: ago(500), updatedAt: ago(364) },
        { id: open, personId: 7, siteId: 5, status: "pending", createdAt: ago(500), updatedAt: ago(500) },
      ],
      history: [closedOld, closedYoung, open].map((exposureId) => ({
        exposureId,
        siteId: 3,
        event: "Found on PeopleFinder",
        createdAt: ago(500),
      })),
    });
    const notFound = async () => (await companyObject(companyId).exposureCounts([7]))[0]!.notFound;
    const before = await notFound();

    const first = await inCompanyDb(companyId, (db) => pruneScanSide(db, now));
    expect(first.pruned).toEqual({ scans: 1, results: 2, exposures: 1 });
    expect(await notFound()).toBe(before);
    const second = await inCompanyDb(companyId, (db) => pruneScanSide(db, now));
    expect(second.pruned).toEqual({ scans: 0, results: 1, exposures: 0 });
    expect(await notFound()).toBe(before);

    expect(await inCompanyObject(companyId, "SELECT id FROM scans ORDER BY id")).toEqual([
      { id: "unfinished" },
      { id: "young" },
    ]);
    expect(await inCompanyObject(companyId, "SELECT scan_id FROM scan_results ORDER BY scan_id")).toEqual([
      { scan_id: "b" },
      { scan_id: "e" },
    ]);
    expect(await inCompanyObject(companyId, "SELECT id FROM exposures ORDER BY id")).toEqual([
      { id: closedYoung },
      { id: open },
    ]);
    expect(await countInCompanyObject(companyId, "SELECT count(*) AS n FROM exposure_history")).toBe(2);
    expect(
      await countInCompanyObject(companyId, "SELECT value AS n FROM counters WHERE name = 'exposures:closed'"),
    ).toBe(1);
    // Due again when the first kept row falls due: the young scan, a day from now.
    expect(second.next).toBe(ago(6) + 7 * DAY_MS);
  });

  it("a full chunk is due again at once", async () => {
    const companyId = 901;
    const now = t0 + 30 * DAY_MS;
    await seedCompanyScans(companyId, {
      scans: Array.from({ length: 3 }, (_, i) => ({
        id: `s${i}`,
        personId: 7,
        completedAt: now - 8 * DAY_MS,
        createdAt: now - 9 * DAY_MS,
      })),
    });
    expect((await inCompanyDb(companyId, (db) => pruneScanSide(db, now, 2))).next).toBe(now);
    const last = await inCompanyDb(companyId, (db) => pruneScanSide(db, now, 2));
    expect(last).toEqual({ pruned: { scans: 1, results: 0, exposures: 0 }, next: null });
  });
});

describe("forgetting people whose membership ended", () => {
  const seedPerson = async (personId: number, n: number, at = Date.now() - hour) =>
    seedCompanyScans(1, {
      exposures: [{ id: objectExposureId(1, n), personId, siteId: 3, status: "pending", createdAt: at, updatedAt: at }],
      history: [{ exposureId: objectExposureId(1, n), siteId: 3, event: "Found on PeopleFinder", createdAt: at }],
      results: [{ scanId: `scan-${n}`, personId, siteId: 3, outcome: "found", at }],
      scans: [{ id: `scan-${n}`, personId, completedAt: at, createdAt: at }],
    });
  const leftOf = async (personId: number) =>
    (
      await inCompanyObject<{ n: number }>(
        1,
        `SELECT (SELECT count(*) FROM exposures WHERE person_id = ?1) + (SELECT count(*) FROM scans WHERE person_id = ?1)
         + (SELECT count(*) FROM scan_results WHERE person_id = ?1) AS n`,
        personId,
      )
    )[0]!.n;
  const newEmployee = async () =>
    (
      await answer(
        await as("alice").send("POST", "/companies/1/employees", employeeBody(fresh("forget"))),
        200,
        createEmployee,
      )
    ).id;

  it("DELETE of an employee: the batch records it, the object forgets right after the commit", async () => {
    const person = await newEmployee();
    await seedPerson(person, 5001);
    expect(await leftOf(person)).toBe(3);
    const total = async () =>
      Number((await as("alice").get(`/companies/1/employees/exposures`)).headers.get("X-Total-Count"));
    const before = await total();
    expect((await as("alice").send("DELETE", `/companies/1/employees/${person}`)).status).toBe(204);
    expect(await leftOf(person)).toBe(0);
    expect(
      await countInCompanyObject(
        1,
        "SELECT count(*) AS n FROM exposure_history WHERE exposure_id = ?",
        objectExposureId(1, 5001),
      ),
    ).toBe(0);
    expect(await total()).toBe(before - 1); // the counters followed
    expect(await countRows("SELECT count(*) AS n FROM company_forgets")).toBe(0);
  });

  it("a row the commit's call left behind: the minute sweep forgets; what came after the removal stays", async () => {
    const person = await newEmployee();
    const removedAt = Date.now() - hour;
    await seedPerson(person, 5002, removedAt - hour);
    // As a removal whose call to the object failed leaves it (the membership itself is not the sweep's business).
    await env.DB.prepare("INSERT INTO company_forgets (company_id, person_id, due_at) VALUES (1, ?, ?)")
      .bind(person, removedAt)
      .run();
    // What a scan recorded after the removal (the person came back) is not forgotten.
    await seedPerson(person, 5003, removedAt + 1000);
    expect(await leftOf(person)).toBe(6);
    await drainBackground({ kind: "forget-people" });
    expect(await countRows("SELECT count(*) AS n FROM company_forgets")).toBe(0);
    expect(await leftOf(person)).toBe(3);
    expect(
      await countInCompanyObject(1, "SELECT count(*) AS n FROM exposures WHERE id = ?", objectExposureId(1, 5002)),
    ).toBe(0);
  });

  it("an object that does not answer after the commit: the row stays for the sweep (the ephemeral purge's removals too)", async () => {
    const person = await newEmployee();
    await seedPerson(person, 5004);
    await env.DB.prepare("UPDATE memberships SET ephemeral_until = ? WHERE company_id = 1 AND person_id = ?")
      .bind(Date.now() - hour, person)
      .run();
    const real = createDeps(env);
    const unavailable = {
      ...real,
      companyObjects: {
        of: (companyId: number) =>
          new Proxy(real.companyObjects.of(companyId), {
            get: (target, key) =>
              key === "forgetPeople"
                ? () => Promise.reject(new Error("object unavailable"))
                : (Reflect.get(target, key) as unknown),
          }),
      },
    };
    const errors = vi.spyOn(console, "error").mockImplementation(() => undefined);
    const { removed } = await purgeExpiredEphemeral(unavailable, new Date());
    expect(removed).toContainEqual({ companyId: 1, personId: person });
    expect(errors).toHaveBeenCalled();
    expect(await countRows("SELECT count(*) AS n FROM company_forgets WHERE person_id = ?", person)).toBe(1);
    expect(await leftOf(person)).toBe(3);
    expect(await forgetInObjects(real)).toEqual({ forgotten: 1, more: false });
    expect(await countRows("SELECT count(*) AS n FROM company_forgets")).toBe(0);
    expect(await leftOf(person)).toBe(0);
  });

  it("a full chunk of objects that do not answer holds up no other company's forgetting", async () => {
    const person = await newEmployee();
    const removedAt = Date.now() - hour;
    await seedPerson(person, 5005, removedAt - hour);
    // 100 rows of companies whose objects fail, each removed earlier than the row of Acme's object.
    const failing = Array.from({ length: FORGET_CHUNK }, (_, k) => 7000 + k);
    await env.DB.batch([
      ...failing.map((companyId) =>
        env.DB.prepare("INSERT INTO company_forgets (company_id, person_id, due_at) VALUES (?, 1, ?)").bind(
          companyId,
          removedAt - 2 * hour,
        ),
      ),
      env.DB.prepare("INSERT INTO company_forgets (company_id, person_id, due_at) VALUES (1, ?, ?)").bind(
        person,
        removedAt,
      ),
    ]);
    const real = createDeps(env);
    const partly = {
      ...real,
      companyObjects: {
        of: (companyId: number) =>
          companyId >= 7000
            ? { forgetPeople: () => Promise.reject(new Error("object unavailable")) }
            : real.companyObjects.of(companyId),
      },
    } as unknown as typeof real;
    vi.spyOn(console, "error").mockImplementation(() => undefined);
    try {
      await sweepsPastFailures(partly, person);
    } finally {
      await env.DB.prepare("DELETE FROM company_forgets WHERE company_id >= 7000").run();
    }
  });

  async function sweepsPastFailures(partly: ReturnType<typeof createDeps>, person: number) {
    const now = new Date();
    // The first chunk is the 100 failing rows: they wait a minute; another chunk is worth taking.
    expect(await forgetInObjects(partly, undefined, now)).toEqual({ forgotten: 0, more: true });
    expect(await forgetInObjects(partly, undefined, now)).toEqual({ forgotten: 1, more: false });
    expect(await leftOf(person)).toBe(0);
    const waiting = await env.DB.prepare(
      "SELECT min(retry_at) AS first, max(retry_at) AS last, max(attempts) AS attempts, count(*) AS n FROM company_forgets",
    ).first<{ first: number; last: number; attempts: number; n: number }>();
    expect(waiting).toEqual({ first: now.getTime() + 60_000, last: now.getTime() + 60_000, attempts: 1, n: 100 });
    // A minute on they are tried again, and wait twice as long after another failure.
    const later = new Date(now.getTime() + 60_000);
    expect(await forgetInObjects(partly, undefined, later)).toEqual({ forgotten: 0, more: true });
    expect(
      await countRows("SELECT count(*) AS n FROM company_forgets WHERE retry_at = ?", later.getTime() + 120_000),
    ).toBe(100);
  }

  it("a person who comes back before the sweep: what the object held from before goes at once", async () => {
    const email = `${fresh("return")}@acme.example`;
    const person = (
      await answer(
        await as("alice").send("POST", "/companies/1/employees", employeeBody(email.split("@")[0]!)),
        200,
        createEmployee,
      )
    ).id;
    const removedAt = Date.now() - hour;
    await seedPerson(person, 5006, removedAt - hour);
    // Their removal's call to the object failed: the row waits for the sweep.
    await env.DB.batch([
      env.DB.prepare("DELETE FROM memberships WHERE company_id = 1 AND person_id = ?").bind(person),
      env.DB.prepare("INSERT INTO company_forgets (company_id, person_id, due_at) VALUES (1, ?, ?)").bind(
        person,
        removedAt,
      ),
    ]);
    try {
      const response = await call("/internal/companies/1/members", {
        method: "POST",
        token: ADMIN,
        body: { first_name: "Dana", last_name: "Scully", email, roles: ["Viewer"] },
      });
      expect((await answer(response, 201, addMember)).person_id).toBe(person);
      expect(await leftOf(person)).toBe(0);
      expect(await countRows("SELECT count(*) AS n FROM company_forgets WHERE person_id = ?", person)).toBe(0);
    } finally {
      await env.DB.prepare("DELETE FROM company_forgets WHERE person_id = ?").bind(person).run();
    }
  });

  it("a company whose scan side is in D1 records nothing to forget", async () => {
    await scansInObject(1, false);
    try {
      const person = await newEmployee();
      expect((await as("alice").send("DELETE", `/companies/1/employees/${person}`)).status).toBe(204);
      expect(await countRows("SELECT count(*) AS n FROM company_forgets")).toBe(0);
    } finally {
      await scansInObject(1, true);
    }
  });

  it("the sweep with nothing due does nothing", async () => {
    expect(await forgetInObjects(createDeps(env))).toEqual({ forgotten: 0, more: false });
  });
});

describe("the per-status counters", () => {
  it("follow creations, moves and deletions", async () => {
    const companyId = 902;
    const value = (status: string) =>
      inCompanyObject<{ value: number }>(companyId, "SELECT value FROM counters WHERE name = ?", `exposures:${status}`);
    await inCompanyDb(companyId, (db) => {
      countStatusChange(db, null, "pending", 3);
      countStatusChange(db, "pending", "in_progress");
      countStatusChange(db, "in_progress", "closed");
      countStatusChange(db, "closed", null);
      countStatusChange(db, "pending", "pending");
    });
    expect([await value("pending"), await value("in_progress"), await value("closed")]).toEqual([
      [{ value: 2 }],
      [{ value: 0 }],
      [{ value: 0 }],
    ]);
  });
});
