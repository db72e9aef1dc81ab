import { env } from "cloudflare:workers";
import { createExecutionContext, createMessageBatch, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import worker from "../../src/index";
import { createDeps } from "../../src/services/create-deps";
import { MARKED } from "../../src/objects/person/api";
import { movePersonChunk } from "../../src/services/person-moves";
import { consume } from "../webhook-receiver";
import type { BackgroundMessage } from "../../src/domain/queue-messages";
import { createActivity, heartbeat, listActivity, listBlocked } from "../../src/routes/buzz/buzz.routes";
import { listTrustRequests } from "../../src/routes/contacts/contacts.routes";
import { createEmployee } from "../../src/routes/employees/employees.routes";
import {
  answer,
  as,
  call,
  countD1,
  countInPersonObject,
  countRows,
  DEMO,
  drainBackground,
  expectError,
  failingD1,
  inPersonObject,
  insertToken,
  personObject,
} from "../helpers";

/**
 * Each person's own data in their own Durable Object (docs/architecture.md,
 * "Where data lives"): chats across two objects, ids, erasure, the object's
 * retention alarm, and the one-time move of D1 rows into the objects.
 */
const { alice, bob } = DEMO.people;
const feed = async (who: "alice" | "bob", after = 0) =>
  answer(await as(who).get(`/apps/buzz/activity/${after}?limit=500`), 200, listActivity);
const chat = (from: number, to: number, messageId = crypto.randomUUID()) => ({
  type: "chat_message",
  sendable_type: "person",
  sendable_id: from,
  receivable_type: "person",
  receivable_id: to,
  message: "c2VjcmV0",
  message_id: messageId,
});

afterEach(() => vi.restoreAllMocks());

describe("chats across two objects", () => {
  it("a chat posted three times at once with one message_id lands once in each feed, under the id answered", async () => {
    const body = chat(bob, alice);
    const answers = await Promise.all([1, 2, 3].map(() => as("bob").send("POST", "/apps/buzz/activity", body)));
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200]);
    const ids = await Promise.all(answers.map(async (r) => (await answer(r, 200, createActivity)).data.id));
    expect(new Set(ids).size).toBe(1);
    for (const who of ["alice", "bob"] as const) {
      expect((await feed(who)).filter((e) => e.message_id === body.message_id).map((e) => e.id)).toEqual([ids[0]]);
    }
  });

  it("a chat's id is above the newest id of both feeds, so paging by the last id seen never skips it", async () => {
    // Alice's feed moves ahead with call records of her own.
    for (let i = 0; i < 3; i++) {
      await as("alice").send("POST", "/apps/buzz/activity", {
        type: "outgoing_call_missed",
        sendable_type: "person",
        sendable_id: alice,
        receivable_type: "person",
        receivable_id: bob,
      });
    }
    const aliceSeen = Math.max(...(await feed("alice")).map((e) => e.id));
    const bobSeen = Math.max(0, ...(await feed("bob")).map((e) => e.id));
    const sent = await as("bob").send("POST", "/apps/buzz/activity", chat(bob, alice));
    const { id } = (await answer(sent, 200, createActivity)).data;
    expect(id).toBeGreaterThan(aliceSeen);
    expect(id).toBeGreaterThan(bobSeen);
    expect((await feed("alice", aliceSeen)).map((e) => e.id)).toContain(id);
    expect((await feed("bob", bobSeen)).map((e) => e.id)).toContain(id);
    // Each feed lists strictly increasing ids; the heartbeat's last_activity_id is the newest.
    for (const who of ["alice", "bob"] as const) {
      const ids = (await feed(who)).map((e) => e.id);
      expect(ids).toEqual([...ids].sort((a, b) => a - b));
      expect(new Set(ids).size).toBe(ids.length);
      const beat = await answer(await as(who).get("/apps/buzz/heartbeat"), 200, heartbeat);
      expect(Number(beat.last_activity_id)).toBe(ids.at(-1));
    }
  });

  it("three people chatting in a ring, 60 chats at once: every one lands in both feeds under one id", async () => {
    // Found by npm run capacity: with chats crossing, a sender's feed kept moving past the id the peer
    // answered, and after six tries the POST answered 500.
    const { carol } = DEMO.people;
    const who = { [alice]: "alice", [bob]: "bob", [carol]: "carol" } as const;
    const ring = [alice, bob, carol];
    const sends = Array.from({ length: 60 }, (_, i) => {
      const from = ring[i % 3]!;
      return { from, to: ring[(i + 1) % 3]!, body: chat(from, ring[(i + 1) % 3]!) };
    });
    const answers = await Promise.all(sends.map((s) => as(who[s.from]).send("POST", "/apps/buzz/activity", s.body)));
    expect(answers.map((r) => r.status)).toEqual(sends.map(() => 200));
    const idOf = new Map<string, number>();
    for (const [i, r] of answers.entries())
      idOf.set(sends[i]!.body.message_id, (await answer(r, 200, createActivity)).data.id);
    for (const person of ring) {
      const entries = (
        await answer(await as(who[person]).get("/apps/buzz/activity/0?limit=500"), 200, listActivity)
      ).filter((e) => e.message_id !== null && idOf.has(e.message_id));
      const mine = sends.filter((s) => s.from === person || s.to === person);
      expect(entries.map((e) => e.message_id).sort()).toEqual(mine.map((s) => s.body.message_id).sort());
      for (const e of entries) expect(e.id).toBe(idOf.get(e.message_id!));
      const ids = entries.map((e) => e.id);
      expect(ids).toEqual([...ids].sort((a, b) => a - b));
    }
  });

  it("strangers together get 1,000 chats a day per receiver: more is a 429 writing nothing; a coworker still gets through", async () => {
    const { carol } = DEMO.people;
    const day = Math.floor(Date.now() / 86_400_000);
    await inPersonObject(
      bob,
      "INSERT OR REPLACE INTO received_days (day, records, text_bytes) VALUES (?, 1000, 0)",
      day,
    );
    const before = { alice: (await feed("alice")).length, bob: (await feed("bob")).length };
    // Carol (Globex) is a stranger to Bob (Acme): the strangers' budget is spent.
    const refused = await as("carol").send("POST", "/apps/buzz/activity", chat(carol, bob));
    expect(await expectError(refused, 429, "Too Many Requests")).toMatch(
      /may receive at most 1,000 messages .* from people who do not know them/,
    );
    expect(Number(refused.headers.get("Retry-After"))).toBeGreaterThan(0);
    expect((await feed("bob")).length).toEqual(before.bob);
    // The sender was not charged for it: their own budget is untouched by the refusal.
    const spentBy = async (who: number) =>
      (await inPersonObject<{ records: number }>(who, "SELECT records FROM activity_days WHERE day = ?", day))[0]
        ?.records ?? 0;
    const carolBefore = await spentBy(carol);
    // Alice is Bob's coworker: ten strangers cannot shut her out (the audit's finding), and she is not counted.
    expect((await as("alice").send("POST", "/apps/buzz/activity", chat(alice, bob))).status).toBe(200);
    expect(await countInPersonObject(bob, "SELECT records AS n FROM received_days WHERE day = ?", day)).toBe(1000);
    await inPersonObject(bob, "DELETE FROM received_days WHERE day = ?", day);
    expect((await as("carol").send("POST", "/apps/buzz/activity", chat(carol, bob))).status).toBe(200);
    expect(await spentBy(carol)).toBe(carolBefore + 1);
    expect(
      await countInPersonObject(bob, "SELECT count(*) AS n FROM received_days WHERE day = ? AND records = 1", day),
    ).toBe(1);
    expect((await feed("alice")).length).toBe(before.alice + 1);
  });

  it("a call record stays in its writer's object only", async () => {
    const before = await countInPersonObject(bob, "SELECT count(*) AS n FROM feed");
    await as("alice").send("POST", "/apps/buzz/activity", {
      type: "outgoing_call_connected_secure",
      sendable_type: "person",
      sendable_id: alice,
      receivable_type: "person",
      receivable_id: bob,
    });
    expect(await countInPersonObject(bob, "SELECT count(*) AS n FROM feed")).toBe(before);
  });
});

