import { createExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import {
  answer,
  as,
  call,
  countInPersonObject,
  countRows,
  DEMO,
  expectError,
  inPersonObject,
  indexKeysWritten,
  insertToken,
  trustIndexSettled,
} from "../helpers";
import { callLookup, createActivity, heartbeat, listActivity, listBlocked } from "../../src/routes/buzz/buzz.routes";
import { syncContacts } from "../../src/routes/contacts/contacts.routes";

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

let nextPerson = 100;

/** A new person with a token, outside every company: `{ id, token }`. */
async function newPerson(firstName = "Temp") {
  const id = nextPerson++;
  await env.DB.prepare(
    "INSERT INTO people (id, first_name, last_name, created_at, updated_at) VALUES (?1, ?2, 'Person', ?3, ?3)",
  )
    .bind(id, firstName, Date.now())
    .run();
  const token = `pk_test_buzz_person_${id}`;
  await insertToken(token, { personId: id });
  return { id, token };
}

async function heartbeatOf(token: string) {
  return answer(await call("/apps/buzz/heartbeat", { token }), 200, heartbeat);
}

/** Adds pool numbers so this file never runs dry by accident. */
async function addPoolNumbers(from: number, howMany: number) {
  const statements = Array.from({ length: howMany }, (_, i) => {
    const national = `202555${String(from + i).padStart(4, "0")}`;
    return env.DB.prepare(
      "INSERT OR IGNORE INTO secure_numbers (e164, country_code, number, created_at) VALUES (?1, '1', ?2, 0)",
    ).bind(`+1${national}`, national);
  });
  await env.DB.batch(statements);
}

describe("GET /apps/buzz/heartbeat", () => {
  it("assigns a secure number on the first call and keeps it", async () => {
    const { token, id } = await newPerson();
    const first = await heartbeatOf(token);
    expect(first).toEqual({
      last_contact_update: null,
      last_trust_request: null,
      last_company_update: null,
      last_coworker_update: null,
      last_user_update: expect.stringMatching(ISO),
      last_activity_id: "0",
      secure_number: {
        country_code: "1",
        number: expect.stringMatching(/^202555\d{4}$/),
        e164: expect.stringMatching(/^\+1202555\d{4}$/),
      },
    });
    expect(first.secure_number!.e164).toBe(`+${first.secure_number!.country_code}${first.secure_number!.number}`);
    expect((await heartbeatOf(token)).secure_number).toEqual(first.secure_number);
    expect(await countRows("SELECT count(*) AS n FROM secure_numbers WHERE person_id = ?", id)).toBe(1);
  });

  it("two concurrent first heartbeats of one person give one number", async () => {
    const { token, id } = await newPerson();
    const [a, b, c] = await Promise.all([heartbeatOf(token), heartbeatOf(token), heartbeatOf(token)]);
    expect(a.secure_number).not.toBeNull();
    expect(b.secure_number).toEqual(a.secure_number);
    expect(c.secure_number).toEqual(a.secure_number);
    expect(await countRows("SELECT count(*) AS n FROM secure_numbers WHERE person_id = ?", id)).toBe(1);
  });

  it("concurrent first heartbeats of different people never share a number", async () => {
    await addPoolNumbers(200, 10);
    const people = await Promise.all(Array.from({ length: 6 }, () => newPerson()));
    const beats = await Promise.all(people.map((person) => heartbeatOf(person.token)));
    const numbers = beats.map((beat) => beat.secure_number?.e164);
    expect(numbers.every(Boolean)).toBe(true);
    expect(new Set(numbers).size).toBe(6);
  });

  it("answers secure_number null (not an error) when the pool is empty", async () => {
    const free = await env.DB.prepare(
      "SELECT id, e164, country_code, number FROM secure_numbers WHERE person_id IS NULL",
    ).all<{
      id: number;
      e164: string;
      country_code: string;
      number: string;
    }>();
    await env.DB.prepare("DELETE FROM secure_numbers WHERE person_id IS NULL").run();
    try {
      const { token } = await newPerson();
      expect((await heartbeatOf(token)).secure_number).toBeNull();
    } finally {
      await env.DB.batch(
        free.results.map((row) =>
          env.DB.prepare(
            "INSERT INTO secure_numbers (id, e164, country_code, number, created_at) VALUES (?, ?, ?, ?, 0)",
          ).bind(row.id, row.e164, row.country_code, row.number),
        ),
      );
    }
  });

  it("reports the newest change times of contacts, trust requests, companies, coworkers and activity", async () => {
    const before = await heartbeatOf(DEMO.tokens.alice);
    expect(before.last_company_update).toBe("2026-01-05T09:00:00.000Z");
    expect(before.last_coworker_update).toBe("2026-01-05T09:00:00.000Z");

    await as("alice").send("POST", "/contacts/sync", [{ display_name: "Heartbeat friend" }]);
    await as("carol").send("POST", "/contacts/requests", { user_id: DEMO.people.alice });
    // A coworker's record changes (Alice, Acme's Admin, gives Bob a middle name and takes it back).
    for (const middle_name of ["Heartbeat", null]) {
      const renamed = await as("alice").send("PUT", `/companies/1/employees/${DEMO.people.bob}`, { middle_name });
      expect(renamed.status).toBe(200);
    }
    const renamedAt = Date.now();
    const activity = await as("alice").send("POST", "/apps/buzz/activity", {
      type: "outgoing_call_missed",
      sendable_type: "person",
      sendable_id: DEMO.people.alice,
      receivable_type: "person",
      receivable_id: DEMO.people.bob,
    });
    const { data } = await answer(activity, 200, createActivity);

    const after = await heartbeatOf(DEMO.tokens.alice);
    expect(after.last_contact_update).toMatch(ISO);
    expect(after.last_trust_request).toMatch(ISO);
    expect(Date.parse(after.last_coworker_update!)).toBeGreaterThan(Date.parse(before.last_coworker_update!));
    expect(Date.parse(after.last_coworker_update!)).toBeLessThanOrEqual(renamedAt);
    expect(after.last_activity_id).toBe(String(data.id));
    // Carol's coworkers did not change.
    expect((await heartbeatOf(DEMO.tokens.carol)).last_coworker_update).toBeNull();
  });

  it("401 without a token, 403 for a service token", async () => {
    await expectError(await call("/apps/buzz/heartbeat"), 401, "Unauthorized");
    await expectError(await as("telephony").get("/apps/buzz/heartbeat"), 403, "Forbidden");
  });
});

describe("GET /apps/buzz/blocked", () => {
  it("returns the newest 100 of the caller's blocked calls, newest first, as [2.4] records", async () => {
    const { id, token } = await newPerson();
    const base = Date.parse("2026-03-01T00:00:00Z");
    for (let i = 0; i < 105; i++) {
      await inPersonObject(
        id,
        "INSERT INTO blocked_calls (id, caller_id, country_code, phone_number, created_at) VALUES (?, ?, '1', ?, ?)",
        i + 1,
        i % 2 ? `CALLER ${i}` : null,
        `4155551${String(i).padStart(3, "0")}`,
        base + i * 1000,
      );
    }
    const blocked = await answer(await call("/apps/buzz/blocked", { token }), 200, listBlocked);
    expect(blocked).toHaveLength(100);
    expect(blocked[0]).toEqual({
      id,
      blocked_call_id: 105,
      caller_id: "",
      country_code: "1",
      phone_number: "4155551104",
      reason: null,
      created_at: new Date(base + 104_000).toISOString(),
    });
    expect(blocked[1]!.caller_id).toBe("CALLER 103");
    expect(blocked[99]!.phone_number).toBe("4155551005");
    // Each call has an id of its own: 100 ids, descending with the calls.
    const ids = blocked.map((call) => call.blocked_call_id);
    expect(ids).toEqual(Array.from({ length: 100 }, (_, i) => 105 - i));
    // Nobody else's.
    expect((await answer(await as("bob").get("/apps/buzz/blocked"), 200, listBlocked)).length).toBe(0);
  });
});

describe("POST /apps/buzz/activity", () => {
  const chat = (messageId: string) => ({
    type: "chat_message",
    sendable_type: "person",
    sendable_id: DEMO.people.bob,
    receivable_type: "person",
    receivable_id: DEMO.people.alice,
    message: "ciphertext==",
    message_id: messageId,
  });

  it("records an activity and answers {success, data}", async () => {
    const messageId = crypto.randomUUID();
    const response = await as("bob").send("POST", "/apps/buzz/activity", chat(messageId));
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      success: true,
      data: {
        id: expect.any(Number),
        type: "chat_message",
        sendable_type: "person",
        sendable_id: 2,
        receivable_type: "person",
        receivable_id: 1,
        call_time: 0,
        message: "ciphertext==",
        message_id: messageId,
        created_at: expect.stringMatching(ISO),
      },
    });
  });

  it("is idempotent on (sender, message_id): a retry answers the first record and creates nothing", async () => {
    const messageId = crypto.randomUUID();
    const first = await answer(
      await as("bob").send("POST", "/apps/buzz/activity", chat(messageId)),
      200,
      createActivity,
    );
    const retry = await as("bob").send("POST", "/apps/buzz/activity", { ...chat(messageId), message: "changed" });
    expect(retry.status).toBe(200);
    expect(await retry.json()).toEqual(first);
    // Once in each party's feed, under the id the POST answered.
    for (const person of [DEMO.people.bob, DEMO.people.alice]) {
      expect(await inPersonObject(person, "SELECT id FROM feed WHERE message_id = ?", messageId)).toEqual([
        { id: first.data.id },
      ]);
    }
    // The receiver may record a message id of their own.
    const reply = await as("alice").send("POST", "/apps/buzz/activity", {
      ...chat(messageId),
      sendable_id: DEMO.people.alice,
      receivable_id: DEMO.people.bob,
    });
    expect((await answer(reply, 200, createActivity)).data.id).not.toBe(first.data.id);
  });

  it("records calls (no message needed), with a company as the other party", async () => {
    const response = await as("alice").send("POST", "/apps/buzz/activity", {
      type: "incoming_call_connected_secure",
      sendable_type: "company",
      sendable_id: "1",
      receivable_type: "person",
      receivable_id: "1",
      call_time: 95,
    });
    expect((await answer(response, 200, createActivity)).data).toMatchObject({
      sendable_type: "company",
      sendable_id: 1,
      call_time: 95,
      message: null,
      message_id: null,
    });
  });

  it("400 without type, with an unknown type, for a chat without message or message_id, for a bad party type", async () => {
    const { type: _, ...untyped } = chat(crypto.randomUUID());
    expect(
      await expectError(await as("bob").send("POST", "/apps/buzz/activity", untyped), 400, "Bad Request"),
    ).toContain("`type`");
    await expectError(
      await as("bob").send("POST", "/apps/buzz/activity", { ...chat(crypto.randomUUID()), type: "fax" }),
      400,
      "Bad Request",
    );
    const { message: __, message_id: ___, ...bare } = chat("x");
    const message = await expectError(await as("bob").send("POST", "/apps/buzz/activity", bare), 400, "Bad Request");
    expect(message).toContain("`message`");
    expect(message).toContain("`message_id`");
    await expectError(
      await as("bob").send("POST", "/apps/buzz/activity", { ...chat("not-a-uuid") }),
      400,
      "Bad Request",
    );
    await expectError(
      await as("bob").send("POST", "/apps/buzz/activity", { ...chat(crypto.randomUUID()), call_time: -1 }),
      400,
      "Bad Request",
    );
    // An unknown receiver is not a 400: that would tell which ids are accounts
    // (test/app/activity-visibility.test.ts).
    await expectError(
      await as("bob").send("POST", "/apps/buzz/activity", { ...chat(crypto.randomUUID()), receivable_type: "robot" }),
      400,
      "Bad Request",
    );
  });

  it("403 when the caller is neither sender nor receiver; nothing is written", async () => {
    const messageId = crypto.randomUUID();
    await expectError(await as("carol").send("POST", "/apps/buzz/activity", chat(messageId)), 403, "Forbidden");
    await expectError(
      await as("carol").send("POST", "/apps/buzz/activity", {
        ...chat(messageId),
        receivable_type: "company",
        receivable_id: 3,
      }),
      403,
      "Forbidden",
    );
    for (const person of [DEMO.people.alice, DEMO.people.bob, DEMO.people.carol]) {
      expect(await inPersonObject(person, "SELECT id FROM feed WHERE message_id = ?", messageId)).toEqual([]);
    }
  });
});

