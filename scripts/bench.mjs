// `npm run bench`: what a user compares, measured the same way every time.
//
// Starts the Worker on Miniflare directly (one workerd, no `wrangler dev`
// proxy; scripts/lib/local-worker.mjs) with a fresh temporary state folder
// and every rate limit raised to 10,000,000 per minute, applies the D1
// migrations, loads the demo world with the project's loader
// (src/db/demo-world.ts, as scripts/seed.ts does), then through the API:
// 1,000 employees of Acme (POST /companies/1/employees, after raising Acme's
// seats) and 1,000 contacts of Alice (POST /contacts/sync, 500 at a time).
//
// Each scenario is then loaded by autocannon (32 connections, a fixed
// duration) in several rounds; every round also measures GET /healthz, at its
// start and at its end, and each scenario's throughput is also given as a
// ratio to that round's healthz (the mean of the two). The table shows the
// median over the rounds. Ratios are what to compare across machines and runs:
// the absolute numbers depend on the machine, and the bench shares its CPUs
// with workerd.
//
// Prints the table and rewrites the part of docs/performance.md between
// <!-- bench:start --> and <!-- bench:end --> (`--no-record`: print only).
// Environment: BENCH_DURATION (seconds per measurement, default 2),
// BENCH_ROUNDS (default 3), BENCH_CONNECTIONS (default 32).
//
// Exits 1 when any request got an unexpected status (or no answer) or the
// setup failed; a ratio under its target is reported, not an error. Always
// stops the workerd it started (Miniflare's dispose) and removes its state.
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import autocannon from "autocannon";
import * as prettier from "prettier";
import { tsImport } from "tsx/esm/api";
import { ROOT, fail, step } from "./lib/cli.mjs";
import { startLocalWorker } from "./lib/local-worker.mjs";

const CONNECTIONS = positiveInt("BENCH_CONNECTIONS", 32);
const DURATION_S = positiveInt("BENCH_DURATION", 2);
const ROUNDS = positiveInt("BENCH_ROUNDS", 3);
const WARMUP_S = 0.5;
const RATE_LIMIT_FOR_RUN = 10_000_000;
const EMPLOYEES = 1000;
const CONTACTS = 1000;
const CONTACTS_PER_SYNC = 500;
const LOAD_CONCURRENCY = 8;
/** Employees also created one POST each, to compare a bulk call's time per employee with. */
const BULK_SINGLES = 100;
/** Filled by the setup: one bulk call of EMPLOYEES employees, and a single POST's time per employee. */
const bulkOnboarding = { ms: 0, singleMs: 0 };
const SETTLE_MS = 100;
/** Slow scenarios are measured by count: this many requests per connection. */
const SLOW_REQUESTS_PER_CONNECTION = 2;
/** The 1-minute load average before the bench added its own: other work on the machine skews the figures. */
const LOAD_AT_START = os.loadavg();
const STARTED = Date.now();
const RECORD = !process.argv.includes("--no-record");
const DOC = path.join(ROOT, "docs", "performance.md");
const MARK_START = "<!-- bench:start -->";
const MARK_END = "<!-- bench:end -->";

const TOKENS = { alice: "pk_demo_alice", telephony: "sk_demo_telephony" };
const TRUSTED_CALLER = { code: "1", number: "4155550100" }; // Acme's company phone; Alice works at Acme
const UNTRUSTED_CALLER = { code: "1", number: "3035550142" }; // nobody's number
const SEARCH_PREFIX = "employee01"; // employee0100@… to employee0199@…: 100 of the 1,000

function positiveInt(/** @type {string} */ name, /** @type {number} */ fallback) {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1) fail(`${name} must be a positive integer, not ${JSON.stringify(raw)}`);
  return value;
}

/**
 * @typedef {{ key: string, name: string, method?: "GET" | "POST", path: string,
 *   headers?: Record<string, string>, body?: string, expected: number, target?: number, slow?: boolean }} Scenario
 * @typedef {{ rps: number, p50: number, p99: number, requests: number, unexpected: Map<string, number> }} Measurement
 */

