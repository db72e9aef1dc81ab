import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { heartbeat } from "../../src/routes/buzz/buzz.routes";
import { createEmployee } from "../../src/routes/employees/employees.routes";
import { answer, as, call, insertToken } from "../helpers";

const address = { line_1: "1 Main St", city: "San Francisco", region: "CA", postal_code: "94105", country: "US" };

/** An Acme employee whose only email is the employer's, with a token; returns id and token. */
async function employee(tag: string) {
  const response = await as("alice").send("POST", "/companies/1/employees", {
    first_name: "Pool",
    last_name: tag,
    dob: "1990-01-01",
    emails: [{ email: `${tag}.${crypto.randomUUID().slice(0, 8)}@acme.example` }],
    addresses: [address],
    license: null,
  });
  const { id } = await answer(response, 200, createEmployee);
  const token = `pk_test_pool_${id}_${crypto.randomUUID().slice(0, 8)}`;
  await insertToken(token, { personId: id });
  return { id, token };
}

async function secureNumber(token: string): Promise<string | null> {
  const body = await answer(await call("/apps/buzz/heartbeat", { token }), 200, heartbeat);
  return body.secure_number?.e164 ?? null;
}

describe("secure numbers of removed accounts", () => {
  it("are not handed to the next new user: a released number rests in quarantine", async () => {
    // Make sure the pool has numbers beyond what other tests take.
    await env.DB.prepare(
      "INSERT OR IGNORE INTO secure_numbers (e164, country_code, number, created_at) VALUES ('+12025550150', '1', '2025550150', 0), ('+12025550151', '1', '2025550151', 0)",
    ).run();

    const first = await employee("first");
    const released = await secureNumber(first.token);
    expect(released).not.toBeNull();
    expect((await as("alice").send("DELETE", `/companies/1/employees/${first.id}`)).status).toBe(204);

    const row = await env.DB.prepare("SELECT person_id, released_at FROM secure_numbers WHERE e164 = ?")
      .bind(released)
      .first<{ person_id: number | null; released_at: number | null }>();
    expect(row?.person_id).toBeNull();
    expect(row?.released_at).toBeGreaterThan(Date.now() - 60_000);

    const next = await employee("next");
    const assigned = await secureNumber(next.token);
    expect(assigned).not.toBeNull();
    expect(assigned).not.toBe(released);
  });

  it("a number whose quarantine has passed is assigned again", async () => {
    const longAgo = Date.now() - 91 * 24 * 3600 * 1000;
    await env.DB.prepare(
      "INSERT OR IGNORE INTO secure_numbers (id, e164, country_code, number, released_at, created_at) VALUES (0, '+12025550160', '1', '2025550160', ?, 0)",
    )
      .bind(longAgo)
      .run();
    const someone = await employee("later");
    expect(await secureNumber(someone.token)).toBe("+12025550160");
  });
});
