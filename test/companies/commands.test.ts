import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  as,
  countInPersonObject,
  countRows,
  DEMO,
  employeeBody,
  fresh,
  indexKeysWritten,
  personObject,
  secureNumberOf as secureNumberOfHelper,
  answer,
} from "../helpers";
import { trustLookupGet } from "../../src/routes/buzz/buzz.routes";
import { createEmployee } from "../../src/routes/employees/employees.routes";
import { KEY_WRITE_GAP_MS } from "../../src/db/kv-writes";
import { consume, deliver, newWebhook, receiver } from "../webhook-receiver";

/**
 * Writes are commands (docs/architecture.md): the change, its events
 * (webhook history rows) and its trust-index work are one D1 batch. (A
 * person's own `rcv:`/`rcvn:` keys are their object's: it writes them after
 * its own change and its alarm retries a refused write.)
 */

afterEach(() => {
  vi.restoreAllMocks();
});

/** Makes every D1 statement matching `sql` fail, on the `env.DB` the Worker uses too. */
function failStatements(sql: RegExp) {
  const failing = (database: D1Database | D1DatabaseSession) => {
    const prepare = database.prepare.bind(database);
    return (query: string) => {
      if (sql.test(query)) throw new Error("D1_ERROR: simulated failure");
      return prepare(query);
    };
  };
  vi.spyOn(env.DB, "prepare").mockImplementation(failing(env.DB));
  // A write request runs in a D1 session of the binding (src/middleware/db.ts): it fails the same way.
  const withSession = env.DB.withSession.bind(env.DB);
  vi.spyOn(env.DB, "withSession").mockImplementation((constraint) => {
    const session = withSession(constraint);
    return Object.assign(session, { prepare: failing(session) });
  });
}

async function lookup(fields: Record<string, string>) {
  const response = await as("telephony").get(`/apps/buzz/trust-lookup?${new URLSearchParams(fields)}`);
  return answer(response, 200, trustLookupGet);
}

const secureNumberOf = async (who: "alice" | "bob") => (await secureNumberOfHelper(who)).receiving;

