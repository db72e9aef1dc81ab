import { createExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createApp } from "../../src/app";
import {
  getContact,
  listContacts,
  listTrustRequests,
  postContacts,
  putContact,
  syncContacts,
} from "../../src/routes/contacts/contacts.routes";
import {
  answer,
  as,
  call,
  countInPersonObject,
  DEMO,
  employeeBody,
  expectError,
  fresh,
  inPersonObject,
  insertToken,
  personObject,
  trustIndexSettled,
} from "../helpers";
import { createEmployee } from "../../src/routes/employees/employees.routes";

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

async function sync(who: "alice" | "bob" | "carol", elements: unknown[]) {
  return answer(await as(who).send("POST", "/contacts/sync", elements), 200, syncContacts);
}

/** The app as production builds it: `ENVIRONMENT = "production"`. */
function production(path: string, method: string, token: string) {
  return createApp().request(
    path,
    { method, headers: { Authorization: `Bearer ${token}`, "CF-Connecting-IP": "198.51.100.7" } },
    { ...env, ENVIRONMENT: "production" },
    createExecutionContext(),
  );
}

describe("POST /contacts/sync and POST /contacts", () => {
  it("creates contacts and answers them in request order with standardized, derived fields", async () => {
    const [dana, bobContact] = await sync("carol", [
      {
        display_name: "Dana Doe",
        birthday: "1991-04-12",
        emails: [" Dana@Example.COM ", "dana@example.com"],
        phone_numbers: ["+1 (415) 555-0123"],
        addresses: ["1 Main St, Springfield"],
        labels: ["family"],
        risk_score: 99,
        user_id: 1,
        connected: true,
      },
      { display_name: "Bob from Acme", phone_numbers: ["+1 415 555 0199"] },
    ]);
    expect(dana).toEqual({
      id: expect.any(Number),
      profile_icon: "",
      display_name: "Dana Doe",
      birthday: "1991-04-12",
      email: ["dana@example.com"],
      phone: ["+14155550123"],
      address: ["1 Main St, Springfield"],
      risk_score: 0,
      labels: ["family"],
      user_id: null,
      connected: false,
      e2ee: false,
      created: expect.stringMatching(ISO),
      updated: expect.stringMatching(ISO),
    });
    // Bob's personal phone links the contact to him.
    expect(bobContact).toMatchObject({ display_name: "Bob from Acme", user_id: DEMO.people.bob, connected: true });
    expect(bobContact!.id).toBeGreaterThan(dana!.id);
  });

  // Alice and Bob share Acme, so Bob knows Alice (test/contacts/contact-linking.test.ts has strangers).
  it("links by email a person who knows the owner, and shows their encryption and risk", async () => {
    await as("bob").send("PUT", "/apps/buzz/encryption", { hash: "h-bob", e2e_id: "e2e-bob" });
    await env.DB.prepare(
      "UPDATE people SET risk_score = 42, avatar_url = 'https://cdn.example/bob.png' WHERE id = 2",
    ).run();
    // Contacts link through the trust index (`lnk:` cards): D1's triggers queued Bob's card, made current here.
    await trustIndexSettled();
    const [byEmail] = await sync("alice", [{ display_name: "Bob (mail)", emails: ["BOB@acme.example"] }]);
    expect(byEmail).toMatchObject({
      user_id: 2,
      connected: true,
      e2ee: true,
      risk_score: 42,
      profile_icon: "https://cdn.example/bob.png",
    });
  });

  it("POST /contacts is the same as /contacts/sync; updates and creates mix", async () => {
    const [first] = await sync("carol", [{ display_name: "Eve", phone_numbers: ["+14155550131"], labels: ["work"] }]);
    const response = await as("carol").send("POST", "/contacts", [
      { display_name: "Frank" },
      { id: first!.id, display_name: "Eve Evans", emails: ["eve@example.com"] },
      { display_name: "Grace", phone_numbers: ["+14155550132"] },
    ]);
    const [frank, eve, grace] = await answer(response, 200, postContacts);
    expect(frank).toMatchObject({ display_name: "Frank", email: [], phone: [], address: [], labels: [] });
    // Fields left out keep their value; a collection sent replaces the stored one.
    expect(eve).toMatchObject({
      id: first!.id,
      display_name: "Eve Evans",
      phone: ["+14155550131"],
      email: ["eve@example.com"],
      labels: ["work"],
      created: first!.created,
    });
    expect(grace).toMatchObject({ display_name: "Grace", phone: ["+14155550132"] });
    expect(new Set([frank!.id, eve!.id, grace!.id]).size).toBe(3);
  });

  it("is all or nothing: one bad element is a 400 naming its index and nothing is written", async () => {
    const held = () => countInPersonObject(DEMO.people.carol, "SELECT count(*) AS n FROM contacts");
    const before = await held();
    const [kept] = await sync("carol", [{ display_name: "Kept" }]);
    const message = await expectError(
      await as("carol").send("POST", "/contacts/sync", [
        { id: kept!.id, display_name: "Changed" },
        { display_name: "Fine" },
        { display_name: "Broken", phone_numbers: ["not a phone"] },
      ]),
      400,
      "Bad Request",
    );
    expect(message).toContain("`[2].phone_numbers[0]`");
    expect(await held()).toBe(before + 1);
    const read = await answer(await as("carol").get(`/contacts/${kept!.id}`), 200, getContact);
    expect(read.display_name).toBe("Kept");
  });

  it("400 for an id that is not the caller's contact (another person's), naming the index", async () => {
    const [alices] = await sync("alice", [{ display_name: "Alice's friend" }]);
    const message = await expectError(
      await as("carol").send("POST", "/contacts/sync", [
        { display_name: "x" },
        { id: alices!.id, display_name: "Mine" },
      ]),
      400,
      "Bad Request",
    );
    expect(message).toContain("`[1].id`");
    const read = await answer(await as("alice").get(`/contacts/${alices!.id}`), 200, getContact);
    expect(read.display_name).toBe("Alice's friend");
  });

  it("drops duplicates within a contact: addresses like emails, phones and labels", async () => {
    const [saved] = await sync("carol", [
      { display_name: "Dup", addresses: ["1 Main St", "1 Main St", " 1 Main St "], labels: ["a", "a"] },
    ]);
    expect([saved!.address, saved!.labels]).toEqual([["1 Main St"], ["a"]]);
  });

  it("400 for the same id twice, a bad email or birthday, and more than 500 elements", async () => {
    const [c] = await sync("carol", [{ display_name: "Twice" }]);
    expect(
      await expectError(
        await as("carol").send("POST", "/contacts/sync", [{ id: c!.id }, { id: c!.id }]),
        400,
        "Bad Request",
      ),
    ).toContain("`[1].id`");
    expect(
      await expectError(await as("carol").send("POST", "/contacts/sync", [{ emails: ["nope"] }]), 400, "Bad Request"),
    ).toContain("`[0].emails[0]`");
    expect(
      await expectError(
        await as("carol").send("POST", "/contacts/sync", [{ birthday: "1990-02-30" }]),
        400,
        "Bad Request",
      ),
    ).toContain("`[0].birthday`");
    await expectError(
      await as("carol").send(
        "POST",
        "/contacts/sync",
        Array.from({ length: 501 }, () => ({})),
      ),
      400,
      "Bad Request",
    );
    await expectError(
      await as("carol").send("POST", "/contacts/sync", { display_name: "not an array" }),
      400,
      "Bad Request",
    );
  });

  it("takes 500 contacts with phones in one request", async () => {
    const elements = Array.from({ length: 500 }, (_, i) => ({
      display_name: `Bulk ${i}`,
      phone_numbers: [`+1 312 555 ${String(1000 + i).padStart(4, "0")}`],
      emails: [`bulk${i}@example.com`],
    }));
    const saved = await sync("bob", elements);
    expect(saved).toHaveLength(500);
    expect(saved.map((contact) => contact.display_name)).toEqual(elements.map((e) => e.display_name));
    expect(saved[499]!.phone).toEqual(["+13125551499"]);
    expect(saved[0]!.email).toEqual(["bulk0@example.com"]);
    await as("bob").send("DELETE", "/contacts/clear");
  });

  it("401 without a token, 403 for a service token", async () => {
    await expectError(await call("/contacts/sync", { method: "POST", body: [] }), 401, "Unauthorized");
    await expectError(await as("telephony").send("POST", "/contacts/sync", []), 403, "Forbidden");
  });
});

