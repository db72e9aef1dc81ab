import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import worker from "../../src/index";
import { addMember, createCompany } from "../../src/routes/admin/admin.routes";
import { listCompanyPhones as listAllCompanyPhones } from "../../src/routes/admin/phones.routes";
import { callLookup, heartbeat, trustLookupGet } from "../../src/routes/buzz/buzz.routes";
import { addCompanyPhone, listCompanyPhones } from "../../src/routes/companies/phones.routes";
import { answer, as, call, expectError, insertToken, trustIndexSettledFor } from "../helpers";
import { fileTokens } from "../principals";

/*
 * Company phone claims (docs/decisions.md, "Company phones"): at most 20
 * pending per company, expiring after 30 days, several companies per number
 * until the first is verified, the operator's reject and remove, and a
 * disabled company's phones counting for nobody.
 */

const ADMIN = `sk_test_claims_operator_${crypto.randomUUID().replaceAll("-", "")}`;
const run = crypto.randomUUID().slice(0, 8);
const DAY = 24 * 3600_000;

beforeAll(async () => {
  await insertToken(ADMIN, { serviceName: "operator", scopes: ["platform:admin"] });
  // Secure numbers for the people these tests seat (the demo pool may be spent by other tests).
  await env.DB.prepare(
    `INSERT OR IGNORE INTO secure_numbers (e164, country_code, number, created_at)
     VALUES ('+12025550931', '1', '2025550931', 0), ('+12025550932', '1', '2025550932', 0),
            ('+12025550933', '1', '2025550933', 0), ('+12025550934', '1', '2025550934', 0)`,
  ).run();
});

const admin = (method: string, path: string, body?: unknown) => call(path, { method, body, token: ADMIN });

type Tenant = { id: number; adminId: number; token: string };
let tenants = 0;

/** A new employer with a seated Admin and their token. */
async function newTenant(): Promise<Tenant> {
  const n = ++tenants;
  const created = await admin("POST", "/internal/companies", {
    kind: "employer",
    name: `Claims ${n}`,
    slug: `claims-${n}-${run}`,
  });
  expect(created.status, await created.clone().text()).toBe(201);
  const { id } = await answer(created, 201, createCompany);
  const seated = await admin("POST", `/internal/companies/${id}/members`, {
    first_name: "Ada",
    last_name: `Claims${n}`,
    email: `ada.${n}.${run}@claims.example`,
    roles: ["Admin"],
  });
  expect(seated.status, await seated.clone().text()).toBe(201);
  const { person_id: adminId } = await answer(seated, 201, addMember);
  const token = `pk_test_claims_${n}_${run}_${crypto.randomUUID().replaceAll("-", "")}`;
  await insertToken(token, { personId: adminId });
  return { id, adminId, token };
}

const claim = (tenant: Tenant, phone_full: string) =>
  call(`/companies/${tenant.id}/phones`, { method: "POST", body: { phone_full }, token: tenant.token });

async function claimed(tenant: Tenant, phone_full: string): Promise<number> {
  const response = await claim(tenant, phone_full);
  expect(response.status, await response.clone().text()).toBe(201);
  return (await answer(response, 201, addCompanyPhone)).id;
}

const phonesOf = async (tenant: Tenant) =>
  answer(await call(`/companies/${tenant.id}/phones`, { token: tenant.token }), 200, listCompanyPhones);

/** Whether the holder of `token`'s secure number trusts a call from `caller` (E.164), asked through trust-lookup. */
async function trusts(token: string, caller: string): Promise<boolean> {
  const beat = await call("/apps/buzz/heartbeat", { token });
  expect(beat.status).toBe(200);
  const secure_number = (await answer(beat, 200, heartbeat)).secure_number!;
  // Once the index holds every change so far (a key changed twice within a second: written when it has passed).
  await trustIndexSettledFor(secure_number.e164);
  const response = await as("telephony").get(
    `/apps/buzz/trust-lookup?${new URLSearchParams({ To: secure_number.e164, From: caller })}`,
  );
  expect(response.status).toBe(200);
  return (await answer(response, 200, trustLookupGet)).trusted;
}

