// `npm run bench`: what a user compares, measured the same way every time.
//
// Starts the Worker on Miniflare directly (one workerd, no `wrangler dev`
// proxy; scripts/lib/local-worker.mjs) with a fresh temporary state folder
// and every rate limit raised to 10,000,000 per minute, applies the D1
// migrations, loads the demo world with the project's loader
// (src/fixtures/demo-world.ts, as scripts/seed.ts does), then through the API:
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
// Then the live stream's chat scenario (scripts/bench/stream.mjs), after the
// rounds so its sockets weigh on no other measurement: a chat's latency from
// Alice's POST /apps/buzz/activity to the frame on Bob's socket, p50/p95/p99
// over 200 chats, first with only Bob's socket open (the control), then with
// 1,000 idle sockets of 1,000 other people open; its own table.
//
// Prints the table and rewrites the part of docs/performance.md between
// <!-- bench:start --> and <!-- bench:end --> (`--no-record`: print only).
// Environment: BENCH_DURATION (seconds per measurement, default 2),
// BENCH_ROUNDS (default 3), BENCH_CONNECTIONS (default 32).
//
// `--smoke`: the same setup and every scenario with tiny sizes (20 employees, 20 contacts, one
// round of 0.3 s at 4 connections), then the chat scenario with 20 idle sockets and 5 chats a run,
// in well under a minute of measuring; never recorded, its figures mean nothing: it proves the
// bench still runs against the code (.ci/run runs it).
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
import { ROOT, fail, freePorts, step } from "./lib/cli.mjs";
import { startLocalWorker } from "./lib/local-worker.mjs";
import {
  bundleModuleMap,
  connectInspector,
  cpuProfilesDuring,
  heapDuring,
  inspectorTargets,
  summarizeProfile,
} from "./bench/inspector.mjs";
import {
  CHAT_P99_TARGET_MS,
  STREAM_SIZES,
  chatJson,
  chatMarkdownTable,
  chatMet,
  chatTextTable,
  streamScenario,
} from "./bench/stream.mjs";

const SMOKE = process.argv.includes("--smoke");
const CONNECTIONS = SMOKE ? 4 : positiveInt("BENCH_CONNECTIONS", 32);
const DURATION_S = SMOKE ? 0.3 : positiveInt("BENCH_DURATION", 2);
const ROUNDS = SMOKE ? 1 : positiveInt("BENCH_ROUNDS", 3);
const WARMUP_S = 0.5;
const RATE_LIMIT_FOR_RUN = 10_000_000;
const EMPLOYEES = SMOKE ? 20 : 1000;
const CONTACTS = SMOKE ? 20 : 1000;
const CONTACTS_PER_SYNC = SMOKE ? 10 : 500;
const LOAD_CONCURRENCY = 8;
/** Employees also created one POST each, to compare a bulk call's time per employee with. */
const BULK_SINGLES = SMOKE ? 3 : 100;
/** The chat scenario of --smoke: a few idle sockets, a few chats, no wait for hibernation. */
const SMOKE_STREAM = { idle: 20, chats: 5, warmup: 1, hibernateMs: 0 };
/** Filled by the setup: one bulk call of EMPLOYEES employees, and a single POST's time per employee. */
const bulkOnboarding = { ms: 0, singleMs: 0 };
const SETTLE_MS = 100;
/** The 1-minute load average before the bench added its own: other work on the machine skews the figures. */
const LOAD_AT_START = os.loadavg();
const STARTED = Date.now();
const JSON_OUTPUT = process.argv.includes("--json");
/** `--memory`: the isolate's peak heap during the setup's bulk call, contact sync and 1,000-employee page; no table. */
const MEMORY = process.argv.includes("--memory");
/** `--profile` or `--profile=key,key`: a CPU profile of each scenario (or those named); no table. */
const PROFILE = (() => {
  const arg = process.argv.find((a) => a === "--profile" || a.startsWith("--profile="));
  return arg === undefined ? false : arg === "--profile" ? true : arg.slice("--profile=".length);
})();
/**
 * `--stream`: only the live stream's chat scenario (scripts/bench/stream.mjs): chat latency to
 * the receiver's socket without and with 1,000 idle connections open; its table only. With
 * `--memory` too, the isolate's heap before and with the idle connections (the inspector attached:
 * its latencies are then not comparable).
 */
const STREAM = process.argv.includes("--stream");
/** `--only=key,key`: just these scenarios (with /healthz and their floors), for a quick look; never recorded. */
const ONLY =
  process.argv
    .find((a) => a.startsWith("--only="))
    ?.slice("--only=".length)
    .split(",") ?? null;
const RECORD = !process.argv.includes("--no-record") && !MEMORY && !PROFILE && !ONLY && !STREAM && !SMOKE;
if (STREAM && (PROFILE || ONLY)) fail("--stream runs only the chat scenario: leave out --profile and --only");
if (SMOKE && (MEMORY || PROFILE || STREAM || ONLY))
  fail("--smoke runs every scenario and the stream's once: leave out --memory, --profile, --stream and --only");
