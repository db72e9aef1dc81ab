import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { MAX_EMPLOYEES_PER_COMPANY } from "../../src/services/employees";
import { INLINE_INDEX_KEYS } from "../../src/services/trust-index/current";
import { createEmployeesBulk } from "../../src/routes/employees/employees.routes";
import { getCompanyLicense } from "../../src/routes/licenses/licenses.routes";
import { answer, as, countD1, countRows, DEMO, expectError } from "../helpers";
import { newWebhook } from "../webhook-receiver";

/**
 * POST /companies/{company_id}/employees/bulk (docs/decisions.md): the body of
 * POST /employees 1–1,000 times, all or nothing in one D1 batch, within the
 * platform's limits; and the per-company quota of §10.9 on both routes.
 */

afterEach(() => {
  vi.restoreAllMocks();
});

let seq = 0;
const tag = () => `b${Date.now().toString(36)}${++seq}`;

const employee = (email: string, i: number) => ({
  first_name: ` Worker${i} `,
  last_name: "Bulk",
  dob: "1985-05-05",
  emails: [{ email: ` ${email.toUpperCase()} ` }],
  phone_numbers: [{ country_code: "US", phone_number: `415555${String(i % 10_000).padStart(4, "0")}` }],
  addresses: [
    { line_1: `${i} Main St`, city: "San Francisco", region: "California", postal_code: "94105", country: "us" },
  ],
});

const batchOf = (prefix: string, n: number, license: string | null = null) =>
  Array.from({ length: n }, (_, i) => ({ ...employee(`${prefix}.${i}@acme.example`, i), license }));

const emailsLike = (prefix: string) =>
  countRows("SELECT count(*) AS n FROM person_emails WHERE email LIKE ?", `${prefix}.%`);

async function seats(license: string) {
  return answer(await as("alice").get(`/companies/1/licenses/${license}`), 200, getCompanyLicense);
}

