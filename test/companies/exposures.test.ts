import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { getEmployee, listExposures } from "../../src/routes/employees/employees.routes";
import { answer, as, call, expectError } from "../helpers";
import { objectExposureId, scansInObject, seedCompanyScans } from "../support/company-scans";

const LIST = "/companies/1/employees/exposures";
const history = (id: number) => `/companies/1/employees/exposures/${id}/history`;

const t = (hour: number) => Date.parse("2026-02-01T00:00:00Z") + hour * 3600_000;
const at = (hour: number) => new Date(t(hour)).toISOString();

const sites = {
  3: { id: 3, name: "PeopleFinder", slug: "peoplefinder", logo: "", url: "https://peoplefinder.example" },
  4: { id: 4, name: "SpyDirectory", slug: "spydirectory", logo: "", url: "https://spydirectory.example" },
  5: {
    id: 5,
    name: "WhitePages Archive",
    slug: "whitepages-archive",
    logo: "",
    url: "https://whitepages-archive.example",
  },
};

/** Exposures of Acme's Alice (1) and Bob (2) and of Globex's Carol (3): [id, person, site, status, created, updated]. */
const rows = [
  [101, 1, 3, "pending", 1, 1],
  [102, 1, 4, "in_progress", 2, 5],
  [103, 1, 5, "closed", 3, 6],
  [104, 2, 3, "pending", 4, 4],
  [105, 3, 3, "pending", 2, 2],
] as const;

/**
 * Where the company's scan side lives (`companies.scans_in_object`): D1's tables, or the company's
 * object, seeded with the same rows (its ids are the company's: `objectExposureId`). Every case
 * below runs against both.
 */
const homes = [
  { home: "D1", inObject: false, id: (n: number) => n },
  {
    home: "the company's object",
    inObject: true,
    id: (n: number) => (n === 999 ? objectExposureId(1, 999) : objectExposureId(n === 105 ? 2 : 1, n - 100)),
  },
];
let id = (n: number) => n;

const exposure = (n: number) => {
  const [, person, site, status, created, updated] = rows.find((row) => row[0] === n)!;
  return {
    id: id(n),
    employee_id: person,
    status,
    site: sites[site],
    url: `https://${sites[site].slug}.example/p/${n}`,
    data: { name: `person ${person}` },
    created_at: at(created),
    updated_at: at(updated),
  };
};

const ids = async (path: string) => {
  const response = await as("alice").get(path);
  expect(response.status).toBe(200);
  return (await answer(response, 200, listExposures)).map((row) => row.id);
};
const idsOf = (...ns: number[]) => ns.map((n) => id(n));

