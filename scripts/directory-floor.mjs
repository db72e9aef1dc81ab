// `node scripts/directory-floor.mjs [--employees 1000] [--json]`: the fewest D1 bytes a company's employee
// directory costs per employee, to check the capacity target "a 1,000-employee company costs at most 100 KB
// of D1" (about 100 bytes an employee).
//
// The directory is what D1 must keep per employee: a `people` row (names, timestamps), its primary employer
// email (`person_emails`), its primary phone (`person_phones`) and its `memberships` row (no license, no
// roles). Nothing else is stored: no akas, addresses, scans, secure numbers. So the figure is a floor.
//
// 1. A fresh in-memory SQLite database (node:sqlite) with D1's page size, 4096 bytes, and foreign keys
//    on, gets every D1 migration (drizzle/NNNN_*.sql, in drizzle/meta/_journal.json's order, split on
//    `--> statement-breakpoint`); a statement that fails stops the script. Then one employer company.
// 2. The tables' sizes are read from `dbstat` (pages, and the payload bytes in them) per b-tree: each
//    table and each of its indexes. N employees are inserted in one transaction, as the app's bulk
//    create writes them (triggers stay on), and the sizes are read again. Per employee = (bytes at N −
//    bytes at 0) / N, so a table's first, mostly empty page does not weigh on the figure.
// 3. The same facts in the slimmest layout (integer account ids, WITHOUT ROWID email/phone/membership
//    keys, one index each for reading by person), in a second fresh database: the floor even if the
//    account model were reshaped.
// Rows written by triggers into other tables (work queues, counters) are shown apart, not counted.
import fs from "node:fs";
import path from "node:path";
import { DatabaseSync } from "node:sqlite";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const PAGE_SIZE = 4096; // D1's page size
const TEN_GB = 10_000_000_000; // D1's largest database
const TARGET_PER_EMPLOYEE = 100; // 100 KB per 1,000 employees
const APP_TABLES = ["people", "person_emails", "person_phones", "memberships"];
const SLIM_TABLES = ["accounts", "account_emails", "account_phones", "member_pairs"];
const FIRST_NAMES = "Michael Jessica Matthew Ashley Joshua Amanda Daniel Jennifer Andrew Brittany Justin".split(" ");
const LAST_NAMES = "Johnson Williams Jackson Martinez Robinson Clarke Harris Thompson Garcia Miller".split(" ");
const AREA_CODES = [212, 312, 415, 617, 206, 303, 512, 404, 305, 702];

const { values: args } = parseArgs({
  options: { employees: { type: "string", default: "1000" }, json: { type: "boolean", default: false } },
});
const employeeCount = Number(args.employees);
const progress = (message) => process.stderr.write(`directory-floor: ${message}\n`);
const fail = (message) => {
  process.stderr.write(`directory-floor: FAILED: ${message}\n`);
  process.exit(1);
};
if (!Number.isInteger(employeeCount) || employeeCount < 1) fail("--employees must be a positive integer");
const perEmployee = (bytes) => Math.round((bytes / employeeCount) * 10) / 10;

function openDatabase() {
  const db = new DatabaseSync(":memory:");
  db.exec(`PRAGMA page_size = ${PAGE_SIZE}; PRAGMA foreign_keys = ON;`); // D1 enforces foreign keys
  return db;
}

/** Applies drizzle/'s migrations in the journal's order; stops on the first statement that fails. */
function applyMigrations(db) {
  const dir = path.join(ROOT, "drizzle");
  const tags = JSON.parse(fs.readFileSync(path.join(dir, "meta/_journal.json"), "utf8")).entries.map((e) => e.tag);
  const byName = fs
    .readdirSync(dir)
    .flatMap((f) => f.match(/^(\d{4}_.*)\.sql$/)?.[1] ?? [])
    .sort();
  // wrangler applies the directory's files by name; the journal should list the same, in the same order.
  if (byName.join() !== tags.join()) fail(`the journal and drizzle/*.sql differ: ${tags} vs ${byName}`);
  let statements = 0;
  for (const tag of tags) {
    const parts = fs.readFileSync(path.join(dir, `${tag}.sql`), "utf8").split("--> statement-breakpoint");
    for (const [i, statement] of parts.entries()) {
      if (!statement.trim()) continue;
      try {
        db.exec(statement);
      } catch (error) {
        fail(`${tag}.sql statement ${i + 1} (${statement.trim().slice(0, 100)}…): ${error.message}`);
      }
      statements++;
    }
  }
  return { files: tags.length, statements, allApplied: true };
}

/** Deterministic, realistic employees: 6–8-letter names, unique emails and US numbers. */
function makeEmployees(n) {
  let seed = 0x5eed;
  const pick = (list) => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return list[(seed >>> 8) % list.length];
  };
  return Array.from({ length: n }, (_, i) => {
    const [firstName, lastName] = [pick(FIRST_NAMES), pick(LAST_NAMES)];
    const national = `${pick(AREA_CODES)}${2_000_000 + ((i * 7919) % 8_000_000)}`; // unique per employee
    const email = `${firstName}.${lastName}.${i + 1}@acme-corp.example`.toLowerCase();
    return { firstName, lastName, email, national, e164: `+1${national}` };
  });
}

