import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import worker from "../../src/index";
import {
  createEmployee,
  getEmployee,
  listEmployees,
  updateEmployee,
} from "../../src/routes/employees/employees.routes";
import {
  answer,
  as,
  call,
  countRows,
  DEMO,
  employeeAddress,
  employeeBody,
  expectError,
  fresh,
  insertToken,
} from "../helpers";

const ACME = "/companies/1/employees";

async function create(payload: unknown, who: "alice" | "carol" = "alice", path = ACME) {
  return answer(await as(who).send("POST", path, payload), 200, createEmployee);
}

/** Inserts a webhook row directly (once per company, event and state), so events have somewhere to go. */
async function addWebhook(companyId: number, event: string, active = true) {
  const now = Date.now();
  await env.DB.prepare(
    `INSERT INTO webhooks (company_id, endpoint, event, active, secret, created_at, updated_at)
     SELECT ?1, 'https://127.0.0.1:9/hook', ?2, ?3, 'whsec_dGVzdHRlc3R0ZXN0dGVzdHRlc3R0ZXN0', ?4, ?4
     WHERE NOT EXISTS (SELECT 1 FROM webhooks WHERE company_id = ?1 AND event = ?2 AND active = ?3)`,
  )
    .bind(companyId, event, active ? 1 : 0, now)
    .run();
}

async function deliveries(event: string) {
  const { results } = await env.DB.prepare(
    "SELECT company_id, event, payload FROM webhook_deliveries WHERE event = ? ORDER BY created_at",
  )
    .bind(event)
    .all<{ company_id: number; event: string; payload: string }>();
  return results.map((row) => ({ ...row, payload: JSON.parse(row.payload) as Record<string, unknown> }));
}

beforeAll(async () => {
  // Plenty of `scan` seats, so tests that create employees do not run out; seat limits are tested with `protect`.
  await env.DB.prepare("UPDATE company_seats SET quantity = 1000 WHERE company_id = 1 AND license_id = 'scan'").run();
});

