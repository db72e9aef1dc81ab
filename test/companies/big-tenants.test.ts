import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { createEmployee, listEmployees, listExposures } from "../../src/routes/employees/employees.routes";
import { answer, as, countRows, DEMO, employeeBody, expectError, fresh } from "../helpers";
import { scansInObject } from "../support/company-scans";

// Big companies' lists read index ranges (docs/performance.md, "Big companies"): the exposures page
// reads `company_exposures` and its counts, the employee list's total `company_employee_counts`, all
// kept by triggers (drizzle/0023_company_list_counts_triggers.sql). These check that what they answer
// is what the company's rows are, after every kind of change, and the employee list's keyset paging.

const CURRENT = `SELECT e.id FROM exposures e WHERE e.person_id IN (SELECT person_id FROM memberships WHERE company_id = ?1)
  AND e.status IN ('pending', 'in_progress') ORDER BY e.updated_at, e.id`;

async function expectedExposures(companyId: number) {
  const { results } = await env.DB.prepare(CURRENT).bind(companyId).all<{ id: number }>();
  return results.map((row) => row.id);
}

async function exposuresPage(who: "alice" | "carol", companyId: number) {
  const response = await as(who).get(`/companies/${companyId}/employees/exposures?per_page=1000`);
  const items = await answer(response.clone(), 200, listExposures);
  return { ids: items.map((item) => item.id), total: Number(response.headers.get("X-Total-Count")) };
}

async function expectExposuresPageIsTheRows() {
  const expected = await expectedExposures(DEMO.companies.acme);
  expect(await exposuresPage("alice", DEMO.companies.acme)).toEqual({ ids: expected, total: expected.length });
}

async function newEmployee() {
  const response = await as("alice").send("POST", "/companies/1/employees", employeeBody(fresh("big")));
  return (await answer(response, 200, createEmployee)).id;
}

const insertExposure = (personId: number, status: string, at: number) =>
  env.DB.prepare(
    "INSERT INTO exposures (person_id, site_id, status, url, created_at, updated_at) VALUES (?1, 3, ?2, ?3, ?4, ?4) RETURNING id",
  )
    .bind(personId, status, `https://peoplefinder.example/${fresh("big")}`, at)
    .first<{ id: number }>();

describe("the exposures page reads the company's rows as they are", () => {
  // D1's tables and their triggers, for companies whose scan side is still in D1 (the object's page:
  // exposures.test.ts, company-exposures-scale.test.ts).
  beforeAll(async () => {
    await scansInObject(DEMO.companies.acme, false);
    await scansInObject(DEMO.companies.globex, false);
  });

  it("after exposures are added, moved, closed and deleted, and employees join and leave", async () => {
    const now = Date.now();
    const dana = await newEmployee();
    const [a, b, c] = [
      await insertExposure(dana, "pending", now - 3000),
      await insertExposure(dana, "in_progress", now - 2000),
      await insertExposure(dana, "pending", now - 1000),
    ];
    await expectExposuresPageIsTheRows();
    expect((await exposuresPage("alice", 1)).ids).toEqual(expect.arrayContaining([a!.id, b!.id, c!.id]));

    // Moved (its order changes with updated_at) and closed (it leaves the current page).
    await env.DB.prepare("UPDATE exposures SET status = 'in_progress', updated_at = ?2 WHERE id = ?1")
      .bind(a!.id, now + 1000)
      .run();
    await env.DB.prepare("UPDATE exposures SET status = 'closed', closed_at = ?2, updated_at = ?2 WHERE id = ?1")
      .bind(b!.id, now + 2000)
      .run();
    await expectExposuresPageIsTheRows();
    await env.DB.prepare("DELETE FROM exposures WHERE id = ?").bind(c!.id).run();
    await expectExposuresPageIsTheRows();

    // The same person joins Globex: Globex's page shows their exposures, Acme's still does.
    await env.DB.prepare(
      "INSERT INTO memberships (company_id, person_id, created_at, updated_at) VALUES (2, ?1, ?2, ?2)",
    )
      .bind(dana, now)
      .run();
    const globex = await expectedExposures(DEMO.companies.globex);
    expect(globex).toContain(a!.id);
    expect(await exposuresPage("carol", DEMO.companies.globex)).toEqual({ ids: globex, total: globex.length });
    await expectExposuresPageIsTheRows();

    // Dana leaves Acme: their exposures leave Acme's page and its count.
    expect((await as("alice").send("DELETE", `/companies/1/employees/${dana}`)).status).toBe(204);
    await expectExposuresPageIsTheRows();
    expect((await exposuresPage("alice", 1)).ids).not.toContain(a!.id);
  });

  it("filters by status and since the same way", async () => {
    const since = new Date(Date.now() - 60_000).toISOString();
    const response = await as("alice").get(
      `/companies/1/employees/exposures?per_page=1000&status=pending,in_progress,closed&since=${since}`,
    );
    expect(response.status).toBe(200);
    const { results } = await env.DB.prepare(
      `SELECT e.id FROM exposures e WHERE e.person_id IN (SELECT person_id FROM memberships WHERE company_id = 1)
       AND e.updated_at >= ?1 ORDER BY e.updated_at, e.id`,
    )
      .bind(Date.parse(since))
      .all<{ id: number }>();
    expect((await answer(response, 200, listExposures)).map((item) => item.id)).toEqual(results.map((row) => row.id));
    expect(Number(response.headers.get("X-Total-Count"))).toBe(results.length);
  });
});