let dbstatMode = "aggregate = 1";
/** Bytes (pages) and payload bytes per b-tree, by name (a table's or an index's). */
function btreeSizes(db) {
  const sums = "SELECT name, sum(pgsize) AS bytes, sum(payload) AS payload FROM dbstat";
  let rows;
  try {
    rows = db.prepare(`${sums} WHERE aggregate = 1 GROUP BY name`).all();
  } catch {
    dbstatMode = "per-page rows summed"; // SQLite before 3.31 has no `aggregate`: the same sums, page by page
    rows = db.prepare(`${sums} GROUP BY name`).all();
  }
  return new Map(rows.map((r) => [r.name, { bytes: Number(r.bytes), payload: Number(r.payload) }]));
}

/** Runs `insert` between two `dbstat` readings; per table (with its indexes) the growth per employee. */
function measure(db, tables, insert) {
  const owners = db.prepare("SELECT name, tbl_name FROM sqlite_schema WHERE type IN ('table', 'index')").all();
  const before = btreeSizes(db);
  insert();
  const after = btreeSizes(db);
  const zero = { bytes: 0, payload: 0 };
  const growth = (name) => {
    const [a, b] = [after.get(name) ?? zero, before.get(name) ?? zero];
    const [bytes, payload] = [a.bytes - b.bytes, a.payload - b.payload];
    return { bytes, payload, bytesPerEmployee: perEmployee(bytes), payloadPerEmployee: perEmployee(payload) };
  };
  const result = tables.map((table) => {
    const btrees = owners
      .filter((o) => o.tbl_name === table)
      .map(({ name }) => ({ name, kind: name === table ? "table" : "index", ...growth(name) }));
    const rows = Number(db.prepare(`SELECT count(*) AS n FROM "${table}"`).get().n);
    const [bytes, payload] = ["bytes", "payload"].map((k) => btrees.reduce((s, b) => s + b[k], 0));
    const perEmp = { bytesPerEmployee: perEmployee(bytes), payloadPerEmployee: perEmployee(payload) };
    return { table, rows, bytes, payload, ...perEmp, btrees };
  });
  const counted = new Set(owners.filter((o) => tables.includes(o.tbl_name)).map((o) => o.name));
  const others = [...after.keys()].filter((name) => !counted.has(name) && growth(name).bytes !== 0);
  const otherBytes = others.reduce((s, name) => s + growth(name).bytes, 0);
  const notCounted = { tables: others, bytesPerEmployee: perEmployee(otherBytes) };
  const [bytes, payload] = ["bytes", "payload"].map((k) => result.reduce((s, t) => s + t[k], 0));
  const company = Math.round((bytes / employeeCount) * 1000); // bytes for a 1,000-employee company
  return {
    tables: result,
    bytesPerEmployee: perEmployee(bytes),
    payloadPerEmployee: perEmployee(payload),
    company1000Bytes: company,
    companiesPer10GB: Math.floor(TEN_GB / company),
    companiesPer10GBAt70: Math.floor((TEN_GB * 0.7) / company),
    meetsTarget: company <= TARGET_PER_EMPLOYEE * 1000,
    notCounted,
  };
}

/** One transaction, as the app's batch; a failure ends the script, so there is nothing to roll back. */
function inTransaction(db, work) {
  db.exec("BEGIN");
  work();
  db.exec("COMMIT");
}

const employees = makeEmployees(employeeCount);
const now = Date.now(); // the app stores timestamps as integer ms, one `now` per bulk create

progress("app schema: applying drizzle/ migrations");
const app = openDatabase();
const migrations = applyMigrations(app);
progress(`app schema: ${migrations.files} files, ${migrations.statements} statements applied; adding the company`);
const companyId = Number(
  app
    .prepare("INSERT INTO companies (kind, name, slug, created_at, updated_at) VALUES ('employer', ?, ?, ?, ?)")
    .run("Acme Corp", "acme-corp", now, now).lastInsertRowid,
);
progress(`app schema: inserting ${employeeCount} employees and measuring`);
const appLayout = measure(app, APP_TABLES, () =>
  inTransaction(app, () => {
    // The app's bulk create order: people, then their emails, phones and memberships.
    const insert = (table, columns, values) => app.prepare(`INSERT INTO ${table} (${columns}) VALUES (${values})`);
    const person = insert("people", "first_name, last_name, created_at, updated_at", "?, ?, ?, ?");
    const ids = employees.map((e) => Number(person.run(e.firstName, e.lastName, now, now).lastInsertRowid));
    const email = insert("person_emails", 'person_id, email, "primary", employer_company_id', "?, ?, 1, ?");
    employees.forEach((e, i) => email.run(ids[i], e.email, companyId));
    const columns = 'person_id, country_code, phone_number, e164, "primary", confirmed';
    const phone = insert("person_phones", columns, "?, '1', ?, ?, 1, 0");
    employees.forEach((e, i) => phone.run(ids[i], e.national, e.e164));
    const member = insert("memberships", "company_id, person_id, created_at, updated_at", "?, ?, ?, ?");
    ids.forEach((id) => member.run(companyId, id, now, now));
  }),
);