describe("GET /apps/buzz/activity/{id}", () => {
  it("lists activities involving the caller after an id, oldest first, with the parties", async () => {
    const { id, token } = await newPerson("Dora");
    const post = async (body: object) =>
      (await answer(await call("/apps/buzz/activity", { method: "POST", token, body }), 200, createActivity)).data.id;
    const sent = await post({
      type: "chat_message",
      sendable_type: "person",
      sendable_id: id,
      receivable_type: "person",
      receivable_id: DEMO.people.alice,
      message: "m1",
      message_id: crypto.randomUUID(),
    });
    const received = await post({
      type: "incoming_call_missed",
      sendable_type: "company",
      sendable_id: DEMO.companies.acme,
      receivable_type: "person",
      receivable_id: id,
    });

    const response = await call("/apps/buzz/activity/0", { token });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual([
      {
        id: sent,
        type: "chat_message",
        sendable_type: "AppModelsPerson",
        sendable_id: id,
        receivable_type: "AppModelsPerson",
        receivable_id: 1,
        call_time: 0,
        message: "m1",
        message_id: expect.any(String),
        created_at: expect.stringMatching(ISO),
        sendable: { id, first_name: "Dora", middle_name: null, last_name: "Person" },
        // Alice does not know Dora (no shared company, no trust): named by id only (docs/security.md).
        receivable: { id: 1, first_name: null, middle_name: null, last_name: null },
      },
      {
        id: received,
        type: "incoming_call_missed",
        sendable_type: "AppModelsCompany",
        sendable_id: 1,
        receivable_type: "AppModelsPerson",
        receivable_id: id,
        call_time: 0,
        message: null,
        message_id: null,
        created_at: expect.stringMatching(ISO),
        sendable: { id: 1, name: null }, // Dora is no member of Acme
        receivable: { id, first_name: "Dora", middle_name: null, last_name: "Person" },
      },
    ]);

    const afterFirst = await answer(await call(`/apps/buzz/activity/${sent}`, { token }), 200, listActivity);
    expect(afterFirst.map((a) => a.id)).toEqual([received]);
    const limited = await answer(await call("/apps/buzz/activity/0?limit=1", { token }), 200, listActivity);
    expect(limited.map((a) => a.id)).toEqual([sent]);
    // Bob is in neither.
    const bobs = await answer(await as("bob").get("/apps/buzz/activity/0?limit=500"), 200, listActivity);
    expect(bobs.some((a) => a.id === sent || a.id === received)).toBe(false);
  });

  it("400 for a limit out of range, 404 for an id that is not a number", async () => {
    await expectError(await as("bob").get("/apps/buzz/activity/0?limit=501"), 400, "Bad Request");
    await expectError(await as("bob").get("/apps/buzz/activity/0?limit=0"), 400, "Bad Request");
    await expectError(await as("bob").get("/apps/buzz/activity/abc"), 404, "Not Found");
  });
});