describe("POST /companies/{company_id}/employees", () => {
  it("standardizes the input and answers 200 with the full Person", async () => {
    const local = fresh("dana");
    const response = await as("alice").send("POST", ACME, {
      first_name: "  Dana ",
      middle_name: " Katherine ",
      last_name: " Scully",
      dob: "1988-04-12",
      emails: [{ email: `  ${local.toUpperCase()}@Acme.Example ` }, { email: `${local}@home.example`, primary: false }],
      akas: [{ first_name: "Starbuck" }],
      phone_numbers: [
        { country_code: "+1", phone_number: "(415) 555-0123" },
        { country_code: "US", phone_number: "415.555.0124", primary: true },
        { country_code: "44", phone_number: "20 7946 0958" },
      ],
      addresses: [
        {
          line_1: " 1  Main St ",
          city: "San Francisco",
          region: "california",
          postal_code: "941051234",
          country: "us",
        },
        { line_1: "10 Downing St", city: "London", region: "", postal_code: "sw1a 2aa", country: "gb" },
      ],
    });
    expect(response.status).toBe(200);
    const person = await answer(response, 200, createEmployee);
    expect(person).toEqual({
      id: expect.any(Number),
      first_name: "Dana",
      middle_name: "Katherine",
      last_name: "Scully",
      display_name: "Dana Katherine Scully",
      dob: "1988-04-12",
      akas: [{ id: expect.any(Number), first_name: "Starbuck", middle_name: null, last_name: null }],
      addresses: [
        {
          id: expect.any(Number),
          primary: true,
          line_1: "1 Main St",
          line_2: null,
          city: "San Francisco",
          region: "CA",
          postal_code: "94105-1234",
          country: "US",
        },
        {
          id: expect.any(Number),
          primary: false,
          line_1: "10 Downing St",
          line_2: null,
          city: "London",
          region: "",
          postal_code: "SW1A 2AA",
          country: "GB",
        },
      ],
      emails: [
        { id: expect.any(Number), primary: true, email: `${local}@acme.example` },
        { id: expect.any(Number), primary: false, email: `${local}@home.example` },
      ],
      phone_numbers: [
        {
          id: expect.any(Number),
          primary: false,
          country_code: "1",
          phone_number: "4155550123",
          phone_full: "+14155550123",
        },
        {
          id: expect.any(Number),
          primary: true,
          country_code: "1",
          phone_number: "4155550124",
          phone_full: "+14155550124",
        },
        {
          id: expect.any(Number),
          primary: false,
          country_code: "44",
          phone_number: "2079460958",
          phone_full: "+442079460958",
        },
      ],
      last_scan_at: null,
      license: {
        type: "scan",
        price: 0,
        start_date: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        end_date: null,
        renews: 1,
        prorate_on_renewal: 0,
      },
      roles: ["HR"],
      risk_score: 0,
      exposures: { total: 0, pending: 0, in_progress: 0, closed: 0, not_found: 0 },
      last_login: null,
      created_at: expect.stringMatching(/Z$/),
    });

    // The same Person is read back, and the employer email is marked as the company's.
    const read = await as("alice").get(`${ACME}/${person.id}`);
    expect(read.status).toBe(200);
    expect(await read.json()).toEqual(person);
    expect(
      await countRows(
        "SELECT count(*) AS n FROM person_emails WHERE person_id = ? AND employer_company_id = 1",
        person.id,
      ),
    ).toBe(2);
  });

  it("marks the first entry primary when none is, and takes role and license names case-insensitively", async () => {
    const person = await create(employeeBody(fresh("case"), { roles: ["viewer", "hr"], license: "PROTECT" }));
    expect(person.emails[0]!.primary).toBe(true);
    expect(person.addresses[0]!.primary).toBe(true);
    expect(person.phone_numbers).toEqual([]);
    expect(person.roles).toEqual(["HR", "Viewer"]);
    expect(person.license).toMatchObject({ type: "protect", price: 9900 });
  });

  it("creates an employee without a license when `license` is null", async () => {
    const person = await create(employeeBody(fresh("nolicense"), { license: null }));
    expect(person.license).toBeNull();
  });

  it.each([
    [
      "two primary emails",
      {
        emails: [
          { email: "a@x.example", primary: true },
          { email: "b@x.example", primary: true },
        ],
      },
      "emails[1].primary",
    ],
    ["an invalid email", { emails: [{ email: "not-an-email" }] }, "emails[0].email"],
    ["no email", { emails: [] }, "emails"],
    ["a repeated email", { emails: [{ email: "r@x.example" }, { email: " R@x.example" }] }, "emails[1]"],
    ["a dob in the future", { dob: "2999-01-01" }, "dob"],
    ["a dob that does not exist", { dob: "1990-02-30" }, "dob"],
    ["an unknown country", { addresses: [{ ...employeeAddress, country: "XX" }] }, "addresses[0].country"],
    [
      "a region that is no US state",
      { addresses: [{ ...employeeAddress, region: "Atlantis" }] },
      "addresses[0].region",
    ],
    ["a bad US ZIP code", { addresses: [{ ...employeeAddress, postal_code: "9410" }] }, "addresses[0].postal_code"],
    [
      "a bad calling code",
      { phone_numbers: [{ country_code: "+9999", phone_number: "4155550123" }] },
      "phone_numbers[0].country_code",
    ],
    [
      "a calling code no country uses",
      { phone_numbers: [{ country_code: "999", phone_number: "4155550123" }] },
      "phone_numbers[0].country_code",
    ],
    [
      "an invalid phone number",
      { phone_numbers: [{ country_code: "1", phone_number: "123" }] },
      "phone_numbers[0].phone_number",
    ],
    [
      "a phone_full that disagrees",
      { phone_numbers: [{ country_code: "1", phone_number: "4155550123", phone_full: "+14155550999" }] },
      "phone_numbers[0].phone_full",
    ],
    ["no last_name", { last_name: " " }, "last_name"],
  ])("400 for %s, naming the field, and writes nothing", async (_, extra, field) => {
    const local = fresh("bad");
    const payload = { ...employeeBody(local), ...extra };
    const message = await expectError(await as("alice").send("POST", ACME, payload), 400, "Bad Request");
    expect(message).toContain(`\`${field}`);
    expect(await countRows("SELECT count(*) AS n FROM person_emails WHERE email = ?", `${local}@acme.example`)).toBe(0);
  });

  it("400 when the primary email already belongs to someone, and nothing is written", async () => {
    const people = await countRows("SELECT count(*) AS n FROM people");
    const extra = `${fresh("extra")}@acme.example`;
    const message = await expectError(
      await as("alice").send(
        "POST",
        ACME,
        employeeBody("x", { emails: [{ email: "Bob@Acme.example" }, { email: extra }] }),
      ),
      400,
      "Bad Request",
    );
    expect(message).toContain("bob@acme.example");
    expect(await countRows("SELECT count(*) AS n FROM people")).toBe(people);
    expect(await countRows("SELECT count(*) AS n FROM person_emails WHERE email = ?", extra)).toBe(0);
  });

  it("400 when a secondary email is taken, even by another tenant's employee", async () => {
    const primary = `${fresh("second")}@acme.example`;
    const response = await as("alice").send(
      "POST",
      ACME,
      employeeBody("x", { emails: [{ email: primary }, { email: "carol@globex.example" }] }),
    );
    expect(await expectError(response, 400, "Bad Request")).toContain("carol@globex.example");
    expect(await countRows("SELECT count(*) AS n FROM person_emails WHERE email = ?", primary)).toBe(0);
  });

  it("400 for a role the company does not have or an unknown license", async () => {
    const local = fresh("role");
    expect(
      await expectError(
        await as("alice").send("POST", ACME, employeeBody(local, { roles: ["Janitor"] })),
        400,
        "Bad Request",
      ),
    ).toContain("Janitor");
    expect(
      await expectError(
        await as("alice").send("POST", ACME, employeeBody(local, { license: "gold" })),
        400,
        "Bad Request",
      ),
    ).toContain("gold");
    expect(await countRows("SELECT count(*) AS n FROM person_emails WHERE email = ?", `${local}@acme.example`)).toBe(0);
  });

  it("400 when no seat of the license is free, writing nothing; a concurrent race gives the last seat once", async () => {
    const seats = () =>
      countRows(
        "SELECT (SELECT quantity FROM company_seats WHERE company_id = 1 AND license_id = 'protect') - (SELECT count(*) FROM memberships WHERE company_id = 1 AND license_id = 'protect') AS n",
      );
    // Leave exactly one protect seat free.
    await env.DB.prepare(
      "UPDATE company_seats SET quantity = (SELECT count(*) FROM memberships WHERE company_id = 1 AND license_id = 'protect') + 1 WHERE company_id = 1 AND license_id = 'protect'",
    ).run();
    expect(await seats()).toBe(1);

    const [a, b] = await Promise.all(
      [fresh("race"), fresh("race")].map((local) =>
        as("alice").send("POST", ACME, employeeBody(local, { license: "protect" })),
      ),
    );
    expect([a!.status, b!.status].sort()).toEqual([200, 400]);
    const loser = a!.status === 400 ? a! : b!;
    expect(await expectError(loser, 400, "Bad Request")).toMatch(/no `protect` seat is available/);
    expect(await seats()).toBe(0);

    const local = fresh("noseat");
    const people = await countRows("SELECT count(*) AS n FROM people");
    const response = await as("alice").send("POST", ACME, employeeBody(local, { license: "protect" }));
    expect(await expectError(response, 400, "Bad Request")).toContain("protect");
    expect(await countRows("SELECT count(*) AS n FROM people")).toBe(people);
  });

  it("an ephemeral employee's membership ends 24 hours after creation", async () => {
    const before = Date.now();
    const person = await create(employeeBody(fresh("eph"), { ephemeral: true }));
    const row = await env.DB.prepare("SELECT ephemeral_until AS until FROM memberships WHERE person_id = ?")
      .bind(person.id)
      .first<{ until: number }>();
    expect(row!.until).toBeGreaterThanOrEqual(before + 24 * 3600_000);
    expect(row!.until).toBeLessThanOrEqual(Date.now() + 24 * 3600_000);
  });

  it("`invite` records an invitation for the primary email, valid 7 days", async () => {
    const local = fresh("invite");
    const person = await create(employeeBody(local, { invite: true }));
    const row = await env.DB.prepare("SELECT company_id, email, expires_at FROM invitations WHERE person_id = ?")
      .bind(person.id)
      .first<{ company_id: number; email: string; expires_at: number }>();
    expect(row).toMatchObject({ company_id: 1, email: `${local}@acme.example` });
    expect(row!.expires_at).toBeGreaterThan(Date.now() + 6 * 24 * 3600_000);
    const uninvited = await create(employeeBody(fresh("noinvite")));
    expect(await countRows("SELECT count(*) AS n FROM invitations WHERE person_id = ?", uninvited.id)).toBe(0);
  });

  it("sends person:created to the company's active webhook for it, and only there", async () => {
    await addWebhook(1, "person:created");
    await addWebhook(1, "person:created", false);
    await addWebhook(2, "person:created");
    const person = await create(employeeBody(fresh("hooked")));
    const sent = (await deliveries("person:created")).filter((row) => row.payload.id === person.id);
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatchObject({ company_id: 1, event: "person:created" });
    expect(sent[0]!.payload).toEqual(person);
  });

  it("an HR member cannot hand out a role with permissions they lack (403)", async () => {
    const hr = await create(employeeBody(fresh("hr"), { roles: ["HR"] }));
    const token = `pk_test_hr_${hr.id}_${Date.now()}`;
    await insertToken(token, { personId: hr.id });
    const local = fresh("escalate");
    const denied = await call(ACME, { method: "POST", token, body: employeeBody(local, { roles: ["Admin"] }) });
    expect(await expectError(denied, 403, "Forbidden")).toContain("Admin");
    expect(await countRows("SELECT count(*) AS n FROM person_emails WHERE email = ?", `${local}@acme.example`)).toBe(0);
    const allowed = await call(ACME, { method: "POST", token, body: employeeBody(local, { roles: ["Viewer"] }) });
    expect(allowed.status).toBe(200);
  });

  it("401 without a token, 403 for a Viewer, 404 for another tenant; none writes anything", async () => {
    const local = fresh("denied");
    await expectError(await call(ACME, { method: "POST", body: employeeBody(local) }), 401, "Unauthorized");
    await expectError(await as("bob").send("POST", ACME, employeeBody(local)), 403, "Forbidden");
    await expectError(await as("carol").send("POST", ACME, employeeBody(local)), 404, "Not Found");
    await expectError(await as("alice").send("POST", "/companies/2/employees", employeeBody(local)), 404, "Not Found");
    expect(await countRows("SELECT count(*) AS n FROM person_emails WHERE email = ?", `${local}@acme.example`)).toBe(0);
  });
});

