// A company of 100,000 employees, built directly in SQLite (node:sqlite) on the D1 schema, and
// the Worker's own list reads timed on it: `npm run capacity` (docs/capacity.md, "A company of
// 100,000 employees"; query plans in docs/performance.md).
//
// Loading 100,000 employees and 200,000 exposures through the API would take most of the
// capacity run (a bulk call takes 1,000 employees), so the rows are written by SQL, in the
// shapes the API writes them: the D1 migrations of drizzle/ (triggers included), then the
// company, its people with an email each, their memberships, two exposures each (with their
// `found` history line and scan result), and a 500-employee company beside it for comparison.
//
// The reads are the Worker's own functions (src/services/employee-exposures.ts and
// src/services/employees/list.ts, imported with tsx), given a D1 binding over the same SQLite
// file (`d1Over` below): what is timed is SQLite executing exactly the statements the Worker
// sends to D1 for that page (the sum over the page's statements; the median of several runs).
import fs from "node:fs";
import path from "node:path";
import { DatabaseSync } from "node:sqlite";
import { tsImport } from "tsx/esm/api";
import { ROOT } from "./cli.mjs";

const MIGRATIONS_DIR = path.join(ROOT, "drizzle");
const SITES = [3, 4];

/** The D1 migrations, in file order, each file split on `--> statement-breakpoint`. */
function migrate(db) {
  for (const file of fs
    .readdirSync(MIGRATIONS_DIR)
    .filter((name) => name.endsWith(".sql"))
    .sort()) {
    for (const statement of fs
      .readFileSync(path.join(MIGRATIONS_DIR, file), "utf8")
      .split("--> statement-breakpoint")) {
      if (statement.trim()) db.exec(statement);
    }
  }
}

/**
 * A D1Database over a node:sqlite connection, enough for drizzle's D1 driver (prepare, bind,
 * all, raw, run, first, batch), adding each statement's SQLite time to `timer.ms`.
 */
export function d1Over(db, timer = { ms: 0, statements: 0 }) {
  const execute = (query, params, mode) => {
    const record = { query, params, ms: 0 };
    timer.queries?.push(record);
    const statement = db.prepare(query);
    const started = performance.now();
    try {
      if (mode === "raw") {
        statement.setReturnArrays(true);
        return statement.all(...params);
      }
      if (mode === "run") return statement.run(...params);
      return statement.all(...params);
    } finally {
      record.ms = performance.now() - started;
      timer.ms += record.ms;
      timer.statements++;
    }
  };
  const prepared = (query, params = []) => ({
    bind: (...values) =>
      prepared(
        query,
        values.map((value) => (typeof value === "boolean" ? Number(value) : value)),
      ),
    all: async () => ({ results: execute(query, params, "all"), success: true, meta: {} }),
    raw: async () => execute(query, params, "raw"),
    first: async (column) => {
      const row = execute(query, params, "all")[0];
      return row === undefined ? null : column ? row[column] : row;
    },
    run: async () => {
      const result = execute(query, params, "run");
      return { results: [], success: true, meta: { changes: Number(result.changes) } };
    },
    _query: query,
    _params: params,
  });
  return {
    prepare: (query) => prepared(query),
    batch: async (statements) => {
      db.exec("begin");
      try {
        const results = statements.map((statement) => ({
          results: execute(statement._query, statement._params, "all"),
          success: true,
          meta: {},
        }));
        db.exec("commit");
        return results;
      } catch (err) {
        db.exec("rollback");
        throw err;
      }
    },
    withSession: function () {
      return this;
    },
  };
}

/** `WITH k(i)`: the integers 0 … count − 1, for INSERT … SELECT. */
const series = (count) => `WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i < ${count - 1})`;

/**
 * A company of `employees`, each with an email, a membership and two exposures (each with its
 * `found` history line and scan result), by INSERT … SELECT in one transaction, through the
 * schema's triggers as the API's writes go.
 */
