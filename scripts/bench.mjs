// `npm run bench`: a small, bounded load test of the local API.
//
// Uses the server at BENCH_URL (default http://127.0.0.1:8787) when /healthz
// answers there; otherwise starts `node scripts/dev.mjs` itself (migrate, seed,
// serve), runs the scenarios, measures the memory of its workerd processes and
// stops it again. Prints a table; writes nothing into the repository.
//
// Rate limits (DECISIONS §8): each token scenario spends 900 of its token's
// 1000 requests per 60 s (20 warm-up + 880 measured), so runs must be at least
// a minute apart, or the second run gets 429s. That holds even when the bench
// starts its own server: locally the limiter's counters live in
// .wrangler/state (windows aligned to the wall-clock minute) and survive a
// restart. /healthz is never rate limited.
//
// Exits 1 when any request got an unexpected status or the server could not be
// started; being over the latency target is reported, not an error.
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { ROOT, childEnv, fail, step } from "./lib/cli.mjs";

const DEFAULT_URL = "http://127.0.0.1:8787";
const BASE_URL = (process.env.BENCH_URL || DEFAULT_URL).replace(/\/+$/, "");
const STARTUP_TIMEOUT_MS = 120_000;
const POLL_INTERVAL_MS = 500;
const STOP_TIMEOUT_MS = 15_000;
const REQUEST_TIMEOUT_MS = 10_000;
/** Requests each token scenario may spend per run: 1000 per token per 60 s, minus a margin. */
const TOKEN_BUDGET = 900;
const WARMUP_REQUESTS = 20;
const P95_TARGET_MS = 50;
/** The latency-critical path: the telephony provider asks while the call rings. */
const TARGET_SCENARIO = "trust-lookup, warm KV (sequential)";

/**
 * @typedef {{ name: string, path: string, token?: string, expected: number, requests: number, concurrency: number }} Scenario
 * @typedef {Record<"scenario" | "requests" | "conc" | "expected" | "unexpected" | "req/s" | "p50 ms" | "p95 ms" | "p99 ms" | "max ms", string>} Row
 */

/** @type {Scenario[]} */
const SCENARIOS = [
  { name: "healthz", path: "/healthz", expected: 200, requests: 2000, concurrency: 16 },
  {
    name: "company read (auth + membership)",
    path: "/companies/1",
    token: "pk_demo_alice",
    expected: 200,
    requests: TOKEN_BUDGET - WARMUP_REQUESTS,
    concurrency: 16,
  },
  {
    name: "sites list",
    path: "/companies/1/sites",
    token: "pk_demo_bob",
    expected: 200,
    requests: TOKEN_BUDGET - WARMUP_REQUESTS,
    concurrency: 16,
  },
  {
    name: "tenant miss 404",
    path: "/companies/1",
    token: "pk_demo_carol",
    expected: 404,
    requests: 400,
    concurrency: 16,
  },
  {
    name: "company read (sequential)",
    path: "/companies/2",
    token: "pk_demo_carol",
    expected: 200,
    requests: 200,
    concurrency: 1,
  },
];

/**
 * The trust-lookup scenario needs a receiving member: Bob's secure number,
 * which his heartbeat assigns (or returns) before the run.
 */
async function trustLookupScenario() {
  const res = await fetch(`${BASE_URL}/apps/buzz/heartbeat`, { headers: { Authorization: "Bearer pk_demo_bob" } });
  if (!res.ok) fail(`heartbeat for the demo user Bob answered ${res.status}`);
  const body = /** @type {{ secure_number: { country_code: string, number: string } | null }} */ (await res.json());
  if (!body.secure_number) fail("the secure-number pool is empty: load numbers with `npm run numbers -- add …`");
  const query = new URLSearchParams({
    number_code: body.secure_number.country_code,
    number: body.secure_number.number,
    inbound_code: "1",
    inbound: "4155550100", // Acme's phone: trusted by Bob, an Acme employee
  });
  return /** @type {Scenario} */ ({
    name: TARGET_SCENARIO,
    path: `/apps/buzz/trust-lookup?${query}`,
    token: "sk_demo_telephony",
    expected: 200,
    requests: 300,
    concurrency: 1,
  });
}

// ---------------------------------------------------------------------------
// The server the bench started itself (null when it used a running one).

/** @type {import("node:child_process").ChildProcess | null} */
let server = null;
/** @type {string | null} */
let serverLog = null;
/** @type {Promise<void> | null} */
let stopping = null;
/** Set on SIGINT or a fatal error: no new requests, the handler owns the exit. */
let shuttingDown = false;

