import { runDurableObjectAlarm } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { MAX_CONTACTS } from "../../src/objects/person/limits";
import { listDeletedContacts, syncContacts } from "../../src/routes/contacts/contacts.routes";
import { answer, as, countInPersonObject, DEMO, expectError, inPersonObject, personObject } from "../helpers";

/**
 * GET /contacts/deleted (docs/decisions.md): tombstones written by the
 * transaction that deletes, in the person's own object, `since` inclusive, 90
 * days of memory (410 beyond), pruned by the object's alarm; and the
 * 10,000-contact quota of a sync (§10.9).
 */

const DAY = 24 * 3600 * 1000;

afterEach(() => {
  vi.restoreAllMocks();
});

async function sync(who: "alice" | "bob" | "carol", elements: unknown[]) {
  return answer(await as(who).send("POST", "/contacts/sync", elements), 200, syncContacts);
}

async function deletedSince(who: "alice" | "bob" | "carol", since: Date | string, query = "") {
  const at = typeof since === "string" ? since : since.toISOString();
  return as(who).get(`/contacts/deleted?since=${encodeURIComponent(at)}${query}`);
}

/** Tombstones in the owner's object, as a move from D1 brings them (`importRows`). */
async function tombstones(ownerId: number, rows: { contactId: number; deletedAt: number }[]) {
  await personObject(ownerId).importRows({ tombstones: rows });
}

describe("GET /contacts/deleted", () => {
  it("DELETE /contacts/{id} leaves a tombstone; sync never does; another owner sees none", async () => {
    const before = new Date();
    const [a, b] = await sync("alice", [{ display_name: "Gone Soon" }, { display_name: "Stays" }]);
    // A sync that replaces collections deletes no contact.
    await sync("alice", [{ id: b!.id, display_name: "Still here", emails: [] }]);
    expect((await as("alice").send("DELETE", `/contacts/${a!.id}`)).status).toBe(200);

    const response = await deletedSince("alice", before);
    const items = await answer(response.clone(), 200, listDeletedContacts);
    expect(items.map((item) => item.id)).toEqual([a!.id]);
    expect(new Date(items[0]!.deleted_at).getTime()).toBeGreaterThanOrEqual(before.getTime());
    expect(response.headers.get("X-Total-Count")).toBe("1");

    expect(await (await deletedSince("bob", before)).json()).toEqual([]);
    // A second DELETE is a 404 and leaves no second tombstone.
    expect((await as("alice").send("DELETE", `/contacts/${a!.id}`)).status).toBe(404);
    expect(
      await countInPersonObject(
        DEMO.people.alice,
        "SELECT count(*) AS n FROM contact_tombstones WHERE contact_id = ?",
        a!.id,
      ),
    ).toBe(1);
  });

  it("/contacts/clear leaves a tombstone per contact, in the same transaction as the delete", async () => {
    const before = new Date();
    const created = await sync("carol", [{ display_name: "One" }, { display_name: "Two" }, { display_name: "Three" }]);
    expect((await as("carol").send("DELETE", "/contacts/clear")).status).toBe(204);
    const items = await answer(await deletedSince("carol", before), 200, listDeletedContacts);
    expect(items.map((item) => item.id)).toEqual(created.map((contact) => contact.id));
    expect(await countInPersonObject(DEMO.people.carol, "SELECT count(*) AS n FROM contacts")).toBe(0);
  });

  it("no deletion without its tombstone: a failed tombstone insert fails the DELETE", async () => {
    const alice = DEMO.people.alice;
    const [contact] = await sync("alice", [{ display_name: "Kept" }]);
    // Alice's object refuses every tombstone insert, as a failing storage would.
    await inPersonObject(
      alice,
      `CREATE TRIGGER fail_tombstones BEFORE INSERT ON contact_tombstones
       BEGIN SELECT RAISE(ABORT, 'simulated failure'); END`,
    );
    try {
      expect((await as("alice").send("DELETE", `/contacts/${contact!.id}`)).status).toBe(500);
    } finally {
      await inPersonObject(alice, "DROP TRIGGER fail_tombstones");
    }
    expect(await countInPersonObject(alice, "SELECT count(*) AS n FROM contacts WHERE id = ?", contact!.id)).toBe(1);
    expect(
      await countInPersonObject(
        alice,
        "SELECT count(*) AS n FROM contact_tombstones WHERE contact_id = ?",
        contact!.id,
      ),
    ).toBe(0);
    // Nothing of the failed delete remains: the contact can still be deleted, with its tombstone.
    expect((await as("alice").send("DELETE", `/contacts/${contact!.id}`)).status).toBe(200);
    expect(
      await countInPersonObject(
        alice,
        "SELECT count(*) AS n FROM contact_tombstones WHERE contact_id = ?",
        contact!.id,
      ),
    ).toBe(1);
  });

  it("since is inclusive; oldest first; paged like /contacts", async () => {
    const owner = DEMO.people.bob;
    const t = Date.now() - 10 * DAY;
    await tombstones(owner, [
      { contactId: 900_003, deletedAt: t + 2 },
      { contactId: 900_001, deletedAt: t },
      { contactId: 900_002, deletedAt: t + 1 },
    ]);

    const all = await answer(await deletedSince("bob", new Date(t)), 200, listDeletedContacts);
    expect(all.map((item) => item.id)).toEqual([900_001, 900_002, 900_003]);
    expect(all[0]!.deleted_at).toBe(new Date(t).toISOString());
    const later = await answer(await deletedSince("bob", new Date(t + 1)), 200, listDeletedContacts);
    expect(later.map((item) => item.id)).toEqual([900_002, 900_003]);

    const page = await deletedSince("bob", new Date(t), "&page=2&per_page=2");
    expect((await answer(page.clone(), 200, listDeletedContacts)).map((item) => item.id)).toEqual([900_003]);
    expect(page.headers.get("X-Total-Count")).toBe("3");
    expect(page.headers.get("Link")).toContain('rel="prev"');
  });

  it("410 Gone for a since older than 90 days; 90 days back is still answered", async () => {
    const message = await expectError(await deletedSince("alice", new Date(Date.now() - 91 * DAY)), 410, "Gone");
    expect(message).toMatch(/90 days/);
    expect(message).toMatch(/resynchronise in full/);
    expect((await deletedSince("alice", new Date(Date.now() - 90 * DAY + 60_000))).status).toBe(200);
  });

  it("400 without since, or with one that is not a time", async () => {
    expect(await expectError(await as("alice").get("/contacts/deleted"), 400, "Bad Request")).toMatch(/`since`/);
    expect(await expectError(await deletedSince("alice", "yesterday"), 400, "Bad Request")).toMatch(/`since`/);
  });

  it("the object's alarm forgets tombstones older than 90 days, in bounded chunks", async () => {
    const owner = DEMO.people.alice;
    const now = Date.now();
    // 1,005 past the 90 days (the alarm prunes at most 1,000 a run) and one within them.
    await tombstones(owner, [
      ...Array.from({ length: 1_005 }, (_, i) => ({ contactId: 800_000 + i, deletedAt: now - 91 * DAY + i })),
      { contactId: 810_000, deletedAt: now - 89 * DAY },
    ]);
    const old = () =>
      countInPersonObject(
        owner,
        "SELECT count(*) AS n FROM contact_tombstones WHERE contact_id BETWEEN 800000 AND 809999",
      );

    // A full chunk: 1,000 go, and the next alarm follows at once for the rest.
    expect(await runDurableObjectAlarm(personObject(owner))).toBe(true);
    expect(await old()).toBe(5);
    expect(await runDurableObjectAlarm(personObject(owner))).toBe(true);
    expect(await old()).toBe(0);
    expect(
      await countInPersonObject(owner, "SELECT count(*) AS n FROM contact_tombstones WHERE contact_id = 810000"),
    ).toBe(1);
    const kept = await answer(await deletedSince("alice", new Date(now - 89 * DAY)), 200, listDeletedContacts);
    expect(kept.map((item) => item.id)).toContain(810_000);
  });
});

