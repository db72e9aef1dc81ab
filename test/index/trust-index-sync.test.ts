import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { heartbeat, trustLookupGet } from "../../src/routes/buzz/buzz.routes";
import { createEmployee } from "../../src/routes/employees/employees.routes";
import { answer, as, call, DEMO, indexKeysWritten, insertToken } from "../helpers";

/**
 * The trust index (KV) must follow employee changes made through the
 * employees API, not only contact and trust changes: a removed employee must
 * stop being reachable with the company's trust, even on a warm index.
 */
const address = { line_1: "1 Main St", city: "San Francisco", region: "CA", postal_code: "94105", country: "US" };
let seq = 0;

/** Creates an Acme employee with a token of their own and a secure number; returns their id and lookup fields. */
async function employeeWithSecureNumber(tag: string) {
  const email = `${tag}.${Date.now().toString(36)}.${++seq}@acme.example`;
  const created = await as("alice").send("POST", "/companies/1/employees", {
    first_name: "Dana",
    last_name: tag,
    dob: "1991-05-05",
    emails: [{ email, primary: true }],
    addresses: [address],
    license: null,
  });
  const { id } = await answer(created, 200, createEmployee);
  const token = `pk_test_${tag}_${seq}_${Date.now().toString(36)}`;
  await insertToken(token, { personId: id });
  const { secure_number } = await answer(await call("/apps/buzz/heartbeat", { token }), 200, heartbeat);
  return { id, number_code: secure_number!.country_code, number: secure_number!.number };
}

async function lookup(fields: Record<string, string>) {
  const response = await call(`/apps/buzz/trust-lookup?${new URLSearchParams(fields)}`, {
    token: DEMO.tokens.telephony,
  });
  return answer(response, 200, trustLookupGet);
}

const fromAcme = { inbound_code: "1", inbound: DEMO.acmePhone.slice(2) };

describe("trust index follows employee changes", () => {
  it("a new employee trusts the company's phone at once", async () => {
    const dana = await employeeWithSecureNumber("new");
    expect(await lookup({ number_code: dana.number_code, number: dana.number, ...fromAcme })).toEqual({
      trusted: true,
      user_id: dana.id,
      caller_verification: null,
    });
  });

  it("a removed employee whose account is deleted is no longer a member at all", async () => {
    const dana = await employeeWithSecureNumber("gone");
    const fields = { number_code: dana.number_code, number: dana.number, ...fromAcme };
    expect(await lookup(fields)).toEqual({ trusted: true, user_id: dana.id, caller_verification: null }); // warms KV

    expect((await as("alice").send("DELETE", `/companies/1/employees/${dana.id}`)).status).toBe(204);
    // Dana's receiver record was written less than a second ago (her secure number): rewritten once it has passed.
    await indexKeysWritten(dana.id);
    expect(await lookup(fields)).toEqual({ trusted: false, user_id: 0, caller_verification: null });
  });

  it("a removed employee who keeps their account no longer trusts the company's phone", async () => {
    const dana = await employeeWithSecureNumber("kept");
    await env.DB.prepare(
      'INSERT INTO person_emails (person_id, email, "primary", employer_company_id) VALUES (?, ?, 0, NULL)',
    )
      .bind(dana.id, `own.${dana.id}@home.example`)
      .run();
    const fields = { number_code: dana.number_code, number: dana.number, ...fromAcme };
    expect(await lookup(fields)).toEqual({ trusted: true, user_id: dana.id, caller_verification: null }); // warms KV

    expect((await as("alice").send("DELETE", `/companies/1/employees/${dana.id}`)).status).toBe(204);
    // Dana's receiver record was written less than a second ago (her secure number): rewritten once it has passed.
    await indexKeysWritten(dana.id);
    expect(await lookup(fields)).toEqual({ trusted: false, user_id: dana.id, caller_verification: null });
  });
});
