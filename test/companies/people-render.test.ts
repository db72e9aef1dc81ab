import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { createDb } from "../../src/db/client";
import {
  exposures,
  membershipRoles,
  memberships,
  people,
  personAddresses,
  personAkas,
  personEmails,
  personPhones,
  scanResults,
} from "../../src/db/schema";
import { createDeps } from "../../src/services/create-deps";
import { loadPeople, type PersonBody } from "../../src/services/people";
import { as, fresh } from "../helpers";
import { employeeListCache } from "../../src/services/employees/list";
import { objectExposureId, scansInObject, seedCompanyScans } from "../support/company-scans";

// A list of Persons is written straight from the rows as JSON text (services/people.ts: the
// list sends it as it is, everything else parses it). These cases pin every field's rule
// against hand-written expectations: names, booleans, timestamps with milliseconds, the email a
// company sees and its primary, license, roles in role order, exposure counts and the
// not-found sites.

const db = () => createDb(env.DB);
const at = (iso: string) => new Date(iso);

let full: number;
let bare: number;
let local: string;
let roleIds: { id: number; name: string }[];

beforeAll(async () => {
  local = fresh("render");
  const [a, b] = await db()
    .insert(people)
    .values([
      {
        firstName: "Zoë",
        middleName: "",
        lastName: 'O"Brien \\ 🎉',
        dob: "1990-07-02",
        riskScore: 7,
        lastScanAt: at("2026-01-02T03:04:05.123Z"),
        lastLoginAt: null,
        createdAt: at("2025-12-31T23:59:59.999Z"),
      },
      { firstName: "Bare", middleName: null, lastName: "Bones", createdAt: at("2026-03-04T05:06:07.000Z") },
    ])
    .returning({ id: people.id });
  full = a!.id;
  bare = b!.id;

  const [acme, globex] = await db()
    .insert(memberships)
    .values([
      {
        companyId: 1,
        personId: full,
        licenseId: "protect",
        licenseStartAt: at("2026-02-01T00:00:00.001Z"),
        licenseEndAt: null,
        licenseRenews: false,
        licenseProrateOnRenewal: true,
      },
      { companyId: 2, personId: full, licenseId: null },
      { companyId: 1, personId: bare, licenseId: null },
    ])
    .returning({ id: memberships.id });
  roleIds = (
    await env.DB.prepare("SELECT id, name FROM roles WHERE company_id = 1 ORDER BY id").all<{
      id: number;
      name: string;
    }>()
  ).results;
  // Granted in reverse order: a Person lists them by role id.
  await db()
    .insert(membershipRoles)
    .values([
      { membershipId: acme!.id, roleId: roleIds[1]!.id },
      { membershipId: acme!.id, roleId: roleIds[0]!.id },
    ]);
  expect(globex).toBeDefined();

  await db()
    .insert(personEmails)
    .values([
      { personId: full, email: `${local}.own@home.example`, primary: true, employerCompanyId: null },
      { personId: full, email: `${local}.acme@acme.example`, primary: true, employerCompanyId: 1 },
      { personId: full, email: `${local}.globex@globex.example`, primary: false, employerCompanyId: 2 },
    ]);
  await db()
    .insert(personPhones)
    .values([
      { personId: full, countryCode: "1", phoneNumber: "4155550123", e164: "+14155550123", primary: false },
      { personId: full, countryCode: "44", phoneNumber: "2071838750", e164: "+442071838750", primary: true },
    ]);
  await db()
    .insert(personAddresses)
    .values([
      {
        personId: full,
        primary: true,
        line1: "1 Main St",
        line2: 'Apt "2"',
        city: "Springfield",
        region: "IL",
        postalCode: "62701",
        country: "US",
      },
      {
        personId: full,
        line1: "2 Side Rd",
        line2: null,
        city: "Shelbyville",
        region: "IL",
        postalCode: "62565",
        country: "US",
      },
    ]);
  await db()
    .insert(personAkas)
    .values([{ personId: full, firstName: "Zo", middleName: null, lastName: null }]);
  await db()
    .insert(exposures)
    .values([
      { personId: full, siteId: 3, status: "pending", url: "https://a.example/1" },
      { personId: full, siteId: 3, status: "pending", url: "https://a.example/2" },
      { personId: full, siteId: 4, status: "in_progress", url: "https://b.example/1" },
      { personId: full, siteId: 4, status: "closed", url: "https://b.example/2" },
    ]);
  await db()
    .insert(scanResults)
    .values([
      // Site 3: not found, then found later: not counted.
      { scanId: `${local}-1`, personId: full, siteId: 3, outcome: "not_found", at: at("2026-01-01T00:00:00Z") },
      { scanId: `${local}-2`, personId: full, siteId: 3, outcome: "found", at: at("2026-01-02T00:00:00Z") },
      // Site 4: found, then not found later: counted.
      { scanId: `${local}-3`, personId: full, siteId: 4, outcome: "found", at: at("2026-01-01T00:00:00Z") },
      { scanId: `${local}-4`, personId: full, siteId: 4, outcome: "not_found", at: at("2026-01-03T00:00:00Z") },
      // Site 5: not found twice: one site.
      { scanId: `${local}-5`, personId: full, siteId: 5, outcome: "not_found", at: at("2026-01-01T00:00:00Z") },
      { scanId: `${local}-6`, personId: full, siteId: 5, outcome: "not_found", at: at("2026-01-04T00:00:00Z") },
      { scanId: `${local}-7`, personId: full, siteId: 5, outcome: "failed", at: at("2026-01-05T00:00:00Z") },
    ]);
  // The same exposures and results in each company's object, for when its scan side lives there.
  const seed = {
    exposures: (["pending", "pending", "in_progress", "closed"] as const).map((status, n) => ({
      id: n + 1,
      personId: full,
      siteId: n < 2 ? 3 : 4,
      status,
      createdAt: Date.parse("2026-01-01T00:00:00Z"),
      updatedAt: Date.parse("2026-01-01T00:00:00Z"),
    })),
    results: [
      [3, "not_found", "2026-01-01"],
      [3, "found", "2026-01-02"],
      [4, "found", "2026-01-01"],
      [4, "not_found", "2026-01-03"],
      [5, "not_found", "2026-01-01"],
      [5, "not_found", "2026-01-04"],
      [5, "failed", "2026-01-05"],
    ].map(([siteId, outcome, day], n) => ({
      scanId: `${local}-${n + 1}`,
      personId: full,
      siteId: siteId as number,
      outcome: outcome as string,
      at: Date.parse(`${day as string}T00:00:00Z`),
    })),
  };
  for (const companyId of [1, 2])
    await seedCompanyScans(companyId, {
      ...seed,
      exposures: seed.exposures.map((row) => ({ ...row, id: objectExposureId(companyId, row.id) })),
    });
});