const bearer = (/** @type {string} */ token) => ({ authorization: `Bearer ${token}` });
const FORM = { "content-type": "application/x-www-form-urlencoded" };

/** The scenarios, once Alice's secure number is known. */
function scenarios(/** @type {{ code: string, number: string }} */ secure) {
  const lookup = (/** @type {{ code: string, number: string }} */ caller) =>
    new URLSearchParams({
      number_code: secure.code,
      number: secure.number,
      inbound_code: caller.code,
      inbound: caller.number,
    }).toString();
  const provider = bearer(TOKENS.telephony);
  const alice = bearer(TOKENS.alice);
  /** @type {Scenario[]} */
  const list = [
    {
      key: "trusted-get",
      name: "trust-lookup trusted, GET",
      path: `/apps/buzz/trust-lookup?${lookup(TRUSTED_CALLER)}`,
      headers: provider,
      expected: 200,
      target: 0.35,
    },
    {
      key: "trusted-post",
      name: "trust-lookup trusted, form POST",
      method: "POST",
      path: "/apps/buzz/trust-lookup",
      headers: { ...provider, ...FORM },
      body: lookup(TRUSTED_CALLER),
      expected: 200,
      target: 0.35,
    },
    {
      key: "untrusted-get",
      name: "trust-lookup untrusted, GET",
      path: `/apps/buzz/trust-lookup?${lookup(UNTRUSTED_CALLER)}`,
      headers: provider,
      expected: 200,
      target: 0.3,
    },
    {
      key: "untrusted-post",
      name: "trust-lookup untrusted, form POST",
      method: "POST",
      path: "/apps/buzz/trust-lookup",
      headers: { ...provider, ...FORM },
      body: lookup(UNTRUSTED_CALLER),
      expected: 200,
      target: 0.3,
    },
    {
      key: "call-lookup",
      name: "call-lookup (trusted caller)",
      path: `/apps/buzz/call-lookup?${lookup(TRUSTED_CALLER)}`,
      headers: provider,
      expected: 200,
      target: 0.2,
    },
    { key: "heartbeat", name: "heartbeat", path: "/apps/buzz/heartbeat", headers: alice, expected: 200, target: 0.25 },
    { key: "company", name: "company read", path: "/companies/1", headers: alice, expected: 200 },
    {
      key: "contacts",
      name: "contacts page, 100 with emails+phones",
      path: "/contacts?per_page=100&include=emails,phone_numbers",
      headers: alice,
      expected: 200,
    },
    {
      key: "employees",
      name: "employees, per_page=1000",
      path: "/companies/1/employees?per_page=1000",
      headers: alice,
      expected: 200,
      slow: true,
    },
    {
      key: "search",
      name: "employee search (100 hits)",
      path: `/companies/1/employees?search=${SEARCH_PREFIX}`,
      headers: alice,
      expected: 200,
      slow: true,
    },
    {
      key: "container",
      name: "container load (signed in)",
      path: "/apps/vcc/load_container/dailynews",
      headers: { cookie: `session=${TOKENS.alice}` },
      expected: 200,
    },
  ];
  return list;
}

const HEALTHZ = /** @type {Scenario} */ ({ key: "healthz", name: "GET /healthz", path: "/healthz", expected: 200 });

// ---------------------------------------------------------------------------
// The worker, and stopping it whatever happens.

/** @type {Awaited<ReturnType<typeof startLocalWorker>> | null} */
let worker = null;
/** @type {string[]} */
const workerLog = [];
let exiting = false;

async function stopAndExit(/** @type {number} */ code, /** @type {string} [message] */ message) {
  if (exiting) return;
  exiting = true;
  if (worker) {
    step("Stopping workerd (Miniflare dispose) and removing its temporary state");
    try {
      await worker.dispose();
    } catch (err) {
      process.stderr.write(`  could not stop cleanly: ${err instanceof Error ? err.message : err}\n`);
    }
  }
  if (message) {
    const tail = workerLog.slice(-20).join("\n");
    fail(tail ? `${message}\nLast Worker log lines:\n${tail}` : message);
  }
  process.exit(code);
}

