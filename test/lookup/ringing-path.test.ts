import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { phoneFromInternational, phoneFromParts } from "../../src/lib/phone";
import { addCompanyPhone, verifyCompanyPhone } from "../../src/services/company-phones";
import { createDb } from "../../src/db/client";
import { createDeps } from "../../src/services/create-deps";
import { makeCurrent } from "../../src/services/trust-index/current";
import { markStale } from "../../src/services/trust-index/stale";
import { callLookup, trustLookupGet } from "../../src/routes/buzz/buzz.routes";
import { syncContacts } from "../../src/routes/contacts/contacts.routes";
import {
  answer,
  as,
  call,
  countD1,
  countInPersonObject,
  DEMO,
  insertToken,
  personObject,
  startOfUsableWindow,
  withoutIndexMark,
  indexKeysWritten,
  trustIndexSettled,
  secureNumberOf,
} from "../helpers";
import { createApp } from "../../src/app";
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";

/**
 * The ringing path at provider scale (docs/architecture.md, "The trust
 * index"; docs/performance.md): a warm trust-lookup reads KV only, whatever
 * the transport; the provider has its own budget; a company phone change
 * rewrites one key whatever the company's size.
 */

afterEach(() => {
  vi.restoreAllMocks();
});

async function aliceNumber() {
  return (await secureNumberOf("alice")).receiving;
}

const FROM_ACME = { inbound_code: "1", inbound: "4155550100" };
const receiverKeyOf = (e164: string) => `rcv:${e164}`;

describe("a warm trust-lookup reads no D1", () => {
  it.each(["GET", "JSON POST", "form POST"] as const)("100 warm lookups by %s: 0 D1 statements", async (transport) => {
    const fields = { ...(await aliceNumber()), ...FROM_ACME };
    const send = () => {
      if (transport === "GET") return as("telephony").get(`/apps/buzz/trust-lookup?${new URLSearchParams(fields)}`);
      if (transport === "JSON POST") return as("telephony").send("POST", "/apps/buzz/trust-lookup", fields);
      return as("telephony").send("POST", "/apps/buzz/trust-lookup", new URLSearchParams(fields).toString(), {
        headers: { "Content-Type": "application/x-www-form-urlencoded" },
      });
    };
    // Warm the token caches and the index (a miss fills after the answer).
    for (let i = 0; i < 3; i++)
      expect(await (await send()).json()).toEqual({
        trusted: true,
        user_id: DEMO.people.alice,
        caller_verification: null,
      });
    await scheduler.wait(50);

    const d1 = countD1();
    for (let i = 0; i < 100; i++) {
      const response = await send();
      expect(await response.json()).toEqual({ trusted: true, user_id: DEMO.people.alice, caller_verification: null });
    }
    expect(d1.statements).toBe(0);
  });
});

describe("call-lookup reads its details in one D1 round trip", () => {
  it("a caller who is a contact and a coworker: one round, both shown", async () => {
    const receiving = await aliceNumber();
    const bob = await secureNumberOf("bob");
    // Alice saves Bob's secure number as a contact; Bob is her coworker at Acme.
    const synced = await as("alice").send("POST", "/contacts/sync", [
      { display_name: "Bob at work", phone_numbers: [bob.e164], emails: ["bob@work.example"] },
    ]);
    const [contact] = await answer(synced, 200, syncContacts);
    const from = phoneFromInternational(bob.e164)!;
    const path = `/apps/buzz/call-lookup?${new URLSearchParams({ ...receiving, inbound_code: from.countryCode, inbound: from.nationalNumber })}`;
    // The contact's key may be written after the one-second coalescing: wait for that write, not a fixed delay.
    await trustIndexSettled(DEMO.people.alice);
    await as("telephony").get(path); // warm the isolate

    const d1 = countD1();
    const response = await as("telephony").get(path);
    const body = await answer(response, 200, callLookup);
    expect(body.contacts.map((c) => [c.id, c.email])).toEqual([[contact!.id, ["bob@work.example"]]]);
    expect(body.people.map((p) => p.id)).toEqual([DEMO.people.bob]);
    expect(d1.rounds).toBe(1);
  });
});

