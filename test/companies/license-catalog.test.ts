import { env } from "cloudflare:workers";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { putLicense } from "../../src/routes/admin/licenses.routes";
import { createEmployee, getEmployee } from "../../src/routes/employees/employees.routes";
import { listLicenses, purchaseCompanyLicenses } from "../../src/routes/licenses/licenses.routes";
import { answer, as, call, countRows, DEMO_SITES, employeeBody, expectError, insertToken, spyOnD1 } from "../helpers";

const { peopleFinder, spyDirectory, whitePages } = DEMO_SITES;

/**
 * The operator's license catalog (docs/decisions.md, "Licenses"):
 * PUT/DELETE /internal/licenses/{id}, and a company buying and assigning
 * seats of a license the operator created.
 */

const ADMIN = `sk_test_catalog_admin_${crypto.randomUUID().replaceAll("-", "")}`;

beforeAll(async () => {
  await insertToken(ADMIN, { serviceName: "operator", scopes: ["platform:admin"] });
});

afterEach(() => {
  vi.restoreAllMocks();
});

const admin = (method: string, path: string, body?: unknown) => call(path, { method, body, token: ADMIN });

let seq = 0;
const fresh = (tag: string) => `${tag}-${Date.now().toString(36)}-${++seq}`;

const entry = (extra: Record<string, unknown> = {}) => ({
  name: `Premium ${++seq}`,
  price: 4900,
  full_scan: true,
  full_delete: false,
  sites: ["spydirectory", "peoplefinder"],
  ...extra,
});

async function put(id: string, body: unknown) {
  return answer(await admin("PUT", `/internal/licenses/${id}`, body), 200, putLicense);
}

async function catalogOf(who: "alice" | "carol") {
  return answer(await as(who).get("/licenses"), 200, listLicenses);
}

/**
 * Retires license `id` (a plain DELETE on D1) just before the D1 round trip
 * that writes seats runs: the purchase read the catalog while the license
 * existed. Hooks every round trip as countD1 does (`spyOnD1` in helpers.ts).
 * Restore with `vi.restoreAllMocks()`.
 */
function retireBeforeSeatWrite(id: string) {
  const retire = env.DB.prepare("DELETE FROM licenses WHERE id = ?").bind(id);
  let retired = false;
  spyOnD1((sql) => {
    if (retired || !sql.some((query) => /insert into "company_seats"/i.test(query))) return;
    retired = true;
    return retire.run().then(() => undefined);
  });
}

describe("who may change the catalog", () => {
  it.each([
    ["PUT", "/internal/licenses/forbidden", entry()],
    ["DELETE", "/internal/licenses/scan", undefined],
  ] as const)("%s %s: 401 without a token, 403 for a person token or another scope", async (method, path, body) => {
    await expectError(await call(path, { method, body }), 401, "Unauthorized");
    await expectError(await as("alice").send(method, path, body), 403, "Forbidden");
    await expectError(await as("telephony").send(method, path, body), 403, "Forbidden");
    await expectError(await as("scanner").send(method, path, body), 403, "Forbidden");
    expect(await countRows("SELECT count(*) AS n FROM licenses WHERE id IN ('forbidden', 'scan')")).toBe(1);
  });
});