describe("GET /companies/{company_id}/employees", () => {
  it("lists the company's employees by id, as Persons", async () => {
    const response = await as("bob").get(`${ACME}?per_page=2`);
    expect(response.status).toBe(200);
    const list = await answer(response, 200, listEmployees);
    expect(list.map((p) => p.id)).toEqual([DEMO.people.alice, DEMO.people.bob]);
    expect(list[1]).toMatchObject({
      id: 2,
      first_name: "Bob",
      last_name: "Builder",
      display_name: "Bob Builder",
      emails: [{ id: 2, primary: true, email: "bob@acme.example" }],
      phone_numbers: [
        { id: 1, primary: true, country_code: "1", phone_number: "4155550199", phone_full: "+14155550199" },
      ],
      roles: ["Viewer"],
      license: {
        type: "scan",
        price: 0,
        start_date: "2026-01-05T09:00:00.000Z",
        end_date: null,
        renews: 1,
        prorate_on_renewal: 0,
      },
    });
    // Globex's Carol is never listed.
    const all = await answer(await as("alice").get(`${ACME}?per_page=1000`), 200, listEmployees);
    expect(all.map((p) => p.id)).not.toContain(DEMO.people.carol);
  });

  it("`search` matches emails from their start, case-insensitively", async () => {
    const tag = fresh("srch");
    const a = await create(employeeBody(`${tag}-alpha`));
    const b = await create(employeeBody(`${tag}-beta`));
    const c = await create(employeeBody(`z-${tag}-gamma`));
    const found = async (search: string) =>
      (await answer(await as("alice").get(`${ACME}?search=${encodeURIComponent(search)}`), 200, listEmployees)).map(
        (p) => p.id,
      );
    expect(await found(tag)).toEqual([a.id, b.id]);
    expect(await found(`${tag.toUpperCase()}-B`)).toEqual([b.id]);
    expect(await found(`z-${tag}`)).toEqual([c.id]);
    expect(await found(`${tag}-gamma`)).toEqual([]);
    expect(await found("acme.example")).toEqual([]);
    // Only this company's employees, even when another tenant's email matches.
    expect(await found("carol@")).toEqual([]);
  });

  it("`search` ending in the highest code point (U+10FFFF) answers 200, matching only its prefix", async () => {
    const tag = fresh("edge");
    const person = await create(employeeBody(`${tag}-a`));
    const found = async (search: string) => {
      const response = await as("alice").get(`${ACME}?search=${encodeURIComponent(search)}`);
      expect(response.status).toBe(200);
      return (await answer(response, 200, listEmployees)).map((p) => p.id);
    };
    expect(await found(`${tag}\u{10FFFF}`)).toEqual([]);
    expect(await found(`${tag}-\u{10FFFF}\u{10FFFF}`)).toEqual([]);
    expect(await found("\u{10FFFF}")).toEqual([]);
    // The bound after U+D7FF skips the surrogates.
    expect(await found(`${tag}\u{D7FF}`)).toEqual([]);
    expect(await found(`${tag}-`)).toEqual([person.id]);
  });

  it("pages with X-Total-Count and Link headers", async () => {
    const total = await countRows("SELECT count(*) AS n FROM memberships WHERE company_id = 1");
    const response = await as("alice").get(`${ACME}?page=2&per_page=1`);
    expect(response.status).toBe(200);
    expect(response.headers.get("X-Total-Count")).toBe(String(total));
    const link = response.headers.get("Link")!;
    expect(link).toContain('page=1&per_page=1>; rel="prev"');
    expect(link).toContain('page=3&per_page=1>; rel="next"');
    expect(link).toContain(`page=${total}&per_page=1>; rel="last"`);
    const page = await answer(response, 200, listEmployees);
    expect(page.map((p) => p.id)).toEqual([DEMO.people.bob]);

    await expectError(await as("alice").get(`${ACME}?per_page=1001`), 400, "Bad Request");
    await expectError(await as("alice").get(`${ACME}?page=0`), 400, "Bad Request");
  });

  it("401 without a token, 404 for another tenant", async () => {
    await expectError(await call(ACME), 401, "Unauthorized");
    await expectError(await as("carol").get(ACME), 404, "Not Found");
  });
});

