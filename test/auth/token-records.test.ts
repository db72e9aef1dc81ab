import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import worker from "../../src/index";
import { sha256Hex } from "../../src/lib/crypto";
import { createEmployee } from "../../src/routes/employees/employees.routes";
import { answer, as, call, captureTokenUses, countD1, countRows, DEMO, expectError, insertToken } from "../helpers";

/**
 * A token's verification record lives in KV without a TTL (docs/architecture.md,
 * "Tokens"): once verified, a token costs no D1 statement however long ago
 * that was; `last_used`/`last_login` reach D1 through the `token-uses` queue, in batches; every path
 * that invalidates a token overwrites its record, so a request is refused
 * within 60 s, and a refused KV put is retried by the index work until it lands.
 */

afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

/** The SQL of every statement D1 runs from now on (countD1: the Worker's and the objects'). */
const d1Statements = (): string[] => countD1().queries;

const TOKEN_WORK = /access_tokens|'tok:'/;
const BOOKKEEPING = /update "?(access_tokens|people)"? set "?(last_used_at|last_login_at)/;
const settle = () => new Promise((resolve) => setTimeout(resolve, 150));
/** From now on the Worker's clock (and the test's) reads `ms` later. */
const later = (ms: number) => vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + ms });

async function newToken(label: string, personId: number, lastUsedAt?: number) {
  const token = `pk_test_${label}_${crypto.randomUUID().replaceAll("-", "")}`;
  await insertToken(token, { personId });
  if (lastUsedAt !== undefined) {
    await env.DB.prepare("UPDATE access_tokens SET last_used_at = ? WHERE token_hash = ?")
      .bind(lastUsedAt, await sha256Hex(token))
      .run();
  }
  return token;
}

const recordOf = async (token: string) =>
  env.TRUST_INDEX.get<Record<string, unknown>>(`tok:${await sha256Hex(token)}`, "json");

/** A person of their own (an employee of company 1, who goes with their removal) and a token of theirs. */
async function employeeWithToken(label: string) {
  const created = await as("alice").send("POST", "/companies/1/employees", {
    first_name: "Token",
    last_name: "Holder",
    dob: "1990-01-01",
    emails: [{ email: `${label}.${crypto.randomUUID().slice(0, 8)}@acme.example` }],
    addresses: [{ line_1: "1 Main St", city: "San Francisco", region: "CA", postal_code: "94105", country: "US" }],
    license: null,
  });
  const { id } = await answer(created, 200, createEmployee);
  return { id, token: await newToken(label, id) };
}

async function minuteCron() {
  const ctx = createExecutionContext();
  await worker.scheduled!(createScheduledController({ cron: "* * * * *", scheduledTime: Date.now() }), env, ctx);
  await waitOnExecutionContext(ctx);
}