/** What both companies see of `full`, apart from emails, license and roles. */
async function common(): Promise<Omit<PersonBody, "emails" | "license" | "roles">> {
  const ids = (await env.DB.prepare(
    "SELECT (SELECT json_group_array(id) FROM (SELECT id FROM person_phones WHERE person_id = ?1 ORDER BY id)) AS phones, " +
      "(SELECT json_group_array(id) FROM (SELECT id FROM person_addresses WHERE person_id = ?1 ORDER BY id)) AS addresses, " +
      "(SELECT id FROM person_akas WHERE person_id = ?1) AS aka",
  )
    .bind(full)
    .first<{ phones: string; addresses: string; aka: number }>())!;
  const [phone1, phone2] = JSON.parse(ids.phones) as number[];
  const [address1, address2] = JSON.parse(ids.addresses) as number[];
  return {
    id: full,
    first_name: "Zoë",
    middle_name: "",
    last_name: 'O"Brien \\ 🎉',
    display_name: 'Zoë O"Brien \\ 🎉',
    dob: "1990-07-02",
    akas: [{ id: ids.aka, first_name: "Zo", middle_name: null, last_name: null }],
    addresses: [
      {
        id: address1!,
        primary: true,
        line_1: "1 Main St",
        line_2: 'Apt "2"',
        city: "Springfield",
        region: "IL",
        postal_code: "62701",
        country: "US",
      },
      {
        id: address2!,
        primary: false,
        line_1: "2 Side Rd",
        line_2: null,
        city: "Shelbyville",
        region: "IL",
        postal_code: "62565",
        country: "US",
      },
    ],
    phone_numbers: [
      { id: phone1!, primary: false, country_code: "1", phone_number: "4155550123", phone_full: "+14155550123" },
      { id: phone2!, primary: true, country_code: "44", phone_number: "2071838750", phone_full: "+442071838750" },
    ],
    last_scan_at: "2026-01-02T03:04:05.123Z",
    risk_score: 7,
    exposures: { total: 4, pending: 2, in_progress: 1, closed: 1, not_found: 2 },
    last_login: null,
    created_at: "2025-12-31T23:59:59.999Z",
  };
}