describe("GET /apps/buzz/call-lookup", () => {
  async function numberOf(token: string) {
    const { secure_number } = await heartbeatOf(token);
    return { number_code: secure_number!.country_code, number: secure_number!.number };
  }
  const query = (fields: Record<string, string>) => `/apps/buzz/call-lookup?${new URLSearchParams(fields)}`;

  it("gives the provider the trusted caller's companies, people and contacts", async () => {
    const receiving = await numberOf(DEMO.tokens.alice);
    const response = await as("telephony").get(query({ ...receiving, inbound_code: "1", inbound: "4155550100" }));
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      contacts: [],
      people: [],
      companies: [
        { id: 1, name: "Acme Corp", slug: "acme", logo: "https://acme.example/logo.png", url: "https://acme.example" },
      ],
      caller_verification: null,
    });

    const [contact] = await answer(
      await as("alice").send("POST", "/contacts/sync", [{ display_name: "Bob B.", phone_numbers: ["+14155550199"] }]),
      200,
      syncContacts,
    );
    // Alice's keys may have been written less than a second ago: rewritten once that second has passed.
    await indexKeysWritten(DEMO.people.alice);
    const fromBob = await answer(
      await as("telephony").get(query({ ...receiving, inbound_code: "1", inbound: "4155550199" })),
      200,
      callLookup,
    );
    expect(fromBob.contacts.map((c) => [c.id, c.phone])).toEqual([[contact!.id, ["+14155550199"]]]);
    expect(fromBob.people).toEqual([
      {
        id: 2,
        first_name: "Bob",
        middle_name: null,
        last_name: "Builder",
        display_name: "Bob Builder",
        avatar: "",
        e2ee: false,
        e2e_id: null,
      },
    ]);
    expect(fromBob.companies).toEqual([]);
  });

  it("names a caller who holds the number only once they know the receiver (here: trusted them)", async () => {
    const receiving = await numberOf(DEMO.tokens.alice);
    const carol = (await heartbeatOf(DEMO.tokens.carol)).secure_number!;
    await as("alice").send("POST", "/contacts/sync", [{ display_name: "Carol C.", phone_numbers: [carol.e164] }]);
    const fromCarol = query({ ...receiving, inbound_code: carol.country_code, inbound: carol.number });
    const peopleIn = async () =>
      (await answer(await as("telephony").get(fromCarol), 200, callLookup)).people.map((p) => p.id);

    // A contact's phone makes the call trusted, but Carol (Globex) does not know Alice (Acme).
    expect(await peopleIn()).toEqual([]);
    await as("alice").send("POST", "/contacts/requests", { user_id: DEMO.people.carol });
    expect((await as("carol").send("POST", `/contacts/trust/${DEMO.people.alice}`, { trusted: 1 })).status).toBe(201);
    // Their keys may have been written less than a second ago: rewritten once that second has passed.
    await trustIndexSettled(DEMO.people.alice, DEMO.people.carol);
    expect(await peopleIn()).toEqual([DEMO.people.carol]);
  });

  it("answers three empty arrays for a call that would not be trusted or matches nobody", async () => {
    const receiving = await numberOf(DEMO.tokens.alice);
    const empty = { contacts: [], people: [], companies: [], caller_verification: null };
    for (const fields of [
      { ...receiving, inbound_code: "1", inbound: "4155550188" },
      { ...receiving, inbound_code: "1", inbound: "bad" },
      { number_code: "1", number: "2025559999", inbound_code: "1", inbound: "4155550100" },
    ]) {
      const response = await as("telephony").get(query(fields));
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual(empty);
    }
  });

  it("answers the receiving member with their own token; anyone else's number is 404", async () => {
    const receiving = await numberOf(DEMO.tokens.bob);
    const mine = await as("bob").get(query({ ...receiving, inbound_code: "1", inbound: "4155550100" }));
    expect((await answer(mine, 200, callLookup)).companies).toHaveLength(1);
    await expectError(
      await as("alice").get(query({ ...receiving, inbound_code: "1", inbound: "4155550100" })),
      404,
      "Not Found",
    );
  });

  it("400 for missing parameters, 401 without a token, 403 for the scanner", async () => {
    await expectError(await as("telephony").get("/apps/buzz/call-lookup?number_code=1"), 400, "Bad Request");
    await expectError(
      await call(query({ number_code: "1", number: "1", inbound_code: "1", inbound: "1" })),
      401,
      "Unauthorized",
    );
    await expectError(
      await as("scanner").get(query({ number_code: "1", number: "1", inbound_code: "1", inbound: "1" })),
      403,
      "Forbidden",
    );
  });
});

