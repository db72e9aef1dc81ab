import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { createDeps } from "../../src/services/create-deps";
import { pruneExpired } from "../../src/services/retention";
import { trustLookupGet } from "../../src/routes/buzz/buzz.routes";
import { syncContacts } from "../../src/routes/contacts/contacts.routes";
import {
  answer,
  as,
  call,
  countInPersonObject,
  DEMO,
  indexKeysWritten,
  inPersonObject,
  insertToken,
  personObject,
  withoutIndexMark,
  secureNumberOf,
} from "../helpers";

/**
 * Writes cost what they change (docs/architecture.md, "Fan-out bound"): a
 * contact edit rewrites only the buckets of the phones it touched, the
 * receiver record only when its content changed, and no index key is ever
 * put again with the value KV already holds. Bob's object writes these keys
 * (a put, or a delete for a bucket emptied): both count as writes.
 */

afterEach(() => {
  vi.restoreAllMocks();
});

let secure = "";
let receiving = { number_code: "", number: "" };
/** Bob's 100 contacts, one phone each, in the 100 buckets: contact i has +1212555(1000 + i), bucket i. */
const contactIds: number[] = [];
const phone = (i: number) => `+1212555${1000 + i}`;
const bucketKey = (dd: number) => `rcvn:${secure}:${String(dd).padStart(2, "0")}`;

beforeAll(async () => {
  ({ receiving, e164: secure } = await secureNumberOf("bob"));
  expect((await as("bob").send("DELETE", "/contacts/clear")).status).toBe(204);
  const synced = await as("bob").send(
    "POST",
    "/contacts/sync",
    Array.from({ length: 100 }, (_, i) => ({ display_name: `Bucket ${i}`, phone_numbers: [phone(i)] })),
  );
  contactIds.push(...(await answer(synced, 200, syncContacts)).map((contact) => contact.id));
});

const bob = personObject(DEMO.people.bob);

/**
 * The index keys written to KV (put or deleted) while `work` runs (token-cache writes aside), and
 * until Bob's object has written every key it left due: a key written less than a second before
 * (by the test before) is written once that second has passed (src/db/kv-writes.ts).
 */
async function writesDuring(work: () => Promise<unknown>): Promise<string[]> {
  const puts = vi.spyOn(env.TRUST_INDEX, "put");
  const deletes = vi.spyOn(env.TRUST_INDEX, "delete");
  await work();
  await indexKeysWritten(DEMO.people.bob);
  const keys = [...puts.mock.calls, ...deletes.mock.calls].map(([key]) => key).filter((key) => !key.startsWith("tok:"));
  puts.mockRestore();
  deletes.mockRestore();
  return keys;
}

/** Sets Bob's alarm to now, so runDurableObjectAlarm runs it. */
async function runInObjectSetAlarm() {
  const { runInDurableObject } = await import("cloudflare:test");
  await runInDurableObject(bob, (_, state) => state.storage.setAlarm(Date.now()));
}

async function trusted(caller: string): Promise<boolean> {
  const params = new URLSearchParams({ ...receiving, inbound_code: "1", inbound: caller.slice(2) });
  return (await answer(await as("telephony").get(`/apps/buzz/trust-lookup?${params}`), 200, trustLookupGet)).trusted;
}

