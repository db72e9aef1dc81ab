import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { sha256Hex } from "../../src/lib/crypto";
import {
  call,
  captureTokenUses,
  countD1,
  countInPersonObject,
  countRows,
  DEMO,
  expectError,
  insertToken,
  personObject,
} from "../helpers";

/**
 * What a write costs in token work (docs/decisions.md, "Auth"): a token
 * verified from the cache is checked again inside the write's own first D1
 * round trip, not by a round trip of its own; `last_used`/`last_login` are
 * sent at most once a day to the `token-uses` queue, whose consumer writes a batch in one statement; the bookmark is the write's own session's.
 * A revoked token still never changes data.
 */

afterEach(() => vi.restoreAllMocks());

const TOKEN_LOOKUP = /from "access_tokens" where "access_tokens"."token_hash" = \?/;
const BOOKKEEPING = /update "?(access_tokens|people)"? set "?(last_used_at|last_login_at)/;
const TOKEN_CHECK = /from access_tokens where id = \?/;

const settle = () => new Promise((resolve) => setTimeout(resolve, 100));

async function newToken(label: string, personId: number, fields: { lastUsedAt?: Date } = {}) {
  const token = `pk_test_${label}_${crypto.randomUUID().replaceAll("-", "")}`;
  await insertToken(token, { personId });
  if (fields.lastUsedAt) {
    await env.DB.prepare("UPDATE access_tokens SET last_used_at = ? WHERE token_hash = ?")
      .bind(fields.lastUsedAt.getTime(), await sha256Hex(token))
      .run();
  }
  return token;
}

const lastUsed = async (token: string) =>
  (await env.DB.prepare("SELECT last_used_at AS at FROM access_tokens WHERE token_hash = ?")
    .bind(await sha256Hex(token))
    .first<{ at: number | null }>())!.at;

const encrypt = (token: string, n: number) =>
  call("/apps/buzz/encryption", { method: "PUT", token, body: { hash: `h${n}`, e2e_id: `e${n}` } });

describe("token work of 100 writes with one token", () => {
  it("one token read, no bookkeeping round, the check inside each write's own round trip, no `select 1`", async () => {
    const token = await newToken("hundred", DEMO.people.bob);
    const uses = captureTokenUses();
    // Every D1 round trip from now on, as the SQL of its statements.
    const rounds = countD1().roundTrips;
    const started = Date.now();
    for (let n = 0; n < 100; n++) expect((await encrypt(token, n)).status).toBe(200);
    await settle();
    const elapsedMs = Date.now() - started;
    // The day's use left once, as a message to the `token-uses` queue; no request wrote it.
    expect(uses.sent).toHaveLength(1);
    expect(rounds.flat().filter((sql) => BOOKKEEPING.test(sql))).toEqual([]);
    await uses.flush();
    vi.restoreAllMocks();

    const statements = rounds.flat();
    // The cache serves the token for 30 s at a time.
    const lookups = statements.filter((sql) => TOKEN_LOOKUP.test(sql)).length;
    expect(lookups).toBeGreaterThanOrEqual(1);
    expect(lookups).toBeLessThanOrEqual(1 + Math.floor(elapsedMs / 30_000));
    // The consumer: last_used and last_login in one statement (the person's row follows by trigger), once.
    const bookkeeping = rounds.filter((round) => round.some((sql) => BOOKKEEPING.test(sql)));
    expect(bookkeeping).toEqual([[expect.stringMatching(BOOKKEEPING)]]);
    // Every write served from the cache checks its token inside the write's own round trip.
    const checks = rounds.filter((round) => round.some((sql) => TOKEN_CHECK.test(sql)));
    expect(checks.length).toBe(100 - lookups);
    for (const round of checks) expect(round.length).toBeGreaterThan(1);
    // The bookmark costs no statement of its own.
    expect(statements.filter((sql) => /^\s*select 1\s*$/i.test(sql))).toEqual([]);
    // No round trip is token work alone but the one read and the consumer's bookkeeping round.
    const tokenOnly = rounds.filter((round) =>
      round.every((sql) => TOKEN_LOOKUP.test(sql) || BOOKKEEPING.test(sql) || TOKEN_CHECK.test(sql)),
    );
    expect(tokenOnly).toHaveLength(lookups + 1);
    expect(await lastUsed(token)).toBeGreaterThanOrEqual(started);
  });

  it("records the day's first use (UTC): not a token last used earlier today, a token last used yesterday", async () => {
    const now = Date.now();
    const today = now - (now % 86_400_000);
    const recent = await newToken("recent", DEMO.people.bob, { lastUsedAt: new Date(today) });
    const old = await newToken("old", DEMO.people.bob, { lastUsedAt: new Date(today - 1) });
    const uses = captureTokenUses();
    expect((await encrypt(recent, 1)).status).toBe(200);
    expect((await encrypt(old, 2)).status).toBe(200);
    await settle();
    expect(uses.sent).toEqual([{ h: await sha256Hex(old), at: expect.any(Number) }]);
    await uses.flush();
    expect(await lastUsed(recent)).toBe(today);
    expect(await lastUsed(old)).toBeGreaterThanOrEqual(now);
  });

  it("the person's last_login follows the token's daily write, in the same statement, and is no profile change", async () => {
    const person = DEMO.people.carol;
    const row = () =>
      env.DB.prepare("SELECT last_login_at AS login, updated_at AS updated FROM people WHERE id = ?")
        .bind(person)
        .first<{ login: number | null; updated: number }>();
    await env.DB.prepare("UPDATE people SET last_login_at = ? WHERE id = ?")
      .bind(Date.now() - 2 * 86_400_000, person)
      .run();
    const before = (await row())!;
    const token = await newToken("login", person, { lastUsedAt: new Date(Date.now() - 25 * 3_600_000) });
    const uses = captureTokenUses();
    const d1 = countD1();
    expect((await call("/contacts", { token })).status).toBe(200);
    await settle();
    await uses.flush();
    expect(d1.queries.filter((sql) => BOOKKEEPING.test(sql))).toEqual([expect.stringMatching(/update access_tokens/)]);
    vi.restoreAllMocks();
    const after = (await row())!;
    expect(after.login).toBe(await lastUsed(token));
    expect(after.updated).toBe(before.updated);
  });
});

