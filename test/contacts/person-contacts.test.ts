import { env } from "cloudflare:workers";
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { drizzle } from "drizzle-orm/durable-sqlite";
import { describe, expect, it } from "vitest";
import { receiverKey } from "../../src/domain/trust-records";
import { mirrorOutbox } from "../../src/objects/person/schema";
import { decide } from "../../src/objects/person/trust";
import { heartbeat, trustLookupGet } from "../../src/routes/buzz/buzz.routes";
import { getContact, syncContacts } from "../../src/routes/contacts/contacts.routes";
import {
  answer,
  as,
  call,
  countInPersonObject,
  DEMO,
  expectError,
  inPersonObject,
  personObject,
  withoutIndexMark,
  indexKeysWritten,
} from "../helpers";

/**
 * Contacts and trust decisions in each person's own object
 * (docs/architecture.md, "Where data lives", "What crosses people"): the
 * contact quota checked where one request runs at a time, the mirror of a
 * decision in the other person's object, and the trust-lookup keys the
 * object owns.
 */
const { alice, bob, carol } = DEMO.people;

async function secureNumber(who: "alice" | "bob" | "carol") {
  const body = await answer(await as(who).get("/apps/buzz/heartbeat"), 200, heartbeat);
  return body.secure_number!.e164;
}

const lookup = async (receiver: string, caller: string) =>
  answer(
    await call(`/apps/buzz/trust-lookup?number=${encodeURIComponent(receiver)}&inbound=${encodeURIComponent(caller)}`, {
      token: DEMO.tokens.telephony,
    }),
    200,
    trustLookupGet,
  );

describe("the 10,000-contact quota, inside the object", () => {
  it("concurrent syncs cannot pass it: of three syncs of 50 at 9,900 contacts, two land and one is a 400", async () => {
    const now = Date.now();
    await personObject(carol).importRows({
      contacts: Array.from({ length: 9_900 }, (_, i) => ({
        id: 5_000_000 + i,
        displayName: `Filler ${i}`,
        birthday: null,
        labels: [],
        emails: [],
        phones: [],
        addresses: [],
        createdAt: now,
        updatedAt: now,
      })),
    });
    const fifty = (tag: string) => Array.from({ length: 50 }, (_, i) => ({ display_name: `${tag} ${i}` }));
    const answers = await Promise.all(
      ["a", "b", "c"].map((tag) => as("carol").send("POST", "/contacts/sync", fifty(tag))),
    );
    expect(answers.map((response) => response.status).sort()).toEqual([200, 200, 400]);
    expect(
      await expectError(
        answers.find((response) => response.status === 400)!,
        400,
        "Bad Request",
      ),
    ).toMatch(/at most 10,000 contacts/);
    expect(await countInPersonObject(carol, "SELECT count(*) AS n FROM contacts")).toBe(10_000);
  });
});

describe("a trust decision reaches the other person's mirror", () => {
  it("Carol trusts Bob: Bob's object knows, and Bob's contact with Carol's email now links to her", async () => {
    const carolsEmail = "carol@globex.example";
    expect((await as("bob").send("POST", "/contacts/requests", { user_id: carol })).status).toBe(201);
    const [contact] = await answer(
      await as("bob").send("POST", "/contacts/sync", [{ display_name: "Carol", emails: [carolsEmail] }]),
      200,
      syncContacts,
    );
    // Carol is a stranger to Bob: her email names no one.
    expect(contact!.user_id).toBeNull();

    expect((await as("carol").send("POST", `/contacts/trust/${bob}`, { trusted: true })).status).toBe(201);
    expect(await personObject(bob).trustedMe()).toEqual([carol]);
    const linked = await answer(await as("bob").get(`/contacts/${contact!.id}`), 200, getContact);
    expect(linked.user_id).toBe(carol);

    // She changes her mind: the mirror follows, and the email names no one again.
    expect((await as("carol").send("POST", `/contacts/trust/${bob}`, { trusted: false })).status).toBe(201);
    expect(await personObject(bob).trustedMe()).toEqual([]);
    expect((await answer(await as("bob").get(`/contacts/${contact!.id}`), 200, getContact)).user_id).toBeNull();
  });

  it("a mirror that did not reach the other object is sent again by the decider's alarm", async () => {
    // As a failed send leaves it: the decision made, its mirror still in the outbox.
    await personObject(carol).importRows({ decisions: [{ personId: alice, trusted: true, updatedAt: Date.now() }] });
    await inPersonObject(
      carol,
      "INSERT INTO mirror_outbox (person_id, trusted, decided_at) VALUES (?, 1, ?)",
      alice,
      Date.now(),
    );
    await inPersonObject(
      carol,
      "INSERT OR IGNORE INTO facts (one, person_id, e164, companies) VALUES (1, ?, NULL, '[]')",
      carol,
    );
    expect(await personObject(alice).trustedMe()).not.toContain(carol);
    expect(await runDurableObjectAlarm(personObject(carol))).toBe(true);
    expect(await personObject(alice).trustedMe()).toContain(carol);
    expect(await countInPersonObject(carol, "SELECT count(*) AS n FROM mirror_outbox")).toBe(0);
  });

  it("two decisions in one millisecond: the later is the later in the other's mirror too, whatever lands first", async () => {
    // Carol decided about Bob already (above).
    const sent = await runInDurableObject(personObject(carol), (_, state) => {
      const db = drizzle(state.storage);
      decide(db, bob, true, 5_000);
      const trusting = db.select().from(mirrorOutbox).get()!;
      decide(db, bob, false, 5_000);
      return [trusting, db.select().from(mirrorOutbox).get()!];
    });
    expect(sent[1]!.decidedAt).toBeGreaterThan(sent[0]!.decidedAt);
    // The revocation lands first, the trust it replaced after: the revocation stays.
    await personObject(bob).receiveMirror(carol, sent[1]!.trusted, sent[1]!.decidedAt);
    await personObject(bob).receiveMirror(carol, sent[0]!.trusted, sent[0]!.decidedAt);
    expect(await personObject(bob).trustedMe()).toEqual([]);
  });

  it("a late mirror of an older decision changes nothing", async () => {
    await personObject(alice).receiveMirror(carol, true, 2_000);
    await personObject(alice).receiveMirror(carol, false, 1_000);
    expect(await personObject(alice).trustedMe()).toEqual([carol]);
  });
});