progress("slimmest layout: creating its tables");
const slim = openDatabase();
slim.exec(`
  CREATE TABLE accounts(id INTEGER PRIMARY KEY, created_at INTEGER NOT NULL);
  CREATE TABLE account_emails(email TEXT PRIMARY KEY, person_id INTEGER NOT NULL) WITHOUT ROWID;
  CREATE INDEX account_emails_person ON account_emails(person_id);
  CREATE TABLE account_phones(e164 TEXT PRIMARY KEY, person_id INTEGER NOT NULL) WITHOUT ROWID;
  CREATE INDEX account_phones_person ON account_phones(person_id);
  CREATE TABLE member_pairs(company_id INTEGER NOT NULL, person_id INTEGER NOT NULL,
    PRIMARY KEY(company_id, person_id)) WITHOUT ROWID;
  CREATE INDEX member_pairs_person ON member_pairs(person_id, company_id);`);
progress(`slimmest layout: inserting ${employeeCount} employees and measuring`);
const slimLayout = measure(slim, SLIM_TABLES, () =>
  inTransaction(slim, () => {
    const account = slim.prepare("INSERT INTO accounts (created_at) VALUES (?)");
    const ids = employees.map(() => Number(account.run(now).lastInsertRowid));
    const email = slim.prepare("INSERT INTO account_emails (email, person_id) VALUES (?, ?)");
    const phone = slim.prepare("INSERT INTO account_phones (e164, person_id) VALUES (?, ?)");
    const member = slim.prepare("INSERT INTO member_pairs (company_id, person_id) VALUES (1, ?)");
    employees.forEach((e, i) => [email.run(e.email, ids[i]), phone.run(e.e164, ids[i]), member.run(ids[i])]);
  }),
);

const sqliteVersion = app.prepare("SELECT sqlite_version() AS v").get().v;
const setup = { employees: employeeCount, sqliteVersion, pageSize: PAGE_SIZE, dbstat: dbstatMode, migrations };
const layouts = { app: appLayout, slimmest: slimLayout };
if (args.json) {
  console.log(JSON.stringify({ ...setup, targetBytesPerEmployee: TARGET_PER_EMPLOYEE, layouts }, null, 2));
} else {
  const n = (x) => x.toLocaleString("en-US");
  const f = (x) => x.toFixed(1);
  const row = (cells, widths) =>
    cells.map((c, i) => (i ? String(c).padStart(widths[i]) : String(c).padEnd(widths[i]))).join("  ");
  const widths = [40, 8, 12, 14];
  const e = n(employeeCount);
  console.log(`D1 directory floor: ${e} employees of one company (SQLite ${sqliteVersion}, ${PAGE_SIZE}-byte pages)`);
  console.log(`per employee = (bytes with ${e} employees − bytes with 0) / ${e}; dbstat ${dbstatMode}`);
  console.log("bytes = whole pages of the b-trees; payload = the row and key bytes in them");
  console.log(`migrations: ${migrations.files} files, ${migrations.statements} statements, all applied\n`);
  for (const [label, layout] of [
    ["app schema (drizzle/ migrations)", appLayout],
    ["slimmest layout", slimLayout],
  ]) {
    console.log(row([label, "rows", "B/employee", "payload/empl."], widths));
    for (const t of layout.tables) {
      console.log(row([t.table, n(t.rows), f(t.bytesPerEmployee), f(t.payloadPerEmployee)], widths));
      for (const b of t.btrees) {
        const name = `  ${b.kind === "index" ? "index " : ""}${b.name}`;
        console.log(row([name, "", f(b.bytesPerEmployee), f(b.payloadPerEmployee)], widths));
      }
    }
    console.log(row(["total", "", f(layout.bytesPerEmployee), f(layout.payloadPerEmployee)], widths));
    const { tables: others, bytesPerEmployee: other } = layout.notCounted;
    console.log(`  not counted: trigger-written b-trees, ${f(other)} B/employee (${others.join(", ") || "none"})\n`);
  }
  const cols = [40, 16, 16];
  console.log(row(["", "app schema", "slimmest"], cols));
  const both = (label, value) => console.log(row([label, value(appLayout), value(slimLayout)], cols));
  both("bytes per employee", (l) => f(l.bytesPerEmployee));
  both("bytes for a 1,000-employee company", (l) => n(l.company1000Bytes));
  both("such companies per 10 GB", (l) => n(l.companiesPer10GB));
  both("such companies per 10 GB at 70 %", (l) => n(l.companiesPer10GBAt70));
  both(`target ≤ ${TARGET_PER_EMPLOYEE} B/employee (100 KB / 1,000)`, (l) => (l.meetsTarget ? "met" : "NOT met"));
}
progress("done");