describe("a heartbeat after the first assignment only reads", () => {
  // The heartbeat reads no D1 once the person holds a secure number (docs/decisions.md, "The heartbeat reads no D1").
  it("no D1 statement per warm heartbeat, and the same answer", async () => {
    const first = await (await as("bob").get("/apps/buzz/heartbeat")).json();
    const d1 = countD1();
    for (let i = 0; i < 10; i++) {
      const response = await as("bob").get("/apps/buzz/heartbeat");
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual(first);
    }
    expect(d1.statements).toBe(0);
  });

  it("a person trusting a company they do not belong to reads its time from KV, with no D1 statement", async () => {
    // Alice trusts the vendor AdMetrics (demo world); its record's time is in the same KV bulk get as her companies'.
    const first = await (await as("alice").get("/apps/buzz/heartbeat")).json();
    const d1 = countD1();
    const response = await as("alice").get("/apps/buzz/heartbeat");
    expect(await response.json()).toEqual(first);
    expect(d1.statements).toBe(0);
  });
});

describe("provider-sized rate limits", () => {
  it("the provider's token makes 1,500 lookups in a minute without a 429 (person tokens stop at 1,000)", async () => {
    const fields = new URLSearchParams({ ...(await aliceNumber()), ...FROM_ACME });
    const statuses = new Map<number, number>();
    for (let i = 0; i < 1500; i += 50) {
      const batch = await Promise.all(
        Array.from({ length: 50 }, () => as("telephony").get(`/apps/buzz/trust-lookup?${fields}`)),
      );
      for (const response of batch) statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
    }
    expect(Object.fromEntries(statuses)).toEqual({ 200: 1500 });
  }, 60_000);

  it("a provider past its budget gets 429 with Retry-After on every transport, never a silent `trusted: false`", async () => {
    const token = `sk_over_budget_${Date.now()}_aaaaaaaa`;
    await insertToken(token, { serviceName: "telephony", scopes: ["calls:lookup"] });
    const fields = new URLSearchParams({ ...(await aliceNumber()), ...FROM_ACME });
    const spent = { ...env, SERVICE_RATE_LIMIT: { limit: async () => ({ success: false }) } };
    const ask = (init: RequestInit, query = "") =>
      createApp().request(
        `/apps/buzz/trust-lookup${query}`,
        { ...init, headers: { ...(init.headers as Record<string, string>), Authorization: `Bearer ${token}` } },
        spent,
        createExecutionContext(),
      );
    for (const response of [
      await ask({}, `?${fields}`),
      await ask({
        method: "POST",
        body: fields.toString(),
        headers: { "Content-Type": "application/x-www-form-urlencoded" },
      }),
      await ask({
        method: "POST",
        body: JSON.stringify(Object.fromEntries(fields)),
        headers: { "Content-Type": "application/json" },
      }),
    ]) {
      expect(response.headers.get("Retry-After")).toBe("60");
      expect((await answer(response, 429, trustLookupGet)).error.message).toMatch(/^Too Many Requests: .*600000/);
    }
  });

  it("a 429 replaces the answer, header included: no `Lookup-Problem` of the answer it replaced", async () => {
    const token = `sk_over_budget_problem_${Date.now()}_aaaaaaaa`;
    await insertToken(token, { serviceName: "telephony", scopes: ["calls:lookup"] });
    const spent = { ...env, SERVICE_RATE_LIMIT: { limit: async () => ({ success: false }) } };
    const response = await createApp().request(
      "/apps/buzz/trust-lookup?To=%2B12025550101", // the caller is missing: the answer replaced had the header
      { headers: { Authorization: `Bearer ${token}` } },
      spent,
      createExecutionContext(),
    );
    expect(response.status).toBe(429);
    expect(response.headers.get("Lookup-Problem")).toBeNull();
    expect(response.headers.get("Retry-After")).toBe("60");
  });

  it("an untrusted lookup refused with 429 records no blocked call", async () => {
    const refusedToken = `sk_over_budget_blocked_${Date.now()}_aaaaaaaa`;
    const admittedToken = `sk_within_budget_blocked_${Date.now()}_aaaaaaaa`;
    for (const token of [refusedToken, admittedToken]) {
      await insertToken(token, { serviceName: "telephony", scopes: ["calls:lookup"] });
    }
    const callerId = `refused-${crypto.randomUUID()}`;
    const fields = new URLSearchParams({
      ...(await aliceNumber()),
      inbound_code: "1",
      inbound: "3035550142",
      caller_id: callerId,
    });
    const budget = (success: boolean) => ({ ...env, SERVICE_RATE_LIMIT: { limit: async () => ({ success }) } });
    const ask = async (success: boolean) => {
      const ctx = createExecutionContext();
      const response = await createApp().request(
        `/apps/buzz/trust-lookup?${fields}`,
        { headers: { Authorization: `Bearer ${success ? admittedToken : refusedToken}` } },
        budget(success),
        ctx,
      );
      await waitOnExecutionContext(ctx);
      return response.status;
    };
    const recorded = () =>
      countInPersonObject(DEMO.people.alice, "SELECT count(*) AS n FROM blocked_calls WHERE caller_id = ?", callerId);
    expect(await ask(false)).toBe(429);
    expect(await recorded()).toBe(0);
    expect(await ask(true)).toBe(200); // the same call, admitted (another token with budget left), is recorded
    expect(await recorded()).toBe(1);
  });

  it("a burst at one number past its share: its lookups still get decisions, counted not listed, and spend nothing of the token's budget; another number never sees a 429", async () => {
    await startOfUsableWindow(50_000);
    const token = `sk_share_${Date.now()}_aaaaaaaa`;
    await insertToken(token, { serviceName: "telephony", scopes: ["calls:lookup"] });
    const bob = await secureNumberOf("bob");
    const hot = new URLSearchParams({ ...(await aliceNumber()), inbound_code: "1", inbound: "3035550142" });
    const quiet = new URLSearchParams({
      ...bob.receiving,
      ...FROM_ACME,
    });
    // The real local bindings; the token's limiter counted on its way.
    let tokenCharges = 0;
    const counted = {
      ...env,
      SERVICE_RATE_LIMIT: {
        limit: (options: RateLimitOptions) => {
          tokenCharges++;
          return env.SERVICE_RATE_LIMIT.limit(options);
        },
      },
    };
    const contexts: ExecutionContext[] = [];
    const ask = async (fields: URLSearchParams) => {
      const ctx = createExecutionContext();
      contexts.push(ctx);
      const response = await createApp().request(
        `/apps/buzz/trust-lookup?${fields}`,
        { headers: { Authorization: `Bearer ${token}` } },
        counted,
        ctx,
      );
      return { status: response.status, body: await answer(response, 200, trustLookupGet) };
    };
    const before = await personObject(DEMO.people.alice).unlistedBlockedCalls();

    const HOT = 1_300; // past the number's share of 1,200 a minute
    let quietAnswered = 0;
    for (let sent = 0; sent < HOT; sent += 50) {
      const [hotAnswers, quietAnswers] = await Promise.all([
        Promise.all(Array.from({ length: 50 }, () => ask(hot))),
        Promise.all(Array.from({ length: 5 }, () => ask(quiet))),
      ]);
      // The hot number's own lookups still get their decision (untrusted: the call is blocked).
      for (const answer of hotAnswers) {
        expect(answer).toEqual({
          status: 200,
          body: { trusted: false, user_id: DEMO.people.alice, caller_verification: null },
        });
      }
      for (const answer of quietAnswers)
        expect(answer).toMatchObject({ status: 200, body: { user_id: DEMO.people.bob } });
      quietAnswered += quietAnswers.length;
    }
    await Promise.all(contexts.map((ctx) => waitOnExecutionContext(ctx)));

    // The calls past the share were counted, not listed; only the ones within it spent the token's budget.
    const after = await personObject(DEMO.people.alice).unlistedBlockedCalls();
    const unlisted = after.total - before.total;
    expect(unlisted).toBeGreaterThan(0);
    expect(unlisted).toBeLessThanOrEqual(HOT - 1_200);
    expect(tokenCharges).toBeLessThanOrEqual(Math.ceil((HOT - unlisted + quietAnswered) / 8));
    // Alice sees how many were counted and not listed beside her list of blocked calls.
    const listed = await as("alice").get("/apps/buzz/blocked");
    expect(listed.status).toBe(200);
    expect(listed.headers.get("Unlisted-Blocked-Calls")).toBe(`today=${after.today}, total=${after.total}`);
  }, 90_000);

  it("unknown tokens are counted against the IP before any D1 read: past 300, a 429 reads nothing", async () => {
    const ip = `198.51.100.${Math.floor(Math.random() * 200) + 1}`;
    const unknown = (i: number) =>
      call("/apps/buzz/trust-lookup", { token: `sk_unknown_token_${i}_aaaaaaaa`, headers: { "CF-Connecting-IP": ip } });
    await startOfUsableWindow(30_000);
    for (let i = 0; i < 300; i++) expect((await unknown(i)).status).toBe(401);
    const d1 = countD1();
    const refused = await unknown(301);
    expect(refused.status).toBe(429);
    expect(refused.headers.get("Retry-After")).toBe("60");
    expect(d1.statements).toBe(0);
  }, 60_000);

  it("a webhook's request without credentials (how Twilio opens every call) is always challenged: no address's budget is spent", async () => {
    // Twilio sends a voice URL's credentials only after a 401 that asks for them, from addresses all
    // of a deployment's calls share: a 429 there would send every further call to the fallback.
    const ip = `198.18.${Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250) + 1}`;
    const challengeOnly = (path: string) =>
      call(path, {
        method: path.endsWith("trust-lookup") ? "POST" : "GET",
        body: path.endsWith("trust-lookup") ? "To=%2B12025550101&From=%2B14155550100" : undefined,
        headers: { "Content-Type": "application/x-www-form-urlencoded", "CF-Connecting-IP": ip },
      });
    await startOfUsableWindow(30_000);
    // Uncharged, so it must cost nothing either: no D1 statement, no KV read before the 401.
    const d1 = countD1();
    const kvGet = vi.spyOn(Object.getPrototypeOf(env.TRUST_INDEX) as KVNamespace, "get");
    for (let i = 0; i < 301; i++) {
      const response = await challengeOnly(i % 2 === 0 ? "/apps/buzz/trust-lookup" : "/apps/buzz/call-lookup");
      expect(response.status).toBe(401);
      expect(response.headers.get("WWW-Authenticate")).toContain("Basic");
    }
    expect(d1.statements).toBe(0);
    expect(kvGet).not.toHaveBeenCalled();
    vi.restoreAllMocks();
    // The address spent nothing: its budget is whole for what it guards (unknown tokens, other routes).
    expect((await call("/me", { headers: { "CF-Connecting-IP": ip } })).status).toBe(401);
  }, 60_000);
});

