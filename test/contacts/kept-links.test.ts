import { env } from "cloudflare:workers";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { LINKS_FRESH_MS } from "../../src/objects/person/limits";
import type { z } from "@hono/zod-openapi";
import { listContacts, syncContacts } from "../../src/routes/contacts/contacts.routes";
import type { ContactSchema } from "../../src/routes/contacts/contacts.schemas";
import { addMyPhone } from "../../src/routes/me/me.routes";
import { answer, as, countD1, DEMO, personObject, provePhone, trustIndexSettled } from "../helpers";
import type { Who } from "../principals";

/**
 * The owner's object keeps the links of their contacts as the trust index named them, for
 * `LINKS_FRESH_MS` (objects/person/links.ts; docs/architecture.md, "Contacts link through the
 * index"): a page within the bound is the object call alone (no KV key, no D1 statement), a change
 * in the index shows on the first page after it, and whether a linked person knows the owner is
 * still decided by each page, from the mirror as it is then.
 */

afterEach(() => {
  vi.restoreAllMocks();
  vi.useRealTimers();
});

/** Every clock of the isolate (the Worker's and the objects') moved past the bound, from where it is. */
const pastTheBound = () => vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + LINKS_FRESH_MS + 1_000 });

type Listed = z.output<typeof ContactSchema>;

/** One page of `who`'s contacts, with the KV gets and D1 statements it made. */
async function page(who: Who) {
  const kvGets = vi.spyOn(env.TRUST_INDEX, "get");
  const d1 = countD1();
  const response = await as(who).get("/contacts?per_page=100&include=emails,phone_numbers");
  const contacts = await answer(response, 200, listContacts);
  const counts = { kvGets: kvGets.mock.calls.length, d1: d1.statements };
  vi.restoreAllMocks();
  return { contacts, etag: response.headers.get("ETag"), ...counts };
}

/** Waits until `personId`'s object keeps fresh links for a page (the page hands them over after its answer). */
const linksKept = (personId: number) =>
  vi.waitFor(async () => {
    const read = await personObject(personId).contactPage({ since: null, limit: 100, offset: 0 });
    expect(read.links?.owner).toBeDefined();
  });

async function sync(who: Who, contacts: object[]) {
  const response = await as(who).send("POST", "/contacts/sync", contacts);
  return answer(response, 200, syncContacts);
}

const bobsPhone = "+14155550199";
const shown = { profile_icon: "https://cdn.example/bob.png", risk_score: 42 };
const hidden = { profile_icon: "", risk_score: 0 };

beforeAll(async () => {
  await as("bob").send("PUT", "/apps/buzz/encryption", { hash: "h-bob", e2e_id: "e2e-bob" });
  await env.DB.prepare("UPDATE people SET risk_score = 42, avatar_url = 'https://cdn.example/bob.png' WHERE id = ?")
    .bind(DEMO.people.bob)
    .run();
  await trustIndexSettled();
});

describe("the owner's object keeps their contacts' links", () => {
  it("a page read twice within the bound reads KV only the first time, and D1 never", async () => {
    await sync("alice", [
      { display_name: "Bob by phone", phone_numbers: [bobsPhone] },
      { display_name: "Bob by email", emails: ["bob@acme.example"] },
      { display_name: "Nobody", phone_numbers: ["+14155557300"], emails: ["nobody.kept@example.com"] },
    ]);
    pastTheBound(); // what the sync's answer kept is stale now
    const first = await page("alice");
    expect(first.kvGets).toBeGreaterThan(0);
    expect(first.d1).toBe(0);
    await linksKept(DEMO.people.alice);

    const second = await page("alice");
    expect(second).toMatchObject({ kvGets: 0, d1: 0 });
    expect(second.contacts).toEqual(first.contacts);
    // Rendered by the object this time (objects/person/contact-listing.ts): the same bytes, so the same tag.
    expect(second.etag).toBe(first.etag);
    const byName = (contacts: Listed[], phone: string) => contacts.find((c) => c.phone?.includes(phone));
    expect(byName(second.contacts, bobsPhone)).toMatchObject({ user_id: DEMO.people.bob, connected: true, ...shown });
    expect(byName(second.contacts, "+14155557300")).toMatchObject({ user_id: null, connected: false });
  });

  it("a person who gets a number after a page shows as its link on the first page after the bound", async () => {
    const number = "+14155557301";
    await sync("alice", [{ display_name: "Not yet Carol", phone_numbers: [number] }]);
    const contactOf = (contacts: Listed[]) => contacts.find((c) => c.phone?.includes(number))!;
    expect(contactOf((await page("alice")).contacts)).toMatchObject({ user_id: null, connected: false });

    // Carol adds the number and proves it: from then on it names her.
    const added = await as("carol").send("POST", "/me/phones", { phone: number });
    expect((await provePhone("carol", (await answer(added, 201, addMyPhone)).id)).status).toBe(200);
    await trustIndexSettled();
    expect(JSON.parse((await env.TRUST_INDEX.get(`num:${number}`))!)).toMatchObject({ p: [DEMO.people.carol] });
    // Within the bound the page shows what the object keeps: nobody, without reading KV.
    const within = await page("alice");
    expect(within.kvGets).toBe(0);
    expect(contactOf(within.contacts)).toMatchObject({ user_id: null, connected: false });

    pastTheBound();
    const after = await page("alice");
    expect(after.kvGets).toBeGreaterThan(0);
    expect(after.d1).toBe(0);
    // Carol is a stranger to Alice: her phone links her, without avatar or risk score.
    expect(contactOf(after.contacts)).toMatchObject({ user_id: DEMO.people.carol, connected: true, ...hidden });
  });

  it("who knows the owner is decided by each page: a distrust hides a kept link's details at once", async () => {
    await sync("carol", [{ display_name: "Bob", emails: ["bob@acme.example"], phone_numbers: [bobsPhone] }]);
    await linksKept(DEMO.people.carol);
    expect((await as("carol").send("POST", "/contacts/requests", { user_id: DEMO.people.bob })).status).toBe(201);
    expect((await as("bob").send("POST", `/contacts/trust/${DEMO.people.carol}`, { trusted: 1 })).status).toBe(201);
    const trusted = await page("carol");
    expect(trusted.kvGets).toBe(0); // the sync's answer kept Bob's links
    expect(trusted.contacts[0]).toMatchObject({ user_id: DEMO.people.bob, ...shown });

    expect((await as("bob").send("POST", `/contacts/trust/${DEMO.people.carol}`, { trusted: 0 })).status).toBe(201);
    const distrusted = await page("carol");
    expect(distrusted).toMatchObject({ kvGets: 0, d1: 0 });
    // His phone still links him (as a secure messenger would say), without avatar or risk score.
    expect(distrusted.contacts[0]).toMatchObject({ user_id: DEMO.people.bob, connected: true, ...hidden });
  });
});
