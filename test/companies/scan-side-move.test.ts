import { createExecutionContext, createMessageBatch, getQueueResult, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import worker from "../../src/index";
import { companyOfExposure } from "../../src/domain/company-scans";
import type { BackgroundMessage } from "../../src/domain/queue-messages";
import { ScanEventBatch } from "../../src/domain/scan-events";
import { companyMoveStatus, startCompanyMoves } from "../../src/routes/admin/moves.routes";
import { exposureHistory, getEmployee, listExposures } from "../../src/routes/employees/employees.routes";
import { createDeps } from "../../src/services/create-deps";
import { applyScanEvents } from "../../src/services/scans";
import { answer, as, call, DEMO, drainBackground, insertToken } from "../helpers";
import { companyObject, insertEmployee, scansInObject } from "../support/company-scans";

/*
 * The operator's move of an older company's scan side from D1 into its object
 * (services/company-scan-moves.ts; `POST /internal/company-data/move`): a company made D1-served
 * (`scans_in_object = 0`, as every company older than migration 0032) is given exposures through
 * scan events, so its rows are in D1; after the move it answers the same from its object.
 */

const ACME = DEMO.companies.acme;
const GLOBEX = DEMO.companies.globex;
const ADMIN = "pk_test_scan_side_move_admin";
const RECEIVER = "https://receiver.scan-move.test/";
const admin = (method: string) => call("/internal/company-data/move", { method, token: ADMIN });

let nextPerson = 2600;
const newEmployee = (companies: number[]) => insertEmployee(nextPerson++, companies, "Moved");

async function servedFromD1(...companyIds: number[]) {
  for (const id of companyIds) await scansInObject(id, false);
}

/** Applies scan events as the `scan-events` consumer does. */
const apply = (body: unknown[]) => applyScanEvents(createDeps(env), ScanEventBatch.parse(body));

const at = (minute: number) => `2026-04-01T10:${String(minute).padStart(2, "0")}:00Z`;
const started = (person: number, scan: string) => ({ type: "started", scan_id: scan, person_id: person, at: at(0) });
const completed = (person: number, scan: string) => ({
  type: "completed",
  scan_id: scan,
  person_id: person,
  at: at(9),
});
const result = (type: string, person: number, scan: string, site: number, url?: string) => ({
  type,
  scan_id: scan,
  person_id: person,
  site_id: site,
  ...(url ? { url, data: { name: "Moved Subject", site } } : {}),
  at: at(site),
});
const confirmed = (exposureId: number) => ({ type: "removal_confirmed", exposure_id: exposureId, at: at(30) });

/** D1's scan rows of these people (scans, results, exposures, history). */
async function d1Rows(...people: number[]) {
  const list = JSON.stringify(people);
  const row = await env.DB.prepare(
    `SELECT (SELECT count(*) FROM scans WHERE person_id IN (SELECT value FROM json_each(?1)))
          + (SELECT count(*) FROM scan_results WHERE person_id IN (SELECT value FROM json_each(?1)))
          + (SELECT count(*) FROM exposures WHERE person_id IN (SELECT value FROM json_each(?1)))
          + (SELECT count(*) FROM exposure_history WHERE exposure_id IN
               (SELECT id FROM exposures WHERE person_id IN (SELECT value FROM json_each(?1)))) AS n`,
  )
    .bind(list)
    .first<{ n: number }>();
  return row!.n;
}

/** A company's exposures page as its admin reads it (closed ones too, unless `status` says), with its total. */
async function page(companyId: number, query: string) {
  const who = companyId === ACME ? "alice" : "carol";
  const all = query.includes("status=") ? "" : "exposed=false&";
  const response = await as(who).get(`/companies/${companyId}/employees/exposures?per_page=100&${all}${query}`);
  return { total: response.headers.get("X-Total-Count"), items: await answer(response, 200, listExposures) };
}

/** What the company shows of these people: their exposures (each with its history) and each Person. */
async function shown(companyId: number, people: number[]) {
  const who = companyId === ACME ? "alice" : "carol";
  const exposures = await page(companyId, `employees=${people.join(",")}`);
  const histories = [];
  for (const item of exposures.items) {
    const response = await as(who).get(`/companies/${companyId}/employees/exposures/${item.id}/history`);
    histories.push(await answer(response, 200, exposureHistory));
  }
  const persons = [];
  for (const person of people) {
    const response = await as(who).get(`/companies/${companyId}/employees/${person}`);
    persons.push(await answer(response, 200, getEmployee));
  }
  return { exposures, histories, persons };
}

/** Runs one background message as the queue does; returns the messages it sent. */
async function runOne(body: BackgroundMessage): Promise<BackgroundMessage[]> {
  const sent: BackgroundMessage[] = [];
  vi.spyOn(env.BACKGROUND_QUEUE, "send").mockImplementation((async (next: BackgroundMessage) => {
    sent.push(next);
  }) as never);
  const batch = createMessageBatch("background", [{ id: "move", timestamp: new Date(), attempts: 1, body }]);
  const ctx = createExecutionContext();
  await worker.queue!(batch, env, ctx);
  expect((await getQueueResult(batch, ctx)).explicitAcks).toHaveLength(1);
  vi.restoreAllMocks();
  return sent;
}

type MoveMessage = Extract<BackgroundMessage, { kind: "move-company-scans" }>;
const isMove = (body: BackgroundMessage): body is MoveMessage => body.kind === "move-company-scans";

/** The operator starts the move: where it stood, and the scan-side message it sent (if any). */
async function start() {
  const sent: BackgroundMessage[] = [];
  vi.spyOn(env.BACKGROUND_QUEUE, "send").mockImplementation((async (body: BackgroundMessage) => {
    sent.push(body);
  }) as never);
  const status = await answer(await admin("POST"), 202, startCompanyMoves);
  vi.restoreAllMocks();
  return { status, moves: sent.filter(isMove) };
}

/** Starts the move and runs its chain to the end. */
async function moveAll() {
  const { moves } = await start();
  for (const first of moves) await drainBackground(first);
  vi.restoreAllMocks();
}

const status = async () => answer(await admin("GET"), 200, companyMoveStatus);

beforeAll(async () => {
  await insertToken(ADMIN, { serviceName: "operator", scopes: ["platform:admin"] });
  for (const event of ["exposure:closed", "request:closed"]) {
    const response = await as("alice").send("POST", `/companies/${ACME}/webhooks`, { endpoint: RECEIVER, event });
    expect(response.status).toBe(201);
  }
});
afterEach(() => vi.restoreAllMocks());

describe("the move of an older company's scan side into its object", () => {
  it("answers the same exposures page, history and Person counts from the object; D1 keeps none; a second run is a no-op", async () => {
    await servedFromD1(ACME);
    const [one, two] = [await newEmployee([ACME]), await newEmployee([ACME])];
    expect(
      await apply([
        started(one, `s-${one}`),
        result("found", one, `s-${one}`, 3, "https://peoplefinder.example/one"),
        result("found", one, `s-${one}`, 4, "https://spydirectory.example/one"),
        result("not_found", one, `s-${one}`, 5),
        completed(one, `s-${one}`),
        started(two, `s-${two}`),
        result("found", two, `s-${two}`, 3, "https://peoplefinder.example/two"),
      ]),
    ).toContain("found: exposure created");
    // D1's removal step requests them all; a site confirms one; a later scan finds a new listing (pending).
    await drainBackground({ kind: "removals" });
    const requested = await page(ACME, `employees=${one}&status=in_progress`);
    expect(requested.items.length).toBe(2);
    expect(await apply([confirmed(requested.items[0]!.id)])).toEqual(["closed"]);
    await apply([result("found", two, `s2-${two}`, 4, "https://spydirectory.example/two")]);
    expect(await d1Rows(one, two)).toBeGreaterThan(0);

    const before = {
      all: await page(ACME, ""),
      pending: await page(ACME, "status=pending"),
      ...(await shown(ACME, [one, two])),
    };
    expect(before.exposures.items.map((item) => item.status).sort()).toEqual([
      "closed",
      "in_progress",
      "in_progress",
      "pending",
    ]);
    const { status: started_ } = await start();
    expect(started_.scan_side_in_d1).toBeGreaterThanOrEqual(1);
    await moveAll();

    expect(await status()).toMatchObject({ scan_side_in_d1: 0 });
    const after = {
      all: await page(ACME, ""),
      pending: await page(ACME, "status=pending"),
      ...(await shown(ACME, [one, two])),
    };
    expect(after).toEqual(before);
    expect(await d1Rows(one, two)).toBe(0);
    // Served from the object: its ids are D1's, kept.
    const inObject = await runInDurableObject(companyObject(ACME), (_, state) =>
      state.storage.sql.exec("SELECT id FROM exposures WHERE person_id IN (?, ?) ORDER BY id", one, two).toArray(),
    );
    expect(inObject.map((row) => row.id)).toEqual(before.exposures.items.map((item) => item.id).sort((a, b) => a - b));

    // A second run finds nothing and sends nothing.
    const again = await start();
    expect(again.status.scan_side_in_d1).toBe(0);
    expect(again.moves).toEqual([]);
    expect(await shown(ACME, [one, two])).toEqual({
      exposures: before.exposures,
      histories: before.histories,
      persons: before.persons,
    });
  });

  it("interrupted after its first message and started again, it finishes right; a member who left meanwhile is forgotten", async () => {
    await servedFromD1(ACME);
    const [person, leaver] = [await newEmployee([ACME]), await newEmployee([ACME])];
    await apply([
      started(person, `r-${person}`),
      result("found", person, `r-${person}`, 3, "https://peoplefinder.example/r"),
      result("found", leaver, `l-${leaver}`, 3, "https://peoplefinder.example/l"),
    ]);
    const before = await shown(ACME, [person]);
    const { moves } = await start();
    expect(moves).toHaveLength(1);
    // Only the first message runs (the copy, then the flip); what it sent is lost.
    expect(await runOne(moves[0]!)).toHaveLength(1);
    expect((await status()).scan_side_in_d1).toBe(1);
    // A membership ended with no forget due (as one that ended before the flip): the move forgets it.
    await env.DB.prepare("DELETE FROM memberships WHERE company_id = ? AND person_id = ?").bind(ACME, leaver).run();
    await moveAll();
    expect(await status()).toMatchObject({ scan_side_in_d1: 0 });
    expect(await shown(ACME, [person])).toEqual(before);
    expect(await d1Rows(person)).toBe(0);
    const held = await runInDurableObject(companyObject(ACME), (_, state) =>
      state.storage.sql.exec("SELECT count(*) AS n FROM exposures WHERE person_id = ?", leaver).one(),
    );
    expect(held.n).toBe(0);
  });

  it("a removal_confirmed of a moved exposure's D1 id closes it in the object, and its events are recorded", async () => {
    await servedFromD1(ACME);
    const person = await newEmployee([ACME]);
    await apply([
      started(person, `c-${person}`),
      result("found", person, `c-${person}`, 4, "https://spydirectory.example/c"),
    ]);
    await drainBackground({ kind: "removals" });
    const [exposure] = (await page(ACME, `employees=${person}`)).items;
    expect(exposure!.status).toBe("in_progress");
    expect(companyOfExposure(exposure!.id)).toBeNull();
    await moveAll();
    expect(await d1Rows(person)).toBe(0);

    // The intake knows the id (the object holds it), and the consumer closes it there.
    const body = [confirmed(exposure!.id)];
    expect((await call("/internal/scan-events", { method: "POST", body, token: DEMO.tokens.scanner })).status).toBe(
      202,
    );
    expect(await apply(body)).toEqual(["closed"]);
    expect(await apply(body)).toEqual(["unchanged"]);
    const [closed] = (await page(ACME, `employees=${person}`)).items;
    expect(closed).toMatchObject({ id: exposure!.id, status: "closed" });
    const { results } = await env.DB.prepare(
      "SELECT event FROM webhook_deliveries WHERE company_id = ? AND json_extract(payload, '$.id') = ? ORDER BY rowid",
    )
      .bind(ACME, exposure!.id)
      .all<{ event: string }>();
    expect(results.map((row) => row.event)).toEqual(expect.arrayContaining(["exposure:closed", "request:closed"]));
  });

  it("a member who also belongs to a company still served from D1 keeps their D1 rows until that one moves", async () => {
    await servedFromD1(ACME, GLOBEX);
    const [both, acmeOnly] = [await newEmployee([ACME, GLOBEX]), await newEmployee([ACME])];
    await apply([
      result("found", both, `b-${both}`, 3, "https://peoplefinder.example/both"),
      result("found", acmeOnly, `a-${acmeOnly}`, 3, "https://peoplefinder.example/acme"),
    ]);
    const before = await shown(ACME, [both, acmeOnly]);
    // Acme's move runs to its end; Globex's is not started.
    let queue = (await start()).moves;
    while (queue.length > 0 && queue[0]!.companyId !== GLOBEX) queue = (await runOne(queue.shift()!)).filter(isMove);
    expect(queue).toMatchObject([{ companyId: GLOBEX, stage: "copy" }]);
    expect(await shown(ACME, [both, acmeOnly])).toEqual(before);
    expect(await d1Rows(acmeOnly)).toBe(0);
    expect(await d1Rows(both)).toBeGreaterThan(0);
    expect((await page(GLOBEX, `employees=${both}`)).items).toHaveLength(1);
    // Then Globex moves too: the shared member's D1 rows go.
    await moveAll();
    expect(await d1Rows(both)).toBe(0);
    expect((await page(GLOBEX, `employees=${both}`)).items).toHaveLength(1);
  });

  it("after the flip, new scan events of its members go to its object", async () => {
    await servedFromD1(ACME);
    const person = await newEmployee([ACME]);
    await apply([result("found", person, `n-${person}`, 3, "https://peoplefinder.example/n1")]);
    await moveAll();
    await apply([result("found", person, `n2-${person}`, 4, "https://spydirectory.example/n2")]);
    const ids = (await page(ACME, `employees=${person}`)).items.map((item) => companyOfExposure(item.id));
    expect(ids).toEqual([null, ACME]);
    expect(await d1Rows(person)).toBe(0);
  });

  it("a company deleted while its move is under way is skipped", async () => {
    const { results } = await env.DB.prepare(
      "INSERT INTO companies (kind, name, slug, scans_in_object, created_at, updated_at) VALUES ('employer', 'Gone', ?, 0, 0, 0) RETURNING id",
    )
      .bind(`gone-${Date.now()}`)
      .all<{ id: number }>();
    const gone = results[0]!.id;
    const { moves } = await start();
    expect(moves).toMatchObject([{ companyId: gone }]);
    await env.DB.prepare("DELETE FROM companies WHERE id = ?").bind(gone).run();
    expect(await runOne(moves[0]!)).toEqual([]);
    expect(await status()).toMatchObject({ scan_side_in_d1: 0 });
  });
});