describe("GET /contacts", () => {
  it("pages the caller's contacts without collections unless included", async () => {
    const created = await sync("alice", [
      { display_name: "P1", phone_numbers: ["+14155550151"], emails: ["p1@example.com"], addresses: ["A"] },
      { display_name: "P2" },
      { display_name: "P3" },
    ]);
    const all = await answer(await as("alice").get("/contacts?per_page=100"), 200, listContacts);
    const total = all.length;
    expect(all.map((c) => c.id)).toEqual([...all.map((c) => c.id)].sort((a, b) => a - b));
    expect(all[0]).not.toHaveProperty("email");
    expect(all[0]).not.toHaveProperty("phone");
    expect(all[0]).not.toHaveProperty("address");

    const response = await as("alice").get("/contacts?per_page=2&page=1");
    expect(response.headers.get("X-Total-Count")).toBe(String(total));
    expect(response.headers.get("Link")).toContain('rel="next"');
    expect((await answer(response, 200, listContacts)).length).toBe(2);

    const included = await answer(
      await as("alice").get("/contacts?per_page=100&include=phone_numbers,emails"),
      200,
      listContacts,
    );
    const p1 = included.find((c) => c.id === created[0]!.id)!;
    expect(p1.phone).toEqual(["+14155550151"]);
    expect(p1.email).toEqual(["p1@example.com"]);
    expect(p1).not.toHaveProperty("address");
  });

  it("each page carries its own contacts' values, those of its neighbours on either side none", async () => {
    await sync(
      "bob",
      Array.from({ length: 7 }, (_, i) => ({
        display_name: `Paged ${i}`,
        phone_numbers: [`+1415555016${i}`],
        emails: [`paged${i}@example.com`],
        addresses: i % 2 ? [`${i} Main St`] : [],
      })),
    );
    const everyOne = await answer(
      await as("bob").get("/contacts?per_page=100&include=phone_numbers"),
      200,
      listContacts,
    );
    const pages = [];
    for (const page of [1, 2, 3]) {
      const url = `/contacts?per_page=3&page=${page}&include=phone_numbers,emails,addresses`;
      pages.push(...(await answer(await as("bob").get(url), 200, listContacts)));
    }
    expect(pages.map((c) => c.id)).toEqual(everyOne.map((c) => c.id));
    for (const contact of pages) {
      const i = Number(contact.display_name.slice("Paged ".length));
      expect(contact).toMatchObject({
        phone: [`+1415555016${i}`],
        email: [`paged${i}@example.com`],
        address: i % 2 ? [`${i} Main St`] : [],
      });
    }
    await as("bob").send("DELETE", "/contacts/clear");
  });

  it("defaults to 10 per page", async () => {
    await sync(
      "alice",
      Array.from({ length: 11 }, (_, i) => ({ display_name: `Ten ${i}` })),
    );
    const response = await as("alice").get("/contacts");
    expect((await answer(response, 200, listContacts)).length).toBe(10);
  });

  it("filters by updated_at (created or updated at or since)", async () => {
    const [old] = await sync("alice", [{ display_name: "Old" }]);
    await inPersonObject(
      DEMO.people.alice,
      "UPDATE contacts SET updated_at = ? WHERE id = ?",
      Date.parse("2020-01-01T00:00:00Z"),
      old!.id,
    );
    const since = new Date(Date.now() - 60_000).toISOString();
    const recent = await answer(await as("alice").get(`/contacts?per_page=100&updated_at=${since}`), 200, listContacts);
    expect(recent.some((c) => c.id === old!.id)).toBe(false);
    expect(recent.length).toBeGreaterThan(0);
    const fromDate = await answer(
      await as("alice").get("/contacts?per_page=100&updated_at=2020-01-01"),
      200,
      listContacts,
    );
    expect(fromDate.some((c) => c.id === old!.id)).toBe(true);
  });

  it("400 for an unknown include, a bad page or per_page, a bad updated_at", async () => {
    expect(await expectError(await as("alice").get("/contacts?include=emails,friends"), 400, "Bad Request")).toContain(
      "friends",
    );
    await expectError(await as("alice").get("/contacts?per_page=101"), 400, "Bad Request");
    await expectError(await as("alice").get("/contacts?page=0"), 400, "Bad Request");
    await expectError(await as("alice").get("/contacts?updated_at=yesterday"), 400, "Bad Request");
  });

  it("shows each person only their own contacts", async () => {
    const [secret] = await sync("bob", [{ display_name: "Bob's secret friend" }]);
    const carols = await answer(await as("carol").get("/contacts?per_page=100"), 200, listContacts);
    expect(carols.some((c) => c.id === secret!.id)).toBe(false);
    await expectError(await as("carol").get(`/contacts/${secret!.id}`), 404, "Not Found");
    await expectError(
      await as("carol").send("PUT", `/contacts/${secret!.id}`, { display_name: "x" }),
      404,
      "Not Found",
    );
    await expectError(await as("carol").send("DELETE", `/contacts/${secret!.id}`), 404, "Not Found");
    const still = await answer(await as("bob").get(`/contacts/${secret!.id}`), 200, getContact);
    expect(still.display_name).toBe("Bob's secret friend");
  });
});