describe("names other people's objects told", () => {
  it("a card that arrives late, from older facts, does not replace the newer names already heard", async () => {
    const personId = 800_000 + Math.floor(Math.random() * 100_000);
    const stub = personObject(personId);
    const card = (version: number, first_name: string) => ({
      id: 13,
      first_name,
      middle_name: null,
      last_name: "Peer",
      companies: [1],
      version,
    });
    // A page asked the asker's object afresh (renamed: version 5); their request, sent before, lands after.
    await stub.receiveTrustRequest(13, "met at the fair", Date.now(), card(5, "Renamed"));
    await stub.receiveTrustRequest(13, "met at the fair", Date.now(), card(4, "Before"));
    expect(await inPersonObject(personId, "SELECT first_name FROM peers WHERE person_id = 13")).toEqual([
      { first_name: "Renamed" },
    ]);
    // A newer card still replaces them.
    await stub.receiveTrustRequest(13, "met at the fair", Date.now(), card(6, "Again"));
    expect(await inPersonObject(personId, "SELECT first_name FROM peers WHERE person_id = 13")).toEqual([
      { first_name: "Again" },
    ]);
  });
});

describe("parties that are no account", () => {
  it("a feed page asks their objects once; the next pages neither ask them nor read D1", async () => {
    const created = await env.DB.prepare(
      "INSERT INTO people (first_name, last_name, created_at, updated_at) VALUES ('Fan', 'Out', 0, 0) RETURNING id",
    ).first<{ id: number }>();
    const me = created!.id;
    const token = `pk_test_fan_out_${me}_${crypto.randomUUID().slice(0, 8)}`;
    await insertToken(token, { personId: me });
    // Call records naming 20 ids that are no account.
    for (let i = 0; i < 20; i++) {
      const record = {
        type: "outgoing_call_missed",
        sendable_type: "person",
        sendable_id: me,
        receivable_type: "person",
        receivable_id: 70_000_000 + i,
      };
      expect((await call("/apps/buzz/activity", { method: "POST", token, body: record })).status).toBe(200);
    }
    const page = async () => {
      const d1 = countD1();
      expect((await call("/apps/buzz/activity/0?limit=500", { token })).status).toBe(200);
      vi.restoreAllMocks();
      return d1.statements;
    };
    expect(await page()).toBeGreaterThan(0); // the first page asks each party's object, which reads D1
    expect(await page()).toBe(0);
    expect(await page()).toBe(0);
  });
});