describe("the token-uses consumer", () => {
  it("writes the day's first use of 100 tokens in one statement; their requests made no bookkeeping statement", async () => {
    const started = Date.now();
    const tokens = await Promise.all(
      Array.from({ length: 100 }, (_, n) =>
        newToken(`batch${n}`, DEMO.people.bob, { lastUsedAt: new Date(started - 2 * 86_400_000) }),
      ),
    );
    // Verified before: each token's record is in KV (as after a first day's use).
    for (const token of tokens) expect((await call("/contacts", { token })).status).toBe(200);
    await settle();
    const uses = captureTokenUses();
    const requests = countD1();
    // Another day, the cache of this isolate forgotten: each token's first request of the day.
    vi.useFakeTimers({ toFake: ["Date"], now: started + 25 * 3_600_000 });
    for (const token of tokens) expect((await call("/contacts", { token })).status).toBe(200);
    await settle();
    expect(requests.queries.filter((sql) => /access_tokens|index_written/.test(sql))).toEqual([]);
    expect(uses.sent).toHaveLength(100);
    vi.restoreAllMocks();

    const flush = countD1();
    expect((await uses.flush()).retryMessages).toEqual([]);
    vi.useRealTimers();
    vi.restoreAllMocks();
    // One statement for the 100 tokens (and their people's last_login, by trigger) …
    expect(flush.queries.filter((sql) => BOOKKEEPING.test(sql))).toHaveLength(1);
    for (const token of tokens) expect(await lastUsed(token)).toBeGreaterThanOrEqual(started + 25 * 3_600_000);
    // … and the records rewritten through the index work: what the whole flush cost, for docs/capacity.md.
    console.log(JSON.stringify({ flush: { tokens: 100, statements: flush.statements, rounds: flush.rounds } }));
    // A device's record is not rewritten for its use (its object remembers it): the UPDATE is the whole flush.
    expect(flush.statements).toBe(1);
  });

  it("a batch delivered twice changes the rows once, and an older use never moves last_used back", async () => {
    const token = await newToken("twice", DEMO.people.bob, { lastUsedAt: new Date(Date.now() - 2 * 86_400_000) });
    const uses = captureTokenUses();
    expect((await call("/contacts", { token })).status).toBe(200);
    await settle();
    const sent = [...uses.sent];
    expect(sent).toHaveLength(1);
    await uses.flush();
    const first = await lastUsed(token);
    uses.sent.push(...sent, { h: sent[0]!.h, at: sent[0]!.at - 3 * 86_400_000 });
    expect((await uses.flush()).retryMessages).toEqual([]);
    expect(await lastUsed(token)).toBe(first);
  });
});