describe("a contact edit rewrites only what it changed", () => {
  it("one phone of 100 contacts in 100 buckets moved to another bucket: 3 KV writes (both buckets, the receiver's bucket list)", async () => {
    const puts = await writesDuring(async () => {
      const response = await as("bob").send("PUT", `/contacts/${contactIds[5]}`, { phone_numbers: ["+12125552342"] });
      expect(response.status).toBe(200);
    });
    // Bucket 05 is emptied (its key deleted; the receiver record no longer lists it), bucket 42 gains a phone.
    expect(puts.sort()).toEqual([`rcv:${secure}`, bucketKey(5), bucketKey(42)].sort());
    expect(await trusted("+12125552342")).toBe(true);
    expect(await trusted(phone(42))).toBe(true);
    expect(await trusted(phone(5))).toBe(false);
  });

  it("a phone moved within its bucket rewrites that bucket alone; a name edit or an unchanged phone list rewrites nothing", async () => {
    expect(
      await writesDuring(() =>
        as("bob").send("PUT", `/contacts/${contactIds[7]}`, { phone_numbers: ["+12125553307"] }),
      ),
    ).toEqual([bucketKey(7)]);
    expect(await trusted("+12125553307")).toBe(true);
    expect(await trusted(phone(7))).toBe(false);

    expect(
      await writesDuring(() => as("bob").send("PUT", `/contacts/${contactIds[8]}`, { display_name: "Renamed" })),
    ).toEqual([]);
    // The same phones written again: the bucket is recomputed, found identical, and not put.
    expect(
      await writesDuring(() => as("bob").send("PUT", `/contacts/${contactIds[9]}`, { phone_numbers: [phone(9)] })),
    ).toEqual([]);
    expect(await trusted(phone(9))).toBe(true);
  });

  it("deleting a contact rewrites its bucket, and the receiver record only when that bucket empties (then deleted)", async () => {
    // Bucket 42 holds two phones (the first test moved one there): still listed after one goes.
    expect(await writesDuring(() => as("bob").send("DELETE", `/contacts/${contactIds[42]}`))).toEqual([bucketKey(42)]);
    expect(await trusted(phone(42))).toBe(false);
    expect(await trusted("+12125552342")).toBe(true);
    expect((await writesDuring(() => as("bob").send("DELETE", `/contacts/${contactIds[11]}`))).sort()).toEqual(
      [`rcv:${secure}`, bucketKey(11)].sort(),
    );
    expect(await trusted(phone(11))).toBe(false);
  });

  it("a sync of new contacts rewrites the buckets of their phones and the receiver record, not the other 100", async () => {
    const puts = await writesDuring(() =>
      as("bob").send("POST", "/contacts/sync", [
        { display_name: "New A", phone_numbers: ["+12125554411"] },
        { display_name: "New B", phone_numbers: ["+12125554405", "+12125554412"] },
      ]),
    );
    // Bucket 05 was empty: listing it changes the receiver record; 11 was emptied above; 12 only gains a phone.
    expect(puts.sort()).toEqual([`rcv:${secure}`, bucketKey(5), bucketKey(11), bucketKey(12)].sort());
    expect(await trusted("+12125554405")).toBe(true);
  });
});

describe("index keys are never put again with the value KV holds", () => {
  it("keys due whose value did not change put nothing; a key KV lacks is put again (a lookup's miss forces it)", async () => {
    await withoutIndexMark(); // a lookup's miss falls back to the object, as before a rebuild finished
    const keys = [`rcv:${secure}`, bucketKey(12), bucketKey(13)];
    const due = () =>
      countInPersonObject(
        DEMO.people.bob,
        `SELECT count(*) AS n FROM index_keys WHERE due = 1 AND key IN (select value from json_each(?))`,
        JSON.stringify(keys),
      );
    // The keys made due again without a change of their values (as a change undone before the write would):
    // the object's alarm recomputes them, finds the values KV holds, and writes nothing.
    await inPersonObject(
      DEMO.people.bob,
      `UPDATE index_keys SET due = 1, version = version + 1 WHERE key IN (select value from json_each(?))`,
      JSON.stringify(keys),
    );
    expect(await due()).toBe(3);
    expect(
      await writesDuring(async () => {
        await runInObjectSetAlarm();
        expect(await runDurableObjectAlarm(bob)).toBe(true);
      }),
    ).toEqual([]);
    expect(await due()).toBe(0);

    // KV lost the receiver record: a lookup answers from Bob's object, whose alarm then writes the
    // keys that lookup missed (here the receiver record only: the caller's bucket was still there),
    // even though their digests say KV had them; no other key.
    await env.TRUST_INDEX.delete(`rcv:${secure}`);
    const written = (
      await writesDuring(async () => {
        expect(await trusted(phone(13))).toBe(true);
        await runDurableObjectAlarm(bob);
      })
    ).filter((key) => !key.startsWith("num:")); // the caller's record, filled from D1 by the lookup
    expect(written).toEqual([`rcv:${secure}`]);
    expect(await env.TRUST_INDEX.get(`rcv:${secure}`)).toBe((await bob.indexValues())[`rcv:${secure}`]);

    // Both lost: both written again, and nothing else.
    await env.TRUST_INDEX.delete(`rcv:${secure}`);
    await env.TRUST_INDEX.delete(bucketKey(13));
    const both = (
      await writesDuring(async () => {
        expect(await trusted(phone(13))).toBe(true);
        await runDurableObjectAlarm(bob);
      })
    ).filter((key) => !key.startsWith("num:"));
    expect(both.sort()).toEqual([`rcv:${secure}`, bucketKey(13)].sort());
  });

  it("digests older than they count (a day) are pruned by the daily retention pass: a rebuild's bookkeeping goes within a day", async () => {
    const now = Date.now();
    const hour = 3600_000;
    await env.DB.prepare(
      "INSERT INTO index_written (key, digest, written_at) VALUES ('num:+15550009991', 'x', ?1), ('num:+15550009992', 'x', ?2)",
    )
      .bind(now - 25 * hour, now - 23 * hour)
      .run();
    const pass = await pruneExpired(createDeps(env), new Date(now));
    expect(pass.pruned.indexWritten).toBeGreaterThanOrEqual(1);
    const { results } = await env.DB.prepare(
      "SELECT key FROM index_written WHERE key IN ('num:+15550009991', 'num:+15550009992')",
    ).all<{ key: string }>();
    expect(results.map((row) => row.key)).toEqual(["num:+15550009992"]);
  });
});

