import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { configureContainer } from "../../src/routes/admin/admin.routes";
import { callLookup, createActivity, listActivity, trustLookupGet } from "../../src/routes/buzz/buzz.routes";
import { addCompanyPhone } from "../../src/routes/companies/phones.routes";
import { listCompanyTrust } from "../../src/routes/contacts/company-trust.routes";
import { answer, as, call, countRows, DEMO, expectError, insertToken, personObject, secureNumberOf } from "../helpers";

/**
 * What a stranger can still learn or cost (docs/security.md): each
 * reproduction of the third-round audit, as a test.
 */
const ADMIN = "sk_test_stranger_operator";
beforeAll(async () => {
  await insertToken(ADMIN, { serviceName: "operator", scopes: ["platform:admin"] });
});
const admin = (method: string, path: string, body?: unknown) => call(path, { method, body, token: ADMIN });

type Who = "alice" | "bob" | "carol";
const { alice, bob, carol } = DEMO.people;
const { acme, globex } = DEMO.companies;

const record = async (who: Who, body: Record<string, unknown>) => {
  const response = await as(who).send("POST", "/apps/buzz/activity", {
    sendable_type: "person",
    receivable_type: "person",
    ...body,
  });
  return (await answer(response, 200, createActivity)).data.id;
};
const feedEntry = async (who: Who, id: number) => {
  const entries = await answer(await as(who).get(`/apps/buzz/activity/${id - 1}?limit=1`), 200, listActivity);
  expect(entries[0]!.id).toBe(id);
  return entries[0]!;
};

describe("activity names only parties who know the reader", () => {
  it("a stranger naming person 2 and company 1 reads no names (the high-severity finding)", async () => {
    const toBob = await record("carol", { type: "outgoing_call_missed", sendable_id: carol, receivable_id: bob });
    const toAcme = await record("carol", {
      type: "outgoing_call_missed",
      sendable_id: carol,
      receivable_type: "company",
      receivable_id: acme,
    });
    const bobEntry = await feedEntry("carol", toBob);
    expect(bobEntry.receivable).toEqual({ id: bob, first_name: null, middle_name: null, last_name: null });
    expect(bobEntry.sendable).toEqual(expect.objectContaining({ id: carol, first_name: "Carol" })); // herself
    expect((await feedEntry("carol", toAcme)).receivable).toEqual({ id: acme, name: null });
    // An id that is no account reads the same way as a stranger's: null names, never "no such person".
    const toNobody = await record("carol", {
      type: "outgoing_call_missed",
      sendable_id: carol,
      receivable_id: 987_650,
    });
    expect((await feedEntry("carol", toNobody)).receivable).toBeNull();
  });

  it("a coworker and one's own company are named", async () => {
    const toBob = await record("alice", { type: "outgoing_call_missed", sendable_id: alice, receivable_id: bob });
    expect((await feedEntry("alice", toBob)).receivable).toEqual(
      expect.objectContaining({ id: bob, first_name: "Bob", last_name: "Builder" }),
    );
    const toAcme = await record("alice", {
      type: "outgoing_call_missed",
      sendable_id: alice,
      receivable_type: "company",
      receivable_id: acme,
    });
    expect((await feedEntry("alice", toAcme)).receivable).toEqual({ id: acme, name: "Acme Corp" });
  });

  it("a chat from a stranger shows the stranger's name to neither side until they know each other", async () => {
    const chat = await record("carol", {
      type: "chat_message",
      sendable_id: carol,
      receivable_id: alice,
      message: "aGk=",
      message_id: crypto.randomUUID(),
    });
    // Alice reads Carol's chat: Carol does not know Alice, so Carol is unnamed; Alice is herself.
    const aliceSide = await feedEntry("alice", chat);
    expect(aliceSide.sendable).toEqual({ id: carol, first_name: null, middle_name: null, last_name: null });
    expect(aliceSide.receivable).toEqual(expect.objectContaining({ first_name: "Alice" }));
  });
});