describe("GET /companies/{company_id}/employees/{id}", () => {
  it("reads one employee, with every field present", async () => {
    const response = await as("bob").get(`${ACME}/1`);
    expect(response.status).toBe(200);
    const alice = await answer(response, 200, getEmployee);
    expect(Object.keys(alice).sort()).toEqual(
      [
        "id",
        "first_name",
        "middle_name",
        "last_name",
        "display_name",
        "dob",
        "akas",
        "addresses",
        "emails",
        "phone_numbers",
        "last_scan_at",
        "license",
        "roles",
        "risk_score",
        "exposures",
        "last_login",
        "created_at",
      ].sort(),
    );
    expect(alice).toMatchObject({
      id: 1,
      middle_name: null,
      roles: ["Admin"],
      license: { type: "protect", price: 9900 },
    });
  });

  it("404 for another tenant's employee, an unknown id, and for a non-member caller", async () => {
    expect(await expectError(await as("alice").get(`${ACME}/${DEMO.people.carol}`), 404, "Not Found")).toContain(
      "employee 3",
    );
    await expectError(await as("alice").get(`${ACME}/999999`), 404, "Not Found");
    await expectError(await as("carol").get(`${ACME}/1`), 404, "Not Found");
    await expectError(await as("alice").get(`${ACME}/abc`), 404, "Not Found");
  });
});