process.on("SIGINT", () => {
  process.stderr.write("\ninterrupted\n");
  void stopAndExit(130);
});
process.on("SIGTERM", () => void stopAndExit(143));
process.on("uncaughtException", (err) => void stopAndExit(1, `unexpected error: ${err.stack ?? err}`));
process.on("unhandledRejection", (err) =>
  stopAndExit(1, `unexpected error: ${err instanceof Error ? err.stack : String(err)}`),
);

// ---------------------------------------------------------------------------
// Setup: the demo world, then 1,000 employees and 1,000 contacts through the API.

/** One request; fails the run unless it answers `expected`. Returns the parsed JSON body. */
async function call(
  /** @type {string} */ method,
  /** @type {string} */ urlPath,
  /** @type {{ headers?: Record<string, string>, json?: unknown, body?: string, expected?: number }} */ options = {},
) {
  const { headers = {}, json, body, expected = 200 } = options;
  const res = await fetch(`${worker?.url}${urlPath}`, {
    method,
    headers: json === undefined ? headers : { ...headers, "content-type": "application/json" },
    body: json === undefined ? body : JSON.stringify(json),
  });
  const text = await res.text();
  if (res.status !== expected) {
    throw new Error(`${method} ${urlPath} answered ${res.status}, expected ${expected}: ${text.slice(0, 500)}`);
  }
  return text ? JSON.parse(text) : null;
}

/** The bulk-onboarding scenario's result, as one sentence. */
const bulkLine = () =>
  `Bulk onboarding: ${EMPLOYEES} employees in one POST /companies/1/employees/bulk took ${(bulkOnboarding.ms / 1000).toFixed(2)} s ` +
  `(${(bulkOnboarding.ms / EMPLOYEES).toFixed(1)} ms per employee; one POST /employees each, ${LOAD_CONCURRENCY} at a time: ` +
  `${bulkOnboarding.singleMs.toFixed(1)} ms per employee)`;

/** Runs `task(i)` for i in [0, count), `concurrency` at a time. */
async function pool(
  /** @type {number} */ count,
  /** @type {number} */ concurrency,
  /** @type {(i: number) => Promise<void>} */ task,
) {
  let next = 0;
  const run = async () => {
    while (next < count) await task(next++);
  };
  await Promise.all(Array.from({ length: concurrency }, run));
}

const pad4 = (/** @type {number} */ n) => String(n).padStart(4, "0");

function employee(/** @type {number} */ i) {
  return {
    first_name: "Bench",
    last_name: `Employee ${pad4(i)}`,
    emails: [{ email: `employee${pad4(i)}@acme-bench.example` }],
    dob: `19${String(60 + (i % 40))}-0${1 + (i % 9)}-1${i % 10}`,
    phone_numbers: [{ country_code: "1", phone_number: `646555${pad4(i)}` }],
    addresses: [
      { line_1: `${100 + i} Market St`, city: "San Francisco", region: "CA", postal_code: "94105", country: "US" },
    ],
  };
}

function contact(/** @type {number} */ i) {
  return {
    display_name: `Bench Contact ${pad4(i)}`,
    emails: [`contact${pad4(i)}@friends.example`],
    phone_numbers: [`+1 212 555 ${pad4(i)}`],
    labels: ["bench"],
  };
}