describe("a contact write reads the address book once, whatever the buckets it touches", () => {
  /** Rows person `personId`'s object reads from its SQLite while `work` runs (every cursor's `rowsRead`). */
  async function rowsReadBy(personId: number, work: () => Promise<unknown>): Promise<number> {
    const { runInDurableObject } = await import("cloudflare:test");
    const cursors: SqlStorageCursor<Record<string, SqlStorageValue>>[] = [];
    const restore = await runInDurableObject(personObject(personId), (_, state) => {
      const proto = Object.getPrototypeOf(state.storage.sql) as SqlStorage;
      const exec = proto.exec;
      proto.exec = function (this: SqlStorage, ...args: Parameters<SqlStorage["exec"]>) {
        const cursor = exec.apply(this, args);
        cursors.push(cursor);
        return cursor;
      } as SqlStorage["exec"];
      return () => void (proto.exec = exec);
    });
    try {
      await work();
    } finally {
      await runInDurableObject(personObject(personId), () => restore());
    }
    return cursors.reduce((n, cursor) => n + cursor.rowsRead, 0);
  }

  it("100 new contacts in 100 buckets, into a book of 100,000 phones: a few passes over the book, not one per bucket", async () => {
    const { id } = (await env.DB.prepare(
      "INSERT INTO people (first_name, last_name, created_at, updated_at) VALUES ('Big', 'Book', 0, 0) RETURNING id",
    ).first<{ id: number }>())!;
    const token = `pk_test_bigbook_${crypto.randomUUID().replaceAll("-", "")}`;
    await insertToken(token, { personId: id });
    expect((await call("/apps/buzz/heartbeat", { token })).status).toBe(200); // a secure number: the object owns rcvn: keys
    const phone = (n: number) => `+1213${200 + Math.floor(n / 10_000)}${String(n % 10_000).padStart(4, "0")}`;
    const now = Date.now();
    for (let chunk = 0; chunk < 10; chunk++) {
      await personObject(id).importRows({
        contacts: Array.from({ length: 500 }, (_, i) => ({
          id: 5_000_000 + chunk * 500 + i,
          displayName: `Filler ${chunk * 500 + i}`,
          birthday: null,
          labels: [],
          emails: [],
          phones: Array.from({ length: 20 }, (_, j) => phone((chunk * 500 + i) * 20 + j)),
          addresses: [],
          createdAt: now,
          updatedAt: now,
        })),
      });
    }
    // One write first, so the keys the import marked are written and do not count below.
    expect((await call("/contacts/sync", { method: "POST", token, body: [{ display_name: "warm" }] })).status).toBe(
      200,
    );
    const body = Array.from({ length: 100 }, (_, i) => ({
      display_name: `New ${i}`,
      phone_numbers: [phone(900_000 + i * 7)],
    }));
    const read = await rowsReadBy(id, async () =>
      expect((await call("/contacts/sync", { method: "POST", token, body })).status).toBe(200),
    );
    // 100,000 phones: a bucket read each would be 100 passes (10 million rows).
    expect(read).toBeLessThan(1_000_000);
  });
});
