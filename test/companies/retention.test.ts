import {
  createExecutionContext,
  createMessageBatch,
  createScheduledController,
  getQueueResult,
  runDurableObjectAlarm,
  runInDurableObject,
  waitOnExecutionContext,
} from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { createDb } from "../../src/db/client";
import { pruneOlderThan } from "../../src/db/prune";
import { blockedCalls } from "../../src/db/schema";
import worker from "../../src/index";
import { createDeps } from "../../src/services/create-deps";
import { pruneExpired, RETENTION_RULE_COUNT, RETENTION_STATEMENTS_PER_RULE } from "../../src/services/retention";
import { createEmployee, getEmployee } from "../../src/routes/employees/employees.routes";
import { answer, as, employeeBody, fresh, inPersonObject, personObject } from "../helpers";
import { scansInObject } from "../support/company-scans";

/** Retention of docs/decisions.md on a controlled clock: rows are inserted with old timestamps, then the daily cron fires. */

const DAILY = "30 3 * * *";
const day = 24 * 3600_000;

async function fireDaily(scheduledTime: number) {
  const ctx = createExecutionContext();
  await worker.scheduled!(createScheduledController({ cron: DAILY, scheduledTime }), env, ctx);
  await waitOnExecutionContext(ctx);
}

/** A new employee of Acme (company 1), through the API. */
async function newPerson() {
  const response = await as("alice").send("POST", "/companies/1/employees", employeeBody(fresh("ret")));
  return (await answer(response, 200, createEmployee)).id;
}

async function employee(id: number) {
  const response = await as("alice").get(`/companies/1/employees/${id}`);
  return answer(response, 200, getEmployee);
}

async function ids(sql: string, ...params: unknown[]) {
  const { results } = await env.DB.prepare(sql)
    .bind(...params)
    .all<{ id: string | number }>();
  return results.map((row) => row.id);
}

/** Inserts `n` blocked calls of person 2 at `at`, tagged by caller id. */
function insertBlockedCalls(tag: string, at: number, n = 1) {
  return env.DB.prepare(
    `WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < ?3)
     INSERT INTO blocked_calls (person_id, caller_id, country_code, phone_number, created_at)
     SELECT 2, ?1, '1', '4155550123', ?2 FROM k`,
  )
    .bind(tag, at, n)
    .run();
}

describe("daily cron: blocked calls are kept 90 days", () => {
  it("prunes blocked calls older than 90 days and keeps younger ones", async () => {
    const now = Date.now();
    // Inserted newest first: pruning does not depend on insertion order.
    await insertBlockedCalls("bc-89d", now - 89 * day);
    await insertBlockedCalls("bc-91d", now - 91 * day);
    await insertBlockedCalls("bc-400d", now - 400 * day);

    await fireDaily(now);

    expect(await ids("SELECT caller_id AS id FROM blocked_calls WHERE caller_id LIKE 'bc-%'")).toEqual(["bc-89d"]);
  });
});

describe("daily cron: activity records are kept 365 days", () => {
  it("prunes chat and call records older than 365 days and keeps younger ones", async () => {
    const now = Date.now();
    const insert = (messageId: string, at: number, type = "chat_message") =>
      env.DB.prepare(
        `INSERT INTO activities (type, sendable_type, sendable_id, receivable_type, receivable_id, call_time, message, message_id, created_at)
         VALUES (?1, 'person', 1, 'person', 2, 0, 'hello', ?2, ?3)`,
      ).bind(type, messageId, at);
    await env.DB.batch([
      insert("act-364d", now - 364 * day),
      insert("act-366d", now - 366 * day),
      insert("act-call-2y", now - 730 * day, "incoming_call_missed"),
    ]);

    await fireDaily(now);

    expect(await ids("SELECT message_id AS id FROM activities WHERE message_id LIKE 'act-%'")).toEqual(["act-364d"]);
  });
});

