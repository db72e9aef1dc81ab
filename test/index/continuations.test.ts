import {
  createExecutionContext,
  createMessageBatch,
  createScheduledController,
  getQueueResult,
  runInDurableObject,
  waitOnExecutionContext,
} from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import worker from "../../src/index";
import type { BackgroundMessage } from "../../src/domain/queue-messages";
import { INDEX_SWEEP_CHUNK, OUTBOX_SWEEP_CHUNK } from "../../src/services/background-jobs";
import { REMOVAL_BATCHES_PER_INVOCATION, REMOVAL_BATCH_SIZE } from "../../src/services/exposures";
import { countD1, countRows, DEMO } from "../helpers";
import { companyObject, insertEmployee } from "../support/company-scans";
import { newWebhook } from "../webhook-receiver";

/**
 * Every background job continues itself while its chunk was full
 * (docs/architecture.md, "Background work"): a job with several chunks of
 * work is started by its cron, finishes through `background` messages, and
 * each invocation stays inside the platform's limits — counted here: D1
 * statements, KV operations and queue sends (1,000 operations per
 * invocation together), and bound parameters per statement (100).
 */

afterEach(() => {
  vi.restoreAllMocks();
});

type Invocation = { statements: number; kv: number; queue: number; maxParams: number };

/**
 * Counts what one invocation asks of the platform. Background messages sent
 * are kept in `continuations` (not sent: the test runs them), webhook
 * deliveries are counted and dropped.
 */
function meter(continuations: BackgroundMessage[]) {
  const statement = Object.getPrototypeOf(env.DB.prepare("select 1")) as D1PreparedStatement;
  let maxParams = 0;
  const bind = statement.bind;
  vi.spyOn(statement, "bind").mockImplementation(function (this: D1PreparedStatement, ...values: unknown[]) {
    maxParams = Math.max(maxParams, values.length);
    return bind.apply(this, values);
  });
  const d1 = countD1();
  let kv = 0;
  for (const method of ["get", "getWithMetadata", "put", "delete", "list"] as const) {
    const original = (env.TRUST_INDEX[method] as (...args: unknown[]) => unknown).bind(env.TRUST_INDEX);
    vi.spyOn(env.TRUST_INDEX, method).mockImplementation(((...args: unknown[]) => {
      kv++;
      return original(...args);
    }) as never);
  }
  let queue = 0;
  vi.spyOn(env.BACKGROUND_QUEUE, "send").mockImplementation((async (body: unknown) => {
    queue++;
    continuations.push(body as BackgroundMessage);
  }) as never);
  vi.spyOn(env.WEBHOOK_QUEUE, "send").mockImplementation((async () => void queue++) as never);
  vi.spyOn(env.WEBHOOK_QUEUE, "sendBatch").mockImplementation((async () => void queue++) as never);
  return (): Invocation => ({ statements: d1.statements, kv, queue, maxParams });
}

/**
 * Fires `cron`, then runs every continuation it leads to through the queue
 * handler, one message per invocation as the `background` consumer does.
 * Returns what each invocation cost and the kinds of the messages run.
 */
async function runToEnd(cron: string, scheduledTime = Date.now()) {
  const continuations: BackgroundMessage[] = [];
  const invocations: Invocation[] = [];
  const kinds: string[] = [];
  const read = meter(continuations);
  const ctx = createExecutionContext();
  await worker.scheduled!(createScheduledController({ cron, scheduledTime }), env, ctx);
  await waitOnExecutionContext(ctx);
  invocations.push(read());
  vi.restoreAllMocks();
  return runMessages(continuations, invocations, kinds, cron);
}

/** Runs `continuations` (and those they lead to) through the queue handler, one message per invocation. */
async function runMessages(
  continuations: BackgroundMessage[],
  invocations: Invocation[] = [],
  kinds: string[] = [],
  started = "messages",
) {
  while (continuations.length > 0) {
    if (invocations.length > 100) throw new Error("the job does not end");
    const body = continuations.shift()!;
    kinds.push(body.kind);
    const read = meter(continuations);
    const batch = createMessageBatch("background", [
      { id: `m-${invocations.length}`, timestamp: new Date(), attempts: 1, body },
    ]);
    const queueCtx = createExecutionContext();
    await worker.queue!(batch, env, queueCtx);
    const result = await getQueueResult(batch, queueCtx);
    invocations.push(read());
    vi.restoreAllMocks();
    expect(result.retryMessages).toEqual([]);
  }
  // What each invocation cost, for docs/architecture.md's background table.
  console.log(JSON.stringify({ started, kinds, invocations }));
  return { invocations, kinds };
}