describe("a token verified before", () => {
  it("costs no D1 statement once its last verification is more than 30 s old, whatever its age", async () => {
    const token = await newToken("aged", DEMO.people.bob);
    expect((await call("/contacts", { token })).status).toBe(200); // verified in D1, then recorded
    await settle();
    expect(await recordOf(token)).toMatchObject({ v: 1, principal: { kind: "person", personId: DEMO.people.bob } });

    later(31_000); // past this isolate's copy
    const statements = d1Statements();
    for (let n = 0; n < 20; n++) expect((await call("/contacts", { token })).status).toBe(200);
    await settle();
    expect(statements.filter((sql) => TOKEN_WORK.test(sql))).toEqual([]);

    vi.useRealTimers();
    later(7 * 86_400_000); // a week later: the record still answers; the day's use leaves as a message
    const uses = captureTokenUses();
    statements.length = 0;
    for (let n = 0; n < 20; n++) expect((await call("/contacts", { token })).status).toBe(200);
    await settle();
    expect(statements.filter((sql) => TOKEN_WORK.test(sql))).toEqual([]);
    expect(uses.sent).toHaveLength(1);
    // The consumer: one statement for the token's row (its person's last_login follows by trigger).
    expect((await uses.flush()).retryMessages).toEqual([]);
    expect(statements.filter((sql) => BOOKKEEPING.test(sql))).toEqual([expect.stringMatching(/update access_tokens/)]);
  });

  it("writes last_used at most once a UTC day, however many requests and isolate refreshes", async () => {
    const start = Date.now();
    const token = await newToken("daily", DEMO.people.bob, start - 2 * 86_400_000);
    const uses = captureTokenUses();
    expect((await call("/contacts", { token })).status).toBe(200); // from D1: last_used was 2 days old
    await settle();
    expect(uses.sent).toHaveLength(1);
    await uses.flush();
    const lastUsed = async () =>
      countRows("SELECT last_used_at AS n FROM access_tokens WHERE token_hash = ?", await sha256Hex(token));
    expect(await lastUsed()).toBeGreaterThanOrEqual(start);

    const statements = d1Statements();
    // Through the rest of this UTC day (a use is recorded once a day, as `last_used_on` shows days).
    const rest = 86_400_000 - (start % 86_400_000) - 1_000;
    for (const offset of [31_000, rest / 3, (2 * rest) / 3, rest].filter((at) => at > 0 && at <= rest)) {
      vi.useRealTimers();
      later(offset);
      for (let n = 0; n < 5; n++) expect((await call("/contacts", { token })).status).toBe(200);
      await settle();
    }
    expect(statements.filter((sql) => BOOKKEEPING.test(sql))).toEqual([]);
    expect(uses.sent).toEqual([]);

    vi.useRealTimers();
    later(25 * 3_600_000); // the next day: one message, then one UPDATE (the person's row by trigger)
    for (let n = 0; n < 5; n++) expect((await call("/contacts", { token })).status).toBe(200);
    await settle();
    vi.useRealTimers();
    later(25 * 3_600_000 + 31_000); // the isolate's copy expired, the use not yet written: not sent again
    for (let n = 0; n < 5; n++) expect((await call("/contacts", { token })).status).toBe(200);
    await settle();
    expect(uses.sent).toHaveLength(1);
    await uses.flush();
    expect(statements.filter((sql) => BOOKKEEPING.test(sql))).toHaveLength(1);
    expect(await lastUsed()).toBeGreaterThanOrEqual(start + 25 * 3_600_000);
  });
});

describe("a service token revoked while a copy still calls it valid writes nothing, queued work included", () => {
  async function revokedService(scope: string) {
    const token = `sk_test_revoked_${crypto.randomUUID().replaceAll("-", "")}`;
    await insertToken(token, { serviceName: "worker", scopes: [scope] });
    return {
      token,
      revoke: async () =>
        env.DB.prepare("UPDATE access_tokens SET revoked_at = ? WHERE token_hash = ?")
          .bind(Date.now(), await sha256Hex(token))
          .run(),
    };
  }

  it("scan events: 401, and nothing reaches the scan queue", async () => {
    const { token, revoke } = await revokedService("scans:write");
    const sent: unknown[] = [];
    vi.spyOn(env.SCAN_QUEUE, "send").mockImplementation((async (body: unknown) => void sent.push(body)) as never);
    const events = (scan: string) => [
      { type: "started", scan_id: scan, person_id: DEMO.people.bob, at: "2026-03-01T10:00:00Z" },
    ];
    expect((await call("/internal/scan-events", { method: "POST", token, body: events("revoked-1") })).status).toBe(
      202,
    );
    expect(sent).toHaveLength(1);
    await revoke(); // this isolate's copy of the verification still says valid
    await expectError(
      await call("/internal/scan-events", { method: "POST", token, body: events("revoked-2") }),
      401,
      "Unauthorized",
    );
    expect(sent).toHaveLength(1);
  });

  it("the operator's moves: 401, and no move starts", async () => {
    const { token, revoke } = await revokedService("platform:admin");
    const sent: unknown[] = [];
    vi.spyOn(env.BACKGROUND_QUEUE, "send").mockImplementation((async (body: unknown) => void sent.push(body)) as never);
    expect((await call("/internal/status", { token })).status).toBe(200);
    await revoke();
    await expectError(await call("/internal/person-data/move", { method: "POST", token }), 401, "Unauthorized");
    await expectError(await call("/internal/company-data/move", { method: "POST", token }), 401, "Unauthorized");
    expect(sent).toEqual([]);
  });
});