describe("PUT /companies/{company_id}/employees/{id}", () => {
  it("changes only the fields given and replaces whole collections", async () => {
    const local = fresh("put");
    const person = await create(
      employeeBody(local, {
        middle_name: "K",
        akas: [{ first_name: "Old", last_name: "Alias" }],
        phone_numbers: [
          { country_code: "1", phone_number: "4155550101" },
          { country_code: "1", phone_number: "4155550102" },
        ],
        addresses: [employeeAddress, { ...employeeAddress, line_1: "2 Main St" }],
      }),
    );

    const response = await as("alice").send("PUT", `${ACME}/${person.id}`, {
      first_name: " Fox ",
      middle_name: null,
      akas: [],
      phone_numbers: [{ country_code: "US", phone_number: "2125550100" }],
    });
    expect(response.status).toBe(200);
    const updated = await answer(response, 200, updateEmployee);
    expect(updated).toMatchObject({
      id: person.id,
      first_name: "Fox",
      middle_name: null,
      last_name: "Scully",
      display_name: "Fox Scully",
      dob: "1988-04-12",
      akas: [],
      phone_numbers: [{ primary: true, country_code: "1", phone_number: "2125550100", phone_full: "+12125550100" }],
      emails: person.emails,
      addresses: person.addresses,
      roles: ["HR"],
      license: person.license,
    });
    expect(await (await as("alice").get(`${ACME}/${person.id}`)).json()).toEqual(updated);
    expect(await countRows("SELECT count(*) AS n FROM person_phones WHERE person_id = ?", person.id)).toBe(1);
    expect(await countRows("SELECT count(*) AS n FROM person_akas WHERE person_id = ?", person.id)).toBe(0);

    const cleared = await answer(
      await as("alice").send("PUT", `${ACME}/${person.id}`, { addresses: [], phone_numbers: [] }),
      200,
      updateEmployee,
    );
    expect(cleared.addresses).toEqual([]);
    expect(cleared.phone_numbers).toEqual([]);
  });

  it("`email` and `emails` both replace the company's emails; the person's own email stays", async () => {
    const local = fresh("mail");
    const person = await create(employeeBody(local));
    await env.DB.prepare('INSERT INTO person_emails (person_id, email, "primary") VALUES (?, ?, 0)')
      .bind(person.id, `${local}@own.example`)
      .run();

    const viaEmail = await as("alice").send("PUT", `${ACME}/${person.id}`, {
      email: [{ email: `${local}.new@acme.example` }],
    });
    expect(viaEmail.status).toBe(200);
    expect((await answer(viaEmail, 200, updateEmployee)).emails.map((e) => [e.email, e.primary])).toEqual([
      [`${local}@own.example`, false],
      [`${local}.new@acme.example`, true],
    ]);

    const viaEmails = await as("alice").send("PUT", `${ACME}/${person.id}`, {
      emails: [{ email: `${local}.other@acme.example` }, { email: `${local}@own.example`, primary: true }],
    });
    expect((await answer(viaEmails, 200, updateEmployee)).emails.map((e) => [e.email, e.primary])).toEqual([
      [`${local}@own.example`, true],
      [`${local}.other@acme.example`, false],
    ]);
    expect(
      await countRows("SELECT count(*) AS n FROM person_emails WHERE email = ?", `${local}.new@acme.example`),
    ).toBe(0);

    await expectError(
      await as("alice").send("PUT", `${ACME}/${person.id}`, { email: [{ email: "a@x.example" }], emails: [] }),
      400,
      "Bad Request",
    );
  });

  it("400 for an email of another person, writing nothing", async () => {
    const person = await create(employeeBody(fresh("dup")));
    const response = await as("alice").send("PUT", `${ACME}/${person.id}`, {
      first_name: "Changed",
      emails: [{ email: "bob@acme.example" }],
    });
    expect(await expectError(response, 400, "Bad Request")).toContain("bob@acme.example");
    expect(await (await as("alice").get(`${ACME}/${person.id}`)).json()).toEqual(person);
  });

  it("assigns and replaces the license with seat checks; null frees the seat", async () => {
    const person = await create(employeeBody(fresh("lic"), { license: null }));
    const protectAssigned = () =>
      countRows("SELECT count(*) AS n FROM memberships WHERE company_id = 1 AND license_id = 'protect'");
    await env.DB.prepare(
      "UPDATE company_seats SET quantity = 100 WHERE company_id = 1 AND license_id = 'protect'",
    ).run();

    const before = await protectAssigned();
    const assigned = await answer(
      await as("alice").send("PUT", `${ACME}/${person.id}`, { license: "Protect" }),
      200,
      updateEmployee,
    );
    expect(assigned.license).toMatchObject({ type: "protect", price: 9900, end_date: null });
    expect(await protectAssigned()).toBe(before + 1);

    const replaced = await answer(
      await as("alice").send("PUT", `${ACME}/${person.id}`, { license: "scan" }),
      200,
      updateEmployee,
    );
    expect(replaced.license).toMatchObject({ type: "scan", price: 0 });
    expect(await protectAssigned()).toBe(before);

    // No protect seat left: 400 and the scan license stays.
    await env.DB.prepare(
      "UPDATE company_seats SET quantity = (SELECT count(*) FROM memberships WHERE company_id = 1 AND license_id = 'protect') WHERE company_id = 1 AND license_id = 'protect'",
    ).run();
    const denied = await as("alice").send("PUT", `${ACME}/${person.id}`, { license: "protect", last_name: "Nope" });
    expect(await expectError(denied, 400, "Bad Request")).toContain("no `protect` seat is available");
    expect(await (await as("alice").get(`${ACME}/${person.id}`)).json()).toEqual(replaced);

    const freed = await answer(
      await as("alice").send("PUT", `${ACME}/${person.id}`, { license: null }),
      200,
      updateEmployee,
    );
    expect(freed.license).toBeNull();
  });

  it("replaces roles and sends person:updated", async () => {
    await addWebhook(1, "person:updated");
    const person = await create(employeeBody(fresh("roles")));
    const updated = await answer(
      await as("alice").send("PUT", `${ACME}/${person.id}`, { roles: ["Viewer"] }),
      200,
      updateEmployee,
    );
    expect(updated.roles).toEqual(["Viewer"]);
    const sent = (await deliveries("person:updated")).filter((row) => row.payload.id === person.id);
    expect(sent.map((row) => row.payload)).toEqual([updated]);
  });

  it("a PUT that changes nothing (the values it has now, its license, its roles) writes nothing and sends no person:updated", async () => {
    await addWebhook(1, "person:updated");
    const local = fresh("unchanged");
    const input = employeeBody(local, {
      license: "scan",
      roles: ["Viewer"],
      phone_numbers: [{ primary: true, country_code: "+1", phone_number: "4155550177" }],
      akas: [{ first_name: "Dee", middle_name: null, last_name: null }],
    });
    const person = await create(input);
    const updatedAt = () => countRows("SELECT updated_at AS n FROM people WHERE id = ?", person.id);
    const before = await updatedAt();
    const events = async () => (await deliveries("person:updated")).filter((row) => row.payload.id === person.id);
    for (const body of [
      input,
      { license: "scan" },
      { roles: ["viewer"] },
      { emails: [{ email: `${local}@acme.example` }] },
    ]) {
      const same = await answer(await as("alice").send("PUT", `${ACME}/${person.id}`, body), 200, updateEmployee);
      expect(same).toEqual(await answer(await as("alice").get(`${ACME}/${person.id}`), 200, getEmployee));
    }
    expect(await events()).toEqual([]);
    expect(await updatedAt()).toBe(before);
    // A change among unchanged values is one.
    const changed = await answer(
      await as("alice").send("PUT", `${ACME}/${person.id}`, { ...input, last_name: "Changed" }),
      200,
      updateEmployee,
    );
    expect(changed.last_name).toBe("Changed");
    expect((await events()).map((row) => row.payload)).toEqual([changed]);
  });

  it("400 for a body that names no field", async () => {
    expect(
      await expectError(await as("alice").send("PUT", `${ACME}/2`, { nickname: "x" }), 400, "Bad Request"),
    ).toContain("no field");
  });

  it("404 for another tenant's employee, 403 for a Viewer, 401 without a token; nothing changes", async () => {
    await expectError(
      await as("alice").send("PUT", `${ACME}/${DEMO.people.carol}`, { first_name: "X" }),
      404,
      "Not Found",
    );
    await expectError(await as("carol").send("PUT", `${ACME}/2`, { first_name: "X" }), 404, "Not Found");
    await expectError(await as("bob").send("PUT", `${ACME}/2`, { first_name: "X" }), 403, "Forbidden");
    await expectError(await call(`${ACME}/2`, { method: "PUT", body: { first_name: "X" } }), 401, "Unauthorized");
    expect(await countRows("SELECT count(*) AS n FROM people WHERE first_name = 'X'")).toBe(0);
  });
});

