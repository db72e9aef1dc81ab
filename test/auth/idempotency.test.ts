import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { sha256Hex } from "../../src/lib/crypto";
import {
  as,
  call,
  countInPersonObject,
  countRows,
  employeeBody,
  expectError,
  fresh,
  inPersonObject,
  insertToken,
  personObject,
  spyOnD1,
} from "../helpers";

/** Idempotency-Key on creating POSTs (docs/decisions.md, "Idempotency keys"). */
const withKey = (key: string) => ({ headers: { "Idempotency-Key": key } });
const contactsOf = (personId: number) => countInPersonObject(personId, "SELECT count(*) AS n FROM contacts");
const webhooks = () => countRows("SELECT count(*) AS n FROM webhooks WHERE company_id = 1");

/** A new Admin of Acme with a token of their own (their day's keys are theirs to spend). */
async function newAcmeAdmin() {
  const created = await as("alice").send(
    "POST",
    "/companies/1/employees",
    employeeBody(fresh("keys-admin"), { license: null, roles: ["Admin"] }),
  );
  expect(created.status).toBe(200);
  const { id } = (await created.json()) as { id: number };
  const token = `pk_test_keys_admin_${id}_${crypto.randomUUID()}`;
  await insertToken(token, { personId: id });
  return { id, token };
}

describe("Idempotency-Key on a person's write (contacts sync, kept in the person's object)", () => {
  it("the same key and body answers the first answer again and writes nothing", async () => {
    const key = fresh("sync");
    const body = [{ display_name: "Retry Ray", phone_numbers: ["+1 415 555 0142"] }];
    const before = await contactsOf(3);
    const first = await as("carol").send("POST", "/contacts/sync", body, withKey(key));
    expect(first.status).toBe(200);
    expect(first.headers.get("Idempotent-Replayed")).toBeNull();
    const again = await as("carol").send("POST", "/contacts/sync", body, withKey(key));
    expect(again.status).toBe(200);
    expect(again.headers.get("Idempotent-Replayed")).toBe("true");
    expect(again.headers.get("Content-Type")).toMatch(/^application\/json/);
    expect(await again.json()).toEqual(await first.json());
    expect(await contactsOf(3)).toBe(before + 1);
    // Kept in the object, not in D1.
    expect(await countInPersonObject(3, "SELECT count(*) AS n FROM idempotency_keys WHERE key = ?", key)).toBe(1);
  });

  it("the same key with another body is 422 and writes nothing", async () => {
    const key = fresh("sync");
    await as("carol").send("POST", "/contacts/sync", [{ display_name: "Ida" }], withKey(key));
    const before = await contactsOf(3);
    const other = await as("carol").send("POST", "/contacts/sync", [{ display_name: "Other Ida" }], withKey(key));
    expect(await expectError(other, 422, "Unprocessable Content")).toMatch(/Idempotency-Key/);
    expect(await contactsOf(3)).toBe(before);
  });

  it("a concurrent pair with one key writes once: the other waits for nothing and gets 409 or the replay", async () => {
    const key = fresh("sync");
    const body = [{ display_name: "Twin Tom" }];
    const before = await contactsOf(3);
    const answers = await Promise.all([
      as("carol").send("POST", "/contacts/sync", body, withKey(key)),
      as("carol").send("POST", "/contacts/sync", body, withKey(key)),
    ]);
    const statuses = answers.map((r) => r.status).sort();
    expect(statuses[0]).toBe(200);
    expect([200, 409]).toContain(statuses[1]);
    expect(await contactsOf(3)).toBe(before + 1);
  });

  it("keys are the caller's own: another person's same key is a new request", async () => {
    const key = fresh("sync");
    const body = [{ display_name: "Shared Key" }];
    expect((await as("carol").send("POST", "/contacts/sync", body, withKey(key))).status).toBe(200);
    const bob = await as("bob").send("POST", "/contacts/sync", body, withKey(key));
    expect(bob.status).toBe(200);
    expect(bob.headers.get("Idempotent-Replayed")).toBeNull();
  });

  it("a refused request keeps nothing: the key is free for the corrected request", async () => {
    const key = fresh("sync");
    const bad = await as("carol").send(
      "POST",
      "/contacts/sync",
      [{ display_name: "", emails: ["nope"] }],
      withKey(key),
    );
    expect(bad.status).toBe(400);
    const good = await as("carol").send("POST", "/contacts/sync", [{ display_name: "Fixed" }], withKey(key));
    expect(good.status).toBe(200);
    expect(good.headers.get("Idempotent-Replayed")).toBeNull();
  });

  it("a key that is not 1–255 visible ASCII characters is 400", async () => {
    const response = await as("carol").send("POST", "/contacts/sync", [{ display_name: "X" }], withKey("has space"));
    expect(await expectError(response, 400, "Bad Request")).toMatch(/Idempotency-Key/);
  });

  it("a trust request and an activity honour it too", async () => {
    const key = fresh("req");
    const ask = { email: "nobody-here@example.com" };
    const first = await as("carol").send("POST", "/contacts/requests", ask, withKey(key));
    expect(first.status).toBe(201);
    const again = await as("carol").send("POST", "/contacts/requests", ask, withKey(key));
    expect(again.status).toBe(201);
    expect(again.headers.get("Idempotent-Replayed")).toBe("true");
  });
});

