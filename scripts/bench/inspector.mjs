// The Worker's isolate seen through workerd's inspector (the Chrome DevTools
// protocol that Miniflare's `inspectorPort` opens): used by `npm run bench --
// --memory` (peak heap while serving one request) and `-- --profile` (where a
// scenario's CPU time goes). Never used by a measured run: an attached
// inspector slows the isolate.
import fs from "node:fs";
import path from "node:path";

/** The ids of every isolate workerd's inspector lists (the Worker is `core:user:<name>`; D1's is `d1:db`). */
export async function inspectorTargets(/** @type {number} */ port) {
  const targets = /** @type {{ id: string }[]} */ (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json());
  return targets.map((t) => t.id);
}

/** The inspector session of the isolate `id` (`core:user:<name>` for the Worker named `name`). */
export async function connectInspector(/** @type {number} */ port, /** @type {string} */ id) {
  const targets = /** @type {{ id: string, webSocketDebuggerUrl: string }[]} */ (
    await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()
  );
  const target = targets.find((t) => t.id === id);
  if (!target) throw new Error(`the inspector on port ${port} lists no isolate ${id}`);
  const socket = new WebSocket(target.webSocketDebuggerUrl);
  await new Promise((resolve, reject) => {
    socket.addEventListener("open", resolve, { once: true });
    socket.addEventListener("error", () => reject(new Error("could not open the inspector's WebSocket")), {
      once: true,
    });
  });
  let nextId = 1;
  /** @type {Map<number, { resolve: (value: any) => void, reject: (err: Error) => void }>} */
  const pending = new Map();
  socket.addEventListener("message", (event) => {
    const message = JSON.parse(String(event.data));
    const waiter = message.id === undefined ? undefined : pending.get(message.id);
    if (!waiter) return;
    pending.delete(message.id);
    if (message.error) waiter.reject(new Error(`${message.error.message} (${message.error.code})`));
    else waiter.resolve(message.result);
  });
  /** One protocol command; resolves to its result. */
  const send = (/** @type {string} */ method, /** @type {Record<string, unknown>} */ params = {}) =>
    new Promise((resolve, reject) => {
      const id = nextId++;
      pending.set(id, { resolve, reject });
      socket.send(JSON.stringify({ id, method, params }));
    });
  return { send, close: () => socket.close() };
}

/** @typedef {Awaited<ReturnType<typeof connectInspector>>} Inspector */

/**
 * The isolate's heap while `work` runs: the used heap after a full collection
 * (a heap snapshot) before it (`baseline`), and the largest used and allocated (committed) heap
 * seen by asking V8 every `everyMs` until it ends. The isolate answers
 * between its tasks (while the request waits for D1, KV or the network), so a
 * peak inside one synchronous stretch shows as the heap just after it, garbage
 * included; `total` is what V8 had reserved for the heap, an upper bound.
 */
export async function heapDuring(
  /** @type {Inspector} */ inspector,
  /** @type {() => Promise<unknown>} */ work,
  everyMs = 2,
) {
  const usage = async () =>
    /** @type {{ usedSize: number, totalSize: number }} */ (await inspector.send("Runtime.getHeapUsage"));
  // A full collection first. workerd's inspector never answers HeapProfiler.collectGarbage
  // (V8 runs it as a task workerd does not pump); a heap snapshot collects garbage too.
  await inspector.send("HeapProfiler.takeHeapSnapshot", { reportProgress: false });
  const baseline = await usage();
  let peakUsed = baseline.usedSize;
  let peakTotal = baseline.totalSize;
  let done = false;
  const poll = (async () => {
    while (!done) {
      const { usedSize, totalSize } = await usage();
      peakUsed = Math.max(peakUsed, usedSize);
      peakTotal = Math.max(peakTotal, totalSize);
      await new Promise((resolve) => setTimeout(resolve, everyMs));
    }
  })();
  try {
    await work();
  } finally {
    done = true;
    await poll;
  }
  const after = await usage();
  peakUsed = Math.max(peakUsed, after.usedSize);
  peakTotal = Math.max(peakTotal, after.totalSize);
  return { baseline: baseline.usedSize, peakUsed, peakTotal };
}

/**
 * CPU profiles of the isolates while `work` runs (V8's sampling profiler,
 * every `intervalUs` microseconds): the raw profiles, one per inspector, in order.
 */