describe("GET, PUT, DELETE /contacts/{id}", () => {
  it("reads one contact with every field", async () => {
    const [c] = await sync("alice", [{ display_name: "Single", addresses: ["Somewhere 1"] }]);
    const response = await as("alice").get(`/contacts/${c!.id}`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ ...c, email: [], phone: [], address: ["Somewhere 1"] });
  });

  it("PUT answers 200 with the updated contact; a collection sent empty clears it", async () => {
    const [c] = await sync("alice", [
      { display_name: "Before", phone_numbers: ["+14155550161"], birthday: "1980-01-01", labels: ["a"] },
    ]);
    const response = await as("alice").send("PUT", `/contacts/${c!.id}`, {
      display_name: "After",
      phone_numbers: [],
      birthday: null,
      id: 999999,
    });
    const updated = await answer(response, 200, putContact);
    expect(updated).toMatchObject({ id: c!.id, display_name: "After", phone: [], birthday: null, labels: ["a"] });
    expect(Date.parse(updated.updated)).toBeGreaterThanOrEqual(Date.parse(c!.updated));
    expect(await (await as("alice").get(`/contacts/${c!.id}`)).json()).toEqual(updated);
  });

  it("DELETE answers 200 {success: true}, and the contact is gone", async () => {
    const [c] = await sync("alice", [{ display_name: "Doomed", phone_numbers: ["+14155550171"] }]);
    const response = await as("alice").send("DELETE", `/contacts/${c!.id}`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ success: true });
    await expectError(await as("alice").get(`/contacts/${c!.id}`), 404, "Not Found");
    await expectError(await as("alice").send("DELETE", `/contacts/${c!.id}`), 404, "Not Found");
    expect(
      await countInPersonObject(
        DEMO.people.alice,
        "SELECT count(*) AS n FROM contact_values WHERE contact_id = ?",
        c!.id,
      ),
    ).toBe(0);
  });

  it("404 for a non-numeric or unknown id, 400 for a bad body", async () => {
    expect(await expectError(await as("alice").get("/contacts/abc"), 404, "Not Found")).toContain("`id`");
    const [c] = await sync("alice", [{ display_name: "Valid" }]);
    await expectError(await as("alice").send("PUT", `/contacts/${c!.id}`, { emails: "x" }), 400, "Bad Request");
    await expectError(await as("alice").get("/contacts/99999999"), 404, "Not Found");
    await expectError(await as("alice").send("PUT", "/contacts/99999999", {}), 404, "Not Found");
  });
});