describe("daily cron: webhook history is kept 3 days after a success, 30 after a failure", () => {
  it("prunes finished deliveries (with their attempts) past their time; pending and younger ones stay", async () => {
    const now = Date.now();
    await env.DB.batch([
      env.DB.prepare(
        `INSERT INTO webhook_deliveries (id, company_id, event, payload, status, created_at, updated_at) VALUES
         ('ret-success-4d', 1, 'scan:started', '{}', 'success', ?1, ?1),
         ('ret-success-2d', 1, 'scan:started', '{}', 'success', ?2, ?2),
         ('ret-failed-31d', 1, 'scan:started', '{}', 'failed', ?3, ?3),
         ('ret-failed-29d', 1, 'scan:started', '{}', 'failed', ?4, ?4),
         ('ret-pending-400d', 1, 'scan:started', '{}', 'pending', ?5, ?5),
         ('ret-dispatched-400d', 1, 'scan:started', '{}', 'dispatched', ?5, ?5),
         ('ret-finished-late', 1, 'scan:started', '{}', 'success', ?5, ?2)`,
      ).bind(now - 4 * day, now - 2 * day, now - 31 * day, now - 29 * day, now - 400 * day),
      env.DB.prepare(
        "INSERT INTO webhook_attempts (delivery_id, at, result, duration_ms) VALUES ('ret-success-4d', ?1, '200', 12)",
      ).bind(now - 4 * day),
    ]);

    await fireDaily(now);

    expect(await ids("SELECT id FROM webhook_deliveries WHERE id LIKE 'ret-%' ORDER BY id")).toEqual([
      "ret-dispatched-400d",
      "ret-failed-29d",
      "ret-finished-late",
      "ret-pending-400d",
      "ret-success-2d",
    ]);
    expect(await ids("SELECT id FROM webhook_attempts WHERE delivery_id = 'ret-success-4d'")).toEqual([]);
  });
});

describe("daily cron: scans, scan results and closed exposures", () => {
  // D1's rules, for a company whose scan side is still in D1 (its object's: company-scans.test.ts).
  beforeAll(() => scansInObject(1, false));

  it("prunes scans finished more than 7 days ago; younger and unfinished scans stay", async () => {
    const now = Date.now();
    await env.DB.prepare(
      `INSERT INTO scans (id, person_id, status, started_at, completed_at, created_at, updated_at) VALUES
       ('ret-scan-8d', 2, 'completed', ?1, ?1, ?1, ?1),
       ('ret-scan-6d', 2, 'completed', ?2, ?2, ?2, ?2),
       ('ret-scan-open', 2, 'started', ?3, NULL, ?3, ?3)`,
    )
      .bind(now - 8 * day, now - 6 * day, now - 400 * day)
      .run();

    await fireDaily(now);

    expect(await ids("SELECT id FROM scans WHERE id LIKE 'ret-scan-%' ORDER BY id")).toEqual([
      "ret-scan-6d",
      "ret-scan-open",
    ]);
  });

  it("prunes scan results a week old that nothing reads any more; the newest `not_found` stays, and the sites-not-found count never changes", async () => {
    const now = Date.now();
    const person = await newPerson();
    const result = (scan: string, site: number, outcome: string, age: number) =>
      env.DB.prepare(
        "INSERT INTO scan_results (scan_id, person_id, site_id, outcome, at, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?5)",
      ).bind(scan, person, site, outcome, now - age * day);
    await env.DB.batch([
      result("ret-r-found-100d", 3, "found", 100), // a found result: its exposure keeps the listing
      result("ret-r-failed-90d", 3, "failed", 90), // superseded by the not_found of 60 days
      result("ret-r-notfound-60d", 3, "not_found", 60), // the newest conclusive: stays however old
      result("ret-r-failed-50d", 3, "failed", 50), // newest of all, but nothing conclusive after it
      result("ret-r-found-80d", 4, "found", 80),
      result("ret-r-found-3d", 4, "found", 3), // young
      result("ret-r-notfound-20d", 5, "not_found", 20), // superseded by the found of 10 days
      result("ret-r-found-10d", 5, "found", 10), // goes only once the older not_found has gone
    ]);
    const sitesNotFound = async () => (await employee(person)).exposures.not_found;
    const results = () => ids("SELECT scan_id AS id FROM scan_results WHERE person_id = ? ORDER BY scan_id", person);
    expect(await sitesNotFound()).toBe(1);

    await fireDaily(now);
    expect(await results()).toEqual(["ret-r-failed-50d", "ret-r-found-10d", "ret-r-found-3d", "ret-r-notfound-60d"]);
    expect(await sitesNotFound()).toBe(1);

    await fireDaily(now);
    expect(await results()).toEqual(["ret-r-failed-50d", "ret-r-found-3d", "ret-r-notfound-60d"]);
    expect(await sitesNotFound()).toBe(1);
  });

  it("prunes exposures closed more than 365 days ago with their history; an open exposure keeps all of its history", async () => {
    const now = Date.now();
    const ancient = now - 800 * day;
    const person = await newPerson();
    const exposure = async (status: string, closedAt: number | null) => {
      const row = await env.DB.prepare(
        `INSERT INTO exposures (person_id, site_id, status, url, closed_at, created_at, updated_at)
         VALUES (?1, 3, ?2, ?3, ?4, ?5, ?5) RETURNING id`,
      )
        .bind(person, status, `https://peoplefinder.example/${fresh("ret")}`, closedAt, ancient)
        .first<{ id: number }>();
      await env.DB.prepare(
        "INSERT INTO exposure_history (exposure_id, site_id, event, created_at) VALUES (?1, 3, 'Found on PeopleFinder', ?2), (?1, 3, 'Removal requested from PeopleFinder', ?2)",
      )
        .bind(row!.id, ancient)
        .run();
      return row!.id;
    };
    const closedLongAgo = await exposure("closed", now - 366 * day);
    const closedRecently = await exposure("closed", now - 364 * day);
    const pending = await exposure("pending", null);
    const inProgress = await exposure("in_progress", null);

    await fireDaily(now);

    expect(await ids("SELECT id FROM exposures WHERE person_id = ? ORDER BY id", person)).toEqual([
      closedRecently,
      pending,
      inProgress,
    ]);
    expect(await ids("SELECT id FROM exposure_history WHERE exposure_id = ?", closedLongAgo)).toEqual([]);
    for (const open of [pending, inProgress, closedRecently]) {
      expect(await ids("SELECT id FROM exposure_history WHERE exposure_id = ?", open)).toHaveLength(2);
    }
    // Through the API: the open exposure's history as it was.
    const history = await as("alice").get(`/companies/1/employees/exposures/${pending}/history`);
    expect(history.status).toBe(200);
    expect(await history.json()).toHaveLength(2);
  });
});

