import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { makeCurrent } from "../../src/services/trust-index/current";
import { EMPTY_FILL_TTL_SECONDS } from "../../src/services/trust-index/read";
import { markStale } from "../../src/services/trust-index/stale";
import { createDeps } from "../../src/services/create-deps";
import type { PersonStub } from "../../src/objects/person/stub";
import { personObjectsFrom } from "../../src/services/person-objects";
import { recordBlockedCall } from "../../src/services/blocked-calls";
import { lookupTrust } from "../../src/services/trust-lookup";
import { phoneFromInternational } from "../../src/lib/phone";
import { listBlocked, trustLookupGet } from "../../src/routes/buzz/buzz.routes";
import { syncContacts } from "../../src/routes/contacts/contacts.routes";
import {
  answer,
  as,
  call,
  countD1,
  countInPersonObject,
  DEMO,
  expectError,
  indexKeysWritten,
  inPersonObject,
  personObject,
  secureNumberOf,
} from "../helpers";

type Fields = Partial<Record<"number_code" | "number" | "inbound_code" | "inbound" | "caller_id", string>>;

const telephony = DEMO.tokens.telephony;

/** GET /apps/buzz/trust-lookup as the telephony provider. */
async function lookup(fields: Fields) {
  return answer(
    await call(`/apps/buzz/trust-lookup?${new URLSearchParams(fields)}`, { token: telephony }),
    200,
    trustLookupGet,
  );
}

/** The secure number heartbeat gives a demo person, as lookup fields. */
const receivingOf = async (who: "alice" | "bob" | "carol") => (await secureNumberOf(who)).receiving;

/** Rewrites `num:` keys from D1 the way a command's index work does (for rows changed by SQL here). */
async function reindex(...keys: string[]) {
  const deps = createDeps(env);
  await deps.db.batch([markStale(deps.db, keys, new Date())]);
  await makeCurrent(deps, { keys });
}

const receiverKeyOf = (fields: { number_code: string; number: string }) => `rcv:+${fields.number_code}${fields.number}`;

/** Empties the trust index, as after a deploy or an eviction. */
async function clearKv() {
  let cursor: string | undefined;
  do {
    const page = await env.TRUST_INDEX.list({ cursor });
    await Promise.all(page.keys.map((key) => env.TRUST_INDEX.delete(key.name)));
    cursor = page.list_complete ? undefined : page.cursor;
  } while (cursor);
}

/** Polls until `check` passes: blocked calls are written after the answer (waitUntil). */
async function eventually(check: () => Promise<void>, timeoutMs = 2000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (err) {
      if (Date.now() > until) throw err;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }
}

const alice = DEMO.people.alice;