/* ---------- what keys cost a person (docs/security.md, "What a stranger can cost") ---------- */

let nextPerson = 700;

/** A new person with a token, outside every company: their object starts empty, their day unspent. */
async function newPerson() {
  const id = nextPerson++;
  await env.DB.prepare(
    "INSERT INTO people (id, first_name, last_name, created_at, updated_at) VALUES (?1, 'Key', 'Keeper', ?2, ?2)",
  )
    .bind(id, Date.now())
    .run();
  const token = `pk_test_idem_person_${id}`;
  await insertToken(token, { personId: id });
  await personObject(id).lastActivityId(); // the object exists, its tables migrated
  return { id, token };
}

const today = () => Math.floor(Date.now() / 86_400_000);
const databaseSize = (personId: number) =>
  runInDurableObject(personObject(personId), (_, state) => state.storage.sql.databaseSize);
const spentToday = async (personId: number) =>
  (
    await inPersonObject<{ bytes: number }>(
      personId,
      "SELECT coalesce(sum(text_bytes), 0) AS bytes FROM activity_days WHERE day = ?",
      today(),
    )
  )[0]!.bytes;

const chatBody = (from: number, to: number, message: string, messageId: string) => ({
  type: "chat_message",
  sendable_type: "person",
  sendable_id: from,
  receivable_type: "person",
  receivable_id: to,
  message,
  message_id: messageId,
});

const post = (token: string, path: string, body: unknown, key?: string) =>
  call(path, { method: "POST", token, body, headers: key ? { "Idempotency-Key": key } : {} });