describe("daily cron: an invitation is kept 30 days after its sending finished", () => {
  it("prunes invitations finished more than 30 days ago; younger and unsent ones stay", async () => {
    const now = Date.now();
    const created = await answer(
      await as("alice").send(
        "POST",
        "/companies/1/employees",
        employeeBody(fresh("inv"), { license: null, invite: true }),
      ),
      200,
      createEmployee,
    );
    const invited = async () => ids("SELECT id FROM invitations WHERE person_id = ? ORDER BY id", created.id);
    const [id] = await invited();
    const insertLike = (finishedAt: number | null) =>
      env.DB.prepare(
        `INSERT INTO invitations (company_id, person_id, email, token_hash, expires_at, created_at, finished_at, outcome)
         SELECT company_id, person_id, email, token_hash, expires_at, created_at, ?, ? FROM invitations WHERE id = ?`,
      )
        .bind(finishedAt, finishedAt === null ? null : "sent", id)
        .run();
    await env.DB.prepare("UPDATE invitations SET finished_at = ?, outcome = 'sent' WHERE id = ?")
      .bind(now - 31 * day, id)
      .run();
    await insertLike(now - 29 * day);
    await insertLike(null);
    const [, young, unsent] = await invited();

    await fireDaily(now);
    expect(await invited()).toEqual([young, unsent]);
  });
});

describe("exposure history lives as long as its exposure", () => {
  beforeAll(() => scansInObject(1, false));

  it("keeps old history of a living exposure through the daily cron, and drops it with the exposure", async () => {
    const now = Date.now();
    const ancient = now - 800 * day;
    const [exposure] = await env.DB.batch([
      env.DB.prepare(
        "INSERT INTO exposures (person_id, site_id, status, url, created_at, updated_at) VALUES (2, 3, 'closed', 'https://peoplefinder.example/ret', ?1, ?1) RETURNING id",
      ).bind(ancient),
    ]);
    const exposureId = (exposure!.results[0] as { id: number }).id;
    await env.DB.prepare(
      "INSERT INTO exposure_history (exposure_id, site_id, event, created_at) VALUES (?1, 3, 'found', ?2), (?1, 3, 'closed', ?2)",
    )
      .bind(exposureId, ancient)
      .run();

    await fireDaily(now);
    expect(await ids("SELECT id FROM exposure_history WHERE exposure_id = ?", exposureId)).toHaveLength(2);

    await env.DB.prepare("DELETE FROM exposures WHERE id = ?").bind(exposureId).run();
    expect(await ids("SELECT id FROM exposure_history WHERE exposure_id = ?", exposureId)).toEqual([]);
  });
});