describe("trust-lookup: who may call", () => {
  it("401 without a token, 403 for a person token or a service without `calls:lookup`", async () => {
    const path = "/apps/buzz/trust-lookup?number_code=1&number=2025550101&inbound_code=1&inbound=4155550100";
    await expectError(await call(path), 401, "Unauthorized");
    await expectError(await as("alice").get(path), 403, "Forbidden");
    await expectError(await as("scanner").get(path), 403, "Forbidden");
    await expectError(await as("scanner").send("POST", "/apps/buzz/trust-lookup", {}), 403, "Forbidden");
  });

  it("a number no member holds is untrusted with user_id 0", async () => {
    // The last pool number; this file's heartbeats take the lowest ones.
    expect(await lookup({ number_code: "1", number: "2025550110", inbound_code: "1", inbound: "4155550100" })).toEqual({
      trusted: false,
      user_id: 0,
      caller_verification: null,
    });
  });

  it("trusts the phone of a company the receiver belongs to, once they hold a secure number", async () => {
    const receiving = await receivingOf("alice");
    expect(await lookup({ ...receiving, inbound_code: "1", inbound: "4155550100" })).toEqual({
      trusted: true,
      user_id: alice,
      caller_verification: null,
    });
    // Bob is at Acme too; Carol is not.
    expect(await lookup({ ...(await receivingOf("bob")), inbound_code: "+1", inbound: "(415) 555-0100" })).toEqual({
      trusted: true,
      user_id: DEMO.people.bob,
      caller_verification: null,
    });
    expect(await lookup({ ...(await receivingOf("carol")), inbound_code: "US", inbound: "4155550100" })).toEqual({
      trusted: false,
      user_id: DEMO.people.carol,
      caller_verification: null,
    });
  });

  it("trusts a contact's phone, and stops as soon as the number is removed from the contact", async () => {
    const receiving = await receivingOf("alice");
    const caller = { inbound_code: "44", inbound: "7911 123456" };
    expect(await lookup({ ...receiving, ...caller })).toEqual({
      trusted: false,
      user_id: alice,
      caller_verification: null,
    });

    const created = await as("alice").send("POST", "/contacts/sync", [
      { display_name: "Uncle Lee", phone_numbers: ["+44 7911 123456", "+1 415 555 0142"] },
    ]);
    await indexKeysWritten(alice);
    const id = (await answer(created, 200, syncContacts))[0]!.id;
    expect(await lookup({ ...receiving, ...caller })).toEqual({
      trusted: true,
      user_id: alice,
      caller_verification: null,
    });
    // Warm cache now; the write below must rewrite it, not leave it. The receiver record lists
    // the buckets (last two digits) holding contact phones; each bucket key holds its phones.
    const buckets = async () => (await env.TRUST_INDEX.get<{ nb: number[] }>(receiverKeyOf(receiving), "json"))!.nb;
    const bucket = (dd: string) => env.TRUST_INDEX.get(`rcvn:+${receiving.number_code}${receiving.number}:${dd}`);
    expect(await buckets()).toEqual(expect.arrayContaining([42, 56]));
    expect(await bucket("56")).toBe(",+447911123456,");

    const put = await as("alice").send("PUT", `/contacts/${id}`, { phone_numbers: ["+1 415 555 0142"] });
    expect(put.status).toBe(200);
    // A second change of Alice's keys within the second: written once that second has passed.
    await indexKeysWritten(alice);
    // Rewritten with the new set, not merely deleted: bucket 56 is no longer listed.
    expect(await buckets()).toContain(42);
    expect(await buckets()).not.toContain(56);
    expect(await bucket("42")).toContain(",+14155550142,");
    expect(await lookup({ ...receiving, ...caller })).toEqual({
      trusted: false,
      user_id: alice,
      caller_verification: null,
    });
    expect(await lookup({ ...receiving, inbound_code: "1", inbound: "4155550142" })).toEqual({
      trusted: true,
      user_id: alice,
      caller_verification: null,
    });

    expect((await as("alice").send("DELETE", `/contacts/${id}`)).status).toBe(200);
    await indexKeysWritten(alice);
    expect(await lookup({ ...receiving, inbound_code: "1", inbound: "4155550142" })).toEqual({
      trusted: false,
      user_id: alice,
      caller_verification: null,
    });
  });

  it("trusts the phones and secure number of a person the receiver trusted, and not after untrusting", async () => {
    const receiving = await receivingOf("alice");
    const carolSecure = await receivingOf("carol");
    await env.DB.prepare(
      "INSERT INTO person_phones (person_id, country_code, phone_number, e164, \"primary\", confirmed) VALUES (3, '1', '3125550177', '+13125550177', 1, 1)",
    ).run();
    await reindex("num:+13125550177");
    const fromCarolPhone = { ...receiving, inbound_code: "1", inbound: "3125550177" };
    const fromCarolSecure = { ...receiving, inbound_code: carolSecure.number_code, inbound: carolSecure.number };
    expect(await lookup(fromCarolPhone)).toEqual({ trusted: false, user_id: alice, caller_verification: null });

    expect(
      (await as("carol").send("POST", "/contacts/requests", { user_id: alice, contact_reason: "hi" })).status,
    ).toBe(201);
    expect((await as("alice").send("POST", `/contacts/trust/${DEMO.people.carol}`, { trusted: 1 })).status).toBe(201);
    await indexKeysWritten(alice);
    expect(await lookup(fromCarolPhone)).toEqual({ trusted: true, user_id: alice, caller_verification: null });
    expect(await lookup(fromCarolSecure)).toEqual({ trusted: true, user_id: alice, caller_verification: null });

    expect((await as("alice").send("POST", `/contacts/trust/${DEMO.people.carol}`, { trusted: 0 })).status).toBe(201);
    await indexKeysWritten(alice);
    expect(await lookup(fromCarolPhone)).toEqual({ trusted: false, user_id: alice, caller_verification: null });
    expect(await lookup(fromCarolSecure)).toEqual({ trusted: false, user_id: alice, caller_verification: null });
  });

  it("a company set to `negative` is never trusted, not even the receiver's own; `trusted` companies are", async () => {
    const receiving = await receivingOf("alice");
    // Globex's verified phone is D1's (its `num:` record); Alice's settings are her object's, which
    // rewrites her receiver record itself after each change.
    await env.DB.prepare(
      "INSERT INTO company_phones (company_id, country_code, phone_number, e164, status) VALUES (2, '1', '6175550100', '+16175550100', 'verified')",
    ).run();
    await reindex("num:+16175550100");
    const object = personObject(alice);
    const { acme, globex } = DEMO.companies;
    expect(await object.setCompanyTrust(globex, "trusted", true)).toEqual({ ok: true });
    expect(await object.setCompanyTrust(acme, "negative", true)).toEqual({ ok: true });
    await indexKeysWritten(alice);
    const fromGlobex = { ...receiving, inbound_code: "1", inbound: "6175550100" };
    const fromAcme = { ...receiving, inbound_code: "1", inbound: "4155550100" };
    try {
      expect(await lookup(fromGlobex)).toEqual({ trusted: true, user_id: alice, caller_verification: null });
      expect(await lookup(fromAcme)).toEqual({ trusted: false, user_id: alice, caller_verification: null });

      expect(await object.setCompanyTrust(globex, "negative", true)).toEqual({ ok: true });
      await indexKeysWritten(alice);
      expect(await lookup(fromGlobex)).toEqual({ trusted: false, user_id: alice, caller_verification: null });
    } finally {
      await object.setCompanyTrust(globex, null, true);
      await object.setCompanyTrust(acme, null, true);
      await indexKeysWritten(alice);
    }
    expect(await lookup(fromAcme)).toEqual({ trusted: true, user_id: alice, caller_verification: null });
    expect(await lookup(fromGlobex)).toEqual({ trusted: false, user_id: alice, caller_verification: null });
  });
});