function loadCompany(db, { id, employees, firstPerson, now }) {
  const last = firstPerson + employees - 1;
  const mine = `BETWEEN ${firstPerson} AND ${last}`;
  db.exec("begin");
  // A company served from D1's tables (`scans_in_object` 0, as one created before drizzle/0032):
  // what this file times is D1's own reads.
  db.exec(`INSERT INTO companies (id, kind, name, slug, scans_in_object, created_at, updated_at)
    VALUES (${id}, 'employer', 'Big ${id}', 'big-${id}', 0, ${now}, ${now})`);
  db.exec(`${series(employees)} INSERT INTO people (id, first_name, last_name, created_at, updated_at)
    SELECT ${firstPerson} + i, 'Dana', 'Scully ' || i, ${now}, ${now} FROM k`);
  db.exec(`${series(employees)} INSERT INTO person_emails (person_id, email, "primary", employer_company_id)
    SELECT ${firstPerson} + i, 'e' || i || '@big-${id}.example', 1, ${id} FROM k`);
  db.exec(`${series(employees)} INSERT INTO memberships (company_id, person_id, created_at, updated_at)
    SELECT ${id}, ${firstPerson} + i, ${now}, ${now} FROM k`);
  // Two listings each, found over the past month (their \`updated_at\` spread), half of them in progress.
  db.exec(`${series(employees * SITES.length)}, spread(i, at) AS (SELECT i, ${now} - ((i * 7919) % 2592000) * 1000 FROM k)
    INSERT INTO exposures (person_id, site_id, status, url, data, created_at, updated_at)
    SELECT ${firstPerson} + i / ${SITES.length}, CASE i % ${SITES.length} WHEN 0 THEN ${SITES[0]} ELSE ${SITES[1]} END,
      CASE WHEN i % 4 < 2 THEN 'pending' ELSE 'in_progress' END, 'https://site.example/${id}/' || i, '{}', at, at FROM spread`);
  db.exec(`INSERT INTO exposure_history (exposure_id, site_id, event, created_at)
    SELECT e.id, e.site_id, 'Found on ' || s.name, e.created_at FROM exposures e JOIN companies s ON s.id = e.site_id
    WHERE e.person_id ${mine}`);
  db.exec(`INSERT INTO scan_results (scan_id, person_id, site_id, outcome, url, at, created_at)
    SELECT 'scan-' || e.person_id, e.person_id, e.site_id, 'found', e.url, e.created_at, e.created_at FROM exposures e
    WHERE e.person_id ${mine}`);
  db.exec("commit");
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const round = (ms) => Number(ms.toFixed(2));

/**
 * Builds the database in `dir` and times the list pages; returns the figures.
 * `employees` defaults to 100,000.
 */
export async function measureBigCompany({ employees = 100_000, runs = 9, log = () => {} } = {}) {
  // In memory: the same pages and plans as a file, without the disk's time to build them.
  const db = new DatabaseSync(":memory:");
  db.exec("PRAGMA foreign_keys = ON;");
  migrate(db);
  const now = Date.now();
  db.exec(`INSERT INTO companies (id, kind, name, slug, scanner, created_at, updated_at) VALUES
    (3, 'site', 'PeopleFinder', 'peoplefinder', 1, ${now}, ${now}), (4, 'site', 'SpyDirectory', 'spydirectory', 1, ${now}, ${now})`);
  const started = performance.now();
  const BIG = 100;
  const SMALL = 101;
  loadCompany(db, { id: BIG, employees, firstPerson: 1_000, now });
  loadCompany(db, { id: SMALL, employees: 500, firstPerson: 1_000 + employees, now });
  log(
    `built ${employees.toLocaleString("en")} employees and ${(employees * 2).toLocaleString("en")} exposures in SQLite (${((performance.now() - started) / 1000).toFixed(1)} s)`,
  );

  const bytes = (() => {
    const pageSize = db.prepare("PRAGMA page_size").get().page_size;
    const pages = db.prepare("PRAGMA page_count").get().page_count;
    return pages * pageSize;
  })();

  const { createDb } = await tsImport("../../src/db/client.ts", import.meta.url);
  const { listExposures } = await tsImport("../../src/services/employee-exposures.ts", import.meta.url);
  const { listEmployees, employeeListCache } = await tsImport("../../src/services/employees/list.ts", import.meta.url);
  const timer = { ms: 0, statements: 0 };
  const drizzle = createDb(d1Over(db, timer));
  // The list services take the Worker's handle (`Deps`) and read only its `db`: outside workerd, a
  // handle of that part alone serves them. pendingInTurns, a plain read, takes the drizzle client.
  const deps = { db: drizzle };
  const current = { since: null, employees: null, statuses: ["pending", "in_progress"] };

  /**
   * SQLite time of `read` over `runs` runs: the median, and the least (the page's own cost,
   * when other processes on the machine took the CPU during the others); what the last run answered.
   */
  async function time(read) {
    const times = [];
    let answer;
    for (let i = 0; i < runs; i++) {
      employeeListCache.clear();
      timer.ms = 0;
      timer.statements = 0;
      answer = await read();
      times.push(timer.ms);
    }
    return { ms: round(median(times)), min: round(Math.min(...times)), statements: timer.statements, answer };
  }
  const pages = {};
  const totals = {};
  for (const [company, label, size] of [
    [BIG, "big", employees],
    [SMALL, "small", 500],
  ]) {
    const lastPage = Math.ceil(size / 100);
    // The last id of the page before the last: the keyset (`after`) of the last page.
    const before = db
      .prepare("SELECT person_id FROM memberships WHERE company_id = ? ORDER BY person_id LIMIT 1 OFFSET ?")
      .get(company, (lastPage - 1) * 100 - 1).person_id;
    const home = { id: company, scansInObject: false };
    const reads = {
      exposures_page_1: () => listExposures(deps, home, current, { page: 1, per_page: 100 }),
      exposures_page_100: () => listExposures(deps, home, current, { page: 100, per_page: 100 }),
      exposures_page_1_of_1000: () => listExposures(deps, home, current, { page: 1, per_page: 1000 }),
      employees_page_1: () => listEmployees(deps, company, null, { page: 1, per_page: 100 }, null),
      employees_last_page_by_keyset: () => listEmployees(deps, company, null, { page: 1, per_page: 100 }, null, before),
      employees_last_page_by_number: () => listEmployees(deps, company, null, { page: lastPage, per_page: 100 }, null),
      employees_page_1_of_1000: () => listEmployees(deps, company, null, { page: 1, per_page: 1000 }, null),
      employees_search: () => listEmployees(deps, company, "e123", { page: 1, per_page: 100 }, null),
    };
    pages[label] = {};
    for (const [name, read] of Object.entries(reads)) {
      const { ms, min, answer } = await time(read);
      pages[label][name] = { ms, min };
      if (name === "exposures_page_1") totals[label] = { exposures: answer.total };
      if (name === "employees_page_1") totals[label].employees = answer.total;
    }
  }
  // The removal step's choice of the next 1,000 (services/exposures.ts): it reads every pending
  // exposure with its memberships, here the big company's 100,000 pending and the small one's 500.
  const { pendingInTurns } = await tsImport("../../src/services/exposures.ts", import.meta.url);
  const removalChoice = await time(() => pendingInTurns(drizzle, 1_000));
  const pendingTotal = db.prepare("SELECT count(*) AS n FROM exposures WHERE status = 'pending'").get().n;

  /** The query plan of every statement of one page read. */
  async function plan(read) {
    timer.queries = [];
    employeeListCache.clear();
    await read();
    const queries = timer.queries;
    delete timer.queries;
    return queries.map(({ query, params, ms }) => ({
      query,
      ms: Number(ms.toFixed(2)),
      plan: db
        .prepare(`EXPLAIN QUERY PLAN ${query}`)
        .all(...params)
        .map((row) => row.detail),
    }));
  }
  const plans = {
    exposures: await plan(() =>
      listExposures(deps, { id: BIG, scansInObject: false }, current, { page: 100, per_page: 100 }),
    ),
    employees: await plan(() => listEmployees(deps, BIG, null, { page: 1, per_page: 100 }, null, employees / 2)),
  };
  db.close();
  return {
    employees,
    bytes,
    totals,
    pages,
    removalChoice: { pending: pendingTotal, ms: removalChoice.ms, min: removalChoice.min },
    plans,
  };
}
