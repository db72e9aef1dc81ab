// `npm run capacity [-- --scale 0.5] [-- --json]`: measures what a tenant costs in D1.
//
// 1. A fresh local D1 in a temporary folder (`--persist-to`): migrations, the demo world;
// 2. app users, their tokens and secure numbers are inserted by SQL (as `npm run token`
//    would mint them), then its size is read (SQLite page counts, per table and index);
// 3. `wrangler dev` on a free port serves the Worker on that state, and the synthetic
//    tenant is loaded through the API: employees of Acme (POST /companies/1/employees),
//    a monthly scan of each (POST /internal/scan-events → the scan-events queue: two
//    listings found per employee), webhooks for every event (delivered to a local
//    receiver: the month's history and attempts), per app user a 500-contact sync, chat
//    and call records (POST /apps/buzz/activity) and blocked calls (untrusted
//    trust-lookups by the telephony token);
// 4. the server is stopped (by its PID) and the size read again; bytes per row type,
//    indexes included, come from the `dbstat` virtual table, and the steady state of a
//    tenant under the retention rules is extrapolated linearly (docs/capacity.md).
//
// `--scale` multiplies every count (default 1: the tenant of docs/capacity.md).
import { spawn, spawnSync } from "node:child_process";
import { createHash, randomUUID } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { DatabaseSync } from "node:sqlite";
import { ROOT, bin, childEnv, fail, parseArgs, step } from "./lib/cli.mjs";

const { flags } = parseArgs(process.argv.slice(2), { switches: ["json"] });
const scale = Number(flags.scale ?? 1);
if (!(scale > 0 && scale <= 10)) fail("--scale must be a number in (0, 10]");
const n = (count) => Math.max(1, Math.round(count * scale));

/**
 * The tenant of docs/capacity.md: 1,000 employees with two listings each, 200 app users
 * with 500 contacts, 50 activity records and 100 blocked calls a month each. Loaded: all
 * app users and contacts, and samples of the rest (one request per row is slow on a
 * shared machine); bytes per row come from the sample and are extrapolated linearly to
 * the stated tenant. `--scale` multiplies the loaded counts.
 */
const TENANT = { employees: 1_000, appUsers: 200, contactsPerUser: 500, activitiesPerUser: 50, blockedPerUser: 100 };
const LOAD = {
  employees: n(400),
  appUsers: n(200),
  contactsPerUser: 500,
  activities: n(2_000),
  blockedCalls: n(3_000),
};
const SITES = [3, 4]; // PeopleFinder and SpyDirectory of the demo world: two listings per employee
const FIRST_USER_ID = 100_000;
const CONCURRENCY = 12;
const started = Date.now();

// ── 1. A fresh local state ────────────────────────────────────────────────────────────
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "capacity-"));
const persist = path.join(tmp, "state");
let server = null;
let receiver = null;