const sleep = (/** @type {number} */ ms) => new Promise((resolve) => setTimeout(resolve, ms));

const isRunning = (/** @type {import("node:child_process").ChildProcess} */ child) =>
  child.exitCode === null && child.signalCode === null;

/** Status of GET /healthz, or null when nothing answers. */
async function probe() {
  try {
    const res = await fetch(`${BASE_URL}/healthz`, { signal: AbortSignal.timeout(2000) });
    await res.arrayBuffer();
    return res.status;
  } catch {
    return null;
  }
}

function logTail(lines = 40) {
  if (!serverLog) return "";
  try {
    return fs.readFileSync(serverLog, "utf8").trimEnd().split("\n").slice(-lines).join("\n");
  } catch {
    return "(the server log could not be read)";
  }
}

async function startServer() {
  const url = new URL(BASE_URL);
  const port = url.port || (url.protocol === "https:" ? "443" : "80");
  if (!["127.0.0.1", "localhost"].includes(url.hostname) || port !== "8787" || url.protocol !== "http:") {
    fail(`nothing answers at ${BASE_URL}/healthz, and the bench can only start its own server on ${DEFAULT_URL}.`);
  }
  serverLog = path.join(os.tmpdir(), `bench-dev-${process.pid}.log`);
  const out = fs.openSync(serverLog, "w");
  step(`No server at ${BASE_URL}: starting \`node scripts/dev.mjs\` (log: ${serverLog})`);
  const child = spawn(process.execPath, ["scripts/dev.mjs"], {
    cwd: ROOT,
    env: childEnv(),
    detached: false,
    stdio: ["ignore", out, out],
  });
  fs.closeSync(out);
  server = child;
  /** @type {Error | null} */
  let spawnError = null;
  child.on("error", (err) => {
    spawnError = err;
  });

  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (shuttingDown) return;
    if (spawnError) return abort(`could not start scripts/dev.mjs: ${/** @type {Error} */ (spawnError).message}`);
    if (!isRunning(child)) {
      process.stderr.write("\n");
      return abort(
        `scripts/dev.mjs exited (${child.exitCode ?? child.signalCode}) before /healthz answered. Last lines of ${serverLog}:\n${logTail()}`,
      );
    }
    const status = await probe();
    if (status === 200) {
      process.stderr.write(" up\n");
      return;
    }
    process.stderr.write(".");
    await sleep(POLL_INTERVAL_MS);
  }
  process.stderr.write("\n");
  return abort(
    `the server did not answer ${BASE_URL}/healthz within ${STARTUP_TIMEOUT_MS / 1000} s. Last lines of ${serverLog}:\n${logTail()}`,
  );
}

/** SIGTERM to the spawned child's PID only; SIGKILL to that PID after 15 s. */
function stopServer() {
  const child = server;
  if (!child) return Promise.resolve();
  stopping ??= (async () => {
    if (!isRunning(child) || child.pid === undefined) return;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    const before = descendants(child.pid);
    step(`Stopping the server (SIGTERM to PID ${child.pid})`);
    process.kill(child.pid, "SIGTERM");
    const clean = await Promise.race([exited.then(() => true), sleep(STOP_TIMEOUT_MS).then(() => false)]);
    if (!clean && isRunning(child)) {
      process.stderr.write(`  PID ${child.pid} still running after ${STOP_TIMEOUT_MS / 1000} s: SIGKILL\n`);
      process.kill(child.pid, "SIGKILL");
      await exited;
    }
    // wrangler stops workerd itself on SIGTERM; give it a moment, then report leftovers.
    let left = before.filter(alive);
    for (let i = 0; i < 20 && left.length > 0; i++) {
      await sleep(250);
      left = left.filter(alive);
    }
    if (left.length > 0) {
      process.stderr.write(`  ⚠ processes started by the server are still running: PIDs ${left.join(", ")}\n`);
    } else {
      process.stderr.write("  stopped\n");
    }
  })();
  return stopping;
}

/** Stops the server (if the bench started one) and exits 1 with the message. */
async function abort(/** @type {string} */ message) {
  shuttingDown = true;
  await stopServer();
  fail(message);
}