describe("what Idempotency-Keys cost the person who sends them", () => {
  it("160 retries of one 64 KiB chat under new keys keep references, not 160 copies (the audit's reproduction)", async () => {
    const sender = await newPerson();
    const receiver = await newPerson();
    const chat = chatBody(sender.id, receiver.id, "A".repeat(65_536), crypto.randomUUID());
    const first = await post(sender.token, "/apps/buzz/activity", chat, fresh("chat"));
    expect(first.status).toBe(200);
    const answer = await first.text();
    const before = await databaseSize(sender.id);
    for (let i = 0; i < 160; i++) {
      const retry = await post(sender.token, "/apps/buzz/activity", chat, fresh("chat"));
      expect(retry.status).toBe(200);
      expect(await retry.text()).toBe(answer);
    }
    // The audit measured 12.1 MiB here: each key kept its own copy of the 64 KiB answer.
    expect((await databaseSize(sender.id)) - before).toBeLessThan(256 * 1024);
    expect(
      await countInPersonObject(
        sender.id,
        "SELECT count(*) AS n FROM idempotency_keys WHERE body IS NULL AND activity_id IS NOT NULL",
      ),
    ).toBe(161);
    // Charged: the message once, and each key's own row (key and fingerprint), not the message again.
    const charged = await spentToday(sender.id);
    expect(charged).toBeGreaterThan(65_536);
    expect(charged).toBeLessThan(65_536 + 161 * 200);
  });

  it("a retried chat with the same key replays its first answer (kept by reference) and writes nothing", async () => {
    const sender = await newPerson();
    const receiver = await newPerson();
    const key = fresh("chat");
    const chat = chatBody(sender.id, receiver.id, "aGk=", crypto.randomUUID());
    const first = await post(sender.token, "/apps/buzz/activity", chat, key);
    expect(first.status).toBe(200);
    const again = await post(sender.token, "/apps/buzz/activity", chat, key);
    expect(again.status).toBe(200);
    expect(again.headers.get("Idempotent-Replayed")).toBe("true");
    expect(again.headers.get("Content-Type")).toMatch(/^application\/json/);
    expect(await again.text()).toBe(await first.text());
    expect(await countInPersonObject(sender.id, "SELECT count(*) AS n FROM feed")).toBe(1);
    const [kept] = await inPersonObject<{ body: string | null; activity_id: number | null }>(
      sender.id,
      "SELECT body, activity_id FROM idempotency_keys WHERE key = ?",
      key,
    );
    expect(kept).toEqual({ body: null, activity_id: expect.any(Number) });
  });

  it("kept answers are charged to the day's 10 MiB: past it a new key is 429, a replay still answers", async () => {
    const person = await newPerson();
    // The day's bytes all but spent (as by 10 MiB of chats and kept answers).
    await inPersonObject(
      person.id,
      "INSERT INTO activity_days (day, records, text_bytes) VALUES (?, 0, ?)",
      today(),
      10 * 1024 * 1024 - 300,
    );
    const key = fresh("sync");
    const sync = [{ display_name: "Charged Charlie", phone_numbers: ["+1 415 555 0199"] }];
    const first = await post(person.token, "/contacts/sync", sync, key);
    expect(first.status).toBe(200);
    // Its kept answer (its key, fingerprint and body) went on the day's bytes, past the budget.
    expect(await spentToday(person.id)).toBeGreaterThan(10 * 1024 * 1024);
    const next = await post(person.token, "/contacts/sync", [{ display_name: "Next" }], fresh("sync"));
    expect(await expectError(next, 429, "Too Many Requests")).toMatch(/Idempotency-Key.*10 MiB/);
    expect(Number(next.headers.get("Retry-After"))).toBeGreaterThan(0);
    const replay = await post(person.token, "/contacts/sync", sync, key);
    expect(replay.status).toBe(200);
    expect(replay.headers.get("Idempotent-Replayed")).toBe("true");
  });

  it("at most 1,000 keys a day per person: the 1,001st is 429 with Retry-After; without a key the write goes", async () => {
    const person = await newPerson();
    await inPersonObject(person.id, "INSERT INTO idempotency_days (day, keys) VALUES (?, 999)", today());
    const key = fresh("sync");
    const last = await post(person.token, "/contacts/sync", [{ display_name: "Thousandth" }], key);
    expect(last.status).toBe(200);
    const over = await post(person.token, "/contacts/sync", [{ display_name: "Over" }], fresh("sync"));
    expect(await expectError(over, 429, "Too Many Requests")).toMatch(/at most 1,000 `Idempotency-Key`s per day/);
    expect(Number(over.headers.get("Retry-After"))).toBeGreaterThan(0);
    expect(await countInPersonObject(person.id, "SELECT count(*) AS n FROM contacts")).toBe(1);
    // A replay is no new key; a request without one is not counted.
    const replay = await post(person.token, "/contacts/sync", [{ display_name: "Thousandth" }], key);
    expect(replay.headers.get("Idempotent-Replayed")).toBe("true");
    expect((await post(person.token, "/contacts/sync", [{ display_name: "Unkeyed" }])).status).toBe(200);
  });
});