describe("DELETE /apps/buzz/clear (development only)", () => {
  it("wipes the caller's activity and blocked calls, and answers 204", async () => {
    const { id, token } = await newPerson();
    await call("/apps/buzz/activity", {
      method: "POST",
      token,
      body: {
        type: "outgoing_call_missed",
        sendable_type: "person",
        sendable_id: id,
        receivable_type: "person",
        receivable_id: 1,
      },
    });
    await inPersonObject(
      id,
      "INSERT INTO blocked_calls (id, country_code, phone_number, created_at) VALUES (1, '1', '4155550100', 0)",
    );
    await inPersonObject(
      DEMO.people.bob,
      "INSERT OR IGNORE INTO blocked_calls (id, country_code, phone_number, created_at) VALUES (1, '1', '4155550100', 0)",
    );
    const othersBefore = await countInPersonObject(DEMO.people.bob, "SELECT count(*) AS n FROM blocked_calls");

    const response = await call("/apps/buzz/clear", { method: "DELETE", token });
    expect(response.status).toBe(204);
    expect(await response.text()).toBe("");
    expect(await (await call("/apps/buzz/activity/0", { token })).json()).toEqual([]);
    expect(await (await call("/apps/buzz/blocked", { token })).json()).toEqual([]);
    expect(await countInPersonObject(DEMO.people.bob, "SELECT count(*) AS n FROM blocked_calls")).toBe(othersBefore);
  });

  it("does not exist outside development: 404 like an unknown route", async () => {
    const { token } = await newPerson();
    const response = await createApp().request(
      "/apps/buzz/clear",
      { method: "DELETE", headers: { Authorization: `Bearer ${token}`, "CF-Connecting-IP": "198.51.100.9" } },
      { ...env, ENVIRONMENT: "production" },
      createExecutionContext(),
    );
    expect(await expectError(response, 404, "Not Found")).toBe("Not Found: there is no route DELETE /apps/buzz/clear");
  });
});
