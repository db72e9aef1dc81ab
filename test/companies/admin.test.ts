import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import {
  addMember,
  configureContainer,
  createCompany as createCompanyRoute,
} from "../../src/routes/admin/admin.routes";
import { heartbeat } from "../../src/routes/buzz/buzz.routes";
import { listSites } from "../../src/routes/companies/companies.routes";
import { addCompanyPhone } from "../../src/routes/companies/phones.routes";
import { createEmployee } from "../../src/routes/employees/employees.routes";
import { loadContainer } from "../../src/routes/vcc/vcc.routes";
import { answer, as, call, DEMO, expectError, indexWorkApplied, insertToken } from "../helpers";

const ADMIN = `sk_test_platform_admin_${crypto.randomUUID().replaceAll("-", "")}`;
const run = crypto.randomUUID().slice(0, 8);
/** A slug (and email part) unique to this run, so reruns never collide. */
const unique = (tag: string) => `${tag}-${run}`;

beforeAll(async () => {
  await insertToken(ADMIN, { serviceName: "operator", scopes: ["platform:admin"] });
});

const admin = (method: string, path: string, body?: unknown) => call(path, { method, body, token: ADMIN });

async function createCompany(body: Record<string, unknown>) {
  return answer(await admin("POST", "/internal/companies", body), 201, createCompanyRoute);
}

async function seat(companyId: number, body: Record<string, unknown>): Promise<number> {
  const response = await admin("POST", `/internal/companies/${companyId}/members`, body);
  const { person_id } = await answer(response, 201, addMember);
  return person_id;
}

describe("who may call the platform admin endpoints", () => {
  const routes: [string, string, unknown][] = [
    ["POST", "/internal/companies", { kind: "employer", name: "X", slug: "x-forbidden" }],
    ["PATCH", "/internal/companies/1", { name: "X" }],
    [
      "POST",
      "/internal/companies/1/members",
      { first_name: "A", last_name: "B", email: "a@b.example", roles: ["Admin"] },
    ],
    ["PUT", "/internal/containers/dailynews", { enabled: true, vendors: [] }],
  ];

  it.each(routes)("%s %s: 401 without a token, 403 for a person token or another scope", async (method, path, body) => {
    await expectError(await call(path, { method, body }), 401, "Unauthorized");
    await expectError(await as("alice").send(method, path, body), 403, "Forbidden");
    await expectError(await as("telephony").send(method, path, body), 403, "Forbidden");
    await expectError(await as("scanner").send(method, path, body), 403, "Forbidden");
    const row = await env.DB.prepare("SELECT count(*) AS n FROM companies WHERE slug = 'x-forbidden'").first<{
      n: number;
    }>();
    expect(row!.n).toBe(0);
  });
});