describe("events are written by the write that causes them", () => {
  it("ten concurrent DELETEs of one employee: one 204, nine 404, one person:removed row, one POST", async () => {
    const webhook = await newWebhook({ event: "person:removed" });
    const created = await as("alice").send("POST", "/companies/1/employees", employeeBody(fresh("gone")));
    const { id } = await answer(created, 200, createEmployee);

    const statuses = await Promise.all(
      Array.from({ length: 10 }, () => as("alice").send("DELETE", `/companies/1/employees/${id}`)),
    ).then((responses) => responses.map((response) => response.status).sort());
    expect(statuses).toEqual([204, 404, 404, 404, 404, 404, 404, 404, 404, 404]);

    const rows = await env.DB.prepare(
      "SELECT id FROM webhook_deliveries WHERE webhook_id = ? AND json_extract(payload, '$.id') = ?",
    )
      .bind(webhook.id, id)
      .all<{ id: string }>();
    expect(rows.results).toHaveLength(1);
    const calls = receiver(() => new Response("ok"));
    await deliver(rows.results[0]!.id);
    await deliver(rows.results[0]!.id); // a duplicate message changes nothing
    expect(calls).toHaveLength(1);
    expect(JSON.parse(calls[0]!.body)).toMatchObject({ type: "person:removed", data: { id } });
  });

  it("a D1 failure writing the delivery rows fails the whole command: no employee without its event", async () => {
    await newWebhook({ event: "person:created" });
    const email = `${fresh("lost")}@acme.example`;
    failStatements(/insert into "?webhook_deliveries/i);
    const response = await as("alice").send("POST", "/companies/1/employees", employeeBody(email.split("@")[0]!));
    expect(response.status).toBe(500);
    vi.restoreAllMocks();
    expect(await countRows("SELECT count(*) AS n FROM person_emails WHERE email = ?", email)).toBe(0);
  });

  it("person:created carries the Person the response shows", async () => {
    const webhook = await newWebhook({ event: "person:created" });
    const response = await as("alice").send("POST", "/companies/1/employees", employeeBody(fresh("shown")));
    const person = await response.json();
    const row = await env.DB.prepare("SELECT payload, rendered FROM webhook_deliveries WHERE webhook_id = ?")
      .bind(webhook.id)
      .first<{ payload: string; rendered: number }>();
    expect(row!.rendered).toBe(1);
    expect(JSON.parse(row!.payload)).toEqual(person);
  });

  it("a person:updated row whose Person was not rendered after the commit is rendered by its delivery", async () => {
    const webhook = await newWebhook({ event: "person:updated" });
    const created = await as("alice").send("POST", "/companies/1/employees", employeeBody(fresh("later")));
    const { id } = await answer(created, 200, createEmployee);
    failStatements(/update "webhook_deliveries" set "?payload"?/i);
    const updated = await as("alice").send("PUT", `/companies/1/employees/${id}`, { first_name: "Fox" });
    expect(updated.status).toBe(200);
    vi.restoreAllMocks();
    const row = await env.DB.prepare("SELECT id, rendered FROM webhook_deliveries WHERE webhook_id = ?")
      .bind(webhook.id)
      .first<{ id: string; rendered: number }>();
    expect(row!.rendered).toBe(0);
    const calls = receiver(() => new Response("ok"));
    await deliver(row!.id);
    expect(JSON.parse(calls[0]!.body).data).toEqual(await updated.json());
  });

  it("a scan message redelivered after its events failed to be written is applied once, with its events once", async () => {
    const webhook = await newWebhook({ event: "scan:started" });
    const scanId = fresh("scan");
    const body = [{ type: "started", scan_id: scanId, person_id: DEMO.people.bob, at: new Date().toISOString() }];
    failStatements(/insert into "?webhook_deliveries/i);
    const failed = await consume("scan-events", body);
    expect(failed.retryMessages).toHaveLength(1);
    vi.restoreAllMocks();
    expect(await countRows("SELECT count(*) AS n FROM scans WHERE id = ?", scanId)).toBe(0);

    await consume("scan-events", body, 2);
    await consume("scan-events", body, 3);
    expect(
      await countRows(
        "SELECT count(*) AS n FROM webhook_deliveries WHERE webhook_id = ? AND json_extract(payload, '$.scan_id') = ?",
        webhook.id,
        scanId,
      ),
    ).toBe(1);
  });
});

describe("trust-index work is retried until KV takes it, newest last", () => {
  it("a KV put refused twice is retried (the person's object's alarm) and the lookup answers the new way", async () => {
    const receiving = await secureNumberOf("alice");
    const key = `rcv:+${receiving.number_code}${receiving.number}`;
    const caller = { inbound_code: "44", inbound: "7911123457" };
    expect((await lookup({ ...receiving, ...caller })).trusted).toBe(false);
    const object = personObject(DEMO.people.alice);
    const stillDue = () =>
      countInPersonObject(DEMO.people.alice, "SELECT count(*) AS n FROM index_keys WHERE key = ? AND due = 1", key);

    // The sync's write must be its key's first within a second (else it waits for that second: src/db/kv-writes.ts).
    await scheduler.wait(KEY_WRITE_GAP_MS);
    let refused = 0;
    const put = env.TRUST_INDEX.put.bind(env.TRUST_INDEX);
    const spy = vi.spyOn(env.TRUST_INDEX, "put").mockImplementation(async (name, value, options) => {
      if (name === key && refused < 2) {
        refused++;
        throw new Error("KV PUT failed: 429 Too Many Requests");
      }
      return put(name, value, options);
    });
    const sync = await as("alice").send("POST", "/contacts/sync", [
      { display_name: "Kay", phone_numbers: ["+44 7911 123457"] },
    ]);
    expect(sync.status).toBe(200);
    expect(refused).toBe(1);
    expect(await stillDue()).toBe(1);
    // The refused write keeps the object's alarm close (a backoff of at most a minute).
    const alarm = await runInDurableObject(object, (_, state) => state.storage.getAlarm());
    expect(alarm).not.toBeNull();
    expect(alarm!).toBeLessThanOrEqual(Date.now() + 60_000);
    // The object's alarm, run until the key is written (each run retries it once).
    for (let i = 1; i <= 5 && (await stillDue()) > 0; i++) {
      await runInDurableObject(object, (_, state) => state.storage.setAlarm(Date.now()));
      await runDurableObjectAlarm(object);
    }
    expect(refused).toBe(2);
    expect(spy.mock.calls.filter(([name]) => name === key).length).toBeGreaterThanOrEqual(3);
    expect(await stillDue()).toBe(0);
    expect(await env.TRUST_INDEX.get(key)).toBe((await object.indexValues())[key]);
    expect(await lookup({ ...receiving, ...caller })).toEqual({
      trusted: true,
      user_id: DEMO.people.alice,
      caller_verification: null,
    });
  });

  it("two quick writes to one key end with the newer value even when the older put is slow", async () => {
    const receiving = await secureNumberOf("bob");
    const key = `rcv:+${receiving.number_code}${receiving.number}`;
    const put = env.TRUST_INDEX.put.bind(env.TRUST_INDEX);
    let slowed = false;
    vi.spyOn(env.TRUST_INDEX, "put").mockImplementation(async (name, value, options) => {
      if (name === key && !slowed) {
        slowed = true;
        await scheduler.wait(150);
      }
      return put(name, value, options);
    });
    const [first, second] = ["+1 202 555 1004", "+44 7911 123458"]; // buckets 04 and 58
    await Promise.all([
      as("bob").send("POST", "/contacts/sync", [{ display_name: "First", phone_numbers: [first] }]),
      scheduler
        .wait(20)
        .then(() => as("bob").send("POST", "/contacts/sync", [{ display_name: "Second", phone_numbers: [second] }])),
    ]);
    // The second sync's keys, changed within a second of the first's writes, are written once it has passed.
    await indexKeysWritten(DEMO.people.bob);
    // The receiver record lists the second phone's bucket (58) and the bucket holds the phone.
    const record = await env.TRUST_INDEX.get<{ nb: number[] }>(key, "json");
    expect(record!.nb).toContain(58);
    expect(await env.TRUST_INDEX.get(`rcvn:+${receiving.number_code}${receiving.number}:58`)).toContain(
      ",+447911123458,",
    );
    expect(await lookup({ ...receiving, inbound_code: "44", inbound: "7911123458" })).toMatchObject({ trusted: true });
  });
});