/** Makes claim `id` `days` old, as if it had been made then. */
const backdate = (id: number, days: number) =>
  env.DB.prepare("UPDATE company_phones SET created_at = ? WHERE id = ?")
    .bind(Date.now() - days * DAY, id)
    .run();

/**
 * A new tenant's verified phone `number`, which rings for its members and for Carol, no member,
 * who trusts the company (a verified caller).
 */
async function verifiedPhoneCarolTrusts(number: string) {
  const tenant = await newTenant();
  const phone = await claimed(tenant, number);
  expect((await admin("POST", `/internal/company-phones/${phone}/verify`)).status).toBe(200);
  expect((await as("carol").send("PUT", `/contacts/companies/${tenant.id}/trust`, { trust: "trusted" })).status).toBe(
    200,
  );
  expect(await trusts(tenant.token, number)).toBe(true);
  expect(await trusts(fileTokenOf("carol"), number)).toBe(true);
  return { tenant, phone };
}

describe("at most 20 pending claims per company", () => {
  it("the 21st is 400 naming the limit; a rejected claim frees its slot", async () => {
    const tenant = await newTenant();
    const ids: number[] = [];
    for (let i = 0; i < 20; i++) ids.push(await claimed(tenant, `+1415556${String(1000 + i)}`));
    const message = await expectError(await claim(tenant, "+14155562000"), 400, "Bad Request");
    expect(message).toContain("20");
    expect(
      await env.DB.prepare("SELECT count(*) AS n FROM company_phones WHERE e164 = '+14155562000'").first("n"),
    ).toBe(0);

    expect((await admin("POST", `/internal/company-phones/${ids[0]}/reject`)).status).toBe(204);
    expect(await phonesOf(tenant)).toContainEqual(expect.objectContaining({ id: ids[0], status: "refused" }));
    expect((await claim(tenant, "+14155562000")).status).toBe(201);
  });
});

describe("several companies may claim one number; the first verified wins", () => {
  it("both claims are accepted; the other company's verification is 409 and its claim refused", async () => {
    const [first, second] = [await newTenant(), await newTenant()];
    const number = "+14155563000";
    const firstClaim = await claimed(first, number);
    const secondClaim = await claimed(second, number);

    expect((await admin("POST", `/internal/company-phones/${firstClaim}/verify`)).status).toBe(200);
    const message = await expectError(
      await admin("POST", `/internal/company-phones/${secondClaim}/verify`),
      409,
      "Conflict",
    );
    // It names neither the company that holds the number nor its id.
    expect(message).not.toMatch(new RegExp(`Claims|company ${first.id}\\b|\\b${first.id}\\b`));
    expect(await phonesOf(second)).toContainEqual(expect.objectContaining({ id: secondClaim, status: "refused" }));
    expect(await phonesOf(first)).toContainEqual(expect.objectContaining({ id: firstClaim, status: "verified" }));
    // The number is taken: a new claim on it is 409 naming no company, and writes nothing (the
    // refused claim stays as it was).
    await expectError(await claim(await newTenant(), number), 409, "Conflict");
    await expectError(await claim(second, number), 409, "Conflict");
    expect(await phonesOf(second)).toContainEqual(expect.objectContaining({ id: secondClaim, status: "refused" }));
  });

  it("two verifications racing on one number: exactly one wins", async () => {
    const [a, b] = [await newTenant(), await newTenant()];
    const number = "+14155563001";
    const [claimA, claimB] = [await claimed(a, number), await claimed(b, number)];
    const answers = await Promise.all([
      admin("POST", `/internal/company-phones/${claimA}/verify`),
      admin("POST", `/internal/company-phones/${claimB}/verify`),
    ]);
    expect(answers.map((r) => r.status).sort()).toEqual([200, 409]);
    const verified = await env.DB.prepare(
      "SELECT count(*) AS n FROM company_phones WHERE e164 = ? AND status = 'verified'",
    )
      .bind(number)
      .first("n");
    expect(verified).toBe(1);
  });
});

