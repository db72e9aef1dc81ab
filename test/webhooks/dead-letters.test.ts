import {
  createExecutionContext,
  createMessageBatch,
  createScheduledController,
  getQueueResult,
  waitOnExecutionContext,
} from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import worker from "../../src/index";
import type { BackgroundMessage } from "../../src/domain/queue-messages";
import { REDRIVE_FIRST_DELAY_MS } from "../../src/services/dead-letters";
import { status as statusRoute } from "../../src/routes/admin/status.routes";
import { answer, as, call, countRows, DEMO, failingD1, insertToken } from "../helpers";

/**
 * Nothing dies in a dead-letter queue silently (docs/architecture.md, "Dead
 * letters"): the index work or the delivery row stays due, anything else is
 * recorded in `dead_letters` and redriven until its work succeeds; the
 * backlog and its oldest item's age are visible (`GET /internal/status`,
 * and a metric line from the minute cron).
 */

const ADMIN = `sk_test_status_${crypto.randomUUID().replaceAll("-", "")}`;
const minute = 60_000;

beforeAll(async () => {
  await insertToken(ADMIN, { serviceName: "operator", scopes: ["platform:admin"] });
  await env.DB.prepare(
    "INSERT INTO people (id, first_name, last_name, created_at, updated_at) VALUES (?, 'No', 'Company', 0, 0)",
  )
    .bind(UNEMPLOYED)
    .run();
});

afterEach(() => {
  vi.restoreAllMocks();
});

/** Runs the queue consumer on one message of `queue`, as the queue delivers it. */
async function consume(queue: string, body: unknown, { id = crypto.randomUUID(), bindings = env as Env } = {}) {
  const batch = createMessageBatch(queue, [{ id, timestamp: new Date(), attempts: 11, body }]);
  const ctx = createExecutionContext();
  await worker.queue!(batch, bindings, ctx);
  return getQueueResult(batch, ctx);
}

/** Fires the minute cron at `at`, keeping what it sends on the background queue. */
async function minuteCron(at: number) {
  const sent: BackgroundMessage[] = [];
  vi.spyOn(env.BACKGROUND_QUEUE, "send").mockImplementation(
    (async (body: unknown) => void sent.push(body as BackgroundMessage)) as never,
  );
  const ctx = createExecutionContext();
  await worker.scheduled!(createScheduledController({ cron: "* * * * *", scheduledTime: at }), env, ctx);
  await waitOnExecutionContext(ctx);
  vi.restoreAllMocks();
  return sent;
}

async function status() {
  return answer(await call("/internal/status", { token: ADMIN }), 200, statusRoute);
}

/** Runs `work` with the clock at `at` (the code under test reads `new Date()`). */
async function at_<T>(at: number, work: () => Promise<T>): Promise<T> {
  vi.useFakeTimers({ now: at, toFake: ["Date"] });
  try {
    return await work();
  } finally {
    vi.useRealTimers();
  }
}

/** A person of no company: their scans are D1's (docs/architecture.md, "The Company object"). */
const UNEMPLOYED = 880;
const scanBatch = (scanId: string) => [
  { type: "started", scan_id: scanId, person_id: UNEMPLOYED, at: "2026-03-01T10:00:00Z" },
];