describe("DELETE /companies/{company_id}/employees/{id}", () => {
  it("removes an account that holds only employer emails entirely, and sends person:removed", async () => {
    await addWebhook(1, "person:removed");
    const person = await create(employeeBody(fresh("gone"), { license: "scan" }));
    const seatsBefore = await countRows(
      "SELECT count(*) AS n FROM memberships WHERE company_id = 1 AND license_id = 'scan'",
    );

    const response = await as("alice").send("DELETE", `${ACME}/${person.id}`);
    expect(response.status).toBe(204);
    expect(await response.text()).toBe("");
    await expectError(await as("alice").get(`${ACME}/${person.id}`), 404, "Not Found");
    expect(await countRows("SELECT count(*) AS n FROM people WHERE id = ?", person.id)).toBe(0);
    expect(await countRows("SELECT count(*) AS n FROM memberships WHERE company_id = 1 AND license_id = 'scan'")).toBe(
      seatsBefore - 1,
    );
    const sent = (await deliveries("person:removed")).filter((row) => row.payload.id === person.id);
    expect(sent).toEqual([{ company_id: 1, event: "person:removed", payload: { id: person.id } }]);

    await expectError(await as("alice").send("DELETE", `${ACME}/${person.id}`), 404, "Not Found");
  });

  it("keeps an account with the person's own email, removing only the employer emails and the membership", async () => {
    const local = fresh("stays");
    const person = await create(employeeBody(local));
    await env.DB.prepare('INSERT INTO person_emails (person_id, email, "primary") VALUES (?, ?, 0)')
      .bind(person.id, `${local}@own.example`)
      .run();

    expect((await as("alice").send("DELETE", `${ACME}/${person.id}`)).status).toBe(204);
    await expectError(await as("alice").get(`${ACME}/${person.id}`), 404, "Not Found");
    expect(await countRows("SELECT count(*) AS n FROM people WHERE id = ?", person.id)).toBe(1);
    expect(await countRows("SELECT count(*) AS n FROM memberships WHERE person_id = ?", person.id)).toBe(0);
    const { results } = await env.DB.prepare("SELECT email FROM person_emails WHERE person_id = ?")
      .bind(person.id)
      .all<{ email: string }>();
    expect(results).toEqual([{ email: `${local}@own.example` }]);
  });

  it("404 for another tenant's employee, 403 for a Viewer; nothing is removed", async () => {
    await expectError(await as("alice").send("DELETE", `${ACME}/${DEMO.people.carol}`), 404, "Not Found");
    await expectError(await as("carol").send("DELETE", `${ACME}/2`), 404, "Not Found");
    await expectError(await as("bob").send("DELETE", `${ACME}/1`), 403, "Forbidden");
    await expectError(await call(`${ACME}/2`, { method: "DELETE" }), 401, "Unauthorized");
    expect(await countRows("SELECT count(*) AS n FROM memberships WHERE person_id IN (1, 2, 3)")).toBe(3);
  });
});

describe("hourly purge of ephemeral employees", () => {
  it("removes them after 24 hours and sends person:removed", async () => {
    await addWebhook(1, "person:removed");
    const person = await create(employeeBody(fresh("purged"), { ephemeral: true }));
    const ctx = createExecutionContext();
    await worker.scheduled!(
      createScheduledController({ cron: "0 * * * *", scheduledTime: Date.now() + 25 * 3600_000 }),
      env,
      ctx,
    );
    await waitOnExecutionContext(ctx);
    await expectError(await as("alice").get(`${ACME}/${person.id}`), 404, "Not Found");
    const sent = (await deliveries("person:removed")).filter((row) => row.payload.id === person.id);
    expect(sent).toEqual([{ company_id: 1, event: "person:removed", payload: { id: person.id } }]);
  });
});
