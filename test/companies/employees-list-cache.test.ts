import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createDb } from "../../src/db/client";
import { employeeListCache, PAGE_MAX_AGE_MS } from "../../src/services/employees/list";
import { peopleReads } from "../../src/services/people";
import { createEmployee } from "../../src/routes/employees/employees.routes";
import { answer, as, captureTokenUses, countD1, employeeBody, fresh } from "../helpers";
import { until } from "../webhook-receiver";
import { objectExposureId, scansInObject, seedCompanyScans } from "../support/company-scans";

// The employee list answers a page it rendered before from the isolate's memory while the
// company's list version (drizzle/0015_company_list_versions.sql, kept by triggers) is the one
// it was rendered under. Each case below changes one kind of row a page shows, the way any
// writer could (raw SQL, or the API), and checks the next answer is the page as it is now:
// a stale page after a write is the bug these guard against.

const PAGE = "/companies/1/employees?per_page=1000";
const BOB = 2; // Acme's Viewer, license `scan`
const now = Date.now();

async function page(path = PAGE, who: "alice" | "carol" = "alice") {
  const response = await as(who).get(path);
  if (response.status !== 200) throw new Error(`${path}: ${response.status} ${await response.text()}`);
  return { body: await response.text(), total: response.headers.get("X-Total-Count") };
}

/** The page as the cache answers it, then rendered afresh (cache emptied): they must be the same. */
async function current(path = PAGE) {
  const answered = await page(path);
  employeeListCache.clear();
  const rendered = await page(path);
  expect(answered).toEqual(rendered);
  return answered;
}

/** Warms the page, runs `write`, and expects the next answer to be the new page (and a different one). */
async function expectSeen(write: () => Promise<unknown>, path = PAGE) {
  await page(path); // rendered and cached
  const before = await page(path); // answered from the cache
  await write();
  const after = await current(path);
  expect(after.body).not.toBe(before.body);
  return JSON.parse(after.body) as { id: number; [field: string]: unknown }[];
}

const run = (query: string, ...params: unknown[]) =>
  env.DB.prepare(query)
    .bind(...params)
    .run();
const loginOf = async (id: number) =>
  (
    await env.DB.prepare("SELECT last_login_at FROM people WHERE id = ?")
      .bind(id)
      .first<{ last_login_at: number | null }>()
  )?.last_login_at ?? null;
const bob = (list: { id: number; [field: string]: unknown }[]) => list.find((person) => person.id === BOB)!;

afterEach(() => vi.restoreAllMocks());