describe("an account that goes takes its object with it", () => {
  it("removing an employee whose account goes erases their activity and blocked calls", async () => {
    const created = await as("alice").send("POST", "/companies/1/employees", {
      first_name: "Gone",
      last_name: "Soon",
      dob: "1990-01-01",
      emails: [{ email: `gone-${crypto.randomUUID()}@acme.example` }],
      addresses: [{ line_1: "1 Main St", city: "Austin", region: "TX", postal_code: "78701", country: "US" }],
      license: null,
    });
    const { id } = await answer(created, 200, createEmployee);
    const token = `pk_test_gone_${crypto.randomUUID().replaceAll("-", "")}`;
    await insertToken(token, { personId: id });
    const recorded = await call("/apps/buzz/activity", {
      method: "POST",
      token,
      body: chat(id, alice),
    });
    expect(recorded.status).toBe(200);
    await inPersonObject(
      id,
      "INSERT INTO blocked_calls (id, country_code, phone_number, created_at) VALUES (1, '1', '3035550100', 0)",
    );
    expect(await countInPersonObject(id, "SELECT count(*) AS n FROM feed")).toBe(1);

    expect((await as("alice").send("DELETE", `/companies/1/employees/${id}`)).status).toBe(204);
    expect(await countInPersonObject(id, "SELECT count(*) AS n FROM sqlite_master WHERE name = 'feed'")).toBe(1); // empty tables, ready again
    expect(await countInPersonObject(id, "SELECT count(*) AS n FROM feed")).toBe(0);
    expect(await countInPersonObject(id, "SELECT count(*) AS n FROM blocked_calls")).toBe(0);
    expect(await countRows("SELECT count(*) AS n FROM person_erasures WHERE person_id = ?", id)).toBe(0);
    // The other party keeps their copy of the chat.
    expect((await feed("alice")).some((e) => e.message_id !== null && e.type === "chat_message")).toBe(true);
  });
});