describe("POST /internal/companies", () => {
  it("creates an employer with the default roles", async () => {
    const company = await createCompany({
      kind: "employer",
      name: " Initech ",
      slug: unique("initech"),
      url: "https://initech.example",
    });
    expect(company).toEqual({
      id: expect.any(Number),
      kind: "employer",
      name: "Initech",
      slug: unique("initech"),
      status: "enabled",
      url: "https://initech.example",
      logo: "",
      domain: null,
      scanner: false,
      profile_url: null,
    });
    const { results } = await env.DB.prepare("SELECT name FROM roles WHERE company_id = ? ORDER BY id")
      .bind(company.id)
      .all<{ name: string }>();
    expect(results.map((row) => row.name)).toEqual(["Admin", "HR", "Viewer"]);
  });

  it("creates a site, a publisher and a vendor with their own fields, and no roles", async () => {
    const site = await createCompany({ kind: "site", name: "Snoop", slug: unique("snoop"), scanner: true });
    expect(site).toMatchObject({ kind: "site", scanner: true });
    const publisher = await createCompany({
      kind: "publisher",
      name: "Gazette",
      slug: unique("gazette"),
      domain: "Gazette.Example",
    });
    expect(publisher).toMatchObject({ kind: "publisher", domain: "gazette.example" });
    const vendor = await createCompany({
      kind: "vendor",
      name: "Pixely",
      slug: unique("pixely"),
      logo: "https://pixely.example/logo.png",
      profile_url: "https://trust.example/vendors/pixely",
    });
    expect(vendor).toMatchObject({
      kind: "vendor",
      logo: "https://pixely.example/logo.png",
      profile_url: "https://trust.example/vendors/pixely",
    });
    const row = await env.DB.prepare("SELECT count(*) AS n FROM roles WHERE company_id IN (?, ?, ?)")
      .bind(site.id, publisher.id, vendor.id)
      .first<{ n: number }>();
    expect(row!.n).toBe(0);
    // The new site is listed to every tenant.
    const sites = await answer(await as("bob").get("/companies/1/sites"), 200, listSites);
    expect(sites.map((s) => s.id)).toContain(site.id);
  });

  it("answers 409 for a slug any company already has, and writes nothing", async () => {
    const message = await expectError(
      await admin("POST", "/internal/companies", { kind: "vendor", name: "Acme again", slug: "acme" }),
      409,
      "Conflict",
    );
    expect(message).toContain("acme");
    const row = await env.DB.prepare("SELECT count(*) AS n FROM companies WHERE slug = 'acme'").first<{ n: number }>();
    expect(row!.n).toBe(1);
  });

  it("answers 400 naming the field: unknown kind, bad slug, a field of another kind, a bad URL", async () => {
    const cases: [unknown, string][] = [
      [{ kind: "bank", name: "B", slug: unique("bank") }, "`kind`"],
      [{ kind: "employer", name: "B", slug: "Not a slug!" }, "`slug`"],
      [{ kind: "employer", name: "", slug: unique("b") }, "`name`"],
      [
        { kind: "employer", name: "B", slug: unique("b"), domain: "b.example" },
        "`domain` is only for companies of kind `publisher`",
      ],
      [{ kind: "publisher", name: "B", slug: unique("b"), scanner: true }, "`scanner`"],
      [{ kind: "site", name: "B", slug: unique("b"), url: "ftp://b.example" }, "`url`"],
      [{ kind: "employer", slug: unique("b") }, "`name` is required"],
    ];
    for (const [body, field] of cases) {
      const message = await expectError(await admin("POST", "/internal/companies", body), 400, "Bad Request");
      expect(message).toContain(field);
    }
  });
});