describe("trust-lookup: input never causes an error", () => {
  it.each<[string, Fields, "none" | "alice"]>([
    ["no fields at all", {}, "none"],
    [
      "an unparseable receiving number",
      { number_code: "1", number: "abc", inbound_code: "1", inbound: "4155550100" },
      "none",
    ],
    [
      "a receiving number too short to exist",
      { number_code: "1", number: "555", inbound_code: "1", inbound: "4155550100" },
      "none",
    ],
    [
      "an unknown country code",
      { number_code: "999", number: "2025550101", inbound_code: "1", inbound: "4155550100" },
      "none",
    ],
    ["a missing caller", { number_code: "1", number: "ALICE" }, "alice"],
    [
      "an unparseable caller",
      { number_code: "1", number: "ALICE", inbound_code: "1", inbound: "not-a-number" },
      "alice",
    ],
    [
      "a caller with a bad country code",
      { number_code: "1", number: "ALICE", inbound_code: "ZZ", inbound: "4155550100" },
      "alice",
    ],
    [
      "an absurdly long caller",
      { number_code: "1", number: "ALICE", inbound_code: "1", inbound: "9".repeat(500) },
      "alice",
    ],
  ])("%s → 200 trusted:false", async (_, fields, receiver) => {
    const { number } = await receivingOf("alice");
    const resolved = { ...fields, ...(fields.number === "ALICE" ? { number } : {}) };
    expect(await lookup(resolved)).toEqual({
      trusted: false,
      user_id: receiver === "alice" ? alice : 0,
      caller_verification: null,
    });
  });

  it("POST with a form body answers like the GET", async () => {
    const receiving = await receivingOf("alice");
    const body = new URLSearchParams({ ...receiving, inbound_code: "1", inbound: "4155550100" }).toString();
    const response = await call("/apps/buzz/trust-lookup", {
      method: "POST",
      token: telephony,
      body,
      headers: { "Content-Type": "application/x-www-form-urlencoded" },
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ trusted: true, user_id: alice, caller_verification: null });
  });

  it("POST with JSON (numbers as numbers too) answers like the GET", async () => {
    const receiving = await receivingOf("alice");
    const response = await call("/apps/buzz/trust-lookup", {
      method: "POST",
      token: telephony,
      body: { number_code: 1, number: Number(receiving.number), inbound_code: "1", inbound: "4155550100" },
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ trusted: true, user_id: alice, caller_verification: null });
  });

  it.each([
    ["malformed JSON", '{"number": ', "application/json"],
    ["a JSON array", "[1, 2]", "application/json"],
    ["JSON null", "null", "application/json"],
    ["an empty body", "", "application/json"],
    ["plain text", "hello", "text/plain"],
    ["a form of junk", "a=1&number=%%%", "application/x-www-form-urlencoded"],
  ])("POST with %s → 200 trusted:false, user_id 0", async (_, body, type) => {
    const response = await call("/apps/buzz/trust-lookup", {
      method: "POST",
      token: telephony,
      body,
      headers: { "Content-Type": type },
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ trusted: false, user_id: 0, caller_verification: null });
  });

  it("repeated query values are tolerated and read as unreadable, never as the first or last value", async () => {
    const receiving = await receivingOf("alice");
    const response = await call(
      `/apps/buzz/trust-lookup?number_code=1&number=${receiving.number}&number=1&inbound_code=1&inbound=4155550100&inbound_code=x`,
      { token: telephony },
    );
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ trusted: false, user_id: 0, caller_verification: null });
    expect(response.headers.get("Lookup-Problem")).toBe("receiver unreadable, caller unreadable");
  });

  it("a POST's body wins over its query string, also over a field the query string repeated", async () => {
    const receiving = await receivingOf("alice");
    const response = await call(`/apps/buzz/trust-lookup?number_code=1&number=2025550000&number=2025550001`, {
      method: "POST",
      token: telephony,
      body: { ...receiving, inbound_code: "1", inbound: "4155550100" },
    });
    expect(response.headers.get("Lookup-Problem")).toBeNull();
    expect(await response.json()).toMatchObject({ user_id: alice });
  });
});

