// The Worker on Miniflare directly: one workerd process, no `wrangler dev`
// proxy in front of it. Used by `npm run bench`.
//
// 1. wrangler bundles the Worker as it would deploy it (`wrangler deploy
//    --dry-run --outdir <tmp>/bundle`);
// 2. wrangler turns wrangler.toml into Miniflare options
//    (`unstable_getMiniflareWorkerOptions`), the caller may override any of
//    them (the bench raises the rate limits);
// 3. Miniflare serves the bundle on 127.0.0.1 and a free port, with its state
//    in a fresh temporary folder that `dispose()` removes again;
// 4. the D1 migrations of drizzle/ are applied in file order, each file split
//    on `--> statement-breakpoint`, as `wrangler d1 migrations apply` does.
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Log, LogLevel, Miniflare, convertV4MiniflareOptions } from "miniflare";
import { unstable_getMiniflareWorkerOptions } from "wrangler";
import { ROOT, bin, childEnv } from "./cli.mjs";

const MIGRATIONS_DIR = path.join(ROOT, "drizzle");

/**
 * Bundles the Worker with wrangler into `outdir`; returns the path of the entry module.
 * `script` (relative to the project) replaces wrangler.toml's `main` (the bench's own entry).
 */
function bundle(/** @type {string} */ outdir, /** @type {string | undefined} */ script) {
  const result = spawnSync(bin("wrangler"), ["deploy", "--dry-run", "--outdir", outdir, ...(script ? [script] : [])], {
    cwd: ROOT,
    encoding: "utf8",
    env: childEnv({ CI: "1" }),
    maxBuffer: 64 * 1024 * 1024,
  });
  if (result.error) throw new Error(`wrangler could not start: ${result.error.message}. Did you run \`npm ci\`?`);
  if (result.status !== 0) {
    throw new Error(
      `wrangler deploy --dry-run failed (exit ${result.status}):\n${(result.stderr || result.stdout).trim()}`,
    );
  }
  // wrangler names the bundle after its entry file (src/index.ts → index.js).
  const entry = path.join(outdir, `${script ? path.parse(script).name : "index"}.js`);
  if (!fs.existsSync(entry)) throw new Error(`wrangler deploy --dry-run wrote no ${entry}`);
  return entry;
}

/**
 * The bundle's modules: the entry, then every file wrangler wrote beside it
 * (the Text modules of wrangler.toml's rules: the Person object's SQL
 * migrations, the API reference's assets), which the entry imports by name.
 */
function bundleModules(/** @type {string} */ entry) {
  const dir = path.dirname(entry);
  const texts = fs
    .readdirSync(dir)
    .filter((name) => name !== path.basename(entry) && !name.endsWith(".map") && name !== "README.md")
    .map((name) => ({ type: /** @type {const} */ ("Text"), path: path.join(dir, name) }));
  return [{ type: /** @type {const} */ ("ESModule"), path: entry }, ...texts];
}

/** The statements of every migration in drizzle/, in file order. */
export function migrationStatements() {
  const files = fs
    .readdirSync(MIGRATIONS_DIR)
    .filter((name) => /^\d+_.*\.sql$/.test(name))
    .sort();
  return files.flatMap((file) =>
    fs
      .readFileSync(path.join(MIGRATIONS_DIR, file), "utf8")
      .split("--> statement-breakpoint")
      .map((sql) => sql.trim())
      .filter(Boolean),
  );
}

/**
 * Starts the Worker. `override(workerOptions)` may change the Miniflare worker
 * options derived from wrangler.toml before they are used.
 *
 * `script`: another entry module than wrangler.toml's `main` (relative to the
 * project; the bench's scripts/bench/worker.ts).
 *
 * @param {{ override?: (options: Record<string, any>) => void, log?: (message: string) => void, script?: string }} [options]
 */
export async function startLocalWorker({ override, log = () => {}, script } = {}) {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "local-worker-"));
  /** Where Miniflare keeps D1, KV and the objects' SQLite files (removed by `dispose`). */
  const state = path.join(tmp, "state");
  /** @type {Miniflare | null} */
  let mf = null;
  let disposed = false;
  const dispose = async () => {
    if (disposed) return;
    disposed = true;
    try {
      if (mf) await mf.dispose();
    } finally {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  };
  try {
    log("bundling the Worker (wrangler deploy --dry-run)");
    const entry = bundle(path.join(tmp, "bundle"), script);
    const { workerOptions } = unstable_getMiniflareWorkerOptions(path.join(ROOT, "wrangler.toml"));
    override?.(workerOptions);
    log("starting workerd through Miniflare");
    mf = new Miniflare(
      convertV4MiniflareOptions({
        ...workerOptions,
        name: "privacy-platform-api",
        modulesRoot: path.dirname(entry),
        modules: bundleModules(entry),
        host: "127.0.0.1",
        port: 0,
        resourcePersistencePath: state,
        cf: false,
        log: new Log(LogLevel.WARN),
      }),
    );
    const url = await mf.ready;
    const db = await mf.getD1Database("DB");
    const statements = migrationStatements();
    log(`applying ${statements.length} migration statements from drizzle/`);
    for (const sql of statements) await db.prepare(sql).run();
    return { mf, db, url: url.origin, entry, state, dispose };
  } catch (err) {
    await dispose();
    throw err;
  }
}