beforeAll(async () => {
  await env.DB.batch([
    ...rows.map(([id, person, site, status, created, updated]) =>
      env.DB.prepare(
        "INSERT INTO exposures (id, person_id, site_id, status, url, data, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
      ).bind(
        id,
        person,
        site,
        status,
        `https://${sites[site].slug}.example/p/${id}`,
        JSON.stringify({ name: `person ${person}` }),
        t(created),
        t(updated),
      ),
    ),
    env.DB.prepare(
      `INSERT INTO exposure_history (exposure_id, site_id, event, created_at) VALUES
       (102, 4, 'Removal requested from SpyDirectory', ?2),
       (102, 4, 'Found on SpyDirectory', ?1),
       (105, 3, 'Found on PeopleFinder', ?1)`,
    ).bind(t(2), t(5)),
    // Bob: nothing found on SpyDirectory; WhitePages Archive said "not found" once, then found him.
    env.DB.prepare(
      `INSERT INTO scan_results (scan_id, person_id, site_id, outcome, at, created_at) VALUES
       ('s1', 2, 4, 'not_found', ?1, ?1), ('s1', 2, 5, 'not_found', ?1, ?1), ('s2', 2, 5, 'found', ?2, ?2),
       ('s2', 2, 4, 'failed', ?2, ?2)`,
    ).bind(t(1), t(2)),
  ]);
  const { id: objectId } = homes[1]!;
  const seedOf = (companyId: number) => ({
    exposures: rows
      .filter(([, person]) => (person === 3 ? 2 : 1) === companyId)
      .map(([n, personId, siteId, status, created, updated]) => ({
        id: objectId(n),
        personId,
        siteId,
        status,
        url: `https://${sites[siteId].slug}.example/p/${n}`,
        data: { name: `person ${personId}` },
        createdAt: t(created),
        updatedAt: t(updated),
      })),
  });
  await seedCompanyScans(1, {
    ...seedOf(1),
    history: [
      { exposureId: objectId(102), siteId: 4, event: "Removal requested from SpyDirectory", createdAt: t(5) },
      { exposureId: objectId(102), siteId: 4, event: "Found on SpyDirectory", createdAt: t(2) },
    ],
    results: [
      { scanId: "s1", personId: 2, siteId: 4, outcome: "not_found", at: t(1) },
      { scanId: "s1", personId: 2, siteId: 5, outcome: "not_found", at: t(1) },
      { scanId: "s2", personId: 2, siteId: 5, outcome: "found", at: t(2) },
      { scanId: "s2", personId: 2, siteId: 4, outcome: "failed", at: t(2) },
    ],
  });
  await seedCompanyScans(2, {
    ...seedOf(2),
    history: [{ exposureId: objectId(105), siteId: 3, event: "Found on PeopleFinder", createdAt: t(2) }],
  });
});

describe.each(homes)("exposures kept in $home", (home) => {
  beforeAll(async () => {
    id = home.id;
    await scansInObject(1, home.inObject);
    await scansInObject(2, home.inObject);
  });

  describe("GET /companies/{company_id}/employees/exposures", () => {
    it("by default lists the current (pending, in_progress) exposures of the company's employees, oldest change first", async () => {
      const response = await as("bob").get(LIST);
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual([exposure(101), exposure(104), exposure(102)]);
      expect(response.headers.get("X-Total-Count")).toBe("3");
    });

    it("exposed=false includes closed ones; a status list decides by itself", async () => {
      expect(await ids(`${LIST}?exposed=false`)).toEqual(idsOf(101, 104, 102, 103));
      expect(await ids(`${LIST}?status=closed`)).toEqual(idsOf(103));
      expect(await ids(`${LIST}?status=closed,pending`)).toEqual(idsOf(101, 104, 103));
      expect(await ids(`${LIST}?status=closed&exposed=true`)).toEqual([]);
      expect(await ids(`${LIST}?status=pending,closed&exposed=1`)).toEqual(idsOf(101, 104));
    });

    it("filters by employees and since; other tenants' employees match nothing", async () => {
      expect(await ids(`${LIST}?employees=2&exposed=false`)).toEqual(idsOf(104));
      expect(await ids(`${LIST}?employees=1,2`)).toEqual(idsOf(101, 104, 102));
      expect(await ids(`${LIST}?employees=3&exposed=false`)).toEqual([]);
      expect(await ids(`${LIST}?since=${encodeURIComponent(at(4))}&exposed=false`)).toEqual(idsOf(104, 102, 103));
      expect(await ids(`${LIST}?since=2026-02-01T05:00:00%2B00:00`)).toEqual(idsOf(102));
      expect(await ids(`${LIST}?since=2026-02-02`)).toEqual([]);
    });

    it("pages with X-Total-Count and Link", async () => {
      const response = await as("alice").get(`${LIST}?exposed=false&per_page=3&page=2`);
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual([exposure(103)]);
      expect(response.headers.get("X-Total-Count")).toBe("4");
      expect(response.headers.get("Link")).toMatch(/<[^>]*[?&]page=1[&>][^,]*rel="prev"/);
      expect(response.headers.get("Link")).not.toContain('rel="next"');
    });

    it.each([
      ["status=open", "status"],
      ["employees=1,x", "employees"],
      ["since=yesterday", "since"],
      ["exposed=maybe", "exposed"],
      ["per_page=1001", "per_page"],
    ])("400 for %s", async (query, field) => {
      expect(await expectError(await as("alice").get(`${LIST}?${query}`), 400, "Bad Request")).toContain(
        `\`${field}\``,
      );
    });

    it("401 without a token, 404 for another tenant, 403 without `read exposures`", async () => {
      await expectError(await call(LIST), 401, "Unauthorized");
      await expectError(await as("carol").get(LIST), 404, "Not Found");
      await withBobRole(["read employees"], async () => {
        await expectError(await as("bob").get(LIST), 403, "Forbidden");
        await expectError(await as("bob").get(history(id(102))), 403, "Forbidden");
      });
    });
  });

  describe("GET /companies/{company_id}/employees/exposures/{id}/history", () => {
    it("lists the actions on an exposure, oldest first", async () => {
      const response = await as("bob").get(history(id(102)));
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual([
        { event: "Found on SpyDirectory", company: sites[4], when: at(2) },
        { event: "Removal requested from SpyDirectory", company: sites[4], when: at(5) },
      ]);
      expect(await (await as("alice").get(history(id(101)))).json()).toEqual([]);
    });

    it("404 for another tenant's exposure, an unknown one, or a non-member; Carol reads her own", async () => {
      expect(await expectError(await as("alice").get(history(id(105))), 404, "Not Found")).toContain(
        `exposure ${id(105)}`,
      );
      await expectError(await as("alice").get(history(id(999))), 404, "Not Found");
      await expectError(await as("carol").get(history(id(102))), 404, "Not Found");
      const own = await as("carol").get(`/companies/2/employees/exposures/${id(105)}/history`);
      expect(await own.json()).toEqual([{ event: "Found on PeopleFinder", company: sites[3], when: at(2) }]);
    });
  });

  describe("exposure counts in the Person", () => {
    it("counts by status, with not_found = sites whose latest result found nothing", async () => {
      const alice = await answer(await as("alice").get("/companies/1/employees/1"), 200, getEmployee);
      expect(alice.exposures).toEqual({ total: 3, pending: 1, in_progress: 1, closed: 1, not_found: 0 });
      const bob = await answer(await as("alice").get("/companies/1/employees/2"), 200, getEmployee);
      expect(bob.exposures).toEqual({ total: 1, pending: 1, in_progress: 0, closed: 0, not_found: 1 });
    });
  });
});