async function setup() {
  const started = Date.now();
  step("Starting the Worker on Miniflare (one workerd, temporary state, rate limits raised)");
  worker = await startLocalWorker({
    log: (message) => process.stderr.write(`  ${message}\n`),
    override(options) {
      for (const limit of Object.values(options.ratelimits ?? {})) limit.simple.limit = RATE_LIMIT_FOR_RUN;
      options.handleStructuredLogs = (/** @type {{ message: string }} */ entry) => {
        workerLog.push(entry.message);
        if (workerLog.length > 200) workerLog.shift();
      };
    },
  });
  process.stderr.write(`  serving on ${worker.url}\n`);

  step("Loading the demo world (src/db/demo-world.ts, the loader scripts/seed.ts uses)");
  const { createDb } = await tsImport("../src/db/client.ts", import.meta.url);
  const { loadDemoWorld } = await tsImport("../src/db/demo-world.ts", import.meta.url);
  await loadDemoWorld(createDb(worker.db));

  step(`Loading ${EMPLOYEES} employees of Acme: one POST /companies/1/employees/bulk (timed), then ${BULK_SINGLES} by single POSTs`);
  await worker.db
    .prepare("UPDATE company_seats SET quantity = quantity + ? WHERE company_id = 1 AND license_id = 'scan'")
    .bind(EMPLOYEES + BULK_SINGLES)
    .run();
  const bulkStarted = performance.now();
  const onboarded = await call("POST", "/companies/1/employees/bulk", {
    headers: bearer(TOKENS.alice),
    json: Array.from({ length: EMPLOYEES }, (_, i) => employee(i)),
  });
  bulkOnboarding.ms = performance.now() - bulkStarted;
  if (!Array.isArray(onboarded) || onboarded.length !== EMPLOYEES) throw new Error("the bulk call did not answer every employee");
  // The same kind of employees one request each, for comparison (per employee).
  const singlesStarted = performance.now();
  await pool(BULK_SINGLES, LOAD_CONCURRENCY, async (i) => {
    await call("POST", "/companies/1/employees", { headers: bearer(TOKENS.alice), json: employee(EMPLOYEES + i) });
  });
  bulkOnboarding.singleMs = (performance.now() - singlesStarted) / BULK_SINGLES;

  step(`Loading ${CONTACTS} contacts of Alice through POST /contacts/sync (${CONTACTS_PER_SYNC} a request)`);
  for (let first = 0; first < CONTACTS; first += CONTACTS_PER_SYNC) {
    const chunk = Array.from({ length: Math.min(CONTACTS_PER_SYNC, CONTACTS - first) }, (_, k) => contact(first + k));
    await call("POST", "/contacts/sync", { headers: bearer(TOKENS.alice), json: chunk });
  }

  step("Alice's secure number (first heartbeat assigns it) and a check of each lookup's answer");
  const beat = await call("GET", "/apps/buzz/heartbeat", { headers: bearer(TOKENS.alice) });
  if (!beat?.secure_number) throw new Error("the demo world's secure-number pool gave Alice no number");
  const secure = { code: String(beat.secure_number.country_code), number: String(beat.secure_number.number) };
  const list = scenarios(secure);
  const answer = async (/** @type {string} */ key) => {
    const s = /** @type {Scenario} */ (list.find((x) => x.key === key));
    return call(s.method ?? "GET", s.path, { headers: s.headers, body: s.body, expected: s.expected });
  };
  for (const [key, trusted] of /** @type {const} */ ([
    ["trusted-get", true],
    ["trusted-post", true],
    ["untrusted-get", false],
    ["untrusted-post", false],
  ])) {
    const body = await answer(key);
    if (body?.trusted !== trusted || body?.user_id !== 1) {
      throw new Error(`${key}: expected trusted=${trusted} for Alice (user 1), got ${JSON.stringify(body)}`);
    }
  }
  const callers = await answer("call-lookup");
  if (!callers?.companies?.some((/** @type {{ id: number }} */ c) => c.id === 1)) {
    throw new Error(`call-lookup does not show Acme for its own phone: ${JSON.stringify(callers)}`);
  }
  await indexWorkDone();
  const page = await answer("employees");
  const employees = Array.isArray(page) ? page : (page?.data ?? []);
  if (employees.length < EMPLOYEES) throw new Error(`employees per_page=1000 answered ${employees.length} employees`);
  process.stderr.write(`  setup took ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
  return list;
}

/**
 * Waits (at most 60 s) until the trust-index work the writes above left in
 * D1 (`index_work`) is applied, so the background does not compete with the
 * measurements.
 */
async function indexWorkDone() {
  const deadline = Date.now() + 60_000;
  let left = 0;
  do {
    const row = await worker?.db.prepare("SELECT count(*) AS n FROM index_work").first();
    left = Number(row?.n ?? 0);
    if (left === 0) return;
    await sleep(500);
  } while (Date.now() < deadline);
  process.stderr.write(`  ⚠ ${left} trust-index work rows still pending after 60 s; measuring anyway\n`);
}

const sleep = (/** @type {number} */ ms) => new Promise((resolve) => setTimeout(resolve, ms));

// ---------------------------------------------------------------------------
// Measurement.

/**
 * Between two measurements: requests still running in workerd when autocannon
 * stopped must not be counted against the next scenario. Waits for one
 * /healthz answer, then a moment.
 */
async function settle() {
  try {
    const res = await fetch(`${worker?.url}/healthz`, { signal: AbortSignal.timeout(30_000) });
    await res.arrayBuffer();
  } catch {
    // measured again by the next run
  }
  await sleep(SETTLE_MS);
}

/**
 * One autocannon run of `scenario` for `seconds`. A slow scenario, whose
 * requests can take longer than the whole window at 32 connections (so a
 * timed run would count next to nothing and drop the requests in flight), is
 * run for a fixed number of requests instead, `requestsPerConnection` per
 * connection, timed until the last answer.
 */
async function measure(
  /** @type {Scenario} */ scenario,
  /** @type {number} */ seconds,
  /** @type {number} */ requestsPerConnection = SLOW_REQUESTS_PER_CONNECTION,
) {
  const result = await autocannon({
    url: `${worker?.url}${scenario.path}`,
    method: scenario.method ?? "GET",
    headers: scenario.headers ?? {},
    body: scenario.body,
    connections: CONNECTIONS,
    ...(scenario.slow ? { amount: CONNECTIONS * requestsPerConnection } : { duration: seconds }),
    timeout: 10,
  });
  await settle();
  /** @type {Map<string, number>} */
  const unexpected = new Map();
  for (const [status, stats] of Object.entries(result.statusCodeStats ?? {})) {
    if (Number(status) !== scenario.expected) unexpected.set(status, stats.count);
  }
  if (result.errors > 0) unexpected.set("error", result.errors - result.timeouts);
  if (result.timeouts > 0) unexpected.set("timeout", result.timeouts);
  for (const [key, n] of unexpected) if (!n) unexpected.delete(key);
  const answered = Object.values(result.statusCodeStats ?? {}).reduce((sum, s) => sum + s.count, 0);
  return /** @type {Measurement} */ ({
    rps: answered / (result.duration || seconds),
    p50: result.latency.p50,
    p99: result.latency.p99,
    requests: answered,
    unexpected,
  });
}

const median = (/** @type {number[]} */ values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

/** Resident memory of the workerd processes this bench started (children of this process), Linux only. */
function workerdRssMiB() {
  if (!fs.existsSync("/proc/self/stat")) return null;
  let kib = 0;
  let found = 0;
  /** @type {number[]} */
  const queue = [process.pid];
  /** @type {Map<number, number[]>} */
  const children = new Map();
  /** @type {Map<number, string>} */
  const names = new Map();
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8");
      const close = stat.lastIndexOf(")");
      const ppid = Number(stat.slice(close + 2).split(" ")[1]);
      names.set(Number(entry), stat.slice(stat.indexOf("(") + 1, close));
      children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
    } catch {
      // ended while we read
    }
  }
  while (queue.length > 0) {
    for (const pid of children.get(/** @type {number} */ (queue.shift())) ?? []) {
      queue.push(pid);
      if (names.get(pid) !== "workerd") continue;
      const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"));
      if (match) {
        kib += Number(match[1]);
        found++;
      }
    }
  }
  return found ? { mib: kib / 1024, processes: found } : null;
}

// ---------------------------------------------------------------------------
// Report.

/**
 * @typedef {{ name: string, rps: number, p50: number, p99: number, ratio: number, target?: number }} Row
 */

const fmt = {
  rps: (/** @type {number} */ n) => n.toFixed(0),
  ms: (/** @type {number} */ n) => (n < 10 ? n.toFixed(1) : n.toFixed(0)),
  ratio: (/** @type {number} */ n) => `${n.toFixed(2)}×`,
  target: (/** @type {Row} */ row) => (row.target === undefined ? "" : `≥ ${row.target.toFixed(2)}×`),
  met: (/** @type {Row} */ row) => (row.target === undefined ? "" : row.ratio >= row.target ? "met" : "not met"),
};

const HEADERS = ["scenario", "req/s", "p50 ms", "p99 ms", "× healthz", "target", ""];

const cells = (/** @type {Row} */ row) => [
  row.name,
  fmt.rps(row.rps),
  fmt.ms(row.p50),
  fmt.ms(row.p99),
  fmt.ratio(row.ratio),
  fmt.target(row),
  fmt.met(row),
];

function textTable(/** @type {Row[]} */ rows) {
  const body = rows.map(cells);
  const widths = HEADERS.map((h, i) => Math.max(h.length, ...body.map((r) => r[i].length)));
  const line = (/** @type {string[]} */ r) =>
    r
      .map((c, i) => (i === 0 || i === 6 ? c.padEnd(widths[i]) : c.padStart(widths[i])))
      .join("  ")
      .trimEnd();
  return [line(HEADERS), widths.map((w) => "-".repeat(w)).join("  "), ...body.map(line)].join("\n");
}

function markdownTable(/** @type {Row[]} */ rows) {
  const head = ["scenario", "req/s", "p50 ms", "p99 ms", "× healthz", "target", "met"];
  return [
    `| ${head.join(" | ")} |`,
    `|${head.map((_, i) => (i === 0 ? "---" : i === 6 ? ":---:" : "---:")).join("|")}|`,
    ...rows.map((row) => `| ${cells(row).join(" | ")} |`),
  ].join("\n");
}

function machine() {
  const cpus = os.cpus();
  const model = cpus[0]?.model?.trim() || "unknown CPU";
  return {
    os: `${os.type()} ${os.release()} (${os.arch()})`,
    cpus: `${cpus.length} × ${model}`,
    memory: `${(os.totalmem() / 1024 ** 3).toFixed(1)} GiB`,
    node: process.version,
    load: LOAD_AT_START[0].toFixed(1),
  };
}

async function record(/** @type {string} */ section) {
  if (!fs.existsSync(DOC)) {
    process.stderr.write(`  ⚠ ${path.relative(ROOT, DOC)} does not exist: the table was not recorded\n`);
    return;
  }
  const text = fs.readFileSync(DOC, "utf8");
  const start = text.indexOf(MARK_START);
  const end = text.indexOf(MARK_END);
  if (start < 0 || end < start) {
    process.stderr.write(`  ⚠ ${path.relative(ROOT, DOC)} has no ${MARK_START} … ${MARK_END} section: not recorded\n`);
    return;
  }
  const updated = `${text.slice(0, start + MARK_START.length)}\n${section}\n${text.slice(end)}`;
  // Formatted as `npm run format` would (Prettier aligns the table's columns).
  const options = (await prettier.resolveConfig(DOC)) ?? {};
  fs.writeFileSync(DOC, await prettier.format(updated, { ...options, filepath: DOC }));
  step(`Recorded in ${path.relative(ROOT, DOC)}`);
}

// ---------------------------------------------------------------------------

async function main() {
  const list = await setup();
  const all = [HEALTHZ, ...list];
  /** @type {Map<string, Measurement[]>} */
  const runs = new Map(all.map((s) => [s.key, []]));
  /** @type {Map<string, number[]>} */
  const ratios = new Map(all.map((s) => [s.key, []]));
  /** @type {Map<string, Map<string, number>>} */
  const unexpected = new Map();
  const note = (/** @type {Scenario} */ s, /** @type {Measurement} */ m, /** @type {string} */ when) => {
    for (const [status, n] of m.unexpected) {
      const key = `${s.name} (${when})`;
      const seen = unexpected.get(key) ?? new Map();
      seen.set(status, (seen.get(status) ?? 0) + n);
      unexpected.set(key, seen);
    }
  };

  step(`Warm-up: every scenario for ${WARMUP_S} s at ${CONNECTIONS} connections`);
  for (const s of all) note(s, await measure(s, WARMUP_S, 1), "warm-up");

  const perRound = all.length + 1;
  const eta = Math.ceil((ROUNDS * perRound * (DURATION_S + 0.3)) / 5) * 5;
  for (let round = 1; round <= ROUNDS; round++) {
    step(
      `Round ${round}/${ROUNDS}: ${perRound} measurements of ${DURATION_S} s, ${CONNECTIONS} connections (all rounds ≈ ${eta} s)`,
    );
    const before = await measure(HEALTHZ, DURATION_S);
    note(HEALTHZ, before, `round ${round}`);
    /** @type {[Scenario, Measurement][]} */
    const measured = [];
    for (const s of list) {
      const m = await measure(s, DURATION_S);
      note(s, m, `round ${round}`);
      measured.push([s, m]);
      process.stderr.write(`  ${s.name}: ${fmt.rps(m.rps)} req/s\n`);
    }
    const after = await measure(HEALTHZ, DURATION_S);
    note(HEALTHZ, after, `round ${round}`);
    const healthz = (before.rps + after.rps) / 2;
    process.stderr.write(`  healthz: ${fmt.rps(before.rps)} req/s at the start, ${fmt.rps(after.rps)} at the end\n`);
    runs.get(HEALTHZ.key)?.push(before, after);
    ratios.get(HEALTHZ.key)?.push(1);
    for (const [s, m] of measured) {
      runs.get(s.key)?.push(m);
      ratios.get(s.key)?.push(m.rps / healthz);
    }
  }
  const rss = workerdRssMiB();

  /** @type {Row[]} */
  const rows = all.map((s) => {
    const ms = runs.get(s.key) ?? [];
    return {
      name: s.name,
      rps: median(ms.map((m) => m.rps)),
      p50: median(ms.map((m) => m.p50)),
      p99: median(ms.map((m) => m.p99)),
      ratio: median(ratios.get(s.key) ?? []),
      target: s.target,
    };
  });

  const date = new Date().toISOString().slice(0, 10);
  const m = machine();
  const memory = rss
    ? `workerd resident memory (VmRSS) at the end: ${rss.mib.toFixed(0)} MiB (${rss.processes} process${rss.processes > 1 ? "es" : ""})`
    : "workerd resident memory: not measured (needs Linux /proc)";
  const withTarget = rows.filter((r) => r.target !== undefined);
  const met = withTarget.filter((r) => r.ratio >= /** @type {number} */ (r.target)).length;

  console.log("");
  console.log(`${date} · ${m.os} · ${m.cpus} · ${m.memory} · Node ${m.node} · load average at start ${m.load}`);
  console.log(
    `${ROUNDS} rounds × ${DURATION_S} s per scenario, ${CONNECTIONS} connections; medians over the rounds; × healthz = req/s ÷ the same round's GET /healthz`,
  );
  console.log("");
  console.log(textTable(rows));
  console.log("");
  console.log(`Targets met: ${met} of ${withTarget.length}`);
  console.log(bulkLine());
  console.log(memory);
  console.log(`Whole run: ${((Date.now() - STARTED) / 1000).toFixed(0)} s`);

  let failed = 0;
  if (unexpected.size > 0) {
    console.log("");
    console.log("Unexpected answers:");
    for (const [where, statuses] of unexpected) {
      console.log(`  ${where}: ${[...statuses].map(([status, n]) => `${status}×${n}`).join(", ")}`);
      for (const n of statuses.values()) failed += n;
    }
  }

  if (RECORD && failed === 0) {
    await record(
      [
        `Measured ${date} by \`npm run bench\` on ${m.os}, ${m.cpus}, ${m.memory} RAM, Node ${m.node};`,
        `the machine's 1-minute load average was ${m.load} when the bench started.`,
        `${ROUNDS} rounds, ${DURATION_S} s per scenario and round, ${CONNECTIONS} connections; medians over the rounds.`,
        "",
        markdownTable(rows),
        "",
        `Targets met: ${met} of ${withTarget.length}. ${memory[0].toUpperCase()}${memory.slice(1)}.`,
        "",
        `${bulkLine()}.`,
      ].join("\n"),
    );
  } else if (RECORD) {
    process.stderr.write("  not recorded: the run had unexpected answers\n");
  }

  if (failed > 0) return stopAndExit(1, `${failed} request(s) got an unexpected status or no answer`);
  return stopAndExit(0);
}

try {
  await main();
} catch (err) {
  await stopAndExit(1, err instanceof Error ? err.message : String(err));
}