describe("at most 10,000 contacts per person", () => {
  it("a sync that would pass the limit is a 400 naming it, and writes nothing; reaching it exactly is fine", async () => {
    const owner = DEMO.people.carol;
    await as("carol").send("DELETE", "/contacts/clear");
    await inPersonObject(
      owner,
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
       INSERT INTO contacts (id, display_name, labels, created_at, updated_at)
       SELECT i, 'Filler ' || i, '[]', 0, 0 FROM n`,
      MAX_CONTACTS - 2,
    );
    const held = () => countInPersonObject(owner, "SELECT count(*) AS n FROM contacts");

    const over = await as("carol").send("POST", "/contacts/sync", [
      { display_name: "a" },
      { display_name: "b" },
      { display_name: "c" },
    ]);
    expect(await expectError(over, 400, "Bad Request")).toMatch(/at most 10,000 contacts/);
    expect(await held()).toBe(MAX_CONTACTS - 2);

    // Four syncs of two at once, with room for two: exactly one gets in (the object runs one
    // sync at a time, so the others see no room).
    const racing = await Promise.all(
      ["a", "b", "c", "d"].map((name) =>
        as("carol").send("POST", "/contacts/sync", [{ display_name: `${name}1` }, { display_name: `${name}2` }]),
      ),
    );
    expect(racing.map((response) => response.status).sort()).toEqual([200, 400, 400, 400]);
    for (const response of racing.filter((r) => r.status === 400)) {
      expect(await expectError(response, 400, "Bad Request")).toMatch(/at most 10,000 contacts/);
    }
    expect(await held()).toBe(MAX_CONTACTS);
    // Updating an existing contact creates none: still allowed at the limit.
    const last = await countInPersonObject(owner, "SELECT max(id) AS n FROM contacts");
    await sync("carol", [{ id: last, display_name: "renamed" }]);
    await as("carol").send("DELETE", "/contacts/clear");
  }, 60_000);
});
