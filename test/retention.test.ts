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
import { describe, expect, it } from "vitest";
import { createDb } from "../src/db/client";
import { pruneOlderThan } from "../src/db/prune";
import { blockedCalls } from "../src/db/schema";
import worker from "../src/index";
import { pruneExpired, RETENTION_STATEMENTS_PER_RULE } from "../src/services/retention";
import { inPersonObject, personObject } from "./helpers";

/** Retention of docs/decisions.md on a controlled clock: rows are inserted with old timestamps, then the daily cron fires. */

const DAILY = "30 3 * * *";
const day = 24 * 3600_000;

async function fireDaily(scheduledTime: number) {
  const ctx = createExecutionContext();
  await worker.scheduled!(createScheduledController({ cron: DAILY, scheduledTime }), env, ctx);
  await waitOnExecutionContext(ctx);
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

describe("daily cron: webhook history is kept 90 days after it finished", () => {
  it("prunes finished deliveries (with their attempts) older than 90 days; pending and younger ones stay", async () => {
    const now = Date.now();
    const old = now - 91 * day;
    const recent = now - 89 * day;
    await env.DB.batch([
      env.DB.prepare(
        `INSERT INTO webhook_deliveries (id, company_id, event, payload, status, created_at, updated_at) VALUES
         ('ret-old-success', 1, 'scan:started', '{}', 'success', ?1, ?1),
         ('ret-old-failed', 1, 'scan:started', '{}', 'failed', ?1, ?1),
         ('ret-old-pending', 1, 'scan:started', '{}', 'pending', ?1, ?1),
         ('ret-recent-success', 1, 'scan:started', '{}', 'success', ?2, ?2),
         ('ret-finished-late', 1, 'scan:started', '{}', 'failed', ?1, ?2)`,
      ).bind(old, recent),
      env.DB.prepare(
        "INSERT INTO webhook_attempts (delivery_id, at, result, duration_ms) VALUES ('ret-old-success', ?1, '200', 12)",
      ).bind(old),
    ]);

    await fireDaily(now);

    expect(await ids("SELECT id FROM webhook_deliveries WHERE id LIKE 'ret-%' ORDER BY id")).toEqual([
      "ret-finished-late",
      "ret-old-pending",
      "ret-recent-success",
    ]);
    expect(await ids("SELECT id FROM webhook_attempts WHERE delivery_id = 'ret-old-success'")).toEqual([]);
  });
});

describe("exposure history lives as long as its exposure", () => {
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
    const db = createDb(env.DB);
    const now = Date.now();
    await insertBlockedCalls("backlog", now - 120 * day, 2_500);

    // One statement per rule: 1,000 rows of blocked calls, and the pass says a backlog remains.
    const pass = await pruneExpired(db, new Date(now), 1);
    expect(pass.pruned.blockedCalls).toBe(1_000);
    expect(pass.more).toBe(true);
    expect(pass.statements).toBeLessThanOrEqual(5);
    // The full daily pass: five rules × 100 statements, inside ~500 of an invocation's 1,000.
    expect(5 * RETENTION_STATEMENTS_PER_RULE).toBeLessThanOrEqual(500);

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
    const pass = await pruneExpired(createDb(env.DB), new Date());
    expect(pass).toMatchObject({ more: false, statements: 5 });
  });
});

describe("retention finds due rows through an index", () => {
  const plans = {
    blocked_calls: "SELECT rowid FROM blocked_calls WHERE created_at < ?1 LIMIT 1000",
    activities: "SELECT rowid FROM activities WHERE created_at < ?1 LIMIT 1000",
    webhook_deliveries:
      "SELECT rowid FROM webhook_deliveries WHERE updated_at < ?1 AND status IN ('success', 'failed') LIMIT 1000",
    index_written: "SELECT rowid FROM index_written WHERE written_at < ?1 LIMIT 1000",
    company_idempotency_keys: "SELECT rowid FROM company_idempotency_keys WHERE claimed_at < ?1 LIMIT 1000",
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
