import { runInDurableObject } from "cloudflare:test";
import { beforeAll, describe, expect, it } from "vitest";
import { drizzle, type DrizzleSqliteDODatabase } from "drizzle-orm/durable-sqlite";
import type { ExposurePageFilter } from "../../src/domain/company-scans";
import { exposureCounts, exposurePage, recountStatuses } from "../../src/objects/company/exposures";
import { companyObject, objectExposureId, seedCompanyScans } from "../support/company-scans";

// The exposures page of a big company in its own object (docs/performance.md, "Big companies"):
// 100,000 employees with 200,000 exposures. Each read is checked by the rows SQLite read for it
// (the cursor's `rowsRead`: an index-backed page reads about its window, not the company's set),
// and timed through the object's RPC, less an empty call's time; the times are printed, not asserted.

const COMPANY = 950;
const EXPOSURES = 200_000;
const PEOPLE = 100_000;
const t0 = Date.parse("2026-01-01T00:00:00Z");

/** Runs `read` inside the object on a drizzle handle whose statements are counted: its result and the rows SQLite read. */
const measured = <T>(read: (db: DrizzleSqliteDODatabase) => T) =>
  runInDurableObject(companyObject(COMPANY), (_, state) => {
    const cursors: SqlStorageCursor<Record<string, SqlStorageValue>>[] = [];
    const exec = state.storage.sql.exec.bind(state.storage.sql);
    const storage = {
      sql: {
        exec: (query: string, ...params: SqlStorageValue[]) => {
          const cursor = exec(query, ...params);
          cursors.push(cursor);
          return cursor;
        },
      },
      transactionSync: <R>(work: () => R) => state.storage.transactionSync(work),
    } as unknown as DurableObjectStorage;
    const result = read(drizzle(storage));
    return { result, rowsRead: cursors.reduce((sum, cursor) => sum + cursor.rowsRead, 0) };
  });

/** The mean milliseconds of `n` calls of the object's RPC, less an empty call's. */
async function timed(call: () => Promise<unknown>, n = 20): Promise<number> {
  const stub = companyObject(COMPANY);
  const mean = async (work: () => Promise<unknown>) => {
    const start = Date.now();
    for (let i = 0; i < n; i++) await work();
    return (Date.now() - start) / n;
  };
  await call(); // warm
  const empty = await mean(() => stub.exposureCounts([]));
  return Math.round(Math.max(0, (await mean(call)) - empty) * 100) / 100;
}

const page = (filter: Partial<ExposurePageFilter>, offset = 0, limit = 100) => ({
  filter: { since: null, employees: null, statuses: null, ...filter },
  offset,
  limit,
});

describe("the exposures page of a company of 100,000 employees with 200,000 exposures, in its object", () => {
  beforeAll(async () => {
    await seedCompanyScans(COMPANY, {});
    await runInDurableObject(companyObject(COMPANY), (_, state) => {
      // Statuses 20 % pending, 30 % in progress, 50 % closed; changes spread over the ids' order.
      state.storage.sql.exec(
        `WITH RECURSIVE k(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM k WHERE n < ?1)
         INSERT INTO exposures (id, person_id, site_id, status, url, data, created_at, updated_at)
         SELECT ?2 + n, (n % ?3) + 1, 3 + n % 3,
                CASE WHEN n % 10 < 2 THEN 'pending' WHEN n % 10 < 5 THEN 'in_progress' ELSE 'closed' END,
                'https://peoplefinder.example/p/' || n, '{"name":"someone"}', ?4 + n * 1000, ?4 + ((n * 7919) % ?1) * 1000
         FROM k`,
        EXPOSURES,
        objectExposureId(COMPANY, 0),
        PEOPLE,
        t0,
      );
      recountStatuses(drizzle(state.storage));
    });
  }, 120_000);

  const cases = [
    ["the default page (pending and in progress)", page({ statuses: ["pending", "in_progress"] })],
    ["every status", page({})],
    ["closed only", page({ statuses: ["closed"] })],
    ["every status, page 100", page({}, 9_900)],
    ["ten named employees", page({ employees: Array.from({ length: 10 }, (_, i) => 1000 + i) })],
  ] as const;

  for (const [name, { filter, offset, limit }] of cases) {
    it(`${name}: a page of 100 reads about its window`, async () => {
      const { result, rowsRead } = await measured((db) => exposurePage(db, filter, offset, limit));
      expect(result.items.length).toBeGreaterThan(0);
      const ms = await timed(() => companyObject(COMPANY).exposurePage(filter, offset, limit));
      console.log(JSON.stringify({ metric: "company_exposure_page", case: name, total: result.total, rowsRead, ms }));
      expect(rowsRead).toBeLessThan(3 * (offset + limit) + 1000);
      const sorted = [...result.items].sort((a, b) => a.updatedAt.getTime() - b.updatedAt.getTime() || a.id - b.id);
      expect(result.items.map((item) => item.id)).toEqual(sorted.map((item) => item.id));
    });
  }

  it("totals come from the counters: every status 200,000, the default 100,000", async () => {
    const all = await measured((db) => exposurePage(db, page({}).filter, 0, 100));
    expect(all.result.total).toBe(EXPOSURES);
    const current = await measured((db) =>
      exposurePage(db, page({ statuses: ["pending", "in_progress"] }).filter, 0, 100),
    );
    expect(current.result.total).toBe(EXPOSURES / 2);
  });

  it("with `since`: the total counts the index range from it (printed)", async () => {
    const since = new Date(t0 + (EXPOSURES - 5_000) * 1000);
    const filter = page({ since, statuses: ["pending", "in_progress"] }).filter;
    const { result, rowsRead } = await measured((db) => exposurePage(db, filter, 0, 100));
    const ms = await timed(() => companyObject(COMPANY).exposurePage(filter, 0, 100));
    console.log(
      JSON.stringify({
        metric: "company_exposure_page",
        case: "since, last 5,000 changes",
        total: result.total,
        rowsRead,
        ms,
      }),
    );
    expect(result.total).toBe(2_500);
    expect(rowsRead).toBeLessThan(20_000);
  });

  it("with `since` before every change: the total counts the whole range (the worst case, printed)", async () => {
    const filter = page({ since: new Date(t0), statuses: ["pending", "in_progress"] }).filter;
    const { result, rowsRead } = await measured((db) => exposurePage(db, filter, 0, 100));
    const ms = await timed(() => companyObject(COMPANY).exposurePage(filter, 0, 100), 5);
    console.log(
      JSON.stringify({
        metric: "company_exposure_page",
        case: "since before every change",
        total: result.total,
        rowsRead,
        ms,
      }),
    );
    expect(result.total).toBe(EXPOSURES / 2);
  });

  it("a list page's exposure counts (100 people) read their rows only", async () => {
    const people = Array.from({ length: 100 }, (_, i) => 500 + i);
    const { result, rowsRead } = await measured((db) => exposureCounts(db, people));
    const ms = await timed(() => companyObject(COMPANY).exposureCounts(people));
    console.log(JSON.stringify({ metric: "company_exposure_counts", people: 100, rowsRead, ms }));
    expect(result.map((row) => row.pending + row.in_progress + row.closed)).toEqual(people.map(() => 2));
    expect(rowsRead).toBeLessThan(2_000);
  });
});
