import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createEmployee } from "../../src/routes/employees/employees.routes";
import { getLicense, listLicenses, purchaseLicenses } from "../../src/routes/licenses/licenses.routes";
import { answer, as, call, countRows, DEMO_SITES, expectError, insertToken } from "../helpers";

const { peopleFinder, spyDirectory, whitePages } = DEMO_SITES;

const scan = (active: number, assigned: number) => ({
  id: "scan",
  name: "Scan",
  price: 0,
  currency: "USD",
  num_active: active,
  num_assigned: assigned,
  num_available: active - assigned,
  full_scan: false,
  full_delete: false,
  sites: [peopleFinder, spyDirectory],
});
const protect = (active: number, assigned: number) => ({
  id: "protect",
  name: "Protect",
  price: 9900,
  currency: "USD",
  num_active: active,
  num_assigned: assigned,
  num_available: active - assigned,
  full_scan: true,
  full_delete: true,
  sites: [peopleFinder, spyDirectory, whitePages],
});

/** A person who is an Admin of both Acme and Globex, with a token. */
async function twoCompanyAdmin() {
  const token = `pk_test_two_${Date.now()}`;
  const person = await env.DB.prepare(
    "INSERT INTO people (first_name, last_name, created_at, updated_at) VALUES ('Two', 'Hats', 0, 0) RETURNING id",
  ).first<{ id: number }>();
  await env.DB.batch([
    env.DB.prepare(
      "INSERT INTO memberships (company_id, person_id, created_at, updated_at) VALUES (1, ?1, 0, 0), (2, ?1, 0, 0)",
    ).bind(person!.id),
    env.DB.prepare(
      "INSERT INTO membership_roles (membership_id, role_id) SELECT id, CASE company_id WHEN 1 THEN 1 ELSE 4 END FROM memberships WHERE person_id = ?",
    ).bind(person!.id),
  ]);
  await insertToken(token, { personId: person!.id });
  return token;
}

describe("GET /licenses and /companies/{company_id}/licenses", () => {
  it.each(["/licenses", "/companies/1/licenses"])(
    "GET %s lists the catalog with Acme's seats and the sites each covers",
    async (path) => {
      const response = await as("alice").get(path);
      expect(response.status).toBe(200);
      expect(response.headers.get("X-Total-Count")).toBeNull();
      expect(await response.json()).toEqual([scan(10, 1), protect(5, 1)]);
    },
  );

  it("shows zero seats for a company that bought none", async () => {
    expect(await (await as("carol").get("/licenses")).json()).toEqual([scan(0, 0), protect(0, 0)]);
  });

  it.each(["/licenses/protect", "/licenses/PROTECT", "/licenses/Protect", "/companies/1/licenses/protect"])(
    "GET %s reads one license",
    async (path) => {
      const response = await as("alice").get(path);
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual(protect(5, 1));
    },
  );

  it("404 for an unknown license", async () => {
    expect(await expectError(await as("alice").get("/licenses/gold"), 404, "Not Found")).toContain("gold");
    await expectError(await as("alice").get("/companies/1/licenses/7"), 404, "Not Found");
  });

  it("401 without a token, 403 without `read licenses`, 404 for another tenant", async () => {
    for (const path of ["/licenses", "/licenses/scan", "/companies/1/licenses", "/companies/1/licenses/scan"]) {
      await expectError(await call(path), 401, "Unauthorized");
      await expectError(await as("bob").get(path), 403, "Forbidden");
    }
    await expectError(await as("carol").get("/companies/1/licenses"), 404, "Not Found");
    await expectError(await as("carol").get("/companies/1/licenses/scan"), 404, "Not Found");
    await expectError(await as("telephony").get("/licenses"), 403, "Forbidden");
  });

  it("the form without a company is a 400 for someone in several companies; the company form works", async () => {
    const token = await twoCompanyAdmin();
    const message = await expectError(await call("/licenses", { token }), 400, "Bad Request");
    expect(message).toContain("/companies/{company_id}/licenses");
    await expectError(
      await call("/licenses", { method: "POST", token, body: [{ id: "scan", quantity: 1 }] }),
      400,
      "Bad Request",
    );
    const response = await call("/companies/2/licenses", { token });
    expect(response.status).toBe(200);
  });
});

