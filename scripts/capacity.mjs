// `npm run capacity [-- --scale 0.5] [-- --json] [-- --big-scan 5000]`: what the platform's data
// costs in D1, in the Person Durable Objects and in the Company objects, measured on the real schema
// (docs/capacity.md); and how another company's writes fare while a big company's scan runs.
//
// 1. The Worker as it would deploy (`wrangler deploy --dry-run`) on Miniflare directly, with a
//    fresh temporary state (scripts/lib/local-worker.mjs: 127.0.0.1 and a free port, never a fixed
//    one): D1 migrations, the demo world, rate limits raised (this measures bytes, not limits).
//    Miniflare keeps D1 in one SQLite file and each Durable Object in a SQLite file of its own
//    (`state/do/<worker>-Person/<object id>.sqlite`, `state/do/<worker>-Company/<object id>.sqlite`).
// 2. Load in phases, through the API wherever the API can write it (accounts and tokens by SQL,
//    as `npm run token` / `npm run numbers` would): employer companies with their first Admin,
//    app users (a heartbeat each: secure number, object), company phones, webhooks, employees
//    (one bulk call), two monthly scans through the scan-events queue with deliveries to a local
//    receiver, the issue's target load for three people (1,000 blocked calls and 300 chats, then
//    9,000 contacts, kept in their objects), samples of each object record type, trust requests
//    (kept in the object of the person asked), trust decisions (in the decider's object, and
//    their mirror in the object of the person decided about) and company trust settings (in the
//    setter's object). D1 holds no contact and no decision any more. A webhook delivery is in D1
//    while it is on its way; once finished it is handed to its company's object
//    (src/services/webhook-delivery/archive.ts), so its D1 bytes are sampled while in flight
//    (every 100 ms during the phases that send them) and its object bytes after.
// 3. Around every phase, with the Worker running, the stores are read directly: D1's
//    `PRAGMA page_count × page_size` and the `dbstat` virtual table per table and its indexes;
//    each touched person object's page count and `dbstat`, and Acme's Company object's. Pages are
//    4 KiB: the counts make every large figure span many pages (the small ones, a company's own
//    rows and its phones, span a few and are rough; docs/capacity.md says how rough). Records of
//    which an object holds a few (trust decisions, their mirror, company settings: one to 400 an
//    object) fill less than a page, so they are also measured in bytes used (`dbstat`'s page size
//    less its unused bytes): the row with its cell and index overhead, without a page's free room.
// 4. Per-record figures and the stated sizes of docs/capacity.md are composed from the phases.
// 5. The big scan: a company of `--big-scan` employees (default 5,000, what a shared 2-core machine
//    scans in a couple of minutes; people and memberships by SQL, as scripts/lib/big-company.mjs
//    builds them, so no person object is started for each) is scanned through
//    `POST /internal/scan-events`, and another company's employee writes
//    (`PUT /companies/{id}/employees/{id}`, one at a time) are timed before the scan (idle) and
//    while its events are applied (`big_scan_other_writes_ms`).
//
// `--scale` multiplies the scalable loads (default 1); the target load is fixed by the issue.
// `--smoke`: every phase with a handful of records, a 300-employee big company and a big scan of
// 50 employees, in about a minute; its figures mean nothing (a few records in a page), it proves
// the script still runs against the code (.ci/run runs it).
import { execFileSync } from "node:child_process";
import { createHash, randomUUID } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { DatabaseSync } from "node:sqlite";
import { tsImport } from "tsx/esm/api";
import { ROOT, fail, parseArgs, step } from "./lib/cli.mjs";
import { measureBigCompany } from "./lib/big-company.mjs";
import { startLocalWorker } from "./lib/local-worker.mjs";

const { flags } = parseArgs(process.argv.slice(2), {
  switches: ["json", "smoke"],
  options: ["scale", "big-scan", "json-file"],
  usage:
    "Usage: npm run capacity [-- --scale <0..4>] [-- --big-scan <employees>] [-- --json] [-- --json-file <path>] [-- --smoke]\n" +
    "What the platform's data costs in D1 and in the objects, and other companies' writes during a big scan (docs/capacity.md).",
});
// `--json-file <path>`: also write the JSON there (docs/capacity.md is written from it).
const jsonFile = flags["json-file"] ? path.resolve(flags["json-file"]) : null;
const smoke = flags.smoke === true;
if (smoke && flags.scale !== undefined) fail("--smoke sets its own sizes: leave --scale out");
const scale = Number(flags.scale ?? 1);
if (!(scale > 0 && scale <= 4)) fail("--scale must be a number in (0, 4]");
const n = (count) => Math.max(3, Math.round(count * scale));

/** What is loaded (scaled by --scale). The trust phases need 11 app users at least. */
const LOAD = smoke
  ? { companies: 2, phonesPerCompany: 2, webhooksPerCompany: null, appUsers: 13, employees: 5, trustPairs: 3 }
  : {
      companies: n(50), // employer companies, each with its first Admin
      phonesPerCompany: 4, // company phones, each verified by the operator
      webhooksPerCompany: null, // one per event the API knows (filled from /openapi.json)
      appUsers: n(500), // people with a token, an email and a phone; a heartbeat each
      employees: Math.min(1_000, n(500)), // of Acme, one POST /employees/bulk (at most 1,000 a call)
      trustPairs: n(400), // requests, decisions, company trust settings
    };
/** The issue's target load (docs/capacity.md): three people. Not scaled. */
const TARGET = smoke
  ? { people: 3, blockedCalls: 6, chats: 6, contacts: 30 }
  : { people: 3, blockedCalls: 1_000, chats: 300, contacts: 9_000 };
/** Samples for the per-record object figures: one object each, not scaled. */
const SAMPLE = smoke
  ? { blockedCalls: 5, callRecords: 5, chats: 5 }
  : { blockedCalls: 1_000, callRecords: 1_000, chats: 500 };
/** The big company built in SQLite (scripts/lib/big-company.mjs) and how often each page is read. */
const BIG = smoke ? { employees: 300, runs: 1 } : { employees: Math.round(100_000 * Math.min(scale, 1)), runs: 9 };
/**
 * The big scan (step 5): its company's employees (`--big-scan`), the other company's employees
 * whose writes are timed, and how many writes are timed idle (those during the scan: as many as
 * fit in it, one at a time).
 */
const BIG_SCAN = {
  employees: Number(flags["big-scan"] ?? (smoke ? 50 : 5_000)),
  otherEmployees: smoke ? 3 : 10,
  idleWrites: smoke ? 10 : 200,
};
if (!(Number.isInteger(BIG_SCAN.employees) && BIG_SCAN.employees >= 10 && BIG_SCAN.employees <= 100_000))
  fail("--big-scan must be a whole number of employees in [10, 100000]");
/** Target of issue 40: another company's write p95 during a big scan within 2× of idle. */
const BIG_SCAN_LIMIT = 2;
const CHAT_TEXT = "x".repeat(200);
const SITES = [3, 4]; // PeopleFinder and SpyDirectory of the demo world: two listings per employee
const ACME = 1;
const CONCURRENCY = 12;
/** Contacts a sync request carries; the target's contacts are a whole number of syncs per person. */
const CONTACTS_PER_SYNC = smoke ? 5 : 500;
const FIRST_USER_ID = 100_000;

/**
 * The stated sizes docs/capacity.md answers for. A company: 1,000 employees, two listings found
 * on their first scan, a scan a month, 5 phones, a webhook per event. An app user: 500 contacts;
 * a month: 25 call records written, 25 chats sent and 25 received (200 characters), 100 blocked
 * calls; 10 trust requests received, 10 decisions, 2 company trust settings.
 */
const COMPANY = { employees: 1_000, listings: 2, phones: 5 };
const APP_USER = {
  contacts: 500,
  callRecordsPerMonth: 25,
  chatsSentPerMonth: 25,
  chatsReceivedPerMonth: 25,
  blockedCallsPerMonth: 100,
  trustRequestsReceived: 10,
  trustDecisions: 10,
  companyTrust: 2,
};
const KEEP = { blockedCalls: 1_000, blockedDays: 90, activityDays: 365 };
/**
 * Retention of what a company's scans and deliveries leave (docs/decisions.md): finished deliveries
 * in the company's object (its alarm; src/domain/webhook-history.ts), successful ones 3 days after
 * they finished, failed ones 30; finished scans and scan results in D1 a week
 * (src/services/retention.ts; a found result's listing stays with its exposure).
 */
const COMPANY_KEEP = { successDays: 3, failedDays: 30, scanDays: 7, resultDays: 7 };
/** Issue 40's targets for the stated company: D1 bytes after a year, and companies one D1 holds. */
const COMPANY_TARGET = { d1Bytes: 100_000, perD1: 100_000 };
const DAYS_PER_MONTH = 365 / 12;
/** Tables that hold what a scan was (the scan row and its results): kept a week. */
const SCAN_HISTORY = new Set(["scans", "scan_results"]);
const MAX_CONTACTS = 10_000; // per person (src/objects/person/limits.ts)
const D1_LIMIT = 10 * 1000 ** 3; // 10 GB
const OBJECT_LIMIT = 10 * 1000 ** 3; // 10 GB per object
/**
 * Tables that drain, or are pruned within a day or two, counted apart from the steady state:
 * index work (applied, then deleted), digests of index values (24 h), dead letters, batch guards
 * (never hold a row), trust-request day counts (today and yesterday).
 */