describe("GET /companies/{company_id}/employees: rendered pages kept per company version", () => {
  it("answers a repeated page from memory: the version comes with the access check, one D1 round in all", async () => {
    employeeListCache.clear();
    const first = await page();
    expect(employeeListCache.size()).toBe(1);
    const counts = countD1();
    const again = await page();
    expect(again).toEqual(first);
    // The access check, which reads the version too: no page reads.
    expect(counts.rounds).toBe(1);
  });

  it("a person's names, dob and risk score", async () => {
    const list = await expectSeen(() =>
      run("UPDATE people SET first_name = 'Robert', risk_score = 42 WHERE id = ?", BOB),
    );
    expect(bob(list)).toMatchObject({ first_name: "Robert", risk_score: 42 });
  });

  it("a login leaves the cached page valid; the page shows it once an hour has passed since rendering", async () => {
    await run("UPDATE people SET last_login_at = NULL WHERE id = ?", BOB);
    await run("UPDATE access_tokens SET last_used_at = NULL WHERE person_id = ?", BOB);
    await page(); // rendered and cached
    const before = await page();
    // Bob uses the API: his daily `last_login_at` write, off the response's path (the `token-uses` queue).
    const uses = captureTokenUses();
    expect((await as("bob").get("/companies/1/sites")).status).toBe(200);
    await until(async () => uses.sent.length > 0);
    await uses.flush();
    vi.restoreAllMocks();
    await until(async () => (await loginOf(BOB)) !== null);
    const counts = countD1();
    const after = await page();
    expect(after).toEqual(before);
    expect(counts.rounds).toBe(1); // the access check alone: answered from the cache
    expect(bob(JSON.parse(after.body) as { id: number }[]).last_login).toBeNull();
    // An hour after rendering the page is read again, with the login.
    const later = Date.now() + PAGE_MAX_AGE_MS + 1000;
    vi.spyOn(Date, "now").mockReturnValue(later);
    const fresh = JSON.parse((await page()).body) as { id: number; last_login: string | null }[];
    expect(bob(fresh).last_login).toBe(new Date((await loginOf(BOB))!).toISOString());
  });

  it("emails (added, changed, removed), phones, addresses and akas", async () => {
    const email = `${fresh("cache")}@acme.example`;
    let list = await expectSeen(() =>
      run(`INSERT INTO person_emails (person_id, email, "primary") VALUES (?, ?, 0)`, BOB, email),
    );
    expect(bob(list).emails).toContainEqual({ id: expect.any(Number), primary: false, email });
    await expectSeen(() => run(`UPDATE person_emails SET email = ? WHERE email = ?`, `x${email}`, email));
    await expectSeen(() => run(`DELETE FROM person_emails WHERE email = ?`, `x${email}`));
    list = await expectSeen(() =>
      run(
        `INSERT INTO person_phones (person_id, country_code, phone_number, e164, "primary") VALUES (?, '1', '4155550177', '+14155550177', 0)`,
        BOB,
      ),
    );
    expect(JSON.stringify(bob(list).phone_numbers)).toContain("+14155550177");
    await expectSeen(() => run(`DELETE FROM person_phones WHERE e164 = '+14155550177'`));
    await expectSeen(() =>
      run(
        `INSERT INTO person_addresses (person_id, "primary", line_1, city, region, postal_code, country) VALUES (?, 0, '9 Elm St', 'Austin', 'TX', '78701', 'US')`,
        BOB,
      ),
    );
    await expectSeen(() =>
      run(`UPDATE person_addresses SET city = 'Dallas' WHERE person_id = ? AND line_1 = '9 Elm St'`, BOB),
    );
    await expectSeen(() => run(`INSERT INTO person_akas (person_id, first_name) VALUES (?, 'Bobby')`, BOB));
    await expectSeen(() => run(`DELETE FROM person_akas WHERE person_id = ? AND first_name = 'Bobby'`, BOB));
  });

  it("the membership's license, its roles, a role's name and a license's price", async () => {
    await expectSeen(() =>
      run("UPDATE memberships SET license_end_at = ? WHERE company_id = 1 AND person_id = ?", now, BOB),
    );
    // Acme's HR role (2) given to Bob, renamed, taken away.
    await expectSeen(() => run("INSERT INTO membership_roles (membership_id, role_id) VALUES (2, 2)"));
    const list = await expectSeen(() => run("UPDATE roles SET name = 'People Ops' WHERE id = 2"));
    expect(bob(list).roles).toContain("People Ops");
    await expectSeen(() => run("DELETE FROM membership_roles WHERE membership_id = 2 AND role_id = 2"));
    await run("UPDATE roles SET name = 'HR' WHERE id = 2"); // as it was: new employees get HR
    await expectSeen(() => run("UPDATE licenses SET price = price + 1 WHERE id = 'scan'"));
  });

  it("exposures and scan results", async () => {
    // D1's rows, for a company whose scan side is still in D1 (restored below).
    await scansInObject(1, false);
    const list = await expectSeen(() =>
      run(
        "INSERT INTO exposures (person_id, site_id, status, url, created_at, updated_at) VALUES (?, 3, 'pending', 'https://peoplefinder.example/cache', ?, ?)",
        BOB,
        now,
        now,
      ),
    );
    expect((bob(list).exposures as { pending: number }).pending).toBeGreaterThan(0);
    await expectSeen(() =>
      run("UPDATE exposures SET status = 'in_progress' WHERE url = 'https://peoplefinder.example/cache'"),
    );
    await expectSeen(() =>
      run(
        "INSERT INTO scan_results (scan_id, person_id, site_id, outcome, at, created_at) VALUES (?, ?, 4, 'not_found', ?, ?)",
        fresh("scan"),
        BOB,
        now,
        now,
      ),
    );
    await scansInObject(1, true);
  });

  it("a company whose scan side is in its object: a kept page's counts come from the object on every answer, no D1 read", async () => {
    await page(); // rendered and kept
    const counts = countD1();
    const before = JSON.parse((await page()).body) as { id: number; [field: string]: unknown }[];
    expect(counts.rounds).toBe(1); // the access check only
    const pending = (bob(before).exposures as { pending: number }).pending;
    await seedCompanyScans(1, {
      exposures: [
        {
          id: objectExposureId(1, 9001),
          personId: BOB,
          siteId: 3,
          status: "pending",
          createdAt: now,
          updatedAt: now,
        },
      ],
    });
    const answered = await page();
    expect(counts.rounds).toBe(2); // again the access check only, yet the new count is there
    expect((bob(JSON.parse(answered.body) as typeof before).exposures as { pending: number }).pending).toBe(
      pending + 1,
    );
    const after = await current(); // and the same as a fresh rendering
    expect((bob(JSON.parse(after.body) as typeof before).exposures as { pending: number }).pending).toBe(pending + 1);
  });

  it("employees added, changed and removed through the API, and a search's page", async () => {
    const local = fresh("cached");
    let added = 0;
    await expectSeen(async () => {
      const response = await as("alice").send("POST", "/companies/1/employees", employeeBody(local));
      added = (await answer(response, 200, createEmployee)).id;
    });
    const search = `/companies/1/employees?search=${local}`;
    expect(JSON.parse((await page(search)).body)).toHaveLength(1);
    const list = await expectSeen(async () => {
      const response = await as("alice").send("PUT", `/companies/1/employees/${added}`, { last_name: "Fox" });
      expect(response.status).toBe(200);
    }, search);
    expect(list[0]).toMatchObject({ id: added, last_name: "Fox" });
    await expectSeen(async () => {
      expect((await as("alice").send("DELETE", `/companies/1/employees/${added}`)).status).toBe(204);
    }, search);
    expect(await page(search)).toEqual({ body: "[]", total: "0" });
  });

  it("a person deleted with everything that hangs off them", async () => {
    const response = await as("alice").send("POST", "/companies/1/employees", employeeBody(fresh("gone")));
    const { id } = await answer(response, 200, createEmployee);
    const list = await expectSeen(() => run("DELETE FROM people WHERE id = ?", id));
    expect(list.some((person) => person.id === id)).toBe(false);
  });

  it("keeps each company's pages apart", async () => {
    const acme = await page();
    const globex = await page("/companies/2/employees?per_page=1000", "carol");
    expect(globex.body).not.toBe(acme.body);
    expect(await page("/companies/2/employees?per_page=1000", "carol")).toEqual(globex);
    // A change in Acme leaves Globex's version, and its cached page, as they were.
    const versions = () =>
      env.DB.prepare(
        "SELECT company_id, version FROM company_list_versions WHERE company_id IN (1, 2) ORDER BY company_id",
      ).all();
    const before = (await versions()).results;
    await run("UPDATE people SET middle_name = 'Q' WHERE id = ?", BOB);
    const after = (await versions()).results;
    expect(after[0]).not.toEqual(before[0]);
    expect(after[1]).toEqual(before[1]);
  });

  it("answers a write's effect to reads that follow it while reads run alongside", async () => {
    await page();
    const reads = Array.from({ length: 6 }, () => page());
    await run("UPDATE people SET dob = '1970-01-01' WHERE id = ?", BOB);
    await Promise.all(reads);
    const list = JSON.parse((await current()).body) as { id: number; dob: string }[];
    expect(bob(list).dob).toBe("1970-01-01");
  });

  it("every table a page reads has its triggers (a migration that rebuilds a table drops them)", async () => {
    const reads = peopleReads(createDb(env.DB), 1, [1]).statements.map(
      (statement) => (statement as unknown as { getQuery(): { sql: string } }).getQuery().sql,
    );
    const tables = new Set(["memberships", "person_emails"]); // the list's own count and search
    for (const text of reads)
      for (const [, table] of text.matchAll(/\b(?:from|join)\s+"?(\w+)"?/gi)) tables.add(table!);
    tables.delete("json_each");
    tables.delete("wanted");
    const { results } = await env.DB.prepare(
      "SELECT tbl_name AS tbl, sql FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'list_version_%'",
    ).all<{ tbl: string; sql: string }>();
    const triggers = (table: string, event: string) =>
      results.filter((row) => row.tbl === table && row.sql.includes(`AFTER ${event}`)).length;
    expect([...tables].sort()).toEqual([
      "exposures",
      "licenses",
      "membership_roles",
      "memberships",
      "people",
      "person_addresses",
      "person_akas",
      "person_emails",
      "person_phones",
      "roles",
      "scan_results",
    ]);
    for (const table of tables) {
      expect(triggers(table, "UPDATE"), `${table}: update trigger`).toBe(1);
      // A new person, role or license shows in no list before a membership or a role assignment names it.
      if (["people", "roles", "licenses"].includes(table)) continue;
      expect(triggers(table, "INSERT"), `${table}: insert trigger`).toBe(1);
      expect(triggers(table, "DELETE"), `${table}: delete trigger`).toBe(1);
    }
    expect(triggers("companies", "INSERT")).toBe(1);
  });
});