const DOC = path.join(ROOT, "docs", "performance.md");
const BENCH_ENTRY = "scripts/bench/worker.ts";
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
 * A target is a ratio to `/healthz` or to the scenario's floor (`of`).
 * @typedef {{ ratio: number, of: "healthz" | "floor" }} Target
 * @typedef {{ key: string, name: string, method?: "GET" | "POST", path: string,
 *   headers?: Record<string, string>, body?: string, expected: number, target?: Target,
 *   floor?: string, pathOf?: (n: number) => string }} Scenario
 * @typedef {{ rps: number, p50: number, p99: number, requests: number, unexpected: Map<string, number> }} Measurement
 */

const bearer = (/** @type {string} */ token) => ({ authorization: `Bearer ${token}` });
const FORM = { "content-type": "application/x-www-form-urlencoded" };

/** The floors: routes of the bench's entry (scripts/bench/worker.ts) that make only storage rounds. */
function floors(/** @type {{ code: string, number: string }} */ secure) {
  const keys = new URLSearchParams({
    number: `+${secure.code}${secure.number}`,
    inbound: `+${TRUSTED_CALLER.code}${TRUSTED_CALLER.number}`,
  }).toString();
  const provider = bearer(TOKENS.telephony);
  const alice = bearer(TOKENS.alice);
  /** @type {Scenario[]} */
  const list = [
    { key: "kv", name: "floor: one KV bulk get (3 keys)", path: `/__bench/floor/kv?${keys}`, headers: provider },
    { key: "d1", name: "floor: one D1 query", path: "/__bench/floor/d1", headers: alice },
    { key: "object", name: "floor: one Person object call", path: "/__bench/floor/object", headers: alice },
    { key: "kv-d1", name: "floor: KV get, then D1 query", path: `/__bench/floor/kv-d1?${keys}`, headers: provider },
    {
      key: "d1-object",
      name: "floor: D1 query and object call together",
      path: "/__bench/floor/d1-object",
      headers: alice,
    },
    {
      key: "object-d1",
      name: "floor: object call, then D1 query",
      path: "/__bench/floor/object-d1",
      headers: alice,
    },
    {
      key: "object-kv",
      name: "floor: object call, then KV bulk get",
      path: "/__bench/floor/object-kv",
      headers: alice,
    },
    {
      key: "kv-blocked",
      name: "floor: KV get, blocked call appended after",
      path: `/__bench/floor/kv-blocked?${keys}`,
      headers: provider,
    },
  ].map((floor) => ({ ...floor, key: `floor-${floor.key}`, expected: 200 }));
  return list;
}