describe("a write with a token revoked after it was cached", () => {
  async function cachedToken(label: string, personId: number) {
    const token = await newToken(label, personId);
    expect((await call("/contacts", { token })).status).toBe(200); // verified and cached
    return token;
  }

  /** A revocation made in D1 alone, as `npm run token -- revoke` offline does: no cache, no object told. */
  const revokeInD1 = async (token: string) =>
    (await env.DB.prepare("UPDATE access_tokens SET revoked_at = ? WHERE token_hash = ? RETURNING id")
      .bind(Date.now(), await sha256Hex(token))
      .first<{ id: number }>())!.id;
  /** A revocation as another isolate's DELETE /me/devices/{id} makes it: D1 and the person's object, no cache here. */
  const revoke = async (token: string, personId = DEMO.people.bob) =>
    personObject(personId).revokeDevice(await revokeInD1(token));

  it("answers 401 at once and writes nothing; later reads are refused too", async () => {
    const token = await cachedToken("revoked_write", DEMO.people.bob);
    const kept = `Kept ${crypto.randomUUID().slice(0, 8)}`;
    expect((await call("/contacts/sync", { method: "POST", token, body: [{ display_name: kept }] })).status).toBe(200);

    await revoke(token); // this isolate's caches are not told
    const name = `Never ${crypto.randomUUID().slice(0, 8)}`;
    const refused = await call("/contacts/sync", { method: "POST", token, body: [{ display_name: name }] });
    expect(await expectError(refused, 401, "Unauthorized")).toContain("revoked");
    expect(refused.headers.get("WWW-Authenticate")).toMatch(/Bearer/);
    // Bob's contacts are kept in his object.
    const named = (displayName: string) =>
      countInPersonObject(DEMO.people.bob, "SELECT count(*) AS n FROM contacts WHERE display_name = ?", displayName);
    expect(await named(name)).toBe(0);
    expect(await named(kept)).toBe(1);

    // The refusal forgot the cached verification: reads stop now, not 30 s later.
    await expectError(await call("/contacts", { token }), 401, "Unauthorized");
  });

  it("answers 401 on a company write that reads before it writes, and adds nothing", async () => {
    const token = await cachedToken("revoked_admin", DEMO.people.alice);
    await revokeInD1(token); // the D1 write carries the token's check: nothing is added
    const phone = `+1415555${String(Math.floor(Math.random() * 9000) + 1000)}`;
    await expectError(
      await call("/companies/1/phones", { method: "POST", token, body: { phone_full: phone } }),
      401,
      "Unauthorized",
    );
    expect(await countRows("SELECT count(*) AS n FROM company_phones WHERE e164 = ?", phone)).toBe(0);
  });

  it("answers 401, not 400, to a write refused before it reached D1", async () => {
    const token = await cachedToken("revoked_invalid", DEMO.people.bob);
    await revoke(token);
    await expectError(
      await call("/contacts/sync", { method: "POST", token, body: { not: "a list" } }),
      401,
      "Unauthorized",
    );
  });

  it("a valid cached token's write still gets the statement's own error (409), not a 401", async () => {
    const token = await cachedToken("valid_conflict", DEMO.people.alice);
    const phone = `+1415556${String(Math.floor(Math.random() * 9000) + 1000)}`;
    expect((await call("/companies/1/phones", { method: "POST", token, body: { phone_full: phone } })).status).toBe(
      201,
    );
    await expectError(
      await call("/companies/1/phones", { method: "POST", token, body: { phone_full: phone } }),
      409,
      "Conflict",
    );
  });
});