describe("a person's object: trust-request quota counts", () => {
  it("its alarm drops the counts of days before yesterday", async () => {
    const personId = 600_000 + Math.floor(Math.random() * 100_000);
    const today = Math.floor(Date.now() / day);
    await inPersonObject(
      personId,
      "INSERT INTO trust_request_days (day, sent) VALUES (?1, 5), (?1 - 1, 7), (?1 - 2, 9), (?1 - 30, 1)",
      today,
    );
    const stub = personObject(personId);
    await runInDurableObject(stub, (_, state) => state.storage.setAlarm(Date.now()));
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(await inPersonObject(personId, "SELECT day - ? AS id FROM trust_request_days ORDER BY day", today)).toEqual([
      { id: -1 },
      { id: 0 },
    ]);
  });
});

describe("retention is chunked and resumable", () => {
  it("stops at its statement budget and the next call continues where it stopped", async () => {
    const db = createDb(env.DB);
    const now = Date.now();
    await insertBlockedCalls("chunk-old", now - 100 * day, 5);
    const spec = { table: blockedCalls, column: blockedCalls.createdAt, cutoff: new Date(now - 90 * day) };

    expect(await pruneOlderThan(db, { ...spec, chunk: 2, maxStatements: 2 })).toEqual({
      pruned: 4,
      statements: 2,
      more: true,
    });
    expect(await pruneOlderThan(db, { ...spec, chunk: 2, maxStatements: 2 })).toEqual({
      pruned: 1,
      statements: 1,
      more: false,
    });
    expect(await ids("SELECT id FROM blocked_calls WHERE caller_id = 'chunk-old'")).toEqual([]);
  });

  it("a pass stays within its budget, and a `retention` message on the background queue finishes the backlog", async () => {
    const now = Date.now();
    await insertBlockedCalls("backlog", now - 120 * day, 2_500);

    // One statement per rule: 1,000 rows of blocked calls, and the pass says a backlog remains.
    const pass = await pruneExpired(createDeps(env), new Date(now), 1);
    expect(pass.pruned.blockedCalls).toBe(1_000);
    expect(pass.more).toBe(true);
    expect(pass.statements).toBeLessThanOrEqual(RETENTION_RULE_COUNT);
    // The full daily pass: every rule's budget, inside half of an invocation's 1,000.
    expect(RETENTION_RULE_COUNT * RETENTION_STATEMENTS_PER_RULE).toBeLessThanOrEqual(500);

    const batch = createMessageBatch("background", [
      { id: "retention-1", timestamp: new Date(), attempts: 1, body: { kind: "retention" } },
    ]);
    const ctx = createExecutionContext();
    await worker.queue!(batch, env, ctx);
    const result = await getQueueResult(batch, ctx);
    expect(result.explicitAcks).toEqual(["retention-1"]);
    expect(await ids("SELECT id FROM blocked_calls WHERE caller_id = 'backlog'")).toEqual([]);
  });

  it("a daily run with nothing due runs one statement per rule", async () => {
    const pass = await pruneExpired(createDeps(env), new Date());
    expect(pass).toMatchObject({ more: false, statements: RETENTION_RULE_COUNT });
  });
});

describe("retention finds due rows through an index", () => {
  const plans = {
    blocked_calls: "SELECT rowid FROM blocked_calls WHERE created_at < ?1 LIMIT 1000",
    activities: "SELECT rowid FROM activities WHERE created_at < ?1 LIMIT 1000",
    webhook_deliveries: "SELECT rowid FROM webhook_deliveries WHERE updated_at < ?1 AND status = 'success' LIMIT 1000",
    scans: "SELECT rowid FROM scans WHERE completed_at < ?1 LIMIT 1000",
    scan_results: "SELECT rowid FROM scan_results WHERE created_at < ?1 LIMIT 1000",
    exposures: "SELECT rowid FROM exposures WHERE closed_at < ?1 AND status = 'closed' LIMIT 1000",
    index_written: "SELECT rowid FROM index_written WHERE written_at < ?1 LIMIT 1000",
    company_idempotency_keys: "SELECT rowid FROM company_idempotency_keys WHERE claimed_at < ?1 LIMIT 1000",
    invitations: "SELECT rowid FROM invitations WHERE finished_at < ?1 LIMIT 1000",
  };
  for (const [table, query] of Object.entries(plans)) {
    it(`${table}: no table scan`, async () => {
      const { results } = await env.DB.prepare(`EXPLAIN QUERY PLAN ${query}`).bind(0).all<{ detail: string }>();
      const detail = results.map((row) => row.detail).join("; ");
      expect(detail).toMatch(/USING (COVERING )?INDEX/);
      expect(detail).not.toMatch(new RegExp(`^SCAN ${table}$`));
    });
  }
});
