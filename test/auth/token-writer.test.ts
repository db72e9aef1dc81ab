import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createDb } from "../../src/db/client";
import { sha256Hex } from "../../src/lib/crypto";
import { createDeps } from "../../src/services/create-deps";
import { putReservedToken, reserveTokenRecord } from "../../src/services/trust-index/token-slots";
import { makeCurrent } from "../../src/services/trust-index/current";
import { markStale } from "../../src/services/trust-index/stale";
import { recordOf } from "../../src/services/token-records";
import { call, captureTokenUses, countD1, DEMO, insertToken } from "../helpers";

/**
 * One writer of `tok:` keys (docs/architecture.md, "Tokens" and "The trust index"): a token's fill
 * takes its key's write slot in the statement that reads the token, and every other write of the
 * key goes through the index work, so a valid record read before a revocation never lands after
 * the revocation's refused one, and no put is followed by a correction within the second.
 */

afterEach(() => vi.restoreAllMocks());
const settle = () => new Promise((resolve) => setTimeout(resolve, 150));

async function newToken(label: string) {
  const token = `pk_test_${label}_${crypto.randomUUID().replaceAll("-", "")}`;
  await insertToken(token, { personId: DEMO.people.bob });
  return { token, hash: await sha256Hex(token) };
}

describe("a token's first use", () => {
  it("costs 1 D1 statement in 1 round trip (2 in 2 before: the read, the bookkeeping; 3 in 3 with the fill's re-read)", async () => {
    const { token, hash } = await newToken("first");
    const uses = captureTokenUses();
    const d1 = countD1();
    expect((await call("/contacts", { token })).status).toBe(200);
    await settle();
    // The read that takes the key's slot; the day's bookkeeping leaves as a message to `token-uses`.
    expect(d1.queries).toEqual([expect.stringMatching(/insert into "index_written"[\s\S]*from "access_tokens"/)]);
    expect(d1.rounds).toBe(1);
    expect(uses.sent).toEqual([{ h: hash, at: expect.any(Number) }]);
    vi.restoreAllMocks();
  });
});

describe("a valid record and a revocation", () => {
  it("the revocation's put waits for the fill that read before it, and lands last", async () => {
    const { hash } = await newToken("race");
    const key = `tok:${hash}`;
    const db = createDb(env.DB);
    const kv = env.TRUST_INDEX;
    const puts: { at: number; value: string }[] = [];
    const put = kv.put.bind(kv);
    vi.spyOn(kv, "put").mockImplementation(async (k: string, value: unknown, options?: KVNamespacePutOptions) => {
      if (k === key) puts.push({ at: Date.now(), value: String(value) });
      return put(k, value as string, options);
    });

    // A verification reads the token valid and takes the slot …
    const slot = Date.now();
    const read = await reserveTokenRecord(db, hash, new Date(slot));
    expect(read.reserved).toBe(true);
    // … then the token is revoked, and the revocation's index work is applied before the fill's put lands.
    const revokedAt = Date.now();
    await env.DB.prepare("UPDATE access_tokens SET revoked_at = ? WHERE token_hash = ?").bind(revokedAt, hash).run();
    await db.batch([markStale(db, [key], new Date())]);
    const first = await makeCurrent(createDeps(env), { keys: [key], force: true });
    expect(first.deferred).toEqual([key]); // the slot holds it back: nothing is put yet
    await putReservedToken(kv, hash, recordOf(read.row!, new Date()));
    // The second is waited out, then the refused record lands, after the valid one.
    const settled = await makeCurrent(createDeps(env), {
      keys: [key],
      force: true,
      waitDeferred: true,
      now: new Date(),
    });
    expect([...settled.applied, ...settled.deferred]).toContain(key);
    const final = await makeCurrent(createDeps(env), { keys: [key], force: true, waitDeferred: true });
    expect(final.failed).toEqual([]);

    expect(await kv.get(key, "json")).toEqual({ v: 1, refused: "the bearer token has been revoked" });
    expect(puts.map((write) => JSON.parse(write.value) as object)).toEqual([
      expect.objectContaining({ principal: expect.anything() }),
      { v: 1, refused: "the bearer token has been revoked" },
    ]);
    // A second after the slot was taken (the fill's put follows its slot within milliseconds).
    expect(puts[1]!.at).toBeGreaterThanOrEqual(slot + 1_000);
  });

  it("a fill does not take a slot written less than a second ago, and puts nothing", async () => {
    const { hash } = await newToken("slot");
    const db = createDb(env.DB);
    expect((await reserveTokenRecord(db, hash, new Date())).reserved).toBe(true);
    const again = await reserveTokenRecord(db, hash, new Date());
    expect(again.reserved).toBe(false);
    expect(again.row?.personId).toBe(DEMO.people.bob);
    expect((await reserveTokenRecord(db, hash, new Date(Date.now() + 1_000))).reserved).toBe(true);
  });

  it("an unknown token takes no slot and gets no record", async () => {
    const db = createDb(env.DB);
    const hash = await sha256Hex(`pk_test_unknown_${crypto.randomUUID()}`);
    expect(await reserveTokenRecord(db, hash, new Date())).toEqual({ row: undefined, reserved: false });
    const row = await env.DB.prepare("SELECT count(*) AS n FROM index_written WHERE key = ?")
      .bind(`tok:${hash}`)
      .first<{ n: number }>();
    expect(row!.n).toBe(0);
  });
});