describe("PATCH /internal/companies/{id}", () => {
  it("changes only the fields given, and disables and enables a company", async () => {
    const company = await createCompany({
      kind: "site",
      name: "Lookup",
      slug: unique("lookup"),
      url: "https://lookup.example",
    });
    const patch = (body: unknown) => admin("PATCH", `/internal/companies/${company.id}`, body);
    let response = await patch({ status: "disabled", scanner: true });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({
      name: "Lookup",
      url: "https://lookup.example",
      status: "disabled",
      scanner: true,
    });
    response = await patch({ status: "enabled", name: "Lookup Pro", logo: null });
    expect(await response.json()).toMatchObject({ name: "Lookup Pro", status: "enabled", logo: "" });
  });

  it("answers 404 for an unknown company and 400 for nothing to change or a field of another kind", async () => {
    await expectError(await admin("PATCH", "/internal/companies/999999", { name: "X" }), 404, "Not Found");
    expect(await expectError(await admin("PATCH", "/internal/companies/1", {}), 400, "Bad Request")).toContain(
      "at least one",
    );
    expect(
      await expectError(await admin("PATCH", "/internal/companies/1", { domain: "acme.example" }), 400, "Bad Request"),
    ).toContain("`domain`");
    await expectError(await admin("PATCH", "/internal/companies/1", { status: "paused" }), 400, "Bad Request");
  });

  it("a disabled employer is a 403 for its members until it is enabled again; their own account keeps working", async () => {
    const company = await createCompany({ kind: "employer", name: "Paused", slug: unique("paused") });
    const memberId = await seat(company.id, {
      first_name: "Pat",
      last_name: "Paused",
      email: `pat.${run}@paused.example`,
      roles: ["Admin"],
    });
    const token = `pk_test_paused_${run}_${crypto.randomUUID().replaceAll("-", "")}`;
    await insertToken(token, { personId: memberId });
    const asMember = (path: string) => call(path, { token });
    expect((await asMember(`/companies/${company.id}`)).status).toBe(200);

    expect((await admin("PATCH", `/internal/companies/${company.id}`, { status: "disabled" })).status).toBe(200);
    for (const path of [
      `/companies/${company.id}`,
      `/companies/${company.id}/employees`,
      `/companies/${company.id}/webhooks`,
    ]) {
      expect(await expectError(await asMember(path), 403, "Forbidden")).toContain(`company ${company.id} is disabled`);
    }
    // Not a member: still 404, disabled or not (nothing is revealed about other tenants).
    await expectError(await as("alice").get(`/companies/${company.id}`), 404, "Not Found");
    // The person's own account is not the company's: their heartbeat still works.
    expect((await asMember("/apps/buzz/heartbeat")).status).toBe(200);

    expect((await admin("PATCH", `/internal/companies/${company.id}`, { status: "enabled" })).status).toBe(200);
    expect((await asMember(`/companies/${company.id}/employees`)).status).toBe(200);
  });

  it("a disabled publisher's container answers 404 to visitors", async () => {
    await createCompany({ kind: "publisher", name: "Toggle", slug: unique("toggle"), domain: "toggle.example" });
    const id = (await env.DB.prepare("SELECT id FROM companies WHERE slug = ?")
      .bind(unique("toggle"))
      .first<{ id: number }>())!.id;
    expect(
      (await admin("PUT", `/internal/containers/${unique("toggle")}`, { enabled: true, vendors: [] })).status,
    ).toBe(200);
    expect((await call(`/apps/vcc/load_container/${unique("toggle")}`)).status).toBe(200);
    expect((await admin("PATCH", `/internal/companies/${id}`, { status: "disabled" })).status).toBe(200);
    expect((await call(`/apps/vcc/load_container/${unique("toggle")}`)).status).toBe(404);
  });
});

describe("POST /internal/companies/{id}/members", () => {
  it("creates a person, links an existing one by email, and refuses a second seat (409)", async () => {
    const company = await createCompany({ kind: "employer", name: "Seats", slug: unique("seats") });
    const personId = await seat(company.id, {
      first_name: "Sam",
      last_name: "Seat",
      email: ` Sam.${run}@Seats.example `,
      roles: ["admin"],
    });
    const roles = await env.DB.prepare(
      "SELECT r.name FROM memberships m JOIN membership_roles mr ON mr.membership_id = m.id JOIN roles r ON r.id = mr.role_id WHERE m.company_id = ? AND m.person_id = ?",
    )
      .bind(company.id, personId)
      .all<{ name: string }>();
    expect(roles.results.map((row) => row.name)).toEqual(["Admin"]);

    // Bob (Acme) is linked by his email: the same person, now also in this company.
    const bob = await seat(company.id, {
      first_name: "Robert",
      last_name: "B",
      email: "bob@acme.example",
      roles: ["Viewer"],
    });
    expect(bob).toBe(DEMO.people.bob);
    const name = await env.DB.prepare("SELECT first_name FROM people WHERE id = ?")
      .bind(bob)
      .first<{ first_name: string }>();
    expect(name!.first_name).toBe("Bob");

    const again = admin("POST", `/internal/companies/${company.id}/members`, {
      first_name: "Sam",
      last_name: "Seat",
      email: `sam.${run}@seats.example`,
      roles: ["HR"],
    });
    expect(await expectError(await again, 409, "Conflict")).toContain(`person ${personId}`);
  });

  it("answers 404 for an unknown company, 400 for a non-employer, an unknown role or a bad email", async () => {
    const member = { first_name: "N", last_name: "O", email: `no.${run}@nowhere.example`, roles: ["Admin"] };
    await expectError(await admin("POST", "/internal/companies/999999/members", member), 404, "Not Found");
    expect(
      await expectError(
        await admin("POST", `/internal/companies/${DEMO.companies.dailyNews}/members`, member),
        400,
        "Bad Request",
      ),
    ).toContain("only employers");
    expect(
      await expectError(
        await admin("POST", "/internal/companies/1/members", { ...member, roles: ["Owner"] }),
        400,
        "Bad Request",
      ),
    ).toContain('"Owner"');
    expect(
      await expectError(
        await admin("POST", "/internal/companies/1/members", { ...member, email: "nope" }),
        400,
        "Bad Request",
      ),
    ).toContain("`email`");
    expect(
      await expectError(
        await admin("POST", "/internal/companies/1/members", { ...member, roles: [] }),
        400,
        "Bad Request",
      ),
    ).toContain("`roles`");
    const row = await env.DB.prepare("SELECT count(*) AS n FROM person_emails WHERE email = ?")
      .bind(member.email)
      .first<{ n: number }>();
    expect(row!.n).toBe(0);
  });
});