describe("the employee list: its total and keyset paging", () => {
  const members = () => countRows("SELECT count(*) AS n FROM memberships WHERE company_id = 1");
  const total = async () =>
    Number((await as("alice").get("/companies/1/employees?per_page=1")).headers.get("X-Total-Count"));

  it("X-Total-Count is the company's employees after they join and leave", async () => {
    const id = await newEmployee();
    expect(await total()).toBe(await members());
    expect((await as("alice").send("DELETE", `/companies/1/employees/${id}`)).status).toBe(204);
    expect(await total()).toBe(await members());
  });

  it("`after` lists the employees after an id, and `next` carries the page's last id", async () => {
    await newEmployee();
    await newEmployee();
    const all = (await answer(await as("alice").get("/companies/1/employees?per_page=1000"), 200, listEmployees)).map(
      (person) => person.id,
    );
    const first = await as("alice").get(`/companies/1/employees?per_page=2&after=${all[0]}`);
    expect((await answer(first.clone(), 200, listEmployees)).map((person) => person.id)).toEqual(all.slice(1, 3));
    expect(first.headers.get("X-Total-Count")).toBe(String(all.length));
    const next = /<([^>]+)>; rel="next"/.exec(first.headers.get("Link")!)![1]!;
    expect(new URL(next).searchParams.get("after")).toBe(String(all[2]));
    const second = await as("alice").get(new URL(next).pathname + new URL(next).search);
    expect((await answer(second, 200, listEmployees)).map((person) => person.id)).toEqual(all.slice(3, 5));
    // `first` and `last` are the whole list's numbered pages, each one a page to follow (before: they kept
    // `after`, and `last` was a 400).
    for (const rel of ["first", "last"]) {
      const url = new URL(new RegExp(`<([^>]+)>; rel="${rel}"`).exec(first.headers.get("Link")!)![1]!);
      expect(url.searchParams.get("after")).toBeNull();
      const followed = await as("alice").get(url.pathname + url.search);
      expect(followed.status).toBe(200);
      await followed.body?.cancel();
    }
  });

  it("`after` with a page other than 1 is a 400", async () => {
    const response = await as("alice").get("/companies/1/employees?after=1&page=2");
    expect(await expectError(response, 400, "Bad Request")).toContain("`after`");
  });

  it("an empty or non-decimal `after`, `page` or `per_page` is a 400 naming it, not another page", async () => {
    for (const name of ["after", "page", "per_page"]) {
      for (const value of ["", "1e3", "0x10", " 5", "2.0"]) {
        const response = await as("alice").get(`/companies/1/employees?${name}=${encodeURIComponent(value)}`);
        expect(await expectError(response, 400, "Bad Request")).toContain(name);
      }
    }
  });
});