describe("Idempotency-Key on a company's write (webhooks, kept in the caller's object under the company's name)", () => {
  const body = () => ({ endpoint: `https://hooks.example.com/${fresh("idem")}`, event: "person:created" });

  it("the same key and body answers the first webhook again and creates one", async () => {
    const key = fresh("hook");
    const request = body();
    const before = await webhooks();
    const first = await as("alice").send("POST", "/companies/1/webhooks", request, withKey(key));
    expect(first.status).toBe(201);
    const again = await as("alice").send("POST", "/companies/1/webhooks", request, withKey(key));
    expect(again.status).toBe(201);
    expect(again.headers.get("Idempotent-Replayed")).toBe("true");
    expect(await again.json()).toEqual(await first.json());
    expect(await webhooks()).toBe(before + 1);
    expect(
      await countInPersonObject(1, "SELECT count(*) AS n FROM idempotency_keys WHERE key = ?", `company 1: ${key}`),
    ).toBe(1);
    expect(await countRows("SELECT count(*) AS n FROM company_idempotency_keys WHERE key = ?", key)).toBe(0);
  });

  it("a company's keys cost the caller's day like any key: past 1,000 today a purchase under a new key is 429 and buys nothing", async () => {
    const admin = await newAcmeAdmin();
    const today = Math.floor(Date.now() / 86_400_000);
    await inPersonObject(admin.id, "INSERT OR REPLACE INTO idempotency_days (day, keys) VALUES (?, 1000)", today);
    const seats = () =>
      countRows("SELECT quantity AS n FROM company_seats WHERE company_id = 1 AND license_id = 'scan'");
    const before = await seats();
    const over = await call("/licenses", {
      method: "POST",
      token: admin.token,
      body: [{ id: "scan", quantity: 1 }],
      ...withKey(fresh("buy")),
    });
    await expectError(over, 429, "Too Many Requests");
    expect(Number(over.headers.get("Retry-After"))).toBeGreaterThan(0);
    expect(await seats()).toBe(before);
    // Without a key the purchase goes.
    expect(
      (await call("/licenses", { method: "POST", token: admin.token, body: [{ id: "scan", quantity: 1 }] })).status,
    ).toBe(201);
    expect(await seats()).toBe(before + 1);
  });

  it("a key claimed in D1 before answers its replay without spending the caller's day, even once it is spent", async () => {
    const admin = await newAcmeAdmin();
    const key = fresh("legacy-spent");
    const request = body();
    const fingerprint = await sha256Hex(`POST /companies/1/webhooks\n${JSON.stringify(request)}`);
    await env.DB.prepare(
      "INSERT INTO company_idempotency_keys (company_id, person_id, key, fingerprint, claimed_at, status, body, content_type) VALUES (1, ?, ?, ?, ?, 201, '{\"id\":434343}', 'application/json')",
    )
      .bind(admin.id, key, fingerprint, Date.now() - 3600_000)
      .run();
    const today = Math.floor(Date.now() / 86_400_000);
    await inPersonObject(admin.id, "INSERT OR REPLACE INTO idempotency_days (day, keys) VALUES (?, 1000)", today);
    const replay = await call("/companies/1/webhooks", {
      method: "POST",
      token: admin.token,
      body: request,
      ...withKey(key),
    });
    expect(replay.status).toBe(201);
    expect(replay.headers.get("Idempotent-Replayed")).toBe("true");
  });

  it("a key claimed in D1 by the version before still answers its replay and its 422 for 24 h", async () => {
    const key = fresh("legacy");
    const request = body();
    const fingerprint = await sha256Hex(`POST /companies/1/webhooks\n${JSON.stringify(request)}`);
    await env.DB.prepare(
      "INSERT INTO company_idempotency_keys (company_id, person_id, key, fingerprint, claimed_at, status, body, content_type) VALUES (1, 1, ?, ?, ?, 201, '{\"id\":424242}', 'application/json')",
    )
      .bind(key, fingerprint, Date.now() - 3600_000)
      .run();
    const before = await webhooks();
    const replay = await as("alice").send("POST", "/companies/1/webhooks", request, withKey(key));
    expect(replay.status).toBe(201);
    expect(replay.headers.get("Idempotent-Replayed")).toBe("true");
    expect(await replay.json()).toEqual({ id: 424242 });
    await expectError(
      await as("alice").send("POST", "/companies/1/webhooks", body(), withKey(key)),
      422,
      "Unprocessable Content",
    );
    expect(await webhooks()).toBe(before);
  });

  it("the same key with another body is 422 and creates nothing", async () => {
    const key = fresh("hook");
    expect((await as("alice").send("POST", "/companies/1/webhooks", body(), withKey(key))).status).toBe(201);
    const before = await webhooks();
    const other = await as("alice").send("POST", "/companies/1/webhooks", body(), withKey(key));
    await expectError(other, 422, "Unprocessable Content");
    expect(await webhooks()).toBe(before);
  });

  it("a concurrent pair with one key creates one webhook", async () => {
    const key = fresh("hook");
    const request = body();
    const before = await webhooks();
    const answers = await Promise.all([
      as("alice").send("POST", "/companies/1/webhooks", request, withKey(key)),
      as("alice").send("POST", "/companies/1/webhooks", request, withKey(key)),
    ]);
    const statuses = answers.map((r) => r.status).sort();
    expect(statuses[0]).toBe(201);
    expect([201, 409]).toContain(statuses[1]);
    expect(await webhooks()).toBe(before + 1);
  });

  it("keys older than 24 h are pruned by the daily retention", async () => {
    await env.DB.prepare(
      "INSERT INTO company_idempotency_keys (company_id, person_id, key, fingerprint, claimed_at, status, body) VALUES (1, 1, 'old-key', 'f', ?, 201, '{}')",
    )
      .bind(Date.now() - 25 * 3600 * 1000)
      .run();
    const { pruneExpired } = await import("../../src/services/retention");
    const { createDeps } = await import("../../src/services/create-deps");
    const run = await pruneExpired(createDeps(env), new Date());
    expect(run.pruned.idempotencyKeys).toBeGreaterThanOrEqual(1);
    expect(await countRows("SELECT count(*) AS n FROM company_idempotency_keys WHERE key = 'old-key'")).toBe(0);
  });
});