describe("PUT /internal/containers/{publisher_slug}", () => {
  it("creates and replaces a container; load_container shows it at once, in the given order", async () => {
    const slug = unique("herald");
    await createCompany({
      kind: "publisher",
      name: "Herald",
      slug,
      domain: "herald.example",
      logo: "https://herald.example/l.png",
    });
    let response = await admin("PUT", `/internal/containers/${slug}`, {
      enabled: true,
      vendors: [
        { slug: "pixelpartners", category: "social" },
        { slug: "admetrics", category: "analytics" },
      ],
    });
    expect(response.status).toBe(200);
    const configured = await answer(response, 200, configureContainer);
    expect(configured).toMatchObject({
      is_authenticated: false,
      enabled: true,
      company: { slug, name: "Herald", domain: "herald.example", logo: "https://herald.example/l.png" },
    });
    expect(configured.vendors.map((v) => v.slug)).toEqual(["pixelpartners", "admetrics"]);
    const loaded = await answer(await call(`/apps/vcc/load_container/${slug}`), 200, loadContainer);
    expect(loaded.vendors).toEqual(configured.vendors);

    response = await admin("PUT", `/internal/containers/${slug}`, {
      enabled: true,
      vendors: [{ slug: "trackbuddy", category: "ads" }],
    });
    expect((await answer(response, 200, configureContainer)).vendors).toMatchObject([
      { slug: "trackbuddy", category: "ads" },
    ]);
    const reloaded = await answer(await call(`/apps/vcc/load_container/${slug}`), 200, loadContainer);
    expect(reloaded.vendors.map((v) => v.slug)).toEqual(["trackbuddy"]);

    // Without `vendors`, only `enabled` changes: disabled and enabled again, it still lists trackbuddy.
    response = await admin("PUT", `/internal/containers/${slug}`, { enabled: false });
    expect((await answer(response, 200, configureContainer)).vendors.map((v) => v.slug)).toEqual(["trackbuddy"]);
    expect((await call(`/apps/vcc/load_container/${slug}`)).status).toBe(404);
    response = await admin("PUT", `/internal/containers/${slug}`, { enabled: true });
    expect((await answer(response, 200, configureContainer)).enabled).toBe(true);
    const kept = await answer(await call(`/apps/vcc/load_container/${slug}`), 200, loadContainer);
    expect(kept.vendors.map((v) => v.slug)).toEqual(["trackbuddy"]);

    response = await admin("PUT", `/internal/containers/${slug}`, { enabled: false, vendors: [] });
    expect(await response.json()).toMatchObject({ enabled: false, vendors: [] });
    expect((await call(`/apps/vcc/load_container/${slug}`)).status).toBe(404);
  });

  it("answers 404 for a slug that is not a publisher and 400 for an unknown or repeated vendor", async () => {
    await expectError(
      await admin("PUT", "/internal/containers/acme", { enabled: true, vendors: [] }),
      404,
      "Not Found",
    );
    await expectError(
      await admin("PUT", "/internal/containers/nobody-here", { enabled: true, vendors: [] }),
      404,
      "Not Found",
    );
    const unknown = await admin("PUT", "/internal/containers/dailynews", {
      enabled: true,
      vendors: [
        { slug: "admetrics", category: "a" },
        { slug: "acme", category: "b" },
        { slug: "ghost", category: "c" },
      ],
    });
    const message = await expectError(unknown, 400, "Bad Request");
    expect(message).toContain('"acme"');
    expect(message).toContain('"ghost"');
    const twice = admin("PUT", "/internal/containers/dailynews", {
      enabled: true,
      vendors: [
        { slug: "admetrics", category: "a" },
        { slug: "admetrics", category: "b" },
      ],
    });
    expect(await expectError(await twice, 400, "Bad Request")).toContain("`vendors[1].slug` is listed twice");
    await expectError(await admin("PUT", "/internal/containers/dailynews", { vendors: [] }), 400, "Bad Request");
    // Nothing changed: the demo container still lists its three vendors.
    const loaded = await answer(await call("/apps/vcc/load_container/dailynews"), 200, loadContainer);
    expect(loaded.vendors).toHaveLength(3);
  });
});