const TRANSIENT = new Set(["index_work", "index_written", "dead_letters", "batch_guards", "trust_request_days"]);
const DELIVERY = new Set(["webhook_deliveries", "webhook_attempts"]);
/** The company object's tables of finished deliveries (drizzle-company/). */
const COMPANY_DELIVERY = ["deliveries", "attempts"];
/** The company object's tables of its scan side (drizzle-company/0001): what a listing keeps, and what a scan was. */
const COMPANY_LISTING = ["exposures", "exposure_history", "events", "counters", "sites"];
const COMPANY_SCAN_HISTORY = ["scans", "scan_results"];
const ACCOUNT = new Set([
  "people",
  "person_emails",
  "person_phones",
  "person_addresses",
  "person_akas",
  "access_tokens",
  "secure_numbers",
]);

const started = Date.now();
const sha256 = (text) => createHash("sha256").update(text).digest("hex");
const log = (message) => process.stderr.write(`  ${message}\n`);

// ── Reading the stores ─────────────────────────────────────────────────────────────
/** Runs `read(db)` on a read-only connection, retrying while the writer holds a lock. */
function readSqlite(file, read) {
  for (let attempt = 0; ; attempt++) {
    let db;
    try {
      db = new DatabaseSync(file, { readOnly: true });
      return read(db);
    } catch (err) {
      if (attempt < 50 && /locked|busy/i.test(String(err))) {
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 100);
        continue;
      }
      throw err;
    } finally {
      db?.close();
    }
  }
}

/** Bytes of the file (pages × page size, free pages apart) and, with `detail`, of every table with its indexes. */
function sizeOf(file, detail = true) {
  if (!fs.existsSync(file)) return { bytes: 0, free: 0, tables: {}, used: {}, rows: {} };
  return readSqlite(file, (db) => {
    const { page_count } = db.prepare("PRAGMA page_count").get();
    const { page_size } = db.prepare("PRAGMA page_size").get();
    const { freelist_count } = db.prepare("PRAGMA freelist_count").get();
    const result = { bytes: page_count * page_size, free: freelist_count * page_size, tables: {}, used: {}, rows: {} };
    if (!detail) return result;
    const owner = new Map(
      db
        .prepare("SELECT name, tbl_name FROM sqlite_schema WHERE type IN ('table', 'index')")
        .all()
        .map((row) => [row.name, row.tbl_name]),
    );
    const stat = "SELECT name, sum(pgsize) AS size, sum(pgsize - unused) AS used FROM dbstat GROUP BY name";
    for (const row of db.prepare(stat).all()) {
      const table = owner.get(row.name) ?? row.name;
      result.tables[table] = (result.tables[table] ?? 0) + row.size;
      result.used[table] = (result.used[table] ?? 0) + row.used;
    }
    for (const table of Object.keys(result.tables)) {
      if (!/^[a-z_]+$/.test(table) || table.startsWith("sqlite_") || table.startsWith("_cf")) continue;
      result.rows[table] = db.prepare(`SELECT count(*) AS n FROM "${table}"`).get().n;
    }
    return result;
  });
}

const sumBytes = (tables, keep = () => true) =>
  Object.entries(tables).reduce((sum, [table, bytes]) => sum + (keep(table) ? bytes : 0), 0);

/** `after - before` per key of two { key: number } maps, zeros left out. */
function delta(before, after) {
  const out = {};
  for (const key of new Set([...Object.keys(before), ...Object.keys(after)])) {
    const d = (after[key] ?? 0) - (before[key] ?? 0);
    if (d !== 0) out[key] = d;
  }
  return out;
}

// ── The run ────────────────────────────────────────────────────────────────────────────
/** @type {Awaited<ReturnType<typeof startLocalWorker>> | null} */
let worker = null;
/** @type {http.Server | null} */
let receiver = null;
let delivered = 0;
async function stop() {
  receiver?.close();
  receiver = null;
  const w = worker;
  worker = null;
  await w?.dispose();
}
for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, async () => {
    await stop();
    process.exit(130);
  });
}