describe("bounded fan-out", () => {
  it("a company phone added to a 2,000-member company writes one KV key, and every member trusts it", async () => {
    const past = Date.now();
    const members = JSON.stringify(Array.from({ length: 2000 }, (_, i) => i));
    const company = await env.DB.prepare(
      `INSERT INTO companies (kind, name, slug, status, created_at, updated_at)
       VALUES ('employer', 'Big Corp', ?1, 'enabled', ?2, ?2) RETURNING id`,
    )
      .bind(`big-${past}`, past)
      .first<{ id: number }>();
    await env.DB.prepare(
      `INSERT INTO people (first_name, last_name, created_at, updated_at)
       SELECT 'Member', 'Big' || value, ?1, ?1 FROM json_each(?2) ORDER BY key`,
    )
      .bind(past, members)
      .run();
    await env.DB.prepare(
      `INSERT INTO memberships (company_id, person_id, created_at, updated_at)
       SELECT ?1, id, ?2, ?2 FROM people WHERE last_name LIKE 'Big%'`,
    )
      .bind(company!.id, past)
      .run();
    // Two members hold secure numbers (the pool has ten).
    const holders = await env.DB.prepare(
      `UPDATE secure_numbers SET person_id = (SELECT min(id) FROM people WHERE last_name LIKE 'Big%') + (id % 2), assigned_at = ?1
       WHERE id IN (SELECT id FROM secure_numbers WHERE person_id IS NULL ORDER BY id DESC LIMIT 2) RETURNING e164, person_id`,
    )
      .bind(past)
      .all<{ e164: string; person_id: number }>();
    const lookups = holders.results.map((row) => ({
      number_code: "1",
      number: row.e164.slice(2),
      inbound_code: "1",
      inbound: "6505550123",
    }));
    // Their objects are told their facts, as the secure-number assignment's index work does.
    const deps = createDeps(env);
    const keys = holders.results.map((row) => `prs:${row.person_id}`);
    await createDb(env.DB).batch([markStale(createDb(env.DB), keys, new Date())]);
    await makeCurrent(deps, { keys });
    const ask = async (fields: Record<string, string>) =>
      answer(await as("telephony").get(`/apps/buzz/trust-lookup?${new URLSearchParams(fields)}`), 200, trustLookupGet);
    for (const fields of lookups) expect(await ask(fields)).toMatchObject({ trusted: false });

    await scheduler.wait(100); // the fills of the lookups above land first
    const puts = vi.spyOn(env.TRUST_INDEX, "put");
    const phone = await addCompanyPhone(createDeps(env), company!.id, phoneFromParts("1", "6505550123")!, null);
    expect(puts.mock.calls).toEqual([]); // pending: no trust answer changes yet
    await verifyCompanyPhone(createDeps(env), phone.id);
    expect(puts.mock.calls.map(([key]) => key)).toEqual(["num:+16505550123"]);
    for (const fields of lookups) expect(await ask(fields)).toMatchObject({ trusted: true });
  });

  it("a receiver's 2,000 contacts: a lookup reads one small bucket, and each sync of 500 rewrites at most 101 keys", async () => {
    const receiving = await aliceNumber();
    const secure = `+${receiving.number_code}${receiving.number}`;
    const phone = (i: number) => `+1212555${String(i).padStart(4, "0")}`;
    const puts = vi.spyOn(env.TRUST_INDEX, "put");
    for (let first = 0; first < 2000; first += 500) {
      const batch = Array.from({ length: 500 }, (_, k) => ({
        display_name: `Many ${first + k}`,
        phone_numbers: [phone(first + k)],
      }));
      expect((await as("alice").send("POST", "/contacts/sync", batch)).status).toBe(200);
    }
    // Syncs within a second of the one before: their keys are written once that second has passed.
    await indexKeysWritten(DEMO.people.alice);
    // Per sync at most: the receiver record and the 100 buckets its phones fall in (and token cache writes).
    const indexPuts = puts.mock.calls.map(([key]) => key).filter((key) => !key.startsWith("tok:"));
    expect(indexPuts.length).toBeLessThanOrEqual(4 * 101);
    vi.restoreAllMocks();

    const record = (await env.TRUST_INDEX.get(receiverKeyOf(secure)))!;
    expect(record.length).toBeLessThan(1000);
    const bucket = (await env.TRUST_INDEX.get(`rcvn:${secure}:37`))!;
    expect(bucket.split(",").filter(Boolean)).toHaveLength(20);

    const ask = async (inbound: string) =>
      answer(
        await as("telephony").get(
          `/apps/buzz/trust-lookup?${new URLSearchParams({ ...receiving, inbound_code: "1", inbound })}`,
        ),
        200,
        trustLookupGet,
      );
    expect(await ask("2125551937")).toMatchObject({ trusted: true });
    expect(await ask("2125550000")).toMatchObject({ trusted: true });
    expect(await ask("2125559937")).toMatchObject({ trusted: false });
    expect((await as("alice").send("DELETE", "/contacts/clear")).status).toBe(204);
    await indexKeysWritten(DEMO.people.alice);
    expect(await ask("2125551937")).toMatchObject({ trusted: false });
  });

  it("before the index is complete, a receiver record in an older format is read as a miss: D1 answers and the record is refilled", async () => {
    await withoutIndexMark(); // the rebuild rewrites every record before it marks the index complete
    const receiving = await aliceNumber();
    const secure = `+${receiving.number_code}${receiving.number}`;
    const synced = await as("alice").send("POST", "/contacts/sync", [
      { display_name: "Old format", phone_numbers: ["+12125554242"] },
    ]);
    expect(synced.status).toBe(200);
    // What the previous version wrote: the contact phones inline, no bucket list.
    await env.TRUST_INDEX.put(
      receiverKeyOf(secure),
      JSON.stringify({ p: DEMO.people.alice, n: [], tp: [], c: [], tc: [], nc: [] }),
    );
    const looked = await as("telephony").get(
      `/apps/buzz/trust-lookup?${new URLSearchParams({ ...receiving, inbound_code: "1", inbound: "2125554242" })}`,
    );
    expect(await answer(looked, 200, trustLookupGet)).toEqual({
      trusted: true,
      user_id: DEMO.people.alice,
      caller_verification: null,
    });
    // Refilled by Alice's object once a second has passed since the sync wrote the key.
    await indexKeysWritten(DEMO.people.alice);
    expect(JSON.parse((await env.TRUST_INDEX.get(receiverKeyOf(secure)))!)).toMatchObject({
      nb: expect.arrayContaining([42]),
    });
    const [contact] = await answer(synced, 200, syncContacts);
    await as("alice").send("DELETE", `/contacts/${contact!.id}`);
  });
});