describe("a company created through the API is a working tenant", () => {
  it("its seated Admin manages employees, webhooks and phones, and trust-lookup trusts its phones for its members", async () => {
    const company = await createCompany({
      kind: "employer",
      name: "Umbrella",
      slug: unique("umbrella"),
      url: "https://umbrella.example",
    });
    const adminId = await seat(company.id, {
      first_name: "Ada",
      last_name: "Umbrella",
      email: `ada.${run}@umbrella.example`,
      roles: ["Admin"],
    });
    const adminToken = `pk_test_umbrella_admin_${run}_${crypto.randomUUID().replaceAll("-", "")}`;
    await insertToken(adminToken, { personId: adminId });
    const asAdmin = (method: string, path: string, body?: unknown) => call(path, { method, body, token: adminToken });

    const read = await asAdmin("GET", `/companies/${company.id}`);
    expect(read.status).toBe(200);
    expect(await read.json()).toMatchObject({ id: company.id, name: "Umbrella" });

    const seats = await asAdmin("POST", `/companies/${company.id}/licenses`, [{ id: "scan", quantity: 5 }]);
    expect(seats.status, await seats.clone().text()).toBeLessThan(300);
    const employee = await asAdmin("POST", `/companies/${company.id}/employees`, {
      first_name: "Eve",
      last_name: "Employee",
      dob: "1990-01-01",
      emails: [{ email: `eve.${run}@umbrella.example` }],
      addresses: [{ line_1: "1 Main St", city: "San Francisco", region: "CA", postal_code: "94105", country: "US" }],
      roles: ["Viewer"],
    });
    expect(employee.status, await employee.clone().text()).toBe(200);
    const { id: eveId } = await answer(employee, 200, createEmployee);

    const webhook = await asAdmin("POST", `/companies/${company.id}/webhooks`, {
      endpoint: "https://hooks.umbrella.example/p",
      event: "person:created",
    });
    expect(webhook.status, await webhook.clone().text()).toBe(201);

    // A number only this test uses: +1 415 555 0142 … per run it is the same, per company unique.
    const phone = await asAdmin("POST", `/companies/${company.id}/phones`, {
      phone_full: "+14155550142",
      label: "Front desk",
    });
    expect(phone.status, await phone.clone().text()).toBe(201);
    // Pending until the operator verifies it (docs/decisions.md, "Company phones").
    const verified = await admin(
      "POST",
      `/internal/company-phones/${(await answer(phone.clone(), 201, addCompanyPhone)).id}/verify`,
    );
    expect(verified.status).toBe(200);

    // Both members get a secure number; the pool may be spent by other tests of this file, so top it up.
    await env.DB.prepare(
      `INSERT OR IGNORE INTO secure_numbers (e164, country_code, number, created_at)
       VALUES ('+12025550901', '1', '2025550901', 0), ('+12025550902', '1', '2025550902', 0)`,
    ).run();
    for (const [personId, token] of [
      [adminId, adminToken],
      [eveId, `pk_test_umbrella_eve_${run}_${crypto.randomUUID().replaceAll("-", "")}`],
    ] as const) {
      if (personId !== adminId) await insertToken(token, { personId });
      const { secure_number } = await answer(await call("/apps/buzz/heartbeat", { token }), 200, heartbeat);
      const lookup = (inbound: string) =>
        as("telephony").get(
          `/apps/buzz/trust-lookup?${new URLSearchParams({
            number_code: secure_number!.country_code,
            number: secure_number!.number,
            inbound_code: "1",
            inbound,
          })}`,
        );
      expect(await (await lookup("4155550142")).json()).toEqual({
        trusted: true,
        user_id: personId,
        caller_verification: null,
      });
      // Acme's phone is not theirs: not trusted.
      expect(await (await lookup("4155550100")).json()).toMatchObject({ trusted: false });
    }
  });
});