describe("a request that wrote keeps its key, even when its answer could not be kept", () => {
  afterEach(() => vi.restoreAllMocks());
  const seats = () =>
    countRows("SELECT quantity AS n FROM company_seats WHERE company_id = 1 AND license_id = 'protect'");

  it("a license purchase answered 500 after its seats were bought: the retry is a 409 and buys nothing", async () => {
    const before = await seats();
    let bought = false;
    let failed = false;
    spyOnD1((sql) => {
      if (sql.some((q) => /insert into "company_seats"/.test(q))) bought = true;
      else if (bought && !failed && sql.some((q) => /^select .* from "company_seats"/.test(q))) {
        failed = true;
        return Promise.reject(new Error("D1_ERROR: Network connection lost."));
      }
    });
    const key = fresh("purchase");
    const body = [{ id: "protect", quantity: 1 }];
    expect((await as("alice").send("POST", "/companies/1/licenses", body, withKey(key))).status).toBe(500);
    vi.restoreAllMocks();
    expect(await seats()).toBe(before + 1);
    const retry = await as("alice").send("POST", "/companies/1/licenses", body, withKey(key));
    expect(retry.headers.get("Idempotent-Replayed")).toBe("true");
    expect(await expectError(retry, 409, "Conflict")).toContain("failed after it had written");
    expect(await seats()).toBe(before + 1);
  });

  it("a sync answered 500 after its contacts were written: the retry is a 409 and writes nothing", async () => {
    const before = await contactsOf(3);
    // Before the index holds contacts (no `idx:contacts` mark) a sync's answer links through D1: that read fails once.
    const mark = await env.TRUST_INDEX.get("idx:contacts");
    await env.TRUST_INDEX.delete("idx:contacts");
    try {
      let failed = false;
      spyOnD1((sql) => {
        if (failed || !sql.some((q) => q.includes("person_phones pp"))) return;
        failed = true;
        return Promise.reject(new Error("D1_ERROR: Network connection lost."));
      });
      const body = [{ display_name: "Once Only", phone_numbers: ["+1 415 555 0177"] }];
      const key = fresh("sync-500");
      expect((await as("carol").send("POST", "/contacts/sync", body, withKey(key))).status).toBe(500);
      vi.restoreAllMocks();
      const retry = await as("carol").send("POST", "/contacts/sync", body, withKey(key));
      expect(retry.headers.get("Idempotent-Replayed")).toBe("true");
      await expectError(retry, 409, "Conflict");
      expect(await contactsOf(3)).toBe(before + 1);
    } finally {
      if (mark !== null) await env.TRUST_INDEX.put("idx:contacts", mark);
    }
  });

  it("a refusal whose statement ran and changed nothing (the 50-webhook cap) frees the key all the same", async () => {
    const { n } = (await env.DB.prepare("SELECT count(*) AS n FROM webhooks WHERE company_id = 2").first<{
      n: number;
    }>())!;
    const fill = Array.from({ length: 50 - n }, (_, i) =>
      env.DB.prepare(
        "INSERT INTO webhooks (company_id, endpoint, event, active, secret, created_at, updated_at) VALUES (2, ?, 'scan:found', 1, 'whsec_AAAA', 0, 0)",
      ).bind(`https://hooks.example/fill/${i}`),
    );
    if (fill.length > 0) await env.DB.batch(fill);
    const key = fresh("cap");
    const body = { endpoint: "https://hooks.example/after-the-cap", event: "scan:found" };
    const refused = await as("carol").send("POST", "/companies/2/webhooks", body, withKey(key));
    expect(await expectError(refused, 400, "Bad Request")).toContain("50");
    await env.DB.prepare(
      "DELETE FROM webhooks WHERE company_id = 2 AND endpoint LIKE 'https://hooks.example/fill/%'",
    ).run();
    const retry = await as("carol").send("POST", "/companies/2/webhooks", body, withKey(key));
    expect(retry.headers.get("Idempotent-Replayed")).toBeNull();
    expect(retry.status).toBe(201);
  });

  it("a sync whose answer was over 1 MiB: the retry is a 409 saying so, and writes nothing", async () => {
    const before = await contactsOf(2);
    // 500 contacts with ten ~195-character addresses: a body under the 1 MiB limit, its answer over 1 MiB.
    const body = Array.from({ length: 500 }, (_, i) => ({
      display_name: `Big ${i}`,
      addresses: Array.from({ length: 10 }, (_, j) => `${j} ${"Long Street Name ".repeat(12)} ${i}`.slice(0, 195)),
    }));
    const key = fresh("sync-large");
    const first = await as("bob").send("POST", "/contacts/sync", body, withKey(key));
    expect(first.status).toBe(200);
    expect((await first.text()).length).toBeGreaterThan(1024 * 1024);
    const retry = await as("bob").send("POST", "/contacts/sync", body, withKey(key));
    expect(retry.headers.get("Idempotent-Replayed")).toBe("true");
    expect(await expectError(retry, 409, "Conflict")).toContain("over 1 MiB");
    expect(await contactsOf(2)).toBe(before + 500);
    expect((await as("bob").send("DELETE", "/contacts/clear")).status).toBeLessThan(300);
  });
});