describe("a token made invalid", () => {
  it("is refused within 60 s of its person's removal, with no D1 statement for the token", async () => {
    const { id, token } = await employeeWithToken("removed");
    expect((await call("/contacts", { token })).status).toBe(200);
    await settle();
    expect((await as("alice").send("DELETE", `/companies/1/employees/${id}`)).status).toBe(204);
    // Its fill put the record less than a second ago: the removal waits that second out before answering.
    expect(await recordOf(token)).toEqual({
      v: 1,
      refused: "the bearer token is unknown: this API never issued it, or it was deleted, so it is not valid",
    });

    later(31_000); // this isolate's copy is gone; KV's edge copy lasts at most another 30 s
    const statements = d1Statements();
    expect(await expectError(await call("/contacts", { token }), 401, "Unauthorized")).toContain("not valid");
    expect(statements.filter((sql) => TOKEN_WORK.test(sql))).toEqual([]);
  });

  it("a refused KV put is retried by the index work until the record lands", async () => {
    const { id, token } = await employeeWithToken("retried");
    expect((await call("/contacts", { token })).status).toBe(200);
    await settle();
    const key = `tok:${await sha256Hex(token)}`;
    const put = env.TRUST_INDEX.put.bind(env.TRUST_INDEX);
    const refuse = vi
      .spyOn(env.TRUST_INDEX, "put")
      .mockImplementation(((k: string, ...rest: [string]) =>
        k === key ? Promise.reject(new Error("KV PUT failed: 429 Too Many Requests")) : put(k, ...rest)) as never);
    vi.spyOn(env.BACKGROUND_QUEUE, "send").mockResolvedValue(undefined as never); // only the sweep retries here
    expect((await as("alice").send("DELETE", `/companies/1/employees/${id}`)).status).toBe(204);
    expect(await recordOf(token)).toMatchObject({ v: 1, principal: { personId: id } }); // not yet
    expect(await countRows("SELECT count(*) AS n FROM index_work WHERE key = ?", key)).toBe(1);

    refuse.mockRestore();
    later(61_000); // past the row's backoff
    await minuteCron();
    expect(await recordOf(token)).toEqual({
      v: 1,
      refused: "the bearer token is unknown: this API never issued it, or it was deleted, so it is not valid",
    });
    expect(await countRows("SELECT count(*) AS n FROM index_work WHERE key = ?", key)).toBe(0);
    later(92_000);
    await expectError(await call("/contacts", { token }), 401, "Unauthorized");
  });

  it("a revocation made in D1 alone (`npm run token -- revoke` offline): the minute sweep rewrites its record, then it is refused", async () => {
    const token = await newToken("d1only", DEMO.people.bob);
    expect((await call("/contacts", { token })).status).toBe(200);
    await settle();
    const now = Date.now();
    const hash = await sha256Hex(token);
    // What scripts/token.mjs runs without an operator token: the row revoked, its record's rewrite due.
    await env.DB.batch([
      env.DB.prepare("UPDATE access_tokens SET revoked_at = ? WHERE token_hash = ?").bind(now, hash),
      env.DB.prepare(
        "INSERT INTO index_work (key, version, attempts, due_at, created_at) VALUES (?, 1, 0, ?, ?) ON CONFLICT (key) DO UPDATE SET version = version + 1, due_at = excluded.due_at",
      ).bind(`tok:${hash}`, now, now),
    ]);
    await new Promise((resolve) => setTimeout(resolve, 1_100)); // the key's write slot of its first record
    const ctx = createExecutionContext();
    await worker.scheduled!(createScheduledController({ cron: "* * * * *", scheduledTime: Date.now() }), env, ctx);
    await waitOnExecutionContext(ctx);
    expect(await recordOf(token)).toEqual({ v: 1, refused: "the bearer token has been revoked" });
    later(31_000); // this isolate's copy of the verification has expired
    await expectError(
      await call("/contacts/sync", { method: "POST", token, body: [{ display_name: "Nobody" }] }),
      401,
      "Unauthorized",
    );
  });
});