describe("a claim expires after 30 days", () => {
  it("an expired claim is not listed, blocks nothing, cannot be verified, and the daily cron prunes it", async () => {
    const tenant = await newTenant();
    const number = "+14155564000";
    const old = await claimed(tenant, number);
    await backdate(old, 31);

    expect((await phonesOf(tenant)).map((p) => p.id)).not.toContain(old);
    const queue = await answer(
      await admin("GET", "/internal/company-phones?status=pending&per_page=1000"),
      200,
      listAllCompanyPhones,
    );
    expect(queue.map((p) => p.id)).not.toContain(old);
    await expectError(await admin("POST", `/internal/company-phones/${old}/verify`), 404, "Not Found");
    // The same company claims the number again: a new claim, with 30 days of its own.
    const again = await claimed(tenant, number);
    expect(again).not.toBe(old);

    // Another expired claim (of a number not claimed again) stays in D1 until the daily cron.
    const stale = await claimed(tenant, "+14155564001");
    await backdate(stale, 40);
    const young = await claimed(tenant, "+14155564002");
    await backdate(young, 29);
    const ctx = createExecutionContext();
    await worker.scheduled!(createScheduledController({ cron: "30 3 * * *", scheduledTime: Date.now() }), env, ctx);
    await waitOnExecutionContext(ctx);
    const left = await env.DB.prepare("SELECT id FROM company_phones WHERE company_id = ? ORDER BY id")
      .bind(tenant.id)
      .all<{ id: number }>();
    expect(left.results.map((row) => row.id)).toEqual([again, young]);
  });

  it("another company's verification on the number leaves an expired claim unlisted, not `refused`", async () => {
    const [late, winner] = [await newTenant(), await newTenant()];
    const number = "+14155569300";
    const expired = await claimed(late, number);
    await backdate(expired, 31);
    const won = await claimed(winner, number);
    expect((await admin("POST", `/internal/company-phones/${won}/verify`)).status).toBe(200);
    expect((await phonesOf(late)).map((p) => p.id)).not.toContain(expired);
    const refused = await answer(
      await admin("GET", "/internal/company-phones?status=refused&per_page=1000"),
      200,
      listAllCompanyPhones,
    );
    expect(refused.map((p) => p.id)).not.toContain(expired);
    // The operator's reject of it is a 404 too, like its verify.
    await expectError(await admin("POST", `/internal/company-phones/${expired}/reject`), 404, "Not Found");
  });

  it("expired claims do not count against the 20", async () => {
    const tenant = await newTenant();
    for (let i = 0; i < 20; i++) await backdate(await claimed(tenant, `+1415556${String(5000 + i)}`), 31);
    expect((await claim(tenant, "+14155565100")).status).toBe(201);
  });
});