describe("PUT /internal/licenses/{id}", () => {
  it("creates an entry: the answer is the License with zero seats, and every company's catalog lists it", async () => {
    const id = fresh("premium");
    const license = await put(id, entry({ name: "  Premium  ", currency: "eur" }));
    const expected = {
      id,
      name: "Premium",
      price: 4900,
      currency: "EUR",
      num_active: 0,
      num_assigned: 0,
      num_available: 0,
      full_scan: true,
      full_delete: false,
      sites: [peopleFinder, spyDirectory],
    };
    expect(license).toEqual(expected);
    expect((await catalogOf("carol")).find((l) => l.id === id)).toEqual(expected);
    expect((await catalogOf("alice")).find((l) => l.id === id)).toEqual(expected);
    expect((await as("alice").get(`/licenses/${id}`)).status).toBe(200);
    // Retire it again so the demo catalog is what other tests in this file expect.
    expect((await admin("DELETE", `/internal/licenses/${id}`)).status).toBe(204);
  });

  it("defaults the currency to USD, lowercases the id and takes an empty site list", async () => {
    const id = fresh("basic");
    const license = await put(id.toUpperCase(), entry({ name: "Basic", price: 0, sites: [] }));
    expect(license).toMatchObject({ id, currency: "USD", price: 0, sites: [] });
    expect(await countRows("SELECT count(*) AS n FROM licenses WHERE id = ?", id)).toBe(1);
    expect((await admin("DELETE", `/internal/licenses/${id}`)).status).toBe(204);
  });

  it("replaces every field of an entry; seats bought and held stay", async () => {
    const id = fresh("gold");
    await put(id, entry({ name: "Gold", currency: "EUR" }));
    expect((await as("alice").send("POST", "/companies/1/licenses", [{ id, quantity: 2 }])).status).toBe(201);
    const created = await as("alice").send(
      "POST",
      "/companies/1/employees",
      employeeBody(fresh("gold"), { license: id }),
    );
    expect(created.status, await created.clone().text()).toBe(200);
    const { id: personId } = await answer(created, 200, createEmployee);

    // Fewer sites (one the seat holder had is gone), a new name and price, currency back to USD.
    const replaced = await put(id, {
      name: "Gold Plus",
      price: 12900,
      full_scan: false,
      full_delete: true,
      sites: ["whitepages-archive"],
    });
    expect(replaced).toEqual({
      id,
      name: "Gold Plus",
      price: 12900,
      currency: "USD",
      num_active: 0,
      num_assigned: 0,
      num_available: 0,
      full_scan: false,
      full_delete: true,
      sites: [whitePages],
    });
    const acme = (await catalogOf("alice")).find((l) => l.id === id);
    expect(acme).toEqual({ ...replaced, num_active: 2, num_assigned: 1, num_available: 1 });
    const person = await answer(await as("alice").get(`/companies/1/employees/${personId}`), 200, getEmployee);
    expect(person.license).toMatchObject({ type: id, price: 12900 });
    // The new name names it in purchases and employee writes.
    expect((await as("alice").send("POST", "/companies/1/licenses", [{ id: "gold plus", quantity: 1 }])).status).toBe(
      201,
    );
    expect((await catalogOf("alice")).find((l) => l.id === id)).toMatchObject({ num_active: 3, num_assigned: 1 });
  });

  it("400 naming every slug that is no people-search site, and writes nothing", async () => {
    const id = fresh("nosite");
    const message = await expectError(
      await admin("PUT", `/internal/licenses/${id}`, entry({ sites: ["peoplefinder", "lookuphub", "acme"] })),
      400,
      "Bad Request",
    );
    expect(message).toContain('"lookuphub"');
    expect(message).toContain('"acme"'); // an employer is not a site
    expect(message).not.toContain('"peoplefinder"');
    expect(await countRows("SELECT count(*) AS n FROM licenses WHERE id = ?", id)).toBe(0);
    expect(await countRows("SELECT count(*) AS n FROM license_sites WHERE license_id = ?", id)).toBe(0);
  });

  it("400 naming the slugs when the entry names 100 sites (the most it may), not a 500 on D1's variable limit", async () => {
    const id = fresh("many");
    const sites = Array.from({ length: 100 }, (_, i) => `nosite-${id}-${i}`);
    const message = await expectError(
      await admin("PUT", `/internal/licenses/${id}`, entry({ sites })),
      400,
      "Bad Request",
    );
    expect(message).toContain(`"nosite-${id}-99"`);
    expect(await countRows("SELECT count(*) AS n FROM licenses WHERE id = ?", id)).toBe(0);
  });

  it("two PUTs of one name under two ids at once: one lands, the other is 409 and writes nothing", async () => {
    const name = `Twin ${fresh("twin")}`;
    const [a, b] = await Promise.all([
      admin("PUT", `/internal/licenses/${fresh("twin-a")}`, entry({ name, sites: [] })),
      admin("PUT", `/internal/licenses/${fresh("twin-b")}`, entry({ name, sites: [] })),
    ]);
    expect([a.status, b.status].sort()).toEqual([200, 409]);
    await expectError(a.status === 409 ? a : b, 409, "Conflict");
    expect(await countRows("SELECT count(*) AS n FROM licenses WHERE lower(name) = lower(?)", name)).toBe(1);
  });

  it("a name that is another PUT's id, both at once: one lands, the other is 409, as one after the other", async () => {
    const tag = fresh("cross");
    const [a, b] = await Promise.all([
      admin("PUT", `/internal/licenses/${tag}-a`, entry({ name: `${tag}-B`, sites: [] })),
      admin("PUT", `/internal/licenses/${tag}-b`, entry({ name: `Other ${tag}`, sites: [] })),
    ]);
    expect([a.status, b.status].sort()).toEqual([200, 409]);
    await expectError(a.status === 409 ? a : b, 409, "Conflict");
  });

  it("400 naming the field for a bad body", async () => {
    const cases: [unknown, string][] = [
      [entry({ price: 12.5 }), "`price`"],
      [entry({ price: -1 }), "`price`"],
      [entry({ currency: "dollars" }), "`currency`"],
      [entry({ name: "" }), "`name`"],
      [entry({ sites: ["peoplefinder", "PeopleFinder"] }), "listed twice"],
      [{ name: "X", price: 1, sites: [] }, "`full_scan` is required"],
    ];
    for (const [body, field] of cases) {
      const message = await expectError(
        await admin("PUT", `/internal/licenses/${fresh("bad")}`, body),
        400,
        "Bad Request",
      );
      expect(message).toContain(field);
    }
  });

  it("409 for a name another license is known by (its name or its id); the entry keeps its own name", async () => {
    for (const name of ["protect", "SCAN"]) {
      const message = await expectError(
        await admin("PUT", `/internal/licenses/${fresh("clash")}`, entry({ name })),
        409,
        "Conflict",
      );
      expect(message).toMatch(/`(protect|scan)`/);
    }
    // Replacing the demo's Protect under its own name is fine.
    await put("protect", {
      name: "Protect",
      price: 9900,
      full_scan: true,
      full_delete: true,
      sites: ["peoplefinder", "spydirectory", "whitepages-archive"],
    });
  });

  it("404 for a path that is no license id", async () => {
    await expectError(await admin("PUT", "/internal/licenses/-bad", entry()), 404, "Not Found");
    await expectError(await admin("PUT", `/internal/licenses/${"x".repeat(64)}`, entry()), 404, "Not Found");
  });
});