describe("trust requests", () => {
  const requestsOf = async (who: "alice" | "bob") =>
    answer(await as(who).get("/contacts/requests"), 200, listTrustRequests);

  it("an asker's object that fails to answer fails no page: the request is listed with the names it brought", async () => {
    const created = await as("alice").send("POST", "/companies/1/employees", employeeBody(fresh("unanswering")));
    const { id, first_name } = await answer(created, 200, createEmployee);
    const token = `pk_test_unanswering_${id}_${crypto.randomUUID().slice(0, 8)}`;
    await insertToken(token, { personId: id });
    const body = { user_id: DEMO.people.carol, contact_reason: "hello" };
    expect((await call("/contacts/requests", { method: "POST", token, body })).status).toBe(201);
    const dayAgo = Date.now() - 86_400_001;
    await inPersonObject(DEMO.people.carol, "UPDATE peers SET learned_at = ? WHERE person_id = ?", dayAgo, id);
    // Carol's object asks the asker's, which fails (an outage of that one object).
    const { runInDurableObject } = await import("cloudflare:test");
    type Host = { self: { peer: (id: number) => unknown } };
    const restore = await runInDurableObject(personObject(DEMO.people.carol), (instance) => {
      const self = (instance as unknown as Host).self;
      const peer = self.peer.bind(self);
      self.peer = (other) =>
        other === id ? { ownAccount: () => Promise.reject(new Error("object down")) } : peer(other);
      return () => void (self.peer = peer);
    });
    try {
      const page = await answer(await as("carol").get("/contacts/requests"), 200, listTrustRequests);
      expect(page.find((request) => request.id === id)?.first_name).toBe(first_name);
    } finally {
      await runInDurableObject(personObject(DEMO.people.carol), () => restore());
      // Acme's employee list stays as the tests below expect it.
      expect((await as("alice").send("DELETE", `/companies/1/employees/${id}`)).status).toBe(204);
    }
  });

  it("a request from a person whose account is gone is not listed once a day has passed since their names came", async () => {
    const created = await as("alice").send("POST", "/companies/1/employees", employeeBody(fresh("leaver")));
    const { id } = await answer(created, 200, createEmployee);
    const token = `pk_test_leaver_${id}_${crypto.randomUUID().slice(0, 8)}`;
    await insertToken(token, { personId: id });
    const body = { user_id: DEMO.people.carol, contact_reason: "hello" };
    expect((await call("/contacts/requests", { method: "POST", token, body })).status).toBe(201);
    const listed = async () =>
      (await answer(await as("carol").get("/contacts/requests"), 200, listTrustRequests)).filter((r) => r.id === id);
    await expect.poll(async () => (await listed()).length).toBe(1);
    // Acme removes them; it was their only company, so their account goes (and their object is erased).
    expect((await as("alice").send("DELETE", `/companies/1/employees/${id}`)).status).toBe(204);
    // A day after Carol's object heard their names, her page asks their object again: no account.
    const dayAgo = Date.now() - 86_400_001;
    await inPersonObject(DEMO.people.carol, "UPDATE peers SET learned_at = ? WHERE person_id = ?", dayAgo, id);
    expect(await listed()).toEqual([]);
  });

  it("a request by user id, phone or email reaches the person; the list shows pending ones", async () => {
    expect(
      (await as("alice").send("POST", "/contacts/requests", { phone: "+1 415 555 0199", contact_reason: "Lunch?" }))
        .status,
    ).toBe(201);
    // Delivered after the answer: Bob's object has it a moment later.
    await expect
      .poll(() => requestsOf("bob"))
      .toEqual([
        {
          id: 1,
          first_name: "Alice",
          middle_name: null,
          last_name: "Admin",
          contact_reason: "Lunch?",
          updated_at: expect.stringMatching(ISO),
        },
      ]);

    // Asking again refreshes the one pending request.
    await as("alice").send("POST", "/contacts/requests", { email: "BOB@acme.example", contact_reason: "Dinner?" });
    await expect
      .poll(async () => (await requestsOf("bob")).map((r) => [r.id, r.contact_reason]))
      .toEqual([[1, "Dinner?"]]);

    await as("carol").send("POST", "/contacts/requests", { user_id: 2 });
    await expect.poll(async () => (await requestsOf("bob")).map((r) => r.id)).toEqual([3, 1]);
  });

  it("the 201 does not wait for the target's object: a match answers as no match does, and is delivered after", async () => {
    const { runInDurableObject } = await import("cloudflare:test");
    const inserted = await env.DB.prepare(
      "INSERT INTO people (first_name, last_name, created_at, updated_at) VALUES ('Busy', 'Asker', 0, 0) RETURNING id",
    ).first<{ id: number }>();
    const asker = `pk_test_busy_asker_${inserted!.id}_${crypto.randomUUID().slice(0, 8)}`;
    await insertToken(asker, { personId: inserted!.id });
    // Carol's object is busy (or far away) for a while.
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => (release = resolve));
    const holding = runInDurableObject(personObject(DEMO.people.carol), (_, state) =>
      state.blockConcurrencyWhile(() => held),
    );
    try {
      const body = { user_id: DEMO.people.carol, contact_reason: "while you were busy" };
      const answered = await Promise.race([
        call("/contacts/requests", { method: "POST", token: asker, body }).then((response) => response.status),
        new Promise((resolve) => setTimeout(() => resolve("still waiting for Carol's object"), 3_000)),
      ]);
      expect(answered).toBe(201);
    } finally {
      release();
      await holding;
    }
    await expect
      .poll(async () =>
        (await answer(await as("carol").get("/contacts/requests"), 200, listTrustRequests)).map(
          (r) => r.contact_reason,
        ),
      )
      .toContain("while you were busy");
  });

  it("answers 201 when nobody matches, and asks nobody", async () => {
    // Nobody matched, so no person's object received a request (Bob and Carol: no request from Alice).
    const fromAlice = (person: number) =>
      countInPersonObject(person, "SELECT count(*) AS n FROM trust_requests WHERE requester_id = ?", DEMO.people.alice);
    const before = [await fromAlice(DEMO.people.bob), await fromAlice(DEMO.people.carol)];
    for (const body of [{ user_id: 999999 }, { email: "nobody@example.com" }, { phone: "+14155550000" }]) {
      expect((await as("alice").send("POST", "/contacts/requests", body)).status).toBe(201);
    }
    expect([await fromAlice(DEMO.people.bob), await fromAlice(DEMO.people.carol)]).toEqual(before);
    expect(await countInPersonObject(999999, "SELECT count(*) AS n FROM trust_requests")).toBe(0);
  });

  it("400 unless exactly one of user_id, phone, email", async () => {
    await expectError(await as("alice").send("POST", "/contacts/requests", {}), 400, "Bad Request");
    await expectError(
      await as("alice").send("POST", "/contacts/requests", { user_id: 2, email: "bob@acme.example" }),
      400,
      "Bad Request",
    );
    await expectError(await as("alice").send("POST", "/contacts/requests", { phone: "12" }), 400, "Bad Request");
  });

  it("a decision answers 201, takes the request off the list, and can be changed", async () => {
    await as("carol").send("POST", "/contacts/requests", { user_id: 1, contact_reason: "Globex here" });
    expect((await requestsOf("alice")).map((r) => r.id)).toContain(3);

    const response = await as("alice").send("POST", "/contacts/trust/3", { trusted: 1 });
    expect(response.status).toBe(201);
    expect(await response.json()).toEqual({ id: 3, trusted: true });
    expect((await requestsOf("alice")).map((r) => r.id)).not.toContain(3);
    // Alice's decisions are kept in her object, under the id of the person decided about.
    const decisionsAbout3 = (trusted: number) =>
      countInPersonObject(
        DEMO.people.alice,
        "SELECT count(*) AS n FROM person_trust WHERE person_id = 3 AND trusted = ?",
        trusted,
      );
    expect(await decisionsAbout3(1)).toBe(1);

    for (const [trusted, stored] of [
      [false, 0],
      ["0", null],
      [true, 1],
      [0, 0],
    ] as const) {
      const decided = await as("alice").send("POST", "/contacts/trust/3", { trusted });
      if (stored === null) {
        await expectError(decided, 400, "Bad Request");
        continue;
      }
      expect(decided.status).toBe(201);
      expect(await decisionsAbout3(stored)).toBe(1);
    }
  });

  it("404 for someone who never asked, 400 for a missing `trusted`", async () => {
    await expectError(await as("carol").send("POST", "/contacts/trust/2", { trusted: 1 }), 404, "Not Found");
    await expectError(await as("carol").send("POST", "/contacts/trust/999999", { trusted: 1 }), 404, "Not Found");
    await expectError(await as("carol").send("POST", "/contacts/trust/2", {}), 400, "Bad Request");
    expect(await countInPersonObject(DEMO.people.carol, "SELECT count(*) AS n FROM person_trust")).toBe(0);
  });
});