describe("the object's own retention", () => {
  it("its alarm prunes blocked calls past 90 days, activity past 365 days, trust requests not asked for 365 days", async () => {
    const personId = 700_000 + Math.floor(Math.random() * 100_000);
    const day = 24 * 3600 * 1000;
    const now = Date.now();
    await inPersonObject(
      personId,
      `INSERT INTO blocked_calls (id, country_code, phone_number, created_at) VALUES (1, '1', '3035550101', ?), (2, '1', '3035550102', ?)`,
      now - 91 * day,
      now - 89 * day,
    );
    await inPersonObject(
      personId,
      `INSERT INTO feed (id, type, sendable_type, sendable_id, receivable_type, receivable_id, created_at)
       VALUES (1, 'outgoing_call_missed', 'person', ?, 'person', 1, ?), (2, 'outgoing_call_missed', 'person', ?, 'person', 1, ?)`,
      personId,
      now - 366 * day,
      personId,
      now - 364 * day,
    );
    await inPersonObject(
      personId,
      `INSERT INTO trust_requests (id, requester_id, contact_reason, status, created_at, updated_at)
       VALUES (1, 11, '', 'pending', ?1, ?1), (2, 12, '', 'trusted', ?2, ?2)`,
      now - 366 * day,
      now - 364 * day,
    );
    const stub = personObject(personId);
    await stub.lastActivityId(); // wakes it
    await runInObjectSetAlarm(stub);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(await inPersonObject(personId, "SELECT id FROM blocked_calls")).toEqual([{ id: 2 }]);
    expect(await inPersonObject(personId, "SELECT id FROM feed")).toEqual([{ id: 2 }]);
    expect(await inPersonObject(personId, "SELECT id FROM trust_requests")).toEqual([{ id: 2 }]);
  });

  it("its alarm forgets people not heard from for 365 days and devices 30 days after they ended", async () => {
    const personId = 700_000 + Math.floor(Math.random() * 100_000);
    const day = 24 * 3600 * 1000;
    const now = Date.now();
    await inPersonObject(
      personId,
      `INSERT INTO peers (person_id, first_name, last_name, companies, learned_at)
       VALUES (11, 'Old', 'Peer', '[]', ?), (12, 'Recent', 'Peer', '[]', ?)`,
      now - 366 * day,
      now - 364 * day,
    );
    await inPersonObject(
      personId,
      `INSERT INTO devices (token_id, name, created_at, expires_at, revoked_at) VALUES
       (1, 'revoked long ago', 0, NULL, ?1), (2, 'revoked lately', 0, NULL, ?2),
       (3, 'expired long ago', 0, ?1, NULL), (4, 'in use', 0, ?3, NULL), (5, 'no expiry', 0, NULL, NULL)`,
      now - 31 * day,
      now - 29 * day,
      now + 30 * day,
    );
    const stub = personObject(personId);
    await stub.lastActivityId(); // wakes it
    await runInObjectSetAlarm(stub);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(await inPersonObject(personId, "SELECT person_id FROM peers")).toEqual([{ person_id: 12 }]);
    expect(await inPersonObject(personId, "SELECT token_id FROM devices ORDER BY token_id")).toEqual([
      { token_id: 2 },
      { token_id: 4 },
      { token_id: 5 },
    ]);
  });
});

/** Sets the object's alarm to now, so runDurableObjectAlarm runs it. */
async function runInObjectSetAlarm(stub: DurableObjectStub) {
  const { runInDurableObject } = await import("cloudflare:test");
  await runInDurableObject(stub, (_, state) => state.storage.setAlarm(Date.now()));
}