function expectWithinLimits(invocations: Invocation[]) {
  for (const invocation of invocations) {
    expect(invocation.statements + invocation.kv + invocation.queue).toBeLessThan(1000);
    expect(invocation.maxParams).toBeLessThanOrEqual(100);
  }
}

describe("removal requests continue until none is pending", () => {
  it("2,500 pending exposures: the hourly run and two `removals` continuations request all, each exposure once", async () => {
    const perInvocation = REMOVAL_BATCH_SIZE * REMOVAL_BATCHES_PER_INVOCATION;
    expect(perInvocation).toBe(1000);
    const webhook = await newWebhook({ event: "exposure:requested" });
    // D1's removal step: Acme's scan side served from D1 (a company created before migration 0032;
    // D1's exposure events reach only such companies).
    await env.DB.prepare("UPDATE companies SET scans_in_object = 0 WHERE id = 1").run();
    await env.DB.prepare("UPDATE exposures SET status = 'in_progress' WHERE status = 'pending'").run();
    const at = Date.now() - 3600_000;
    await env.DB.prepare(
      `WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < 2500)
       INSERT INTO exposures (person_id, site_id, status, url, data, created_at, updated_at)
       SELECT ?1, 3, 'pending', 'https://peoplefinder.example/backlog/' || i, '{}', ?2, ?2 FROM k`,
    )
      .bind(DEMO.people.bob, at)
      .run();

    const started = Date.now();
    const { invocations, kinds } = await runToEnd("0 * * * *");
    const seconds = (Date.now() - started) / 1000;

    expect(kinds).toEqual(["removals", "removals"]);
    expectWithinLimits(invocations);
    expect(await countRows("SELECT count(*) AS n FROM exposures WHERE status = 'pending'")).toBe(0);
    expect(
      await countRows(
        "SELECT count(*) AS n FROM exposure_history h JOIN exposures e ON e.id = h.exposure_id WHERE e.url LIKE 'https://peoplefinder.example/backlog/%' AND h.event = 'Removal requested from PeopleFinder'",
      ),
    ).toBe(2500);
    // One exposure:requested per exposure moved, none twice.
    expect(
      await countRows(
        "SELECT count(DISTINCT json_extract(payload, '$.id')) AS n FROM webhook_deliveries WHERE webhook_id = ?",
        webhook.id,
      ),
    ).toBe(2500);
    expect(await countRows("SELECT count(*) AS n FROM webhook_deliveries WHERE webhook_id = ?", webhook.id)).toBe(2500);
    console.log(
      JSON.stringify({
        removals: 2500,
        invocations: invocations.length,
        seconds,
        perSecond: Math.round(2500 / seconds),
      }),
    );
    await env.DB.prepare("UPDATE companies SET scans_in_object = 1 WHERE id = 1").run();
  }, 120_000);
});

describe("the index sweep continues until no work is due", () => {
  it("1,200 due keys: the minute sweep and its `reindex` continuations apply all, at most 500 KV puts per invocation", async () => {
    const keys = Array.from({ length: 1200 }, (_, i) => `num:+1555${String(2000000 + i)}`);
    await env.DB.prepare(
      `INSERT INTO index_work (key, version, attempts, due_at, created_at)
       SELECT value, 1, 0, ?2, ?2 FROM json_each(?1)`,
    )
      .bind(JSON.stringify(keys), Date.now() - 5 * 60_000)
      .run();

    const { invocations, kinds } = await runToEnd("* * * * *");

    expect(kinds).toEqual(["reindex", "reindex"]);
    expectWithinLimits(invocations);
    // One write per key at most, and the minute run's one read of the rebuild record.
    for (const invocation of invocations) expect(invocation.kv).toBeLessThanOrEqual(INDEX_SWEEP_CHUNK + 1);
    expect(await countRows("SELECT count(*) AS n FROM index_work WHERE key LIKE 'num:+15552%'")).toBe(0);
    // Numbers nobody holds: their records are gone (an absent key reads as nobody).
    expect(await env.TRUST_INDEX.get(keys[1199]!)).toBeNull();
    expect(await countRows("SELECT count(*) AS n FROM index_written WHERE key = ?", keys[1199])).toBe(1);
  }, 60_000);
});