/** Gives Bob (a Viewer) a role with only `permissions` while `run` runs. */
async function withBobRole(permissions: string[], run: () => Promise<void>) {
  await env.DB.batch([
    env.DB.prepare("INSERT INTO roles (id, company_id, name, permissions) VALUES (200, 1, 'Limited', ?)").bind(
      JSON.stringify(permissions),
    ),
    env.DB.prepare("UPDATE membership_roles SET role_id = 200 WHERE membership_id = 2"),
  ]);
  try {
    await run();
  } finally {
    await env.DB.batch([
      env.DB.prepare("UPDATE membership_roles SET role_id = 3 WHERE membership_id = 2"),
      env.DB.prepare("DELETE FROM roles WHERE id = 200"),
    ]);
  }
}

describe("OpenAPI schemas of exposures", () => {
  it("describe the site and the history's company with the shared CompanyRef schema", async () => {
    type Schema = { $ref?: string; allOf?: Schema[]; properties?: Record<string, Schema> };
    // The served document itself, read as JSON Schema: no route's zod schema describes it.
    const doc = await (await call("/openapi.json")).json<{ components: { schemas: Record<string, Schema> } }>();
    const { schemas } = doc.components;
    const ref = (schema: Schema | undefined) => schema?.$ref ?? schema?.allOf?.[0]?.$ref;
    expect(ref(schemas.Exposure?.properties?.site)).toBe("#/components/schemas/CompanyRef");
    expect(ref(schemas.ExposureHistoryEntry?.properties?.company)).toBe("#/components/schemas/CompanyRef");
    expect(Object.keys(schemas)).not.toContain("SiteRef");
  });
});