describe("a company buys seats of a new license and assigns them", () => {
  it("buys seats, assigns one to a new employee, and the operator cannot retire it (409) while held", async () => {
    const id = fresh("shield");
    await put(id, entry({ name: "Shield", price: 2500 }));
    const bought = await as("alice").send("POST", "/companies/1/licenses", [{ id, quantity: 5 }]);
    expect(bought.status).toBe(201);
    expect((await answer(bought, 201, purchaseCompanyLicenses)).find((l) => l.id === id)).toMatchObject({
      num_active: 5,
      num_assigned: 0,
      num_available: 5,
    });

    const created = await as("alice").send(
      "POST",
      "/companies/1/employees",
      employeeBody(fresh("shield"), { license: id }),
    );
    expect(created.status, await created.clone().text()).toBe(200);
    const person = await answer(created, 200, createEmployee);
    expect(person.license).toMatchObject({ type: id, price: 2500 });
    expect((await catalogOf("alice")).find((l) => l.id === id)).toMatchObject({
      num_active: 5,
      num_assigned: 1,
      num_available: 4,
    });
    // Globex bought none: it sees the entry with zero seats.
    expect((await catalogOf("carol")).find((l) => l.id === id)).toMatchObject({ num_active: 0, num_assigned: 0 });

    const message = await expectError(await admin("DELETE", `/internal/licenses/${id}`), 409, "Conflict");
    expect(message).toContain("company 1");
    expect(message).toContain("5 seats (1 assigned)");
    expect(await countRows("SELECT count(*) AS n FROM licenses WHERE id = ?", id)).toBe(1);

    // Freeing the seat does not unbuy it: still held.
    expect((await as("alice").send("PUT", `/companies/1/employees/${person.id}`, { license: "scan" })).status).toBe(
      200,
    );
    await expectError(await admin("DELETE", `/internal/licenses/${id}`), 409, "Conflict");
    await expectError(await admin("DELETE", "/internal/licenses/scan"), 409, "Conflict");
  });
});