describe("company phones are verified before they count", () => {
  /** Whether Bob's secure number trusts a call from +1 `national`, asked as the telephony provider. */
  async function bobTrusts(national: string) {
    const fields = { ...(await secureNumberOf("bob")).receiving, inbound_code: "1" };
    const lookup = await as("telephony").get(
      `/apps/buzz/trust-lookup?${new URLSearchParams({ ...fields, inbound: national })}`,
    );
    const details = await as("telephony").get(
      `/apps/buzz/call-lookup?${new URLSearchParams({ ...fields, inbound: national })}`,
    );
    return {
      trusted: (await answer(lookup, 200, trustLookupGet)).trusted,
      companies: (await answer(details, 200, callLookup)).companies.map((c) => c.name),
    };
  }

  it("a new phone is pending: no trust, no name, until the operator verifies it", async () => {
    const created = await as("alice").send("POST", `/companies/${acme}/phones`, { phone_full: "+14155550161" });
    const phone = await answer(created, 201, addCompanyPhone);
    expect(phone.status).toBe("pending");
    expect(await bobTrusts("4155550161")).toEqual({ trusted: false, companies: [] });

    const queue = await admin("GET", "/internal/company-phones?status=pending&per_page=1000");
    expect(queue.status).toBe(200);
    expect(await queue.json()).toContainEqual(
      expect.objectContaining({ id: phone.id, company_id: acme, status: "pending" }),
    );

    const verified = await admin("POST", `/internal/company-phones/${phone.id}/verify`);
    expect(verified.status).toBe(200);
    expect(await verified.json()).toEqual(
      expect.objectContaining({ id: phone.id, company_id: acme, phone_full: "+14155550161", status: "verified" }),
    );
    expect(await bobTrusts("4155550161")).toEqual({ trusted: true, companies: ["Acme Corp"] });
    expect(await (await as("alice").get(`/companies/${acme}/phones`)).json()).toContainEqual(
      expect.objectContaining({ id: phone.id, status: "verified" }),
    );
    // Verifying again changes nothing.
    expect((await admin("POST", `/internal/company-phones/${phone.id}/verify`)).status).toBe(200);
  });

  it("a company cannot claim another company's number: 409 naming no one", async () => {
    const claim = await as("carol").send("POST", `/companies/${globex}/phones`, { phone_full: DEMO.acmePhone });
    const message = await expectError(claim, 409, "Conflict");
    expect(message).not.toMatch(/acme|company 1\b|\b1\b/i);
    expect(await bobTrusts(DEMO.acmePhone.slice(2))).toEqual({ trusted: true, companies: ["Acme Corp"] });
    expect(await countRows("select count(*) as n from company_phones where e164 = ?", DEMO.acmePhone)).toBe(1);
    // A pending claim holds nothing: another company may claim the number too, and the first
    // verified wins (test/companies/company-phone-claims.test.ts).
    const pending = await as("alice").send("POST", `/companies/${acme}/phones`, { phone_full: "+14155550162" });
    expect(pending.status).toBe(201);
    const second = await as("carol").send("POST", `/companies/${globex}/phones`, { phone_full: "+14155550162" });
    expect(second.status).toBe(201);
  });

  it("verify needs the operator: 401, 403 for others, 404 for an unknown phone", async () => {
    await expectError(await call("/internal/company-phones/1/verify", { method: "POST" }), 401, "Unauthorized");
    await expectError(await as("alice").send("POST", "/internal/company-phones/1/verify"), 403, "Forbidden");
    await expectError(await as("telephony").get("/internal/company-phones"), 403, "Forbidden");
    await expectError(await admin("POST", "/internal/company-phones/987654/verify"), 404, "Not Found");
  });
});

describe("company trust is writable only for companies the person can see", () => {
  const setTrust = (who: Who, companyId: number, trust: string | null) =>
    as(who).send("PUT", `/contacts/companies/${companyId}/trust`, { trust });
  const withoutId = (message: string, id: number) => message.replaceAll(String(id), "<id>");

  it("a company that is neither theirs, nor set before, nor a verified caller is 404, exactly like no company", async () => {
    // Globex has no verified phone; Alice is not a member and has no setting.
    const probe = await expectError(await setTrust("alice", globex, "trusted"), 404, "Not Found");
    const unknown = await expectError(await setTrust("alice", 987_654, "trusted"), 404, "Not Found");
    expect(withoutId(probe, globex)).toBe(withoutId(unknown, 987_654));
    const listed = await answer(await as("alice").get("/contacts/companies"), 200, listCompanyTrust);
    expect(listed.map((entry) => entry.company.id)).not.toContain(globex);
  });

  it("own companies, verified callers and existing settings are accepted", async () => {
    expect((await setTrust("carol", globex, "negative")).status).toBe(200); // her own
    expect((await setTrust("carol", globex, null)).status).toBe(200);
    expect((await setTrust("carol", acme, "trusted")).status).toBe(200); // Acme has a verified phone
    expect((await setTrust("carol", acme, null)).status).toBe(200);
    // A vendor set through the consent container can be changed here afterwards.
    const vendor = DEMO.vendors.pixelPartners;
    await expectError(await setTrust("carol", vendor, "trusted"), 404, "Not Found");
    const viaContainer = await as("carol").send("PUT", "/apps/vcc/trust/dailynews/pixelpartners", {
      trust: "negative",
    });
    expect(viaContainer.status).toBe(200);
    expect((await setTrust("carol", vendor, null)).status).toBe(200);
  });
});

