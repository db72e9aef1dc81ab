import { env } from "cloudflare:workers";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { KEY_WRITE_GAP_MS } from "../../src/db/kv-writes";
import { makeCurrent } from "../../src/services/trust-index/current";
import { markStale } from "../../src/services/trust-index/stale";
import { createDeps } from "../../src/services/create-deps";
import { trustLookupGet } from "../../src/routes/buzz/buzz.routes";
import { syncContacts } from "../../src/routes/contacts/contacts.routes";
import { answer, as, DEMO, indexKeysWritten, indexWorkApplied, personObject, secureNumberOf } from "../helpers";

/**
 * No KV key is written more than once a second (docs/architecture.md, "The trust index"):
 * both writers of the trust index — a person's object and D1's index work — write through
 * src/db/kv-writes.ts, which writes a key's first change at once and coalesces the changes that
 * follow within the second into one write when it has passed. Every write (put or delete) is
 * recorded here with its time.
 */

type Write = { key: string; at: number };
let writes: Write[] = [];

function recordWrites() {
  writes = [];
  const kv = env.TRUST_INDEX;
  const put = kv.put.bind(kv);
  const del = kv.delete.bind(kv);
  vi.spyOn(kv, "put").mockImplementation(((key: string, value: string, options?: KVNamespacePutOptions) => {
    writes.push({ key, at: Date.now() });
    return put(key, value, options);
  }) as never);
  vi.spyOn(kv, "delete").mockImplementation(((key: string) => {
    writes.push({ key, at: Date.now() });
    return del(key);
  }) as never);
}

afterEach(() => {
  vi.restoreAllMocks();
});

/** Per key, its write times in order. */
function timesPerKey(prefix: string): Map<string, number[]> {
  const per = new Map<string, number[]>();
  for (const write of writes.filter((w) => w.key.startsWith(prefix))) {
    per.set(write.key, [...(per.get(write.key) ?? []), write.at]);
  }
  return per;
}

/** The smallest gap between two writes of one key (Infinity: no key was written twice). */
const smallestGap = (per: Map<string, number[]>) =>
  Math.min(Infinity, ...[...per.values()].flatMap((times) => times.slice(1).map((at, i) => at - times[i]!)));

let secure = "";
let receiving = { number_code: "", number: "" };

beforeAll(async () => {
  ({ receiving, e164: secure } = await secureNumberOf("bob"));
  expect((await as("bob").send("DELETE", "/contacts/clear")).status).toBe(204);
  await indexKeysWritten(DEMO.people.bob);
});

async function trusted(caller: string): Promise<boolean> {
  const params = new URLSearchParams({ ...receiving, inbound_code: "1", inbound: caller.slice(2) });
  return (await answer(await as("telephony").get(`/apps/buzz/trust-lookup?${params}`), 200, trustLookupGet)).trusted;
}

describe("at most one write per key per second", () => {
  it("a sync of 500 contacts repeated 20 times in a few seconds writes each key at most once a second, and ends with every key right", async () => {
    const rounds = 20;
    // Round r gives contact k the phone +1 212 5(r+10) kkkk: every round changes all 100 buckets (k's last two digits).
    const phone = (round: number, k: number) => `+12125${round + 10}${String(k).padStart(4, "0")}`;
    recordWrites();
    const started = Date.now();
    const created = await as("bob").send(
      "POST",
      "/contacts/sync",
      Array.from({ length: 500 }, (_, k) => ({ display_name: `Rate ${k}`, phone_numbers: [phone(0, k)] })),
    );
    const ids = (await answer(created, 200, syncContacts)).map((contact) => contact.id);
    for (let round = 1; round < rounds; round++) {
      const synced = await as("bob").send(
        "POST",
        "/contacts/sync",
        ids.map((id, k) => ({ id, display_name: `Rate ${k}`, phone_numbers: [phone(round, k)] })),
      );
      expect(synced.status).toBe(200);
    }
    const syncing = Date.now() - started;
    // The changes left due within their second are written once it has passed.
    await indexKeysWritten(DEMO.people.bob);
    const elapsed = Date.now() - started;

    const per = timesPerKey(`rcv`);
    const buckets = [...per.keys()].filter((key) => key.startsWith(`rcvn:${secure}:`));
    expect(buckets).toHaveLength(100);
    // Never two writes of one key within a second.
    expect(smallestGap(per)).toBeGreaterThanOrEqual(KEY_WRITE_GAP_MS);
    // So a key is written at most once per second of the run, whatever the number of syncs.
    const most = Math.max(...[...per.values()].map((times) => times.length));
    expect(most).toBeLessThanOrEqual(Math.ceil(elapsed / KEY_WRITE_GAP_MS) + 1);
    const total = [...per.values()].reduce((n, times) => n + times.length, 0);
    expect(total).toBeLessThan(rounds * 101);
    console.log(
      `20 syncs of 500 in ${syncing} ms (written by ${elapsed} ms): ${total} writes of ${per.size} keys ` +
        `(uncoalesced: up to ${rounds * 101}); at most ${most} per key; smallest gap ${smallestGap(per)} ms`,
    );

    // The last round's state, in KV: every key as the object computes it now.
    vi.restoreAllMocks();
    const values = await personObject(DEMO.people.bob).indexValues();
    expect(Object.keys(values)).toHaveLength(101);
    for (const [key, value] of Object.entries(values)) expect(await env.TRUST_INDEX.get(key)).toBe(value);
    expect(await trusted(phone(rounds - 1, 137))).toBe(true);
    expect(await trusted(phone(rounds - 2, 137))).toBe(false);
    expect(await trusted(phone(0, 42))).toBe(false);
  });

  it("D1's index work: a number changing hands ten times in a row is written at most once a second, and ends right", async () => {
    const deps = createDeps(env);
    const { db } = deps;
    const e164 = "+16175550199";
    const key = `num:${e164}`;
    recordWrites();
    const deferred: string[] = [];
    for (let i = 0; i < 10; i++) {
      // Acme's verified phone, then not, then again …: each change makes the `num:` record stale.
      await (i % 2 === 0
        ? env.DB.prepare(
            "INSERT INTO company_phones (company_id, country_code, phone_number, e164, status) VALUES (1, '1', '6175550199', ?, 'verified')",
          )
            .bind(e164)
            .run()
        : env.DB.prepare("DELETE FROM company_phones WHERE e164 = ?").bind(e164).run());
      await db.batch([markStale(db, [key], new Date())]);
      deferred.push(...(await makeCurrent(deps, { keys: [key] })).deferred);
    }
    // Applied again once the second has passed (the background queue's 1 s delay does this in production).
    await indexWorkApplied([key]);
    const times = timesPerKey("num:").get(key)!;
    expect(deferred.length).toBeGreaterThan(0);
    expect(times.length).toBeLessThan(10);
    expect(smallestGap(timesPerKey("num:"))).toBeGreaterThanOrEqual(KEY_WRITE_GAP_MS);
    // The last change (the 10th: removed) is what KV holds: nobody calls from the number, the key is gone.
    expect(await env.TRUST_INDEX.get(key)).toBeNull();
  });
});