process.on("SIGINT", () => {
  shuttingDown = true;
  process.stderr.write("\ninterrupted\n");
  stopServer().finally(() => process.exit(130));
});
process.on("uncaughtException", (err) => {
  void abort(`unexpected error: ${err.stack ?? err}`);
});
process.on("unhandledRejection", (err) => {
  void abort(`unexpected error: ${err instanceof Error ? err.stack : String(err)}`);
});
// Last resort if the process exits some other way: never leave the child behind.
process.on("exit", () => {
  if (server?.pid !== undefined && isRunning(server)) {
    try {
      process.kill(server.pid, "SIGTERM");
    } catch {
      // already gone
    }
  }
});

// ---------------------------------------------------------------------------
// /proc: descendants of the spawned child and their resident memory (Linux).

/** @returns {Map<number, { ppid: number, comm: string }>} */
function processTable() {
  const table = new Map();
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, "utf8");
      // "pid (comm) state ppid ...": comm may contain spaces and parentheses.
      const open = stat.indexOf("(");
      const close = stat.lastIndexOf(")");
      const comm = stat.slice(open + 1, close);
      const ppid = Number(stat.slice(close + 2).split(" ")[1]);
      table.set(Number(entry), { ppid, comm });
    } catch {
      // the process ended while we were reading
    }
  }
  return table;
}

/** PIDs of every descendant of `root` (not including it). */
function descendants(/** @type {number} */ root) {
  if (!fs.existsSync("/proc/self/stat")) return [];
  const table = processTable();
  /** @type {number[]} */
  const found = [];
  const queue = [root];
  while (queue.length > 0) {
    const parent = queue.shift();
    for (const [pid, info] of table) {
      if (info.ppid === parent) {
        found.push(pid);
        queue.push(pid);
      }
    }
  }
  return found;
}

const alive = (/** @type {number} */ pid) => fs.existsSync(`/proc/${pid}`);

/** " (entry socket 127.0.0.1:8787)" from a workerd command line, to tell wrangler's processes apart. */
function socketOf(/** @type {number} */ pid) {
  try {
    const args = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
    const entry = args.map((arg) => /^--socket-addr=entry=(.+)$/.exec(arg)?.[1]).find(Boolean);
    return entry ? ` (entry socket ${entry})` : "";
  } catch {
    return "";
  }
}

function reportMemory() {
  console.log("");
  if (!server || server.pid === undefined) {
    console.log(
      `Memory: not measured — the bench used a server that was already running at ${BASE_URL}, so it does not know which processes serve it.`,
    );
    return;
  }
  if (!fs.existsSync("/proc/self/status")) {
    console.log("Memory: not measured — /proc is not available on this system (Linux only).");
    return;
  }
  const table = processTable();
  const workerds = descendants(server.pid).filter((pid) => table.get(pid)?.comm === "workerd");
  if (workerds.length === 0) {
    console.log(`Memory: no workerd process found under the server (PID ${server.pid}).`);
    return;
  }
  let totalKiB = 0;
  for (const pid of workerds) {
    let kib = NaN;
    try {
      const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"));
      if (match) kib = Number(match[1]);
    } catch {
      // ended meanwhile
    }
    if (Number.isFinite(kib)) totalKiB += kib;
    console.log(
      `Memory: workerd PID ${pid}${socketOf(pid)} resident (VmRSS) ${Number.isFinite(kib) ? (kib / 1024).toFixed(1) : "?"} MiB`,
    );
  }
  if (workerds.length > 1) console.log(`Memory: workerd total ${(totalKiB / 1024).toFixed(1)} MiB`);
}

// ---------------------------------------------------------------------------
// Load generation.

/** Sends `count` requests, `concurrency` at a time; every request is timed on its own. */
async function load(/** @type {Scenario} */ scenario, /** @type {number} */ count) {
  const url = `${BASE_URL}${scenario.path}`;
  /** @type {Record<string, string>} */
  const headers = scenario.token ? { Authorization: `Bearer ${scenario.token}` } : {};
  /** @type {number[]} */
  const latencies = [];
  /** @type {Map<string, number>} */
  const statuses = new Map();
  let next = 0;
  const worker = async () => {
    while (next < count && !shuttingDown) {
      next++;
      const started = performance.now();
      let status;
      try {
        const res = await fetch(url, { headers, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
        await res.arrayBuffer();
        status = String(res.status);
      } catch (err) {
        status = err instanceof Error && err.name === "TimeoutError" ? "timeout" : "network error";
      }
      latencies.push(performance.now() - started);
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: Math.min(scenario.concurrency, count) }, worker));
  return { latencies, statuses, elapsedMs: performance.now() - started };
}

/** Nearest-rank percentile of an ascending array. */
const percentile = (/** @type {number[]} */ sorted, /** @type {number} */ p) =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];