describe("the outbox sweep continues until nothing stale is pending", () => {
  it("1,200 pending history rows older than 5 minutes: the minute sweep and its `outbox` continuations enqueue all", async () => {
    const webhook = await newWebhook();
    const old = Date.now() - 10 * 60_000;
    await env.DB.prepare(
      `WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < 1200)
       INSERT INTO webhook_deliveries (id, company_id, webhook_id, event, payload, status, created_at, updated_at)
       SELECT 'swept-' || i, 1, ?1, 'scan:found', '{}', 'pending', ?2, ?2 FROM k`,
    )
      .bind(webhook.id, old)
      .run();
    const now = Date.now();

    const { invocations, kinds } = await runToEnd("* * * * *", now);

    expect(kinds).toEqual(["outbox", "outbox"]);
    expectWithinLimits(invocations);
    // 500 rows per chunk: 5 sends of 100 messages.
    expect(Math.max(...invocations.map((invocation) => invocation.queue))).toBeLessThanOrEqual(
      OUTBOX_SWEEP_CHUNK / 100 + 1,
    );
    expect(
      await countRows("SELECT count(*) AS n FROM webhook_deliveries WHERE id LIKE 'swept-%' AND due_at >= ?", now),
    ).toBe(1200);
  }, 60_000);
});

describe("recording a company object's events continues while some wait", () => {
  it("2,000 events for 50 webhooks each (100,000 deliveries): every invocation stays inside the limits, each event recorded once", async () => {
    const globex = DEMO.companies.globex;
    const person = await insertEmployee(7_654_321, [globex], "Fanout");
    // A company's 50 webhooks (its most), all on one event; the object's outbox holds 2,000 of it.
    await env.DB.batch(
      Array.from({ length: 50 }, (_, i) =>
        env.DB.prepare(
          `INSERT INTO webhooks (company_id, endpoint, event, active, secret, created_at, updated_at)
           VALUES (?, ?, 'scan:not_found', 1, 'whsec_dGVzdA==', 0, 0)`,
        ).bind(globex, `https://hooks.globex.example/${i}`),
      ),
    );
    await runInDurableObject(companyObject(globex), (_, state) => {
      state.storage.sql.exec(
        `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000)
         INSERT INTO events (event, payload, created_at)
         SELECT 'scan:not_found', json_object('scan_id', 'fanout-' || i, 'person_id', ?1, 'at', '2026-01-01T00:00:00.000Z'), ?2 FROM n`,
        person,
        Date.now(),
      );
    });

    const { invocations, kinds } = await runMessages([{ kind: "company-events", companyId: globex }]);

    expect(kinds[0]).toBe("company-events");
    expectWithinLimits(invocations);
    expect(await companyObject(globex).takeEvents(1)).toEqual([]);
    expect(
      await countRows(
        `SELECT count(*) AS n FROM webhook_deliveries WHERE event = 'scan:not_found' AND json_extract(payload, '$.person_id') = ${person}`,
      ),
    ).toBe(100_000);
  }, 120_000);
});

describe("the tombstone prune continues until none is due", () => {
  it("finds due tombstones through an index on deleted_at, never by scanning the table", async () => {
    const { results } = await env.DB.prepare(
      "EXPLAIN QUERY PLAN SELECT rowid FROM contact_tombstones WHERE deleted_at < ?1 LIMIT 5000",
    )
      .bind(0)
      .all<{ detail: string }>();
    const detail = results.map((row) => row.detail).join("; ");
    expect(detail).toMatch(/USING (COVERING )?INDEX contact_tombstones_deleted_idx/);
  });

  it("120,000 tombstones older than 90 days: the daily run prunes 100,000 and a `tombstones` continuation the rest", async () => {
    const day = 24 * 3600_000;
    const now = Date.now();
    await env.DB.prepare(
      `WITH RECURSIVE k(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM k WHERE i < 120000)
       INSERT INTO contact_tombstones (owner_id, contact_id, deleted_at) SELECT ?1, 900000 + i, ?2 + i FROM k`,
    )
      .bind(DEMO.people.carol, now - 120 * day)
      .run();
    await env.DB.prepare("INSERT INTO contact_tombstones (owner_id, contact_id, deleted_at) VALUES (?1, 1900000, ?2)")
      .bind(DEMO.people.carol, now - 10 * day)
      .run();

    const { invocations, kinds } = await runToEnd("30 3 * * *", now);

    expect(kinds).toEqual(["tombstones"]);
    expectWithinLimits(invocations);
    expect(await countRows("SELECT count(*) AS n FROM contact_tombstones WHERE contact_id > 900000")).toBe(1);
  }, 60_000);
});
