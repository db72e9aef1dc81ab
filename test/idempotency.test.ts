import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { as, countInPersonObject, countRows, expectError, fresh } from "./helpers";

/** Idempotency-Key on creating POSTs (docs/decisions.md, "Idempotency keys"). */
const withKey = (key: string) => ({ headers: { "Idempotency-Key": key } });
const contactsOf = (personId: number) => countInPersonObject(personId, "SELECT count(*) AS n FROM contacts");
const webhooks = () => countRows("SELECT count(*) AS n FROM webhooks WHERE company_id = 1");

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

describe("Idempotency-Key on a company's write (webhooks, kept in D1)", () => {
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
      await countRows("SELECT count(*) AS n FROM company_idempotency_keys WHERE company_id = 1 AND key = ?", key),
    ).toBe(1);
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
    const { pruneExpired } = await import("../src/services/retention");
    const { createDb } = await import("../src/db/client");
    const run = await pruneExpired(createDb(env.DB), new Date());
    expect(run.pruned.idempotencyKeys).toBeGreaterThanOrEqual(1);
    expect(await countRows("SELECT count(*) AS n FROM company_idempotency_keys WHERE key = 'old-key'")).toBe(0);
  });
});