describe("writes are priced by what they cost", () => {
  const DAY_MS = 24 * 3600 * 1000;
  const today = () => Math.floor(Date.now() / DAY_MS);
  /** Sets what the person already spent today, inside their object (the budget lives there). */
  const setSpent = (personId: number, records: number, textBytes: number) =>
    runInDurableObject(personObject(personId), (_, state) => {
      state.storage.sql.exec(
        "insert into activity_days (day, records, text_bytes) values (?, ?, ?) " +
          "on conflict (day) do update set records = excluded.records, text_bytes = excluded.text_bytes",
        today(),
        records,
        textBytes,
      );
    });
  const spent = (personId: number) =>
    runInDurableObject(personObject(personId), (_, state) =>
      state.storage.sql.exec("select records, text_bytes from activity_days where day = ?", today()).one(),
    );
  const chat = (message: string, messageId = crypto.randomUUID()) => ({
    type: "chat_message",
    sendable_type: "person",
    sendable_id: carol,
    receivable_type: "person",
    receivable_id: alice,
    message,
    message_id: messageId,
  });
  /** How many records Carol's feed holds. */
  const activityCount = async () =>
    (await answer(await as("carol").get("/apps/buzz/activity/0?limit=500"), 200, listActivity)).length;

  it("a person records at most 1,000 activities a day: the 1,001st is 429 with Retry-After and writes nothing", async () => {
    await setSpent(carol, 999, 0);
    const retried = chat("aGk=");
    expect((await as("carol").send("POST", "/apps/buzz/activity", retried)).status).toBe(200);
    const before = await activityCount();
    const refused = await as("carol").send("POST", "/apps/buzz/activity", chat("aGk="));
    expect(await expectError(refused, 429, "Too Many Requests")).toContain("1000");
    const retryAfter = Number(refused.headers.get("Retry-After"));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(24 * 3600);
    expect(await activityCount()).toBe(before);
    // A retry of a record already written is answered, not charged.
    expect((await as("carol").send("POST", "/apps/buzz/activity", retried)).status).toBe(200);
    await setSpent(carol, 0, 0);
  });

  it("and at most 10 MiB of message text a day", async () => {
    await setSpent(carol, 10, 10 * 1024 * 1024 - 100);
    const before = await activityCount();
    const big = await as("carol").send("POST", "/apps/buzz/activity", chat("x".repeat(65_536)));
    expect(await expectError(big, 429, "Too Many Requests")).toContain("10 MiB");
    expect(await activityCount()).toBe(before);
    expect((await as("carol").send("POST", "/apps/buzz/activity", chat("x".repeat(50)))).status).toBe(200);
    await setSpent(carol, 0, 0);
  });

  it("counts each new record and its text bytes against the recorder's day", async () => {
    await setSpent(carol, 0, 0);
    await as("carol").send("POST", "/apps/buzz/activity", chat("héllo")); // 6 bytes in UTF-8
    expect(await spent(carol)).toEqual({ records: 1, text_bytes: 6 });
  });

  it("a contact holds at most 20 phones, 20 emails and 10 addresses", async () => {
    const phones = (n: number) => Array.from({ length: n }, (_, i) => `+1415555${String(1000 + i).padStart(4, "0")}`);
    const emails = (n: number) => Array.from({ length: n }, (_, i) => `c${i}@example.com`);
    const addresses = (n: number) => Array.from({ length: n }, (_, i) => `${i} Main St`);
    const sync = (contact: object) =>
      as("bob").send("POST", "/contacts/sync", [{ display_name: "Capped", ...contact }]);
    const before = await countRows("select count(*) as n from contacts where owner_id = ?", bob);
    expect(await expectError(await sync({ phone_numbers: phones(21) }), 400, "Bad Request")).toContain("phone_numbers");
    expect(await expectError(await sync({ emails: emails(21) }), 400, "Bad Request")).toContain("emails");
    expect(await expectError(await sync({ addresses: addresses(11) }), 400, "Bad Request")).toContain("addresses");
    expect(await countRows("select count(*) as n from contacts where owner_id = ?", bob)).toBe(before);
    const fits = await sync({ phone_numbers: phones(20), emails: emails(20), addresses: addresses(10) });
    expect(fits.status).toBe(200);
  });
});

describe("the operator API's lists never 500", () => {
  it("a container of 100 vendors", async () => {
    const slugs = Array.from({ length: 100 }, (_, i) => `stranger-vendor-${i}`);
    await env.DB.batch(
      slugs.map((slug) =>
        env.DB.prepare(
          "insert into companies (kind, name, slug, url, created_at, updated_at) values ('vendor', ?, ?, '', 0, 0)",
        ).bind(slug, slug),
      ),
    );
    const response = await admin("PUT", "/internal/containers/dailynews", {
      enabled: true,
      vendors: slugs.map((slug) => ({ slug, category: "analytics" })),
    });
    expect((await answer(response, 200, configureContainer)).vendors).toHaveLength(100);
  });
});