describe("trust-lookup: the KV fast path", () => {
  it("answers the same with an empty and with a warm index", async () => {
    const receiving = await receivingOf("alice");
    const cases: Fields[] = [
      { ...receiving, inbound_code: "1", inbound: "4155550100" },
      { ...receiving, inbound_code: "1", inbound: "4155550123" },
      { ...receiving, inbound_code: "1", inbound: "oops" },
      { number_code: "1", number: "2025550109", inbound_code: "1", inbound: "4155550100" },
      { number_code: "1", number: "x", inbound_code: "1", inbound: "4155550100" },
    ];
    await clearKv();
    const cold = [];
    for (const fields of cases) cold.push(await lookup(fields));
    expect((await env.TRUST_INDEX.list()).keys.length).toBeGreaterThan(0);
    const warm = [];
    for (const fields of cases) warm.push(await lookup(fields));
    expect(warm).toEqual(cold);
    expect(cold.map((answer) => answer.trusted)).toEqual([true, false, false, false, false]);
  });

  it("reads only the index on a warm path: a planted entry decides", async () => {
    // Proves the fast path is KV: D1 would say Acme's phone is trusted.
    const receiving = await receivingOf("alice");
    await lookup({ ...receiving, inbound_code: "1", inbound: "4155550100" });
    // Alice's record as if she belonged to no company.
    const key = receiverKeyOf(receiving);
    await env.TRUST_INDEX.put(key, JSON.stringify({ p: alice, nb: [], tp: [], c: [], tc: [], nc: [] }));
    try {
      expect(await lookup({ ...receiving, inbound_code: "1", inbound: "4155550100" })).toEqual({
        trusted: false,
        user_id: alice,
        caller_verification: null,
      });
    } finally {
      await env.TRUST_INDEX.delete(key);
    }
    expect(await lookup({ ...receiving, inbound_code: "1", inbound: "4155550100" })).toEqual({
      trusted: true,
      user_id: alice,
      caller_verification: null,
    });
  });

  it("before the index is complete, a miss fills it: records with content carry no TTL, an unknown caller's empty record lives about 60 s", async () => {
    // An empty fill is put directly: it could land after a write's rewrite, so it must not outlive ~60 s.
    // A fill with content goes through the index work (leased, versioned), so it stays until a write changes it.
    const receiving = await receivingOf("alice");
    await clearKv(); // the mark too: lookups fall back to D1
    const before = Math.floor(Date.now() / 1000);
    await lookup({ ...receiving, inbound_code: "1", inbound: "4155550100" });
    await lookup({ ...receiving, inbound_code: "1", inbound: "4155550177" });
    // The index's keys only: a token verified against D1 meanwhile is cached in KV too (`tok:`).
    const expirations = async () => {
      const { keys } = await env.TRUST_INDEX.list();
      return Object.fromEntries(
        keys.filter((key) => !key.name.startsWith("tok:")).map((key) => [key.name, key.expiration!]),
      );
    };
    const [receiver, acme, unknown] = [receiverKeyOf(receiving), "num:+14155550100", "num:+14155550177"];
    await eventually(async () =>
      expect(Object.keys(await expirations()).sort()).toEqual([acme, unknown, receiver].sort()),
    );
    const ttl = await expirations();
    expect(ttl[receiver]).toBeUndefined();
    expect(ttl[acme]).toBeUndefined();
    expect(ttl[unknown]).toBeGreaterThanOrEqual(before + EMPTY_FILL_TTL_SECONDS);
    expect(ttl[unknown]).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000) + EMPTY_FILL_TTL_SECONDS + 1);
  });
});