describe("POST /companies/{company_id}/employees/bulk", () => {
  it("1,000 employees: 200 in request order, standardized, seats taken, 1,000 person:created rows, < 1,000 D1 statements", async () => {
    const webhook = await newWebhook({ event: "person:created" });
    const bought = await as("alice").send("POST", "/companies/1/licenses", [{ id: "scan", quantity: 1000 }]);
    expect(bought.status).toBe(201);
    const before = await seats("scan");
    const prefix = tag();

    const d1 = countD1();
    const kvPuts = vi.spyOn(env.TRUST_INDEX, "put");
    const response = await as("alice").send("POST", "/companies/1/employees/bulk", batchOf(prefix, 1000, "scan"));
    expect(response.status).toBe(200);
    expect(d1.statements).toBeLessThan(1000);
    // 1,000 new numbers: 200 keys inline, the rest through the background queue (1,000 KV operations per invocation).
    expect(kvPuts.mock.calls.length).toBeLessThanOrEqual(INLINE_INDEX_KEYS);
    vi.restoreAllMocks();

    const people = await answer(response, 200, createEmployeesBulk);
    expect(people).toHaveLength(1000);
    expect(people.map((person) => person.emails[0]!.email)).toEqual(
      Array.from({ length: 1000 }, (_, i) => `${prefix}.${i}@acme.example`),
    );
    expect(people[7]).toMatchObject({
      first_name: "Worker7",
      roles: ["HR"],
      phone_numbers: [{ phone_full: "+14155550007", country_code: "1" }],
      addresses: [{ region: "CA", country: "US" }],
      license: { type: "scan" },
    });
    // Ids are consecutive in request order.
    expect(people.every((person, i) => person.id === people[0]!.id + i)).toBe(true);

    const after = await seats("scan");
    expect(after.num_assigned).toBe(before.num_assigned + 1000);

    const rows = await env.DB.prepare(
      "SELECT json_extract(payload, '$.id') AS id, rendered FROM webhook_deliveries WHERE webhook_id = ? ORDER BY rowid",
    )
      .bind(webhook.id)
      .all<{ id: number; rendered: number }>();
    expect(rows.results.map((row) => row.id)).toEqual(people.map((person) => person.id));
    expect(rows.results.every((row) => row.rendered === 1)).toBe(true);
    const sample = await env.DB.prepare(
      "SELECT payload FROM webhook_deliveries WHERE webhook_id = ? AND json_extract(payload, '$.id') = ?",
    )
      .bind(webhook.id, people[500]!.id)
      .first<{ payload: string }>();
    expect(JSON.parse(sample!.payload)).toEqual(people[500]);

    // Their phones reach them now: the trust index was told (one key per number).
    expect(
      await countRows(
        "SELECT count(*) AS n FROM person_phones WHERE person_id BETWEEN ? AND ?",
        people[0]!.id,
        people[999]!.id,
      ),
    ).toBe(1000);
  }, 120_000);

  it("element 999 invalid: 400 naming [999] and the field, nothing written", async () => {
    const prefix = tag();
    const body = batchOf(prefix, 1000);
    body[999] = { ...body[999]!, emails: [{ email: "not-an-email" }] };
    const message = await expectError(
      await as("alice").send("POST", "/companies/1/employees/bulk", body),
      400,
      "Bad Request",
    );
    expect(message).toContain("`[999].emails[0].email`");
    expect(message).not.toContain("[998]");
    expect(await emailsLike(prefix)).toBe(0);
  }, 60_000);

  it("not enough seats for the whole batch: 400 naming the license, nothing written, no seat taken", async () => {
    const before = await seats("protect");
    const prefix = tag();
    const response = await as("alice").send(
      "POST",
      "/companies/1/employees/bulk",
      batchOf(prefix, before.num_available + 1, "protect"),
    );
    expect(await expectError(response, 400, "Bad Request")).toMatch(/not enough `protect` seats/);
    expect(await emailsLike(prefix)).toBe(0);
    expect((await seats("protect")).num_assigned).toBe(before.num_assigned);
  });

  it("an email twice in the batch: 400 naming the later element", async () => {
    const prefix = tag();
    const body = batchOf(prefix, 5);
    body[4] = { ...body[4]!, emails: [{ email: `${prefix}.1@ACME.example` }] };
    const message = await expectError(
      await as("alice").send("POST", "/companies/1/employees/bulk", body),
      400,
      "Bad Request",
    );
    expect(message).toContain("`[4].emails[0].email`");
    expect(message).toContain("[1]");
    expect(await emailsLike(prefix)).toBe(0);
  });

  it("an email that already belongs to a person, anywhere: 400 naming the element, not where", async () => {
    const prefix = tag();
    const body = batchOf(prefix, 3);
    // Carol is Globex's, not Acme's: the message must not tell Acme that.
    body[2] = { ...body[2]!, emails: [{ email: "carol@globex.example" }] };
    const message = await expectError(
      await as("alice").send("POST", "/companies/1/employees/bulk", body),
      400,
      "Bad Request",
    );
    expect(message).toMatch(/`\[2\]\.emails` the primary email `carol@globex\.example` already belongs to a person$/);
    expect(message).not.toMatch(/company 2|Globex Corp/i);
    expect(await emailsLike(prefix)).toBe(0);
  });

  it("an unknown role or license names the element; a role above the caller's is 403 naming it", async () => {
    const prefix = tag();
    const body = batchOf(prefix, 3);
    body[1] = { ...body[1]!, roles: ["Janitor"] } as (typeof body)[number];
    expect(
      await expectError(await as("alice").send("POST", "/companies/1/employees/bulk", body), 400, "Bad Request"),
    ).toMatch(/^Bad Request: invalid body: `\[1\]\.roles` company 1 has no role "Janitor"/);
    const noLicense = batchOf(prefix, 3);
    noLicense[2] = { ...noLicense[2]!, license: "platinum" };
    expect(
      await expectError(await as("alice").send("POST", "/companies/1/employees/bulk", noLicense), 400, "Bad Request"),
    ).toMatch(/^Bad Request: invalid body: `\[2\]\.license` there is no license "platinum"/);
    expect(await emailsLike(prefix)).toBe(0);
  });

  it("1,000 bad rows: the 400 names the first 20 problems and counts the rest", async () => {
    // Each bad date is two problems (its form, and that it is a real date in the past).
    const prefix = tag();
    const bad = batchOf(prefix, 1000).map(({ dob, ...rest }) => ({ ...rest, dob: "yesterday" }));
    const message = await expectError(
      await as("alice").send("POST", "/companies/1/employees/bulk", bad),
      400,
      "Bad Request",
    );
    expect(message).toMatch(/^Bad Request: invalid body: `\[0\]\.dob` /);
    expect(message).toContain("`[9].dob`");
    expect(message).not.toContain("`[10].dob`");
    expect(message).toMatch(/; and 1980 more problems$/);
    expect(message.length).toBeLessThan(3000);
    expect(await emailsLike(prefix)).toBe(0);
  });

  it("an empty array, or more than 1,000, is a 400; Viewer lacks write employees (403)", async () => {
    expect(
      await expectError(await as("alice").send("POST", "/companies/1/employees/bulk", []), 400, "Bad Request"),
    ).toBe("Bad Request: invalid body: must hold 1 to 1,000 employees");
    // A missing date of birth says so, not how to write one.
    const { dob: _dob, ...noDob } = batchOf(tag(), 1)[0]!;
    expect(await expectError(await as("alice").send("POST", "/companies/1/employees", noDob), 400, "Bad Request")).toBe(
      "Bad Request: invalid body: `dob` is required",
    );
    const tooMany = batchOf(tag(), 1001).map(({ phone_numbers, addresses, ...rest }) => ({
      ...rest,
      addresses: [],
    }));
    await expectError(await as("alice").send("POST", "/companies/1/employees/bulk", tooMany), 400, "Bad Request");
    await expectError(await as("bob").send("POST", "/companies/1/employees/bulk", batchOf(tag(), 1)), 403, "Forbidden");
  });
});