const formatOthers = (/** @type {Map<string, number>} */ statuses, /** @type {number} */ expected) =>
  [...statuses].filter(([status]) => status !== String(expected)).map(([status, n]) => `${status}×${n}`);

// ---------------------------------------------------------------------------

async function main() {
  console.log(`Bench against ${BASE_URL}`);
  console.log(
    `Each token scenario spends ${TOKEN_BUDGET} of its token's 1000 requests/60 s (${WARMUP_REQUESTS} warm-up + ${TOKEN_BUDGET - WARMUP_REQUESTS} measured):`,
  );
  console.log(
    "so runs must be at least a minute apart (the local limiter keeps its counts in .wrangler/state, across restarts). /healthz is not rate limited.",
  );

  const status = await probe();
  if (status === null) await startServer();
  else if (status !== 200) fail(`${BASE_URL}/healthz answered ${status}, not 200; is that this API?`);
  else step(`Using the server already running at ${BASE_URL}`);

  /** @type {Row[]} */
  const rows = [];
  let unexpectedTotal = 0;
  let rateLimited = false;
  /** @type {number | null} */
  let targetP95 = null;

  for (const scenario of [await trustLookupScenario(), ...SCENARIOS]) {
    if (shuttingDown) return;
    step(
      `${scenario.name}: GET ${scenario.path} × ${scenario.requests} (+${WARMUP_REQUESTS} warm-up), concurrency ${scenario.concurrency}`,
    );
    const warm = await load(scenario, WARMUP_REQUESTS);
    const run = await load(scenario, scenario.requests);
    if (shuttingDown) return;
    const sorted = [...run.latencies].sort((a, b) => a - b);
    const ok = run.statuses.get(String(scenario.expected)) ?? 0;
    const others = formatOthers(run.statuses, scenario.expected);
    const warmOthers = formatOthers(warm.statuses, scenario.expected);
    const unexpected = scenario.requests - ok + (WARMUP_REQUESTS - (warm.statuses.get(String(scenario.expected)) ?? 0));
    unexpectedTotal += unexpected;
    if (run.statuses.has("429") || warm.statuses.has("429")) rateLimited = true;
    const p95 = percentile(sorted, 95);
    if (scenario.name === TARGET_SCENARIO) targetP95 = p95;
    rows.push({
      scenario: scenario.name,
      requests: String(scenario.requests),
      conc: String(scenario.concurrency),
      expected: `${scenario.expected}×${ok}`,
      unexpected: unexpected === 0 ? "0" : [...others, ...warmOthers.map((s) => `${s} (warm-up)`)].join(" "),
      "req/s": (scenario.requests / (run.elapsedMs / 1000)).toFixed(0),
      "p50 ms": percentile(sorted, 50).toFixed(1),
      "p95 ms": p95.toFixed(1),
      "p99 ms": percentile(sorted, 99).toFixed(1),
      "max ms": sorted[sorted.length - 1].toFixed(1),
    });
  }

  // Aligned text table: text columns left-aligned, numbers right-aligned.
  const columns = /** @type {(keyof Row)[]} */ (Object.keys(rows[0]));
  const widths = columns.map((col) => Math.max(col.length, ...rows.map((row) => row[col].length)));
  const leftAligned = new Set(["scenario", "unexpected", "expected"]);
  const line = (/** @type {(col: keyof Row) => string} */ cell) =>
    columns
      .map((col, i) => (leftAligned.has(col) ? cell(col).padEnd(widths[i]) : cell(col).padStart(widths[i])))
      .join("  ");
  console.log("");
  console.log(line((col) => col));
  console.log(widths.map((w) => "-".repeat(w)).join("  "));
  for (const row of rows) console.log(line((col) => row[col]));

  if (targetP95 !== null) {
    console.log("");
    console.log(
      `Target: ${TARGET_SCENARIO} p95 ${targetP95.toFixed(1)} ms vs ${P95_TARGET_MS} ms: ${targetP95 <= P95_TARGET_MS ? "within target" : "over target"}`,
    );
  }

  reportMemory();
  await stopServer();

  if (unexpectedTotal > 0) {
    const hint = rateLimited
      ? " Some were 429 (rate limited): wait a minute after the previous run and try again."
      : "";
    fail(`${unexpectedTotal} request(s) got an unexpected status.${hint}`);
  }
  process.exit(0);
}

await main();
