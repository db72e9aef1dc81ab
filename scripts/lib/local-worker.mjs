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

/** Bundles the Worker with wrangler into `outdir`; returns the path of the entry module. */
function bundle(/** @type {string} */ outdir) {
  const result = spawnSync(bin("wrangler"), ["deploy", "--dry-run", "--outdir", outdir], {
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
  const entry = path.join(outdir, "index.js");
  if (!fs.existsSync(entry)) throw new Error(`wrangler deploy --dry-run wrote no ${entry}`);
  return entry;
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
 * @param {{ override?: (options: Record<string, any>) => void, log?: (message: string) => void }} [options]
 */
export async function startLocalWorker({ override, log = () => {} } = {}) {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "local-worker-"));
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
    const entry = bundle(path.join(tmp, "bundle"));
    const { workerOptions } = unstable_getMiniflareWorkerOptions(path.join(ROOT, "wrangler.toml"));
    override?.(workerOptions);
    log("starting workerd through Miniflare");
    mf = new Miniflare(
      convertV4MiniflareOptions({
        ...workerOptions,
        name: "privacy-platform-api",
        modulesRoot: path.dirname(entry),
        modules: [{ type: "ESModule", path: entry }],
        host: "127.0.0.1",
        port: 0,
        resourcePersistencePath: path.join(tmp, "state"),
        cf: false,
        log: new Log(LogLevel.WARN),
      }),
    );
    const url = await mf.ready;
    const db = await mf.getD1Database("DB");
    const statements = migrationStatements();
    log(`applying ${statements.length} migration statements from drizzle/`);
    for (const sql of statements) await db.prepare(sql).run();
    return { mf, db, url: url.origin, dispose };
  } catch (err) {
    await dispose();
    throw err;
  }
}