describe("at most 100,000 employees per company", () => {
  it("POST and bulk past the limit are a 400 naming it; nothing is written", async () => {
    const company = DEMO.companies.globex;
    const have = await countRows("SELECT count(*) AS n FROM memberships WHERE company_id = ?", company);
    const fill = MAX_EMPLOYEES_PER_COMPANY - have - 1;
    await env.DB.prepare(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1)
       INSERT INTO people (first_name, last_name, created_at, updated_at) SELECT 'Quota', 'Filler' || i, 0, 0 FROM n`,
    )
      .bind(fill)
      .run();
    await env.DB.prepare(
      `INSERT INTO memberships (company_id, person_id, created_at, updated_at)
       SELECT ?1, id, 0, 0 FROM people WHERE first_name = 'Quota'`,
    )
      .bind(company)
      .run();
    try {
      const prefix = tag();
      const two = await as("carol").send("POST", `/companies/${company}/employees/bulk`, batchOf(prefix, 2));
      expect(await expectError(two, 400, "Bad Request")).toMatch(/at most 100,000 employees/);
      // One more fits exactly: of four at once, one gets in (the others see no room before
      // their batch, or are rolled back by the quota guard inside it).
      const racing = await Promise.all(
        batchOf(prefix, 4).map((employee) => as("carol").send("POST", `/companies/${company}/employees`, employee)),
      );
      expect(racing.map((response) => response.status).sort()).toEqual([200, 400, 400, 400]);
      for (const response of racing.filter((r) => r.status === 400)) {
        expect(await expectError(response, 400, "Bad Request")).toMatch(/at most 100,000 employees/);
      }
      const over = await as("carol").send("POST", `/companies/${company}/employees`, batchOf(prefix, 6)[5]);
      expect(await expectError(over, 400, "Bad Request")).toMatch(/at most 100,000 employees/);
      expect(await emailsLike(prefix)).toBe(1);
    } finally {
      await env.DB.prepare("DELETE FROM people WHERE first_name = 'Quota'").run();
    }
  }, 120_000);
});
