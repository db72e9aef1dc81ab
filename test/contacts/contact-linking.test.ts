import { env } from "cloudflare:workers";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { LINKS_FRESH_MS } from "../../src/objects/person/limits";
import { listContacts, syncContacts } from "../../src/routes/contacts/contacts.routes";
import { answer, as, countD1, DEMO, trustIndexSettled } from "../helpers";

/**
 * What a contact reveals about the platform person it names (docs/decisions.md,
 * "What a stranger learns"): a phone number links (user_id, connected, e2ee), as
 * a secure messenger reveals that a number can be called securely; an email
 * links, and the avatar and risk score show, only when that person knows the
 * owner (a shared company, or they trusted the owner).
 */

async function add(who: "alice" | "carol", contact: object) {
  const response = await as(who).send("POST", "/contacts/sync", [{ display_name: "x", ...contact }]);
  return (await answer(response, 200, syncContacts))[0]!;
}

const hidden = { profile_icon: "", risk_score: 0 };
const shown = { profile_icon: "https://cdn.example/bob.png", risk_score: 42 };

beforeAll(async () => {
  await as("bob").send("PUT", "/apps/buzz/encryption", { hash: "h-bob", e2e_id: "e2e-bob" });
  await env.DB.prepare(
    "UPDATE people SET risk_score = 42, avatar_url = 'https://cdn.example/bob.png' WHERE id = 2",
  ).run();
  // Contacts link through the trust index (`lnk:` cards): D1's triggers queued Bob's card, made current here.
  await trustIndexSettled();
});

describe("contact linking across tenants", () => {
  it("a stranger's email names no one", async () => {
    const contact = await add("carol", { emails: ["bob@acme.example"] });
    expect(contact).toMatchObject({ user_id: null, connected: false, e2ee: false, ...hidden });
  });

  it("a stranger's phone links, without avatar or risk score", async () => {
    const contact = await add("carol", { phone_numbers: ["+14155550199"] });
    expect(contact).toMatchObject({ user_id: DEMO.people.bob, connected: true, e2ee: true, ...hidden });
  });

  it("a coworker links by email and shows avatar and risk score", async () => {
    const byEmail = await add("alice", { emails: ["bob@acme.example"] });
    expect(byEmail).toMatchObject({ user_id: DEMO.people.bob, connected: true, e2ee: true, ...shown });
    const byPhone = await add("alice", { phone_numbers: ["+14155550199"] });
    expect(byPhone).toMatchObject({ user_id: DEMO.people.bob, ...shown });
  });

  it("once the person trusts the owner, email links and details show; a distrust hides them again", async () => {
    expect((await as("carol").send("POST", "/contacts/requests", { user_id: DEMO.people.bob })).status).toBe(201);
    expect((await as("bob").send("POST", `/contacts/trust/${DEMO.people.carol}`, { trusted: 1 })).status).toBe(201);
    const list = async () => answer(await as("carol").get("/contacts?per_page=100"), 200, listContacts);
    for (const contact of await list()) expect(contact).toMatchObject({ user_id: DEMO.people.bob, ...shown });

    expect((await as("bob").send("POST", `/contacts/trust/${DEMO.people.carol}`, { trusted: 0 })).status).toBe(201);
    const [byEmail, byPhone] = await list();
    expect(byEmail).toMatchObject({ user_id: null, connected: false, ...hidden });
    expect(byPhone).toMatchObject({ user_id: DEMO.people.bob, connected: true, ...hidden });
  });
});

describe("contacts link through the trust index (`num:`, `eml:`, `lnk:`)", () => {
  afterEach(() => {
    vi.restoreAllMocks();
    vi.useRealTimers();
  });
  // A page shows the links the owner's object keeps for `LINKS_FRESH_MS` (test/contacts/kept-links.test.ts):
  // a change in the index shows once that bound has passed.
  const pastTheBound = () => vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + LINKS_FRESH_MS + 1_000 });
  const email = "handover@acme.example";
  const page = async () => answer(await as("alice").get("/contacts?per_page=100&include=emails"), 200, listContacts);

  it("an email that changes hands links its new owner once the index settles", async () => {
    await env.DB.prepare("INSERT INTO person_emails (person_id, email) VALUES (?, ?)")
      .bind(DEMO.people.bob, email)
      .run();
    await trustIndexSettled();
    expect(JSON.parse((await env.TRUST_INDEX.get(`eml:${email}`))!)).toEqual({ p: DEMO.people.bob });
    const contact = await add("alice", { emails: [email] });
    expect(contact).toMatchObject({ user_id: DEMO.people.bob, connected: true, ...shown });

    // The email moves to Carol, a stranger to Alice: it names no one for her any more.
    await env.DB.prepare("UPDATE person_emails SET person_id = ? WHERE email = ?").bind(DEMO.people.carol, email).run();
    await trustIndexSettled();
    pastTheBound();
    expect(JSON.parse((await env.TRUST_INDEX.get(`eml:${email}`))!)).toEqual({ p: DEMO.people.carol });
    expect((await page()).find((c) => c.email?.includes(email))).toMatchObject({ user_id: null, connected: false });

    // Then to Alice herself: it links her.
    await env.DB.prepare("UPDATE person_emails SET person_id = ? WHERE email = ?").bind(DEMO.people.alice, email).run();
    await trustIndexSettled();
    pastTheBound();
    expect((await page()).find((c) => c.email?.includes(email))).toMatchObject({
      user_id: DEMO.people.alice,
      connected: true,
    });

    // Gone: its key goes, and the contact links no one.
    await env.DB.prepare("DELETE FROM person_emails WHERE email = ?").bind(email).run();
    await trustIndexSettled();
    pastTheBound();
    expect(await env.TRUST_INDEX.get(`eml:${email}`)).toBeNull();
    expect((await page()).find((c) => c.email?.includes(email))).toMatchObject({ user_id: null, connected: false });
  });

  it("an email the employer gives a member links them right after the commit", async () => {
    const added = "bob.second@acme.example";
    const put = await as("alice").send("PUT", `/companies/${DEMO.companies.acme}/employees/${DEMO.people.bob}`, {
      emails: [{ email: "bob@acme.example" }, { email: added, primary: false }],
    });
    expect(put.status).toBe(200);
    expect(JSON.parse((await env.TRUST_INDEX.get(`eml:${added}`))!)).toEqual({ p: DEMO.people.bob });
    expect(await add("alice", { emails: [added] })).toMatchObject({ user_id: DEMO.people.bob, connected: true });
  });

  it("a page links through the index with no D1 statement; before the index holds contacts (no mark), through D1", async () => {
    const linked = async () => {
      const d1 = countD1();
      const contacts = await page();
      vi.restoreAllMocks();
      expect(contacts.find((c) => c.user_id === DEMO.people.bob)).toMatchObject({ connected: true, ...shown });
      return d1.queries.length;
    };
    expect(await linked()).toBe(0);
    const mark = (await env.TRUST_INDEX.get("idx:contacts"))!;
    await env.TRUST_INDEX.delete("idx:contacts");
    pastTheBound(); // the owner's kept card stood for the mark until then
    try {
      expect(await linked()).toBe(1);
    } finally {
      await env.TRUST_INDEX.put("idx:contacts", mark);
    }
  });
});