describe("moving person data from D1 into the objects", () => {
  it("moves a database filled the old way, chunk by chunk, and the counts match", async () => {
    // A person with 1,200 activity rows, 600 blocked calls, contacts and trust in D1, as the platform kept them before.
    const person = await env.DB.prepare(
      "INSERT INTO people (first_name, last_name, created_at, updated_at) VALUES ('Moved', 'Person', 0, 0) RETURNING id",
    ).first<{ id: number }>();
    const p = person!.id;
    const t0 = Date.now() - 3600_000;
    await env.DB.prepare(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1200)
       INSERT INTO activities (type, sendable_type, sendable_id, receivable_type, receivable_id, call_time, message, message_id, created_at)
       SELECT CASE WHEN i % 2 THEN 'chat_message' ELSE 'outgoing_call_missed' END, 'person', ?1, 'person', ?2, 0,
              CASE WHEN i % 2 THEN 'bQ==' END, CASE WHEN i % 2 THEN 'moved-' || CAST(?1 AS INTEGER) || '-' || i END, ?3 + i FROM n`,
    )
      .bind(p, alice, t0)
      .run();
    await env.DB.prepare(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 600)
       INSERT INTO blocked_calls (person_id, caller_id, country_code, phone_number, created_at)
       SELECT ?1, 'moved-' || i, '1', '3035550199', ?2 + i FROM n`,
    )
      .bind(p, t0)
      .run();

    // And the trust requests they received: one still pending (from Alice), one decided (from Bob).
    await env.DB.prepare(
      `INSERT INTO trust_requests (requester_id, target_id, contact_reason, status, decided_at, created_at, updated_at)
       VALUES (?2, ?1, 'pending one', 'pending', NULL, ?3, ?3), (?4, ?1, 'decided one', 'trusted', ?3, ?3, ?3)`,
    )
      .bind(p, alice, t0, bob)
      .run();

    // Their 600 contacts: every one with an email, the first with two of each kind (not in sorted order) and
    // labels, and the 600th with an address; and the tombstone of one they deleted.
    await env.DB.prepare(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 600)
       INSERT INTO contacts (owner_id, display_name, birthday, labels, created_at, updated_at)
       SELECT ?1, 'Contact ' || i, CASE WHEN i = 1 THEN '1990-02-03' END,
              CASE WHEN i = 1 THEN '["work","family"]' ELSE '[]' END, ?2 + i, ?2 + i + 1 FROM n`,
    )
      .bind(p, t0)
      .run();
    const first = (await env.DB.prepare("SELECT min(id) AS id FROM contacts WHERE owner_id = ?").bind(p).first<{
      id: number;
    }>())!.id;
    await env.DB.batch([
      env.DB.prepare(
        `INSERT INTO contact_emails (contact_id, email)
         SELECT id, 'c' || (id - CAST(?2 AS INTEGER) + 1) || '@moved.example' FROM contacts WHERE owner_id = ?1 ORDER BY id`,
      ).bind(p, first),
      env.DB.prepare("INSERT INTO contact_emails (contact_id, email) VALUES (?1, 'b@moved.example')").bind(first),
      env.DB.prepare(
        "INSERT INTO contact_phones (contact_id, e164) VALUES (?1, '+13035550202'), (?1, '+13035550201')",
      ).bind(first),
      env.DB.prepare(
        "INSERT INTO contact_addresses (contact_id, line) VALUES (?1, '2 Elm St'), (?1, '1 Oak Ave')",
      ).bind(first),
      env.DB.prepare("INSERT INTO contact_addresses (contact_id, line) VALUES (?1, '600 Last Rd')").bind(first + 599),
      env.DB.prepare("INSERT INTO contact_tombstones (owner_id, contact_id, deleted_at) VALUES (?1, 999999, ?2)").bind(
        p,
        t0,
      ),
    ]);

    // Trust both ways: they trusted Bob and set Acme trusted; Alice trusted them, Carol did not.
    const { carol } = DEMO.people;
    await env.DB.batch([
      env.DB.prepare(
        "INSERT INTO person_trust (person_id, trusted_person_id, trusted, updated_at) VALUES (?1, ?2, 1, ?3)",
      ).bind(p, bob, t0),
      env.DB.prepare(
        "INSERT INTO person_trust (person_id, trusted_person_id, trusted, updated_at) VALUES (?2, ?1, 1, ?4), (?3, ?1, 0, ?4)",
      ).bind(p, alice, carol, t0),
      env.DB.prepare(
        "INSERT INTO company_trust (person_id, company_id, trust, updated_at) VALUES (?1, ?2, 'trusted', ?3)",
      ).bind(p, DEMO.companies.acme, t0),
    ]);

    // One person, as the walk over people sends it: feed in 3 chunks, blocked calls in 2, contacts in 2, then the comparison.
    const runs = await drainBackground({ kind: "move-person", personId: p, stage: "feed", after: 0 });
    // feed, blocked calls, trust requests (one short chunk), contacts, tombstones, decisions (one short chunk), the comparison
    expect(runs).toBe(3 + 2 + 1 + 2 + 1 + 1 + 1);
    const counts = await inPersonObject<{ feed: number; blocked: number; contacts: number; values: number }>(
      p,
      `SELECT (SELECT count(*) FROM feed) AS feed, (SELECT count(*) FROM blocked_calls) AS blocked,
              (SELECT count(*) FROM contacts) AS contacts, (SELECT count(*) FROM contact_values) AS "values"`,
    );
    expect(counts).toEqual([{ feed: 1200, blocked: 600, contacts: 600, values: 600 + 1 + 2 + 2 + 1 }]);
    expect(
      await env.DB.prepare("SELECT state, d1_rows, object_rows FROM person_moves WHERE person_id = ?").bind(p).first(),
    ).toEqual({ state: "moved", d1_rows: 2407, object_rows: 2407 }); // 1,802 + 600 contacts, 1 tombstone, 1 + 1 + 2 decisions

    // The contacts under their D1 ids and times, their values in D1's order.
    const object = personObject(p);
    const book = await object.contactPage({ since: null, limit: 1000, offset: 0 });
    expect(book.total).toBe(600);
    expect(book.items[0]).toEqual({
      id: first,
      displayName: "Contact 1",
      birthday: "1990-02-03",
      labels: ["work", "family"],
      emails: ["c1@moved.example", "b@moved.example"],
      phones: ["+13035550202", "+13035550201"],
      addresses: ["2 Elm St", "1 Oak Ave"],
      createdAt: t0 + 1,
      updatedAt: t0 + 2,
    });
    expect(book.items[599]).toMatchObject({
      id: first + 599,
      emails: ["c600@moved.example"],
      phones: [],
      addresses: ["600 Last Rd"],
    });
    expect(await object.deletedContacts({ since: 0, limit: 10, offset: 0 })).toEqual({
      items: [{ id: 999999, deletedAt: t0 }],
      total: 1,
    });
    expect(await object.decisions()).toEqual([{ personId: bob, trusted: true }]);
    expect(await object.trustedMe()).toEqual([alice]);
    expect(await countInPersonObject(p, "SELECT count(*) AS n FROM trusted_by")).toBe(2);
    expect(await object.companySettings()).toEqual([
      { companyId: DEMO.companies.acme, trust: "trusted", updatedAt: t0 },
    ]);
    // The object was told D1's facts about the person: the index work the comparison enqueued is done.
    expect(await countRows("SELECT count(*) AS n FROM index_work WHERE key = ?", `prs:${p}`)).toBe(0);

    // The API reads them from the object now, oldest first under their D1 ids.
    const token = `pk_test_moved_${crypto.randomUUID().replaceAll("-", "")}`;
    await insertToken(token, { personId: p });
    const page = await answer(await call("/apps/buzz/activity/0?limit=500", { token }), 200, listActivity);
    expect(page).toHaveLength(500);
    expect(page[0]!.message_id).toBe(`moved-${p}-1`);
    const blocked = await answer(await call("/apps/buzz/blocked", { token }), 200, listBlocked);
    expect(blocked[0]!.caller_id).toBe("moved-600");
    const requests = await answer(await call("/contacts/requests", { token }), 200, listTrustRequests);
    expect(requests.map((r) => [r.id, r.contact_reason])).toEqual([[alice, "pending one"]]);
    // The decided one still lets the person change their decision about Bob.
    expect((await call(`/contacts/trust/${bob}`, { method: "POST", token, body: { trusted: 0 } })).status).toBe(201);

    // Since the move, they removed a phone of their first contact and cleared their setting for Acme.
    const put = await call(`/contacts/${first}`, {
      method: "PUT",
      token,
      body: { display_name: "Contact 1", phone_numbers: ["+13035550202"] },
    });
    expect(put.status).toBe(200);
    const cleared = await call(`/contacts/companies/${DEMO.companies.acme}/trust`, {
      method: "PUT",
      token,
      body: { trust: null },
    });
    expect(cleared.status).toBe(200);
    const valuesNow = await countInPersonObject(p, "SELECT count(*) AS n FROM contact_values");

    // Running it again copies nothing twice and brings back nothing they removed (the audit's finding:
    // the removed phone and the cleared setting came back); the decision made in the object since stays.
    await drainBackground({ kind: "move-person", personId: p, stage: "feed", after: 0 });
    expect(await countInPersonObject(p, "SELECT count(*) AS n FROM feed")).toBe(1200);
    expect(await countInPersonObject(p, "SELECT count(*) AS n FROM contact_values")).toBe(valuesNow);
    expect((await object.contactPage({ since: null, limit: 1, offset: 0 })).items[0]!.phones).toEqual(["+13035550202"]);
    expect(await object.companySettings()).toEqual([]);
    expect(await object.decisions()).toEqual([{ personId: bob, trusted: false }]);
    expect(await env.DB.prepare("SELECT state FROM person_moves WHERE person_id = ?").bind(p).first("state")).toBe(
      "moved",
    );
  });

  it("the walk over people records everyone pending and sends one message per person", async () => {
    const sent: BackgroundMessage[] = [];
    vi.spyOn(env.BACKGROUND_QUEUE, "send").mockImplementation(
      (async (body: BackgroundMessage) => void sent.push(body)) as never,
    );
    vi.spyOn(env.BACKGROUND_QUEUE, "sendBatch").mockImplementation(
      (async (bodies: { body: BackgroundMessage }[]) => void sent.push(...bodies.map((b) => b.body))) as never,
    );
    const batch = createMessageBatch("background", [
      { id: "walk", timestamp: new Date(), attempts: 1, body: { kind: "move-people", after: 0 } },
    ]);
    await worker.queue!(batch, env, createExecutionContext());
    // Everyone up to the walk's first 100, but the person whose move finished above.
    const people = await countRows(
      `SELECT count(*) AS n FROM people WHERE id <= (SELECT max(person_id) FROM person_moves)
         AND id NOT IN (SELECT person_id FROM person_moves WHERE state = 'moved')`,
    );
    expect(sent.filter((m) => m.kind === "move-person")).toHaveLength(Math.min(people, 100));
    expect(await countRows("SELECT count(*) AS n FROM person_moves WHERE person_id = ?", bob)).toBe(1);
  });

  it("a second walk skips the people whose move finished", async () => {
    const sent: BackgroundMessage[] = [];
    vi.spyOn(env.BACKGROUND_QUEUE, "send").mockImplementation(
      (async (body: BackgroundMessage) => void sent.push(body)) as never,
    );
    vi.spyOn(env.BACKGROUND_QUEUE, "sendBatch").mockImplementation(
      (async (bodies: { body: BackgroundMessage }[]) => void sent.push(...bodies.map((b) => b.body))) as never,
    );
    await env.DB.prepare(
      "INSERT INTO person_moves (person_id, state, updated_at) VALUES (?, 'moved', 0) ON CONFLICT (person_id) DO UPDATE SET state = 'moved'",
    )
      .bind(bob)
      .run();
    const batch = createMessageBatch("background", [
      { id: "walk-again", timestamp: new Date(), attempts: 1, body: { kind: "move-people", after: 0 } },
    ]);
    await worker.queue!(batch, env, createExecutionContext());
    const moving = sent.flatMap((m) => (m.kind === "move-person" ? [m.personId] : []));
    expect(moving).toContain(alice);
    expect(moving).not.toContain(bob);
    expect(await env.DB.prepare("SELECT state FROM person_moves WHERE person_id = ?").bind(bob).first("state")).toBe(
      "moved",
    );
  });

  const moveState = (p: number) =>
    env.DB.prepare("SELECT state FROM person_moves WHERE person_id = ?").bind(p).first("state");

  it("a rerun after a `mismatch` imports what was missed and brings back nothing the person removed since", async () => {
    const p = (await env.DB.prepare(
      "INSERT INTO people (first_name, last_name, created_at, updated_at) VALUES ('Mis', 'Match', 0, 0) RETURNING id",
    ).first<{ id: number }>())!.id;
    const t0 = Date.now() - 3600_000;
    await env.DB.prepare(
      "INSERT INTO contacts (owner_id, display_name, labels, created_at, updated_at) VALUES (?1, 'A', '[]', ?2, ?2), (?1, 'B', '[]', ?2, ?2)",
    )
      .bind(p, t0)
      .run();
    const { results } = await env.DB.prepare("SELECT id FROM contacts WHERE owner_id = ? ORDER BY id")
      .bind(p)
      .all<{ id: number }>();
    const [a, b] = results.map((row) => row.id) as [number, number];
    await env.DB.batch([
      env.DB.prepare(
        "INSERT INTO contact_phones (contact_id, e164) VALUES (?1, '+13035550301'), (?1, '+13035550302')",
      ).bind(b),
      env.DB.prepare(
        "INSERT INTO company_trust (person_id, company_id, trust, updated_at) VALUES (?1, ?2, 'trusted', ?3)",
      ).bind(p, DEMO.companies.acme, t0),
    ]);
    const deps = createDeps(env);
    const now = new Date();
    await movePersonChunk(deps, { kind: "move-person", personId: p, stage: "contacts", after: 0 }, now);
    await movePersonChunk(deps, { kind: "move-person", personId: p, stage: "decisions", after: 0 }, now);
    // In their object the person deletes A, drops B's second phone and clears Acme; D1 gains a contact the
    // first pass missed, so the comparison finds the object short of D1.
    const token = `pk_test_mis_${crypto.randomUUID().replaceAll("-", "")}`;
    await insertToken(token, { personId: p });
    expect((await call(`/contacts/${a}`, { method: "DELETE", token })).status).toBe(200);
    const keepOne = { display_name: "B", phone_numbers: ["+13035550301"] };
    expect((await call(`/contacts/${b}`, { method: "PUT", token, body: keepOne })).status).toBe(200);
    const clear = { method: "PUT", token, body: { trust: null } };
    expect((await call(`/contacts/companies/${DEMO.companies.acme}/trust`, clear)).status).toBe(200);
    const c = (await env.DB.prepare(
      "INSERT INTO contacts (owner_id, display_name, labels, created_at, updated_at) VALUES (?1, 'C', '[]', ?2, ?2) RETURNING id",
    )
      .bind(p, t0)
      .first<{ id: number }>())!.id;
    await movePersonChunk(deps, { kind: "move-person", personId: p, stage: "compare", after: 0 }, now);
    expect(await moveState(p)).toBe("mismatch");

    // The operator starts the move again.
    await drainBackground({ kind: "move-person", personId: p, stage: "feed", after: 0 });
    const object = personObject(p);
    const book = await object.contactPage({ since: null, limit: 10, offset: 0 });
    expect({
      contacts: book.items.map((contact) => contact.id).sort((x, y) => x - y),
      phonesOfB: book.items.find((contact) => contact.id === b)!.phones,
      companySettings: await object.companySettings(),
    }).toEqual({ contacts: [b, c], phonesOfB: ["+13035550301"], companySettings: [] });
    expect(await moveState(p)).toBe("moved");
  });

  it("an object that imported before it kept marks: what the person cleared since stays cleared", async () => {
    const p = (await env.DB.prepare(
      "INSERT INTO people (first_name, last_name, created_at, updated_at) VALUES ('Pre', 'Marks', 0, 0) RETURNING id",
    ).first<{ id: number }>())!.id;
    await env.DB.prepare(
      "INSERT INTO company_trust (person_id, company_id, trust, updated_at) VALUES (?1, ?2, 'trusted', ?3)",
    )
      .bind(p, DEMO.companies.acme, Date.now() - 3600_000)
      .run();
    const deps = createDeps(env);
    const now = new Date();
    await movePersonChunk(deps, { kind: "move-person", personId: p, stage: "decisions", after: 0 }, now);
    // As an older deployment left it: the rows imported, no mark kept.
    await runInDurableObject(personObject(p), (_, state) => {
      for (const kind of MARKED) state.storage.kv.delete(`move:mark:${kind}`);
    });
    const token = `pk_test_pre_${crypto.randomUUID().replaceAll("-", "")}`;
    await insertToken(token, { personId: p });
    const clear = { method: "PUT", token, body: { trust: null } };
    expect((await call(`/contacts/companies/${DEMO.companies.acme}/trust`, clear)).status).toBe(200);
    // The comparison takes D1's largest keys as the marks it lacks: everything was imported.
    await movePersonChunk(deps, { kind: "move-person", personId: p, stage: "compare", after: 0 }, now);
    expect(await moveState(p)).toBe("moved");
    await drainBackground({ kind: "move-person", personId: p, stage: "feed", after: 0 });
    expect(await personObject(p).companySettings()).toEqual([]);
  });

  it("a comparison whose D1 write failed after the object's move finished still records the person `moved`", async () => {
    const p = (await env.DB.prepare(
      "INSERT INTO people (first_name, last_name, created_at, updated_at) VALUES ('Half', 'Moved', 0, 0) RETURNING id",
    ).first<{ id: number }>())!.id;
    await env.DB.batch([
      env.DB.prepare("INSERT INTO person_moves (person_id, state, updated_at) VALUES (?, 'pending', 0)").bind(p),
      env.DB.prepare(
        "INSERT INTO company_trust (person_id, company_id, trust, updated_at) VALUES (?1, 1, 'trusted', 0)",
      ).bind(p),
    ]);
    vi.spyOn(env.BACKGROUND_QUEUE, "send").mockResolvedValue(undefined as never);
    const compare: BackgroundMessage = { kind: "move-person", personId: p, stage: "compare", after: 0 };
    await consume("background", { kind: "move-person", personId: p, stage: "decisions", after: 0 });
    const outage = failingD1(/^$/, () => new Error("unused"), {
      batch: () => Promise.reject(new Error("D1_ERROR: simulated outage")),
    });
    expect((await consume("background", compare, 1, { DB: outage })).retryMessages).toHaveLength(1);
    await consume("background", compare, 2);
    expect(await moveState(p)).toBe("moved");
    expect(await countRows("SELECT count(*) AS n FROM index_work WHERE key = ?", `prs:${p}`)).toBe(0);
  });
});