describe("the operator rejects a claim and removes a phone", () => {
  it("reject: 204, the claim is refused; a verified phone is 409; unknown is 404", async () => {
    const tenant = await newTenant();
    const pending = await claimed(tenant, "+14155566000");
    expect((await admin("POST", `/internal/company-phones/${pending}/reject`)).status).toBe(204);
    expect((await admin("POST", `/internal/company-phones/${pending}/reject`)).status).toBe(204);
    await expectError(await admin("POST", `/internal/company-phones/${pending}/verify`), 409, "Conflict");
    // Its company may claim the number again.
    const again = await claimed(tenant, "+14155566000");
    expect((await admin("POST", `/internal/company-phones/${again}/verify`)).status).toBe(200);
    expect(
      await expectError(await admin("POST", `/internal/company-phones/${again}/reject`), 409, "Conflict"),
    ).toContain("DELETE");
    await expectError(await admin("POST", "/internal/company-phones/987654/reject"), 404, "Not Found");
    await expectError(await admin("DELETE", "/internal/company-phones/987654"), 404, "Not Found");
    // The document declares the 409s these routes answer.
    const doc = (await (await call("/openapi.json")).json()) as {
      paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
    };
    for (const action of ["verify", "reject"]) {
      expect(Object.keys(doc.paths[`/internal/company-phones/{id}/${action}`]!.post!.responses)).toContain("409");
    }
  });

  it("claiming its refused number again is refused for the reason that holds now: the cap, or another's phone", async () => {
    const capped = await newTenant();
    const refused = await claimed(capped, "+14155568000");
    expect((await admin("POST", `/internal/company-phones/${refused}/reject`)).status).toBe(204);
    for (let i = 0; i < 20; i++) await claimed(capped, `+1415556${String(8100 + i)}`);
    await expectError(await claim(capped, "+14155568000"), 400, "Bad Request"); // as any 21st claim

    const [loser, winner] = [await newTenant(), await newTenant()];
    const number = "+14155568500";
    const lost = await claimed(loser, number);
    expect((await admin("POST", `/internal/company-phones/${lost}/reject`)).status).toBe(204);
    expect((await admin("POST", `/internal/company-phones/${await claimed(winner, number)}/verify`)).status).toBe(200);
    expect(await expectError(await claim(loser, number), 409, "Conflict")).toContain("already registered");
  });

  it("remove re-indexes at once: calls from the number are no longer trusted through the company", async () => {
    const number = "+14155566100";
    const { tenant, phone } = await verifiedPhoneCarolTrusts(number);

    expect((await admin("DELETE", `/internal/company-phones/${phone}`)).status).toBe(204);
    expect(await trusts(tenant.token, number)).toBe(false);
    expect(await trusts(fileTokenOf("carol"), number)).toBe(false);
    expect((await phonesOf(tenant)).map((p) => p.id)).not.toContain(phone);
    // The number is free again.
    expect((await claim(await newTenant(), number)).status).toBe(201);
  });

  it("reject and remove need the operator", async () => {
    for (const [method, path] of [
      ["POST", "/internal/company-phones/1/reject"],
      ["DELETE", "/internal/company-phones/1"],
    ] as const) {
      await expectError(await call(path, { method }), 401, "Unauthorized");
      await expectError(await as("alice").send(method, path), 403, "Forbidden");
      await expectError(await as("telephony").send(method, path), 403, "Forbidden");
    }
    expect(await env.DB.prepare("SELECT count(*) AS n FROM company_phones WHERE id = 1").first("n")).toBe(1);
  });
});

describe("a disabled company's phones count for nobody", () => {
  it("its verified phone stops ringing for a non-member who trusted it and for its members, until enabled", async () => {
    const number = "+14155567000";
    const { tenant } = await verifiedPhoneCarolTrusts(number);

    expect((await admin("PATCH", `/internal/companies/${tenant.id}`, { status: "disabled" })).status).toBe(200);
    expect(await trusts(fileTokenOf("carol"), number)).toBe(false);
    expect(await trusts(tenant.token, number)).toBe(false);
    const carol = await secureOf("carol");
    const details = await as("telephony").get(
      `/apps/buzz/call-lookup?${new URLSearchParams({ ...carol, inbound_code: "1", inbound: number.slice(2) })}`,
    );
    expect((await answer(details, 200, callLookup)).companies).toEqual([]);

    expect((await admin("PATCH", `/internal/companies/${tenant.id}`, { status: "enabled" })).status).toBe(200);
    expect(await trusts(fileTokenOf("carol"), number)).toBe(true);
    expect(await trusts(tenant.token, number)).toBe(true);
  });
});

const fileTokenOf = (who: "carol") => fileTokens[who];
async function secureOf(who: "carol") {
  const beat = await as(who).get("/apps/buzz/heartbeat");
  const secure_number = (await answer(beat, 200, heartbeat)).secure_number!;
  return { number_code: secure_number.country_code, number: secure_number.number };
}