describe("GET /contacts/employees", () => {
  const acme = {
    company: {
      id: 1,
      name: "Acme Corp",
      slug: "acme",
      logo: "https://acme.example/logo.png",
      url: "https://acme.example",
    },
    employees: [
      { id: 1, first_name: "Alice", last_name: "Admin" },
      { id: 2, first_name: "Bob", last_name: "Builder" },
    ],
  };

  it("lists every company the caller belongs to with its employees", async () => {
    const response = await as("bob").get("/contacts/employees", { headers: { Accept: "application/json" } });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual([acme]);
    const carols = await (await as("carol").get("/contacts/employees")).json();
    expect(carols).toEqual([
      {
        company: { id: 2, name: "Globex", slug: "globex", logo: "", url: "https://globex.example" },
        employees: [{ id: 3, first_name: "Carol", last_name: "Chief" }],
      },
    ]);
  });

  it("/contacts/employees/{id} is one company; one the caller is not in is 404", async () => {
    const response = await as("alice").get("/contacts/employees/1");
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual(acme);
    await expectError(await as("alice").get("/contacts/employees/2"), 404, "Not Found");
    await expectError(await as("alice").get("/contacts/employees/999"), 404, "Not Found");
  });
});

describe("DELETE /contacts/clear (development only)", () => {
  it("removes all the caller's contacts and nobody else's", async () => {
    await sync("carol", [{ display_name: "C1" }, { display_name: "C2" }]);
    await sync("alice", [{ display_name: "A1" }]);
    const alicesBefore = await countInPersonObject(DEMO.people.alice, "SELECT count(*) AS n FROM contacts");
    expect(alicesBefore).toBeGreaterThan(0);
    const response = await as("carol").send("DELETE", "/contacts/clear");
    expect(response.status).toBe(204);
    expect(await response.text()).toBe("");
    expect(await countInPersonObject(DEMO.people.carol, "SELECT count(*) AS n FROM contacts")).toBe(0);
    expect(await countInPersonObject(DEMO.people.alice, "SELECT count(*) AS n FROM contacts")).toBe(alicesBefore);
  });

  it("/contacts/clear/{id} takes the caller's own id; another id is 404", async () => {
    await sync("carol", [{ display_name: "C3" }]);
    await expectError(await as("carol").send("DELETE", "/contacts/clear/1"), 404, "Not Found");
    expect(await countInPersonObject(DEMO.people.carol, "SELECT count(*) AS n FROM contacts")).toBe(1);
    expect((await as("carol").send("DELETE", "/contacts/clear/3")).status).toBe(204);
    expect(await countInPersonObject(DEMO.people.carol, "SELECT count(*) AS n FROM contacts")).toBe(0);
  });

  it("does not exist outside development: 404 like an unknown route, even before auth", async () => {
    await sync("carol", [{ display_name: "Survivor" }]);
    for (const path of ["/contacts/clear", "/contacts/clear/3"]) {
      const response = await production(path, "DELETE", DEMO.tokens.carol);
      expect(await expectError(response, 404, "Not Found")).toContain("there is no route");
    }
    await expectError(await production("/contacts/clear", "DELETE", "pk_unknown_token_value"), 404, "Not Found");
    expect(await countInPersonObject(DEMO.people.carol, "SELECT count(*) AS n FROM contacts")).toBe(1);
    // Whatever the path holds: a bad id answers exactly as an unknown route, naming nothing about the route.
    for (const path of ["/contacts/clear/abc", "/contacts/clearx/abc"]) {
      expect(await expectError(await production(path, "DELETE", DEMO.tokens.carol), 404, "Not Found")).toBe(
        `Not Found: there is no route DELETE ${path}`,
      );
    }
  });
});