/** Requests made by `pathOf` scenarios so far: each asks a path no request asked before. */
let sequence = 0;

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
      floor: "floor-kv",
      target: { ratio: 0.85, of: "floor" },
    },
    {
      key: "trusted-post",
      name: "trust-lookup trusted, form POST",
      method: "POST",
      path: "/apps/buzz/trust-lookup",
      headers: { ...provider, ...FORM },
      body: lookup(TRUSTED_CALLER),
      expected: 200,
      floor: "floor-kv",
      target: { ratio: 0.85, of: "floor" },
    },
    {
      // What a Twilio number pointed straight at the service posts (docs/providers.md): its own
      // field names and the caller's verification, which costs no read of its own.
      key: "trusted-twilio",
      name: "trust-lookup trusted, Twilio form POST with StirVerstat",
      method: "POST",
      path: "/apps/buzz/trust-lookup",
      headers: { ...provider, ...FORM },
      body: new URLSearchParams({
        CallSid: "CA0123456789abcdef0123456789abcdef",
        CallStatus: "ringing",
        Direction: "inbound",
        To: `+${secure.code}${secure.number}`,
        From: `+${TRUSTED_CALLER.code}${TRUSTED_CALLER.number}`,
        StirVerstat: "TN-Validation-Passed-A",
      }).toString(),
      expected: 200,
      floor: "floor-kv",
      target: { ratio: 0.85, of: "floor" },
    },
    {
      key: "untrusted-get",
      name: "trust-lookup untrusted, GET",
      path: `/apps/buzz/trust-lookup?${lookup(UNTRUSTED_CALLER)}`,
      headers: provider,
      expected: 200,
      floor: "floor-kv",
      target: { ratio: 0.85, of: "floor" },
    },
    {
      // A distinct caller number per request, none ever seen: with the index complete, each is
      // answered from the absence of its `num:` key, with no D1 statement and no KV write.
      key: "first-time-callers",
      name: "trust-lookup, first-time callers (a new caller per request)",
      path: `/apps/buzz/trust-lookup?${lookup(UNTRUSTED_CALLER)}`,
      pathOf: (/** @type {number} */ n) =>
        `/apps/buzz/trust-lookup?${lookup({ code: "1", number: `650${String(2_000_000 + (n % 7_000_000))}` })}`,
      headers: provider,
      expected: 200,
      floor: "floor-kv",
      target: { ratio: 0.85, of: "floor" },
    },
    {
      key: "untrusted-post",
      name: "trust-lookup untrusted, form POST",
      method: "POST",
      path: "/apps/buzz/trust-lookup",
      headers: { ...provider, ...FORM },
      body: lookup(UNTRUSTED_CALLER),
      expected: 200,
      floor: "floor-kv",
      target: { ratio: 0.85, of: "floor" },
    },
    {
      key: "call-lookup",
      name: "call-lookup (trusted caller)",
      path: `/apps/buzz/call-lookup?${lookup(TRUSTED_CALLER)}`,
      headers: provider,
      expected: 200,
      floor: "floor-kv-d1",
      target: { ratio: 0.8, of: "floor" },
    },
    {
      key: "heartbeat",
      name: "heartbeat",
      path: "/apps/buzz/heartbeat",
      headers: alice,
      expected: 200,
      floor: "floor-object-kv",
      target: { ratio: 0.8, of: "floor" },
    },
    {
      key: "company",
      name: "company read",
      path: "/companies/1",
      headers: alice,
      expected: 200,
      floor: "floor-d1",
      target: { ratio: 0.8, of: "floor" },
    },
    {
      key: "contacts",
      name: "contacts page, 100 with emails+phones",
      path: "/contacts?per_page=100&include=emails,phone_numbers",
      headers: alice,
      expected: 200,
      // Issue 37's target: 0.8x of one object call and one KV read (the `object+kv` floor, the
      // heartbeat's too). The page repeats within 60 s, so it measures the steady state: one
      // object call answering the page with the links it keeps (objects/person/links.ts), no KV
      // read; a page after that bound also reads its values' keys from KV (docs/performance.md).
      floor: "floor-object-kv",
      target: { ratio: 0.8, of: "floor" },
    },
    {
      key: "contacts-1",
      name: "contacts page, 1 with emails+phones",
      path: "/contacts?per_page=1&include=emails,phone_numbers",
      headers: alice,
      expected: 200,
      floor: "floor-object-d1",
    },
    {
      key: "employees",
      name: "employees, per_page=1000",
      path: "/companies/1/employees?per_page=1000",
      headers: alice,
      expected: 200,
      floor: "floor-d1",
      target: { ratio: 0.05, of: "healthz" },
    },
    {
      key: "search",
      name: "employee search (100 hits)",
      path: `/companies/1/employees?search=${SEARCH_PREFIX}`,
      headers: alice,
      expected: 200,
      floor: "floor-d1",
      target: { ratio: 0.1, of: "healthz" },
    },
    {
      key: "container",
      name: "container load (signed in)",
      path: "/apps/vcc/load_container/dailynews",
      headers: { cookie: `session=${TOKENS.alice}` },
      expected: 200,
      floor: "floor-d1",
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
/** @typedef {import("./bench/inspector.mjs").Inspector} Inspector */
/** The isolate's inspector session, only with --memory or --profile. @type {Inspector | null} */
let inspector = null;
/** @type {{ label: string, baseline: number, peakUsed: number, peakTotal: number, ms: number }[]} */
const heapPeaks = [];
const WORKER_ISOLATE = "core:user:privacy-platform-api";
/** With --profile: every other isolate of the workerd (D1's, KV's, …). @type {{ id: string, inspector: Inspector }[]} */
const otherIsolates = [];

/**
 * Runs one setup request; with --memory, under `heapDuring` (its peak heap
 * goes into `heapPeaks`). Returns the request's result.
 */
async function heapOf(/** @type {string} */ label, /** @type {() => Promise<any>} */ work) {
  if (!MEMORY || !inspector) return work();
  let result;
  let ms = 0;
  const heap = await heapDuring(inspector, async () => {
    const started = performance.now();
    result = await work();
    ms = performance.now() - started;
  });
  heapPeaks.push({ label, ...heap, ms });
  return result;
}

/** A free TCP port on 127.0.0.1 (for workerd's inspector). */
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
  const inspectorPort = MEMORY || PROFILE ? (await freePorts())[0] : null;
  step("Starting the Worker on Miniflare (one workerd, temporary state, rate limits raised)");
  worker = await startLocalWorker({
    // The Worker with the floor routes (never deployed: wrangler.toml's main is src/index.ts).
    script: BENCH_ENTRY,
    log: (message) => process.stderr.write(`  ${message}\n`),
    override(options) {
      if (inspectorPort !== null) options.inspectorPort = inspectorPort;
      for (const limit of Object.values(options.ratelimits ?? {})) limit.simple.limit = RATE_LIMIT_FOR_RUN;
      options.handleStructuredLogs = (/** @type {{ message: string }} */ entry) => {
        workerLog.push(entry.message);
        if (workerLog.length > 200) workerLog.shift();
      };
    },
  });
  process.stderr.write(`  serving on ${worker.url}\n`);
  if (inspectorPort !== null) {
    inspector = await connectInspector(inspectorPort, WORKER_ISOLATE);
    if (PROFILE) {
      // The other isolates of the same workerd (D1, KV, queues, …): one thread runs them all.
      const others = (await inspectorTargets(inspectorPort)).filter((id) => id !== WORKER_ISOLATE);
      for (const id of others) otherIsolates.push({ id, inspector: await connectInspector(inspectorPort, id) });
    }
    process.stderr.write(
      `  inspector attached on 127.0.0.1:${inspectorPort} (figures of this run are not comparable)\n`,
    );
  }

  step("Loading the demo world (src/fixtures/demo-world.ts, the loader scripts/seed.ts uses)");
  const { createDb } = await tsImport("../src/db/client.ts", import.meta.url);
  const { loadDemoWorld } = await tsImport("../src/fixtures/demo-world.ts", import.meta.url);
  await loadDemoWorld(createDb(worker.db));
  // The stream's scenario needs only the demo world's Alice and Bob.
  if (STREAM) return [];

  step(
    `Loading ${EMPLOYEES} employees of Acme: one POST /companies/1/employees/bulk (timed), then ${BULK_SINGLES} by single POSTs`,
  );
  await worker.db
    .prepare("UPDATE company_seats SET quantity = quantity + ? WHERE company_id = 1 AND license_id = 'scan'")
    .bind(EMPLOYEES + BULK_SINGLES)
    .run();
  const bulkStarted = performance.now();
  const onboarded = await heapOf(`POST /companies/1/employees/bulk, ${EMPLOYEES} employees`, () =>
    call("POST", "/companies/1/employees/bulk", {
      headers: bearer(TOKENS.alice),
      json: Array.from({ length: EMPLOYEES }, (_, i) => employee(i)),
    }),
  );
  bulkOnboarding.ms = performance.now() - bulkStarted;
  if (!Array.isArray(onboarded) || onboarded.length !== EMPLOYEES)
    throw new Error("the bulk call did not answer every employee");
  // The same kind of employees one request each, for comparison (per employee).
  const singlesStarted = performance.now();
  await pool(BULK_SINGLES, LOAD_CONCURRENCY, async (i) => {
    await call("POST", "/companies/1/employees", { headers: bearer(TOKENS.alice), json: employee(EMPLOYEES + i) });
  });
  bulkOnboarding.singleMs = (performance.now() - singlesStarted) / BULK_SINGLES;

  step(`Loading ${CONTACTS} contacts of Alice through POST /contacts/sync (${CONTACTS_PER_SYNC} a request)`);
  for (let first = 0; first < CONTACTS; first += CONTACTS_PER_SYNC) {
    const chunk = Array.from({ length: Math.min(CONTACTS_PER_SYNC, CONTACTS - first) }, (_, k) => contact(first + k));
    await heapOf(`POST /contacts/sync, ${chunk.length} new contacts (${first} already)`, () =>
      call("POST", "/contacts/sync", { headers: bearer(TOKENS.alice), json: chunk }),
    );
  }

  step("Alice's secure number (first heartbeat assigns it) and a check of each lookup's answer");
  const beat = await call("GET", "/apps/buzz/heartbeat", { headers: bearer(TOKENS.alice) });
  if (!beat?.secure_number) throw new Error("the demo world's secure-number pool gave Alice no number");
  const secure = { code: String(beat.secure_number.country_code), number: String(beat.secure_number.number) };
  // The index complete, as `npm run dev` leaves it: absent keys are answered without D1.
  await call("POST", "/__bench/rebuild-index", { headers: bearer(TOKENS.alice) });
  const list = scenarios(secure);
  const answer = async (/** @type {string} */ key) => {
    const s = /** @type {Scenario} */ (list.find((x) => x.key === key));
    return call(s.method ?? "GET", s.path, { headers: s.headers, body: s.body, expected: s.expected });
  };
  for (const [key, trusted] of /** @type {const} */ ([
    ["trusted-get", true],
    ["trusted-post", true],
    ["trusted-twilio", true],
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
  const page = await heapOf(`GET /companies/1/employees?per_page=${EMPLOYEES} (first time)`, () => answer("employees"));
  if (MEMORY) await heapOf(`GET /companies/1/employees?per_page=${EMPLOYEES} (again)`, () => answer("employees"));
  const employees = Array.isArray(page) ? page : (page?.data ?? []);
  if (employees.length < EMPLOYEES) throw new Error(`employees per_page=1000 answered ${employees.length} employees`);
  const floorList = floors(secure);
  for (const floor of floorList) await call("GET", floor.path, { headers: floor.headers });
  process.stderr.write(`  setup took ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
  return [...floorList, ...list];
}

/**
 * Waits (at most 60 s) until the trust-index work the writes above left in
 * D1 (`index_work`) is applied, so the background does not compete with the
 * measurements. A key written twice within a second is held back and left to
 * the minute cron's sweep (docs/architecture.md), which nothing runs on this
 * Miniflare: it is run here, as `npm run dev` runs it after its seed.
 */
async function indexWorkDone() {
  const deadline = Date.now() + 60_000;
  let left;
  do {
    const row = await worker?.db.prepare("SELECT count(*) AS n FROM index_work").first();
    left = Number(row?.n ?? 0);
    if (left === 0) return;
    await sleep(500);
    await (await worker?.mf.getWorker())?.scheduled({ cron: "* * * * *" });
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

/** One autocannon run of `scenario` for `seconds`. */
async function measure(/** @type {Scenario} */ scenario, /** @type {number} */ seconds) {
  const result = await new Promise((resolve, reject) => {
    autocannon(
      {
        url: `${worker?.url}${scenario.path}`,
        method: scenario.method ?? "GET",
        headers: scenario.headers ?? {},
        body: scenario.body,
        // A scenario with `pathOf` asks a new path on every request (autocannon's setupRequest).
        ...(scenario.pathOf
          ? {
              requests: [{ setupRequest: (/** @type {any} */ req) => ({ ...req, path: scenario.pathOf(sequence++) }) }],
            }
          : {}),
        connections: CONNECTIONS,
        duration: seconds,
        timeout: 10,
      },
      (/** @type {Error | null} */ err, /** @type {any} */ res) => (err ? reject(err) : resolve(res)),
    );
  });
  const elapsed = result.duration || seconds;
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
  if (answered === 0 && unexpected.size === 0) unexpected.set("no answer", 1);
  return /** @type {Measurement} */ ({
    rps: answered / elapsed,
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
 * @typedef {{ key: string, name: string, rps: number, p50: number, p99: number, ratio: number,
 *   floor: string | null, xFloor: number | null, target?: Target }} Row
 */

/** A floor's short name (`kv`, `d1`, `object`, `kv+d1`, `d1+object`) from its scenario key. */
const floorLabel = (/** @type {string | undefined} */ key) =>
  key ? key.replace(/^floor-/, "").replace("-", "+") : null;

/** Whether a row meets its target; null without one. */
function met(/** @type {Row} */ row) {
  if (!row.target) return null;
  const value = row.target.of === "floor" ? row.xFloor : row.ratio;
  return value !== null && value >= row.target.ratio;
}

const fmt = {
  rps: (/** @type {number} */ n) => n.toFixed(0),
  ms: (/** @type {number} */ n) => (n < 10 ? n.toFixed(1) : n.toFixed(0)),
  ratio: (/** @type {number | null} */ n) => (n === null ? "" : `${n.toFixed(2)}×`),
  target: (/** @type {Row} */ row) => (row.target ? `≥ ${row.target.ratio.toFixed(2)}× ${row.target.of}` : ""),
  met: (/** @type {Row} */ row) => ({ true: "met", false: "not met", null: "" })[String(met(row))] ?? "",
};

const HEADERS = ["scenario", "req/s", "p50 ms", "p99 ms", "× healthz", "floor", "× floor", "target", "met"];

const cells = (/** @type {Row} */ row) => [
  row.name,
  fmt.rps(row.rps),
  fmt.ms(row.p50),
  fmt.ms(row.p99),
  fmt.ratio(row.ratio),
  row.floor ?? "",
  fmt.ratio(row.xFloor),
  fmt.target(row),
  fmt.met(row),
];

/** Left-aligned columns: the scenario, its floor's name and whether the target is met. */
const LEFT = new Set([0, 5, 8]);

function textTable(/** @type {Row[]} */ rows) {
  const body = rows.map(cells);
  const widths = HEADERS.map((h, i) => Math.max(h.length, ...body.map((r) => r[i].length)));
  const line = (/** @type {string[]} */ r) =>
    r
      .map((c, i) => (LEFT.has(i) ? c.padEnd(widths[i]) : c.padStart(widths[i])))
      .join("  ")
      .trimEnd();
  return [line(HEADERS), widths.map((w) => "-".repeat(w)).join("  "), ...body.map(line)].join("\n");
}

function markdownTable(/** @type {Row[]} */ rows) {
  return [
    `| ${HEADERS.join(" | ")} |`,
    `|${HEADERS.map((_, i) => (i === 8 ? ":---:" : LEFT.has(i) ? "---" : "---:")).join("|")}|`,
    ...rows.map((row) => `| ${cells(row).join(" | ")} |`),
  ].join("\n");
}

/** The `--json` document: `{"scenarios": [{"name", "rps", "p50_ms", "p99_ms", "x_healthz", "floor", "x_floor"}]}` and the run's context. */
function jsonReport(/** @type {Row[]} */ rows, /** @type {Record<string, unknown>} */ run) {
  const round = (/** @type {number} */ n, /** @type {number} */ digits) => Number(n.toFixed(digits));
  return {
    scenarios: rows.map((row) => ({
      name: row.name,
      rps: round(row.rps, 1),
      p50_ms: row.p50,
      p99_ms: row.p99,
      x_healthz: round(row.ratio, 3),
      floor: row.floor,
      x_floor: row.xFloor === null ? null : round(row.xFloor, 3),
      ...(row.target ? { target: { ratio: row.target.ratio, of: row.target.of }, met: met(row) } : {}),
    })),
    run,
  };
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
// Inspector modes: --memory and --profile (nothing is measured for the table).

const mib = (/** @type {number} */ bytes) => `${(bytes / 1024 ** 2).toFixed(1)} MiB`;

function printHeapPeaks() {
  console.log("");
  console.log("Heap of the Worker's isolate (V8, through workerd's inspector), per request:");
  for (const peak of heapPeaks) {
    console.log(
      `  ${peak.label}: used ${mib(peak.baseline)} before (after a full GC), peak used ${mib(peak.peakUsed)}` +
        ` (+${mib(peak.peakUsed - peak.baseline)}), heap allocated at most ${mib(peak.peakTotal)}; ${peak.ms.toFixed(0)} ms`,
    );
  }
}

/** Each scenario (or those named by --profile=a,b) loaded for BENCH_DURATION s under V8's CPU profiler. */
async function profileScenarios(/** @type {Scenario[]} */ list) {
  const wanted = PROFILE === true ? null : new Set(String(PROFILE).split(","));
  const chosen = list.filter((s) => !wanted || wanted.has(s.key));
  if (chosen.length === 0) fail(`--profile= names none of: ${list.map((s) => s.key).join(", ")}`);
  const moduleOf = bundleModuleMap(/** @type {string} */ (worker?.entry));
  const bundleName = path.basename(/** @type {string} */ (worker?.entry));
  for (const s of chosen) await measure(s, WARMUP_S);
  for (const s of chosen) {
    /** @type {Measurement | undefined} */
    let m;
    const [profile, ...others] = await cpuProfilesDuring(
      [/** @type {Inspector} */ (inspector), ...otherIsolates.map((o) => o.inspector)],
      async () => {
        m = await measure(s, DURATION_S);
      },
    );
    if (process.env.BENCH_PROFILE_OUT) {
      fs.writeFileSync(`${process.env.BENCH_PROFILE_OUT}.${s.key}.cpuprofile`, JSON.stringify(profile));
      fs.copyFileSync(/** @type {string} */ (worker?.entry), `${process.env.BENCH_PROFILE_OUT}.bundle.js`);
    }
    const summary = summarizeProfile(
      /** @type {import("./bench/inspector.mjs").CpuProfile} */ (profile),
      moduleOf,
      bundleName,
    );
    const requests = m?.requests || 1;
    console.log("");
    console.log(
      `${s.name}: ${m?.requests ?? 0} requests (${fmt.rps(m?.rps ?? 0)} req/s); the Worker's isolate ran JavaScript ${summary.jsMs.toFixed(0)} ms ` +
        `(${(summary.jsMs / requests).toFixed(2)} ms a request), native or elsewhere ${(summary.busyMs - summary.jsMs).toFixed(0)} ms, idle ${summary.idleMs.toFixed(0)} ms`,
    );
    const busyElsewhere = others
      .map((p, i) => ({ id: otherIsolates[i]?.id ?? "?", ms: summarizeProfile(p, () => "", "-").jsMs }))
      .filter((o) => o.ms >= 1)
      .sort((a, b) => b.ms - a.ms);
    if (busyElsewhere.length > 0) {
      console.log(
        `  JavaScript in the workerd's other isolates, ms a request: ${busyElsewhere.map((o) => `${o.id} ${(o.ms / requests).toFixed(2)}`).join(", ")}`,
      );
    }
    console.log("  self time by module:");
    for (const row of summary.modules) console.log(`    ${(row.share * 100).toFixed(1).padStart(5)} %  ${row.name}`);
    console.log("  self time by function:");
    for (const row of summary.functions) console.log(`    ${(row.share * 100).toFixed(1).padStart(5)} %  ${row.name}`);
  }
}

// ---------------------------------------------------------------------------

/** The chat scenario (scripts/bench/stream.mjs) at its full sizes, or --smoke's; with the heap under --memory. */
async function chatScenario(/** @type {(line: string) => void} */ say) {
  const live = inspector;
  step(
    SMOKE
      ? `Chat scenario (smoke): ${SMOKE_STREAM.chats} chats, then ${SMOKE_STREAM.idle} idle sockets and the same again`
      : `Chat scenario: ${STREAM_SIZES.chats} chats to Bob's socket, then ${STREAM_SIZES.idle} idle sockets and the same again (1–2 minutes, most of it opening the sockets)`,
  );
  return streamScenario({
    url: /** @type {string} */ (worker?.url),
    db: worker?.db,
    // workerd's inspector never answers HeapProfiler.collectGarbage; a heap snapshot collects garbage too.
    heap: live
      ? async () => {
          await live.send("HeapProfiler.takeHeapSnapshot", { reportProgress: false });
          return /** @type {{ usedSize: number }} */ (await live.send("Runtime.getHeapUsage")).usedSize;
        }
      : null,
    rss: workerdRssMiB,
    say,
    ...(SMOKE ? { sizes: SMOKE_STREAM } : {}),
  });
}

/** @typedef {Awaited<ReturnType<typeof chatScenario>>} ChatResult */

/** The chat scenario's lines for the human report. */
function chatLines(/** @type {ChatResult} */ chat) {
  const mib = (/** @type {number} */ bytes) => `${(bytes / 1024 ** 2).toFixed(1)} MiB`;
  const idle = chat.runs[1];
  const lines = [
    `Live stream: a chat, Alice's POST /apps/buzz/activity → the frame on Bob's socket, one chat at a time; ` +
      `${idle?.idle} idle sockets (one per person) opened in ${(chat.openMs / 1000).toFixed(1)} s, ` +
      `${chat.hibernateMs / 1000} s to hibernate; ${idle?.idleOpenAfter} still open after the chats`,
    "",
    chatTextTable(chat.runs),
    "",
    `Chat target (p99 ≤ ${CHAT_P99_TARGET_MS} ms) met: ${chat.runs.filter(chatMet).length} of ${chat.runs.length}`,
  ];
  if (chat.heap) {
    lines.push(
      `The Worker's isolate heap (used, after a full collection): ${mib(chat.heap.before)} before, ${mib(chat.heap.idle)} with ` +
        `the idle sockets (${mib(chat.heap.idle - chat.heap.before)} more, ` +
        `${(((chat.heap.idle - chat.heap.before) / (idle?.idle || 1)) | 0).toLocaleString("en-US")} bytes a socket)`,
    );
  }
  if (chat.rss) {
    lines.push(
      `workerd resident memory: ${chat.rss.before.toFixed(0)} MiB before the idle sockets, ${chat.rss.idle.toFixed(0)} MiB with them`,
    );
  }
  return lines;
}

async function main() {
  const everything = await setup();
  if (STREAM) {
    const say = JSON_OUTPUT ? (/** @type {string} */ line) => process.stderr.write(`${line}\n`) : console.log;
    const chat = await chatScenario((line) => process.stderr.write(`${line}\n`));
    say("");
    say(`${new Date().toISOString().slice(0, 10)} · load average at start ${LOAD_AT_START[0].toFixed(1)}`);
    for (const line of chatLines(chat)) say(line);
    if (JSON_OUTPUT) {
      const run = { date: new Date().toISOString().slice(0, 10), machine: machine(), open_ms: chat.openMs };
      console.log(JSON.stringify({ chat: chatJson(chat.runs), run }, null, 2));
    }
    inspector?.close();
    return stopAndExit(0);
  }
  const floorsOf = new Set(everything.filter((s) => ONLY?.includes(s.key)).map((s) => s.floor));
  const list = ONLY ? everything.filter((s) => ONLY.includes(s.key) || floorsOf.has(s.key)) : everything;
  if (list.length === 0) fail(`--only= names none of: ${everything.map((s) => s.key).join(", ")}`);
  if (MEMORY || PROFILE) {
    if (MEMORY) printHeapPeaks();
    if (PROFILE) await profileScenarios(list);
    inspector?.close();
    return stopAndExit(0);
  }
  const all = [HEALTHZ, ...list];
  /** @type {Map<string, Measurement[]>} */
  const runs = new Map(all.map((s) => [s.key, []]));
  /** @type {Map<string, number[]>} */
  const ratios = new Map(all.map((s) => [s.key, []]));
  /** @type {Map<string, number[]>} */
  const floorRatios = new Map(all.map((s) => [s.key, []]));
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

  // The smoke run's one short round is its warm-up.
  if (!SMOKE) {
    step(`Warm-up: every scenario for ${WARMUP_S} s at ${CONNECTIONS} connections`);
    for (const s of all) note(s, await measure(s, WARMUP_S), "warm-up");
  }

  const perRound = all.length + 1;
  const eta = Math.ceil((ROUNDS * perRound * (DURATION_S + 0.3)) / 5) * 5;
  for (let round = 1; round <= ROUNDS; round++) {
    step(
      `Round ${round}/${ROUNDS}: ${perRound} measurements of ${DURATION_S} s, ${CONNECTIONS} connections (all rounds ≈ ${eta} s)`,
    );
    const before = await measure(HEALTHZ, DURATION_S);
    note(HEALTHZ, before, `round ${round}`);
    /** @type {Map<string, Measurement>} */
    const measured = new Map();
    for (const s of list) {
      const m = await measure(s, DURATION_S);
      note(s, m, `round ${round}`);
      measured.set(s.key, m);
      process.stderr.write(`  ${s.name}: ${fmt.rps(m.rps)} req/s\n`);
    }
    const after = await measure(HEALTHZ, DURATION_S);
    note(HEALTHZ, after, `round ${round}`);
    const healthz = (before.rps + after.rps) / 2;
    process.stderr.write(`  healthz: ${fmt.rps(before.rps)} req/s at the start, ${fmt.rps(after.rps)} at the end\n`);
    runs.get(HEALTHZ.key)?.push(before, after);
    ratios.get(HEALTHZ.key)?.push(1);
    for (const s of list) {
      const m = /** @type {Measurement} */ (measured.get(s.key));
      runs.get(s.key)?.push(m);
      ratios.get(s.key)?.push(m.rps / healthz);
      // × floor: against the floor measured in the same round.
      const floor = s.floor ? measured.get(s.floor) : undefined;
      if (floor && floor.rps > 0) floorRatios.get(s.key)?.push(m.rps / floor.rps);
    }
  }
  const rss = workerdRssMiB();
  // After the rounds: its 1,000 sockets and objects weigh on no autocannon measurement.
  const chat = ONLY ? null : await chatScenario((line) => process.stderr.write(`${line}\n`));

  /** @type {Row[]} */
  const rows = all.map((s) => {
    const ms = runs.get(s.key) ?? [];
    const xFloor = floorRatios.get(s.key) ?? [];
    return {
      key: s.key,
      name: s.name,
      rps: median(ms.map((m) => m.rps)),
      p50: median(ms.map((m) => m.p50)),
      p99: median(ms.map((m) => m.p99)),
      ratio: median(ratios.get(s.key) ?? []),
      floor: floorLabel(s.floor),
      xFloor: xFloor.length > 0 ? median(xFloor) : null,
      target: s.target,
    };
  });

  const date = new Date().toISOString().slice(0, 10);
  const m = machine();
  const seconds = Math.round((Date.now() - STARTED) / 1000);
  const memory = rss
    ? `workerd resident memory (VmRSS) at the end: ${rss.mib.toFixed(0)} MiB (${rss.processes} process${rss.processes > 1 ? "es" : ""})`
    : "workerd resident memory: not measured (needs Linux /proc)";
  const withTarget = rows.filter((r) => r.target !== undefined);
  const metCount = withTarget.filter((r) => met(r)).length;

  // With --json the human report goes to stderr and stdout carries only the JSON document.
  const say = JSON_OUTPUT ? (/** @type {string} */ line) => process.stderr.write(`${line}\n`) : console.log;
  say("");
  say(`${date} · ${m.os} · ${m.cpus} · ${m.memory} · Node ${m.node} · load average at start ${m.load}`);
  say(
    `${ROUNDS} rounds × ${DURATION_S} s per scenario, ${CONNECTIONS} connections; medians over the rounds; ` +
      "× healthz = req/s ÷ the same round's GET /healthz; × floor = req/s ÷ the same round's floor",
  );
  say("");
  say(textTable(rows));
  say("");
  say(`Targets met: ${metCount} of ${withTarget.length}`);
  say(bulkLine());
  say(memory);
  if (chat) {
    say("");
    for (const line of chatLines(chat)) say(line);
  }
  say("");
  say(`Whole run: ${seconds} s`);
  if (SMOKE) say("Smoke run (tiny sizes, one short round, 20 idle sockets: the figures mean nothing)");

  let failed = 0;
  if (unexpected.size > 0) {
    say("");
    say("Unexpected answers:");
    for (const [where, statuses] of unexpected) {
      say(`  ${where}: ${[...statuses].map(([status, n]) => `${status}×${n}`).join(", ")}`);
      for (const n of statuses.values()) failed += n;
    }
  }
  if (JSON_OUTPUT) {
    const run = {
      date,
      machine: m,
      rounds: ROUNDS,
      seconds_per_measurement: DURATION_S,
      connections: CONNECTIONS,
      whole_run_s: seconds,
      bulk_onboarding_ms: Math.round(bulkOnboarding.ms),
      unexpected_answers: failed,
    };
    const report = { ...jsonReport(rows, run), ...(chat ? { chat: chatJson(chat.runs) } : {}) };
    console.log(JSON.stringify(report, null, 2));
  }

  if (RECORD && failed === 0) {
    await record(
      [
        `Measured ${date} by \`npm run bench\` on ${m.os}, ${m.cpus}, ${m.memory} RAM, Node ${m.node};`,
        `the machine's 1-minute load average was ${m.load} when the bench started; the whole run took ${seconds} s.`,
        `${ROUNDS} rounds, ${DURATION_S} s per scenario and round, ${CONNECTIONS} connections; medians over the rounds.`,
        "",
        markdownTable(rows),
        "",
        `Targets met: ${metCount} of ${withTarget.length}. ${memory[0].toUpperCase()}${memory.slice(1)}.`,
        "",
        `${bulkLine()}.`,
        ...(chat
          ? [
              "",
              `Live stream: a chat, Alice's POST → the frame on Bob's socket, one chat at a time; ${chat.runs[1]?.idle} idle ` +
                `sockets (one per person) opened in ${(chat.openMs / 1000).toFixed(1)} s, then ${chat.hibernateMs / 1000} s to hibernate.`,
              "",
              chatMarkdownTable(chat.runs),
            ]
          : []),
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