describe("trust-lookup: blocked calls", () => {
  it("records an untrusted call to a member, and not a trusted one nor one to nobody", async () => {
    const receiving = await receivingOf("alice");
    await lookup({ ...receiving, inbound_code: "1", inbound: "415 555 0166", caller_id: "SPAM LIKELY" });
    await lookup({ ...receiving, inbound_code: "1", inbound: "4155550100", caller_id: "ACME" });
    await lookup({ number_code: "1", number: "2025550108", inbound_code: "1", inbound: "4155550167" });

    await eventually(async () => {
      const blocked = await answer(await as("alice").get("/apps/buzz/blocked"), 200, listBlocked);
      expect(blocked[0]).toEqual({
        id: alice,
        blocked_call_id: expect.any(Number),
        caller_id: "SPAM LIKELY",
        country_code: "1",
        phone_number: "4155550166",
        reason: null,
        created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      });
      expect(blocked.some((call) => call.caller_id === "ACME")).toBe(false);
    });
    // The call to a number nobody holds is recorded nowhere (there is no one to keep it).
    expect(
      await countInPersonObject(alice, "SELECT count(*) AS n FROM blocked_calls WHERE phone_number = '4155550167'"),
    ).toBe(0);
  });

  it("a HEAD of the lookup answers its headers and records no call (a read asks, it does not act)", async () => {
    const receiving = await receivingOf("alice");
    const head = await call(
      `/apps/buzz/trust-lookup?${new URLSearchParams({ ...receiving, inbound_code: "1", inbound: "3035550191", caller_id: "head-probe" })}`,
      { method: "HEAD", token: telephony },
    );
    expect(head.status).toBe(200);
    // A GET after it: once its call is recorded, the HEAD's would have been too (each after its answer).
    await lookup({ ...receiving, inbound_code: "1", inbound: "3035550191", caller_id: "get-after-head" });
    await eventually(async () => {
      expect(
        await countInPersonObject(alice, "SELECT count(*) AS n FROM blocked_calls WHERE caller_id = 'get-after-head'"),
      ).toBe(1);
    });
    expect(
      await countInPersonObject(alice, "SELECT count(*) AS n FROM blocked_calls WHERE caller_id = 'head-probe'"),
    ).toBe(0);
  });

  it("a burst of untrusted calls is recorded in full in the receiver's object, with no D1 write", async () => {
    const receiving = await receivingOf("alice");
    const unknown = { ...receiving, inbound_code: "1", inbound: "3035550177" };
    await lookup({ ...unknown, caller_id: "burst-warm" }); // warms the token caches and the index
    await new Promise((resolve) => setTimeout(resolve, 50));

    const d1 = countD1();
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) => lookup({ ...unknown, caller_id: `burst-${i}` })),
    );
    expect(answers.every((answer) => !answer.trusted && answer.user_id === alice)).toBe(true);
    await eventually(async () => {
      expect(
        await countInPersonObject(
          alice,
          "SELECT count(*) AS n FROM blocked_calls WHERE caller_id LIKE 'burst-%' AND caller_id != 'burst-warm'",
        ),
      ).toBe(40);
    });
    expect(d1.statements).toBe(0);
    vi.restoreAllMocks();
  });

  it("a person's object keeps their newest 1,000 blocked calls", async () => {
    const personId = 800_000 + Math.floor(Math.random() * 100_000); // an object of its own
    await inPersonObject(
      personId,
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000)
       INSERT INTO blocked_calls (id, caller_id, country_code, phone_number, created_at)
       SELECT i, 'old-' || i, '1', '3035550100', ? FROM n`,
      Date.now() - 60_000,
    );
    for (let i = 0; i < 5; i++) {
      await recordBlockedCall(createDeps(env), {
        personId,
        callerId: `new-${i}`,
        countryCode: "1",
        phoneNumber: "3035550178",
      });
    }
    expect(await countInPersonObject(personId, "SELECT count(*) AS n FROM blocked_calls")).toBe(1000);
    expect(
      await countInPersonObject(personId, "SELECT count(*) AS n FROM blocked_calls WHERE caller_id LIKE 'new-%'"),
    ).toBe(5);
    expect(await countInPersonObject(personId, "SELECT count(*) AS n FROM blocked_calls WHERE id <= 5")).toBe(0);
  });

  it("a call joining another request's group of blocked calls returns at once: no request awaits another's I/O", async () => {
    // The group's leader sends the append; an append that never completes must not hold the others
    // (under wrangler dev that wait was ~95 "Promise will never complete" errors per 100 lookups).
    const hanging = { recordBlockedCalls: () => new Promise<void>(() => {}) } as unknown as PersonStub;
    const persons = personObjectsFrom(() => hanging);
    const personId = 700_000 + Math.floor(Math.random() * 100_000);
    const blocked = { personId, callerId: null, countryCode: "1", phoneNumber: "3035550170" };
    const deps = { ...createDeps(env), objects: persons };
    void recordBlockedCall(deps, blocked);
    const follower = recordBlockedCall(deps, { ...blocked, phoneNumber: "3035550171" });
    const settled = await Promise.race([
      follower.then(() => "returned"),
      new Promise((resolve) => setTimeout(() => resolve("waiting on the leader"), 200)),
    ]);
    expect(settled).toBe("returned");
  });

  it("a failed append of a blocked call is logged without the numbers or the caller id", async () => {
    const lines: string[] = [];
    vi.spyOn(console, "error").mockImplementation((...args: unknown[]) => void lines.push(args.map(String).join(" ")));
    const broken = {
      recordBlockedCalls: () => Promise.reject(new Error("SQLITE_IOERR: disk I/O error")),
    } as unknown as PersonStub;
    const failing = personObjectsFrom(() => broken);
    try {
      await recordBlockedCall(
        { ...createDeps(env), objects: failing },
        {
          personId: alice,
          callerId: "LEAK CHECK",
          countryCode: "1",
          phoneNumber: "3035550179",
        },
      );
    } finally {
      vi.restoreAllMocks();
    }
    const line = lines.find((entry) => entry.includes("recording blocked calls failed"));
    expect(line).toContain("SQLITE_IOERR");
    expect(line).not.toContain("3035550179");
    expect(line).not.toContain("LEAK CHECK");
  });

  it("a failed trust-index read is logged by key kinds, without the receiver's or the caller's number", async () => {
    const lines: string[] = [];
    vi.spyOn(console, "error").mockImplementation((...args: unknown[]) => void lines.push(args.map(String).join(" ")));
    const kv = { get: () => Promise.reject(new Error("KV GET failed: 500 Internal Server Error")) };
    const receiver = phoneFromInternational("+12025550177")!;
    const caller = phoneFromInternational("+14155550166")!;
    try {
      await lookupTrust(
        { ...createDeps(env), kv: kv as unknown as KVNamespace },
        {
          receiver: { phone: receiver, problem: null, code: "", number: receiver.e164 },
          caller: { phone: caller, problem: null, code: "", number: caller.e164 },
          callerId: undefined,
        },
        null,
        () => undefined,
      );
    } finally {
      vi.restoreAllMocks();
    }
    const line = lines.find((entry) => entry.includes("trust index read failed"));
    expect(line).toContain("rcv");
    expect(line).not.toContain("2025550177");
    expect(line).not.toContain("4155550166");
  });

  it("records the raw caller when it cannot be parsed", async () => {
    const receiving = await receivingOf("alice");
    await lookup({ ...receiving, inbound_code: "1", inbound: "unknown-caller" });
    await eventually(async () => {
      const blocked = await answer(await as("alice").get("/apps/buzz/blocked"), 200, listBlocked);
      expect(blocked[0]).toMatchObject({ caller_id: "", country_code: "1", phone_number: "unknown-caller" });
    });
  });
});
