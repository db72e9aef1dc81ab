import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { listContacts, listTrustRequests } from "../../src/routes/contacts/contacts.routes";
import { answer, as, call, DEMO, expectError, insertToken, personObject } from "../helpers";

/**
 * What grows with other people's choices is bounded (docs/decisions.md,
 * "Paging"; docs/architecture.md, "What crosses people"): 300,000 pending
 * trust requests are read a page at a time, newest first, and a person
 * trusted by 300,000 people reads their contacts with no D1 statement
 * binding that list. The state is built directly in the person's object.
 */

afterEach(() => vi.restoreAllMocks());

const MANY = 300_000;
/** Ids of people who do not exist in D1 (their requests are left out of a page, their trust is only a mirror row). */
const STRANGERS = 50_000_000;

/** A fresh person in D1 with a token of their own. */
async function newPerson(id: number) {
  const now = Date.now();
  await env.DB.prepare(
    "INSERT INTO people (id, first_name, last_name, created_at, updated_at) VALUES (?1, 'Fan', 'In', ?2, ?2)",
  )
    .bind(id, now)
    .run();
  const token = `pk_fanin_${id}_${crypto.randomUUID()}`;
  await insertToken(token, { personId: id });
  return token;
}

/** Runs `sql` in person `personId`'s object (a generator of `MANY` rows, bound `at`). */
const inObject = (personId: number, sql: string, ...params: SqlStorageValue[]) =>
  runInDurableObject(personObject(personId), (_, state) => void state.storage.sql.exec(sql, ...params));

/** The longest value any D1 statement binds from now on (strings by length, in characters). */
function longestBound(): () => number {
  let longest = 0;
  const prototype = Object.getPrototypeOf(env.DB.prepare("select 1")) as D1PreparedStatement;
  const bind = prototype.bind;
  vi.spyOn(prototype, "bind").mockImplementation(function (this: D1PreparedStatement, ...values: unknown[]) {
    for (const value of values) longest = Math.max(longest, typeof value === "string" ? value.length : 0);
    return bind.apply(this, values);
  });
  return () => longest;
}

const nextLink = (response: Response) => /<([^>]+)>;\s*rel="next"/.exec(response.headers.get("Link") ?? "")?.[1];

describe("300,000 pending trust requests", () => {
  it("are read a page at a time, newest first, by cursor (default 100)", async () => {
    const me = 730;
    const token = await newPerson(me);
    const old = Date.now() - 86_400_000;
    await inObject(
      me,
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${MANY})
       INSERT INTO trust_requests (id, requester_id, contact_reason, status, created_at, updated_at)
       SELECT i, ${STRANGERS} + i, 'please', 'pending', ?1, ?1 + i FROM n`,
      old,
    );
    // Two people who exist ask now: they are the newest.
    for (const who of ["alice", "bob"] as const) {
      const asked = await as(who).send("POST", "/contacts/requests", { user_id: me, contact_reason: `${who} asks` });
      expect(asked.status).toBe(201);
    }

    const first = await call("/contacts/requests", { token });
    const page = await answer(first.clone(), 200, listTrustRequests);
    // Newest first; requesters with no account (the strangers) are left out of the page, not of the paging.
    expect(page.map((request) => request.contact_reason)).toEqual(["bob asks", "alice asks"]);
    const next = nextLink(first);
    expect(next).toMatch(/cursor=\d+_\d+&limit=100$/);

    const second = await call(new URL(next!).pathname + new URL(next!).search, { token });
    expect(second.status).toBe(200);
    expect(await second.json()).toEqual([]);
    expect(nextLink(second)).not.toEqual(next);

    const big = await call("/contacts/requests?limit=500", { token });
    expect(big.status).toBe(200);
    expect(nextLink(big)).toMatch(/limit=500&cursor=\d+_\d+$/);

    await expectError(await call("/contacts/requests?limit=501", { token }), 400, "Bad Request");
    await expectError(await call("/contacts/requests?cursor=yesterday", { token }), 400, "Bad Request");
    await expectError(await call("/contacts/requests?limit=0", { token }), 400, "Bad Request");
  });

  it("the last page has no next link", async () => {
    const me = 731;
    const token = await newPerson(me);
    expect((await as("alice").send("POST", "/contacts/requests", { user_id: me, contact_reason: "hi" })).status).toBe(
      201,
    );
    const only = await call("/contacts/requests?limit=1", { token });
    expect(await only.json()).toHaveLength(1);
    expect(only.headers.get("Link")).toBeNull();
  });
});

describe("a person trusted by 300,000 people", () => {
  it("reads their contacts, linked by the mirror, with no D1 statement binding that list", async () => {
    const me = 732;
    const token = await newPerson(me);
    const { bob } = DEMO.people;
    const now = Date.now();
    await inObject(
      me,
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${MANY})
       INSERT INTO trusted_by (person_id, trusted, decided_at) SELECT ${STRANGERS} + i, 1, ?1 FROM n`,
      now,
    );
    // Bob trusted them too (the mirror of his decision): an email links him only because he knows them.
    await personObject(me).receiveMirror(bob, true, now);
    const synced = await call("/contacts/sync", {
      method: "POST",
      token,
      body: [{ display_name: "Bob", emails: ["bob@acme.example"] }],
    });
    expect(synced.status).toBe(200);

    const longest = longestBound();
    const listed = await call("/contacts?include=emails", { token });
    const contacts = await answer(listed, 200, listContacts);
    expect(contacts).toEqual([expect.objectContaining({ display_name: "Bob", user_id: bob })]);
    // 300,000 ids would be 2.4 MB as one JSON value; nothing near that is bound.
    expect(longest()).toBeLessThan(20_000);
  });
});