/** @type {string[]} */
const workerLog = [];
/** Everything measured, filled phase by phase. */
const phases = {};
let result;
try {
  step("Starting the Worker on Miniflare (bundle of the code as it is, fresh temporary state)");
  worker = await startLocalWorker({
    log,
    override(options) {
      for (const limit of Object.values(options.ratelimits ?? {})) limit.simple.limit = 10_000_000;
      // The Worker's log lines are kept (the last 200), shown only when the run fails.
      options.handleStructuredLogs = (/** @type {{ message: string }} */ entry) => {
        workerLog.push(entry.message);
        if (workerLog.length > 200) workerLog.shift();
      };
    },
  });
  const state = worker.state;
  const d1Dir = path.join(state, "d1", "miniflare-D1DatabaseObject");
  const d1File = () => {
    const files = fs.readdirSync(d1Dir).filter((f) => f.endsWith(".sqlite") && f !== "metadata.sqlite");
    if (files.length !== 1) throw new Error(`expected one D1 file in ${d1Dir}, found ${files.length}`);
    return path.join(d1Dir, files[0]);
  };
  const personNamespace = await worker.mf.getDurableObjectNamespace("PERSON");
  const companyNamespace = await worker.mf.getDurableObjectNamespace("COMPANY");
  /** Where Miniflare keeps the objects of one class (`Person`, `Company`): a folder per class. */
  const objectDir = (className) => {
    const dir = path.join(state, "do");
    const found = fs.existsSync(dir) ? fs.readdirSync(dir).find((name) => name.endsWith(`-${className}`)) : undefined;
    return found ? path.join(dir, found) : null;
  };
  // An object's file is named after its id: idFromName("person:<id>") (src/objects/person/name.ts),
  // idFromName("company:<id>") (src/objects/company/stub.ts).
  const objectFile = (personId) =>
    path.join(objectDir("Person") ?? "", `${personNamespace.idFromName(`person:${personId}`).toString()}.sqlite`);
  const companyObjectFile = (companyId) =>
    path.join(objectDir("Company") ?? "", `${companyNamespace.idFromName(`company:${companyId}`).toString()}.sqlite`);
  /** The objects of one class: how many, and their bytes. */
  const allObjects = (className = "Person") => {
    const dir = objectDir(className);
    if (!dir) return { count: 0, bytes: 0 };
    const files = fs.readdirSync(dir).filter((f) => f.endsWith(".sqlite") && f !== "metadata.sqlite");
    return files.reduce(
      (acc, f) => ({ count: acc.count + 1, bytes: acc.bytes + sizeOf(path.join(dir, f), false).bytes }),
      { count: 0, bytes: 0 },
    );
  };
  const objectRows = (personId, table) => sizeOf(objectFile(personId)).rows[table] ?? 0;
  /**
   * The `n` of a `SELECT count(*) AS n …` in a company's object, read from its file as it stands: a
   * company created since drizzle/0032 keeps its scans and exposures there. 0 before the object
   * has them (no file, or its tables not made yet).
   */
  const companyObjectCount = (companyId, query) => {
    const file = companyObjectFile(companyId);
    if (!fs.existsSync(file)) return 0;
    try {
      return readSqlite(file, (db) => db.prepare(query).get().n);
    } catch (err) {
      if (/no such table/.test(String(err))) return 0;
      throw err;
    }
  };

  /**
   * A snapshot of D1 (whole), of the person objects (all: count and bytes; `persons`: in detail)
   * and of the Company objects (all: count and bytes; Acme's, which the deliveries fill, in detail).
   */
  const snapshot = (persons, group) => ({
    d1: sizeOf(d1File()),
    objects: allObjects(),
    persons: Object.fromEntries(persons.map((p) => [p, sizeOf(objectFile(p))])),
    group: group.map((p) => sizeOf(objectFile(p))),
    companyObjects: allObjects("Company"),
    acmeObject: sizeOf(companyObjectFile(ACME)),
  });
  /** `after - before` of one object, or summed over a group of objects. */
  const objectDelta = (before, after) => ({
    bytes: after.bytes - before.bytes,
    tables: delta(before.tables, after.tables),
    used: delta(before.used, after.used),
    rows: delta(before.rows, after.rows),
  });
  const sumDeltas = (deltas) => {
    const add = (a, b) => {
      for (const [key, value] of Object.entries(b)) a[key] = (a[key] ?? 0) + value;
      return a;
    };
    return deltas.reduce(
      (acc, d) => ({
        objects: acc.objects + 1,
        bytes: acc.bytes + d.bytes,
        tables: add(acc.tables, d.tables),
        used: add(acc.used, d.used),
        rows: add(acc.rows, d.rows),
      }),
      { objects: 0, bytes: 0, tables: {}, used: {}, rows: {} },
    );
  };

  const d1Count = (sql) => readSqlite(d1File(), (db) => db.prepare(sql).get().n);

  /**
   * Waits until the background is done: the same index work, deliveries in D1 (on their way, and
   * finished ones not yet handed to their company's object) and received deliveries over three
   * polls, no finished delivery left in D1, and `ready()` true (e.g. every exposure or blocked call
   * landed). A finished delivery whose hand-over failed waits for the minute sweep, which Miniflare
   * does not run here: the operator's move (`POST /internal/company-data/move`) takes it instead.
   */
  async function settle(ready = () => true, what = "the background") {
    const deadline = Date.now() + 240_000;
    let last = "";
    let same = 0;
    let moved = false;
    while (Date.now() < deadline) {
      const finished = d1Count("SELECT count(*) AS n FROM webhook_deliveries WHERE status IN ('success', 'failed')");
      const now = JSON.stringify([
        d1Count("SELECT count(*) AS n FROM index_work"),
        d1Count("SELECT count(*) AS n FROM webhook_deliveries WHERE status IN ('pending', 'dispatched')"),
        finished,
        delivered,
      ]);
      same = now === last ? same + 1 : 0;
      last = now;
      if (same >= 2 && finished > 0 && !moved) {
        log(`${finished} finished deliveries left in D1: the operator's move hands them over`);
        await api("POST", "/internal/company-data/move", ADMIN);
        moved = true;
      }
      if (same >= 2 && finished === 0 && ready()) return;
      await new Promise((r) => setTimeout(r, 700));
    }
    throw new Error(
      `${what} did not settle within 240 s (index work, deliveries on their way, finished in D1, received: ${last})`,
    );
  }

  /** The names of D1's delivery tables and their indexes (for `dbstat` by name). */
  const deliveryBtrees = readSqlite(d1File(), (db) =>
    db
      .prepare(
        `SELECT name FROM sqlite_schema WHERE type IN ('table', 'index') AND tbl_name IN (${[...DELIVERY].map(() => "?").join(", ")})`,
      )
      .all(...DELIVERY)
      .map((row) => String(row.name)),
  );
  /** D1's deliveries now: rows (and attempts), and their tables' pages and bytes used. */
  const deliveriesInD1 = () =>
    readSqlite(d1File(), (db) => {
      const stat = db.prepare("SELECT sum(pgsize) AS size, sum(pgsize - unused) AS used FROM dbstat WHERE name = ?");
      const sample = {
        rows: Number(db.prepare("SELECT count(*) AS n FROM webhook_deliveries").get().n),
        attempts: Number(db.prepare("SELECT count(*) AS n FROM webhook_attempts").get().n),
        bytes: 0,
        used: 0,
      };
      for (const name of deliveryBtrees) {
        const row = stat.get(name);
        sample.bytes += Number(row?.size ?? 0);
        sample.used += Number(row?.used ?? 0);
      }
      return sample;
    });
  /**
   * Samples D1's deliveries every 100 ms until `stop()`: a delivery is in D1 only while it is on its
   * way, so its D1 bytes are read at the sample with the most of them, less the tables as they were
   * before (`stop()` answers that sample's growth).
   */
  function sampleDeliveries() {
    const before = deliveriesInD1();
    let peak = { rows: 0, attempts: 0, bytes: 0, used: 0, atSample: 0 };
    let samples = 0;
    let running = true;
    const loop = (async () => {
      while (running) {
        const now = deliveriesInD1();
        samples++;
        if (now.rows - before.rows > peak.rows)
          peak = {
            rows: now.rows - before.rows,
            attempts: now.attempts - before.attempts,
            bytes: now.bytes - before.bytes,
            used: now.used - before.used,
            atSample: samples,
          };
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    return async () => {
      running = false;
      await loop;
      return { ...peak, samples };
    };
  }

  /**
   * Runs one phase between two snapshots; `work()` answers how many of what it loaded. The
   * objects of `persons` are reported one by one, those of `group` summed (many objects, a
   * record or two each).
   */
  async function phase(name, work, { persons = [], group = [], ready, inFlight = false } = {}) {
    const before = snapshot(persons, group);
    const t0 = Date.now();
    const stopSampling = inFlight ? sampleDeliveries() : null;
    const counts = (await work()) ?? {};
    await settle(ready, name);
    const inFlightPeak = stopSampling ? await stopSampling() : null;
    const after = snapshot(persons, group);
    const tables = delta(before.d1.tables, after.d1.tables);
    phases[name] = {
      counts,
      d1: {
        fileBytes: after.d1.bytes - before.d1.bytes,
        freeBytes: after.d1.free - before.d1.free,
        tableBytes: sumBytes(tables),
        steadyBytes: sumBytes(tables, (t) => !TRANSIENT.has(t)),
        tables,
        rows: delta(before.d1.rows, after.d1.rows),
        ...(inFlightPeak ? { deliveriesInFlightPeak: inFlightPeak } : {}),
      },
      companyObjects: {
        created: after.companyObjects.count - before.companyObjects.count,
        bytes: after.companyObjects.bytes - before.companyObjects.bytes,
        acme: objectDelta(before.acmeObject, after.acmeObject),
      },
      objects: {
        created: after.objects.count - before.objects.count,
        bytes: after.objects.bytes - before.objects.bytes,
        ...(persons.length > 0
          ? {
              persons: Object.fromEntries(persons.map((p) => [p, objectDelta(before.persons[p], after.persons[p])])),
            }
          : {}),
        ...(group.length > 0
          ? { group: sumDeltas(group.map((_, i) => objectDelta(before.group[i], after.group[i]))) }
          : {}),
      },
    };
    log(
      `${name}: D1 +${phases[name].d1.tableBytes} B in tables, person objects +${phases[name].objects.bytes} B, ` +
        `company objects +${phases[name].companyObjects.bytes} B (${((Date.now() - t0) / 1000).toFixed(1)} s)` +
        (inFlightPeak ? `; at most ${inFlightPeak.rows} deliveries in D1 at once` : ""),
    );
  }

  // ── HTTP ──
  const base = worker.url;
  async function api(method, url, token, body) {
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
    const parsed = text ? JSON.parse(text) : null;
    // Some answers are wrapped as { success, data }.
    return parsed && typeof parsed === "object" && "data" in parsed && "success" in parsed ? parsed.data : parsed;
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
  /** Runs SQL statements through the D1 binding, 100 to a batch. */
  async function sqlBatch(statements) {
    for (let i = 0; i < statements.length; i += 100) {
      await worker.db.batch(statements.slice(i, i + 100).map(([sql, ...args]) => worker.db.prepare(sql).bind(...args)));
    }
  }

  receiver = http.createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      delivered++;
      res.writeHead(200).end("ok");
    });
  });
  await new Promise((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  const hook = `http://127.0.0.1:${receiver.address().port}/hook`;

  step("Demo world (src/fixtures/demo-world.ts, the loader npm run db:seed uses) and the operator's token");
  const { createDb } = await tsImport("../src/db/client.ts", import.meta.url);
  const { loadDemoWorld } = await tsImport("../src/fixtures/demo-world.ts", import.meta.url);
  await loadDemoWorld(createDb(worker.db));
  const ADMIN = "sk_capacity_admin";
  const now = Date.now();
  await sqlBatch([
    [
      "INSERT INTO access_tokens (token_hash, prefix, service_name, scopes, created_at) VALUES (?, ?, 'capacity', ?, ?)",
      sha256(ADMIN),
      ADMIN.slice(0, 8),
      JSON.stringify(["platform:admin"]),
      now,
    ],
    [
      "INSERT INTO access_tokens (token_hash, prefix, person_id, scopes, created_at) VALUES (?, ?, 1, '[]', ?)",
      sha256("pk_capacity_alice"),
      "pk_capac",
      now,
    ],
    // Seats for the employees loaded below (the bench raises them the same way).
    [
      "UPDATE company_seats SET quantity = quantity + ? WHERE company_id = ? AND license_id = 'scan'",
      LOAD.employees,
      ACME,
    ],
  ]);
  const ALICE = "pk_capacity_alice";
  const doc = await fetch(`${base}/openapi.json`).then((r) => r.json());
  const schemaOf = (s) => (s?.$ref ? doc.components.schemas[s.$ref.split("/").pop()] : s);
  const EVENTS = schemaOf(
    schemaOf(doc.paths["/companies/{company_id}/webhooks"].post.requestBody.content["application/json"].schema)
      .properties.event,
  ).enum;
  LOAD.webhooksPerCompany = EVENTS.length;

  // ── Companies ──
  step(`Loading ${LOAD.companies} employer companies, each with its first Admin (platform admin API)`);
  const companies = []; // { id, admin, token }
  await phase("companies", async () => {
    await pool(LOAD.companies, async (i) => {
      const company = await api("POST", "/internal/companies", ADMIN, {
        kind: "employer",
        name: `Capacity Company ${i}`,
        slug: `capacity-${i}`,
        url: `https://capacity-${i}.example`,
      });
      const member = await api("POST", `/internal/companies/${company.id}/members`, ADMIN, {
        first_name: "Admin",
        last_name: `Company${i}`,
        email: `admin@capacity-${i}.example`,
        roles: ["Admin"],
      });
      companies.push({ id: company.id, admin: member.person_id, token: `pk_capacity_admin_${i}` });
    });
    return { companies: LOAD.companies };
  });
  await sqlBatch(
    companies.map((c) => [
      "INSERT INTO access_tokens (token_hash, prefix, person_id, scopes, created_at) VALUES (?, ?, ?, '[]', ?)",
      sha256(c.token),
      c.token.slice(0, 8),
      c.admin,
      now,
    ]),
  );

  // ── App users ──
  step(`Loading ${LOAD.appUsers} app users: accounts, tokens, pool numbers (SQL), then a heartbeat each`);
  const users = Array.from({ length: LOAD.appUsers }, (_, i) => FIRST_USER_ID + i);
  const userToken = (id) => `pk_capacity_${id}`;
  await phase("app user accounts", async () => {
    const statements = [];
    for (const [i, id] of users.entries()) {
      const secure = `303${String(5_000_000 + i).padStart(7, "0")}`;
      const own = `917${String(5_000_000 + i).padStart(7, "0")}`;
      statements.push(
        [
          "INSERT INTO people (id, first_name, last_name, created_at, updated_at) VALUES (?, 'App', ?, ?, ?)",
          id,
          `User${i}`,
          now,
          now,
        ],
        ['INSERT INTO person_emails (person_id, email, "primary") VALUES (?, ?, 1)', id, `app.user${i}@mail.example`],
        [
          "INSERT INTO person_phones (person_id, country_code, phone_number, e164, \"primary\") VALUES (?, '1', ?, ?, 1)",
          id,
          own,
          `+1${own}`,
        ],
        [
          "INSERT INTO access_tokens (token_hash, prefix, person_id, scopes, created_at) VALUES (?, ?, ?, '[]', ?)",
          sha256(userToken(id)),
          userToken(id).slice(0, 8),
          id,
          now,
        ],
        // The pool (npm run numbers -- add): the heartbeat assigns one to each user.
        [
          "INSERT INTO secure_numbers (e164, country_code, number, created_at) VALUES (?, '1', ?, ?)",
          `+1${secure}`,
          secure,
          now,
        ],
      );
    }
    await sqlBatch(statements);
    return { appUsers: users.length };
  });
  const secureOf = new Map();
  await phase("app user heartbeats", async () => {
    await pool(users.length, async (i) => {
      const beat = await api("GET", "/apps/buzz/heartbeat", userToken(users[i]));
      if (!beat?.secure_number) throw new Error(`heartbeat gave user ${users[i]} no secure number`);
      secureOf.set(users[i], {
        code: String(beat.secure_number.country_code),
        number: String(beat.secure_number.number),
      });
    });
    return { heartbeats: users.length };
  });

  // ── Company phones and webhooks ──
  const phoneCount = LOAD.companies * LOAD.phonesPerCompany;
  step(`Loading ${phoneCount} company phones (${LOAD.phonesPerCompany} per company), each verified by the operator`);
  await phase("company phones", async () => {
    await pool(phoneCount, async (k) => {
      const c = companies[k % companies.length];
      const phone = await api("POST", `/companies/${c.id}/phones`, c.token, {
        phone_full: `+1718555${String(k).padStart(4, "0")}`,
        label: "Front desk",
      });
      await api("POST", `/internal/company-phones/${phone.id}/verify`, ADMIN);
    });
    return { phones: phoneCount };
  });

  const webhookCount = (LOAD.companies + 1) * EVENTS.length;
  step(`Loading ${webhookCount} webhooks: one per event (${EVENTS.length}) for every company and Acme`);
  /** A webhook of each company (its id), for the test sends below. */
  const webhookOf = new Map();
  await phase("webhooks", async () => {
    const owners = [...companies.map((c) => ({ id: c.id, token: c.token })), { id: ACME, token: ALICE }];
    await pool(webhookCount, async (k) => {
      const owner = owners[Math.floor(k / EVENTS.length)];
      const webhook = await api("POST", `/companies/${owner.id}/webhooks`, owner.token, {
        endpoint: hook,
        event: EVENTS[k % EVENTS.length],
      });
      webhookOf.set(owner.id, webhook.id);
    });
    return { webhooks: webhookCount };
  });

  // A company's object starts with its first finished delivery: a test send each (handed over at once).
  const firstEntries = companies.slice(1, 11);
  step(`A first entry in ${firstEntries.length} companies' objects (POST /companies/{id}/webhooks/{id}/test)`);
  await phase("company objects: a first entry", async () => {
    await pool(firstEntries.length, (k) =>
      api(
        "POST",
        `/companies/${firstEntries[k].id}/webhooks/${webhookOf.get(firstEntries[k].id)}/test`,
        firstEntries[k].token,
      ),
    );
    return { companyObjects: firstEntries.length };
  });

  // ── Employees and their scans ──
  step(`Loading ${LOAD.employees} employees of Acme (one POST /companies/1/employees/bulk)`);
  const employeeIds = [];
  await phase(
    "employees",
    async () => {
      const answer = await api(
        "POST",
        `/companies/${ACME}/employees/bulk`,
        ALICE,
        Array.from({ length: LOAD.employees }, (_, i) => ({
          first_name: `Employee${i}`,
          last_name: "Capacity",
          dob: "1988-04-12",
          emails: [{ email: `employee${i}@acme.example` }],
          phone_numbers: [{ country_code: "1", phone_number: `646555${String(i).padStart(4, "0")}` }],
          addresses: [
            { line_1: `${i} Market St`, city: "San Francisco", region: "CA", postal_code: "94105", country: "US" },
          ],
          license: "scan",
        })),
      );
      const list = Array.isArray(answer) ? answer : (answer?.data ?? []);
      for (const e of list) employeeIds.push(e.id);
      if (employeeIds.length !== LOAD.employees) throw new Error(`bulk created ${employeeIds.length} employees`);
      return { employees: LOAD.employees };
    },
    { inFlight: true },
  );

  const scanMonth = async (month) => {
    const at = new Date(Date.now() + (month - 1) * 1000).toISOString();
    const events = employeeIds.flatMap((id) => [
      { type: "started", scan_id: `cap-${month}-${id}`, person_id: id, at },
      ...SITES.map((site) => ({
        type: "found",
        scan_id: `cap-${month}-${id}`,
        person_id: id,
        site_id: site,
        url: `https://site${site}.example/p/${id}`,
        data: { name: `Employee ${id} Capacity`, city: "San Francisco", age: 37, phones: ["+1 646 555 0000"] },
        at,
      })),
      { type: "completed", scan_id: `cap-${month}-${id}`, person_id: id, at },
    ]);
    await pool(Math.ceil(events.length / 100), (i) =>
      api("POST", "/internal/scan-events", "sk_demo_scanner", events.slice(i * 100, i * 100 + 100)),
    );
    return events.length;
  };
  // Acme keeps its scan side in its object (a company created since drizzle/0032).
  const completedScans = () =>
    companyObjectCount(ACME, "SELECT count(*) AS n FROM scans WHERE status = 'completed' AND id LIKE 'cap-%'");
  step(`First monthly scan: ${LOAD.employees} employees × ${SITES.length} listings (scan-events queue)`);
  await phase(
    "scan, first month",
    async () => ({ scanEvents: await scanMonth(1), exposures: LOAD.employees * SITES.length }),
    { ready: () => completedScans() >= LOAD.employees, inFlight: true },
  );
  step("Second monthly scan: the same listings found again");
  await phase("scan, a later month", async () => ({ scanEvents: await scanMonth(2) }), {
    ready: () => completedScans() >= 2 * LOAD.employees,
    inFlight: true,
  });

  // ── The issue's target: three people ──
  const [A, B, C] = users;
  const trio = [A, B, C];
  const blockedFor = (personId, count, offset) =>
    pool(count, (k) => {
      const secure = secureOf.get(personId);
      const query = new URLSearchParams({
        number_code: secure.code,
        number: secure.number,
        inbound_code: "1",
        inbound: `212555${String((offset + k) % 10_000).padStart(4, "0")}`,
        caller_id: "Unknown Caller",
      });
      return api("GET", `/apps/buzz/trust-lookup?${query}`, "sk_demo_telephony");
    });
  const chat = (from, to) =>
    api("POST", "/apps/buzz/activity", userToken(from), {
      type: "chat_message",
      sendable_type: "person",
      sendable_id: from,
      receivable_type: "person",
      receivable_id: to,
      message: CHAT_TEXT,
      message_id: randomUUID(),
    });
  const rowsOf = (persons, table) => persons.reduce((sum, p) => sum + objectRows(p, table), 0);

  step(`Target: ${TARGET.blockedCalls} blocked calls and ${TARGET.chats} chats for three people`);
  await phase(
    "target: blocked calls and chats",
    async () => {
      const share = (total, i) => Math.floor(total / 3) + (i < total % 3 ? 1 : 0);
      await Promise.all(trio.map((p, i) => blockedFor(p, share(TARGET.blockedCalls, i), i * 1_000)));
      // A → B, B → C, C → A: every object holds the chats it sent and those it received.
      await pool(TARGET.chats, (k) => chat(trio[k % 3], trio[(k + 1) % 3]));
      return { people: 3, blockedCalls: TARGET.blockedCalls, chats: TARGET.chats };
    },
    {
      persons: trio,
      ready: () => rowsOf(trio, "blocked_calls") >= TARGET.blockedCalls && rowsOf(trio, "feed") >= 2 * TARGET.chats,
    },
  );
  step(`Target: ${TARGET.contacts} contacts for the same three people (POST /contacts/sync, 500 a request)`);
  await phase(
    "target: contacts",
    async () => {
      const perPerson = TARGET.contacts / 3;
      await pool(TARGET.contacts / CONTACTS_PER_SYNC, async (k) => {
        const who = Math.floor(k / (perPerson / CONTACTS_PER_SYNC));
        const first = (k % (perPerson / CONTACTS_PER_SYNC)) * CONTACTS_PER_SYNC;
        await api(
          "POST",
          "/contacts/sync",
          userToken(trio[who]),
          Array.from({ length: CONTACTS_PER_SYNC }, (_, c) => ({
            display_name: `Contact ${first + c} of ${who}`,
            phone_numbers: [`+1 415 ${String(200 + who)} ${String(first + c).padStart(4, "0")}`],
            emails: [`contact${first + c}.of${who}@mail.example`],
          })),
        );
      });
      return { people: 3, contacts: TARGET.contacts };
    },
    { persons: trio },
  );

  // ── Samples: one record type per object table ──
  const [, , , D, E, F] = users;
  step(`Samples: ${SAMPLE.blockedCalls} blocked calls and ${SAMPLE.callRecords} call records for one person`);
  await phase(
    "sample: blocked calls",
    async () => {
      await blockedFor(D, SAMPLE.blockedCalls, 5_000);
      return { blockedCalls: SAMPLE.blockedCalls };
    },
    { persons: [D], ready: () => objectRows(D, "blocked_calls") >= SAMPLE.blockedCalls },
  );
  await phase(
    "sample: call records",
    async () => {
      await pool(SAMPLE.callRecords, () =>
        api("POST", "/apps/buzz/activity", userToken(D), {
          type: "outgoing_call_connected_secure",
          sendable_type: "person",
          sendable_id: D,
          receivable_type: "person",
          receivable_id: E,
          call_time: 95,
        }),
      );
      return { callRecords: SAMPLE.callRecords };
    },
    { persons: [D] },
  );
  step(`Samples: ${SAMPLE.chats} chats from one person to another`);
  await phase(
    "sample: chats",
    async () => {
      await pool(SAMPLE.chats, () => chat(E, F));
      return { chats: SAMPLE.chats };
    },
    { persons: [E, F] },
  );

  // ── Trust: requests in the object of the person asked, decisions and settings in objects ──
  const pairs = Math.min(LOAD.trustPairs, users.length - 10);
  if (pairs < 1) throw new Error("too few app users for the trust phases: use a larger --scale");
  const asker = (k) => users[10 + k];
  const T = users[6]; // asked by every asker, so their object holds enough requests to measure
  const askers = Array.from({ length: pairs }, (_, k) => asker(k));
  step(`Trust: ${pairs} people ask one person for trust, who trusts each; ${pairs} company trust settings`);
  await phase(
    "trust requests",
    async () => {
      await pool(pairs, (k) =>
        api("POST", "/contacts/requests", userToken(asker(k)), {
          user_id: T,
          contact_reason: "We met at the conference",
        }),
      );
      return { trustRequests: pairs };
    },
    { persons: [T] },
  );
  // T's decisions go to T's object; each one's mirror to the object of the person decided about.
  await phase(
    "trust decisions",
    async () => {
      await pool(pairs, (k) => api("POST", `/contacts/trust/${asker(k)}`, userToken(T), { trusted: 1 }));
      return { trustDecisions: pairs };
    },
    {
      persons: [T],
      group: askers,
      ready: () => objectRows(T, "mirror_outbox") === 0 && rowsOf(askers, "trusted_by") >= pairs,
    },
  );
  // One setting in each asker's object.
  await phase(
    "company trust",
    async () => {
      await pool(pairs, (k) =>
        api("PUT", `/contacts/companies/${ACME}/trust`, userToken(asker(k)), { trust: "trusted" }),
      );
      return { companyTrust: pairs };
    },
    { group: askers },
  );

  // ── Composition ──
  const p = (name) => phases[name];
  const per = (bytes, count) => (count > 0 ? Math.round(bytes / count) : null);
  const tableSum = (name, keep) => sumBytes(p(name).d1.tables, (t) => !TRANSIENT.has(t) && keep(t));
  const objectTable = (name, person, table) => p(name).objects.persons[person].tables[table] ?? 0;
  const objectUsed = (name, person, table) => p(name).objects.persons[person].used[table] ?? 0;
  const groupUsed = (name, table) => p(name).objects.group.used[table] ?? 0;
  const trioTables = (name, tables) =>
    trio.reduce((sum, person) => sum + tables.reduce((s, t) => s + objectTable(name, person, t), 0), 0);
  /** Deliveries a phase made: those handed to Acme's object, and any left in D1 (none once it settled). */
  const deliveriesAdded = (name) =>
    (p(name).companyObjects.acme.rows.deliveries ?? 0) + (p(name).d1.rows.webhook_deliveries ?? 0);

  const deliveryPhases = ["employees", "scan, first month", "scan, a later month"];
  const deliveryRows = deliveryPhases.reduce((s, name) => s + deliveriesAdded(name), 0);
  // In D1 while on its way: at the sample of the delivery phases with the most of them in D1 at once.
  const inFlight = deliveryPhases
    .map((name) => p(name).d1.deliveriesInFlightPeak)
    .reduce((a, b) => (b.rows > a.rows ? b : a));
  // In the company's object once finished: Acme's object grew by its deliveries and their attempts.
  const acmeObjectSum = (of) =>
    deliveryPhases.reduce(
      (sum, name) => sum + COMPANY_DELIVERY.reduce((s, table) => s + (p(name).companyObjects.acme[of][table] ?? 0), 0),
      0,
    );
  const heartbeatObjects = p("app user heartbeats").objects;

  const d1 = {
    // The company's own rows (company, its three roles, its roster row); its first Admin is
    // an employee like the others (their 50 accounts fit the pages' free room: too few to measure).
    company: per(
      tableSum("companies", (t) => !ACCOUNT.has(t) && !t.startsWith("membership")),
      LOAD.companies,
    ),
    appUserAccount: per(p("app user accounts").d1.steadyBytes + p("app user heartbeats").d1.steadyBytes, LOAD.appUsers),
    companyPhone: per(p("company phones").d1.steadyBytes, phoneCount),
    webhook: per(p("webhooks").d1.steadyBytes, webhookCount),
    employeeAccount: per(
      tableSum("employees", (t) => ACCOUNT.has(t)),
      LOAD.employees,
    ),
    employeeMembership: per(
      tableSum("employees", (t) => !ACCOUNT.has(t) && !DELIVERY.has(t)),
      LOAD.employees,
    ),
    exposureFirstScan: per(
      tableSum("scan, first month", (t) => !DELIVERY.has(t)),
      LOAD.employees * SITES.length,
    ),
    scanLaterMonthPerEmployee: per(
      tableSum("scan, a later month", (t) => !DELIVERY.has(t)),
      LOAD.employees,
    ),
    // A delivery on its way (pending or dispatched; with its attempt while it finishes), sampled.
    webhookDeliveryInFlight: per(inFlight.bytes, inFlight.rows),
    webhookDeliveryInFlightUsed: per(inFlight.used, inFlight.rows),
  };
  /** What the phases of a person's own records wrote to D1 (steady tables): nothing, by design. */
  const d1OfPersonRecords = Object.fromEntries(
    [
      "target: blocked calls and chats",
      "target: contacts",
      "sample: blocked calls",
      "sample: call records",
      "sample: chats",
      "trust requests",
      "trust decisions",
      "company trust",
    ].map((name) => [name, p(name).d1.steadyBytes]),
  );
  const deliveriesPerEmployee = {
    onboarding: deliveriesAdded("employees") / LOAD.employees,
    firstScan: deliveriesAdded("scan, first month") / LOAD.employees,
    laterScan: deliveriesAdded("scan, a later month") / LOAD.employees,
  };
  const trioTarget = p("target: blocked calls and chats").objects.persons;
  const objects = {
    // An object that has only started (a heartbeat): its tables, empty.
    emptyObject: per(heartbeatObjects.bytes, heartbeatObjects.created),
    // The page its first write adds (workerd's own `_cf_METADATA`: the retention alarm).
    firstWrite: per(
      trio.reduce((sum, person) => sum + (trioTarget[person].tables._cf_METADATA ?? 0), 0),
      trio.length,
    ),
    blockedCall: per(objectTable("sample: blocked calls", D, "blocked_calls"), SAMPLE.blockedCalls),
    callRecord: per(objectTable("sample: call records", D, "feed"), SAMPLE.callRecords),
    chatBothCopies: per(
      objectTable("sample: chats", E, "feed") + objectTable("sample: chats", F, "feed"),
      SAMPLE.chats,
    ),
    trustRequestReceived: per(objectTable("trust requests", T, "trust_requests"), pairs),
    // A contact with one phone and one email: its row and its two values.
    contact: per(trioTables("target: contacts", ["contacts", "contact_values"]), TARGET.contacts),
    contactRow: per(trioTables("target: contacts", ["contacts"]), TARGET.contacts),
    contactValues: per(trioTables("target: contacts", ["contact_values"]), TARGET.contacts),
    // The state of the `rcvn:` keys (`index_keys`): one row per bucket of the contacts' phones
    // (their last two digits: at most 100), so per object, not per contact.
    contactIndexKeysPerObject: per(trioTables("target: contacts", ["index_keys"]), trio.length),
    // The trust records: in pages where one object holds `pairs` of them, and in bytes used
    // (an object holds a few: they fill the table's first page, already counted in the empty object).
    trustDecision: per(objectTable("trust decisions", T, "person_trust"), pairs),
    trustDecisionUsed: per(objectUsed("trust decisions", T, "person_trust"), pairs),
    trustMirrorUsed: per(groupUsed("trust decisions", "trusted_by"), pairs),
    companyTrustUsed: per(groupUsed("company trust", "company_trust"), pairs),
  };
  objects.chatCopy = Math.round(objects.chatBothCopies / 2);

  // What a company's object holds per record: the object with its first entry (a test send:
  // its tables' first pages), and a finished delivery with its attempt (Acme's object).
  // An object as it starts: its tables' first pages. A company's object now starts with the
  // company (its first Admin's Person reads the object's exposure counts), so the objects are
  // counted where they were made: in the first-entry phase, else in the companies' phase.
  const firstEntry = p("company objects: a first entry").companyObjects;
  const objectsMade = firstEntry.created > 0 ? firstEntry : p("companies").companyObjects;
  const companyObjectPer = {
    objectWithFirstEntry: per(objectsMade.bytes, objectsMade.created),
    webhookDelivery: per(acmeObjectSum("tables"), deliveryRows),
    webhookDeliveryUsed: per(acmeObjectSum("used"), deliveryRows),
  };

  // A company of the stated size, after a year of monthly scans, with the retention of COMPANY_KEEP.
  // What a company keeps in D1: its rows, its employees, its exposures (each with its history and
  // its row in `company_exposures`), phones and webhooks. What a scan was (its scan rows and results)
  // stays a week after each monthly scan: averaged over the month, which is what a D1 of many
  // companies scanning on different days holds per company. Its deliveries are in D1 only on their
  // way (seconds each when the endpoint answers: nothing, averaged over a month); finished, they are
  // in its object, successful ones 3 days. `peak` is one company in the days right after its scan
  // (that scan's rows and results present; in D1 as if all its deliveries were on their way at once,
  // an endpoint down; in the object all of them kept).
  const listingKept = per(
    tableSum("scan, first month", (t) => !DELIVERY.has(t) && !SCAN_HISTORY.has(t)),
    LOAD.employees * SITES.length,
  );
  const scanHistoryPerEmployee = per(
    tableSum("scan, a later month", (t) => SCAN_HISTORY.has(t)),
    LOAD.employees,
  );
  // The same in Acme's object, where a company created since drizzle/0032 keeps its scan side.
  const acmeTables = (name, tables) => tables.reduce((s, t) => s + (p(name).companyObjects.acme.tables[t] ?? 0), 0);
  const listingKeptInObject = per(acmeTables("scan, first month", COMPANY_LISTING), LOAD.employees * SITES.length);
  const scanHistoryInObjectPerEmployee = per(acmeTables("scan, a later month", COMPANY_SCAN_HISTORY), LOAD.employees);
  const laterScanDeliveryCount = COMPANY.employees * deliveriesPerEmployee.laterScan;
  const companyYear = {
    base: d1.company,
    employees: COMPANY.employees * (d1.employeeAccount + d1.employeeMembership),
    exposures: COMPANY.employees * COMPANY.listings * listingKept,
    scanHistory: Math.round((COMPANY.employees * scanHistoryPerEmployee * COMPANY_KEEP.resultDays) / DAYS_PER_MONTH),
    phones: COMPANY.phones * d1.companyPhone,
    webhooks: EVENTS.length * d1.webhook,
    deliveriesOnTheirWay: 0,
  };
  const companyBytes = Object.values(companyYear).reduce((a, b) => a + b, 0);
  const companyPeakBytes = Math.round(
    companyBytes -
      companyYear.scanHistory +
      COMPANY.employees * scanHistoryPerEmployee +
      laterScanDeliveryCount * d1.webhookDeliveryInFlight,
  );
  const laterScanInObject = laterScanDeliveryCount * companyObjectPer.webhookDelivery;
  const companyObjectYear = {
    object: companyObjectPer.objectWithFirstEntry,
    exposures: COMPANY.employees * COMPANY.listings * listingKeptInObject,
    scanHistory: Math.round(
      (COMPANY.employees * scanHistoryInObjectPerEmployee * COMPANY_KEEP.resultDays) / DAYS_PER_MONTH,
    ),
    deliveries: Math.round((laterScanInObject * COMPANY_KEEP.successDays) / DAYS_PER_MONTH),
  };
  const companyObjectBytes = Object.values(companyObjectYear).reduce((a, b) => a + b, 0);
  const companyObjectPeakBytes = Math.round(
    companyObjectYear.object +
      companyObjectYear.exposures +
      COMPANY.employees * scanHistoryInObjectPerEmployee +
      laterScanInObject,
  );
  // Nothing grows month on month: scans and deliveries are pruned, exposures are the listings.
  const companyGrowthPerMonth = 0;
  d1.listingKept = listingKept;
  d1.scanHistoryPerEmployeePerScan = scanHistoryPerEmployee;
  companyObjectPer.listingKept = listingKeptInObject;
  companyObjectPer.scanHistoryPerEmployeePerScan = scanHistoryInObjectPerEmployee;

  // ── The big scan: another company's employee writes, idle and while a big company's scan runs ──
  step(
    `Big scan: a company of ${BIG_SCAN.employees.toLocaleString("en")} employees (people and memberships by SQL), ` +
      `scanned through POST /internal/scan-events; another company's employee writes timed, idle and during the scan`,
  );
  const other = companies[0];
  const otherEmployees = [];
  {
    const answer = await api(
      "POST",
      `/companies/${other.id}/employees/bulk`,
      other.token,
      Array.from({ length: BIG_SCAN.otherEmployees }, (_, i) => ({
        first_name: `Other${i}`,
        last_name: "Writer",
        dob: "1990-06-01",
        emails: [{ email: `other${i}@capacity-0.example` }],
        addresses: [{ line_1: `${i} Main St`, city: "Albany", region: "NY", postal_code: "12207", country: "US" }],
        license: null,
      })),
    );
    const list = Array.isArray(answer) ? answer : (answer?.data ?? []);
    for (const e of list) otherEmployees.push(e.id);
    if (otherEmployees.length !== BIG_SCAN.otherEmployees) throw new Error(`bulk created ${otherEmployees.length}`);
  }
  const bigScanCompany = await api("POST", "/internal/companies", ADMIN, {
    kind: "employer",
    name: "Big Scan Company",
    slug: "big-scan",
    url: "https://big-scan.example",
  });
  await settle(() => true, "the other company's employees");
  // The big company's people, emails and memberships by SQL (as scripts/lib/big-company.mjs builds
  // them, through the schema's triggers): through the API each employee would start a person object
  // (their facts), thousands of them before the scan. Their trust-index work, which the triggers queue,
  // is dropped: the index is not what this measures, and a scan reads none of it.
  const firstBig = 2_000_000;
  const lastBig = firstBig + BIG_SCAN.employees - 1;
  const series = `WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i < ${BIG_SCAN.employees - 1})`;
  const indexWorkBefore = JSON.stringify(
    readSqlite(d1File(), (db) => db.prepare("SELECT key FROM index_work").all()).map((row) => row.key),
  );
  for (const sql of [
    `${series} INSERT INTO people (id, first_name, last_name, created_at, updated_at)
       SELECT ${firstBig} + i, 'Dana', 'Scully ' || i, ${now}, ${now} FROM k`,
    `${series} INSERT INTO person_emails (person_id, email, "primary", employer_company_id)
       SELECT ${firstBig} + i, 'e' || i || '@big-scan.example', 1, ${bigScanCompany.id} FROM k`,
    `${series} INSERT INTO memberships (company_id, person_id, created_at, updated_at)
       SELECT ${bigScanCompany.id}, ${firstBig} + i, ${now}, ${now} FROM k`,
  ])
    await worker.db.prepare(sql).run();
  await worker.db
    .prepare("DELETE FROM index_work WHERE key NOT IN (SELECT value FROM json_each(?))")
    .bind(indexWorkBefore)
    .run();
  await settle(() => true, "the big company's load");

  /** One write of another company: an employee's last name changed (`PUT`, one at a time). */
  let writes = 0;
  const otherWrite = async () => {
    const id = otherEmployees[writes % otherEmployees.length];
    const t0 = performance.now();
    await api("PUT", `/companies/${other.id}/employees/${id}`, other.token, { last_name: `Writer ${writes++}` });
    return performance.now() - t0;
  };
  const summary = (ms) => {
    const sorted = [...ms].sort((a, b) => a - b);
    const at = (q) =>
      sorted.length ? Number(sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)].toFixed(1)) : null;
    return { writes: sorted.length, p50: at(0.5), p95: at(0.95), max: at(1) };
  };
  for (let i = 0; i < 3; i++) await otherWrite(); // warm
  const idleMs = [];
  for (let i = 0; i < BIG_SCAN.idleWrites; i++) idleMs.push(await otherWrite());

  // The big company, created through the API, keeps its scan side in its object.
  const bigScanCompleted = () =>
    companyObjectCount(
      bigScanCompany.id,
      `SELECT count(*) AS n FROM scans WHERE id >= 'big-' AND id < 'big.' AND status = 'completed'`,
    );
  const scanStarted = Date.now();
  const at = new Date().toISOString();
  let bigScanEvents = 0;
  const posting = pool(Math.ceil(BIG_SCAN.employees / 25), async (chunk) => {
    const events = [];
    for (let id = firstBig + chunk * 25; id <= Math.min(lastBig, firstBig + chunk * 25 + 24); id++)
      events.push(
        { type: "started", scan_id: `big-${id}`, person_id: id, at },
        ...SITES.map((site) => ({
          type: "found",
          scan_id: `big-${id}`,
          person_id: id,
          site_id: site,
          url: `https://site${site}.example/big/${id}`,
          data: { name: `Dana Scully ${id}`, city: "Washington", age: 40 },
          at,
        })),
        { type: "completed", scan_id: `big-${id}`, person_id: id, at },
      );
    bigScanEvents += events.length;
    await api("POST", "/internal/scan-events", "sk_demo_scanner", events);
  });
  // Writes from the moment the scan's events are posted until its last scan completed.
  const duringMs = [];
  let done = 0;
  let posted = false;
  /** @type {unknown} */
  let postingFailed = null;
  posting.then(
    () => (posted = true),
    (err) => (postingFailed = err ?? new Error("posting the big scan failed")),
  );
  while (!(posted && (done = bigScanCompleted()) >= BIG_SCAN.employees)) {
    if (postingFailed) throw postingFailed;
    if (Date.now() - scanStarted > 900_000)
      throw new Error(`the big scan did not finish in 15 min (${done} scans completed)`);
    for (let i = 0; i < 5; i++) duringMs.push(await otherWrite());
  }
  await posting;
  const scanSeconds = (Date.now() - scanStarted) / 1000;
  const bigExposures = companyObjectCount(
    bigScanCompany.id,
    `SELECT count(*) AS n FROM exposures WHERE person_id BETWEEN ${firstBig} AND ${lastBig} AND status IN ('pending', 'in_progress')`,
  );
  if (bigExposures !== BIG_SCAN.employees * SITES.length)
    throw new Error(`the big scan opened ${bigExposures} exposures for ${BIG_SCAN.employees} employees`);
  await settle(() => true, "the big scan");
  const idle = summary(idleMs);
  const during = summary(duringMs);
  const bigScan = {
    employees: BIG_SCAN.employees,
    scanEvents: bigScanEvents,
    exposuresOpened: bigExposures,
    scanSeconds: Number(scanSeconds.toFixed(1)),
    bigCompanyWebhooks: 0,
    otherCompany: { employees: BIG_SCAN.otherEmployees, webhooks: EVENTS.length },
    write: "PUT /companies/{id}/employees/{id} (last_name), one at a time",
    idleMs: idle,
    duringMs: during,
    ratio: idle.p95 && during.p95 !== null ? Number((during.p95 / idle.p95).toFixed(2)) : null,
    limit: BIG_SCAN_LIMIT,
  };
  bigScan.met = bigScan.ratio !== null && bigScan.ratio <= BIG_SCAN_LIMIT;
  log(
    `big scan of ${BIG_SCAN.employees} employees: ${scanSeconds.toFixed(1)} s; other company's writes p95 ` +
      `${idle.p95} ms idle (${idle.writes}), ${during.p95} ms during (${during.writes})`,
  );

  // A company of 100,000 employees (scripts/lib/big-company.mjs): built in SQLite, its pages timed.
  step(`A company of ${BIG.employees.toLocaleString("en")} employees, built directly in SQLite; its list pages timed`);
  const big = await measureBigCompany({ ...BIG, log });
  // The Worker's own reads must see what was built: every employee, two current exposures each.
  const seen = big.totals.big;
  if (seen.employees !== big.employees || seen.exposures !== 2 * big.employees)
    throw new Error(`the big company's pages counted ${JSON.stringify(seen)} for ${big.employees} employees`);
  const bigCompany = {
    employees: big.employees,
    totals: big.totals.big,
    sqliteBytes: big.bytes,
    pageMs: big.pages.big,
    beside500: big.pages.small,
    removalChoice: big.removalChoice,
    plans: big.plans,
  };
  // Its D1 bytes by the stated company's measured per-record figures (a year on, same retention).
  bigCompany.bytesAfterAYear = Math.round(
    ((companyBytes - companyYear.base - companyYear.phones - companyYear.webhooks) * big.employees) / COMPANY.employees,
  );

  const months = 12; // activity is kept 365 days
  const userObject = {
    empty: objects.emptyObject + objects.firstWrite,
    callRecords: APP_USER.callRecordsPerMonth * months * objects.callRecord,
    chats: (APP_USER.chatsSentPerMonth + APP_USER.chatsReceivedPerMonth) * months * objects.chatCopy,
    blockedCalls: Math.min(KEEP.blockedCalls, APP_USER.blockedCallsPerMonth * 3) * objects.blockedCall,
    trustRequests: APP_USER.trustRequestsReceived * objects.trustRequestReceived,
    contacts: APP_USER.contacts * objects.contact + objects.contactIndexKeysPerObject,
    // Their decisions, the mirror of as many decisions others made about them, their settings.
    trust:
      APP_USER.trustDecisions * (objects.trustDecisionUsed + objects.trustMirrorUsed) +
      APP_USER.companyTrust * objects.companyTrustUsed,
  };
  const userObjectBytes = Object.values(userObject).reduce((a, b) => a + b, 0);
  // What D1 keeps for an app user: their account alone (their own records are in their object).
  const userD1 = { account: d1.appUserAccount };
  const userD1Bytes = Object.values(userD1).reduce((a, b) => a + b, 0);

  const target = {
    blockedAndChats: {
      d1FileBytes: p("target: blocked calls and chats").d1.fileBytes,
      d1TableBytes: p("target: blocked calls and chats").d1.tableBytes,
      d1Tables: p("target: blocked calls and chats").d1.tables,
      objectBytes: p("target: blocked calls and chats").objects.bytes,
    },
    contacts: {
      d1FileBytes: p("target: contacts").d1.fileBytes,
      d1TableBytes: p("target: contacts").d1.tableBytes,
      d1Tables: p("target: contacts").d1.tables,
      objectBytes: p("target: contacts").objects.bytes,
    },
    limitBytes: 300_000,
  };
  target.d1TableBytes = target.blockedAndChats.d1TableBytes + target.contacts.d1TableBytes;
  target.d1FileBytes = target.blockedAndChats.d1FileBytes + target.contacts.d1FileBytes;
  target.objectBytes = target.blockedAndChats.objectBytes + target.contacts.objectBytes;
  target.met = Math.max(target.d1TableBytes, target.d1FileBytes) < target.limitBytes;
  let commit = "unknown";
  try {
    commit = execFileSync("git", ["rev-parse", "--short", "HEAD"], {
      cwd: ROOT,
      encoding: "utf8",
      stdio: "pipe",
    }).trim();
    const dirty = execFileSync(
      "git",
      ["status", "--porcelain", "--", "src", "drizzle", "drizzle-person", "drizzle-company", "wrangler.toml"],
      {
        cwd: ROOT,
        encoding: "utf8",
        stdio: "pipe",
      },
    ).trim();
    if (dirty) commit += " + uncommitted changes in src/";
  } catch {}

  result = {
    measuredAt: new Date().toISOString(),
    machine: `${os.cpus()[0]?.model ?? "unknown cpu"} × ${os.cpus().length}, ${os.platform()} ${os.release()}, node ${process.version}`,
    code: commit,
    scale,
    ...(smoke ? { smoke: "tiny sizes: a check that the script runs, not a measurement" } : {}),
    loaded: { ...LOAD, target: TARGET, samples: SAMPLE, chatCharacters: CHAT_TEXT.length },
    webhookDeliveriesReceived: delivered,
    seconds: Math.round((Date.now() - started) / 1000),
    d1BytesPer: d1,
    d1OfPersonRecords,
    deliveriesPerEmployee,
    objectBytesPer: objects,
    companyObjectBytesPer: companyObjectPer,
    deliveriesInD1AtOnce: inFlight,
    target,
    company: {
      size: { ...COMPANY, webhooks: EVENTS.length },
      keep: COMPANY_KEEP,
      afterOneYear: companyYear,
      bytes: companyBytes,
      peakBytes: companyPeakBytes,
      growthPerMonth: companyGrowthPerMonth,
      object: { afterOneYear: companyObjectYear, bytes: companyObjectBytes, peakBytes: companyObjectPeakBytes },
    },
    company_bytes_after_a_year: companyBytes,
    company_object_bytes_after_a_year: companyObjectBytes,
    companies_per_d1: Math.floor(D1_LIMIT / companyBytes),
    companies_per_d1_at_70_percent: Math.floor((0.7 * D1_LIMIT) / companyBytes),
    companiesPerD1: Math.floor(D1_LIMIT / companyBytes),
    companiesPerD1At70Percent: Math.floor((0.7 * D1_LIMIT) / companyBytes),
    companyTargets: {
      d1BytesAtMost: COMPANY_TARGET.d1Bytes,
      d1BytesMet: companyBytes <= COMPANY_TARGET.d1Bytes,
      perD1AtLeast: COMPANY_TARGET.perD1,
      perD1Met: Math.floor(D1_LIMIT / companyBytes) >= COMPANY_TARGET.perD1,
      bigScanWithin: BIG_SCAN_LIMIT,
      bigScanMet: bigScan.met,
    },
    bigScan,
    big_scan_other_writes_ms: { idle_p95: bigScan.idleMs.p95, during_p95: bigScan.duringMs.p95 },
    bigCompany,
    big_company_page_ms: {
      exposures: bigCompany.pageMs.exposures_page_1.ms,
      employees: bigCompany.pageMs.employees_page_1.ms,
    },
    bigCompaniesPerD1At70Percent: Math.floor((0.7 * D1_LIMIT) / bigCompany.bytesAfterAYear),
    appUser: { size: APP_USER, object: userObject, objectBytes: userObjectBytes, d1: userD1, d1Bytes: userD1Bytes },
    appUsersPerD1At70Percent: Math.floor((0.7 * D1_LIMIT) / userD1Bytes),
    appUserAccountsPerStatedCompany: Math.round(companyBytes / userD1Bytes),
    appUserObjectShareOf10GB: userObjectBytes / OBJECT_LIMIT,
    contactsAtMostPerObject: {
      contacts: MAX_CONTACTS,
      bytes: MAX_CONTACTS * objects.contact + objects.contactIndexKeysPerObject,
    },
    phases,
  };
} catch (err) {
  await stop();
  if (workerLog.length > 0)
    process.stderr.write(`\nThe Worker's last log lines:\n${workerLog.slice(-20).join("\n")}\n`);
  fail(err instanceof Error ? (err.stack ?? err.message) : String(err));
}
await stop();
if (jsonFile) fs.writeFileSync(jsonFile, `${JSON.stringify(result, null, 2)}\n`);