async function cleanup() {
  if (server && server.exitCode === null) {
    server.kill("SIGTERM");
    await new Promise((resolve) => {
      const timer = setTimeout(() => {
        server.kill("SIGKILL");
        resolve();
      }, 10_000);
      server.once("exit", () => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
  receiver?.close();
  // workerd may still flush its state for a moment after wrangler exits.
  fs.rmSync(tmp, { recursive: true, force: true });
  await new Promise((r) => setTimeout(r, 1_000));
  fs.rmSync(tmp, { recursive: true, force: true });
}
for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, async () => {
    await cleanup();
    process.exit(130);
  });
}

function quiet(name, args, what) {
  const result = spawnSync(bin(name), args, { cwd: ROOT, encoding: "utf8", env: childEnv({ CI: "1" }) });
  if (result.status !== 0) throw new Error(`${what} failed:\n${(result.stderr || result.stdout || "").trim()}`);
}

function sqliteFile() {
  const dir = path.join(persist, "v3", "d1");
  const files = fs.readdirSync(dir, { recursive: true }).filter((f) => String(f).endsWith(".sqlite"));
  const candidates = files.map((f) => path.join(dir, String(f))).filter((f) => !f.includes("metadata"));
  if (candidates.length !== 1) throw new Error(`expected one D1 sqlite file under ${dir}, found ${candidates.length}`);
  return candidates[0];
}

/** Bytes per table (its b-tree and those of its indexes) and rows per table, from `dbstat`. */
function measure() {
  const db = new DatabaseSync(sqliteFile());
  try {
    const { page_count } = db.prepare("PRAGMA page_count").get();
    const { page_size } = db.prepare("PRAGMA page_size").get();
    const owner = new Map(
      db
        .prepare("SELECT name, tbl_name FROM sqlite_schema WHERE type IN ('table', 'index')")
        .all()
        .map((row) => [row.name, row.tbl_name]),
    );
    const bytes = {};
    for (const row of db.prepare("SELECT name, sum(pgsize) AS size FROM dbstat GROUP BY name").all()) {
      const table = owner.get(row.name) ?? row.name;
      bytes[table] = (bytes[table] ?? 0) + row.size;
    }
    const rows = {};
    for (const table of Object.keys(bytes)) {
      if (!/^[a-z_]+$/.test(table) || table.startsWith("sqlite_") || table.startsWith("_cf")) continue;
      rows[table] = db.prepare(`SELECT count(*) AS n FROM "${table}"`).get().n;
    }
    return { total: page_count * page_size, bytes, rows };
  } finally {
    db.close();
  }
}

const sha256 = (text) => createHash("sha256").update(text).digest("hex");
const userToken = (id) => `pk_capacity_${id}`;
const settle = { last: -1 };
let delivered = 0;
let before = null;
const ALICE_TOKENS = Array.from({ length: 4 }, (_, i) => `pk_capacity_alice_${i}`);

try {
  step(`Fresh local D1 in ${persist}: migrations and the demo world`);
  quiet("wrangler", ["d1", "migrations", "apply", "DB", "--local", "--persist-to", persist], "migrations");
  quiet("tsx", ["scripts/seed.ts", "--persist-to", persist], "the demo-world loader");

  // ── 2. App users with tokens and secure numbers (by SQL, like `npm run token`) ────────
  step(`${LOAD.appUsers} app users with tokens and secure numbers (SQL)`);
  {
    const db = new DatabaseSync(sqliteFile());
    const now = Date.now();
    const person = db.prepare(
      "INSERT INTO people (id, first_name, last_name, created_at, updated_at) VALUES (?, 'App', ?, ?, ?)",
    );
    const token = db.prepare(
      "INSERT INTO access_tokens (token_hash, prefix, person_id, scopes, created_at) VALUES (?, ?, ?, '[]', ?)",
    );
    const number = db.prepare(
      "INSERT INTO secure_numbers (e164, country_code, number, person_id, assigned_at, created_at) VALUES (?, '1', ?, ?, ?, ?)",
    );
    db.exec("BEGIN");
    for (let i = 0; i < LOAD.appUsers; i++) {
      const id = FIRST_USER_ID + i;
      const digits = `303${String(5_000_000 + i).padStart(7, "0")}`;
      person.run(id, `User${i}`, now, now);
      token.run(sha256(userToken(id)), userToken(id).slice(0, 8), id, now);
      number.run(`+1${digits}`, digits, id, now, now);
    }
    // Alice administers the tenant; a few tokens of hers spread the employee load over per-token budgets.
    for (const t of ALICE_TOKENS) token.run(sha256(t), t.slice(0, 8), 1, now);
    db.exec("COMMIT");
    db.close();
  }
  before = measure();

  // ── 3. Serve it and load the tenant through the API ────────────────────────────────
  receiver = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      delivered++;
      res.writeHead(200).end("ok");
    });
  });
  await new Promise((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  const hook = `http://127.0.0.1:${receiver.address().port}/hook`;

  const port = await new Promise((resolve) => {
    const probe = net.createServer().listen(0, "127.0.0.1", () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
  // A bundle of the Worker as it is now: other people editing src/ meanwhile would make
  // `wrangler dev` rebuild and drop the requests in flight.
  step("Bundling the Worker (wrangler deploy --dry-run)");
  quiet("wrangler", ["deploy", "--dry-run", "--outdir", path.join(tmp, "bundle")], "wrangler deploy --dry-run");
  // Its own copy of wrangler.toml pointing at that bundle (same bindings).
  const config = path.join(tmp, "wrangler.toml");
  const toml = fs.readFileSync(path.join(ROOT, "wrangler.toml"), "utf8");
  if (!/^main = .*$/m.test(toml)) throw new Error("wrangler.toml has no `main = …` line");
  fs.writeFileSync(
    config,
    toml
      .replace(/^main = .*$/m, `main = ${JSON.stringify(path.join(tmp, "bundle", "index.js"))}\nno_bundle = true`)
      .replace(/^migrations_dir = .*$/m, `migrations_dir = ${JSON.stringify(path.join(ROOT, "drizzle"))}`),
  );
  step(`Starting wrangler dev on 127.0.0.1:${port}`);
  server = spawn(
    bin("wrangler"),
    [
      "dev",
      "--config",
      config,
      "--ip",
      "127.0.0.1",
      "--port",
      String(port),
      "--persist-to",
      persist,
      "--show-interactive-dev-session=false",
    ],
    { cwd: ROOT, stdio: ["ignore", "ignore", "pipe"], env: childEnv({ CI: "1" }) },
  );
  let serverErrors = "";
  server.stderr.on("data", (chunk) => (serverErrors = (serverErrors + chunk).slice(-4000)));
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    if (server.exitCode !== null) throw new Error(`wrangler dev exited:\n${serverErrors}`);
    const ok = await fetch(`${base}/healthz`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (i > 120) throw new Error(`wrangler dev did not answer /healthz within 60 s:\n${serverErrors}`);
    await new Promise((r) => setTimeout(r, 500));
  }

  let requests = 0;
  async function api(method, url, token, body) {
    requests++;
    const response = await fetch(`${base}${url}`, {
      method,
      headers: {
        Authorization: `Bearer ${token}`,
        ...(body === undefined ? {} : { "Content-Type": "application/json" }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`${method} ${url} → ${response.status}: ${text.slice(0, 300)}`);
    return { response, body: text ? JSON.parse(text) : null };
  }
  /** Runs `work(i)` for i in [0, count) with CONCURRENCY in flight. */
  async function pool(count, work) {
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(CONCURRENCY, count) }, async () => {
        while (next < count) await work(next++);
      }),
    );
  }
  const timed = async (what, work) => {
    const t0 = Date.now();
    const before = requests;
    await work();
    process.stderr.write(`  ${what}: ${requests - before} requests in ${((Date.now() - t0) / 1000).toFixed(1)} s\n`);
  };

  // Every event a webhook can subscribe to, as the API's own document lists them.
  const doc = await fetch(`${base}/openapi.json`).then((r) => r.json());
  const resolve = (schema) => (schema?.$ref ? doc.components.schemas[schema.$ref.split("/").pop()] : schema);
  const create = resolve(
    doc.paths["/companies/{company_id}/webhooks"].post.requestBody.content["application/json"].schema,
  );
  const EVENTS = resolve(create.properties.event).enum;
  step("Loading the tenant through the API");
  await timed("webhooks for every event", () =>
    pool(EVENTS.length, (i) =>
      api("POST", "/companies/1/webhooks", ALICE_TOKENS[0], { endpoint: hook, event: EVENTS[i] }),
    ),
  );

  const employeeIds = [];
  await timed(`${LOAD.employees} employees`, () =>
    pool(LOAD.employees, async (i) => {
      const { body } = await api("POST", "/companies/1/employees", ALICE_TOKENS[i % ALICE_TOKENS.length], {
        first_name: `Employee${i}`,
        last_name: "Capacity",
        dob: "1988-04-12",
        emails: [{ email: `employee${i}@acme.example` }],
        phone_numbers: [{ country_code: "1", phone_number: `646555${String(i % 10_000).padStart(4, "0")}` }],
        addresses: [
          { line_1: `${i} Market St`, city: "San Francisco", region: "CA", postal_code: "94105", country: "US" },
        ],
        license: null,
      });
      employeeIds.push(body.id);
    }),
  );

  const at = new Date().toISOString();
  const scanEvents = employeeIds.flatMap((id) => [
    { type: "started", scan_id: `cap-${id}`, person_id: id, at },
    ...SITES.map((site) => ({
      type: "found",
      scan_id: `cap-${id}`,
      person_id: id,
      site_id: site,
      url: `https://site${site}.example/p/${id}`,
      data: { name: `Employee ${id} Capacity`, city: "San Francisco", age: 37, phones: ["+1 646 555 0000"] },
      at,
    })),
    { type: "completed", scan_id: `cap-${id}`, person_id: id, at },
  ]);
  await timed(`${scanEvents.length} scan events`, () =>
    pool(Math.ceil(scanEvents.length / 100), (i) =>
      api("POST", "/internal/scan-events", "sk_demo_scanner", scanEvents.slice(i * 100, i * 100 + 100)),
    ),
  );

  const users = Array.from({ length: LOAD.appUsers }, (_, i) => FIRST_USER_ID + i);
  await timed(`${LOAD.contactsPerUser} contacts per app user`, () =>
    pool(users.length, (u) =>
      api(
        "POST",
        "/contacts",
        userToken(users[u]),
        Array.from({ length: LOAD.contactsPerUser }, (_, c) => ({
          display_name: `Contact ${c} of ${u}`,
          phone_numbers: [`+1 415 ${String(200 + (u % 700)).padStart(3, "0")} ${String(c).padStart(4, "0")}`],
          emails: [`contact${c}.of${u}@mail.example`],
        })),
      ),
    ),
  );

  // Half chat messages of 200 characters, half call records (docs/capacity.md states the mix).
  await timed(`${LOAD.activities} activity records`, () =>
    pool(LOAD.activities, (k) => {
      const u = k % users.length;
      const chat = k % 2 === 0;
      return api("POST", "/apps/buzz/activity", userToken(users[u]), {
        type: chat ? "chat_message" : "outgoing_call_connected_secure",
        sendable_type: "person",
        sendable_id: users[u],
        receivable_type: "person",
        receivable_id: users[(u + 1) % users.length],
        ...(chat ? { message: "x".repeat(200), message_id: randomUUID() } : { call_time: 95 }),
      });
    }),
  );

  await timed(`${LOAD.blockedCalls} blocked calls`, () =>
    pool(LOAD.blockedCalls, (k) => {
      const u = k % users.length;
      const digits = `303${String(5_000_000 + u).padStart(7, "0")}`;
      const query = new URLSearchParams({
        number_code: "1",
        number: digits,
        inbound_code: "1",
        inbound: `212555${String(k % 10_000).padStart(4, "0")}`,
        caller_id: "Unknown Caller",
      });
      return api("GET", `/apps/buzz/trust-lookup?${query}`, "sk_demo_telephony");
    }),
  );

  // Wait for the queues: exposures from the scan events, deliveries to the receiver.
  const expected = { exposures: employeeIds.length * SITES.length };
  for (let i = 0; ; i++) {
    const { response } = await api("GET", "/companies/1/employees/exposures?per_page=1", ALICE_TOKENS[1]);
    const exposures = Number(response.headers.get("X-Total-Count"));
    const settled = exposures >= expected.exposures && i > 0 && delivered === settle.last;
    settle.last = delivered;
    if (settled) break;
    if (i > 240) throw new Error(`queues did not settle: ${exposures} of ${expected.exposures} exposures`);
    await new Promise((r) => setTimeout(r, 1_000));
  }
  process.stderr.write(`  queues settled: ${delivered} webhook deliveries received\n`);
} catch (err) {
  await cleanup();
  fail(err instanceof Error ? err.message : String(err));
}

// ── 4. Stop the server and measure ──────────────────────────────────────────────────
step("Stopping wrangler dev and measuring");
{
  const pid = server.pid;
  server.kill("SIGTERM");
  await new Promise((resolve) => (server.exitCode !== null ? resolve() : server.once("exit", resolve)));
  process.stderr.write(`  stopped wrangler dev (pid ${pid})\n`);
}
const after = measure();
receiver?.close();

/** Row types: the tables whose growth one row of the type causes, and the table counting the rows. */
const TYPES = [
  {
    type: "employee",
    count: "memberships",
    tables: [
      "people",
      "person_emails",
      "person_phones",
      "person_addresses",
      "memberships",
      "membership_roles",
      "index_work",
    ],
  },
  { type: "exposure", count: "exposures", tables: ["exposures", "exposure_history", "scan_results", "scans"] },
  { type: "contact", count: "contacts", tables: ["contacts", "contact_emails", "contact_phones", "contact_addresses"] },
  { type: "activity", count: "activities", tables: ["activities"] },
  { type: "blocked call", count: "blocked_calls", tables: ["blocked_calls"] },
  { type: "webhook delivery", count: "webhook_deliveries", tables: ["webhook_deliveries", "webhook_attempts"] },
];
const grown = (table) => (after.bytes[table] ?? 0) - (before.bytes[table] ?? 0);
const added = (table) => (after.rows[table] ?? 0) - (before.rows[table] ?? 0);
const perRow = Object.fromEntries(
  TYPES.map(({ type, count, tables }) => {
    const rows = added(count);
    const bytes = tables.reduce((sum, t) => sum + grown(t), 0);
    return [type, { rows, bytes, perRow: rows > 0 ? Math.round(bytes / rows) : null }];
  }),
);

// Steady state of one tenant under the retention rules of docs/capacity.md. The load
// delivered one month's events per employee (created, then one monthly scan with two
// listings); a month of deliveries scales that to the tenant's employees.
const deliveriesPerEmployeeMonth = perRow["webhook delivery"].rows / Math.max(1, perRow.employee.rows);
const monthly = {
  activity: TENANT.appUsers * TENANT.activitiesPerUser,
  "blocked call": TENANT.appUsers * TENANT.blockedPerUser,
  "webhook delivery": Math.round(TENANT.employees * deliveriesPerEmployeeMonth),
};
const steady = {
  employee: TENANT.employees,
  exposure: TENANT.employees * SITES.length,
  contact: TENANT.appUsers * TENANT.contactsPerUser,
  activity: monthly.activity * 12, // kept 365 days
  "blocked call": monthly["blocked call"] * 3, // kept 90 days
  "webhook delivery": monthly["webhook delivery"] * 3, // kept 90 days after they finished
};
const bytesOf = (counts) =>
  Object.entries(counts).reduce((sum, [type, rows]) => sum + rows * (perRow[type].perRow ?? 0), 0);
const tenantBytes = bytesOf(steady);
const D1_LIMIT = 10 * 1000 ** 3; // 10 GB
const result = {
  measuredAt: new Date().toISOString(),
  machine: `${os.cpus()[0]?.model ?? "unknown cpu"} × ${os.cpus().length}, ${os.platform()} ${os.release()}, node ${process.version}`,
  scale,
  tenant: TENANT,
  loaded: LOAD,
  webhookDeliveriesReceived: delivered,
  seconds: Math.round((Date.now() - started) / 1000),
  databaseBytes: { before: before.total, after: after.total, grown: after.total - before.total },
  perRow,
  steadyStateRows: steady,
  tenantSteadyBytes: Math.round(tenantBytes),
  tenantGrowthBeforeRetentionBytesPerMonth: Math.round(bytesOf(monthly)),
  tenantsPerD1: Math.floor(D1_LIMIT / tenantBytes),
  tenantsPerD1At70Percent: Math.floor((0.7 * D1_LIMIT) / tenantBytes),
};
fs.rmSync(tmp, { recursive: true, force: true });

if (flags.json) {
  console.log(JSON.stringify(result, null, 2));
} else {
  const mb = (b) => `${(b / 1e6).toFixed(2)} MB`;
  console.log(`\nCapacity measured ${result.measuredAt} on ${result.machine} (scale ${scale}, ${result.seconds} s)`);
  console.log(`database: ${mb(before.total)} before, ${mb(after.total)} after (+${mb(after.total - before.total)})\n`);
  console.log("row type           rows added   bytes (with indexes)   bytes/row");
  for (const [type, { rows, bytes, perRow: each }] of Object.entries(perRow)) {
    console.log(
      `${type.padEnd(18)} ${String(rows).padStart(10)}   ${String(bytes).padStart(20)}   ${String(each ?? "-").padStart(9)}`,
    );
  }
  console.log(`\none tenant at steady state (1,000 employees, 200 app users; retention applied): ${mb(tenantBytes)}`);
  console.log(
    `growth per tenant per month until retention starts pruning: ${mb(result.tenantGrowthBeforeRetentionBytesPerMonth)}`,
  );
  console.log(
    `one D1 (10 GB) holds ${result.tenantsPerD1} such tenants; ${result.tenantsPerD1At70Percent} at the 70 % mark`,
  );
  console.log(
    `(loaded ${LOAD.employees} employees, ${LOAD.appUsers} app users × ${LOAD.contactsPerUser} contacts, ${LOAD.activities} activity records, ${LOAD.blockedCalls} blocked calls; bytes per row extrapolated linearly to the stated tenant)`,
  );
}