describe("a dead-lettered message keeps its work due", () => {
  it("a scan-event batch is recorded, shown by the status, and redriven by the minute cron until applied", async () => {
    const scanId = `dead-${crypto.randomUUID()}`;
    const result = await consume("scan-events-dlq", scanBatch(scanId), { id: "dlq-scan-1" });
    expect(result.explicitAcks).toEqual(["dlq-scan-1"]);
    // Redelivered by the DLQ: still one row.
    await consume("scan-events-dlq", scanBatch(scanId), { id: "dlq-scan-1" });
    expect(await countRows("SELECT count(*) AS n FROM dead_letters WHERE message_id = 'dlq-scan-1'")).toBe(1);
    expect((await status()).dead_letters).toMatchObject({ count: 1, capped: false, oldest_age_seconds: 0 });

    // Not due yet: the minute cron sends no redrive. Due after the first delay: one `redrive` message.
    expect(await minuteCron(Date.now())).not.toContainEqual({ kind: "redrive" });
    const later = Date.now() + REDRIVE_FIRST_DELAY_MS + minute;
    expect(await minuteCron(later)).toContainEqual({ kind: "redrive" });
    const redrive = await at_(later, () => consume("background", { kind: "redrive" }));
    expect(redrive.explicitAcks).toHaveLength(1);
    expect(await countRows("SELECT count(*) AS n FROM scans WHERE id = ?", scanId)).toBe(1);
    expect(await countRows("SELECT count(*) AS n FROM dead_letters WHERE message_id = 'dlq-scan-1'")).toBe(0);
  });

  it("a redrive that fails keeps the letter, with its error, due again after a longer delay; the next one applies it", async () => {
    const scanId = `retried-${crypto.randomUUID()}`;
    await consume("scan-events-dlq", scanBatch(scanId), { id: "dlq-scan-2" });
    const row = async () =>
      (await env.DB.prepare(
        "SELECT attempts, last_error, due_at FROM dead_letters WHERE message_id = 'dlq-scan-2'",
      ).first<{
        attempts: number;
        last_error: string | null;
        due_at: number;
      }>())!;
    expect(await row()).toMatchObject({ attempts: 0, last_error: null });
    vi.spyOn(console, "error").mockImplementation(() => undefined);
    const broken = failingD1(/insert into "scans"/i, () => new Error("D1_ERROR: simulated failure"));
    for (const attempt of [1, 2]) {
      const at = (await row()).due_at + 1;
      await at_(at, () => consume("background", { kind: "redrive" }, { bindings: { ...env, DB: broken } }));
      const kept = await row();
      expect(kept.attempts).toBe(attempt);
      expect(kept.last_error).toMatch(/^Error: D1_ERROR/);
      expect(kept.due_at - at).toBeGreaterThanOrEqual(REDRIVE_FIRST_DELAY_MS * 2 ** (attempt - 1) - 1);
    }
    await at_((await row()).due_at + 1, () => consume("background", { kind: "redrive" }));
    expect(await countRows("SELECT count(*) AS n FROM dead_letters WHERE message_id = 'dlq-scan-2'")).toBe(0);
    expect(await countRows("SELECT count(*) AS n FROM scans WHERE id = ?", scanId)).toBe(1);
  });

  it("a message of a queue nothing can run stays recorded for the operator, with the reason", async () => {
    await consume("unknown-queue-dlq", { anything: true }, { id: "dlq-unknown-1" });
    const due = (await env.DB.prepare("SELECT due_at FROM dead_letters WHERE message_id = 'dlq-unknown-1'").first<{
      due_at: number;
    }>())!.due_at;
    await at_(due + 1, () => consume("background", { kind: "redrive" }));
    expect(
      await env.DB.prepare(
        "SELECT queue, attempts, last_error FROM dead_letters WHERE message_id = 'dlq-unknown-1'",
      ).first(),
    ).toEqual({
      queue: "unknown-queue",
      attempts: 1,
      last_error: "Error: no redrive for messages of queue unknown-queue",
    });
    await env.DB.prepare("DELETE FROM dead_letters WHERE message_id = 'dlq-unknown-1'").run();
  });

  it("a `reindex` message that dead-letters records nothing: its index_work rows stay, due now, and the minute sweep applies them", async () => {
    const key = "num:+15557654321";
    await env.DB.prepare(
      "INSERT INTO index_work (key, version, attempts, due_at, created_at) VALUES (?1, 1, 10, ?2, ?3)",
    )
      .bind(key, Date.now() + 60 * minute, Date.now() - 30 * minute)
      .run();
    await env.TRUST_INDEX.put(key, '{"p":[9],"c":[]}'); // what KV held before the change nobody applied
    const result = await consume("background-dlq", { kind: "reindex", keys: [key] }, { id: "dlq-reindex-1" });
    expect(result.explicitAcks).toEqual(["dlq-reindex-1"]);
    expect(await countRows("SELECT count(*) AS n FROM dead_letters WHERE message_id = 'dlq-reindex-1'")).toBe(0);
    expect(await countRows("SELECT count(*) AS n FROM index_work WHERE key = ? AND due_at <= ?", key, Date.now())).toBe(
      1,
    );
    // The operator sees its age (it became stale 30 minutes ago).
    expect((await status()).index_work.oldest_age_seconds).toBeGreaterThanOrEqual(30 * 60);

    await minuteCron(Date.now());
    expect(await countRows("SELECT count(*) AS n FROM index_work WHERE key = ?", key)).toBe(0);
    // Nobody holds the number now: its stale record is gone (an absent key reads as nobody).
    expect(await env.TRUST_INDEX.get(key)).toBeNull();
  });

  it("when D1 cannot take the dead letter, the DLQ message is retried, not acknowledged", async () => {
    vi.spyOn(console, "error").mockImplementation(() => undefined);
    const broken = failingD1(/dead_letters/, () => new Error("D1_ERROR: simulated failure"));
    const result = await consume("scan-events-dlq", scanBatch("never"), { bindings: { ...env, DB: broken } });
    expect(result.explicitAcks).toEqual([]);
    expect(result.retryMessages).toHaveLength(1);
  });
});

describe("the backlog is visible", () => {
  it("GET /internal/status: per kind, the items due and the age of the oldest; only for platform:admin", async () => {
    const hourAgo = Date.now() - 60 * minute;
    await env.DB.prepare("UPDATE exposures SET status = 'in_progress' WHERE status = 'pending'").run();
    await env.DB.prepare(
      "INSERT INTO exposures (person_id, site_id, status, url, data, created_at, updated_at) VALUES (?1, 3, 'pending', 'https://peoplefinder.example/status', '{}', ?2, ?2)",
    )
      .bind(DEMO.people.bob, hourAgo)
      .run();
    const body = await status();
    expect(body.removals).toMatchObject({ count: 1, capped: false, oldest_at: new Date(hourAgo).toISOString() });
    expect(body.removals.oldest_age_seconds).toBeGreaterThanOrEqual(3600);
    expect(Object.keys(body)).toEqual(["at", "index_work", "outbox", "removals", "dead_letters"]);

    expect((await call("/internal/status")).status).toBe(401);
    expect((await as("alice").get("/internal/status")).status).toBe(403);
  });

  it("the minute cron logs the same backlog as one metric line", async () => {
    const log = vi.spyOn(console, "log");
    await minuteCron(Date.now());
    const lines = log.mock.calls.map(([line]) => JSON.parse(String(line)) as Record<string, unknown>);
    const metric = lines.find((line) => line.metric === "background_backlog");
    expect(metric).toMatchObject({
      removals: { count: 1, capped: false, oldest_age_seconds: expect.any(Number) },
      dead_letters: { count: expect.any(Number) },
      index_work: { count: expect.any(Number) },
      outbox: { count: expect.any(Number) },
    });
  });
});