describe("heartbeat: last_coworker_update follows the other members, read from the company's roster", () => {
  it("a member's own change moves their coworkers' time, not their own; a new coworker moves everyone's", async () => {
    const company = await createCompany({ kind: "employer", name: "Roster", slug: unique("roster") });
    const tokens: Record<string, string> = {};
    const ids: Record<string, number> = {};
    for (const name of ["ann", "ben"]) {
      ids[name] = await seat(company.id, {
        first_name: name,
        last_name: "Roster",
        email: `${name}.${run}@roster.example`,
        roles: ["Admin"],
      });
      tokens[name] = `pk_test_roster_${name}_${run}_${crypto.randomUUID().replaceAll("-", "")}`;
      await insertToken(tokens[name]!, { personId: ids[name] });
    }
    const coworkerTime = async (name: string) => {
      const beat = await call("/apps/buzz/heartbeat", { token: tokens[name]! });
      expect(beat.status).toBe(200);
      return (await answer(beat, 200, heartbeat)).last_coworker_update;
    };
    const [ann0, ben0] = [await coworkerTime("ann"), await coworkerTime("ben")];
    expect(ann0).not.toBeNull();
    expect(ben0).not.toBeNull();

    await scheduler.wait(5);
    const renamed = await call(`/companies/${company.id}/employees/${ids.ann}`, {
      method: "PUT",
      body: { middle_name: "A" },
      token: tokens.ann!,
    });
    expect(renamed.status).toBe(200);
    // The company's `co:` record was written within the second before: its change waits that second out.
    await indexWorkApplied();
    // Ann's own change: her coworker time stays; Ben's moves.
    expect(await coworkerTime("ann")).toBe(ann0);
    const ben1 = await coworkerTime("ben");
    expect(Date.parse(ben1!)).toBeGreaterThan(Date.parse(ben0!));

    await scheduler.wait(5);
    await call(`/companies/${company.id}/licenses`, {
      method: "POST",
      body: [{ id: "scan", quantity: 1 }],
      token: tokens.ben!,
    });
    const joined = await call(`/companies/${company.id}/employees`, {
      method: "POST",
      token: tokens.ben!,
      body: {
        first_name: "Cal",
        last_name: "Roster",
        dob: "1990-01-01",
        emails: [{ email: `cal.${run}@roster.example` }],
        addresses: [{ line_1: "1 Main St", city: "San Francisco", region: "CA", postal_code: "94105", country: "US" }],
        license: null,
      },
    });
    expect(joined.status, await joined.clone().text()).toBe(200);
    await indexWorkApplied();
    // A new coworker: both see it.
    expect(Date.parse((await coworkerTime("ann"))!)).toBeGreaterThan(Date.parse(ann0!));
    expect(Date.parse((await coworkerTime("ben"))!)).toBeGreaterThan(Date.parse(ben1!));
  });
});