describe("the object owns its trust-lookup keys", () => {
  it("a contact sync writes the receiver record and the bucket; KV holds what the object computes", async () => {
    const secure = await secureNumber("alice");
    const phone = "+13035550177";
    expect(await lookup(secure, phone)).toEqual({ trusted: false, user_id: alice, caller_verification: null });
    const synced = await as("alice").send("POST", "/contacts/sync", [
      { display_name: "Dentist", phone_numbers: [phone] },
    ]);
    expect(synced.status).toBe(200);
    // Alice's receiver record may have been written less than a second ago: rewritten once that second has passed.
    await indexKeysWritten(alice);
    expect(await lookup(secure, phone)).toEqual({ trusted: true, user_id: alice, caller_verification: null });
    const values = await personObject(alice).indexValues();
    for (const [key, value] of Object.entries(values)) expect(await env.TRUST_INDEX.get(key)).toBe(value);
    expect(values[`rcvn:${secure}:77`]).toContain(`,${phone},`);
  });

  it("before the index is complete, a receiver record missing from KV is answered by the object, which writes it again from its alarm", async () => {
    await withoutIndexMark();
    const secure = await secureNumber("alice");
    const phone = "+13035550178";
    await as("alice").send("POST", "/contacts/sync", [{ display_name: "Plumber", phone_numbers: [phone] }]);
    await env.TRUST_INDEX.delete(receiverKey(secure));
    await env.TRUST_INDEX.delete(`rcvn:${secure}:78`);
    expect(await lookup(secure, phone)).toEqual({ trusted: true, user_id: alice, caller_verification: null });
    // The alarm writes them, once a second has passed since the sync wrote them.
    await indexKeysWritten(alice);
    expect(await env.TRUST_INDEX.get(receiverKey(secure))).toBe(
      (await personObject(alice).indexValues())[receiverKey(secure)],
    );
    expect(await env.TRUST_INDEX.get(`rcvn:${secure}:78`)).toContain(`,${phone},`);
  });

  it("an object D1 has not told its facts yet reads them itself on its first change, and writes its keys", async () => {
    const secure = await secureNumber("alice");
    const phone = "+13035550144";
    // An object from before D1 told objects their facts, and the record the D1 writer left in KV (no buckets).
    await inPersonObject(alice, "DELETE FROM facts");
    await env.TRUST_INDEX.put(
      receiverKey(secure),
      JSON.stringify({ p: alice, nb: [], tp: [], c: [1], tc: [], nc: [] }),
    );
    const synced = await as("alice").send("POST", "/contacts/sync", [{ display_name: "Vet", phone_numbers: [phone] }]);
    expect(synced.status).toBe(200);
    await indexKeysWritten(alice);
    expect(await lookup(secure, phone)).toEqual({ trusted: true, user_id: alice, caller_verification: null });
  });

  it("deleting the last contact of a bucket deletes the bucket's key", async () => {
    const secure = await secureNumber("alice");
    const phone = "+13035550133";
    const [created] = await answer(
      await as("alice").send("POST", "/contacts/sync", [{ display_name: "Once", phone_numbers: [phone] }]),
      200,
      syncContacts,
    );
    await indexKeysWritten(alice);
    expect(await env.TRUST_INDEX.get(`rcvn:${secure}:33`)).toContain(phone);
    expect((await as("alice").send("DELETE", `/contacts/${created!.id}`)).status).toBe(200);
    // The delete came within a second of the bucket's write: it goes once that second has passed.
    await indexKeysWritten(alice);
    expect(await env.TRUST_INDEX.get(`rcvn:${secure}:33`)).toBeNull();
    expect(await lookup(secure, phone)).toEqual({ trusted: false, user_id: alice, caller_verification: null });
  });
});