describe("POST /licenses", () => {
  it("adds seats, records the purchase and answers 201 with the company's licenses", async () => {
    const before = (await answer(await as("alice").get("/licenses"), 200, listLicenses)).find(
      (l) => l.id === "protect",
    )!;
    const response = await as("alice").send("POST", "/licenses", [
      { id: "protect", quantity: 3 },
      { id: "Scan", quantity: 2 },
      { id: "protect", quantity: 1 },
    ]);
    expect(response.status).toBe(201);
    const licenses = await answer(response, 201, purchaseLicenses);
    expect(licenses.find((l) => l.id === "protect")).toEqual(protect(before.num_active + 4, before.num_assigned));
    expect(licenses.find((l) => l.id === "scan")!.num_active).toBe(12);
    expect(await (await as("alice").get("/companies/1/licenses")).json()).toEqual(licenses);
    const { results } = await env.DB.prepare(
      "SELECT license_id, quantity, purchased_by FROM license_purchases WHERE company_id = 1 ORDER BY license_id",
    ).all();
    expect(results).toEqual([
      { license_id: "protect", quantity: 4, purchased_by: 1 },
      { license_id: "scan", quantity: 2, purchased_by: 1 },
    ]);
  });

  it("buys for the company in the path", async () => {
    const response = await as("carol").send("POST", "/companies/2/licenses", [{ id: "scan", quantity: 7 }]);
    expect(response.status).toBe(201);
    expect(await response.json()).toEqual([scan(7, 0), protect(0, 0)]);
  });

  it("seats bought can be assigned; removing the employee frees the seat", async () => {
    await as("carol").send("POST", "/companies/2/licenses", [{ id: "protect", quantity: 1 }]);
    const employee = {
      first_name: "Gina",
      last_name: "Globex",
      dob: "1991-01-01",
      emails: [{ email: `gina.${Date.now()}@globex.example` }],
      addresses: [],
      license: "protect",
    };
    const created = await as("carol").send("POST", "/companies/2/employees", employee);
    expect(created.status).toBe(200);
    const { id } = await answer(created, 200, createEmployee);
    const seats = async () => answer(await as("carol").get("/licenses/protect"), 200, getLicense);
    expect(await seats()).toMatchObject({ num_active: 1, num_assigned: 1, num_available: 0 });
    const second = await as("carol").send("POST", "/companies/2/employees", {
      ...employee,
      emails: [{ email: `gina2.${Date.now()}@globex.example` }],
    });
    await expectError(second, 400, "Bad Request");
    expect((await as("carol").send("DELETE", `/companies/2/employees/${id}`)).status).toBe(204);
    expect(await seats()).toMatchObject({ num_active: 1, num_assigned: 0, num_available: 1 });
  });

  it.each([
    [
      "an unknown license",
      [
        { id: "protect", quantity: 1 },
        { id: "gold", quantity: 1 },
      ],
      "gold",
    ],
    ["a quantity of 0", [{ id: "protect", quantity: 0 }], "[0].quantity"],
    ["a quantity over 10 000", [{ id: "protect", quantity: 10_001 }], "[0].quantity"],
    ["a fractional quantity", [{ id: "protect", quantity: 1.5 }], "[0].quantity"],
    ["an empty list", [], "too small"],
    ["an object instead of a list", { id: "protect", quantity: 1 }, "expected array"],
  ])("400 for %s, buying nothing", async (_, body, text) => {
    const seats = await countRows("SELECT sum(quantity) AS n FROM company_seats WHERE company_id = 1");
    const purchases = await countRows("SELECT count(*) AS n FROM license_purchases");
    expect(await expectError(await as("alice").send("POST", "/licenses", body), 400, "Bad Request")).toContain(text);
    expect(await countRows("SELECT sum(quantity) AS n FROM company_seats WHERE company_id = 1")).toBe(seats);
    expect(await countRows("SELECT count(*) AS n FROM license_purchases")).toBe(purchases);
  });

  it("403 without `write licenses` (HR and Viewer), 404 for another tenant, 401 without a token", async () => {
    const seats = await countRows("SELECT sum(quantity) AS n FROM company_seats");
    const body = [{ id: "scan", quantity: 1 }];
    await expectError(await as("bob").send("POST", "/licenses", body), 403, "Forbidden");
    await env.DB.prepare("UPDATE membership_roles SET role_id = 2 WHERE membership_id = 2").run(); // Bob → HR
    try {
      expect((await as("bob").get("/licenses")).status).toBe(200);
      await expectError(await as("bob").send("POST", "/companies/1/licenses", body), 403, "Forbidden");
    } finally {
      await env.DB.prepare("UPDATE membership_roles SET role_id = 3 WHERE membership_id = 2").run();
    }
    await expectError(await as("carol").send("POST", "/companies/1/licenses", body), 404, "Not Found");
    await expectError(await call("/licenses", { method: "POST", body }), 401, "Unauthorized");
    expect(await countRows("SELECT sum(quantity) AS n FROM company_seats")).toBe(seats);
  });
});