describe("DELETE /internal/licenses/{id}", () => {
  it("retires an entry no company holds seats of: 204, gone from the catalog, no longer for sale", async () => {
    const id = fresh("retired");
    await put(id, entry({ name: "Retired" }));
    const response = await admin("DELETE", `/internal/licenses/${id.toUpperCase()}`);
    expect(response.status).toBe(204);
    expect(await response.text()).toBe("");
    expect((await catalogOf("carol")).map((l) => l.id)).not.toContain(id);
    expect(await countRows("SELECT count(*) AS n FROM license_sites WHERE license_id = ?", id)).toBe(0);
    await expectError(await as("alice").get(`/licenses/${id}`), 404, "Not Found");
    await expectError(
      await as("alice").send("POST", "/companies/1/licenses", [{ id, quantity: 1 }]),
      400,
      "Bad Request",
    );
    await expectError(
      await as("alice").send("POST", "/companies/1/employees", employeeBody(fresh("retired"), { license: id })),
      400,
      "Bad Request",
    );
    const again = await expectError(await admin("DELETE", `/internal/licenses/${id}`), 404, "Not Found");
    expect(again).toContain(id);
  });

  it("a retirement racing with purchases: either the purchase lands and the retirement is 409, or the purchase is 400", async () => {
    for (let round = 0; round < 5; round++) {
      const id = fresh("race");
      await put(id, entry({ name: `Race ${id}` }));
      const [purchase, retirement] = await Promise.all([
        as("alice").send("POST", "/companies/1/licenses", [{ id, quantity: 1 }]),
        admin("DELETE", `/internal/licenses/${id}`),
      ]);
      const held = await countRows("SELECT count(*) AS n FROM company_seats WHERE license_id = ?", id);
      if (retirement.status === 204) {
        expect(purchase.status).toBe(400);
        expect(held).toBe(0);
      } else {
        expect([purchase.status, retirement.status]).toEqual([201, 409]);
        expect(held).toBe(1);
      }
    }
  });

  it("a license retired between a purchase's catalog read and its write: 400 to the buyer, nothing bought", async () => {
    const id = fresh("gone");
    await put(id, entry({ name: "Gone" }));
    retireBeforeSeatWrite(id);
    const message = await expectError(
      await as("alice").send("POST", "/companies/1/licenses", [{ id, quantity: 2 }]),
      400,
      "Bad Request",
    );
    expect(message).toContain("retired");
    vi.restoreAllMocks();
    expect(await countRows("SELECT count(*) AS n FROM company_seats WHERE license_id = ?", id)).toBe(0);
    expect(await countRows("SELECT count(*) AS n FROM license_purchases WHERE license_id = ?", id)).toBe(0);
  });
});

describe("the demo catalog is as it was", () => {
  it("still lists scan and protect with Acme's seats", async () => {
    const ids = (await catalogOf("carol")).map((l) => l.id);
    expect(ids).toEqual(expect.arrayContaining(["scan", "protect"]));
    expect(await countRows("SELECT count(*) AS n FROM license_sites WHERE license_id = 'protect'")).toBe(3);
    expect(
      await env.DB.prepare("SELECT quantity FROM company_seats WHERE company_id = 1 AND license_id = 'protect'").first(
        "quantity",
      ),
    ).toBe(5);
  });
});
