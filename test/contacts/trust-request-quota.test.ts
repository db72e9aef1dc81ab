import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { MAX_TRUST_REQUESTS_PER_DAY } from "../../src/services/trust-requests";
import { call, DEMO, expectError, inPersonObject, insertToken } from "../helpers";

/** At most 100 trust requests sent per person per UTC day, matched or not (docs/decisions.md). */

const day = 24 * 3600_000;
const ask = (token: string, body: unknown) => call("/contacts/requests", { method: "POST", token, body });

/** A fresh person with a token of their own, so the day's count starts at 0. */
async function newAsker(id: number) {
  const now = Date.now();
  await env.DB.prepare(
    "INSERT INTO people (id, first_name, last_name, created_at, updated_at) VALUES (?1, 'Quota', 'Asker', ?2, ?2)",
  )
    .bind(id, now)
    .run();
  const token = `pk_quota_${id}_${crypto.randomUUID()}`;
  await insertToken(token, { personId: id });
  return token;
}

describe("trust requests: 100 per person per day", () => {
  let token: string;
  beforeAll(async () => {
    token = await newAsker(700);
  });

  it("counts every request, matched or not, and answers 429 with Retry-After naming the limit past 100", async () => {
    for (let i = 0; i < MAX_TRUST_REQUESTS_PER_DAY; i++) {
      // Alternately a real person, a number nobody holds and an unknown email: all count.
      const target =
        i % 3 === 0
          ? { user_id: DEMO.people.alice }
          : i % 3 === 1
            ? { phone: `+1 415 555 ${String(1000 + i)}` }
            : { email: `nobody${i}@nowhere.example` };
      const response = await ask(token, { ...target, contact_reason: `try ${i}` });
      expect(response.status, `request ${i + 1}`).toBe(201);
    }

    const refused = await ask(token, { email: "nobody@nowhere.example" });
    const message = await expectError(refused, 429, "Too Many Requests");
    expect(message).toContain("at most 100 trust requests per day");
    const retryAfter = Number(refused.headers.get("Retry-After"));
    const toMidnight = Math.ceil((day - (Date.now() % day)) / 1000);
    expect(retryAfter).toBeGreaterThan(0);
    expect(Math.abs(retryAfter - toMidnight)).toBeLessThanOrEqual(2);

    // The refused request was not recorded: Alice holds the one pending request, with the last reason before the limit.
    const pending = await inPersonObject(
      DEMO.people.alice,
      "SELECT contact_reason FROM trust_requests WHERE requester_id = 700 AND status = 'pending'",
    );
    expect(pending).toEqual([{ contact_reason: "try 99" }]);
  });

  it("the count is per person: another person still asks", async () => {
    const other = await newAsker(701);
    expect((await ask(other, { user_id: DEMO.people.bob })).status).toBe(201);
  });

  it("a new UTC day starts a new count", async () => {
    // Move the day's count to yesterday, as the clock passing midnight would.
    await inPersonObject(700, "UPDATE trust_request_days SET day = day - 1");
    expect((await ask(token, { user_id: DEMO.people.alice })).status).toBe(201);
  });

  it("concurrent requests never pass the limit", async () => {
    const racer = await newAsker(702);
    const today = Math.floor(Date.now() / day);
    await inPersonObject(702, "INSERT INTO trust_request_days (day, sent) VALUES (?, 90)", today);
    const statuses = await Promise.all(
      Array.from({ length: 20 }, (_, i) => ask(racer, { email: `race${i}@nowhere.example` }).then((r) => r.status)),
    );
    expect(statuses.filter((s) => s === 201)).toHaveLength(10);
    expect(statuses.filter((s) => s === 429)).toHaveLength(10);
  });
});