async function emailIds() {
  const { results } = await env.DB.prepare("SELECT id, email FROM person_emails WHERE person_id = ? ORDER BY id")
    .bind(full)
    .all<{ id: number; email: string }>();
  return results;
}

describe.each([
  { home: "D1", inObject: false },
  { home: "the company's object", inObject: true },
])("a Person as rendered for lists and reads, scan side in $home", ({ inObject }) => {
  beforeAll(async () => {
    employeeListCache.clear();
    await scansInObject(1, inObject);
    await scansInObject(2, inObject);
  });

  it("as Acme sees them: its managed primary wins over the person's own, another employer's address is hidden", async () => {
    const [own, acme] = await emailIds();
    const expected: PersonBody = {
      ...(await common()),
      emails: [
        { id: own!.id, primary: false, email: own!.email },
        { id: acme!.id, primary: true, email: acme!.email },
      ],
      license: {
        type: "protect",
        price: (await env.DB.prepare("SELECT price FROM licenses WHERE id = 'protect'").first<{ price: number }>())!
          .price,
        start_date: "2026-02-01T00:00:00.001Z",
        end_date: null,
        renews: 0,
        prorate_on_renewal: 1,
      },
      roles: [roleIds[0]!.name, roleIds[1]!.name],
    };
    const bareExpected: PersonBody = {
      id: bare,
      first_name: "Bare",
      middle_name: null,
      last_name: "Bones",
      display_name: "Bare Bones",
      dob: null,
      akas: [],
      addresses: [],
      emails: [],
      phone_numbers: [],
      last_scan_at: null,
      license: null,
      roles: [],
      risk_score: 0,
      exposures: { total: 0, pending: 0, in_progress: 0, closed: 0, not_found: 0 },
      last_login: null,
      created_at: "2026-03-04T05:06:07.000Z",
    };
    // In the order asked; an id that is no member here is left out.
    expect(await loadPeople(createDeps(env), 1, [bare, 99_999_999, full])).toEqual([bareExpected, expected]);

    // The list sends the same text without parsing it.
    const response = await as("alice").get(`/companies/1/employees?search=${local}.`);
    expect(response.status).toBe(200);
    expect(response.headers.get("Content-Type")).toBe("application/json");
    expect(response.headers.get("X-Total-Count")).toBe("1");
    expect(await response.json()).toEqual([expected]);
  });

  it("as Globex sees them: the person's own primary stays, no license, no roles", async () => {
    const [own, , globex] = await emailIds();
    expect(await loadPeople(createDeps(env), 2, [full])).toEqual([
      {
        ...(await common()),
        emails: [
          { id: own!.id, primary: true, email: own!.email },
          { id: globex!.id, primary: false, email: globex!.email },
        ],
        license: null,
        roles: [],
      },
    ]);
  });

  it("an empty page is an empty array", async () => {
    const response = await as("alice").get("/companies/1/employees?search=nobody-has-this-prefix");
    expect(response.status).toBe(200);
    expect(await response.text()).toBe("[]");
  });
});