if (flags.json) {
  console.log(JSON.stringify(result, null, 2));
} else {
  const r = result;
  const kb = (b) => `${(b / 1e3).toFixed(1)} kB`;
  const mb = (b) => `${(b / 1e6).toFixed(2)} MB`;
  console.log(
    `\nCapacity measured ${r.measuredAt} on ${r.machine}, code ${r.code} (${smoke ? "smoke: tiny sizes, the figures mean nothing" : `scale ${r.scale}`}, ${r.seconds} s)`,
  );
  console.log("\nD1 bytes per record (tables and their indexes; transient index work apart):");
  for (const [what, bytes] of Object.entries(r.d1BytesPer))
    console.log(`  ${what.padEnd(28)} ${String(bytes).padStart(8)}`);
  console.log(
    `  deliveries per employee: ${r.deliveriesPerEmployee.onboarding.toFixed(1)} onboarding, ` +
      `${r.deliveriesPerEmployee.firstScan.toFixed(1)} first scan, ${r.deliveriesPerEmployee.laterScan.toFixed(1)} later scans`,
  );
  console.log("\nObject bytes per record (the record's table and indexes in one object's file):");
  for (const [what, bytes] of Object.entries(r.objectBytesPer))
    console.log(`  ${what.padEnd(28)} ${String(bytes).padStart(8)}`);
  const t = r.target;
  console.log(
    `  (bytes used, for records an object holds a few of: a trust decision ${r.objectBytesPer.trustDecisionUsed}, ` +
      `its mirror ${r.objectBytesPer.trustMirrorUsed}, a company setting ${r.objectBytesPer.companyTrustUsed})`,
  );
  console.log(
    `  D1 grew by nothing for a person's own records: ${Object.values(r.d1OfPersonRecords).every((b) => b === 0) ? "yes" : JSON.stringify(r.d1OfPersonRecords)}`,
  );
  console.log(
    `\nTarget, three people: ${TARGET.blockedCalls} blocked calls + ${TARGET.chats} chats grew D1 by ${t.blockedAndChats.d1TableBytes} B in tables ` +
      `(file ${t.blockedAndChats.d1FileBytes} B) and the objects by ${kb(t.blockedAndChats.objectBytes)}`,
  );
  console.log(
    `Target, three people: ${TARGET.contacts} contacts grew D1 by ${t.contacts.d1TableBytes} B in tables ` +
      `(file ${t.contacts.d1FileBytes} B) and the objects by ${mb(t.contacts.objectBytes)}`,
  );
  console.log(
    `Target as a whole: D1 +${t.d1TableBytes} B in tables (file +${t.d1FileBytes} B), limit ${t.limitBytes} B: ${t.met ? "met" : "NOT met"}`,
  );
  const cp = r.companyObjectBytesPer;
  console.log(
    `\nCompany object bytes per record: the object with its first entry ${cp.objectWithFirstEntry}, a finished ` +
      `delivery with its attempt ${cp.webhookDelivery} (${cp.webhookDeliveryUsed} used); in D1 while on its way ` +
      `${r.d1BytesPer.webhookDeliveryInFlight} (${r.d1BytesPer.webhookDeliveryInFlightUsed} used; ` +
      `${r.deliveriesInD1AtOnce.rows} in D1 at once at most)`,
  );
  const ct = r.companyTargets;
  console.log(
    `\nA company of ${COMPANY.employees} employees after a year: ${mb(r.company.bytes)} of D1 (averaged over the month; ` +
      `${mb(r.company.peakBytes)} in the days right after its scan; +${mb(r.company.growthPerMonth)} a month; ` +
      `target at most ${kb(ct.d1BytesAtMost)}: ${ct.d1BytesMet ? "met" : "NOT met"}); ` +
      `its object ${mb(r.company.object.bytes)} (${mb(r.company.object.peakBytes)} right after its scan)`,
  );
  for (const [what, bytes] of Object.entries(r.company.afterOneYear))
    console.log(`  ${what.padEnd(28)} ${mb(bytes).padStart(10)}`);
  for (const [what, bytes] of Object.entries(r.company.object.afterOneYear))
    console.log(`  in its object: ${what.padEnd(13)} ${mb(bytes).padStart(10)}`);
  console.log(
    `One D1 (10 GB) holds ${r.companies_per_d1} such companies, ${r.companies_per_d1_at_70_percent} at 70 % ` +
      `(target at least ${ct.perD1AtLeast}: ${ct.perD1Met ? "met" : "NOT met"})`,
  );
  const s3 = r.bigScan;
  console.log(
    `\nBig scan: ${s3.employees.toLocaleString("en")} employees (${s3.scanEvents.toLocaleString("en")} events, ` +
      `${s3.scanSeconds} s); another company's employee write p95 ${s3.idleMs.p95} ms idle (${s3.idleMs.writes} writes), ` +
      `${s3.duringMs.p95} ms during the scan (${s3.duringMs.writes} writes): ${s3.ratio}× ` +
      `(target within ${s3.limit}×: ${s3.met ? "met" : "NOT met"})`,
  );
  const b = r.bigCompany;
  console.log(
    `\nA company of ${b.employees.toLocaleString("en")} employees (${b.totals.exposures.toLocaleString("en")} current exposures), built in SQLite: ` +
      `${mb(b.sqliteBytes)} as built; ${mb(b.bytesAfterAYear)} of D1 after a year at the stated company's rates ` +
      `(${r.bigCompaniesPerD1At70Percent} such companies fill 70 % of one D1)`,
  );
  console.log(
    `  the removal step's choice of its next 1,000 among ${b.removalChoice.pending.toLocaleString("en")} pending: ${b.removalChoice.ms} ms (${b.removalChoice.min})`,
  );
  console.log(`  SQLite time per page (median and least of ${BIG.runs} runs; 100 a page unless said):`);
  for (const [what, time] of Object.entries(b.pageMs))
    console.log(
      `  ${what.padEnd(32)} ${`${time.ms} ms`.padStart(10)} ${`(${time.min})`.padStart(9)}   beside it, 500 employees: ${b.beside500[what].ms} ms`,
    );
  console.log(
    `An app user of the stated size: ${kb(r.appUser.objectBytes)} in their object, ${r.appUser.d1Bytes} B in D1 (the account) ` +
      `(${r.appUsersPerD1At70Percent} app users fill 70 % of one D1; a stated company takes the room of ` +
      `${r.appUserAccountsPerStatedCompany})`,
  );
  console.log(`(${r.webhookDeliveriesReceived} webhook deliveries received; --json for every phase's tables)`);
}