export async function cpuProfilesDuring(
  /** @type {Inspector[]} */ inspectors,
  /** @type {() => Promise<unknown>} */ work,
  intervalUs = 200,
) {
  for (const inspector of inspectors) {
    await inspector.send("Profiler.enable");
    await inspector.send("Profiler.setSamplingInterval", { interval: intervalUs });
    await inspector.send("Profiler.start");
  }
  await work();
  /** @type {CpuProfile[]} */
  const profiles = [];
  for (const inspector of inspectors) {
    const { profile } = /** @type {{ profile: CpuProfile }} */ (await inspector.send("Profiler.stop"));
    profiles.push(profile);
  }
  return profiles;
}

/**
 * @typedef {{ id: number, callFrame: { functionName: string, url: string, lineNumber: number }, hitCount: number, children?: number[] }} ProfileNode
 * @typedef {{ nodes: ProfileNode[], startTime: number, endTime: number, samples: number[], timeDeltas: number[] }} CpuProfile
 */

/**
 * Which source module each line of an esbuild bundle belongs to: esbuild
 * writes `// path/of/module.ts` before each module it inlines.
 */
export function bundleModuleMap(/** @type {string} */ bundlePath) {
  const lines = fs.readFileSync(bundlePath, "utf8").split("\n");
  /** @type {{ line: number, module: string }[]} */
  const starts = [];
  lines.forEach((text, i) => {
    const match = /^\/\/ ((?:\.\.\/)*(?:node_modules|src|scripts)\/\S+)$/.exec(text);
    if (match) starts.push({ line: i, module: shortModule(match[1]) });
  });
  return (/** @type {number} */ line) => {
    let lo = 0;
    let hi = starts.length - 1;
    let found = "(bundle)";
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (starts[mid].line <= line) {
        found = starts[mid].module;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return found;
  };
}

/** `node_modules/.pnpm/…/node_modules/drizzle-orm/sqlite-core/dialect.js` → `drizzle-orm`; app files keep their path. */
function shortModule(/** @type {string} */ file) {
  const clean = file.replace(/^(\.\.\/)+/, "");
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(clean.slice(clean.lastIndexOf("node_modules/")));
  return pkg ? pkg[1] : clean;
}

/**
 * Self time of a profile, as shares of the sampled time: by function and by
 * module (`moduleOf(line)` for the bundle's own lines; V8's own entries such
 * as `(garbage collector)` and `(program)` stand for themselves, and native
 * code such as JSON.parse counts as its JS caller's or `(program)`). The
 * sampler records wall time on the isolate's thread: `(program)` is native
 * code outside any isolate's JavaScript — in workerd, whose one thread runs
 * every isolate, also the time other isolates run — so `jsMs` leaves it out.
 */
export function summarizeProfile(
  /** @type {CpuProfile} */ profile,
  /** @type {(line: number) => string} */ moduleOf,
  /** @type {string} */ bundleName,
) {
  /** @type {Map<number, ProfileNode>} */
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  /** @type {Map<number, number>} */
  const selfUs = new Map();
  profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  let total = 0;
  let idle = 0;
  let program = 0;
  /** @type {Map<string, number>} */
  const byFunction = new Map();
  /** @type {Map<string, number>} */
  const byModule = new Map();
  for (const [id, us] of selfUs) {
    const node = byId.get(id);
    if (!node) continue;
    const { functionName, url, lineNumber } = node.callFrame;
    if (functionName === "(idle)") {
      idle += us;
      continue;
    }
    total += us;
    if (functionName === "(program)") program += us;
    const inBundle = url.endsWith(bundleName);
    const module = inBundle ? moduleOf(lineNumber) : url ? path.basename(url) : functionName;
    const fn = `${functionName || "(anonymous)"} · ${module}${inBundle ? `:${lineNumber + 1}` : ""}`;
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + us);
    byModule.set(module, (byModule.get(module) ?? 0) + us);
  }
  const top = (/** @type {Map<string, number>} */ map, /** @type {number} */ n) =>
    [...map]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([name, us]) => ({ name, ms: us / 1000, share: total ? us / total : 0 }));
  return {
    busyMs: total / 1000,
    /** Busy outside "(program)": JavaScript, the runtime's API calls and the collector. */
    jsMs: (total - program) / 1000,
    idleMs: idle / 1000,
    functions: top(byFunction, 15),
    modules: top(byModule, 12),
  };
}
